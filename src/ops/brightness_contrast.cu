/* SPDX-License-Identifier: Apache-2.0 */
// brightness_contrast's CUDA run: one thread per element, computed as brightness_contrast.c's
// run_cpu does (the element read as a float, times the sample's multiplier plus its addend in
// double precision, stored with operator/dtype_conv.h's ConvertSat rules), so both give the same
// bits.
#include "core/cuda_check.h"
#include "ops/brightness_contrast.h"
#include "core/cuda_launch.h"

#include "operator/dtype_conv.h"

__global__ static void bc_kernel(const sl__cuda_bc_desc *d, int n, int it, int ot) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        double mul = d[s].mul, add = d[s].add;
        SL__CUDA_FOR_ELEMS(e, d[s].n) {
            double x = (double)(float)sl__dtype_conv_load(d[s].in, (sl_dtype)it, e);
            sl__dtype_conv_store(d[s].out, (sl_dtype)ot, e, x * mul + add);
        }
    }
}

extern "C" sl_status sl__cuda_brightness_contrast(const sl__cuda_bc_desc *d, int n,
                                                  int64_t max_elems, int in_dtype, int out_dtype,
                                                  void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    bc_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(
        d, n, in_dtype, out_dtype);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
