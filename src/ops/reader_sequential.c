/* SPDX-License-Identifier: Apache-2.0 */
/* The readers of sequential record files, indexed once and mapped whole (reader.h):
 * readers.webdataset (tar shards) and readers.tfrecord (TFRecord files). */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- readers.webdataset ---------------------------------------------------------------------- */
/* readers.webdataset: WebDataset tar shards (reader.h): per output, each sample's member with the
 * output's extension, as uint8 views into the mapped tar (0 bytes, skipped samples or an error for
 * a missing one, as missing_component_behavior says). */

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
    {"index_paths", SL_ARG_STRS, "[]",
     "per tar file, its index (DALI's wds2idx format): how its members form samples, checked "
     "against the tar",
     0, NULL},
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
    const char *const *paths, *const *ext, *const *idx;
    int np = sl__args_strs(a, "paths", &paths);
    int ni = sl__args_strs(a, "index_paths", &idx);
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
    if (!st && ni && ni != np)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.webdataset: %d index_paths for %d paths (one index per tar file, "
                        "or none)",
                        ni, np);
    if (!st) {
        f->ext = sl__calloc((size_t)f->nout, sizeof *f->ext, err);
        if (!f->ext) st = SL_ENOMEM;
        for (int o = 0; o < f->nout && !st; o++)
            if (!ext[o][0] || !(f->ext[o] = strdup(ext[o])))
                st = sl_err_set(err, SL_EINVAL, "readers.webdataset: ext %d is empty", o);
    }
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__wds_open(np, paths, ni ? idx : NULL, &r->wds, err);
        if (st) st = sl_err_prefix(err, "readers.webdataset: ");
    }
    if (!st) {
        r->wds_exts = f->ext[0];
        r->wds_case = f->case_sensitive;
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
    SL__READER_OP_COMMON,
    .name = "readers.webdataset",
    .doc = "Reads WebDataset tar shards: per output, the bytes of each sample's member with the "
           "output's extension (uint8 1-D views into the mapped tar); the key is the sample's.",
    .args = wds_args,
    .num_outputs = wds_outputs,
    .create = wds_create,
    .setup = wds_setup,
    .destroy = wds_free,
};

/* ---- readers.tfrecord ------------------------------------------------------------------------ */
/* readers.tfrecord: TFRecord files of tf.train.Example records (reader.h). The features argument
 * (tfrec.FixedLenFeature / tfrec.VarLenFeature, as the pipeline text writes them) is checked at
 * creation; setup parses each record once and fills one output per feature: bytes as views into
 * the mapped file, int64 and float32 values copied, a short fixed-length feature completed with its
 * default value. */

/* One entry of `features`: [name, [kind, shape, dtype, default]] as the pipeline text's
 * tfrec.FixedLenFeature(shape, dtype, default) / tfrec.VarLenFeature([partial_shape,] dtype,
 * default) make it. */
typedef struct tf_feature {
    const char *name; /* = owned */
    char *owned;
    bool var;   /* VarLenFeature */
    int type;   /* SL_TFREC_STRING / INT64 / FLOAT32 */
    int nshape; /* FixedLen: the shape; VarLen: the partial shape (the dims after the first) */
    int64_t shape[SL_MAX_DIMS - 1];
    int64_t volume; /* of shape (FixedLen), of the partial shape (VarLen) */
    int64_t def_i;
    double def_f;
} tf_feature;

typedef struct tfrec_reader {
    sl__reader r; /* first: the common part */
    int nf;
    tf_feature *f;
    const char **names;    /* per feature */
    sl__tfrec_value *vals; /* batch x nf */
    int64_t *shapes;       /* batch x SL_MAX_DIMS */
} tfrec_reader;

static const sl__arg_schema tfrec_args[] = {
    {"path", SL_ARG_STRS, NULL, "the TFRecord file(s), read as one data set in order",
     SL_ARGF_REQUIRED, NULL},
    {"index_path", SL_ARG_STRS, "[]",
     "DALI's index files, one per path (lines \"offset length\", as tfrecord2idx or `sluice "
     "index` write them); without them each file is scanned once at creation",
     0, NULL},
    {"features", SL_ARG_FEATURES, NULL,
     "dict of feature name -> tfrec.FixedLenFeature(shape, dtype, default) or "
     "tfrec.VarLenFeature([partial_shape,] dtype, default); one output per feature, in order",
     SL_ARGF_REQUIRED, NULL},
    {"use_o_direct", SL_ARG_BOOL, "False", "accepted; no effect (the files are mapped)", 0, NULL},
    SL__READER_ARGS("accepted; no effect (the files are mapped: records are read when touched)",
                    "accepted; no effect (the files are always mapped)",
                    "accepted; no effect (bytes features are views into the mapped files, numbers "
                    "are sized per batch)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static int tfrec_outputs(const sl__args *a) {
    const sl__val *v = sl__args_get(a, "features");
    /* at least one, so that create runs and says what is wrong with an empty dict */
    return v && v->kind == SL_VAL_LIST && v->n > 1 ? v->n : 1;
}

static void tfrec_free(void *state) {
    tfrec_reader *t = state;
    if (!t) return;
    for (int k = 0; t->f && k < t->nf; k++) free(t->f[k].owned);
    free(t->f);
    free(t->names);
    free(t->vals);
    free(t->shapes);
    sl__reader_free(&t->r);
}

static bool val_is(const sl__val *v, sl__val_kind k, const char *s) {
    return v->kind == k && (!s || (v->s && !strcmp(v->s, s)));
}

/* the dtype enum tfrec.string / int64 / float32 */
static int tf_type(const sl__val *v) {
    static const char *const names[] = {"string", "int64", "float32"};
    if (v->kind != SL_VAL_ENUM && v->kind != SL_VAL_STR) return -1;
    for (int k = 0; k < 3; k++)
        if (!strcmp(v->s, names[k])) return k;
    return -1;
}

/* features[k] into f (messages name the feature) */
static sl_status tf_feature_read(const sl__val *pair, tf_feature *f, sl_err *err) {
    static const char *const tnames[] = {"tfrec.string", "tfrec.int64", "tfrec.float32"};
    const char *name =
        pair->kind == SL_VAL_LIST && pair->n == 2 && pair->items[0].kind == SL_VAL_STR
            ? pair->items[0].s
            : NULL;
    if (!name || pair->items[1].kind != SL_VAL_LIST || pair->items[1].n < 1)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: features is a dict of name -> "
                          "tfrec.FixedLenFeature(...) or tfrec.VarLenFeature(...)");
    if (!(f->owned = strdup(name))) return sl_err_set(err, SL_ENOMEM, "out of memory");
    f->name = f->owned;
    const sl__val *spec = &pair->items[1], *kind = &spec->items[0];
    const sl__val *args = spec->items + 1;
    int na = spec->n - 1;
    f->var = val_is(kind, SL_VAL_ENUM, "VarLenFeature");
    if (!f->var && !val_is(kind, SL_VAL_ENUM, "FixedLenFeature"))
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': not a tfrec.FixedLenFeature or "
                          "tfrec.VarLenFeature",
                          name);
    const sl__val *shape = NULL;
    if (!f->var && na == 3)
        shape = &args[0];
    else if (f->var && (na == 2 || na == 3))
        shape = na == 3 ? &args[0] : NULL;
    else
        return sl_err_set(
            err, SL_EINVAL, "readers.tfrecord: feature '%s': %s takes %s (got %d arguments)", name,
            f->var ? "tfrec.VarLenFeature" : "tfrec.FixedLenFeature",
            f->var ? "([partial_shape,] dtype, default_value)" : "(shape, dtype, default_value)",
            na);
    const sl__val *dt = &args[na - 2], *def = &args[na - 1];
    f->type = tf_type(dt);
    if (f->type < 0)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': dtype must be tfrec.string, tfrec.int64 "
                          "or tfrec.float32",
                          name);
    f->volume = 1;
    if (shape && shape->kind == SL_VAL_INT) { /* a scalar is a shape of one dimension */
        f->nshape = 1;
        f->shape[0] = shape->i;
    } else if (shape) {
        if (shape->kind != SL_VAL_LIST || shape->n > SL_MAX_DIMS - 1)
            return sl_err_set(err, SL_EINVAL,
                              "readers.tfrecord: feature '%s': the shape is a list of at most %d "
                              "sizes",
                              name, SL_MAX_DIMS - 1);
        f->nshape = shape->n;
        for (int d = 0; d < shape->n; d++) {
            if (shape->items[d].kind != SL_VAL_INT)
                return sl_err_set(err, SL_EINVAL,
                                  "readers.tfrecord: feature '%s': shape sizes are integers", name);
            f->shape[d] = shape->items[d].i;
        }
    }
    for (int d = 0; d < f->nshape; d++) {
        if (f->shape[d] < 1 || f->shape[d] > ((int64_t)1 << 40) / f->volume)
            return sl_err_set(err, SL_EINVAL,
                              "readers.tfrecord: feature '%s': shape size %lld out of range", name,
                              (long long)f->shape[d]);
        f->volume *= f->shape[d];
    }
    if (f->type == SL_TFREC_STRING && (f->var || f->volume > 1))
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': tensors of strings are not supported "
                          "(as DALI): a tfrec.string feature is tfrec.FixedLenFeature([], "
                          "tfrec.string, \"\"), one byte string per record",
                          name);
    bool def_ok = f->type == SL_TFREC_STRING ? def->kind == SL_VAL_STR
                  : f->type == SL_TFREC_INT64
                      ? def->kind == SL_VAL_INT
                      : def->kind == SL_VAL_INT || def->kind == SL_VAL_FLOAT;
    if (!def_ok)
        return sl_err_set(err, SL_EINVAL,
                          "readers.tfrecord: feature '%s': default_value must be a %s for %s", name,
                          f->type == SL_TFREC_STRING ? "string" : "number", tnames[f->type]);
    f->def_i = def->i;
    f->def_f = def->kind == SL_VAL_FLOAT ? def->f : (double)def->i;
    return SL_OK;
}

static sl_status tfrec_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    tfrec_reader *t = sl__calloc(1, sizeof *t, err);
    if (!t) return SL_ENOMEM;
    sl__reader *r = &t->r;
    r->fmt = SL__READER_TFREC;
    r->opname = "readers.tfrecord";
    const char *const *paths, *const *idx;
    int np = sl__args_strs(a, "path", &paths);
    int ni = sl__args_strs(a, "index_path", &idx);
    const sl__val *fv = sl__args_get(a, "features");
    sl_status st = SL_OK;
    if (np < 1) st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: path is required");
    if (!st && ni > 0 && ni != np)
        st = sl_err_set(err, SL_EINVAL,
                        "readers.tfrecord: %d index_path files for %d path files (one each)", ni,
                        np);
    if (!st && (!fv || fv->kind != SL_VAL_LIST || fv->n < 1))
        st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: features names no feature");
    if (!st) {
        t->nf = fv->n;
        t->f = sl__calloc((size_t)t->nf, sizeof *t->f, err);
        t->names = sl__calloc((size_t)t->nf, sizeof *t->names, err);
        if (!t->f || !t->names) st = SL_ENOMEM;
    }
    for (int k = 0; k < t->nf && !st; k++) {
        st = tf_feature_read(&fv->items[k], &t->f[k], err);
        if (!st) t->names[k] = t->f[k].name;
        for (int j = 0; j < k && !st; j++)
            if (!strcmp(t->names[j], t->names[k]))
                st = sl_err_set(err, SL_EINVAL, "readers.tfrecord: feature '%s' given twice",
                                t->names[k]);
    }
    if (!st) {
        r->path0 = strdup(paths[0]);
        st = sl__tfrec_open(np, paths, ni ? idx : NULL, &r->tfrec, err);
        if (st) st = sl_err_prefix(err, "readers.tfrecord: ");
    }
    if (!st) {
        r->n = sl__tfrec_count(r->tfrec);
        st = sl__reader_start(r, a, init, err);
    }
    if (!st) {
        t->vals = sl__calloc((size_t)r->batch_size * (size_t)t->nf, sizeof *t->vals, err);
        t->shapes = sl__calloc((size_t)r->batch_size * SL_MAX_DIMS, sizeof *t->shapes, err);
        if (!t->vals || !t->shapes) st = SL_ENOMEM;
    }
    if (st) {
        tfrec_free(t);
        return st;
    }
    *state = t;
    return SL_OK;
}

/* The shape of feature k of sample i (count: its number of values, -1 when absent) */
static sl_status tfrec_shape(tfrec_reader *t, int i, int k, int64_t count, int64_t *shape,
                             sl_err *err) {
    const tf_feature *f = &t->f[k];
    if (!f->var) { /* (shape), () as (1,); absent: (0, shape[1:]) as DALI's empty output */
        shape[0] = f->nshape ? f->shape[0] : 1;
        for (int d = 1; d < f->nshape; d++) shape[d] = f->shape[d];
        if (count < 0) shape[0] = 0;
        if (count > f->volume)
            return sl__reader_fail(&t->r, i, SL_EFORMAT, err,
                                   "feature '%s' has %lld values, more than its shape holds (%lld)",
                                   f->name, (long long)count, (long long)f->volume);
        return SL_OK;
    }
    if (count < 0) count = 0;
    if (count % f->volume)
        return sl__reader_fail(
            &t->r, i, SL_EFORMAT, err,
            "feature '%s' has %lld values, not a multiple of its partial shape's %lld", f->name,
            (long long)count, (long long)f->volume);
    shape[0] = count / f->volume;
    for (int d = 0; d < f->nshape; d++) shape[d + 1] = f->shape[d];
    return SL_OK;
}

static const int tf_list_kind[] = {SL_TFREC_BYTES_LIST, SL_TFREC_INT64_LIST, SL_TFREC_FLOAT_LIST};

/* Reads and checks the batch's records, finds their features (one pass over each Example), then
 * fills each output: bytes as views into the mapped file, numbers copied (with the default value
 * after the last one a fixed-length feature's record gives). */
static sl_status tfrec_setup(void *state, sl__op_io *io, sl_err *err) {
    tfrec_reader *t = state;
    sl__reader *r = &t->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        const uint8_t *data;
        uint64_t len;
        if (sl__tfrec_read(r->tfrec, r->recs[i], &data, &len, err))
            return sl_err_prefix(err, "readers.tfrecord: ");
        sl__tfrec_value *v = t->vals + (size_t)i * (size_t)t->nf;
        if (sl__tfrec_parse(data, (size_t)len, t->nf, t->names, v, err)) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__reader_fail(r, i, SL_EFORMAT, err, "%s (not a tf.train.Example)", msg);
        }
        for (int k = 0; k < t->nf; k++)
            if (v[k].kind != SL_TFREC_NONE && v[k].kind != tf_list_kind[t->f[k].type])
                return sl__reader_fail(r, i, SL_EFORMAT, err,
                                       "feature '%s' is a %s, but features asks for tfrec.%s",
                                       t->f[k].name, sl__tfrec_kind_name(v[k].kind),
                                       t->f[k].type == SL_TFREC_STRING  ? "string"
                                       : t->f[k].type == SL_TFREC_INT64 ? "int64"
                                                                        : "float32");
    }
    for (int k = 0; k < t->nf; k++) {
        const tf_feature *f = &t->f[k];
        sl_tlist *out = io->out[k];
        if (f->type == SL_TFREC_STRING) {
            SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 1, sl_cpu(), err));
            out->layout[0] = 0;
            for (int i = 0; i < io->batch; i++) {
                static const uint8_t none[1];
                const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
                const uint8_t *d = none;
                size_t n = 0;
                if (v->kind != SL_TFREC_NONE && sl__tfrec_bytes(v, &d, &n) < 0)
                    return sl__reader_fail(r, i, SL_EFORMAT, err,
                                           "feature '%s': malformed bytes_list", f->name);
                if (!d) d = none;
                int64_t shape = (int64_t)n;
                sl_tlist_set_external(out, i, (void *)d, &shape);
            }
            continue;
        }
        int ndim = f->var ? 1 + f->nshape : (f->nshape ? f->nshape : 1);
        for (int i = 0; i < io->batch; i++) {
            const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
            int64_t count = -1;
            if (v->kind != SL_TFREC_NONE) {
                count = f->type == SL_TFREC_INT64 ? sl__tfrec_int64s(v, NULL, 0)
                                                  : sl__tfrec_floats(v, NULL, 0);
                if (count < 0)
                    return sl__reader_fail(r, i, SL_EFORMAT, err, "feature '%s': malformed %s",
                                           f->name, sl__tfrec_kind_name(v->kind));
            }
            SL_TRY(tfrec_shape(t, i, k, count, t->shapes + (size_t)i * (size_t)ndim, err));
        }
        SL_TRY(sl_tlist_reset(out, io->batch,
                              f->type == SL_TFREC_INT64 ? SL_DTYPE_I64 : SL_DTYPE_F32, ndim,
                              sl_cpu(), err));
        out->layout[0] = 0;
        SL_TRY(sl_tlist_alloc(out, t->shapes, err));
        for (int i = 0; i < io->batch; i++) {
            const sl__tfrec_value *v = &t->vals[(size_t)i * (size_t)t->nf + (size_t)k];
            int64_t n =
                (int64_t)(sl_tlist_sample_nbytes(out, i) / (f->type == SL_TFREC_INT64 ? 8 : 4));
            int64_t got = 0;
            if (v->kind != SL_TFREC_NONE)
                got = f->type == SL_TFREC_INT64 ? sl__tfrec_int64s(v, out->data[i], n)
                                                : sl__tfrec_floats(v, out->data[i], n);
            for (int64_t e = got; e < n; e++) { /* a short fixed-length feature */
                if (f->type == SL_TFREC_INT64)
                    ((int64_t *)out->data[i])[e] = f->def_i;
                else
                    ((float *)out->data[i])[e] = (float)f->def_f;
            }
        }
    }
    return SL_OK;
}

const sl__op_def sl__reader_tfrecord_op = {
    SL__READER_OP_COMMON,
    .name = "readers.tfrecord",
    .aliases = "tfrecord_reader",
    .doc = "Reads TFRecord files of tf.train.Example records (framing and CRC-32Cs checked): one "
           "output per feature, in the order of features -- tfrec.string as uint8 1-D views into "
           "the mapped file, tfrec.int64 as int64, tfrec.float32 as float32; the key is the "
           "record's byte offset.",
    .args = tfrec_args,
    .num_outputs = tfrec_outputs,
    .create = tfrec_create,
    .setup = tfrec_setup,
    .destroy = tfrec_free,
};
