/* SPDX-License-Identifier: Apache-2.0 */
/* DALI's random crop window (crop_window.h). */
#include "ops/crop_window.h"

#include "core/rng.h"

#include <math.h>

sl_status sl__crop_window_args(const sl__args *a, const char *op, sl__crop_window_cfg *c,
                               sl_err *err) {
    const double *v;
    if (sl__args_floats(a, "random_area", &v) != 2 || !(v[0] > 0) || v[0] > v[1])
        return sl_err_set(err, SL_EINVAL, "%s: random_area must be [lo, hi], 0 < lo <= hi", op);
    c->area[0] = v[0], c->area[1] = v[1];
    if (sl__args_floats(a, "random_aspect_ratio", &v) != 2 || !(v[0] > 0) || v[0] > v[1])
        return sl_err_set(err, SL_EINVAL, "%s: random_aspect_ratio must be [lo, hi], 0 < lo <= hi",
                          op);
    c->ratio[0] = v[0], c->ratio[1] = v[1];
    c->attempts = (int)sl__args_int(a, "num_attempts");
    return SL_OK;
}

sl__crop_window sl__crop_window_draw(const sl__crop_window_cfg *c, uint64_t seed, int64_t index,
                                     int64_t H, int64_t W) {
    sl__rng_philox r;
    sl__rng_philox_init(&r, seed, (uint64_t)index);
    sl__crop_window roi;
    double lr0 = log(c->ratio[0]), lr1 = log(c->ratio[1]);
    for (int k = 0; k < c->attempts; k++) {
        double area = (c->area[0] + sl__rng_philox_uniform(&r) * (c->area[1] - c->area[0])) *
                      (double)H * (double)W;
        double ratio = exp(lr0 + sl__rng_philox_uniform(&r) * (lr1 - lr0));
        int64_t w = llround(sqrt(area * ratio)), h = llround(sqrt(area / ratio));
        if (w >= 1 && h >= 1 && w <= W && h <= H) {
            roi.w = w, roi.h = h;
            roi.x = (int64_t)sl__rng_philox_below(&r, (uint64_t)(W - w + 1));
            roi.y = (int64_t)sl__rng_philox_below(&r, (uint64_t)(H - h + 1));
            return roi;
        }
    }
    double in_ratio = (double)W / (double)H;
    roi.w = W, roi.h = H;
    if (in_ratio < c->ratio[0])
        roi.h = llround((double)W / c->ratio[0]);
    else if (in_ratio > c->ratio[1])
        roi.w = llround((double)H * c->ratio[1]);
    if (roi.h < 1) roi.h = 1;
    if (roi.w < 1) roi.w = 1;
    roi.y = (H - roi.h) / 2, roi.x = (W - roi.w) / 2;
    return roi;
}
