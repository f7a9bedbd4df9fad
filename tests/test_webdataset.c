/* SPDX-License-Identifier: Apache-2.0 */
/* readers.webdataset over tar shards that GNU tar writes here (one in GNU format, one in PAX):
 * - members grouped into samples by key, in order across the shards; each output the bytes of the
 *   member with its extension ("jpg;seg.png": the first found; "seg.png" has a dot in it), views
 *   into the mapped tar; a key longer than a tar header's 100-byte name field (GNU 'L' and PAX
 *   path records); a sample without a "cls" member gives 0 bytes (missing_component_behavior
 *   "empty"), is dropped ("skip"), or is an error naming shard and key ("error");
 * - two shards of the reader (num_shards=2) split the samples;
 * - sl_wds_index writes each shard's index in DALI's wds2idx format (v1.2: "ext offset size name"
 *   per member, one line per sample); with index_paths the reader gives the same batch, and an
 *   index listing fewer samples, or in another order, gives those; a malformed index, or one that
 *   does not match its tar (offset, size, extension, name), is an error naming the index file
 *   and line, and so is a count of index_paths other than that of paths;
 * - a header with a bad checksum, a shard cut inside a header and one cut inside a member's data
 *   are errors naming the file and offset. */
#include "check.h"

#include "sluice/dataset.h"
#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[512];

static void put(const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/files/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", p);
    if (f) fputs(text, f), fclose(f);
}

static void sh(const char *cmd) {
    char c[4096];
    snprintf(c, sizeof c, "cd '%s' && %s", dir, cmd);
    CHECK_MSG(system(c) == 0, "failed: %s", c);
}

#define LONG                                                                                       \
    "a_rather_long_folder_name_for_the_tar_header/another_level_of_folders_to_pass_100/"           \
    "and_a_third_level_so_that_the_path_is_over_100/"

static sl_pipeline *wds(const char *extra, int batch, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = batch;
    c.num_threads = 2;
    char text[4096];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    img, cls = fn.readers.webdataset(paths=[\"%s/a.tar\", \"%s/b.tar\"],\n"
             "                                     ext=[\"jpg;seg.png\", \"cls\"]%s)\n"
             "    return img, cls\n",
             dir, dir, extra);
    return check_pipeline(&c, text, "wds.py", 0, NULL, e);
}

/* writes text to dir/name */
static void put_top(const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", p);
    if (f) fputs(text, f), fclose(f);
}

/* line k (0: the first) of text, without its newline, into buf */
static const char *line_of(const char *text, int k, char *buf, size_t cap) {
    for (; k > 0 && text; k--) text = strchr(text, '\n'), text = text ? text + 1 : NULL;
    size_t n = text ? strcspn(text, "\n") : 0;
    if (n >= cap) n = cap - 1;
    if (text) memcpy(buf, text, n);
    buf[n] = 0;
    return buf;
}

/* the pipeline over a.tar and b.tar with index files ia and ib (in dir); the error's message must
 * hold needle, or, with needle NULL, the batch's keys be keys[0, n) */
static void indexed(const char *ia, const char *ib, int n, const char *const *keys,
                    const char *needle) {
    char extra[1100];
    snprintf(extra, sizeof extra, ", index_paths=[\"%s/%s\", \"%s/%s\"]", dir, ia, dir, ib);
    sl_err e;
    sl_pipeline *p = wds(extra, n, &e);
    if (needle) {
        CHECK_MSG(p == NULL, "index %s / %s: built, expected \"%s\"", ia, ib, needle);
        CHECK_MSG(p || !check_needle_missing(e.msg, needle), "%s (expected \"%s\")", e.msg, needle);
        sl_pipeline_free(p);
        return;
    }
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_batch *b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        for (int i = 0; i < n; i++) CHECK_STR(sl_batch_key(b, i), keys[i]);
        sl_pipeline_release(p, b);
    } else {
        CHECK_MSG(false, "no batch: %s", p ? sl_pipeline_errmsg(p) : e.msg);
    }
    sl_pipeline_free(p);
}

static void index_cases(const char *const *keys) {
    char path[1024], *ta = NULL, *tb = NULL;
    size_t len;
    int64_t n = 0;
    sl_err e;
    snprintf(path, sizeof path, "%s/a.tar", dir);
    CHECK_OK(sl_wds_index(path, &ta, &len, &n, &e), &e);
    CHECK_EQ_INT(n, 3);
    snprintf(path, sizeof path, "%s/b.tar", dir);
    CHECK_OK(sl_wds_index(path, &tb, &len, &n, &e), &e);
    CHECK_EQ_INT(n, 4);
    if (!ta || !tb) {
        free(ta), free(tb);
        return;
    }
    char l[4][1024];
    CHECK_STR(line_of(ta, 0, l[0], sizeof l[0]), "v1.2 3");
    /* s000.jpg's data follows its header: offset 512, 9 bytes; s000.cls's header is the third block
     */
    CHECK_STR(line_of(ta, 1, l[0], sizeof l[0]), "jpg 512 9 s000.jpg cls 1536 1 s000.cls");
    CHECK_STR(line_of(tb, 1, l[0], sizeof l[0]),
              "seg.png 1536 9 s100.seg.png cls 3584 1 s100.cls"); /* (PAX headers before each) */
    put_top("a.idx", ta), put_top("b.idx", tb);
    indexed("a.idx", "b.idx", 7, keys, NULL);

    /* an index is how the samples are: b.tar's last sample, then its first */
    char text[4096];
    snprintf(text, sizeof text, "v1.2 2\n%s\n%s\n", line_of(tb, 4, l[0], sizeof l[0]),
             line_of(tb, 1, l[1], sizeof l[1]));
    put_top("b2.idx", text);
    const char *k2[5] = {keys[0], keys[1], keys[2], keys[6], keys[3]};
    indexed("a.idx", "b2.idx", 5, k2, NULL);
    /* version 1.1: no names */
    put_top("a11.idx", "v1.1 1\njpg 2560 9 cls 3584 1\n");
    const char *k3[5] = {"s001", keys[3], keys[4], keys[5], keys[6]};
    indexed("a11.idx", "b.idx", 5, k3, NULL);

    /* malformed, or not this tar's */
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"", "a.bad: an empty index file"},
        {"v2.0 3\n", "a.bad:1: not a WebDataset index"},
        {"v1.2\n", "a.bad:1: the first line is \"VERSION COUNT\""},
        {"v1.2 0\n", "a.bad:1: the first line is \"VERSION COUNT\""},
        {"v1.2 x\n", "a.bad:1: the first line is \"VERSION COUNT\""},
        {"v1.2 2\njpg 512 9 s000.jpg\n",
         "a.bad:2: the index ends after 1 samples, but line 1 gives 2"},
        {"v1.2 1\njpg 512 9 s000.jpg\njpg 1536 9 s001.jpg\n",
         "a.bad:3: more lines than the 1 samples line 1 gives"},
        {"v1.2 1\n\n", "a.bad:2: a sample with no members"},
        {"v1.2 1\njpg 512 9\n",
         "a.bad:2: a member is \"ext offset size name\" (4 fields; this one has 3)"},
        {"v1.2 1\njpg 5x2 9 s000.jpg\n", "a.bad:2: member \"jpg\": offset and size are decimal"},
        {"v1.2 1\njpg 1024 9 s000.jpg\n", "a.bad:2: no member of"},
        {"v1.2 1\njpg 99999999 9 s000.jpg\n", "has its data at offset 99999999"},
        {"v1.2 1\njpg 512 8 s000.jpg\n", "a.bad:2: the member at offset 512 of"},
        {"v1.2 1\npng 512 9 s000.jpg\n", "is s000.jpg, not of extension \"png\""},
        {"v1.2 1\njpg 512 9 s001.jpg\n", "is s000.jpg, the index says \"s001.jpg\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_top("a.bad", bad[i].text);
        indexed("a.bad", "b.idx", 1, NULL, bad[i].needle);
    }
    put_top("a.bad", "v1.2 1\njpg 512 8 s000.jpg\n");
    indexed("a.bad", "b.idx", 1, NULL, "(s000.jpg) has 9 bytes, the index says 8");
    indexed("a.idx", "missing.idx", 1, NULL, "missing.idx");
    char extra[1100];
    snprintf(extra, sizeof extra, ", index_paths=[\"%s/a.idx\"]", dir);
    sl_pipeline *p = wds(extra, 1, &e);
    CHECK(p == NULL);
    CHECK_MSG(p || !check_needle_missing(e.msg, "1 index_paths for 2 paths"), "%s", e.msg);
    sl_pipeline_free(p);
    free(ta), free(tb);
}

static const char *bytes_of(const sl_tlist *l, int i, char *buf) {
    size_t n = sl_tlist_sample_nbytes(l, i);
    if (n) memcpy(buf, l->data[i], n);
    buf[n] = 0;
    return buf;
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", scratch_dir("webdataset"));
    sh("mkdir -p files/" LONG);
    put("s000.jpg", "jpeg zero"), put("s000.cls", "3");
    put("s001.jpg", "jpeg one!"), put("s001.cls", "7");
    put(LONG "s002.jpg", "long jpeg"), put(LONG "s002.cls", "5");
    put("s100.seg.png", "png bytes"), put("s100.cls", "1");
    put("s101.jpg", "no class"); /* no .cls */
    put("s102.jpg", "last one"), put("s102.cls", "9");
    put(LONG "s103.jpg", "pax long"), put(LONG "s103.cls", "2");
    sh("tar -cf a.tar --format=gnu -C files s000.jpg s000.cls s001.jpg s001.cls " LONG
       "s002.jpg " LONG "s002.cls");
    sh("tar -cf b.tar --format=pax -C files s100.seg.png s100.cls s101.jpg s102.jpg s102.cls " LONG
       "s103.jpg " LONG "s103.cls");

    const char *keys[7] = {"s000", "s001", LONG "s002", "s100", "s101", "s102", LONG "s103"};
    const char *img[7] = {"jpeg zero", "jpeg one!", "long jpeg", "png bytes",
                          "no class",  "last one",  "pax long"};
    const char *cls[7] = {"3", "7", "5", "1", "", "9", "2"};
    sl_err e;
    sl_pipeline *p = wds("", 7, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_batch *b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        char buf[64];
        for (int i = 0; i < 7; i++) {
            CHECK_STR(sl_batch_key(b, i), keys[i]);
            CHECK_STR(bytes_of(sl_batch_output(b, 0), i, buf), img[i]);
            CHECK_STR(bytes_of(sl_batch_output(b, 1), i, buf), cls[i]);
        }
        CHECK_EQ_INT(sl_batch_output(b, 0)->dtype, SL_DTYPE_U8);
        sl_pipeline_release(p, b);
    } else {
        CHECK_MSG(false, "no batch: %s", p ? sl_pipeline_errmsg(p) : e.msg);
    }
    sl_pipeline_free(p);

    p = wds(", missing_component_behavior=\"skip\"", 6, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        CHECK_STR(sl_batch_key(b, 4), "s102");
        CHECK_STR(sl_batch_key(b, 5), keys[6]);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    p = wds(", missing_component_behavior=\"error\"", 7, &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "b.tar at key s101: no member with extension cls"), "%s",
              e.msg);

    /* two shards of the reader: samples [0, 3) and [3, 7) */
    p = wds(", num_shards=2, shard_id=1", 3, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        for (int i = 0; i < 3; i++) CHECK_STR(sl_batch_key(b, i), keys[3 + i]);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);

    index_cases(keys);

    /* damage: a byte of the first header's name (its checksum no longer holds); a cut */
    sh("cp a.tar good.tar && printf 'X' | dd of=a.tar bs=1 seek=2 conv=notrunc status=none");
    p = wds("", 2, &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "a.tar: bad tar header at offset 0 (checksum)"), "%s",
              e.msg);
    sh("head -c 1200 good.tar > a.tar"); /* inside the second header */
    p = wds("", 2, &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "a.tar: truncated tar header at offset 1024"), "%s",
              e.msg);
    sh("head -c 2565 good.tar > a.tar"); /* inside s001.jpg's 9 bytes */
    p = wds("", 2, &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "a.tar: tar member at offset 2048 runs past the end"),
              "%s", e.msg);
    return check_done();
}
