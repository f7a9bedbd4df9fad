/* SPDX-License-Identifier: Apache-2.0 */
/* resize, random_resized_crop (resize.c), resize of volumes (resize_volume.c), resize_crop_mirror
 * (resize_crop_mirror.c) and tensor_resize (tensor_resize.c): the op's state and arguments, the
 * filters and their taps, shared by the files. */
#ifndef SLUICE_OPS_RESIZE_INT_H
#define SLUICE_OPS_RESIZE_INT_H

#include "ops/crop_window.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include <stdbool.h>
#include <stdint.h>

/* the filter arguments, shared by resize, random_resized_crop, resize_crop_mirror and
 * tensor_resize */
#define INTERP_CHOICES                                                                             \
    "INTERP_NN|INTERP_LINEAR|INTERP_CUBIC|INTERP_TRIANGULAR|INTERP_GAUSSIAN|INTERP_LANCZOS3"
// clang-format off
#define RESIZE_FILTER_ARGS_AA(aa)                                                                  \
    {"interp_type", SL_ARG_ENUM, "types.INTERP_LINEAR",                                            \
     "filter (both ways; min_filter / mag_filter override it)", SL_ARGF_PER_SAMPLE,                \
     INTERP_CHOICES},                                                                              \
    {"min_filter", SL_ARG_ENUM, "None", "filter of an axis scaled down (default: interp_type)",    \
     SL_ARGF_PER_SAMPLE, INTERP_CHOICES},                                                          \
    {"mag_filter", SL_ARG_ENUM, "None", "filter of an axis scaled up (default: interp_type)",      \
     SL_ARGF_PER_SAMPLE, INTERP_CHOICES},                                                          \
    {"antialias", SL_ARG_BOOL, aa, "widen the filter when downscaling", 0, NULL},                  \
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},                \
    {"minibatch_size", SL_ARG_INT, "32",                                                           \
     "DALI's GPU batching hint: accepted (positive); the CUDA run takes the batch in one launch",  \
     0, NULL},                                                                                     \
    {"temp_buffer_hint", SL_ARG_INT, "0",                                                          \
     "DALI's scratch-size hint: accepted (non-negative); scratch grows as needed", 0, NULL}
// clang-format on

/* resize's size arguments (resize, resize_crop_mirror) */
// clang-format off
#define RESIZE_SIZE_ARGS                                                                           \
    {"resize_x", SL_ARG_FLOAT, "0.0", "output width (0: from the other arguments)",                \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"resize_y", SL_ARG_FLOAT, "0.0", "output height (0: from the other arguments)",               \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"resize_z", SL_ARG_FLOAT, "0.0", "output depth of a volume (0: from the other arguments)",    \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"resize_shorter", SL_ARG_FLOAT, "0.0", "the shorter side's length; aspect ratio kept",        \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"resize_longer", SL_ARG_FLOAT, "0.0", "the longer side's length; aspect ratio kept",          \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"size", SL_ARG_FLOATS, "None",                                                                \
     "(height, width), (depth, height, width) of a volume, or one length for all; a 0 is left "    \
     "to the mode (as a missing extent)",                                                          \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"mode", SL_ARG_ENUM, "\"default\"",                                                           \
     "how sizes given for some or all axes are met, as DALI: default (a missing extent scales "    \
     "by the given ones' scale, their geometric mean), stretch (a missing extent is kept), "       \
     "not_larger (the aspect ratio "                                                               \
     "kept, no extent above the size asked), not_smaller (the aspect ratio kept, no extent below " \
     "it)",                                                                                        \
     0, "default|stretch|not_larger|not_smaller"}
/* resize's window and limits (resize, resize_crop_mirror) */
#define RESIZE_ROI_ARGS                                                                            \
    {"roi_start", SL_ARG_FLOATS, "None",                                                           \
     "the input window's origin [y, x], [z, y, x] of a volume (default: 0)", 0, NULL},             \
    {"roi_end", SL_ARG_FLOATS, "None",                                                             \
     "the input window's end [y, x], [z, y, x] of a volume (default: the input's size); below "    \
     "roi_start: that axis flipped",                                                               \
     0, NULL},                                                                                     \
    {"roi_relative", SL_ARG_BOOL, "False",                                                         \
     "roi_start and roi_end as fractions of the input's size",                                     \
     0, NULL},                                                                                     \
    {"max_size", SL_ARG_FLOATS, "None",                                                            \
     "the largest output [h, w] ([d, h, w]), or one for all: keeps the aspect ratio where the "    \
     "size does "                                                                                  \
     "(resize_shorter/longer, not_larger/not_smaller), else clamps each extent",                   \
     0, NULL},                                                                                     \
    {"subpixel_scale", SL_ARG_BOOL, "True",                                                        \
     "a fractional output size scales exactly: the input window is scaled about its centre by "    \
     "the rounding",                                                                               \
     0, NULL},                                                                                     \
    {"image_type", SL_ARG_ENUM, "None",                                                            \
     "DALI's older argument: the input's colour type; a channel-last image's channel count (GRAY " \
     "1, RGB, BGR and YCbCr 3) is checked",                                                        \
     0, "RGB|BGR|GRAY|YCbCr|ANY_DATA"}
#define RESIZE_FILTER_ARGS RESIZE_FILTER_ARGS_AA("True")
// clang-format on

enum { F_NN, F_LINEAR, F_CUBIC, F_TRI, F_GAUSS, F_LANCZOS };
enum { MODE_DEFAULT, MODE_STRETCH, MODE_NOT_LARGER, MODE_NOT_SMALLER };

typedef struct resize_state {
    double rx, ry, rz, shorter, longer;
    double size[3]; /* `size`: nsize values (1: one for every extent) */
    int nsize;
    bool has_size, antialias;
    int mode;
    /* the size arguments given as op outputs (per-sample argument inputs), else -1 */
    int node_rx, node_ry, node_rz, node_shorter, node_longer, node_size;
    const sl__args *args; /* interp_type, min_filter, mag_filter: read per sample in setup */
    int *filters;         /* per sample: (min_filter, mag_filter) */
    bool keep_aspect;   /* resize_shorter / resize_longer, or a mode that keeps the aspect ratio */
    double max_size[3]; /* nmax values (1: one for every extent); 0: none */
    int nmax;
    bool subpixel;
    bool has_dtype;
    sl_dtype dtype;
    int64_t *out_hw; /* per sample: (out_h, out_w) */
    double *roi;     /* per sample: the input window (y0, x0, h, w) */
    int cap;
    bool has_roi, roi_rel; /* resize: roi_start / roi_end given (nroi values each) */
    double roi_start[3], roi_end[3];
    int nroi;
    bool random; /* random_resized_crop: the window drawn per sample */
    /* the batch's geometry: H at dim hpos, W after it, then C (clast) or nothing; the dims before
     * H are planes (frames, channels) that share the window (random_resized_crop only; resize
     * takes HWC, sequences frame by frame) */
    int hpos;
    bool clast;
    int want_c; /* image_type's channel count (0: not checked) */
    /* resize of volumes (resize_volume.c): DHWC (cfirst false) or CDHW; per sample the output
     * (D, H, W) and the window (z0, y0, x0, d, h, w) */
    bool vol, cfirst;
    int64_t *vol_out;
    double *vol_roi;
    sl__crop_window_cfg win;
    uint64_t seed;
    const char *name;
    sl__worker_scratch scratch; /* per worker: run_cpu's taps and rows */
    sl__gpu_args gpu;           /* the CUDA run's descriptors and taps */
    sl__gpu_scratch gpu_tmp;    /* its intermediate rows */
    struct sl__rcm *rcm;        /* resize_crop_mirror's crop and mirror (resize_crop_mirror.c) */
} resize_state;

/* The ops resize.c makes: resize, random_resized_crop, resize_crop_mirror and its fast_ alias. */
enum { SL__RESIZE_PLAIN, SL__RESIZE_RRC, SL__RESIZE_RCM, SL__RESIZE_RCM_FAST };
sl_status sl__resize_create_as(const sl__args *a, const sl__op_init *init, int kind, void **out,
                               sl_err *err);
sl_status sl__resize_setup(void *state, sl__op_io *io, sl_err *err);
sl_status sl__resize_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err);
sl_status sl__resize_run_gpu(void *state, sl__op_io *io, sl_err *err);
void sl__resize_destroy(void *state);

/* resize_crop_mirror (resize_crop_mirror.c): its crop and mirror arguments into s->rcm; in
 * setup, sample i's crop of its resized image (out_hw: its size, then the crop's); and that crop
 * as sample i's (n_y, n_x, at_y, at_x, flip_y, flip_x): the resized image's size, the crop's
 * origin in it, and the mirroring. */
sl_status sl__rcm_create(const sl__args *a, resize_state *s, sl_err *err);
sl_status sl__rcm_apply(const resize_state *s, const sl__op_io *io, int i, int64_t *out_hw,
                        sl_err *err);
const int64_t *sl__rcm_sample(const struct sl__rcm *c, int i);
void sl__rcm_free(struct sl__rcm *c);

/* Filter taps of one axis, the window [r0, r0 + len) of in inputs resampled to out with sample
 * i's filters: for output o, weights w[o*taps + k] on inputs first[o] + k (to be clamped into
 * [0, in)); returns taps (at most max_taps). */
int sl__resize_taps(const resize_state *s, int i, int64_t in, double r0, double len, int64_t out,
                    int64_t *first, float *w, int max_taps);
/* The same for outputs at .. at + out - 1 of a resampling to n outputs (back: in reverse), as
 * those outputs of the whole resampling's taps, bit for bit. */
int sl__resize_taps_of(const resize_state *s, int i, int64_t in, double r0, double len, int64_t n,
                       int64_t at, int64_t out, bool back, int64_t *first, float *w, int max_taps);
/* The most taps per output of an axis from a window of len inputs to out (scratch sizing). */
int sl__resize_max_taps(double len, int64_t out);
/* The inputs the taps read, [*lo, *lo + count): the only ones an earlier pass needs. */
int64_t sl__resize_rows_read(const int64_t *first, int taps, int64_t out, int64_t in, int64_t *lo);

/* The output extents of a window of extents in[n] for out[n] (0: not given) under mode and the
 * limits mx[n] (0: none), in DALI's float steps (ResizeAttr's AdjustOutputSize); n <= SL_MAX_DIMS.
 */
void sl__resize_adjust(int mode, const float *in, float *out, const float *mx, int n);

/* Volumes: the batch's geometry (DHWC, CDHW, or 4 dims without a layout), false when the input
 * is no volume; the output sizes and windows of setup; sample i on the CPU; the batch on the GPU
 * (three passes, x, y then z, each in float in tap order as the CPU's). */
bool sl__resize_is_volume(const sl_tlist *in);
sl_status sl__resize_volume_setup(resize_state *s, sl__op_io *io, sl_err *err);
sl_status sl__resize_volume_run(resize_state *s, sl__op_io *io, int i, int worker, sl_err *err);
sl_status sl__resize_volume_run_gpu(resize_state *s, sl__op_io *io, sl_err *err);
/* the per-sample arrays for a batch of batch samples (resize.c) */
sl_status sl__resize_grow(resize_state *s, int batch, sl_err *err);
/* sample i's (min_filter, mag_filter) into s->filters (resize.c) */
sl_status sl__resize_sample_filters(resize_state *s, const sl__op_io *io, int i, sl_err *err);

#endif
