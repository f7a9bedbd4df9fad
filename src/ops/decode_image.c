/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image: JPEG, PNG, BMP, PNM, TIFF, JPEG 2000 to HWC uint8, with DALI's output_type (RGB,
 * BGR, GRAY = the JPEG luma plane, YCbCr BT.601, ANY_DATA) and EXIF orientation; the format comes
 * from the magic bytes. setup peeks at the headers (io/image_info.h, no decoder needed) to learn
 * every output shape, or takes them from the decoded-image cache (decode_image_cache.c), then plans
 * the batch (decode_image_plan.c); run_cpu decodes sample i straight into its output with the pool
 * thread's decoder (decode_image_cpu.c); on a GPU pipeline of an nvJPEG build the GPU stage decodes
 * the rest (decode_image_gpu_nvjpeg.c). Bad data is an SL_EFORMAT naming the record, never an exit.
 * The decoder's state, create and destroy are shared with decoders.image_random_crop
 * (image_random_crop.c). */
#include "ops/decode_image.h"
#include "ops/decode_image_cache.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h> /* JMSG_LENGTH_MAX */
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
#include "ops/decode_image_nvjpeg.h"
#endif

static const sl__arg_schema decode_args[] = {
    SL__DECODE_IMAGE_ARGS, SL__DECODE_IMAGE_CACHE_ARGS, {NULL, 0, NULL, NULL, 0, NULL}};

void sl__decode_image_destroy(void *state) {
    sl__decode_image_state *s = state;
    if (!s) return;
#ifdef SLUICE_HAVE_NVJPEG
    sl__nvjpeg_free(s->nvjpeg);
#endif
    sl__decode_image_cache_free(s->cache);
    sl__gpu_scratch_free(&s->full);
    sl__gpu_args_free(&s->crop);
    sl__gpu_args_free(&s->copies);
    sl__decode_image_worker_free(s->gpu_worker);
    for (int i = 0; s->workers && i < s->threads; i++) sl__decode_image_worker_free(s->workers[i]);
    free(s->workers);
    free(s->info);
    free(s->rank);
    free(s->order);
    free(s);
}

sl_status sl__decode_image_create(const sl__args *a, const sl__op_init *init, void **out,
                                  sl_err *err) {
    sl__decode_image_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = "decoders.image";
    s->type = (sl__img_type)sl__decode_image_type(sl__args_str(a, "output_type"));
    s->orient = sl__args_bool(a, "adjust_orientation");
    s->fast_idct = sl__args_bool(a, "use_fast_idct");
    s->skip_bad = sl__args_bool(a, "skip_bad_records");
    s->max_pixels = sl__args_int(a, "max_image_pixels");
    s->hw_load = sl__args_float(a, "hw_decoder_load");
    int64_t pw = sl__args_int(a, "preallocate_width_hint");
    int64_t ph = sl__args_int(a, "preallocate_height_hint");
    s->batch_size = init->batch_size;
    s->stream_priority = init->stream_priority;
    s->engines = -1;
    s->cpu_max_pixels = sl__args_int(a, "cpu_decode_max_pixels");
    sl_status st = SL_OK;
#if defined(SLUICE_HAVE_CUDA) && !defined(SLUICE_HAVE_NVJPEG)
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) && sl__cuda_available())
        sl__log(SL_LOG_INFO, "this build has no nvJPEG: the mixed image decoders decode every "
                             "image on the CPU (into pinned memory, one copy per batch)");
#endif
    if (sl__args_dtype(a, "dtype") != SL_DTYPE_U8)
        st = sl_err_set(err, SL_ENOTSUP, "%s: only dtype=types.UINT8 is supported", s->name);
    if (st == SL_OK && (pw < 0 || pw > 65535 || ph < 0 || ph > 65535))
        st = sl_err_set(err, SL_EINVAL,
                        "%s: preallocate_width_hint %lld and preallocate_height_hint %lld must "
                        "be 0..65535 (a JPEG's largest side)",
                        s->name, (long long)pw, (long long)ph);
    s->prealloc_w = (int)pw; /* in range when st is SL_OK; the op is not made otherwise */
    s->prealloc_h = (int)ph;
    if (st == SL_OK) st = sl__decode_image_cache_create(s, a, init, err);
    s->threads = init->threads < 1 ? 1 : init->threads;
    if (st == SL_OK && !(s->workers = sl__calloc((size_t)s->threads, sizeof *s->workers, err)))
        st = SL_ENOMEM;
    for (int i = 0; st == SL_OK && i < s->threads; i++)
        st = sl__decode_image_worker_create(s->orient, &s->workers[i], err);
    if (st != SL_OK) {
        sl__decode_image_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status decode_setup(void *state, sl__op_io *io, sl_err *err) {
    sl__decode_image_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL, "%s: input must be encoded bytes (uint8, 1-D)", s->name);
    if (io->batch > s->info_cap) {
        sl__decode_image_info *ni = realloc(s->info, (size_t)io->batch * sizeof *ni);
        if (!ni) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->info = ni;
        s->info_cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, io->device, err));
    if (s->cache) {
        SL_TRY(sl__decode_image_cache_batch(s->cache, io->batch, err));
        sl__decode_image_cache_lookup(s->cache, io);
    }
    /* what the cache knows is taken from it; the other records' header bytes are asked for at
       once, so that their peeks below do not wait on each (format 0: peek it) */
    for (int i = 0; i < io->batch; i++) {
        if (s->cache && sl__decode_image_cache_known(s->cache, io, i, &s->info[i])) continue;
        s->info[i].format = 0;
        sl__decode_image_prefetch(in->data[i], sl_tlist_sample_nbytes(in, i));
    }
    int64_t *shapes = sl__malloc((size_t)io->batch * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        char why[256];
        sl__decode_image_info *inf = &s->info[i];
        sl_status st = SL_OK;
        if (inf->format == 0)
            st = sl__decode_image_peek(in->data[i], sl_tlist_sample_nbytes(in, i), s->type,
                                       s->orient, s->max_pixels, inf, why, sizeof why);
        if (st != SL_OK && !s->skip_bad) {
            free(shapes);
            return sl__op_fail(err, st, io, i, s->name, "%s", why);
        }
        if (st != SL_OK) {
            __atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
            memset(inf, 0, sizeof *inf);
            inf->c = s->type == SL__IMG_GRAY ? 1 : 3;
        }
        shapes[i * 3] = inf->out_h;
        shapes[i * 3 + 1] = inf->out_w;
        shapes[i * 3 + 2] = inf->c;
    }
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) memcpy(out->layout, "HWC", 4);
    if (st == SL_OK) st = sl__decode_image_plan(s, io, NULL, err);
    return st;
}

static sl_status decode_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    sl__decode_image_state *s = state;
#ifdef SLUICE_HAVE_NVJPEG
    if (i < 0) return sl__decode_image_ahead(s, io, NULL, err); /* the engines' job */
#endif
    const sl__decode_image_info *inf = &s->info[i];
    /* (on a GPU pipeline nvJPEG's samples and the cache's hits are never in the run: see
     * sl__decode_image_plan) */
    if (inf->format == 0) return SL_OK; /* skipped */
    /* a host cache (CPU pipelines, or mixed without nvJPEG): hits are copies */
    sl__decode_image_cache *c = io->device.kind != SL_DEVICE_CUDA ? s->cache : NULL;
    uint8_t *to = sl__decode_image_target(io, i);
    size_t nb = sl_tlist_sample_nbytes(io->out[0], i);
    if (c && c->hit[i]) {
        memcpy(to, c->host + c->hit[i] - 1, nb);
        return SL_OK;
    }
    const sl_tlist *in = io->in[0];
    char why[JMSG_LENGTH_MAX + 64];
    sl_status st =
        sl__decode_image_run(s->workers[worker], in->data[i], sl_tlist_sample_nbytes(in, i), inf,
                             s->type, NULL, s->fast_idct, to, why, sizeof why);
    if (st == SL_EFORMAT && s->skip_bad) {
        __atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
        memset(to, 0, nb);
        if (c && c->put[i]) memset(c->host + c->put[i] - 1, 0, nb); /* as a decode would give */
        return SL_OK;
    }
    if (st != SL_OK) return sl__op_fail(err, st, io, i, s->name, "%s", why);
    __atomic_fetch_add(&s->decodes, 1, __ATOMIC_RELAXED);
    if (c && c->put[i]) memcpy(c->host + c->put[i] - 1, to, nb);
    return SL_OK;
}

int64_t sl__decode_image_skipped(void *state) {
    return __atomic_load_n(&((sl__decode_image_state *)state)->skipped, __ATOMIC_RELAXED);
}

int64_t sl__decode_image_decodes(void *state) {
    return __atomic_load_n(&((sl__decode_image_state *)state)->decodes, __ATOMIC_RELAXED);
}

#ifdef SLUICE_HAVE_NVJPEG
static sl_status decode_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__decode_image_run_gpu(state, io, false, err);
}
#endif

const sl__op_def sl__decode_image_op = {
    .name = "decoders.image",
    .aliases = "image_decoder|experimental.decoders.image",
    .doc = "Decodes JPEG, PNG, BMP, PNM, (with libtiff) TIFF and (with OpenJPEG) JPEG 2000 images "
           "to HWC uint8 (format from the magic bytes; mixed: JPEG 2000 and the formats other than "
           "JPEG are decoded on the CPU pool).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = decode_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_MIXED,
    .flags = SL_OPF_DECODER,
    .create = sl__decode_image_create,
    .setup = decode_setup,
    .run_cpu = decode_run_cpu,
#ifdef SLUICE_HAVE_NVJPEG /* split on GPU pipelines: small images on the CPU pool, the rest nvJPEG \
                           */
    .run_gpu = decode_run_gpu,
    .free_batch_state = sl__decode_image_free_batch,
#endif
    .destroy = sl__decode_image_destroy,
};
