/* SPDX-License-Identifier: Apache-2.0 */
/* SL_CUDA_TRY: runs a CUDA runtime call and, on failure, records "expr at file:line: reason" in an
 * sl_err and returns SL_ECUDA from the enclosing function (SL_CUBLAS_TRY, cublas_dl.h, does the
 * same for cuBLAS calls). For CUDA-aware files only. */
#ifndef SLUICE_CORE_CUDA_CHECK_H
#define SLUICE_CORE_CUDA_CHECK_H

#include "sluice/status.h"

#include <cuda_runtime.h>

#define SL_CUDA_TRY(err, expr)                                                                     \
    do {                                                                                           \
        cudaError_t sl__e = (expr);                                                                \
        if (sl__e != cudaSuccess) {                                                                \
            (void)cudaGetLastError();                                                              \
            return sl_err_set((err), SL_ECUDA, "%s at %s:%d: %s", #expr, __FILE__, __LINE__,       \
                              cudaGetErrorString(sl__e));                                          \
        }                                                                                          \
    } while (0)

#endif
