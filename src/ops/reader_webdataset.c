/* SPDX-License-Identifier: Apache-2.0 */
/* readers.webdataset: WebDataset tar shards (reader.h): per output, each sample's member with the
 * output's extension, as uint8 views into the mapped tar (0 bytes, skipped samples or an error for
 * a missing one, as missing_component_behavior says). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

typedef struct wds_reader {
    sl__reader r; /* first: the common part */
    int nout;
    char **ext; /* per output: extensions separated by ';' */
    bool case_sensitive;
} wds_reader;

static const sl__arg_schema wds_args[] = {
    {"paths", SL_ARG_STRS, NULL, "the tar files (WebDataset shards)", SL_ARGF_REQUIRED, NULL},
    {"ext", SL_ARG_STRS, NULL,
     "per output, the member extension it takes (\"jpg\"; several as \"jpg;png\": the first found)",
     SL_ARGF_REQUIRED, NULL},
    {"missing_component_behavior", SL_ARG_STR, "\"\"",
     "a sample without an output's extension: \"empty\" (the default: a 0-byte output), \"skip\" "
     "(drop the sample), \"error\"",
     0, NULL},
    {"case_sensitive_extensions", SL_ARG_BOOL, "True", "match extensions with their case", 0, NULL},
    {"index_paths", SL_ARG_STRS, "[]", "accepted; no effect (the tar files are indexed at open)", 0,
     NULL},
    SL__READER_ARGS("accepted; no effect (the tar files are mapped: members are read when touched)",
                    "accepted; no effect (the tar files are always mapped)",
                    "accepted; no effect (outputs are views into the mapped tar files)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int wds_outputs(const sl__args *a) {
    const char *const *e;
    return sl__args_strs(a, "ext", &e);
}

static void wds_free(void *state) {
    wds_reader *f = state;
    if (!f) return;
    for (int o = 0; f->ext && o < f->nout; o++) free(f->ext[o]);
    free(f->ext);
    sl__reader_free(&f->r);
}

/* whether sample i has a member for every output */
static bool wds_complete(const sl__wds *w, int64_t i, void *user) {
    const wds_reader *f = user;
    const uint8_t *d;
    size_t n;
    for (int o = 0; o < f->nout; o++)
        if (!sl__wds_find(w, i, f->ext[o], f->case_sensitive, &d, &n)) return false;
    return true;
}

static sl_status wds_create(const sl__args *a, const sl__op_init *init, void **state, sl_err *err) {
    wds_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_WDS;
    r->opname = "readers.webdataset";
    const char *const *paths, *const *ext;
    int np = sl__args_strs(a, "paths", &paths);
    f->nout = sl__args_strs(a, "ext", &ext);
    f->case_sensitive = sl__args_bool(a, "case_sensitive_extensions");
    const char *miss = sl__args_str(a, "missing_component_behavior");
    sl_status st = SL_OK;
    if (!miss || !*miss) miss = "empty";
    if (strcmp(miss, "empty") && strcmp(miss, "skip") && strcmp(miss, "error"))
        st = sl_err_set(err, SL_EINVAL,
                        "readers.webdataset: missing_component_behavior \"%s\" (empty, skip or "
                        "error)",
                        miss);
    if (!st && (np < 1 || f->nout < 1))
        st = sl_err_set(err, SL_EINVAL, "readers.webdataset: give paths and ext");
    if (!st) {
        f->ext = sl__calloc((size_t)f->nout, sizeof *f->ext, err);
        if (!f->ext) st = SL_ENOMEM;
        for (int o = 0; o < f->nout && !st; o++)
            if (!ext[o][0] || !(f->ext[o] = strdup(ext[o])))
                st = sl_err_set(err, SL_EINVAL, "readers.webdataset: ext %d is empty", o);
    }
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__wds_open(np, paths, &r->wds, err);
        if (st) st = sl_err_prefix(err, "readers.webdataset: ");
    }
    if (!st && !strcmp(miss, "skip")) {
        sl__wds_filter(r->wds, wds_complete, f);
        if (sl__wds_count(r->wds) == 0)
            st = sl_err_set(err, SL_EINVAL,
                            "readers.webdataset: %s: no sample has every output's extension "
                            "(missing_component_behavior=\"skip\")",
                            r->path0);
    }
    for (int64_t i = 0; !st && !strcmp(miss, "error") && i < sl__wds_count(r->wds); i++)
        if (!wds_complete(r->wds, i, f)) {
            const uint8_t *d;
            size_t n;
            int o = 0;
            while (sl__wds_find(r->wds, i, f->ext[o], f->case_sensitive, &d, &n)) o++;
            st = sl_err_set(err, SL_EFORMAT,
                            "readers.webdataset: %s at key %s: no member with extension %s "
                            "(missing_component_behavior=\"error\")",
                            sl__wds_path(r->wds, i), sl__wds_key(r->wds, i), f->ext[o]);
        }
    if (!st) {
        r->n = sl__wds_count(r->wds);
        st = sl__reader_start(r, a, init, err);
    }
    if (st) {
        wds_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* Each output sample is a view of its member's bytes in the mapped tar (0 bytes when missing). */
static sl_status wds_setup(void *state, sl__op_io *io, sl_err *err) {
    wds_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int o = 0; o < f->nout; o++) {
        sl_tlist *out = io->out[o];
        SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
        out->layout[0] = 0;
        for (int i = 0; i < io->batch; i++) {
            static const uint8_t none[1]; /* a missing member: 0 bytes, at a valid address */
            const uint8_t *d = none;
            size_t n = 0;
            if (!sl__wds_find(r->wds, r->recs[i], f->ext[o], f->case_sensitive, &d, &n)) d = none;
            int64_t len = (int64_t)n;
            sl_tlist_set_external(out, i, (void *)d, &len);
        }
    }
    return SL_OK;
}

const sl__op_def sl__reader_webdataset_op = {
    .name = "readers.webdataset",
    .doc = "Reads WebDataset tar shards: per output, the bytes of each sample's member with the "
           "output's extension (uint8 1-D views into the mapped tar); the key is the sample's.",
    .args = wds_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_READER | SL_OPF_RANDOM,
    .num_outputs = wds_outputs,
    .create = wds_create,
    .setup = wds_setup,
    .destroy = wds_free,
    .reader_meta = sl__reader_meta,
    .save = sl__reader_save,
    .restore = sl__reader_restore,
};
