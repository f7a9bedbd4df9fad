/* SPDX-License-Identifier: Apache-2.0 */
// box_encoder's CUDA run, in two kernels with box_encoder.c's matching rule: first, per box, a
// block finds the anchor of highest IoU (the latest of equals: each thread keeps its best, then a
// reduction keeps the larger value, or the larger index on a tie); then one thread per anchor
// takes the box of highest IoU (2 for a box whose best anchor it is; the latest of equals) and
// writes the row (box_encoder.h) and the label when it passes criteria.
#include "core/cuda_check.h"
#include "ops/box_encoder.h"
#include "core/cuda_launch.h"

__global__ static void best_anchor_kernel(const sl__cuda_box_desc *d, int nsamples,
                                          const float *anchors, int64_t m, int64_t *best) {
    __shared__ float val[SL__CUDA_THREADS];
    __shared__ int64_t idx[SL__CUDA_THREADS];
    SL__CUDA_FOR_SAMPLES(s, nsamples) {
        for (int64_t b = blockIdx.x; b < d[s].n; b += gridDim.x) {
            const float *box = d[s].boxes + 4 * b;
            float v = -1.0f;
            int64_t at = -1;
            for (int64_t a = threadIdx.x; a < m; a += blockDim.x) {
                float x = sl__box_iou(box, anchors + 4 * a);
                if (x >= v) v = x, at = a; /* a grows: the latest of equals */
            }
            val[threadIdx.x] = v;
            idx[threadIdx.x] = at;
            __syncthreads();
            for (int w = blockDim.x / 2; w > 0; w /= 2) {
                if ((int)threadIdx.x < w) {
                    float o = val[threadIdx.x + w];
                    int64_t oi = idx[threadIdx.x + w];
                    if (o > val[threadIdx.x] || (o == val[threadIdx.x] && oi > idx[threadIdx.x]))
                        val[threadIdx.x] = o, idx[threadIdx.x] = oi;
                }
                __syncthreads();
            }
            if (threadIdx.x == 0) best[d[s].first + b] = idx[0];
            __syncthreads();
        }
    }
}

__global__ static void encode_kernel(const sl__cuda_box_desc *d, int nsamples, const float *anchors,
                                     int64_t m, sl__box_params p, const int64_t *best) {
    SL__CUDA_FOR_SAMPLES(s, nsamples) {
        SL__CUDA_FOR_ELEMS(a, m) {
            const float *an = anchors + 4 * a;
            int64_t n = d[s].n, bb = -1;
            float bv = 0.0f;
            for (int64_t b = 0; b < n; b++) {
                float v = best[d[s].first + b] == a ? 2.0f : sl__box_iou(d[s].boxes + 4 * b, an);
                if (b == 0 || v >= bv) bv = v, bb = b;
            }
            bool hit = n > 0 && bv > p.criteria;
            sl__box_row(&p, an, hit ? d[s].boxes + 4 * bb : NULL, d[s].out_boxes + 4 * a);
            d[s].out_labels[a] = hit ? d[s].labels[bb] : 0;
        }
    }
}

extern "C" sl_status sl__cuda_box_encoder(const sl__cuda_box_desc *d, int nsamples,
                                          int64_t max_boxes, const float *anchors, int64_t m,
                                          const sl__box_params *p, int64_t *best, void *stream,
                                          sl_err *err) {
    if (nsamples < 1 || m < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    if (max_boxes > 0) {
        dim3 g((unsigned)(max_boxes < 4096 ? max_boxes : 4096),
               (unsigned)(nsamples < 65535 ? nsamples : 65535), 1);
        best_anchor_kernel<<<g, SL__CUDA_THREADS, 0, st>>>(d, nsamples, anchors, m, best);
        SL_CUDA_TRY(err, cudaGetLastError());
    }
    encode_kernel<<<sl__cuda_batch_grid(m, nsamples), SL__CUDA_THREADS, 0, st>>>(
        d, nsamples, anchors, m, *p, best);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
