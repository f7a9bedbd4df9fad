/* SPDX-License-Identifier: Apache-2.0 */
/* get_property: a property of each sample as a 1-d uint8 tensor of its bytes (DALI's
 * fn.get_property): key "source_info", where the sample came from (the source info its reader
 * gave, passed on op to op: operator/op.h, io->source_info; empty where there is none), or
 * "layout", its list's layout. It reads only what rides with its input, so a CPU instance may
 * take GPU data; on the GPU the bytes are made in setup and sent in one copy, as shapes does. */
#include "ops/upload.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema prop_args[] = {
    {"key", SL_ARG_STR, NULL, "the property: \"source_info\" or \"layout\"", SL_ARGF_REQUIRED,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct prop_state {
    bool layout; /* key "layout" (else "source_info") */
    sl__gpu_args gpu;
} prop_state;

static void prop_destroy(void *state) {
    prop_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status prop_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    const char *key = sl__args_str(a, "key");
    if (!key || (strcmp(key, "source_info") && strcmp(key, "layout")))
        return sl_err_set(err, SL_EINVAL,
                          "%s: Unsupported property key: %s (\"source_info\" or \"layout\")",
                          init->name, key ? key : "");
    prop_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->layout = !strcmp(key, "layout");
    *out = s;
    return SL_OK;
}

/* sample i's property: a string that lives at least as long as the batch */
static const char *prop_of(const prop_state *s, const sl__op_io *io, int i) {
    if (s->layout) return io->in[0]->layout;
    return io->source_info && io->source_info[i] ? io->source_info[i] : "";
}

/* out: (bytes of the property,) uint8 per sample */
static sl_status prop_setup(void *state, sl__op_io *io, sl_err *err) {
    prop_state *s = state;
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, io->device, err));
    int64_t *sh = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *sh, err);
    if (!sh) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) sh[i] = (int64_t)strlen(prop_of(s, io, i));
    sl_status st = sl_tlist_alloc(out, sh, err);
    free(sh);
    if (st != SL_OK) return st;
    static const int none[1] = {0};
    io->run_index = none;
    io->run_count = 0;
    if (io->device.kind == SL_DEVICE_CUDA) return SL_OK; /* run_gpu sends them */
    for (int i = 0; i < io->batch; i++) /* (an empty sample may have no memory at all) */
        if (sl_tlist_sample_nbytes(out, i))
            memcpy(out->data[i], prop_of(s, io, i), sl_tlist_sample_nbytes(out, i));
    return SL_OK;
}

/* setup did the work: the pool is not woken (io->run_count 0) */
static sl_status prop_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static const void *prop_bytes(const void *state, const sl__op_io *io, int i) {
    return prop_of(state, io, i);
}

static sl_status prop_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__upload_samples(&((prop_state *)state)->gpu, io, prop_bytes, state, err);
}
#endif

const sl__op_def sl__get_property_op = {
    .name = "get_property",
    .doc = "A property of each sample as uint8 bytes: key \"source_info\" (where it came from: "
           "the file path readers.file, numpy and coco give, \"FILE at index OFFSET\" of "
           "readers.tfrecord, \"TAR:OFFSET:NAME\" of readers.webdataset, ...; ops pass on "
           "their first input's; empty where none) or "
           "\"layout\" (its layout).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = prop_args,
    .flags = SL_OPF_SHAPES,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = prop_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = prop_create,
    .setup = prop_setup,
    .run_cpu = prop_run_cpu,
    .destroy = prop_destroy,
};
