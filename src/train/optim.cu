/* SPDX-License-Identifier: Apache-2.0 */
// The optimiser update on the GPU (sl_optim with a CUDA device; optim.c computes the per-step
// scalars and calls these). Each kernel repeats optim.c's float32 loop body with explicitly
// rounded operations (__fmul_rn and friends, which nvcc never fuses into an FMA), so an update on
// the GPU gives the same bits as on the CPU.
//
// The scalars (sl__cuda_optim_args) are read by the kernels from device memory, not passed by
// value, so that a CUDA graph that captured an update stays valid while Adam's bias corrections
// change every step: optim.c stages them in pinned host memory (sl__cuda_optim_stage), and every
// queued update first copies the staged bytes to the device copy (a memcpy node in a graph, which
// reads the pinned bytes when the graph runs). SGD's scalars never change: they are copied once,
// when the state is made. An event recorded after each queued update lets the next staging wait
// until the previous copy has read the pinned bytes.
//
// The kernels work on 4 floats per thread (16-byte loads) where every buffer is 16-byte aligned,
// and one float per thread for the tail and for unaligned buffers; the arithmetic per element is
// the same either way.
#include "core/alloc.h"
#include "core/cuda_check.h"
#include "train/optim.h"
#include "core/cuda_launch.h"
#include "sluice/train.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sl__cuda_optim_state {
    int device;
    int kind, sgd_static;      // sgd_static: plain SGD or momentum (scalars never change)
    sl__cuda_optim_args *host; // pinned
    sl__cuda_optim_args *dev;  // device copy the kernels read
    cudaEvent_t done;          // recorded after the last queued update (outside captures)
    int recorded;
    int pdl; // SGD and momentum updates start as the kernel before them ends (sl__launch_pdl)
};

__device__ __forceinline__ float sgd_one(float p, float g, float lr, float wd) {
    // CPU: p -= lr * g  or  p -= lr * (g + wd * p)
    float d = wd == 0.0f ? g : __fadd_rn(g, __fmul_rn(wd, p));
    return __fsub_rn(p, __fmul_rn(lr, d));
}

__global__ void sgd_kernel(float *p, const float *g, int64_t n, const sl__cuda_optim_args *args,
                           int vec) {
    sl__pdl_wait();
    const float lr = args->lr, wd = args->wd;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (vec) {
        const int64_t n4 = n / 4;
        float4 *p4 = (float4 *)p;
        const float4 *g4 = (const float4 *)g;
        for (int64_t i = i0; i < n4; i += stride) {
            float4 pv = p4[i], gv = g4[i];
            pv.x = sgd_one(pv.x, gv.x, lr, wd);
            pv.y = sgd_one(pv.y, gv.y, lr, wd);
            pv.z = sgd_one(pv.z, gv.z, lr, wd);
            pv.w = sgd_one(pv.w, gv.w, lr, wd);
            p4[i] = pv;
        }
        done = n4 * 4;
    }
    for (int64_t i = done + i0; i < n; i += stride) p[i] = sgd_one(p[i], g[i], lr, wd);
}

__global__ void momentum_kernel(float *p, const float *g, float *buf, int64_t n,
                                const sl__cuda_optim_args *args) {
    sl__pdl_wait();
    const float lr = args->lr, wd = args->wd, mu = args->mu;
    const int nesterov = args->nesterov;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float d = __fadd_rn(g[i], __fmul_rn(wd, p[i]));
        float b = __fadd_rn(__fmul_rn(mu, buf[i]), d);
        buf[i] = b;
        float step = nesterov ? __fadd_rn(d, __fmul_rn(mu, b)) : b;
        p[i] = __fsub_rn(p[i], __fmul_rn(lr, step));
    }
}

__global__ void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n,
                            const sl__cuda_optim_args *args) {
    const sl__cuda_optim_args a = *args;
    const int decoupled = a.kind == SL_OPTIM_ADAMW;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float gi = g[i], pi = p[i];
        if (decoupled)
            pi = __fmul_rn(pi, a.decay);
        else
            gi = __fadd_rn(gi, __fmul_rn(a.wd, pi));
        float mi = __fadd_rn(__fmul_rn(a.b1, m[i]), __fmul_rn(a.one_minus_b1, gi));
        float vi = __fadd_rn(__fmul_rn(a.b2, v[i]), __fmul_rn(__fmul_rn(a.one_minus_b2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), a.bc2_sqrt), a.eps);
        p[i] = __fsub_rn(pi, __fmul_rn(a.step_size, __fdiv_rn(mi, denom)));
    }
}

extern "C" void sl__cuda_optim_state_free(sl__cuda_optim_state *s) {
    if (!s) return;
    cudaSetDevice(s->device);
    if (s->done) {
        if (s->recorded) cudaEventSynchronize(s->done);
        cudaEventDestroy(s->done);
    }
    if (s->dev) cudaFree(s->dev);
    sl__alloc_pinned_free(s->host);
    (void)cudaGetLastError();
    free(s);
}

extern "C" sl_status sl__cuda_optim_state_create(int device, const sl__cuda_optim_args *initial,
                                                 sl__cuda_optim_state **out, sl_err *err) {
    *out = NULL;
    sl__cuda_optim_state *s = (sl__cuda_optim_state *)sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->device = device;
    s->kind = initial->kind;
    s->sgd_static = initial->kind == SL_OPTIM_SGD;
    sl_status st = SL_OK;
    cudaError_t e = cudaSetDevice(device);
    // with static scalars no copy precedes an update, so its kernel follows a kernel directly
    if (e == cudaSuccess) s->pdl = s->sgd_static && sl__pdl_ok(sgd_kernel);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaMalloc((void **)&s->dev, sizeof *s->dev);
    if (e == cudaSuccess &&
        !(s->host = (sl__cuda_optim_args *)sl__alloc_pinned(sizeof *s->host, err)))
        st = SL_ENOMEM;
    if (e == cudaSuccess && st == SL_OK) {
        *s->host = *initial;
        e = cudaMemcpy(s->dev, s->host, sizeof *s->dev, cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess)
        st = sl_err_set(err, SL_ECUDA, "optimiser state on cuda:%d: %s", device,
                        cudaGetErrorString(e));
    if (st != SL_OK) {
        sl__cuda_optim_state_free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

extern "C" sl_status sl__cuda_optim_stage(sl__cuda_optim_state *s, const sl__cuda_optim_args *a,
                                          sl_err *err) {
    if (s->sgd_static) return SL_OK; // copied once at creation
    // the previous queued update may still have to copy the staged bytes
    if (s->recorded) SL_CUDA_TRY(err, cudaEventSynchronize(s->done));
    *s->host = *a;
    return SL_OK;
}

extern "C" sl_status sl__cuda_optim_copy_args(sl__cuda_optim_state *s, void *stream, sl_err *err) {
    if (!s->sgd_static)
        SL_CUDA_TRY(err, cudaMemcpyAsync(s->dev, s->host, sizeof *s->dev, cudaMemcpyHostToDevice,
                                         (cudaStream_t)stream));
    return SL_OK;
}

extern "C" sl_status sl__cuda_optim_enqueue(sl__cuda_optim_state *s, float *p, const float *g,
                                            float *m, float *v, int64_t n, void *stream,
                                            sl_err *err) {
    if (n <= 0) return SL_OK;
    const sl_status st = sl__cuda_optim_copy_args(s, stream, err);
    return st != SL_OK ? st : sl__cuda_optim_update(s, p, g, m, v, n, stream, err);
}

extern "C" sl_status sl__cuda_optim_update(sl__cuda_optim_state *s, float *p, const float *g,
                                           float *m, float *v, int64_t n, void *stream,
                                           sl_err *err) {
    if (n <= 0) return SL_OK;
    cudaStream_t st = (cudaStream_t)stream;
    const int vec = (((uintptr_t)p | (uintptr_t)g) & 15) == 0;
    const int64_t work = s->kind == SL_OPTIM_SGD && vec ? (n + 3) / 4 : n;
    int64_t blocks64 = (work + 255) / 256;
    unsigned blocks = (unsigned)(blocks64 > 132 * 16 ? 132 * 16 : blocks64);
    if (s->kind == SL_OPTIM_SGD && !m)
        sl__launch_pdl(s->pdl, sgd_kernel, dim3(blocks), dim3(256), 0, st, p, g, n,
                       (const sl__cuda_optim_args *)s->dev, vec);
    else if (s->kind == SL_OPTIM_SGD)
        sl__launch_pdl(s->pdl, momentum_kernel, dim3(blocks), dim3(256), 0, st, p, g, m, n,
                       (const sl__cuda_optim_args *)s->dev);
    else
        adam_kernel<<<blocks, 256, 0, st>>>(p, g, m, v, n, s->dev);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}

extern "C" sl_status sl__cuda_optim_mark(sl__cuda_optim_state *s, void *stream, sl_err *err) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    SL_CUDA_TRY(err, cudaStreamIsCapturing((cudaStream_t)stream, &cs));
    if (cs != cudaStreamCaptureStatusNone) return SL_OK;
    SL_CUDA_TRY(err, cudaEventRecord(s->done, (cudaStream_t)stream));
    s->recorded = 1;
    return SL_OK;
}
