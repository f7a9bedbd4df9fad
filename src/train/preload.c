/* SPDX-License-Identifier: Apache-2.0 */
/* sl_train_preload (sluice/train.h): the GPU model's libraries loaded ahead of its first use. */
#include "sluice/train.h"

#include "train/mlp.h"

void sl_train_preload(void) {
#ifdef SLUICE_HAVE_CUDA
    sl__cuda_blas_preload();
#endif
}

sl_status sl_train_preload_wait(sl_err *err) {
#ifdef SLUICE_HAVE_CUDA
    return sl__cuda_blas_load(err);
#else
    (void)err;
    return SL_OK;
#endif
}
