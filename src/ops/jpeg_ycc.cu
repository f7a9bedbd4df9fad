/* SPDX-License-Identifier: Apache-2.0 */
// The last step of nvJPEG's YUV decodes: libjpeg-turbo's chroma upsampling and YCbCr -> RGB
// (src/ops/jpeg_ycc.h, the same code the CPU tests check against libjpeg-turbo), one thread per
// output pixel of a window of each image, so that the GPU decode equals the CPU decode.
#include "core/cuda_check.h"
#include "ops/jpeg_ycc.h"
#include "core/cuda_launch.h"

__global__ static void ycc_kernel(const sl__cuda_ycc_desc *d, int n, int bgr) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__cuda_ycc_desc *q = &d[s];
        SL__CUDA_FOR_ELEMS(e, (int64_t)q->out_h * q->out_w) {
            int y = (int)(e / q->out_w), x = (int)(e % q->out_w);
            sl__ycc_pixel(q->y, q->ypitch, q->cb, q->cr, q->cpitch, &q->l, y + q->y0, x + q->x0,
                          bgr, q->out + e * 3);
        }
    }
}

extern "C" sl_status sl__cuda_ycc(const sl__cuda_ycc_desc *d, int n, int64_t max_pixels, int bgr,
                                  void *stream, sl_err *err) {
    if (n < 1 || max_pixels < 1) return SL_OK;
    ycc_kernel<<<sl__cuda_batch_grid(max_pixels, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, bgr);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
