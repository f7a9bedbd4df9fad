/* SPDX-License-Identifier: Apache-2.0 */
/* The public data-set calls (sluice/dataset.h), through the public API only:
 * - sl_dataset_writer writes Caffe2 and Caffe LMDBs and a TFRecord file of the fixture JPEGs (and
 *   raw pixels into the LMDBs); sl_dataset_inspect reads each back: format, record count, label
 *   histogram, the first records' keys, sizes and image headers; a pipeline's reader delivers the
 *   same bytes and labels;
 * - the writer refuses what its store cannot hold (raw pixels into a TFRecord, an over-long key,
 *   an unknown format), naming the store;
 * - sl_tfrecord_index gives each record's offset and frame size, and names the offset of a
 *   damaged record;
 * - sl_dataset_convert of an image folder writes its class names; sl_dataset_read_classes reads
 *   them back; a bad option is an error naming it;
 * - a store appears at its path only when its writer is closed, never after a discard; an empty
 *   LMDB is inspected as "lmdb"; a folder's file that is no image is refused, naming it;
 * - sl_dataset_inspect names what it looked for in an unrecognised file. */
#include "check.h"

#include "sluice/dataset.h"
#include "sluice/ops.h"
#include "sluice/pipeline.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *dir;
static const char *const jpegs[] = {"dali_extra/jpeg/padlock-406986_640.jpg",
                                    "dali_extra/jpeg/site-1534685_1280.jpg",
                                    "dali_extra/jpeg/snail-4291306_1280.jpg"};
#define NJ 3

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static const char *path_in(const char *name) {
    static char p[4][1024];
    static int k;
    char *s = p[k++ & 3];
    snprintf(s, 1024, "%s/%s", dir, name);
    return s;
}

/* writes the fixture JPEGs (labels 7, 8, 9) into a store of format f */
static void write_store(const char *path, sl_dataset_format f) {
    sl_err e = {0};
    sl_dataset_writer *w;
    CHECK_OK(sl_dataset_writer_create(path, f, &w, &e), &e);
    if (!w) return;
    for (int i = 0; i < NJ; i++) {
        size_t n;
        uint8_t *b = slurp(fixture(jpegs[i]), &n);
        char key[16];
        snprintf(key, sizeof key, "%08d", i);
        CHECK_OK(sl_dataset_writer_add(w, key, b, n, false, 0, 0, 0, 7 + i, &e), &e);
        free(b);
    }
    CHECK_OK(sl_dataset_writer_close(w, &e), &e);
}

static void check_info(const char *path, const char *format, const char *first_key) {
    sl_err e = {0};
    sl_dataset_info *in = NULL;
    CHECK_OK(sl_dataset_inspect(path, 0, &in, &e), &e);
    if (!in) return;
    CHECK_STR(in->format, format);
    CHECK_EQ_INT(in->records, NJ);
    CHECK_EQ_INT(in->num_labels, 10);
    for (int l = 0; l < 10; l++) CHECK_EQ_INT(in->label_counts[l], l >= 7);
    CHECK_EQ_INT(in->unlabelled, 0);
    CHECK_EQ_INT(in->num_first, NJ);
    CHECK_STR(in->first[0].key, first_key);
    size_t n;
    free(slurp(fixture(jpegs[0]), &n));
    CHECK_EQ_INT(in->first[0].bytes, n);
    CHECK_STR(in->first[0].image, "jpeg");
    CHECK(in->first[0].width > 0 && in->first[0].height > 0 && in->first[0].channels == 3);
    sl_dataset_info_free(in);
    /* verified: every byte read */
    CHECK_OK(sl_dataset_inspect(path, SL_DATASET_VERIFY, &in, &e), &e);
    if (in) CHECK(in->bytes_read > (long long)n);
    sl_dataset_info_free(in);
}

/* a pipeline's reader gives the bytes and labels written */
static void check_read(const char *reader, const char *path) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = NJ;
    c.num_threads = 1;
    char text[2048];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    img, lab = fn.readers.%s(path=\"%s\"%s)\n"
             "    return img, lab\n",
             reader, path,
             strcmp(reader, "tfrecord") ? ""
                                        : ", features={\"image/encoded\": "
                                          "tfrec.FixedLenFeature((), tfrec.string, \"\"), "
                                          "\"image/class/label\": "
                                          "tfrec.FixedLenFeature([1], tfrec.int64, -1)}");
    sl_err e = {0};
    sl_pipeline *p = check_pipeline(&c, text, "dataset.py", 0, NULL, &e);
    CHECK_MSG(p != NULL, "%s: %s", path, e.msg);
    if (!p) return;
    sl_batch *b;
    CHECK_OK(sl_pipeline_next(p, &b), NULL);
    const sl_tlist *img = sl_batch_output(b, 0), *lab = sl_batch_output(b, 1);
    for (int i = 0; i < NJ; i++) {
        size_t n;
        uint8_t *want = slurp(fixture(jpegs[i]), &n);
        CHECK_EQ_INT(sl_tlist_sample_nbytes(img, i), n);
        CHECK(!memcmp(img->data[i], want, n));
        free(want);
        int64_t l = lab->dtype == SL_DTYPE_I64 ? *(const int64_t *)lab->data[i]
                                               : *(const int32_t *)lab->data[i];
        CHECK_EQ_INT(l, 7 + i);
    }
    sl_pipeline_release(p, b);
    sl_pipeline_free(p);
}

static void writers(void) {
    const char *c2 = path_in("c2"), *cf = path_in("caffe"), *tf = path_in("x.tfrecord");
    write_store(c2, SL_DATASET_CAFFE2);
    write_store(cf, SL_DATASET_CAFFE);
    write_store(tf, SL_DATASET_TFRECORD);
    check_info(c2, "caffe2", "00000000");
    check_info(cf, "caffe", "00000000");
    check_info(tf, "tfrecord", "0");
    check_read("caffe2", c2);
    check_read("caffe", cf);
    check_read("tfrecord", tf);

    /* raw pixels: an LMDB takes them, described as raw with their shape */
    sl_err e = {0};
    sl_dataset_writer *w;
    const char *raw = path_in("raw");
    uint8_t px[4 * 5 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)i;
    CHECK_OK(sl_dataset_writer_create(raw, SL_DATASET_CAFFE2, &w, &e), &e);
    CHECK_OK(sl_dataset_writer_add(w, "a", px, sizeof px, true, 4, 5, 3, 1, &e), &e);
    /* a key longer than LMDB's 511 bytes, naming the store */
    char longkey[600];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    CHECK_FAILS(sl_dataset_writer_add(w, longkey, px, sizeof px, true, 4, 5, 3, 1, &e), SL_EINVAL,
                &e, raw);
    CHECK_OK(sl_dataset_writer_close(w, &e), &e);
    sl_dataset_info *in = NULL;
    CHECK_OK(sl_dataset_inspect(raw, 0, &in, &e), &e);
    if (in) {
        CHECK_EQ_INT(in->records, 1);
        CHECK_STR(in->first[0].image, "raw");
        CHECK_EQ_INT(in->first[0].height, 4);
        CHECK_EQ_INT(in->first[0].width, 5);
        CHECK_EQ_INT(in->first[0].channels, 3);
        CHECK_EQ_INT(in->first[0].bytes, sizeof px);
    }
    sl_dataset_info_free(in);

    /* raw pixels into a TFRecord, an unknown format */
    CHECK_OK(sl_dataset_writer_create(path_in("raw.tfrecord"), SL_DATASET_TFRECORD, &w, &e), &e);
    CHECK_FAILS(sl_dataset_writer_add(w, NULL, px, sizeof px, true, 4, 5, 3, 1, &e), SL_EINVAL, &e,
                "raw.tfrecord");
    CHECK_OK(sl_dataset_writer_close(w, &e), &e);
    CHECK_FAILS(sl_dataset_writer_create(path_in("x"), (sl_dataset_format)7, &w, &e), SL_EINVAL, &e,
                "format 7");
    sl_dataset_format f;
    CHECK_OK(sl_dataset_format_parse("tfrecord", &f, &e), &e);
    CHECK_EQ_INT(f, SL_DATASET_TFRECORD);
    CHECK_FAILS(sl_dataset_format_parse("lmdb", &f, &e), SL_EINVAL, &e, "'lmdb'");
}

static void index_files(void) {
    const char *tf = path_in("x.tfrecord");
    sl_err e = {0};
    sl_tfrecord_entry *idx = NULL;
    int64_t n = 0;
    CHECK_OK(sl_tfrecord_index(tf, &idx, &n, &e), &e);
    CHECK_EQ_INT(n, NJ);
    struct stat sb;
    CHECK(stat(tf, &sb) == 0);
    if (idx && n == NJ) {
        CHECK_EQ_INT(idx[0].offset, 0);
        for (int i = 1; i < NJ; i++)
            CHECK_EQ_INT(idx[i].offset, idx[i - 1].offset + idx[i - 1].size);
        CHECK_EQ_INT(idx[NJ - 1].offset + idx[NJ - 1].size, sb.st_size);
    }
    /* a flipped byte in the second record's data: its offset named */
    size_t len;
    uint8_t *b = slurp(tf, &len);
    if (b && idx) {
        b[idx[1].offset + 20] ^= 0x40;
        const char *bad = path_in("bad.tfrecord");
        FILE *f = fopen(bad, "wb");
        fwrite(b, 1, len, f);
        fclose(f);
        sl_tfrecord_entry *bi;
        int64_t bn;
        char off[32];
        snprintf(off, sizeof off, "%llu", (unsigned long long)idx[1].offset);
        CHECK_FAILS(sl_tfrecord_index(bad, &bi, &bn, &e), SL_EFORMAT, &e, off);
        CHECK(bi == NULL && bn == 0);
    }
    free(b);
    free(idx);
}

static void convert_folder(void) {
    /* an image folder of two classes, one JPEG each */
    const char *root = path_in("imgs");
    mkdir(root, 0775);
    static const char *const cls[] = {"cat", "dog"};
    for (int c = 0; c < 2; c++) {
        char d[1100], p[1200];
        snprintf(d, sizeof d, "%s/%s", root, cls[c]);
        mkdir(d, 0775);
        snprintf(p, sizeof p, "%s/a.jpg", d);
        size_t n;
        uint8_t *b = slurp(fixture(jpegs[c]), &n);
        FILE *f = fopen(p, "wb");
        fwrite(b, 1, n, f);
        fclose(f);
        free(b);
    }
    sl_dataset_convert_options o = {.from = SL_DATASET_FROM_FOLDER,
                                    .folder = root,
                                    .to = SL_DATASET_CAFFE,
                                    .out = path_in("conv")};
    sl_dataset_convert_result r;
    sl_err e = {0};
    CHECK_OK(sl_dataset_convert(&o, &r, &e), &e);
    CHECK_EQ_INT(r.records, 2);
    CHECK_EQ_INT(r.classes, 2);
    CHECK(strstr(r.labels_path, "conv/labels.txt") != NULL);
    char **names;
    int nc = sl_dataset_read_classes(o.out, &names);
    CHECK_EQ_INT(nc, 2);
    if (nc == 2) {
        CHECK_STR(names[0], "cat");
        CHECK_STR(names[1], "dog");
    }
    sl_dataset_free_classes(names, nc);
    sl_dataset_info *in = NULL;
    CHECK_OK(sl_dataset_inspect(o.out, 0, &in, &e), &e);
    if (in) {
        CHECK_EQ_INT(in->num_classes, 2);
        CHECK_STR(in->first[1].key, "dog/a.jpg");
        CHECK_EQ_INT(in->label_counts[1], 1);
    }
    sl_dataset_info_free(in);
    /* options refused, naming what is wrong */
    o.quality = 101;
    CHECK_FAILS(sl_dataset_convert(&o, &r, &e), SL_EINVAL, &e, "quality 101");
    o.quality = 0;
    o.raw = true;
    CHECK_FAILS(sl_dataset_convert(&o, &r, &e), SL_EINVAL, &e, "raw");
    o.raw = false;
    o.folder = NULL;
    CHECK_FAILS(sl_dataset_convert(&o, &r, &e), SL_EINVAL, &e, "folder");
}

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A store appears whole or not at all: nothing at its path while it is written, nothing after a
 * discard; an LMDB with no records is inspected as "lmdb"; a folder's file that is no image the
 * decoders read is refused by name, and the conversion leaves no store. */
static void whole_or_nothing(void) {
    sl_err e = {0};
    sl_dataset_writer *w;
    const char *db = path_in("pending");
    CHECK_OK(sl_dataset_writer_create(db, SL_DATASET_CAFFE2, &w, &e), &e);
    if (!w) return;
    CHECK_OK(sl_dataset_writer_add(w, "a", "x", 1, false, 0, 0, 0, 1, &e), &e);
    CHECK(!exists(db));
    sl_dataset_writer_discard(w);
    CHECK(!exists(db));
    CHECK_OK(sl_dataset_writer_create(path_in("pending.tfrecord"), SL_DATASET_TFRECORD, &w, &e),
             &e);
    if (w) {
        CHECK(!exists(path_in("pending.tfrecord")));
        sl_dataset_writer_discard(w);
    }
    CHECK(!exists(path_in("pending.tfrecord")));
    CHECK(!exists(db));

    /* no records: "lmdb", not a guess between Caffe2 and Caffe */
    const char *empty = path_in("empty");
    CHECK_OK(sl_dataset_writer_create(empty, SL_DATASET_CAFFE2, &w, &e), &e);
    CHECK(!exists(empty));
    CHECK_OK(sl_dataset_writer_close(w, &e), &e);
    sl_dataset_info *in = NULL;
    CHECK_OK(sl_dataset_inspect(empty, SL_DATASET_VERIFY, &in, &e), &e);
    if (in) {
        CHECK(in->format != NULL);
        if (in->format) CHECK_STR(in->format, "lmdb");
        CHECK_EQ_INT(in->records, 0);
    }
    sl_dataset_info_free(in);
    /* an LMDB is there: refused, and the store is left as it was */
    CHECK_FAILS(sl_dataset_writer_create(empty, SL_DATASET_CAFFE, &w, &e), SL_EINVAL, &e,
                "already holds an LMDB");

    /* a file with an image's name and no image in it */
    const char *root = path_in("junkimgs");
    char d[1100], p[1200];
    mkdir(root, 0775);
    snprintf(d, sizeof d, "%s/cat", root);
    mkdir(d, 0775);
    snprintf(p, sizeof p, "%s/broken.jpg", d);
    FILE *f = fopen(p, "wb");
    fputs("\xff\xd8\xff\xd9 not a JPEG", f);
    fclose(f);
    sl_dataset_convert_options o = {.from = SL_DATASET_FROM_FOLDER,
                                    .folder = root,
                                    .to = SL_DATASET_CAFFE2,
                                    .out = path_in("junkdb")};
    sl_dataset_convert_result r;
    CHECK_FAILS(sl_dataset_convert(&o, &r, &e), SL_EFORMAT, &e, "cat/broken.jpg");
    CHECK(strstr(e.msg, "not an image") != NULL);
    CHECK(!exists(path_in("junkdb")));
}

static void unrecognised(void) {
    const char *p = path_in("junk.bin");
    FILE *f = fopen(p, "wb");
    fputs("hello, world", f);
    fclose(f);
    sl_err e = {0};
    sl_dataset_info *in = (sl_dataset_info *)&e; /* set to NULL on failure */
    CHECK_FAILS(sl_dataset_inspect(p, 0, &in, &e), SL_EFORMAT, &e, "unrecognised format");
    CHECK(in == NULL);
    CHECK(strstr(e.msg, "junk.bin") && strstr(e.msg, "looked for"));
    CHECK_FAILS(sl_dataset_inspect(p, 8, &in, &e), SL_EINVAL, &e, "flags");
    CHECK_FAILS(sl_dataset_inspect(path_in("missing"), 0, &in, &e), SL_ENOENT, &e, "missing");
    CHECK_EQ_INT(sl_name_distance("resize", "Resise"), 1);
}

int main(void) {
    dir = scratch_dir("dataset");
    writers();
    index_files();
    convert_folder();
    whole_or_nothing();
    unrecognised();
    return check_done();
}
