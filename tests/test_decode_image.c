/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image against DALI_extra's reference decodes of swan-3584559_640.jpg (408x640, 4:2:0):
 * RGB must match PIL's decode exactly: both use libjpeg-turbo with the default (ISLOW) IDCT and
 * fancy upsampling, which are bit-exact across libjpeg-turbo versions; GRAY (the luma plane) and
 * YCbCr (BT.601) within DALI's own 0.01*255. Also: BGR is RGB reversed, PNG decodes, ANY_DATA
 * keeps channels, two threads give the bytes one thread gives. */
#include "check.h"
#include "npy.h"
#include "opharness.h"

#include <stdlib.h>
#include <string.h>

static const char *const JPEGS[] = {
    "dali_extra/jpeg/swan-3584559_640.jpg",  "dali_extra/jpeg/padlock-406986_640.jpg",
    "dali_extra/jpeg/site-1534685_1280.jpg", "dali_extra/jpeg/snail-4291306_1280.jpg",
    "dali_extra/png/cat-111793_640.png",     "dali_extra/png/cat-3113513_640.png"};
#define NFILES 6

static void *files[NFILES];
static size_t sizes[NFILES];

/* decodes file k with the given output_type; returns the max abs difference to ref (or -1) */
static int decode_one(int k, const char *otype, int threads, oph *h, sl_err *e) {
    char arg[64];
    snprintf(arg, sizeof arg, "output_type=types.%s", otype);
    const char *argv[] = {arg, NULL};
    CHECK_OK(oph_create(h, "decoders.image", argv, threads, 1, 0, e), e);
    sl_tlist in;
    memset(&in, 0, sizeof in);
    const void *d[1] = {files[k]};
    CHECK_OK(oph_bytes(&in, 1, d, &sizes[k], e), e);
    sl_tlist *ins[1] = {&in};
    const char *keys[1] = {JPEGS[k]};
    sl_status st = oph_run(h, 1, ins, 1, NULL, 0, keys, 0, e);
    CHECK_OK(st, e);
    sl_tlist_free(&in);
    return st;
}

static int max_diff(const sl_tlist *l, const sl_tensor *ref) {
    const int64_t *sh = sl_tlist_shape(l, 0);
    for (int d = 0; d < 3; d++) CHECK_EQ_INT(sh[d], ref->shape[d]);
    if (sh[0] != ref->shape[0] || sh[1] != ref->shape[1] || sh[2] != ref->shape[2]) return 999;
    int64_t n = sh[0] * sh[1] * sh[2];
    const uint8_t *a = l->data[0], *b = ref->data;
    int m = 0;
    for (int64_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > m) m = d;
    }
    return m;
}

int main(void) {
    sl_err e;
    for (int k = 0; k < NFILES; k++) {
        files[k] = oph_read_file(fixture(JPEGS[k]), &sizes[k]);
        CHECK(files[k] != NULL);
    }
    static const struct {
        const char *type, *ref;
        int tol;
    } golden[] = {{"RGB", "dali_extra/reference/swan-3584559_640.npy", 0},
                  {"GRAY", "dali_extra/reference/swan-3584559_640_gray.npy", 2},
                  {"YCbCr", "dali_extra/reference/swan-3584559_640_ycbcr.npy", 2}};
    for (int g = 0; g < 3; g++) {
        sl_tensor ref;
        CHECK_OK(npy_load(fixture(golden[g].ref), &ref, &e), &e);
        oph h;
        decode_one(0, golden[g].type, 1, &h, &e);
        int m = max_diff(&h.out[0], &ref);
        printf("swan %s: max |diff| = %d (tolerance %d)\n", golden[g].type, m, golden[g].tol);
        CHECK_MSG(m <= golden[g].tol, "%s max diff %d", golden[g].type, m);
        CHECK_STR(h.out[0].layout, "HWC");
        oph_destroy(&h);
        sl_tensor_free(&ref);
    }

    /* BGR is RGB reversed; ANY_DATA of an RGB JPEG is RGB */
    oph rgb, bgr, any;
    decode_one(0, "RGB", 1, &rgb, &e);
    decode_one(0, "BGR", 1, &bgr, &e);
    decode_one(0, "ANY_DATA", 1, &any, &e);
    const uint8_t *r = rgb.out[0].data[0], *b = bgr.out[0].data[0];
    int bad = 0;
    for (int64_t i = 0; i < 408 * 640; i++)
        bad += r[3 * i] != b[3 * i + 2] || r[3 * i + 1] != b[3 * i + 1] || r[3 * i + 2] != b[3 * i];
    CHECK_EQ_INT(bad, 0);
    CHECK(memcmp(rgb.out[0].data[0], any.out[0].data[0], 408 * 640 * 3) == 0);
    oph_destroy(&rgb);
    oph_destroy(&bgr);
    oph_destroy(&any);

    /* PNGs: 640 wide RGB; GRAY has one channel */
    for (int k = 4; k < 6; k++) {
        oph h;
        decode_one(k, "RGB", 1, &h, &e);
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[1], 640);
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[2], 3);
        oph_destroy(&h);
        decode_one(k, "GRAY", 1, &h, &e);
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[2], 1);
        oph_destroy(&h);
    }

    /* a batch of all six on two threads equals one thread, sample by sample; device "mixed" ok */
    const void *d[NFILES];
    for (int k = 0; k < NFILES; k++) d[k] = files[k];
    sl_tlist in;
    memset(&in, 0, sizeof in);
    CHECK_OK(oph_bytes(&in, NFILES, d, sizes, &e), &e);
    sl_tlist *ins[1] = {&in};
    oph h1, h2;
    const char *argv[] = {"output_type=types.RGB", NULL};
    CHECK_OK(oph_create(&h1, "decoders.image", argv, 1, NFILES, 0, &e), &e);
    CHECK_OK(oph_create(&h2, "decoders.image", argv, 2, NFILES, 0, &e), &e);
    for (int rep = 0; rep < 2; rep++) { /* the second batch reuses the decompressors */
        CHECK_OK(oph_run(&h1, NFILES, ins, 1, NULL, 0, JPEGS, 0, &e), &e);
        CHECK_OK(oph_run(&h2, NFILES, ins, 1, NULL, 0, JPEGS, 0, &e), &e);
        for (int k = 0; k < NFILES; k++) {
            CHECK_EQ_INT(sl_tlist_sample_nbytes(&h1.out[0], k),
                         sl_tlist_sample_nbytes(&h2.out[0], k));
            CHECK(memcmp(h1.out[0].data[k], h2.out[0].data[k],
                         sl_tlist_sample_nbytes(&h1.out[0], k)) == 0);
        }
    }
    oph_destroy(&h1);
    oph_destroy(&h2);
    sl_tlist_free(&in);
    for (int k = 0; k < NFILES; k++) free(files[k]);
    return check_done();
}
