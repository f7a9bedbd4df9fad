/* SPDX-License-Identifier: Apache-2.0 */
/* nvJPEG batched decoding for the mixed image decoders (decode_image_nvjpeg.c, compiled only where
 * nvjpeg.h is found). A decoder owns two nvJPEG handles on one GPU: the hardware JPEG engines
 * (NVJPEG_BACKEND_HARDWARE, when the GPU has them: A100, H100, H200) and the default GPU/hybrid
 * back end. The engines take every image they support, the default back end the others (the
 * hw_decoder_load split is made before: the decoder's setup gives the rest to the CPU pool). Colour
 * images are decoded to their planes and finished as libjpeg-turbo finishes them (ops/jpeg_ycc.h),
 * so that the GPU decode equals the CPU decode (nvJPEG's own RGB output replicates chroma). No
 * nvJPEG type appears here, so the decoder's files that use it (decode_image.c,
 * decode_image_plan.c, decode_image_gpu_nvjpeg.c) stay free of CUDA headers. */
#ifndef SLUICE_OPS_DECODE_IMAGE_NVJPEG_H
#define SLUICE_OPS_DECODE_IMAGE_NVJPEG_H

#include "ops/decode_image.h"
#include "ops/jpeg_ycc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__nvjpeg sl__nvjpeg;

/* How long one call on the engines may take, in seconds, unless the environment's
 * SLUICE_NVJPEG_TIMEOUT says otherwise: a batch of 256 photos takes them about 25 ms. */
#define SL__NVJPEG_TIMEOUT_S 10.0

/* On the calling thread's current device (the GPU stage's); name: the op's, for its warnings. The
 * engines are used when the GPU has them, unless the environment says SLUICE_NVJPEG_ENGINES=0
 * (then the default back end alone). Every call on the engines is made by a thread of the
 * decoder's own and waited for at most SL__NVJPEG_TIMEOUT_S: a call that does not come back by
 * then is a stall, logged as a warning that names the op; its images are decoded elsewhere and the
 * decoder does not use the engines again. (SLUICE_NVJPEG_TEST_STALL=N, for tests: the decoder's
 * Nth engine call stalls.) priority: the CUDA priority of the stream it decodes ahead on (the
 * pipeline's). */
sl_status sl__nvjpeg_create(sl__nvjpeg **out, const char *name, int priority, sl_err *err);
/* The hardware engines are in use (the GPU has them, and they have not stalled). */
bool sl__nvjpeg_has_engines(const sl__nvjpeg *d);
/* A call on the engines stalled: they are off for this decoder. */
bool sl__nvjpeg_stalled(const sl__nvjpeg *d);
/* DALI's preallocate_width_hint / preallocate_height_hint: makes the engines' buffers up front for
 * a batch of n images of w x h (planes of 4:4:4, the largest, as DALI does; gray: the luma
 * plane), so that early batches do not grow them. Only a hint: without engines it does nothing, and
 * a refusal is logged once. */
void sl__nvjpeg_preallocate(sl__nvjpeg *d, int n, int w, int h, bool gray);
void sl__nvjpeg_free(sl__nvjpeg *d);

/* One image for sl__nvjpeg_decode. */
typedef struct sl__nvjpeg_job {
    const uint8_t *data; /* the JPEG, in host memory that stays put until the batch is done */
    size_t len;
    int64_t w;    /* the image's width: dst's row pitch (w * c bytes) for a whole image */
    uint8_t *dst; /* device memory: the whole image (h, w, c), or the window below */
    /* RGB and BGR only: ycc.w > 0 for a YCbCr JPEG whose layout jpeg_ycc.h handles. Its planes
     * are decoded as stored (NVJPEG_OUTPUT_YUV) and finished by jpeg_ycc.h's upsampling and
     * conversion (sl__cuda_ycc), which makes the result equal libjpeg-turbo's; only the window
     * (y0, x0, out_h, out_w) is written, dst then being (out_h, out_w, 3). */
    sl__ycc_layout ycc;
    int32_t y0, x0, out_h, out_w;
} sl__nvjpeg_job;

/* Decodes n JPEGs into device memory as their jobs say, uint8 HWC: c 3 for RGB and BGR, 1 for
 * GRAY (the luma plane). Queued on stream; *hw = images the engines took. An image nvJPEG does not
 * decode (any failure status, from either back end) is not an error: failed[i] is set to 1 and the
 * caller decodes it on the CPU; errors are left for what is not about one image. */
sl_status sl__nvjpeg_decode(sl__nvjpeg *d, int n, const sl__nvjpeg_job *jobs, sl__img_type type,
                            void *stream, int *hw, char *failed, sl_err *err);

/* Decoding ahead: the engines' share of a batch, decoded from the CPU stage (its own thread, while
 * the pool decodes the CPU's share) so that the engines work on batch k + 1 while the GPU stage
 * finishes batch k. Per batch slot, made by the first run, freed with the batch state. */
typedef struct sl__nvjpeg_ahead sl__nvjpeg_ahead;

/* Any thread, one batch at a time: parses the n images and has the engines decode those they take
 * (planes or the jobs' dst, as sl__nvjpeg_decode), on the decoder's own stream; returns when their
 * work is done. done[i] = 1 for each image decoded; the others (not taken, refused, stalled, or no
 * engines at all) are left to sl__nvjpeg_decode in the GPU stage. Errors only for what is not
 * about one image. */
sl_status sl__nvjpeg_ahead_run(sl__nvjpeg *d, sl__nvjpeg_ahead **slot, int n,
                               const sl__nvjpeg_job *jobs, sl__img_type type, char *done,
                               sl_err *err);
/* The GPU stage: the planes of the engines' batch are finished into the jobs' outputs (the same n
 * jobs, still in place), on stream. */
sl_status sl__nvjpeg_ahead_finish(sl__nvjpeg *d, sl__nvjpeg_ahead *a, int n,
                                  const sl__nvjpeg_job *jobs, sl__img_type type, void *stream,
                                  sl_err *err);
void sl__nvjpeg_ahead_free(sl__nvjpeg_ahead *a);

#ifdef __cplusplus
}
#endif
#endif
