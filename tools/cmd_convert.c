/* sluice convert: writes LMDBs as DALI's Caffe2 / Caffe readers expect them, from IDX files
 * (MNIST / Fashion-MNIST, plain or gzip; images JPEG-encoded by libjpeg at --quality, grayscale for
 * one channel, or stored raw with --raw) or from image folders (class sub-folders, files stored
 * as they are). Keys are the input order, zero-padded (at least 8 digits). The LMDB writer, the
 * record encoders and the JPEG encoder are the library's (src/io/). */
#include "cli.h"
#include "common.h"

#include "io/caffe.h"
#include "io/caffe2.h"
#include "io/folder.h"
#include "io/idx.h"
#include "io/jpegenc.h"
#include "io/lmdb.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f) {
    fprintf(f, "usage: sluice convert --from idx --images FILE --labels FILE --to caffe2|caffe "
               "--out DIR [--quality Q] [--raw]\n"
               "       sluice convert --from folder --in DIR --to caffe2|caffe --out DIR\n"
               "Writes an LMDB of Caffe2 TensorProtos (image STRING + label INT32) or Caffe Datum\n"
               "records, keys zero-padded in input order. --quality: JPEG quality (default 95);\n"
               "--raw: store pixels (Caffe2 BYTE with dims H,W,C / Datum encoded=false).\n");
    return f == stdout ? 0 : 2;
}

typedef struct conv {
    sl__lmdb_writer *w;
    int caffe2;
    int key_digits;
    sl__pw_buf rec;
} conv;

static int put(conv *c, long long i, const uint8_t *img, size_t n, bool raw, int h, int w, int ch,
               int32_t label, sl_err *e) {
    char key[32];
    snprintf(key, sizeof key, "%0*lld", c->key_digits, i);
    c->rec.len = 0;
    if (c->caffe2)
        sl__caffe2_encode(&c->rec, img, n, raw, h, w, ch, label);
    else
        sl__caffe_encode(&c->rec, img, n, raw, h, w, ch, label);
    if (c->rec.oom) return sl_err_set(e, SL_ENOMEM, "out of memory encoding record %lld", i);
    return sl__lmdb_writer_put(c->w, key, strlen(key), c->rec.data, c->rec.len, e);
}

static int digits(long long n) {
    int d = 1;
    while (n >= 10) n /= 10, d++;
    return d < 8 ? 8 : d;
}

int sl_cli_convert(int argc, char **argv) {
    const char *from = NULL, *images = NULL, *labels = NULL, *to = NULL, *out = NULL, *in = NULL;
    int quality = 95;
    bool raw = false;
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
        } else if (slot && i + 1 < argc) {
            *slot = argv[++i];
        } else {
            fprintf(stderr, "sluice convert: unknown or incomplete option '%s'\n", a);
            return usage(stderr);
        }
    }
    if (!from || !to || !out) return usage(stderr);
    if (strcmp(to, "caffe2") && strcmp(to, "caffe"))
        return sl_cli_fail("convert", "--to must be caffe2 or caffe, not '%s'", to);
    bool idx = !strcmp(from, "idx");
    if (!idx && strcmp(from, "folder"))
        return sl_cli_fail("convert", "--from must be idx or folder, not '%s'", from);
    if (idx && (!images || !labels))
        return sl_cli_fail("convert", "--from idx needs --images and --labels");
    if (!idx && !in) return sl_cli_fail("convert", "--from folder needs --in DIR");
    if (!idx && raw)
        return sl_cli_fail("convert", "--raw needs decoded pixels: only with --from idx");

    sl_err e = {0};
    sl__idx *im = NULL, *lb = NULL;
    sl__folder *fo = NULL;
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
        if (sl__folder_open(in, NULL, 0, NULL, 0, NULL, &fo, &e)) goto fail;
        n = sl__folder_count(fo);
    }
    conv c = {.caffe2 = !strcmp(to, "caffe2"), .key_digits = digits(n - 1)};
    if (sl__lmdb_writer_open(out, &c.w, &e)) goto fail;
    uint8_t *fbuf = NULL;
    size_t fcap = 0;
    sl_status st = SL_OK;
    for (long long i = 0; i < n && !st; i++) {
        if (idx) {
            size_t sz;
            const uint8_t *px = sl__idx_item(im, i, &sz);
            int32_t label = *sl__idx_item(lb, i, &sz);
            if (raw) {
                st = put(&c, i, px, (size_t)h * (size_t)w * (size_t)ch, true, h, w, ch, label, &e);
            } else {
                uint8_t *jpg;
                size_t jn;
                st = sl__jpegenc_encode(px, w, h, ch, quality, &jpg, &jn, &e);
                if (!st) st = put(&c, i, jpg, jn, false, h, w, ch, label, &e);
                free(jpg);
            }
        } else {
            size_t fn;
            sl__image_info info;
            st = sl__folder_read(fo, i, &fbuf, &fcap, &fn, &e);
            if (!st && sl__jpegenc_probe(fbuf, fn, &info, NULL) == SL_OK)
                h = info.height, w = info.width, ch = info.channels;
            else
                h = w = 0, ch = 1;
            if (!st) st = put(&c, i, fbuf, fn, false, h, w, ch, sl__folder_label(fo, i), &e);
            if (st) sl_err_prefix(&e, "%s: ", sl__folder_name(fo, i));
        }
        if ((i & 1023) == 0 || i + 1 == n) sl_cli_progress("convert", i + 1, n);
    }
    free(fbuf);
    sl_status cst = sl__lmdb_writer_close(c.w, st ? NULL : &e);
    sl__protowire_buf_free(&c.rec);
    if (st || cst) goto fail;
    printf("wrote %lld %s records to %s\n", n, to, out);
    sl__idx_close(im);
    sl__idx_close(lb);
    sl__folder_close(fo);
    return 0;
fail:
    sl__idx_close(im);
    sl__idx_close(lb);
    sl__folder_close(fo);
    return sl_cli_fail("convert", "%s", e.msg);
}
