/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing NumPy .npy files (version 1/2, little-endian, C order) for golden tests. */
#ifndef SLUICE_TEST_NPY_H
#define SLUICE_TEST_NPY_H

#include "sluice/tensor.h"

/* Loads path into a newly allocated host tensor (free with sl_tensor_free). */
sl_status npy_load(const char *path, sl_tensor *out, sl_err *err);

#endif
