/* SPDX-License-Identifier: Apache-2.0 */
/* DALI's random crop window (its RandomCropGenerator), shared by decoders.image_random_crop and
 * random_resized_crop: an area fraction drawn uniformly from random_area and an aspect ratio
 * (width / height) log-uniformly from random_aspect_ratio, up to num_attempts times until the
 * window fits; then a centred window of the whole image with its ratio clamped into range. Draws
 * come from Philox(seed, the sample's global index), so a window depends on nothing else. */
#ifndef SLUICE_OPS_CROP_WINDOW_H
#define SLUICE_OPS_CROP_WINDOW_H

#include "operator/op.h"

#include <stdint.h>

/* The arguments' schema entries, in the ops' tables. */
#define SL__CROP_WINDOW_ARGS                                                                       \
    {"random_area", SL_ARG_FLOATS, "[0.08, 1.0]", "range of the window's area fraction", 0, NULL}, \
        {"random_aspect_ratio",                                                                    \
         SL_ARG_FLOATS,                                                                            \
         "[0.75, 1.333333]",                                                                       \
         "range of width/height",                                                                  \
         0,                                                                                        \
         NULL},                                                                                    \
    {                                                                                              \
        "num_attempts", SL_ARG_INT, "10", "draws before falling back to a centre crop", 0, NULL    \
    }

typedef struct sl__crop_window_cfg {
    double area[2], ratio[2];
    int attempts;
} sl__crop_window_cfg;

typedef struct sl__crop_window {
    int64_t y, x, h, w;
} sl__crop_window;

/* Reads and checks the arguments (op names the op in errors). */
sl_status sl__crop_window_args(const sl__args *a, const char *op, sl__crop_window_cfg *c,
                               sl_err *err);
/* The window of sample index in an H x W image. */
sl__crop_window sl__crop_window_draw(const sl__crop_window_cfg *c, uint64_t seed, int64_t index,
                                     int64_t H, int64_t W);

#endif
