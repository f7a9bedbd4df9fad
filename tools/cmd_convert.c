/* SPDX-License-Identifier: Apache-2.0 */
/* sluice convert: writes LMDBs as DALI's Caffe2 / Caffe readers expect them, or a TFRecord file
 * of tf.train.Example records in TensorFlow's image-classification layout (image/encoded bytes,
 * image/class/label int64) as readers.tfrecord reads it, from IDX files
 * (MNIST / Fashion-MNIST, plain or gzip; images JPEG-encoded by libjpeg at --quality, grayscale for
 * one channel, or stored raw with --raw) or from image folders (class sub-folders, files stored
 * as they are). IDX records are keyed by their input order, zero-padded (at least 8 digits); folder
 * records by their path relative to the folder ("class/file.jpg"), so they lie in path order (LMDB
 * sorts its keys; each record carries its own label), and the class names go, one a line in label
 * order, to labels.txt beside data.mdb (not into the LMDB: the readers take every key there for a
 * record). The LMDB writer, the record encoders and the JPEG encoder are the library's (src/io/).
 */
#include "cli.h"
#include "common.h"

#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"
#include "io/tfrecord.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f) {
    fprintf(f, "usage: sluice convert --from idx --images FILE --labels FILE --to caffe2|caffe "
               "--out DIR [--quality Q] [--raw]\n"
               "       sluice convert --from folder --in DIR --to caffe2|caffe --out DIR\n"
               "Writes an LMDB of Caffe2 TensorProtos (image STRING + label INT32) or Caffe Datum\n"
               "records. IDX records are keyed by input order (zero-padded), folder records by\n"
               "their relative path (class/file), with the class names, in label order, written\n"
               "to DIR/labels.txt. --quality: JPEG quality (default 95);\n"
               "--raw: store pixels (Caffe2 BYTE with dims H,W,C / Datum encoded=false).\n");
    return f == stdout ? 0 : 2;
}

typedef struct conv {
    sl__lmdb_writer *w;
    FILE *tf; /* --to tfrecord */
    const char *out;
    int caffe2;
    int key_digits;
    sl__pw_buf rec, frame;
} conv;

static int put(conv *c, const char *key, const uint8_t *img, size_t n, bool raw, int h, int w,
               int ch, int32_t label, sl_err *e) {
    c->rec.len = 0;
    if (c->tf) {
        c->frame.len = 0;
        sl__tfrec_encode_image(&c->rec, img, n, label);
        sl__tfrec_put(&c->frame, c->rec.data, c->rec.len);
        if (c->rec.oom || c->frame.oom)
            return sl_err_set(e, SL_ENOMEM, "out of memory encoding record %s", key);
        if (fwrite(c->frame.data, 1, c->frame.len, c->tf) != c->frame.len)
            return sl_err_set(e, SL_EIO, "%s: %s", c->out, strerror(errno));
        return SL_OK;
    }
    if (c->caffe2)
        sl__caffe2_encode(&c->rec, img, n, raw, h, w, ch, label);
    else
        sl__caffe_encode(&c->rec, img, n, raw, h, w, ch, label);
    if (c->rec.oom) return sl_err_set(e, SL_ENOMEM, "out of memory encoding record %s", key);
    return sl__lmdb_writer_put(c->w, key, strlen(key), c->rec.data, c->rec.len, e);
}

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
    int64_t *ord = malloc((size_t)n * sizeof *ord);
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
    sort_fo = fo;
    qsort(ord, (size_t)n, sizeof *ord, cmp_name);
    *out = ord;
    return SL_OK;
}

/* DIR/labels.txt: class c's name on line c + 1 */
static sl_status write_labels(const char *dir, bool tf, const sl__folder *fo, sl_err *e) {
    char p[4200];
    snprintf(p, sizeof p, tf ? "%s.labels.txt" : "%s/labels.txt", dir);
    for (int c = 0; c < sl__folder_classes(fo); c++)
        if (strchr(sl__folder_class_name(fo, c), '\n'))
            return sl_err_set(e, SL_EINVAL,
                              "%s/%s: a class name with a line break cannot go "
                              "into labels.txt",
                              sl__folder_root(fo), sl__folder_class_name(fo, c));
    FILE *f = fopen(p, "w");
    if (!f) return sl_err_set(e, SL_EIO, "%s: %s", p, strerror(errno));
    for (int c = 0; c < sl__folder_classes(fo); c++)
        fprintf(f, "%s\n", sl__folder_class_name(fo, c));
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return sl_err_set(e, SL_EIO, "%s: write failed", p);
    return SL_OK;
}

static int digits(long long n) {
    int d = 1;
    while (n >= 10) n /= 10, d++;
    return d < 8 ? 8 : d;
}

int sl_cli_convert(int argc, char **argv) {
    const char *from = NULL, *images = NULL, *labels = NULL, *to = NULL, *out = NULL, *in = NULL;
    int quality = 95;
    bool raw = false, quality_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--from")     ? &from
                            : !strcmp(a, "--images") ? &images
                            : !strcmp(a, "--labels") ? &labels
                            : !strcmp(a, "--to")     ? &to
                            : !strcmp(a, "--out")    ? &out
                            : !strcmp(a, "--in")     ? &in
                                                     : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
        if (!strcmp(a, "--raw")) {
            raw = true;
        } else if (!strcmp(a, "--quality") && i + 1 < argc) {
            long long q;
            if (sl_cli_opt_int("convert", a, argv[++i], 1, 100, &q)) return 1;
            quality = (int)q;
            quality_given = true;
        } else if (slot && i + 1 < argc) {
            *slot = argv[++i];
        } else {
            fprintf(stderr, "sluice convert: unknown or incomplete option '%s'\n", a);
            return usage(stderr);
        }
    }
    if (!from || !to || !out) {
        char missing[128] = "";
        if (!from) strcat(missing, " --from idx|folder");
        if (!to) strcat(missing, " --to caffe2|caffe|tfrecord");
        if (!out) strcat(missing, " --out DIR");
        fprintf(stderr,
                "sluice convert: missing%s (--from idx takes --images FILE --labels FILE, "
                "--from folder takes --in DIR; see sluice convert --help)\n",
                missing);
        return 2;
    }
    bool tf = !strcmp(to, "tfrecord");
    if (strcmp(to, "caffe2") && strcmp(to, "caffe") && !tf)
        return sl_cli_fail("convert", "--to must be caffe2, caffe or tfrecord, not '%s'", to);
    if (tf && raw)
        return sl_cli_fail("convert", "--raw is for the LMDBs: --to tfrecord stores encoded "
                                      "images (image/encoded), as TensorFlow's layout");
    bool idx = !strcmp(from, "idx");
    if (!idx && strcmp(from, "folder"))
        return sl_cli_fail("convert", "--from must be idx or folder, not '%s'", from);
    if (idx && (!images || !labels))
        return sl_cli_fail("convert", "--from idx needs --images and --labels");
    if (!idx && !in) return sl_cli_fail("convert", "--from folder needs --in DIR");
    if (!idx && raw)
        return sl_cli_fail("convert", "--raw needs decoded pixels: only with --from idx");
    /* what the other source takes would be ignored */
    if (!idx && (images || labels))
        return sl_cli_fail("convert", "%s is for --from idx; --from folder reads --in DIR",
                           images ? "--images" : "--labels");
    if (!idx && quality_given)
        return sl_cli_fail("convert", "--quality is for --from idx: --from folder stores the "
                                      "files as they are, not re-encoded");
    if (idx && in)
        return sl_cli_fail("convert", "--in is for --from folder; --from idx reads --images "
                                      "FILE --labels FILE");
    if (idx && raw && quality_given)
        return sl_cli_fail("convert", "--quality is for JPEG records; --raw stores pixels");

    sl_err e = {0};
    sl__idx *im = NULL, *lb = NULL;
    sl__folder *fo = NULL;
    int64_t *order = NULL; /* folder records in key order */
    long long n;
    int h = 0, w = 0, ch = 1;
    if (idx) {
        if (sl__idx_open(images, &im, &e) || sl__idx_open(labels, &lb, &e)) goto fail;
        const int64_t *d = sl__idx_dims(im);
        if (sl__idx_type(im) != SL_IDX_U8 || (sl__idx_ndim(im) != 3 && sl__idx_ndim(im) != 4)) {
            sl_err_set(&e, SL_EFORMAT, "%s: uint8 images of 3 or 4 dims wanted", images);
            goto fail;
        }
        if (sl__idx_type(lb) != SL_IDX_U8 || sl__idx_ndim(lb) != 1 ||
            sl__idx_count(lb) != sl__idx_count(im)) {
            sl_err_set(&e, SL_EFORMAT, "%s: %lld uint8 labels wanted", labels,
                       (long long)sl__idx_count(im));
            goto fail;
        }
        if (d[1] > INT_MAX || d[2] > INT_MAX || (sl__idx_ndim(im) == 4 && d[3] > INT_MAX)) {
            sl_err_set(&e, SL_EFORMAT, "%s: images of %lldx%lld are too large", images,
                       (long long)d[1], (long long)d[2]);
            goto fail;
        }
        h = (int)d[1], w = (int)d[2], ch = sl__idx_ndim(im) == 4 ? (int)d[3] : 1;
        n = sl__idx_count(im);
    } else {
        if (sl__folder_open(in, NULL, 0, NULL, 0, NULL, &fo, &e) || key_order(fo, &order, &e))
            goto fail;
        n = sl__folder_count(fo);
    }
    conv c = {.caffe2 = !strcmp(to, "caffe2"), .key_digits = digits(n - 1), .out = out};
    if (tf) {
        if (!(c.tf = fopen(out, "wb"))) {
            sl_err_set(&e, SL_EIO, "%s: %s", out, strerror(errno));
            goto fail;
        }
    } else if (sl__lmdb_writer_open(out, &c.w, &e)) {
        goto fail;
    }
    uint8_t *fbuf = NULL;
    size_t fcap = 0;
    sl_status st = SL_OK;
    for (long long i = 0; i < n && !st; i++) {
        if (idx) {
            size_t sz;
            const uint8_t *px = sl__idx_item(im, i, &sz);
            int32_t label = *sl__idx_item(lb, i, &sz);
            char key[32];
            snprintf(key, sizeof key, "%0*lld", c.key_digits, i);
            if (raw) {
                st =
                    put(&c, key, px, (size_t)h * (size_t)w * (size_t)ch, true, h, w, ch, label, &e);
            } else {
                uint8_t *jpg;
                size_t jn;
                st = sl__jpegenc_encode(px, w, h, ch, quality, &jpg, &jn, &e);
                if (!st) st = put(&c, key, jpg, jn, false, h, w, ch, label, &e);
                free(jpg);
            }
        } else {
            size_t fn;
            sl__image_info info;
            int64_t r = order[i];
            st = sl__folder_read(fo, r, &fbuf, &fcap, &fn, &e);
            if (!st && sl__jpegenc_probe(fbuf, fn, &info, NULL) == SL_OK)
                h = info.height, w = info.width, ch = info.channels;
            else
                h = w = 0, ch = 1;
            if (!st)
                st = put(&c, sl__folder_name(fo, r), fbuf, fn, false, h, w, ch,
                         sl__folder_label(fo, r), &e);
            if (st) sl_err_prefix(&e, "%s: ", sl__folder_name(fo, r));
        }
        if ((i & 1023) == 0 || i + 1 == n) sl_cli_progress("convert", i + 1, n);
    }
    free(fbuf);
    sl_status cst = SL_OK;
    if (tf) {
        bool bad = ferror(c.tf) != 0;
        if ((fclose(c.tf) != 0 || bad) && !st)
            cst = sl_err_set(&e, SL_EIO, "%s: write failed", out);
    } else {
        cst = sl__lmdb_writer_close(c.w, st ? NULL : &e);
    }
    sl__protowire_buf_free(&c.rec);
    sl__protowire_buf_free(&c.frame);
    if (st || cst) goto fail;
    if (fo && write_labels(out, tf, fo, &e)) goto fail;
    printf("wrote %lld %s records to %s\n", n, to, out);
    if (fo)
        printf("wrote %d class names to %s%s\n", sl__folder_classes(fo), out,
               tf ? ".labels.txt" : "/labels.txt");
    sl__idx_close(im);
    sl__idx_close(lb);
    sl__folder_close(fo);
    free(order);
    return 0;
fail:
    free(order);
    sl__idx_close(im);
    sl__idx_close(lb);
    sl__folder_close(fo);
    return sl_cli_fail("convert", "%s", e.msg);
}
