/* SPDX-License-Identifier: Apache-2.0 */
/* resize and random_resized_crop (resize.c) and resize of volumes (resize_volume.c): the op's
 * state, the filters and their taps, shared by the two files. */
#ifndef SLUICE_OPS_RESIZE_INT_H
#define SLUICE_OPS_RESIZE_INT_H

#include "ops/crop_window.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include <stdbool.h>
#include <stdint.h>

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
} resize_state;

/* Filter taps of one axis, the window [r0, r0 + len) of in inputs resampled to out with sample
 * i's filters: for output o, weights w[o*taps + k] on inputs first[o] + k (to be clamped into
 * [0, in)); returns taps (at most max_taps). */
int sl__resize_taps(const resize_state *s, int i, int64_t in, double r0, double len, int64_t out,
                    int64_t *first, float *w, int max_taps);
/* The most taps per output of an axis from a window of len inputs to out (scratch sizing). */
int sl__resize_max_taps(double len, int64_t out);
/* The inputs the taps read, [*lo, *lo + count): the only ones an earlier pass needs. */
int64_t sl__resize_rows_read(const int64_t *first, int taps, int64_t out, int64_t in, int64_t *lo);

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
