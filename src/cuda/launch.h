/* Launch geometry shared by the image ops' kernels: grid.y walks the samples of a batch (65535 at
 * most, more in a loop over y), grid.x strides over one sample's elements. CUDA-only header. */
#ifndef SLUICE_CUDA_LAUNCH_H
#define SLUICE_CUDA_LAUNCH_H

#include <cuda_runtime.h>
#include <stdint.h>

#define SL__CUDA_THREADS 256

static inline dim3 sl__cuda_batch_grid(int64_t max_elems, int n) {
    int64_t bx = (max_elems + SL__CUDA_THREADS - 1) / SL__CUDA_THREADS;
    if (bx < 1) bx = 1;
    if (bx > 4096) bx = 4096;
    return dim3((unsigned)bx, (unsigned)(n < 65535 ? n : 65535), 1);
}

/* for (sample s of this block's y; element e of this thread's x stride) */
#define SL__CUDA_FOR_SAMPLES(s, n) for (int s = (int)blockIdx.y; s < (n); s += (int)gridDim.y)
#define SL__CUDA_FOR_ELEMS(e, count)                                                               \
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < (count);                  \
         e += (int64_t)gridDim.x * blockDim.x)

#endif
