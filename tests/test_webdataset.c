/* SPDX-License-Identifier: Apache-2.0 */
/* readers.webdataset over tar shards that GNU tar writes here (one in GNU format, one in PAX):
 * - members grouped into samples by key, in order across the shards; each output the bytes of the
 *   member with its extension ("jpg;seg.png": the first found; "seg.png" has a dot in it), views
 *   into the mapped tar; a key longer than a tar header's 100-byte name field (GNU 'L' and PAX
 *   path records); a sample without a "cls" member gives 0 bytes (missing_component_behavior
 *   "empty"), is dropped ("skip"), or is an error naming shard and key ("error");
 * - two shards of the reader (num_shards=2) split the samples;
 * - a header with a bad checksum, a shard cut inside a header and one cut inside a member's data
 *   are errors naming the file and offset. */
#include "check.h"

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
    char text[2048];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    img, cls = fn.readers.webdataset(paths=[\"%s/a.tar\", \"%s/b.tar\"],\n"
             "                                     ext=[\"jpg;seg.png\", \"cls\"]%s)\n"
             "    return img, cls\n",
             dir, dir, extra);
    return check_pipeline(&c, text, "wds.py", 0, NULL, e);
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
