/* SPDX-License-Identifier: Apache-2.0 */
// slice's CUDA run: one thread per output element, each reading its source through
// sl__slice_source (ops/slice.h), the rule the CPU run follows; equal types are copied byte for
// byte, others converted as operator/dtype_conv.h does.
#include "core/cuda_check.h"
#include "core/cuda_launch.h"
#include "ops/slice.h"

__global__ static void slice_kernel(const sl__slice_desc *d, int n, int it, int ot, int esize) {
    SL__CUDA_FOR_SAMPLES(s, n) {
        const sl__slice_desc *q = &d[s];
        SL__CUDA_FOR_ELEMS(e, q->n) {
            int f;
            int64_t src = sl__slice_source(q, e, &f);
            if (src < 0) {
                sl__dtype_conv_store(q->out, (sl_dtype)ot, e, q->fill[f]);
            } else if (it == ot) {
                const unsigned char *a = (const unsigned char *)q->in + src * esize;
                unsigned char *b = (unsigned char *)q->out + e * esize;
                for (int k = 0; k < esize; k++) b[k] = a[k];
            } else {
                sl__dtype_conv_store(q->out, (sl_dtype)ot, e,
                                     sl__dtype_conv_load(q->in, (sl_dtype)it, src));
            }
        }
    }
}

extern "C" sl_status sl__cuda_slice(const sl__slice_desc *d, int n, int64_t max_elems, int in_dtype,
                                    int out_dtype, void *stream, sl_err *err) {
    if (n < 1 || max_elems < 1) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    slice_kernel<<<sl__cuda_batch_grid(max_elems, n), SL__CUDA_THREADS, 0, st>>>(
        d, n, in_dtype, out_dtype, (int)sl_dtype_size((sl_dtype)in_dtype));
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
