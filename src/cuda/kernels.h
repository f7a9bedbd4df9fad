/* SPDX-License-Identifier: Apache-2.0 */
/* C entry points of the CUDA code in src/cuda/ (compiled by nvcc as C++, called from C). Only CUDA
 * builds include this header; it pulls in no CUDA header itself, so C files stay CUDA-free. */
#ifndef SLUICE_CUDA_KERNELS_H
#define SLUICE_CUDA_KERNELS_H

#include "ops/blur.h"
#include "ops/color_twist.h"
#include "ops/crop_mirror_normalize.h"
#include "ops/jpeg_ycc.h"
#include "ops/pad.h"
#include "ops/warp.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy between host and device memory in any direction; stream NULL = synchronous. */
sl_status sl__cuda_memcpy(void *dst, bool dst_dev, const void *src, bool src_dev, size_t n,
                          void *stream, sl_err *err);
/* Sets n elements of elem bytes (1, 2, 4 or 8) to the bytes in value. */
sl_status sl__cuda_fill(void *data, size_t n, const unsigned char *value, size_t elem, void *stream,
                        sl_err *err);

/* Copies height rows of width bytes between pitched blocks (host or device, any direction). */
sl_status sl__cuda_memcpy2d(void *dst, bool dst_dev, size_t dpitch, const void *src, bool src_dev,
                            size_t spitch, size_t width, size_t height, void *stream, sl_err *err);

/* ---- image ops' CUDA runs: one launch per batch, per-sample descriptors already on the device ---
 */

/* crop_mirror_normalize: sample i reads d[i].in and writes d[i].out as d[i].p says;
 * max_pixels = the largest out_h * out_w of the batch. dtypes: SL_DTYPE_* of input and output. */
typedef struct sl__cuda_cmn_desc {
    sl__cmn_sample p;
    const void *in;
    void *out;
} sl__cuda_cmn_desc;
sl_status sl__cuda_cmn(const sl__cuda_cmn_desc *d, int n, int64_t max_pixels, int in_dtype,
                       int out_dtype, void *stream, sl_err *err);

/* one_hot: out[(o * classes + k) * inner + j] = in[o * inner + j] == k ? on : off */
typedef struct sl__cuda_one_hot_desc {
    const void *in;
    void *out;
    int64_t outer, inner;
} sl__cuda_one_hot_desc;
sl_status sl__cuda_one_hot(const sl__cuda_one_hot_desc *d, int n, int64_t max_out, int64_t classes,
                           int in_dtype, int out_dtype, double on, double off, void *stream,
                           sl_err *err);

/* cast: n elements per sample, converted as ops/dtype_conv.h does (a byte copy when equal) */
typedef struct sl__cuda_cast_desc {
    const void *in;
    void *out;
    int64_t n;
} sl__cuda_cast_desc;
sl_status sl__cuda_cast(const sl__cuda_cast_desc *d, int n, int64_t max_elems, int in_dtype,
                        int out_dtype, void *stream, sl_err *err);

/* brightness_contrast: n elements per sample, out = (float)in * mul + add (brightness_contrast.c)
 */
typedef struct sl__cuda_bc_desc {
    const void *in;
    void *out;
    int64_t n;
    double mul, add;
} sl__cuda_bc_desc;
sl_status sl__cuda_brightness_contrast(const sl__cuda_bc_desc *d, int n, int64_t max_elems,
                                       int in_dtype, int out_dtype, void *stream, sl_err *err);

/* arithmetic: n result elements per sample; operand j's element k is p[j][k * step[j]] (step 0:
 * a one-element sample, broadcast), each computed by ops/arith.h's rule, as on the CPU */
typedef struct sl__cuda_arith_desc {
    const void *p[2];
    void *out;
    int64_t n, step[2];
} sl__cuda_arith_desc;
struct sl__arith;
sl_status sl__cuda_arithmetic(const sl__cuda_arith_desc *d, int n, int64_t max_elems,
                              const struct sl__arith *a, void *stream, sl_err *err);

/* cat and stack: rows rows of row_bytes bytes from a contiguous src to dst, rows dst_pitch bytes
 * apart (cat_stack.c). dev: the n descriptors on the device; host: the same on the host (the copy
 * unit, the widest that every address, row and pitch allows, is chosen from them). */
typedef struct sl__cuda_blocks_desc {
    const void *src;
    void *dst;
    int64_t rows, row_bytes, dst_pitch;
} sl__cuda_blocks_desc;
sl_status sl__cuda_copy_blocks(const sl__cuda_blocks_desc *dev, const sl__cuda_blocks_desc *host,
                               int n, void *stream, sl_err *err);

/* normalize (normalize.c): per sample, the element strides of its kept and reduced axes and the
 * statistics' (param) strides of every axis (0 for a reduced one); mean and inv point at np device
 * doubles each (per sample, or the batch's shared ones), computed there unless given (then
 * mean_given / inv_given, already scale / stddev). */
typedef struct sl__cuda_norm_desc {
    const void *in;
    void *out;
    int in_dtype, out_dtype;
    int nd, nk, nrd;
    int64_t n, np, nr; /* elements, statistics, reduced elements per statistic */
    int64_t ext[SL_MAX_DIMS], pstride[SL_MAX_DIMS];
    int64_t kext[SL_MAX_DIMS], kstride[SL_MAX_DIMS], rext[SL_MAX_DIMS], rstride[SL_MAX_DIMS];
    double *mean, *inv;
    double mean_given, inv_given;
} sl__cuda_norm_desc;
typedef struct sl__cuda_norm_args {
    int batch, has_mean, has_std, ddof;
    double eps, scale, shift;
} sl__cuda_norm_args;
sl_status sl__cuda_normalize(const sl__cuda_norm_desc *d, int n, int64_t max_np, int64_t max_elems,
                             const sl__cuda_norm_args *a, void *stream, sl_err *err);

/* color_twist and hsv: pixels pixels of three channels per sample, each through its transform
 * (color_twist.c, ops/color_twist.h) */
typedef struct sl__cuda_twist_desc {
    const void *in;
    void *out;
    int64_t pixels;
    sl__twist t;
} sl__cuda_twist_desc;
sl_status sl__cuda_color_twist(const sl__cuda_twist_desc *d, int n, int64_t max_pixels,
                               int in_dtype, int out_dtype, void *stream, sl_err *err);

/* warp_affine and rotate: each destination element of a sample through its map (warp_affine.c,
 * ops/warp.h) */
typedef struct sl__cuda_warp_desc {
    const void *in;
    void *out;
    sl__warp t;
} sl__cuda_warp_desc;
sl_status sl__cuda_warp(const sl__cuda_warp_desc *d, int n, int64_t max_elems, int in_dtype,
                        int out_dtype, void *stream, sl_err *err);

/* gaussian_blur (gaussian_blur.c, ops/blur.h): per sample its extents and radii, its weights'
 * byte offsets in the params block, and its float offset in the scratch block */
typedef struct sl__cuda_blur_desc {
    const void *in;
    void *out;
    sl__blur b;
    int64_t wx, wy, tmp;
} sl__cuda_blur_desc;
sl_status sl__cuda_blur(const sl__cuda_blur_desc *d, const void *params, int n, int64_t max_elems,
                        float *scratch, int in_dtype, int out_dtype, void *stream, sl_err *err);

/* pad (pad.c, ops/pad.h): n output elements per sample */
typedef struct sl__cuda_pad_desc {
    const void *in;
    void *out;
    int64_t n;
    sl__pad p;
} sl__cuda_pad_desc;
sl_status sl__cuda_pad(const sl__cuda_pad_desc *d, int n, int64_t max_elems, void *stream,
                       sl_err *err);

/* transpose: n elements per sample; output dimension d has extent shape[d] and walks the input
 * with stride[d] elements (transpose.c); ndim 0: a plain copy */
typedef struct sl__cuda_transpose_desc {
    const void *in;
    void *out;
    int64_t n;
    int ndim;
    int64_t shape[8], stride[8];
} sl__cuda_transpose_desc;
sl_status sl__cuda_transpose(const sl__cuda_transpose_desc *d, int n, int64_t max_elems,
                             int elem_size, void *stream, sl_err *err);

/* flip: planes of (h, w) pixels of px bytes; flags bit 0 horizontal, bit 1 vertical */
typedef struct sl__cuda_flip_desc {
    const void *in;
    void *out;
    int64_t planes, h, w, px;
    int flags;
} sl__cuda_flip_desc;
sl_status sl__cuda_flip(const sl__cuda_flip_desc *d, int n, int64_t max_pixels, void *stream,
                        sl_err *err);

/* resize, two separable passes as resize.c's run_cpu: horizontal (h, w, c) -> tmp (h, ow, c) with
 * taps fx/wx, vertical tmp -> out (oh, ow, c) with fy/wy; float accumulation in tap order. Offsets
 * index the params block (int64 firsts and float weights); tmp is in floats into scratch. */
typedef struct sl__cuda_resize_desc {
    const void *in;
    void *out;
    int64_t h, w, c, oh, ow;
    int tx, ty;
    int64_t fx, fy, wx, wy; /* byte offsets into the params block */
    int64_t tmp;            /* float offset into the scratch block (h rows of ow x c) */
    int64_t y0, rows;       /* the input rows the vertical taps read: the horizontal pass's */
} sl__cuda_resize_desc;
sl_status sl__cuda_resize(const sl__cuda_resize_desc *d, const void *params, int n, int64_t max_tmp,
                          int64_t max_out, float *scratch, int in_dtype, int out_dtype,
                          void *stream, sl_err *err);

/* nvJPEG's YUV planes -> HWC RGB (or BGR): the window (y0, x0, out_h, out_w) of the image that
 * layout l describes, exactly as libjpeg-turbo upsamples and converts it (ops/jpeg_ycc.h) */
typedef struct sl__cuda_ycc_desc {
    const uint8_t *y, *cb, *cr;
    int64_t ypitch, cpitch;
    sl__ycc_layout l;
    int32_t y0, x0, out_h, out_w;
    uint8_t *out;
} sl__cuda_ycc_desc;
sl_status sl__cuda_ycc(const sl__cuda_ycc_desc *d, int n, int64_t max_pixels, int bgr, void *stream,
                       sl_err *err);

/* Starts loading cuBLAS (cublas_dl.h) on a thread of its own and returns; the GPU model's first
 * use waits for it. For a process about to train on GPUs, at its start. */
void sl__cuda_blas_preload(void);
/* Loads cuBLAS now, or waits for the load under way: SL_ECUDA naming the library when it cannot be
 * loaded. Needs no GPU. */
sl_status sl__cuda_blas_load(sl_err *err);

/* Streams for pipeline stages: created on `device`, with the calling thread's device set too. */
sl_status sl__cuda_set_device(int device, sl_err *err);
/* Creates the CUDA contexts of n GPUs at once, a thread each (each takes a fraction of a second;
 * made one after the other by the first calls on each device, they add up at start-up). */
sl_status sl__cuda_init_devices(const int *ids, int n, sl_err *err);
sl_status sl__cuda_stream_create(int device, void **stream, sl_err *err);
sl_status sl__cuda_stream_sync(void *stream, sl_err *err);
void sl__cuda_stream_destroy(void *stream);

/* One optimiser update over n floats, the same float32 operations in the same order as optim.c's
 * CPU loops (no fused multiply-add), so CPU and GPU results agree to the bit. kind: SL_OPTIM_*;
 * the scalars are computed once per step by the caller. m, v: state (NULL where unused). */
typedef struct sl__cuda_optim_args {
    int kind, nesterov;
    float lr, wd, mu;                              /* SGD */
    float b1, b2, one_minus_b1, one_minus_b2, eps; /* Adam */
    float step_size, bc2_sqrt, decay;              /* Adam: per-step scalars */
} sl__cuda_optim_args;
/* Per optimiser on a device: the scalars staged in pinned memory and their device copy, which the
 * kernels read (so a CUDA graph that captured an update stays valid as Adam's scalars change).
 * initial: the scalars (SGD's never change; they are copied once here). */
typedef struct sl__cuda_optim_state sl__cuda_optim_state;
sl_status sl__cuda_optim_state_create(int device, const sl__cuda_optim_args *initial,
                                      sl__cuda_optim_state **out, sl_err *err);
void sl__cuda_optim_state_free(sl__cuda_optim_state *s);
/* Stages this step's scalars (waits until the previous queued update has copied the last ones). */
sl_status sl__cuda_optim_stage(sl__cuda_optim_state *s, const sl__cuda_optim_args *a, sl_err *err);
/* Queues the update on stream (capturable): copy of the staged scalars, then the kernel. */
sl_status sl__cuda_optim_enqueue(sl__cuda_optim_state *s, float *p, const float *g, float *m,
                                 float *v, int64_t n, void *stream, sl_err *err);
/* Records, after work queued on stream (not while capturing), that the staged scalars are in use
 * until that work is done. */
sl_status sl__cuda_optim_mark(sl__cuda_optim_state *s, void *stream, sl_err *err);
/* enqueue's two parts: the copy of the staged scalars to the device (none for SGD, whose scalars
 * never change), then the update kernel over n floats (p, g, m, v at the same offset), which reads
 * them; an update split into ranges copies once, before the first range. */
sl_status sl__cuda_optim_copy_args(sl__cuda_optim_state *s, void *stream, sl_err *err);
sl_status sl__cuda_optim_update(sl__cuda_optim_state *s, float *p, const float *g, float *m,
                                float *v, int64_t n, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
