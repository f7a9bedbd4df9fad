/* SPDX-License-Identifier: Apache-2.0 */
// CUDA runtime entry points for C code: device selection and the pipeline stages' streams.
#include "core/cuda_check.h"
#include "core/cuda.h"
#include "core/pool.h"

#include <thread>
#include <vector>

extern "C" sl_status sl__cuda_set_device(int device, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(device));
    return SL_OK;
}

static sl_status stream_on(int device, int priority, void **stream, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(device));
    int least = 0, greatest = 0;
    SL_CUDA_TRY(err, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    if (priority < greatest || priority > least)
        return sl_err_set(err, SL_EINVAL,
                          "stream priority %d: GPU %d takes %d (the most urgent) to %d (the "
                          "least; DALI's default_cuda_stream_priority)",
                          priority, device, greatest, least);
    cudaStream_t s;
    SL_CUDA_TRY(err, cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
    *stream = (void *)s;
    return SL_OK;
}

/* (called on the caller's thread, sl_pipeline_build's: its current device is put back, as
 * alloc.c does, so that the caller's own CUDA work, PyTorch's or JAX's, stays on its device) */
extern "C" sl_status sl__cuda_stream_create(int device, int priority, void **stream, sl_err *err) {
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) {
        (void)cudaGetLastError();
        prev = -1;
    }
    sl_status st = stream_on(device, priority, stream, err);
    if (prev >= 0 && prev != device && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
    return st;
}

extern "C" sl_status sl__cuda_stream_sync(void *stream, sl_err *err) {
    SL_CUDA_TRY(err, cudaStreamSynchronize((cudaStream_t)stream));
    return SL_OK;
}

extern "C" void sl__cuda_stream_destroy(void *stream) {
    if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" sl_status sl__cuda_init_devices(const int *ids, int n, sl_err *err) {
    std::vector<cudaError_t> r((size_t)(n > 0 ? n : 0), cudaSuccess);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; i++)
        threads.emplace_back([&r, ids, i] {
            sl__thread_begin("sluice-init");
            r[(size_t)i] = cudaSetDevice(ids[i]);
            if (r[(size_t)i] == cudaSuccess) r[(size_t)i] = cudaFree(nullptr);
            sl__thread_end();
        });
    for (auto &t : threads) t.join();
    for (int i = 0; i < n; i++)
        if (r[(size_t)i] != cudaSuccess)
            return sl_err_set(err, SL_ECUDA, "GPU %d: %s", ids[i],
                              cudaGetErrorString(r[(size_t)i]));
    return SL_OK;
}
