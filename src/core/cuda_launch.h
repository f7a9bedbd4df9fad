/* SPDX-License-Identifier: Apache-2.0 */
/* Launch geometry shared by the image ops' kernels: grid.y walks the samples of a batch (65535 at
 * most, more in a loop over y), grid.x strides over one sample's elements. CUDA-only header. */
#ifndef SLUICE_CORE_CUDA_LAUNCH_H
#define SLUICE_CORE_CUDA_LAUNCH_H

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

/* Programmatic dependent launch (compute capability 9.0 on; sl__pdl_ok says whether a kernel can
 * take it): a kernel launched with sl__launch_pdl(1, ...) may start while the kernel before it on
 * its stream is finishing; it calls sl__pdl_wait() before it reads anything an earlier kernel wrote
 * (the wait returns once those kernels are complete and their writes visible; without the attribute
 * it returns at once). This hides the gap between two dependent kernels: ~0.3 us each on an H200.
 */
__device__ __forceinline__ void sl__pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#ifdef __cplusplus
/* Whether kernel may be launched early on the current device: compute capability 9.0 on, and the
 * code that runs there was compiled for 9.0 on (a newer GPU that JIT-compiles the build's
 * compute_75 PTX gets kernels without the wait, which must then wait for the kernel before them in
 * full). */
template <typename... P> static inline int sl__pdl_ok(void (*kernel)(P...)) {
    int dev = 0, major = 0;
    cudaFuncAttributes fa;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, (const void *)kernel) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major >= 9 && fa.ptxVersion >= 90;
}

template <typename... P, typename... A>
static inline cudaError_t sl__launch_pdl(int pdl, void (*kernel)(P...), dim3 grid, dim3 block,
                                         size_t smem, cudaStream_t stream, A... args) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, (P)args...);
}
#endif

#endif
