// CUDA runtime entry points for C code: device selection and the pipeline stages' streams.
#include "cuda/check.h"
#include "cuda/kernels.h"

extern "C" sl_status sl__cuda_set_device(int device, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(device));
    return SL_OK;
}

extern "C" sl_status sl__cuda_stream_create(int device, void **stream, sl_err *err) {
    SL_CUDA_TRY(err, cudaSetDevice(device));
    cudaStream_t s;
    SL_CUDA_TRY(err, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = (void *)s;
    return SL_OK;
}

extern "C" sl_status sl__cuda_stream_sync(void *stream, sl_err *err) {
    SL_CUDA_TRY(err, cudaStreamSynchronize((cudaStream_t)stream));
    return SL_OK;
}

extern "C" void sl__cuda_stream_destroy(void *stream) {
    if (stream) cudaStreamDestroy((cudaStream_t)stream);
}
