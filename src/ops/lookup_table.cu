/* SPDX-License-Identifier: Apache-2.0 */
// lookup_table's CUDA run: one thread per element; the table is already of the output type, so an
// element is a copy of its entry's bytes (what the CPU run stores, converted once at creation).
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/lookup_table.h"

#include "operator/dtype_conv.h"

template <typename E>
__global__ static void lut_kernel(const sl__cuda_cast_desc *d, int n, int it, const E *table) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        E *out = (E *)d[s].out;
        SL__CUDA_FOR_ELEMS(e, d[s].n) {
            double x = sl__dtype_conv_load(d[s].in, (sl_dtype)it, e);
            out[e] = table[x >= 0 && x < SL__LUT_KEYS ? (int64_t)x : SL__LUT_KEYS];
        }
    }
}

extern "C" sl_status sl__cuda_lookup_table(const sl__cuda_cast_desc *d, int n, int64_t max_elems,
                                           int in_dtype, const void *table, int64_t elem,
                                           void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 grid = sl__cuda_batch_grid(max_elems, n);
    switch (elem) {
    case 1:
        lut_kernel<<<grid, SL__CUDA_THREADS, 0, st>>>(d, n, in_dtype, (const uint8_t *)table);
        break;
    case 2:
        lut_kernel<<<grid, SL__CUDA_THREADS, 0, st>>>(d, n, in_dtype, (const uint16_t *)table);
        break;
    case 4:
        lut_kernel<<<grid, SL__CUDA_THREADS, 0, st>>>(d, n, in_dtype, (const uint32_t *)table);
        break;
    case 8:
        lut_kernel<<<grid, SL__CUDA_THREADS, 0, st>>>(d, n, in_dtype, (const uint64_t *)table);
        break;
    default:
        return sl_err_set(err, SL_EINVAL, "lookup_table: no CUDA run for %lld-byte elements",
                          (long long)elem);
    }
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
