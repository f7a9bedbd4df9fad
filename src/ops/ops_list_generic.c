/* SPDX-License-Identifier: Apache-2.0 */
/* The operators listed for the op table (registry.c joins the lists): slicing, shapes and types,
 * reductions, math, noise and the other augmentations. Each lives in its own file here. */
#include "ops/registry.h"

#include <stddef.h>

extern const sl__op_def sl__slice_op;
extern const sl__op_def sl__shapes_op;
extern const sl__op_def sl__cast_like_op;
extern const sl__op_def sl__reinterpret_op;
extern const sl__op_def sl__constant_op;

const sl__op_def *const sl__generic_ops[] = {
    &sl__slice_op, &sl__shapes_op, &sl__cast_like_op, &sl__reinterpret_op, &sl__constant_op, NULL,
};
