/* SPDX-License-Identifier: Apache-2.0 */
/* rotate and warp_affine on the CPU, against what the maps must do:
 * - rotate by 90 degrees (counter-clockwise, y down) moves every pixel exactly: the output is
 *   W x H and out[y][x] = in[x][W-1-y], with the linear filter as with nearest neighbour; 180
 *   gives in[H-1-y][W-1-x]; -270 equals 90; 0 and 360 give the input;
 * - rotate by 45 makes the bounding box (W + H) / sqrt 2 on each side, rounded up with DALI's
 *   parity rule; its corners lie outside the source and take fill_value; keep_size keeps the
 *   input's size;
 * - a per-sample angle input leaves the samples whose angle is 0 as they were;
 * - warp_affine: the identity matrix gives the input (linear); a whole-pixel shift moves pixels,
 *   repeating the border without fill_value and filling with it; inverse_map=False with a scale of
 *   2 and nearest neighbour repeats each pixel 2 x 2;
 * - errors: a matrix that is not 6 values, and one that cannot be inverted (naming the sample). */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3, C = 2 };

/* N samples of (h + 2i) x (w + i) x C uint8 */
static void make(sl_tlist *l, int h, int w) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++)
        shapes[3 * i] = h + 2 * i, shapes[3 * i + 1] = w + i, shapes[3 * i + 2] = C;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    memcpy(l->layout, "HWC", 4);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i);
        for (size_t k = 0; k < n; k++)
            ((uint8_t *)l->data[i])[k] = (uint8_t)(1 + (k * 53 + k / 5) % 250);
    }
}

static sl_status run(oph *h, const char *op, const char *const *argv, sl_tlist *in, sl_tlist *arg,
                     const sl_tlist **out, sl_err *e) {
    *out = NULL;
    sl_status st = oph_create(h, op, argv, 2, N, 3, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    if (st == SL_OK) *out = &h->out[0];
    return st;
}

static uint8_t px(const sl_tlist *l, int i, int64_t y, int64_t x, int64_t c) {
    return ((const uint8_t *)l->data[i])[(y * sl_tlist_shape(l, i)[1] + x) * C + c];
}

/* how: 0 identity, 1 rotated 90, 2 rotated 180; the elements of o that break it */
static int wrong(const sl_tlist *o, const sl_tlist *in, int how) {
    int bad = 0;
    for (int i = 0; o && i < N; i++) {
        int64_t H = sl_tlist_shape(in, i)[0], W = sl_tlist_shape(in, i)[1];
        int64_t OH = how == 1 ? W : H, OW = how == 1 ? H : W;
        if (sl_tlist_shape(o, i)[0] != OH || sl_tlist_shape(o, i)[1] != OW) return -1;
        for (int64_t y = 0; y < OH; y++)
            for (int64_t x = 0; x < OW; x++)
                for (int64_t c = 0; c < C; c++) {
                    uint8_t want = how == 0   ? px(in, i, y, x, c)
                                   : how == 1 ? px(in, i, x, W - 1 - y, c)
                                              : px(in, i, H - 1 - y, W - 1 - x, c);
                    bad += px(o, i, y, x, c) != want;
                }
    }
    return o ? bad : -1;
}

int main(void) {
    sl_tlist img;
    make(&img, 9, 14);
    oph h;
    sl_err e;
    const sl_tlist *o;
    struct {
        const char *args[3];
        int how;
    } turns[] = {
        {{"angle=90.0", NULL}, 1},   {{"angle=90.0", "interp_type=types.INTERP_NN", NULL}, 1},
        {{"angle=-270.0", NULL}, 1}, {{"angle=180.0", NULL}, 2},
        {{"angle=0.0", NULL}, 0},    {{"angle=360.0", NULL}, 0},
    };
    for (size_t k = 0; k < sizeof turns / sizeof turns[0]; k++) {
        CHECK_OK(run(&h, "rotate", turns[k].args, &img, NULL, &o, &e), &e);
        int bad = wrong(o, &img, turns[k].how);
        CHECK_MSG(bad == 0, "rotate %s %s: %d elements wrong", turns[k].args[0],
                  turns[k].args[1] ? turns[k].args[1] : "", bad);
        oph_destroy(&h);
    }

    const char *r45[] = {"angle=45.0", "fill_value=7.0", NULL};
    CHECK_OK(run(&h, "rotate", r45, &img, NULL, &o, &e), &e);
    for (int i = 0; o && i < N; i++) {
        double H = (double)sl_tlist_shape(&img, i)[0], W = (double)sl_tlist_shape(&img, i)[1];
        /* DALI's box: each side rounded up after trimming 0.01, then made as odd or even as
         * the side it mostly comes from; at 45 degrees (a float angle just past pi / 4) the
         * height follows the width and the width the height */
        int64_t side = (int64_t)ceil((H + W) / sqrt(2.0) - 1e-2);
        int64_t oh = side + ((side % 2) ^ ((int64_t)W % 2)),
                ow = side + ((side % 2) ^ ((int64_t)H % 2));
        CHECK_EQ_INT(sl_tlist_shape(o, i)[0], oh);
        CHECK_EQ_INT(sl_tlist_shape(o, i)[1], ow);
        CHECK_EQ_INT(px(o, i, 0, 0, 0), 7);
        CHECK_EQ_INT(px(o, i, oh - 1, ow - 1, 1), 7);
    }
    oph_destroy(&h);
    const char *keep[] = {"angle=30.0", "keep_size=True", NULL};
    CHECK_OK(run(&h, "rotate", keep, &img, NULL, &o, &e), &e);
    for (int i = 0; o && i < N; i++)
        CHECK(!memcmp(sl_tlist_shape(o, i), sl_tlist_shape(&img, i), 3 * sizeof(int64_t)));
    oph_destroy(&h);

    /* per-sample angles: 0, 90, 0 */
    sl_tlist ang;
    int64_t one[N] = {1, 1, 1};
    memset(&ang, 0, sizeof ang);
    CHECK_OK(sl_tlist_reset(&ang, N, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&ang, one, &e), &e);
    for (int i = 0; i < N; i++) ((float *)ang.data[i])[0] = i == 1 ? 90.0f : 0.0f;
    const char *per[] = {"angle=@0", NULL};
    CHECK_OK(run(&h, "rotate", per, &img, &ang, &o, &e), &e);
    for (int i = 0; o && i < N; i++) {
        bool same = sl_tlist_sample_nbytes(o, i) == sl_tlist_sample_nbytes(&img, i) &&
                    !memcmp(o->data[i], img.data[i], sl_tlist_sample_nbytes(o, i)) &&
                    sl_tlist_shape(o, i)[0] == sl_tlist_shape(&img, i)[0];
        CHECK_MSG(same == (i != 1), "sample %d with angle %d", i, i == 1 ? 90 : 0);
    }
    oph_destroy(&h);
    sl_tlist_free(&ang);

    const char *ident[] = {"matrix=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]", NULL};
    CHECK_OK(run(&h, "warp_affine", ident, &img, NULL, &o, &e), &e);
    CHECK_EQ_INT(wrong(o, &img, 0), 0);
    oph_destroy(&h);
    /* source = destination - (3, 2): border repeated, or filled */
    for (int fill = 0; fill < 2; fill++) {
        const char *shift[] = {"matrix=[1.0, 0.0, -3.0, 0.0, 1.0, -2.0]",
                               fill ? "fill_value=0.0" : NULL, NULL};
        CHECK_OK(run(&h, "warp_affine", shift, &img, NULL, &o, &e), &e);
        int bad = 0;
        for (int i = 0; o && i < N; i++) {
            int64_t H = sl_tlist_shape(&img, i)[0], W = sl_tlist_shape(&img, i)[1];
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++) {
                    bool inside = y >= 2 && x >= 3;
                    int64_t sy = y < 2 ? 0 : y - 2, sx = x < 3 ? 0 : x - 3;
                    int want = inside || !fill ? px(&img, i, sy, sx, 1) : 0;
                    bad += px(o, i, y, x, 1) != want;
                }
        }
        CHECK_MSG(o && bad == 0, "shift by (3, 2), fill %d: %d wrong", fill, bad);
        oph_destroy(&h);
    }
    const char *up[] = {"matrix=[2.0, 0.0, 0.0, 0.0, 2.0, 0.0]", "inverse_map=False",
                        "size=[18.0, 28.0]", "interp_type=types.INTERP_NN", NULL};
    CHECK_OK(run(&h, "warp_affine", up, &img, NULL, &o, &e), &e);
    int bad = 0;
    for (int i = 0; o && i < N; i++)
        for (int64_t y = 0; y < 18; y++)
            for (int64_t x = 0; x < 28; x++) {
                int64_t sy = y / 2, sx = x / 2;
                int64_t H = sl_tlist_shape(&img, i)[0], W = sl_tlist_shape(&img, i)[1];
                if (sy >= H || sx >= W) continue;
                bad += px(o, i, y, x, 0) != px(&img, i, sy, sx, 0);
            }
    CHECK_MSG(o && bad == 0, "scale 2 by the source-to-destination map: %d wrong", bad);
    oph_destroy(&h);

    const char *five[] = {"matrix=[1.0, 0.0, 0.0, 1.0, 0.0]", NULL};
    CHECK_FAILS(run(&h, "warp_affine", five, &img, NULL, &o, &e), SL_EINVAL, &e, "6 values");
    const char *flat[] = {"matrix=[1.0, 2.0, 0.0, 2.0, 4.0, 0.0]", "inverse_map=False", NULL};
    CHECK_FAILS(run(&h, "warp_affine", flat, &img, NULL, &o, &e), SL_EINVAL, &e, "not invertible");
    CHECK_MSG(strstr(e.msg, "sample 0") != NULL, "%s", e.msg);
    oph_destroy(&h);
    sl_tlist_free(&img);
    return check_done();
}
