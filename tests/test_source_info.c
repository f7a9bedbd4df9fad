/* SPDX-License-Identifier: Apache-2.0 */
/* Source info (DALI's source_info): where each sample came from, as its reader says, passed on
 * op to op, and read back through sl_batch_source_info and the get_property op.
 * - readers.file over class folders made here: every sample's source info is its file's path,
 *   on the reader's outputs and on those of ops after it (reshape, cast), also past a branch's
 *   split and merge (none there: their samples are not their input's in order), and
 *   get_property(key="source_info") gives the same bytes as uint8; key="layout" the input's
 *   layout; a batch's source info stays with it while later batches are read.
 * - external_source samples have none: "" and empty get_property outputs.
 * - An unknown key, and an output or sample out of range, are refused or "". */
#include "check.h"

#include "sluice/pipeline.h"
#include "sluice/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { B = 2, FILES = 4 };

static char root[64];
static char paths[FILES][160];

static void make_files(void) {
    snprintf(root, sizeof root, "/tmp/sl_srcinfoXXXXXX");
    CHECK(mkdtemp(root) != NULL);
    /* in the order the reader lists them (sorted) */
    static const char *const rel[FILES] = {"a/one.jpg", "a/two.jpg", "b/four.jpg", "b/three.jpg"};
    char dir[128];
    snprintf(dir, sizeof dir, "%s/a", root);
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(dir, sizeof dir, "%s/b", root);
    CHECK(mkdir(dir, 0755) == 0);
    for (int i = 0; i < FILES; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", root, rel[i]);
        FILE *f = fopen(paths[i], "wb");
        CHECK(f != NULL);
        if (f) fprintf(f, "file %d", i), fclose(f);
    }
}

static void remove_files(void) {
    for (int i = 0; i < FILES; i++) unlink(paths[i]);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/a", root);
    rmdir(dir);
    snprintf(dir, sizeof dir, "%s/b", root);
    rmdir(dir);
    rmdir(root);
}

static sl_pipeline *make(const char *text, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = 2;
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    char bind[96];
    snprintf(bind, sizeof bind, "\"%s\"", root);
    sl_pipeline_bind arg = {"root", bind};
    sl_status st = sl_pipeline_parse(p, text, "info.py", 1, &arg, e);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st != SL_OK) {
        e->status = st;
        snprintf(e->msg, sizeof e->msg, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* sample i of output o as a string (a 1-d uint8 list) */
static void bytes_of(const sl_batch *b, int o, int i, char *out, size_t size) {
    const sl_tlist *l = sl_batch_output(b, o);
    out[0] = '\0';
    CHECK_EQ_INT(l->dtype, SL_DTYPE_U8);
    CHECK_EQ_INT(l->ndim, 1);
    size_t n = (size_t)l->shapes[i];
    CHECK(n < size);
    if (n >= size) return;
    if (n) memcpy(out, l->data[i], n); /* (an empty sample may have no memory) */
    out[n] = '\0';
}

static const char *TEXT = "@pipeline_def(enable_conditionals=True)\n"
                          "def pipe(root):\n"
                          "    files, labels = fn.readers.file(file_root=root)\n"
                          "    x = fn.cast(fn.reshape(files, layout='B'), dtype=types.INT32)\n"
                          "    p = fn.random.coin_flip(probability=0.5, seed=3, dtype=types.BOOL)\n"
                          "    if p:\n"
                          "        y = x + 1\n"
                          "    else:\n"
                          "        y = x - 1\n"
                          "    return (files, x, labels, fn.get_property(x, key='source_info'),\n"
                          "            fn.get_property(x, key='layout'), y)\n";

static void test_reader(void) {
    sl_err e;
    sl_pipeline *p = make(TEXT, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    sl_batch *held[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        sl_status st = sl_pipeline_next(p, &held[k]);
        CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    }
    /* batch 0 read while batch 1 was: still its own files */
    for (int k = 0; k < 2 && held[k]; k++) {
        const sl_batch *b = held[k];
        for (int i = 0; i < B; i++) {
            const char *want = paths[k * B + i];
            CHECK_STR(sl_batch_source_info(b, 0, i), want);
            CHECK_STR(sl_batch_source_info(b, 1, i), want);
            CHECK_STR(sl_batch_source_info(b, 2, i), want);
            CHECK_STR(sl_batch_source_info(b, 5, i), ""); /* a conditional's merge */
            char got[256];
            bytes_of(b, 3, i, got, sizeof got);
            CHECK_STR(got, want);
            bytes_of(b, 4, i, got, sizeof got);
            CHECK_STR(got, "B");
        }
        CHECK_STR(sl_batch_source_info(b, 6, 0), "");
        CHECK_STR(sl_batch_source_info(b, 0, B), "");
        CHECK_STR(sl_batch_source_info(b, -1, 0), "");
    }
    for (int k = 0; k < 2; k++)
        if (held[k]) sl_pipeline_release(p, held[k]);
    sl_pipeline_free(p);
}

static sl_status one_shape(void *user, const sl_source_info *f, sl_dtype *dt, int *nd, int64_t *sh,
                           sl_err *err) {
    (void)user, (void)f, (void)err;
    *dt = SL_DTYPE_U8, *nd = 1, sh[0] = 3;
    return SL_OK;
}
static sl_status one_fill(void *user, const sl_source_info *f, void *dst, size_t n, sl_err *err) {
    (void)user, (void)f, (void)err;
    memset(dst, 7, n);
    return SL_OK;
}

static void test_source_and_errors(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    sl_pipeline *p = NULL;
    sl_err e;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    sl_source src = {one_shape, one_fill, NULL, NULL, NULL, NULL, NULL, false};
    CHECK_OK(sl_pipeline_add_source(p, "s", &src), NULL);
    static const char *text = "def pipe():\n"
                              "    x = fn.external_source(source=s, layout='W')\n"
                              "    return (x, fn.get_property(x, key='source_info'),\n"
                              "            fn.get_property(x, key='layout'))\n";
    CHECK_OK(sl_pipeline_parse(p, text, "es.py", 0, NULL, &e), &e);
    sl_status st = sl_pipeline_build(p);
    CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    sl_batch *b = NULL;
    if (st == SL_OK) st = sl_pipeline_next(p, &b);
    CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
    if (b) {
        char got[16];
        for (int i = 0; i < B; i++) {
            CHECK_STR(sl_batch_source_info(b, 0, i), "");
            bytes_of(b, 1, i, got, sizeof got);
            CHECK_STR(got, "");
            bytes_of(b, 2, i, got, sizeof got);
            CHECK_STR(got, "W");
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    /* an unknown key is refused at build, naming the op and the key */
    p = make("def pipe(root):\n"
             "    files, labels = fn.readers.file(file_root=root)\n"
             "    return fn.get_property(files, key='size')\n",
             &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "get_property: Unsupported property key: size"), "%s",
              e.msg);
    sl_pipeline_free(p);
}

int main(void) {
    make_files();
    test_reader();
    test_source_and_errors();
    remove_files();
    return check_done();
}
