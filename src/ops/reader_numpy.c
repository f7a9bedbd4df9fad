/* SPDX-License-Identifier: Apache-2.0 */
/* readers.numpy: NumPy .npy files from a folder tree, a file list or explicit files (reader.h).
 * Setup reads the .npy headers (one data type and dimension count a batch) and sizes the output;
 * run_cpu reads each array, on the pool, straight into the batch's output, in C order.
 *
 * A region of interest, as DALI's: roi_start or rel_roi_start, and one of roi_end, rel_roi_end,
 * roi_shape, rel_roi_shape, over the axes roi_axes (default: all, in order); an axis not named
 * keeps its whole extent. Relative coordinates scale the extent and round as slice rounds them
 * (with a relative start and a relative shape the end is round((start + shape) * extent)). A
 * window that leaves the array is an error naming the file (out_of_bounds_policy "error"), is cut
 * to the array ("trim_to_shape") or padded with fill_value ("pad"). With a region the file is
 * mapped and only the window is copied out. */
#include "ops/reader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/mapfile.h"
#include "io/npy.h"
#include "operator/dtype_conv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME "readers.numpy"

enum { OOB_ERROR, OOB_PAD, OOB_TRIM };
enum { END_NONE, END_ABS, END_REL, SHAPE_ABS, SHAPE_REL };

/* the region of interest, as given (literals) */
typedef struct npy_roi {
    bool on;
    int naxes; /* -1: every axis, in order */
    int axes[SL_MAX_DIMS];
    int nstart; /* 0: from 0 */
    bool start_rel;
    double start[SL_MAX_DIMS];
    int end_kind, nend;
    double end[SL_MAX_DIMS];
    int oob;
    double fill;
} npy_roi;

typedef struct numpy_reader {
    sl__reader r;        /* first: the common part */
    int want;            /* the dtype every file must hold, or -1 */
    npy_roi roi;         /* the region every array is read in */
    sl__npy_header *hdr; /* batch */
    int64_t *shapes;     /* batch x SL_MAX_DIMS: the output's */
    int64_t *anchor;     /* batch x SL_MAX_DIMS: the window's start in the array (with a region) */
} numpy_reader;

static const sl__arg_schema numpy_args[] = {
    {"file_root", SL_ARG_STR, NULL,
     "folder read with file_filter (its files and its sub-folders'), or the base of file_list / "
     "files",
     0, NULL},
    {"file_filter", SL_ARG_STR, "\"*.npy\"",
     "glob the file names under file_root must match (not with file_list or files)", 0, NULL},
    {"file_list", SL_ARG_STR, NULL, "text file of paths, one per line", 0, NULL},
    {"files", SL_ARG_STRS, NULL, "file paths (relative to file_root when given)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "data type every file must hold (checked)", 0, NULL},
    {"roi_start", SL_ARG_FLOATS, "None", "the region's start, in elements, per axis of roi_axes", 0,
     NULL},
    {"rel_roi_start", SL_ARG_FLOATS, "None", "the region's start, as fractions of the extents", 0,
     NULL},
    {"roi_end", SL_ARG_FLOATS, "None", "the region's end (exclusive), in elements", 0, NULL},
    {"rel_roi_end", SL_ARG_FLOATS, "None", "the region's end, as fractions of the extents", 0,
     NULL},
    {"roi_shape", SL_ARG_FLOATS, "None", "the region's extent, in elements", 0, NULL},
    {"rel_roi_shape", SL_ARG_FLOATS, "None", "the region's extent, as fractions of the extents", 0,
     NULL},
    {"roi_axes", SL_ARG_INTS, "[]", "the axes the region's coordinates give (default: all)", 0,
     NULL},
    {"out_of_bounds_policy", SL_ARG_ENUM, "\"error\"",
     "a region outside the array: error, pad (with fill_value) or trim_to_shape", 0,
     "error|pad|trim_to_shape"},
    {"fill_value", SL_ARG_FLOAT, "0.0", "the padding's value (out_of_bounds_policy=\"pad\")", 0,
     NULL},
    {"cache_header_information", SL_ARG_BOOL, "False",
     "accepted; no effect (each header is read with its sample)", 0, NULL},
    {"use_o_direct", SL_ARG_BOOL, "False", "accepted; no effect", 0, NULL},
    SL__READER_ARGS(
        "accepted; no effect (a batch's files are read, in parallel, as it is prepared)",
        "accepted; no effect (arrays are read into the outputs, never mapped)",
        "accepted; no effect (outputs are sized per batch from the .npy headers)"),
    {NULL, 0, NULL, NULL, 0, NULL},
};

static void numpy_free(void *state) {
    numpy_reader *f = state;
    if (!f) return;
    free(f->hdr);
    free(f->shapes);
    free(f->anchor);
    sl__reader_free(&f->r);
}

/* one of the roi coordinate lists (at most SL_MAX_DIMS values) into dst; its count, 0 if absent */
static sl_status roi_list(const sl__args *a, const char *name, double *dst, int *n, sl_err *err) {
    *n = 0;
    if (!sl__args_given(a, name)) return SL_OK;
    const double *v;
    int k = sl__args_floats(a, name, &v);
    if (k < 1 || k > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, NAME ": %s has %d values (1 to %d, one per axis)", name,
                          k, SL_MAX_DIMS);
    for (int d = 0; d < k; d++) {
        if (!isfinite(v[d]) || fabs(v[d]) > 9e15)
            return sl_err_set(err, SL_EINVAL, NAME ": %s[%d] = %g", name, d, v[d]);
        dst[d] = v[d];
    }
    *n = k;
    return SL_OK;
}

static sl_status roi_args(npy_roi *roi, const sl__args *a, sl_err *err) {
    static const char *const ends[] = {"roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape"};
    const char *oob = sl__args_str(a, "out_of_bounds_policy");
    roi->oob = !strcmp(oob, "pad") ? OOB_PAD : !strcmp(oob, "trim_to_shape") ? OOB_TRIM : OOB_ERROR;
    roi->fill = sl__args_float(a, "fill_value");
    if (sl__args_given(a, "roi_start") && sl__args_given(a, "rel_roi_start"))
        return sl_err_set(err, SL_EINVAL, NAME ": give roi_start or rel_roi_start, not both");
    roi->start_rel = sl__args_given(a, "rel_roi_start");
    SL_TRY(
        roi_list(a, roi->start_rel ? "rel_roi_start" : "roi_start", roi->start, &roi->nstart, err));
    for (int k = 0; k < 4; k++) {
        if (!sl__args_given(a, ends[k])) continue;
        if (roi->end_kind != END_NONE)
            return sl_err_set(err, SL_EINVAL,
                              NAME ": give one of roi_end, rel_roi_end, roi_shape and "
                                   "rel_roi_shape, not both %s and %s",
                              ends[roi->end_kind - 1], ends[k]);
        roi->end_kind = k + 1;
        SL_TRY(roi_list(a, ends[k], roi->end, &roi->nend, err));
    }
    const int64_t *ax;
    roi->naxes = sl__args_ints(a, "roi_axes", &ax);
    if (roi->naxes > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, NAME ": roi_axes has %d axes (at most %d)", roi->naxes,
                          SL_MAX_DIMS);
    for (int k = 0; k < roi->naxes; k++) {
        if (ax[k] < 0 || ax[k] >= SL_MAX_DIMS)
            return sl_err_set(err, SL_EINVAL, NAME ": roi_axes[%d] = %lld", k, (long long)ax[k]);
        for (int j = 0; j < k; j++)
            if (roi->axes[j] == (int)ax[k])
                return sl_err_set(err, SL_EINVAL, NAME ": roi_axes names axis %lld twice",
                                  (long long)ax[k]);
        roi->axes[k] = (int)ax[k];
    }
    if (roi->naxes == 0) roi->naxes = -1;
    roi->on = roi->nstart > 0 || roi->end_kind != END_NONE;
    if (!roi->on && (sl__args_given(a, "roi_axes") || roi->oob != OOB_ERROR))
        return sl_err_set(err, SL_EINVAL,
                          NAME ": roi_axes and out_of_bounds_policy need a region (roi_start, "
                               "roi_end, roi_shape or their rel_ forms)");
    int n = roi->naxes < 0 ? -1 : roi->naxes;
    if (n > 0 && ((roi->nstart && roi->nstart != n) || (roi->nend && roi->nend != n)))
        return sl_err_set(err, SL_EINVAL,
                          NAME ": the region's coordinates give %d and %d values for the %d "
                               "axes of roi_axes",
                          roi->nstart, roi->nend, n);
    if (n < 0 && roi->nstart && roi->nend && roi->nstart != roi->nend)
        return sl_err_set(err, SL_EINVAL,
                          NAME ": the region's start has %d values and its end or shape %d",
                          roi->nstart, roi->nend);
    return SL_OK;
}

static sl_status numpy_create(const sl__args *a, const sl__op_init *init, void **state,
                              sl_err *err) {
    numpy_reader *f = sl__calloc(1, sizeof *f, err);
    if (!f) return SL_ENOMEM;
    sl__reader *r = &f->r;
    r->fmt = SL__READER_NUMPY;
    r->opname = NAME;
    f->want = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    sl_status st = roi_args(&f->roi, a, err);
    if (!st) st = sl__reader_folder_start(r, a, init, err);
    if (!st) {
        size_t n = (size_t)r->batch_size * SL_MAX_DIMS;
        f->hdr = sl__calloc((size_t)r->batch_size, sizeof *f->hdr, err);
        f->shapes = sl__calloc(n, sizeof *f->shapes, err);
        f->anchor = sl__calloc(n, sizeof *f->anchor, err);
        if (!f->hdr || !f->shapes || !f->anchor) st = SL_ENOMEM;
    }
    if (st) {
        numpy_free(f);
        return st;
    }
    *state = f;
    return SL_OK;
}

/* file i's header into f->hdr[i] (its errors name the file) */
static sl_status numpy_header(numpy_reader *f, int i, sl_err *err) {
    sl__reader *r = &f->r;
    char p[8192];
    sl__folder_path(r->folder, r->recs[i], p, sizeof p);
    int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: refused, not waited on */
    if (fd < 0) return sl__reader_fail(r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    struct stat sb;
    sl_status st = fstat(fd, &sb) == 0 ? SL_OK : sl_err_set(err, SL_EIO, "%s", strerror(errno));
    if (st == SL_OK && !S_ISREG(sb.st_mode)) st = sl_err_set(err, SL_EIO, "not a regular file");
    if (st == SL_OK) st = sl__npy_read_header(fd, (size_t)sb.st_size, &f->hdr[i], err);
    close(fd);
    if (st != SL_OK) {
        char msg[SL_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sl__reader_fail(r, i, st, err, "%s", msg);
    }
    return SL_OK;
}

/* file i's window: anchor and extent per axis of its array (h), by the region and the policy */
static sl_status window(numpy_reader *f, int i, const sl__npy_header *h, int64_t *anchor,
                        int64_t *extent, sl_err *err) {
    const npy_roi *roi = &f->roi;
    for (int d = 0; d < h->ndim; d++) anchor[d] = 0, extent[d] = h->shape[d];
    if (!roi->on) return SL_OK;
    int n = roi->naxes < 0 ? (roi->nstart ? roi->nstart : roi->nend) : roi->naxes;
    if (n > h->ndim)
        return sl__reader_fail(&f->r, i, SL_EINVAL, err,
                               "the region gives %d axes, the array has %d dimensions", n, h->ndim);
    for (int k = 0; k < n; k++) {
        int d = roi->naxes < 0 ? k : roi->axes[k];
        if (d >= h->ndim)
            return sl__reader_fail(&f->r, i, SL_EINVAL, err,
                                   "roi_axes names axis %d; the array has %d dimensions", d,
                                   h->ndim);
        double ext = (double)h->shape[d];
        double a = roi->nstart ? roi->start[k] * (roi->start_rel ? ext : 1) : 0, e;
        double v = roi->nend ? roi->end[k] : 0;
        switch (roi->end_kind) {
        case END_ABS:
            e = v;
            break;
        case END_REL:
            e = v * ext;
            break;
        case SHAPE_ABS:
            e = a + v;
            break;
        case SHAPE_REL: /* both relative: one rounding of the sum, as slice */
            e = roi->nstart && roi->start_rel ? (roi->start[k] + v) * ext : a + v * ext;
            break;
        default:
            e = ext;
        }
        int64_t lo = llround(a), hi = llround(e);
        if (hi < lo)
            return sl__reader_fail(&f->r, i, SL_EINVAL, err,
                                   "the region's axis %d runs from %lld to %lld (its end before "
                                   "its start)",
                                   d, (long long)lo, (long long)hi);
        if ((lo < 0 || hi > h->shape[d]) && roi->oob == OOB_ERROR)
            return sl__reader_fail(&f->r, i, SL_EINVAL, err,
                                   "the region's axis %d runs from %lld to %lld, outside the "
                                   "array's extent %lld (out_of_bounds_policy=\"pad\" or "
                                   "\"trim_to_shape\" allow it)",
                                   d, (long long)lo, (long long)hi, (long long)h->shape[d]);
        if (roi->oob == OOB_TRIM) {
            lo = lo < 0 ? 0 : lo > h->shape[d] ? h->shape[d] : lo;
            hi = hi < lo ? lo : hi > h->shape[d] ? h->shape[d] : hi;
        }
        anchor[d] = lo, extent[d] = hi - lo;
    }
    return SL_OK;
}

/* Reads every file's header (the batch's shapes: one data type and dimension count for all of
 * them, as a batch holds) and sizes the output; run_cpu reads the arrays into place. */
static sl_status numpy_setup(void *state, sl__op_io *io, sl_err *err) {
    numpy_reader *f = state;
    sl__reader *r = &f->r;
    SL_TRY(sl__reader_next(r, io, err));
    for (int i = 0; i < io->batch; i++) {
        SL_TRY(numpy_header(f, i, err));
        const sl__npy_header *h = &f->hdr[i], *h0 = &f->hdr[0];
        if (f->want >= 0 && (int)h->dtype != f->want)
            return sl__reader_fail(r, i, SL_EINVAL, err, "holds %s, but dtype=%s",
                                   sl_dtype_name(h->dtype), sl_dtype_name((sl_dtype)f->want));
        if (i > 0 && (h->dtype != h0->dtype || h->ndim != h0->ndim))
            return sl__reader_fail(
                r, i, SL_EINVAL, err,
                "holds %s with %d dimensions, but the batch's first file (%s) holds "
                "%s with %d: a batch has one data type and dimension count",
                sl_dtype_name(h->dtype), h->ndim, r->keys[0], sl_dtype_name(h0->dtype), h0->ndim);
        size_t at = (size_t)i * (size_t)h0->ndim;
        SL_TRY(window(f, i, h, f->anchor + at, f->shapes + at, err));
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, f->hdr[0].dtype, f->hdr[0].ndim, sl_cpu(), err));
    out->layout[0] = 0;
    return sl_tlist_alloc(out, f->shapes, err);
}

/* The window (anchor, extent) of the C-order array src (h) into dst, the padding fill_value. */
static void copy_window(const numpy_reader *f, const sl__npy_header *h, const uint8_t *src,
                        const int64_t *anchor, const int64_t *extent, uint8_t *dst) {
    int nd = h->ndim;
    size_t item = sl_dtype_size(h->dtype);
    if (nd == 0) {
        memcpy(dst, src, item);
        return;
    }
    uint8_t fill[16];
    sl__dtype_conv_store(fill, h->dtype, 0, f->roi.fill);
    int64_t rows = 1;
    for (int d = 0; d < nd - 1; d++) rows *= extent[d];
    int64_t idx[SL_MAX_DIMS] = {0}, w = extent[nd - 1], a = anchor[nd - 1], n = h->shape[nd - 1];
    for (int64_t row = 0; row < rows; row++, dst += (size_t)w * item) {
        /* the source row: in bounds on every outer axis, else all padding */
        bool inside = true;
        int64_t off = 0;
        for (int d = 0; d < nd - 1; d++) {
            int64_t s = anchor[d] + idx[d];
            inside = inside && s >= 0 && s < h->shape[d];
            off = off * h->shape[d] + s;
        }
        int64_t lo = inside ? (a < 0 ? -a : 0) : w, hi = inside ? n - a : 0; /* in [lo, hi) */
        lo = lo > w ? w : lo;
        hi = hi > w ? w : hi < lo ? lo : hi;
        for (int64_t x = 0; x < lo; x++) memcpy(dst + (size_t)x * item, fill, item);
        if (hi > lo)
            memcpy(dst + (size_t)lo * item, src + ((size_t)(off * n + a + lo)) * item,
                   (size_t)(hi - lo) * item);
        for (int64_t x = hi; x < w; x++) memcpy(dst + (size_t)x * item, fill, item);
        for (int d = nd - 2; d >= 0 && ++idx[d] == extent[d]; d--) idx[d] = 0;
    }
}

/* file i's array read whole into buf (h->nbytes) */
static sl_status read_all(numpy_reader *f, int i, const char *p, uint8_t *buf, sl_err *err) {
    const sl__npy_header *h = &f->hdr[i];
    sl_status st = SL_OK;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sl__reader_fail(&f->r, i, SL_EIO, err, "%s: %s", p, strerror(errno));
    for (size_t n = 0; st == SL_OK && n < h->nbytes;) {
        ssize_t got = pread(fd, buf + n, h->nbytes - n, (off_t)(h->data_offset + n));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            st = sl__reader_fail(&f->r, i, SL_EIO, err, "%s: %s", p,
                                 got < 0 ? strerror(errno) : "the file shrank while being read");
        else
            n += (size_t)got;
    }
    close(fd);
    return st;
}

/* file i's array (or its window) into out[0] sample i (C order) */
static sl_status numpy_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    numpy_reader *f = state;
    sl__reader *r = &f->r;
    (void)worker;
    const sl__npy_header *h = &f->hdr[i];
    uint8_t *dst = io->out[0]->data[i];
    char p[8192];
    sl__folder_path(r->folder, r->recs[i], p, sizeof p);
    const int64_t *anchor = f->anchor + (size_t)i * (size_t)h->ndim,
                  *extent = f->shapes + (size_t)i * (size_t)h->ndim;
    if (!f->roi.on && !(h->fortran && h->ndim > 1)) return read_all(f, i, p, dst, err);
    if (f->roi.on && !h->fortran) { /* mapped: only the window's rows are touched */
        const uint8_t *map;
        size_t size;
        sl_status st = sl__mapfile_map(p, &map, &size, err);
        if (st == SL_OK && size < h->data_offset + h->nbytes) {
            sl__mapfile_unmap(map, size);
            return sl__reader_fail(r, i, SL_EIO, err, "%s: the file shrank", p);
        }
        if (st != SL_OK) {
            char msg[SL_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__reader_fail(r, i, st, err, "%s", msg);
        }
        copy_window(f, h, map + h->data_offset, anchor, extent, dst);
        sl__mapfile_unmap(map, size);
        return SL_OK;
    }
    /* Fortran order: read whole, turned to C order, then (with a region) windowed */
    uint8_t *buf = sl__malloc(2 * (h->nbytes ? h->nbytes : 1), err);
    if (!buf) return SL_ENOMEM;
    uint8_t *c = buf + (h->nbytes ? h->nbytes : 1);
    sl_status st = read_all(f, i, p, buf, err);
    if (st == SL_OK) {
        sl__npy_fortran_to_c(h, buf, f->roi.on ? c : dst);
        if (f->roi.on) copy_window(f, h, c, anchor, extent, dst);
    }
    free(buf);
    return st;
}

const sl__op_def sl__reader_numpy_op = {
    SL__READER_OP_COMMON,
    .name = "readers.numpy",
    .aliases = "numpy_reader",
    .doc = "Reads NumPy .npy files (format 1.0-3.0, little-endian, C or Fortran order) from a "
           "folder tree, a file list or explicit files: one array per file (or a region of it), "
           "in C order; the key is the relative path.",
    .args = numpy_args,
    .create = numpy_create,
    .setup = numpy_setup,
    .run_cpu = numpy_run_cpu,
    .destroy = numpy_free,
};
