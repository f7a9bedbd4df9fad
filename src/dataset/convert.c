/* SPDX-License-Identifier: Apache-2.0 */
/* sl_dataset_convert (sluice/dataset.h): an IDX pair (MNIST / Fashion-MNIST, plain or gzip;
 * images JPEG-encoded by libjpeg at the quality asked, grayscale for one channel, or stored raw)
 * or an image folder (class sub-folders, files stored as they are) into a store that
 * sl_dataset_writer writes. IDX records are keyed by their input order, zero-padded (at least 8
 * digits); folder records by their path relative to the folder ("class/file.jpg"), so they lie
 * in path order (LMDB sorts its keys; each record carries its own label), and the class names go,
 * one a line in label order, to labels.txt beside data.mdb (not into the LMDB: the readers take
 * every key there for a record), or beside the TFRecord file as FILE.labels.txt. A folder's file
 * whose header is no JPEG or PNG the decoders read is refused, naming it. The writer makes the
 * store appear only once it is whole (see writer.c). */
#include "sluice/dataset.h"

#include "core/log.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/image_info.h"
#include "io/jpegenc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LMDB's largest key (mdb_env_get_maxkeysize with the default page size) */
#define KEY_LIMIT 511

static const sl__folder *sort_fo;
static int cmp_name(const void *a, const void *b) {
    return strcmp(sl__folder_name(sort_fo, *(const int64_t *)a),
                  sl__folder_name(sort_fo, *(const int64_t *)b));
}

/* The folder's records in key (byte) order, which LMDB keeps: "a-b/x" sorts before "a/y" though
 * class a comes first. Every name is checked to fit an LMDB key. */
static sl_status key_order(const sl__folder *fo, int64_t **out, sl_err *e) {
    int64_t n = sl__folder_count(fo);
    int64_t *ord = malloc((size_t)(n ? n : 1) * sizeof *ord);
    if (!ord) return sl_err_set(e, SL_ENOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        ord[i] = i;
        if (strlen(sl__folder_name(fo, i)) > KEY_LIMIT) {
            free(ord);
            return sl_err_set(e, SL_EINVAL,
                              "%s/%s: the relative path is longer than an LMDB key "
                              "(%d bytes)",
                              sl__folder_root(fo), sl__folder_name(fo, i), KEY_LIMIT);
        }
    }
    sort_fo = fo; /* qsort has no user pointer; a conversion runs on one thread */
    qsort(ord, (size_t)n, sizeof *ord, cmp_name);
    *out = ord;
    return SL_OK;
}

/* the class names for labels.txt, checked before any record is written */
static sl_status check_classes(const sl__folder *fo, sl_err *e) {
    for (int c = 0; c < sl__folder_classes(fo); c++)
        if (strchr(sl__folder_class_name(fo, c), '\n'))
            return sl_err_set(e, SL_EINVAL,
                              "%s/%s: a class name with a line break cannot go "
                              "into labels.txt",
                              sl__folder_root(fo), sl__folder_class_name(fo, c));
    return SL_OK;
}

static int digits(long long n) {
    int d = 1;
    while (n >= 10) n /= 10, d++;
    return d < 8 ? 8 : d > 19 ? 19 : d; /* an int64 has at most 19 */
}

/* The IDX pair: uint8 images of 3 or 4 dims and as many uint8 labels. */
static sl_status open_idx(const sl_dataset_convert_options *o, sl__idx **im, sl__idx **lb, int *h,
                          int *w, int *ch, sl_err *e) {
    SL_TRY(sl__idx_open(o->images, im, e));
    SL_TRY(sl__idx_open(o->labels, lb, e));
    const int64_t *d = sl__idx_dims(*im);
    if (sl__idx_type(*im) != SL_IDX_U8 || (sl__idx_ndim(*im) != 3 && sl__idx_ndim(*im) != 4))
        return sl_err_set(e, SL_EFORMAT, "%s: uint8 images of 3 or 4 dims wanted", o->images);
    if (sl__idx_type(*lb) != SL_IDX_U8 || sl__idx_ndim(*lb) != 1 ||
        sl__idx_count(*lb) != sl__idx_count(*im))
        return sl_err_set(e, SL_EFORMAT, "%s: %lld uint8 labels wanted", o->labels,
                          (long long)sl__idx_count(*im));
    if (d[1] > INT_MAX || d[2] > INT_MAX || (sl__idx_ndim(*im) == 4 && d[3] > INT_MAX))
        return sl_err_set(e, SL_EFORMAT, "%s: images of %lldx%lld are too large", o->images,
                          (long long)d[1], (long long)d[2]);
    *h = (int)d[1], *w = (int)d[2], *ch = sl__idx_ndim(*im) == 4 ? (int)d[3] : 1;
    return SL_OK;
}

static sl_status check_options(const sl_dataset_convert_options *o, sl_err *e) {
    if (!o || !o->out) return sl_err_set(e, SL_EINVAL, "sl_dataset_convert: no output path");
    if (o->from != SL_DATASET_FROM_IDX && o->from != SL_DATASET_FROM_FOLDER)
        return sl_err_set(e, SL_EINVAL,
                          "sl_dataset_convert: source %d is neither "
                          "SL_DATASET_FROM_IDX nor _FROM_FOLDER",
                          (int)o->from);
    if (o->from == SL_DATASET_FROM_IDX && (!o->images || !o->labels))
        return sl_err_set(e, SL_EINVAL,
                          "sl_dataset_convert: an IDX source needs images and labels");
    if (o->from == SL_DATASET_FROM_FOLDER && !o->folder)
        return sl_err_set(e, SL_EINVAL, "sl_dataset_convert: a folder source needs its folder");
    if (o->quality < 0 || o->quality > 100)
        return sl_err_set(e, SL_EINVAL, "sl_dataset_convert: quality %d is not in 1..100 (0: 95)",
                          o->quality);
    if (o->raw && (o->from != SL_DATASET_FROM_IDX || o->to == SL_DATASET_TFRECORD))
        return sl_err_set(e, SL_EINVAL,
                          "sl_dataset_convert: raw pixels come from IDX images and "
                          "go into the LMDBs only");
    return SL_OK;
}

sl_status sl_dataset_convert(const sl_dataset_convert_options *o, sl_dataset_convert_result *result,
                             sl_err *e) {
    if (result) memset(result, 0, sizeof *result);
    SL_TRY(check_options(o, e));
    bool idx = o->from == SL_DATASET_FROM_IDX, tf = o->to == SL_DATASET_TFRECORD;
    int quality = o->quality ? o->quality : 95;
    sl__idx *im = NULL, *lb = NULL;
    sl__folder *fo = NULL;
    sl_dataset_writer *wr = NULL;
    int64_t *order = NULL; /* folder records in key order */
    long long n = 0;
    int h = 0, w = 0, ch = 1;
    sl_status st;
    if (idx) {
        st = open_idx(o, &im, &lb, &h, &w, &ch, e);
        if (!st) n = sl__idx_count(im);
    } else {
        st = sl__folder_open(o->folder, NULL, 0, NULL, 0, NULL, &fo, e);
        if (!st) st = check_classes(fo, e);
        if (!st) st = key_order(fo, &order, e);
        if (!st) n = sl__folder_count(fo);
    }
    if (!st) st = sl_dataset_writer_create(o->out, o->to, &wr, e);
    if (!st && fo) {
        const char **names = malloc((size_t)(sl__folder_classes(fo) + 1) * sizeof *names);
        if (!names) st = sl_err_set(e, SL_ENOMEM, "out of memory");
        for (int c = 0; !st && c < sl__folder_classes(fo); c++)
            names[c] = sl__folder_class_name(fo, c);
        if (!st) st = sl_dataset_writer_set_classes(wr, names, sl__folder_classes(fo), e);
        free(names);
    }
    int key_digits = digits(n - 1);
    uint8_t *fbuf = NULL;
    size_t fcap = 0;
    for (long long i = 0; i < n && !st; i++) {
        if (idx) {
            size_t sz;
            const uint8_t *px = sl__idx_item(im, i, &sz);
            int32_t label = *sl__idx_item(lb, i, &sz);
            char key[32];
            snprintf(key, sizeof key, "%0*lld", key_digits, i);
            if (o->raw) {
                st = sl_dataset_writer_add(wr, key, px, (size_t)h * (size_t)w * (size_t)ch, true, h,
                                           w, ch, label, e);
            } else {
                uint8_t *jpg;
                size_t jn;
                st = sl__jpegenc_encode(px, w, h, ch, quality, &jpg, &jn, e);
                if (!st) st = sl_dataset_writer_add(wr, key, jpg, jn, false, h, w, ch, label, e);
                free(jpg);
            }
        } else {
            size_t fn;
            sl__image_info info;
            int64_t r = order[i];
            st = sl__folder_read(fo, r, &fbuf, &fcap, &fn, e);
            /* a file the decoders cannot read would fail every epoch that reaches it: refused
             * here, by name, rather than stored */
            sl__decode_image_info di;
            char why[160];
            sl_status ps = SL_OK;
            if (!st && (ps = sl__decode_image_peek(fbuf, fn, SL__IMG_ANY, false, 0, &di, why,
                                                   sizeof why)) != SL_OK)
                st = ps == SL_ENOMEM
                         ? sl_err_set(e, ps, "%s/%s: out of memory reading its header: %s",
                                      sl__folder_root(fo), sl__folder_name(fo, r), why)
                         : sl_err_set(e, SL_EFORMAT,
                                      "%s/%s: not an image sluice can decode (JPEG or PNG): %s",
                                      sl__folder_root(fo), sl__folder_name(fo, r), why);
            h = w = 0, ch = 1; /* a header the probe does not read: no size in the record */
            if (!st && (ps = sl__jpegenc_probe(fbuf, fn, &info, e)) == SL_OK)
                h = info.height, w = info.width, ch = info.channels;
            else if (!st && ps == SL_ENOMEM) { /* stored without its size, it would differ */
                sl_err_prefix(e, "%s/%s: ", sl__folder_root(fo), sl__folder_name(fo, r));
                st = ps;
            }
            if (!st) {
                st = sl_dataset_writer_add(wr, sl__folder_name(fo, r), fbuf, fn, false, h, w, ch,
                                           sl__folder_label(fo, r), e);
                if (st) sl_err_prefix(e, "%s: ", sl__folder_name(fo, r));
            }
        }
        if (o->progress && ((i & 1023) == 0 || i + 1 == n)) o->progress(i + 1, n, o->user);
    }
    free(fbuf);
    if (st)
        sl_dataset_writer_discard(wr);
    else
        st = sl_dataset_writer_close(wr, e);
    if (!st && fo && result) {
        result->classes = sl__folder_classes(fo);
        snprintf(result->labels_path, sizeof result->labels_path,
                 tf ? "%s.labels.txt" : "%s/labels.txt", o->out);
    }
    if (!st && result) result->records = n;
    free(order);
    sl__idx_close(im);
    sl__idx_close(lb);
    sl__folder_close(fo);
    return st;
}
