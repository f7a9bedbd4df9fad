/* SPDX-License-Identifier: Apache-2.0 */
/* readers.numpy over .npy files.
 * - Files NumPy itself wrote (DALI_extra's crop_mirror_normalize vectors: uint8 HWC inputs, float32
 *   outputs) come out byte for byte and shape for shape as the test suite's own .npy loader reads
 *   them, in sorted order, with file_filter, and with dtype checked.
 * - Files written here: Fortran order (int16, 2x3x4) comes out in C order; a format 2.0 header; a
 *   scalar; a folder tree walked recursively with only matching names, keys sorted; file_list and
 *   files; two shards.
 * - Bad files name the file and say what is wrong: big-endian, complex, truncated data, no magic,
 *   a batch mixing data types, dtype mismatch, a folder with nothing to read.
 * - sl__npy_parse on 20,000 mutations of a valid header never reads past its buffer (run under
 *   ASan in make check) and returns a consistent header or an error. */
#include "check.h"
#include "npy.h"

#include "io/npy.h"
#include "sluice/pipeline.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Writes an .npy file: version major, header dict text (padded as NumPy does), then data. */
static void write_npy(const char *path, int major, const char *dict, const void *data,
                      size_t nbytes) {
    size_t pre = major == 1 ? 10 : 12, len = strlen(dict) + 1;
    size_t total = (pre + len + 63) / 64 * 64, hlen = total - pre;
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    unsigned char head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
    head[8] = (unsigned char)hlen, head[9] = (unsigned char)(hlen >> 8);
    head[10] = (unsigned char)(hlen >> 16), head[11] = (unsigned char)(hlen >> 24);
    fwrite(head, 1, pre, f);
    fputs(dict, f);
    for (size_t i = strlen(dict); i + 1 < hlen; i++) fputc(' ', f);
    fputc('\n', f);
    if (nbytes) fwrite(data, 1, nbytes, f);
    fclose(f);
}

/* A pipeline reading with `args` (after readers.numpy's parenthesis), batch b, one thread. */
static sl_pipeline *numpy_pipe(const char *args, int b, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = b;
    c.num_threads = 2;
    char text[2048];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    arrays = fn.readers.numpy(%s)\n"
             "    return arrays\n",
             args);
    return check_pipeline(&c, text, "numpy.py", 0, NULL, e);
}

/* The first batch of a pipeline, or its error: *p stays open for the caller to free. */
static const sl_tlist *first_batch(sl_pipeline *p, sl_batch **b) {
    *b = NULL;
    if (sl_pipeline_next(p, b) != SL_OK) return NULL;
    return sl_batch_output(*b, 0);
}

static void check_like_numpy(const sl_tlist *l, int i, const char *path) {
    sl_tensor want, got;
    sl_err e;
    sl_status st = npy_load(path, &want, &e);
    CHECK_MSG(st == SL_OK, "%s: %s", path, e.msg);
    if (st != SL_OK) return;
    sl_tlist_sample(l, i, &got);
    CHECK_EQ_INT(got.dtype, want.dtype);
    CHECK_EQ_INT(got.ndim, want.ndim);
    for (int d = 0; d < want.ndim && d < got.ndim; d++) CHECK_EQ_INT(got.shape[d], want.shape[d]);
    size_t n = sl_tlist_sample_nbytes(l, i);
    CHECK_EQ_INT(n, sl_tensor_nbytes(&want));
    CHECK_MSG(n == sl_tensor_nbytes(&want) && memcmp(got.data, want.data, n) == 0,
              "%s: the bytes differ", path);
    sl_tensor_free(&want);
}

static void test_numpy_files(void) {
    const char *root = fixture("dali_extra/cmn");
    char args[1024];
    snprintf(args, sizeof args, "file_root=\"%s\", file_filter=\"input*.npy\"", root);
    sl_err e;
    sl_pipeline *p = numpy_pipe(args, 3, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    sl_batch *b;
    const sl_tlist *l = first_batch(p, &b);
    CHECK_MSG(l != NULL, "%s", sl_pipeline_errmsg(p));
    for (int i = 0; l && i < 3; i++) {
        char path[1024], key[32];
        snprintf(key, sizeof key, "input%d.npy", i);
        snprintf(path, sizeof path, "%s/%s", root, key);
        CHECK_STR(sl_batch_key(b, i), key);
        check_like_numpy(l, i, path);
    }
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);

    snprintf(args, sizeof args,
             "file_root=\"%s\", files=[\"output0_cmn.npy\", \"output2_cmnt.npy\"], "
             "dtype=types.FLOAT",
             root);
    p = numpy_pipe(args, 2, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    l = first_batch(p, &b);
    CHECK_MSG(l != NULL, "%s", sl_pipeline_errmsg(p));
    if (l) {
        char path[1024];
        snprintf(path, sizeof path, "%s/output0_cmn.npy", root);
        check_like_numpy(l, 0, path);
        snprintf(path, sizeof path, "%s/output2_cmnt.npy", root);
        check_like_numpy(l, 1, path);
    }
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);
}

/* The first batch's sample 0 as int16 values (n of them) from a pipeline over `args`. */
static int read_i16(const char *args, int16_t *out, int n, int64_t *shape, int *ndim) {
    sl_err e;
    sl_pipeline *p = numpy_pipe(args, 1, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return -1;
    sl_batch *b;
    const sl_tlist *l = first_batch(p, &b);
    CHECK_MSG(l != NULL, "%s", sl_pipeline_errmsg(p));
    int ok = -1;
    if (l && l->dtype == SL_DTYPE_I16 && sl_tlist_sample_nbytes(l, 0) == (size_t)n * 2) {
        sl_tensor t;
        sl_tlist_sample(l, 0, &t);
        memcpy(out, t.data, (size_t)n * 2);
        memcpy(shape, t.shape, sizeof t.shape);
        *ndim = t.ndim;
        ok = 0;
    }
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);
    return ok;
}

static void test_written(void) {
    const char *dir = scratch_dir("numpy");
    char path[1024], args[2048];
    /* Fortran order: element (i, j, k) of a 2x3x4 array at i + 2j + 6k, value 100i + 10j + k */
    int16_t f[24], c[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) f[i + 2 * j + 6 * k] = (int16_t)(100 * i + 10 * j + k);
    snprintf(path, sizeof path, "%s/fortran.npy", dir);
    write_npy(path, 1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4), }", f,
              sizeof f);
    snprintf(args, sizeof args, "files=[\"%s\"]", path);
    int64_t shape[SL_MAX_DIMS];
    int nd = 0;
    if (read_i16(args, c, 24, shape, &nd) == 0) {
        CHECK_EQ_INT(nd, 3);
        CHECK(shape[0] == 2 && shape[1] == 3 && shape[2] == 4);
        int wrong = 0;
        for (int i = 0; i < 24; i++)
            wrong += c[i] != (int16_t)(100 * (i / 12) + 10 * (i / 4 % 3) + i % 4);
        CHECK_MSG(wrong == 0, "Fortran order: %d of 24 elements misplaced", wrong);
    }
    /* version 2.0 header, double quotes, a 1-D array */
    int16_t v[5] = {1, -2, 3, -4, 5}, got[5];
    snprintf(path, sizeof path, "%s/v2.npy", dir);
    write_npy(path, 2, "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (5,)}", v,
              sizeof v);
    snprintf(args, sizeof args, "files=[\"%s\"]", path);
    if (read_i16(args, got, 5, shape, &nd) == 0) {
        CHECK_EQ_INT(nd, 1);
        CHECK(memcmp(got, v, sizeof v) == 0);
    }
    /* a scalar */
    int16_t s = 77;
    snprintf(path, sizeof path, "%s/scalar.npy", dir);
    write_npy(path, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (), }", &s, 2);
    snprintf(args, sizeof args, "files=[\"%s\"]", path);
    if (read_i16(args, got, 1, shape, &nd) == 0) {
        CHECK_EQ_INT(nd, 0);
        CHECK_EQ_INT(got[0], 77);
    }

    /* a tree: only *.npy, sub-folders too, keys sorted; then file_list, and two shards */
    char tree[512];
    snprintf(tree, sizeof tree, "%s/tree", dir);
    const char *names[] = {"z.npy", "a/x.npy", "b/c/y.npy", "a/w.npy"};
    mkdir(tree, 0755);
    snprintf(path, sizeof path, "%s/a", tree), mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/b", tree), mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/b/c", tree), mkdir(path, 0755);
    for (int i = 0; i < 4; i++) {
        int16_t x = (int16_t)i;
        snprintf(path, sizeof path, "%s/%s", tree, names[i]);
        write_npy(path, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }", &x, 2);
    }
    snprintf(path, sizeof path, "%s/a/notes.txt", tree);
    FILE *t = fopen(path, "w");
    if (t) fputs("not an array\n", t), fclose(t);
    snprintf(args, sizeof args, "file_root=\"%s\"", tree);
    sl_err e;
    sl_pipeline *p = numpy_pipe(args, 4, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    const char *sorted[] = {"a/w.npy", "a/x.npy", "b/c/y.npy", "z.npy"};
    const int16_t values[] = {3, 1, 2, 0};
    sl_batch *b = NULL;
    const sl_tlist *l = p ? first_batch(p, &b) : NULL;
    CHECK(l != NULL);
    for (int i = 0; l && i < 4; i++) {
        CHECK_STR(sl_batch_key(b, i), sorted[i]);
        CHECK_EQ_INT(*(int16_t *)l->data[i], values[i]);
    }
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);

    snprintf(path, sizeof path, "%s/list.txt", tree);
    t = fopen(path, "w");
    if (t) fputs("b/c/y.npy\n\nz.npy\n", t), fclose(t);
    snprintf(args, sizeof args, "file_list=\"%s\"", path);
    p = numpy_pipe(args, 2, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    l = p ? first_batch(p, &b) : NULL;
    CHECK(l != NULL);
    if (l) {
        CHECK_STR(sl_batch_key(b, 0), "b/c/y.npy");
        CHECK_STR(sl_batch_key(b, 1), "z.npy");
        CHECK_EQ_INT(*(int16_t *)l->data[1], 0);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);

    snprintf(args, sizeof args, "file_root=\"%s\", num_shards=2, shard_id=1", tree);
    p = numpy_pipe(args, 2, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    l = p ? first_batch(p, &b) : NULL;
    CHECK(l != NULL);
    if (l) {
        CHECK_STR(sl_batch_key(b, 0), "b/c/y.npy");
        CHECK_STR(sl_batch_key(b, 1), "z.npy");
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

/* The status and message of reading one bad file (path) or of the pipeline over args. */
static sl_status bad(const char *args, char *msg, size_t size) {
    sl_err e;
    sl_pipeline *p = numpy_pipe(args, 2, &e);
    if (!p) {
        snprintf(msg, size, "%s", e.msg);
        return e.status;
    }
    sl_batch *b;
    const sl_tlist *l = first_batch(p, &b);
    sl_status st = l ? SL_OK : sl_pipeline_status(p);
    snprintf(msg, size, "%s", l ? "" : sl_pipeline_errmsg(p));
    if (b) sl_pipeline_release(p, b);
    sl_pipeline_free(p);
    return st;
}

#define CHECK_BAD(args, want, needle)                                                              \
    do {                                                                                           \
        char m[SL_ERRMSG_MAX];                                                                     \
        sl_status s = bad(args, m, sizeof m);                                                      \
        CHECK_EQ_INT(s, want);                                                                     \
        CHECK_MSG(!check_needle_missing(m, needle), "\"%s\" lacks \"%s\"", m, needle);             \
    } while (0)

static void test_errors(void) {
    const char *dir = scratch_dir("numpy-bad");
    char p1[1024], p2[1024], args[4096];
    int32_t four[2] = {1, 2};
    snprintf(p1, sizeof p1, "%s/big.npy", dir);
    write_npy(p1, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", four, 8);
    snprintf(p2, sizeof p2, "%s/ok.npy", dir);
    write_npy(p2, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", four, 8);
    snprintf(args, sizeof args, "files=[\"%s\", \"%s\"]", p2, p1);
    CHECK_BAD(args, SL_ENOTSUP, "big.npy: data type '>i4' is big-endian");
    CHECK_BAD(args, SL_ENOTSUP, "readers.numpy: ");

    snprintf(p1, sizeof p1, "%s/complex.npy", dir);
    write_npy(p1, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", four, 8);
    snprintf(args, sizeof args, "files=[\"%s\"]", p1);
    CHECK_BAD(args, SL_ENOTSUP, "data type '<c8' is not one sluice has");

    snprintf(p1, sizeof p1, "%s/short.npy", dir);
    write_npy(p1, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", four, 8);
    snprintf(args, sizeof args, "files=[\"%s\"]", p1);
    CHECK_BAD(args, SL_EFORMAT,
              "short.npy: the header describes 12 bytes of data, the file holds 8");

    snprintf(p1, sizeof p1, "%s/text.npy", dir);
    FILE *t = fopen(p1, "w");
    if (t) fputs("just text, no magic\n", t), fclose(t);
    snprintf(args, sizeof args, "files=[\"%s\"]", p1);
    CHECK_BAD(args, SL_EFORMAT, "text.npy: not a .npy file");

    snprintf(p1, sizeof p1, "%s/empty.npy", dir);
    t = fopen(p1, "w");
    if (t) fclose(t);
    snprintf(args, sizeof args, "files=[\"%s\"]", p1);
    CHECK_BAD(args, SL_EFORMAT, "empty.npy: truncated: 0 bytes");

    snprintf(p1, sizeof p1, "%s/float.npy", dir);
    float fl[2] = {1, 2};
    write_npy(p1, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", fl, 8);
    snprintf(args, sizeof args, "files=[\"%s\", \"%s\"]", p2, p1);
    CHECK_BAD(args, SL_EINVAL, "holds float32 with 1 dimensions, but the batch's first file");
    snprintf(args, sizeof args, "files=[\"%s\"], dtype=types.FLOAT", p2);
    CHECK_BAD(args, SL_EINVAL, "ok.npy: holds int32, but dtype=float32");

    snprintf(args, sizeof args, "file_root=\"%s\", file_filter=\"*.nothing\"", dir);
    CHECK_BAD(args, SL_EINVAL, "no files matching '*.nothing' in it or below");
    CHECK_BAD("file_root=\"/no/such/folder\"", SL_ENOENT, "/no/such/folder");
}

static void test_parse_fuzz(void) {
    unsigned char good[128];
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
    memset(good, ' ', sizeof good);
    memcpy(good, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(good + 10, dict, strlen(dict));
    good[127] = '\n';
    sl__npy_header h;
    size_t need;
    sl_err e;
    CHECK_OK(sl__npy_parse(good, sizeof good, &h, &need, &e), &e);
    CHECK_EQ_INT(h.dtype, SL_DTYPE_F32);
    CHECK(h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 4 && h.nbytes == 48 && !h.fortran);
    CHECK_EQ_INT(h.data_offset, 128);
    /* a shape whose digits run to the buffer's last byte: read no further */
    unsigned char *tail = malloc(sizeof good);
    memcpy(tail, good, sizeof good);
    const char *open = strchr(dict, '(');
    memset(tail + 10 + (open - dict) + 1, '7', sizeof good - 10 - (size_t)(open - dict) - 1);
    CHECK_FAILS(sl__npy_parse(tail, sizeof good, &h, &need, &e), SL_EFORMAT, &e, "header: ");
    free(tail);
    uint64_t x = 88172645463325252ull;
    int ok = 0, inconsistent = 0;
    for (int round = 0; round < 20000; round++) {
        size_t len = 1 + (size_t)(round % 128);
        unsigned char *buf = malloc(len); /* exactly len: ASan catches a read past it */
        memcpy(buf, good, len);
        for (int k = 0; k < 1 + round % 4; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[x % len] = (unsigned char)(x >> 32);
        }
        sl_status st = sl__npy_parse(buf, len, &h, &need, &e);
        if (st == SL_OK) {
            ok++;
            size_t n = sl_dtype_size(h.dtype);
            for (int d = 0; d < h.ndim; d++) n *= (size_t)h.shape[d];
            inconsistent +=
                h.ndim < 0 || h.ndim > SL_MAX_DIMS || n != h.nbytes || h.data_offset > len;
        }
        free(buf);
    }
    CHECK_EQ_INT(inconsistent, 0);
    CHECK(ok > 0);
}

int main(void) {
    test_numpy_files();
    test_written();
    test_errors();
    test_parse_fuzz();
    return check_done();
}
