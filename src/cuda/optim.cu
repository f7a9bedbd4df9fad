// The optimiser update on the GPU (sl_optim with a CUDA device; optim.c computes the per-step
// scalars and calls sl__cuda_optim_update). Each kernel repeats optim.c's float32 loop body with
// explicitly rounded operations (__fmul_rn and friends, which nvcc never fuses into an FMA), so an
// update on the GPU gives the same bits as on the CPU.
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "sluice/train.h"

__global__ void sgd_kernel(float *p, const float *g, int64_t n, float lr, float wd) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        // CPU: p -= lr * g  or  p -= lr * (g + wd * p)
        float d = wd == 0.0f ? g[i] : __fadd_rn(g[i], __fmul_rn(wd, p[i]));
        p[i] = __fsub_rn(p[i], __fmul_rn(lr, d));
    }
}

__global__ void momentum_kernel(float *p, const float *g, float *buf, int64_t n, float lr, float wd,
                                float mu, int nesterov) {
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
                            sl__cuda_optim_args a) {
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

extern "C" sl_status sl__cuda_optim_update(const sl__cuda_optim_args *a, float *p, const float *g,
                                           float *m, float *v, int64_t n, void *stream,
                                           sl_err *err) {
    if (n <= 0) return SL_OK;
    cudaStream_t s = (cudaStream_t)stream;
    int64_t blocks64 = (n + 255) / 256;
    unsigned blocks = (unsigned)(blocks64 > 132 * 32 ? 132 * 32 : blocks64);
    if (a->kind == SL_OPTIM_SGD && a->mu == 0.0f)
        sgd_kernel<<<blocks, 256, 0, s>>>(p, g, n, a->lr, a->wd);
    else if (a->kind == SL_OPTIM_SGD)
        momentum_kernel<<<blocks, 256, 0, s>>>(p, g, m, n, a->lr, a->wd, a->mu, a->nesterov);
    else
        adam_kernel<<<blocks, 256, 0, s>>>(p, g, m, v, n, *a);
    SL_CUDA_TRY(err, cudaGetLastError());
    return SL_OK;
}
