/* SPDX-License-Identifier: Apache-2.0 */
// cuBLAS, loaded at run time (cublas_dl.cu). Loading libcublas takes ~0.06-0.1 s and ~200 MB of
// touched memory (libcublasLt's static initialisers), so a process that never trains on a GPU --
// `sluice run`, `inspect`, `convert`, the CPU trainer -- should not pay it, and `sluice train`
// starts it on a thread of its own (sl__cuda_blas_preload, mlp.h) so that it overlaps the rest
// of its start-up. C++ (CUDA sources) only.
#ifndef SLUICE_TRAIN_CUBLAS_DL_H
#define SLUICE_TRAIN_CUBLAS_DL_H

#include "sluice/status.h"

#include <cublas_v2.h>

// The cuBLAS calls the backend makes (cublas_v2.h names; the macros pick the _v2 entry points).
typedef struct sl__cublas_api {
    decltype(&cublasCreate) create;
    decltype(&cublasDestroy) destroy;
    decltype(&cublasSetStream) set_stream;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSetWorkspace) set_workspace;
    // (cublasGemmEx is overloaded in C++: the C entry point, with a cublasComputeType_t)
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    decltype(&cublasGetStatusString) status_string;
} sl__cublas_api;

// The API, loaded by the first call (any thread; later calls wait for it or return at once). NULL,
// with err set (SL_ECUDA, naming the library and the loader's reason), when it cannot be loaded.
const sl__cublas_api *sl__cublas(sl_err *err);

// Runs a cuBLAS call through api and, on failure, records "expr at file:line: reason" in an sl_err
// and returns SL_ECUDA from the enclosing function.
#define SL_CUBLAS_TRY(err, api, expr)                                                              \
    do {                                                                                           \
        cublasStatus_t sl__s = (expr);                                                             \
        if (sl__s != CUBLAS_STATUS_SUCCESS)                                                        \
            return sl_err_set((err), SL_ECUDA, "%s at %s:%d: %s", #expr, __FILE__, __LINE__,       \
                              (api)->status_string(sl__s));                                        \
    } while (0)

#endif
