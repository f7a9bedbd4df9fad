/* SPDX-License-Identifier: Apache-2.0 */
// one_hot's CUDA run: one thread per output element of every sample, the comparison and the
// conversions of one_hot.c's run_cpu (operator/dtype_conv.h on the device).
#include "core/cuda_check.h"
#include "ops/one_hot.h"
#include "core/cuda_launch.h"

#include "operator/dtype_conv.h"

__global__ static void one_hot_kernel(const sl__cuda_one_hot_desc *d, int n, int64_t classes,
                                      int it, int ot, double on, double off) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        int64_t inner = d[s].inner, total = d[s].outer * classes * inner;
        SL__CUDA_FOR_ELEMS(e, total) {
            int64_t j = e % inner, k = (e / inner) % classes, o = e / (inner * classes);
            double v = sl__dtype_conv_load(d[s].in, (sl_dtype)it, o * inner + j);
            bool hit = v >= 0 && v < (double)classes && (int64_t)v == k;
            sl__dtype_conv_store(d[s].out, (sl_dtype)ot, e, hit ? on : off);
        }
    }
}

extern "C" sl_status sl__cuda_one_hot(const sl__cuda_one_hot_desc *d, int n, int64_t max_out,
                                      int64_t classes, int in_dtype, int out_dtype, double on,
                                      double off, void *stream, sl_err *err) {
    if (n < 1 || max_out < 1) return SL_OK;
    one_hot_kernel<<<sl__cuda_batch_grid(max_out, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, classes, in_dtype, out_dtype, on, off);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
