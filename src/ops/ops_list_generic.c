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
extern const sl__op_def sl__red_sum_op;
extern const sl__op_def sl__red_mean_op;
extern const sl__op_def sl__red_min_op;
extern const sl__op_def sl__red_max_op;
extern const sl__op_def sl__red_mean_square_op;
extern const sl__op_def sl__red_rms_op;
extern const sl__op_def sl__red_variance_op;
extern const sl__op_def sl__red_std_dev_op;

const sl__op_def *const sl__generic_ops[] = {
    &sl__slice_op,
    &sl__shapes_op,
    &sl__cast_like_op,
    &sl__reinterpret_op,
    &sl__constant_op,
    &sl__red_sum_op,
    &sl__red_mean_op,
    &sl__red_min_op,
    &sl__red_max_op,
    &sl__red_mean_square_op,
    &sl__red_rms_op,
    &sl__red_variance_op,
    &sl__red_std_dev_op,
    NULL,
};
