/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image on bad records: DALI_extra's fuzzing JPEGs (valid for libjpeg, so they must
 * decode) cut short, random bytes, a zero-byte record, a PNG whose IDAT CRC is broken, a real JPEG
 * cut inside its entropy data, and images over max_image_pixels. Each is SL_EFORMAT naming the
 * record's key (no crash; the ASan build checks for leaks); with skip_bad_records=True the batch
 * goes through and the bad records are counted. Out-of-range preallocation hints are refused. */
#include "check.h"
#include "opharness.h"

#include "io/image_info.h"
#include "ops/decode_image.h"

#include <stdlib.h>
#include <string.h>

static sl_status decode(const void *data, size_t len, const char *key, const char *const *argv,
                        int threads, sl_err *e) {
    oph h;
    sl_status st = oph_create(&h, "decoders.image", argv, threads, 1, 0, e);
    if (st != SL_OK) return st;
    sl_tlist in;
    memset(&in, 0, sizeof in);
    const void *d[1] = {data};
    st = oph_bytes(&in, 1, d, &len, e);
    sl_tlist *ins[1] = {&in};
    if (st == SL_OK) st = oph_run(&h, 1, ins, 1, NULL, 0, &key, 0, e);
    sl_tlist_free(&in);
    oph_destroy(&h);
    return st;
}

int main(void) {
    sl_err e;
    const char *rgb[] = {"output_type=types.RGB", NULL};
    const char *gray[] = {"output_type=types.GRAY", NULL};
    /* DALI_extra's fuzzing JPEGs are mutated files (stray APP segments, duplicated tables) that
       libjpeg-turbo and PIL decode without a warning: they must decode, at the size their header
       gives. Cut short (without EOI, at half, just after SOS) each is SL_EFORMAT naming the key. */
    for (int k = 1; k <= 4; k++) {
        char rel[64], key[32];
        snprintf(rel, sizeof rel, "dali_extra/fuzzing/%d.jpg", k);
        snprintf(key, sizeof key, "fuzz-%d", k);
        size_t len;
        uint8_t *d = oph_read_file(fixture(rel), &len);
        CHECK(d != NULL);
        if (!d) continue;
        CHECK_OK(decode(d, len, key, rgb, 1, &e), &e);
        CHECK_OK(decode(d, len, key, gray, 2, &e), &e);
        size_t sos = 0;
        for (size_t p = 2; p + 1 < len && !sos; p++)
            if (d[p] == 0xFF && d[p + 1] == 0xDA) sos = p;
        CHECK(sos > 0);
        size_t cuts[3] = {len - 2, sos + (len - sos) / 2, sos + 20};
        for (int c = 0; c < 3; c++) {
            CHECK_FAILS(decode(d, cuts[c], key, rgb, 1, &e), SL_EFORMAT, &e, key);
            CHECK_FAILS(decode(d, cuts[c], key, gray, 2, &e), SL_EFORMAT, &e, key);
        }
        printf("%s cut at %zu: %s\n", rel, cuts[1], e.msg);
        free(d);
    }
    /* random bytes, with and without a JPEG / PNG magic in front */
    uint8_t junk[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
    CHECK_FAILS(decode(junk, sizeof junk, "junk", rgb, 1, &e), SL_EFORMAT, &e, "record junk");
    junk[0] = 0xFF, junk[1] = 0xD8, junk[2] = 0xFF;
    CHECK_FAILS(decode(junk, sizeof junk, "junk-soi", rgb, 1, &e), SL_EFORMAT, &e, "junk-soi");
    memcpy(junk, "\x89PNG\r\n\x1a\n", 8);
    CHECK_FAILS(decode(junk, sizeof junk, "junk-png", rgb, 1, &e), SL_EFORMAT, &e, "junk-png");
    /* zero bytes */
    CHECK_FAILS(decode(junk, 0, "empty", rgb, 1, &e), SL_EFORMAT, &e, "record empty: empty");

    /* a real PNG with one bit of its first IDAT flipped (CRC mismatch) */
    size_t plen;
    uint8_t *png = oph_read_file(fixture("dali_extra/png/cat-111793_640.png"), &plen);
    CHECK(png != NULL);
    CHECK_OK(decode(png, plen, "cat", rgb, 1, &e), &e);
    uint8_t *idat = NULL;
    for (size_t p = 8; p + 8 < plen;) {
        uint32_t n = (uint32_t)png[p] << 24 | (uint32_t)png[p + 1] << 16 |
                     (uint32_t)png[p + 2] << 8 | png[p + 3];
        if (!memcmp(png + p + 4, "IDAT", 4)) {
            idat = png + p + 8;
            break;
        }
        p += 12 + (size_t)n;
    }
    CHECK(idat != NULL);
    if (idat) idat[10] ^= 0x10;
    CHECK_FAILS(decode(png, plen, "cat-badcrc", rgb, 1, &e), SL_EFORMAT, &e, "record cat-badcrc");
    printf("bad CRC: %s\n", e.msg);

    /* a real JPEG cut in half; and over the pixel limit (408x640 = 261120 px) */
    size_t jlen;
    uint8_t *jpg = oph_read_file(fixture("dali_extra/jpeg/swan-3584559_640.jpg"), &jlen);
    CHECK(jpg != NULL);
    CHECK_FAILS(decode(jpg, jlen / 2, "swan-half", rgb, 1, &e), SL_EFORMAT, &e, "swan-half");
    CHECK_FAILS(decode(jpg, 300, "swan-300", rgb, 1, &e), SL_EFORMAT, &e, "swan-300");
    const char *limit[] = {"max_image_pixels=200000", NULL};
    CHECK_FAILS(decode(jpg, jlen, "swan-big", limit, 1, &e), SL_EFORMAT, &e, "max_image_pixels");
    CHECK_FAILS(decode(png, plen, "cat-big", limit, 1, &e), SL_EFORMAT, &e, "record cat-big");
    const char *roomy[] = {"max_image_pixels=261120", NULL};
    CHECK_OK(decode(jpg, jlen, "swan-fits", roomy, 1, &e), &e);

    /* preallocation hints: accepted within a JPEG's sides (they act on GPUs with JPEG engines
       only), refused outside them when the op is made */
    const char *hints[] = {"preallocate_width_hint=1280", "preallocate_height_hint=960", NULL};
    CHECK_OK(decode(jpg, jlen, "swan-hints", hints, 1, &e), &e);
    const char *neg[] = {"preallocate_width_hint=-1", NULL};
    CHECK_FAILS(decode(jpg, jlen, "swan-neg", neg, 1, &e), SL_EINVAL, &e,
                "preallocate_width_hint -1");
    const char *huge[] = {"preallocate_height_hint=70000", NULL};
    CHECK_FAILS(decode(jpg, jlen, "swan-huge", huge, 1, &e), SL_EINVAL, &e, "0..65535");

    /* skip_bad_records: a batch of good and bad records goes through; bad ones are counted */
    {
        const char *skip[] = {"skip_bad_records=True", NULL};
        oph h;
        CHECK_OK(oph_create(&h, "decoders.image", skip, 2, 4, 0, &e), &e);
        const void *d[4] = {jpg, junk, jpg, png};
        size_t l[4] = {jlen, 0, jlen / 2, plen};
        const char *keys[4] = {"good", "empty", "half", "badcrc"};
        sl_tlist in;
        memset(&in, 0, sizeof in);
        CHECK_OK(oph_bytes(&in, 4, d, l, &e), &e);
        sl_tlist *ins[1] = {&in};
        CHECK_OK(oph_run(&h, 4, ins, 1, NULL, 0, keys, 0, &e), &e);
        CHECK_EQ_INT(sl__decode_image_skipped(h.state), 3);
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[0], 408);
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 1)[0], 0);   /* no header: empty image */
        CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 2)[0], 408); /* failed mid-decode: zeros */
        sl_tlist_free(&in);
        oph_destroy(&h);
    }
    /* a JPEG cut short: its header still parses, but no EOI follows the scan, which keeps it off
       nvJPEG (which pads a cut stream) and on libjpeg, which reports it */
    {
        sl__decode_image_info inf;
        char why[256];
        unsigned char *tail = malloc(jlen + 100);
        memcpy(tail, jpg, jlen);
        memset(tail + jlen, 0xAB, 100); /* bytes after the EOI are allowed */
        size_t cuts[4] = {jlen, jlen + 100, jlen - 2, jlen / 2};
        bool whole[4] = {true, true, false, false};
        for (int k = 0; k < 4; k++) {
            memset(&inf, 0, sizeof inf);
            CHECK_OK(
                sl__decode_image_peek(tail, cuts[k], SL__IMG_RGB, false, 0, &inf, why, sizeof why),
                NULL);
            CHECK_MSG(inf.complete == whole[k], "%zu of %zu bytes: complete %d", cuts[k], jlen,
                      (int)inf.complete);
        }
        free(tail);
    }
    free(jpg);
    free(png);
    return check_done();
}
