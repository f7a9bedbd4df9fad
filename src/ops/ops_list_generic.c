/* SPDX-License-Identifier: Apache-2.0 */
/* The operators listed for the op table (registry.c joins the lists): slicing, shapes and types,
 * reductions, math, noise and the other augmentations. Each lives in its own file here. */
#include "ops/registry.h"

#include <stddef.h>

extern const sl__op_def sl__slice_op;
extern const sl__op_def sl__image_slice_op;
extern const sl__op_def sl__image_crop_op;
extern const sl__op_def sl__shapes_op;
extern const sl__op_def sl__get_property_op;
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
extern const sl__op_def sl__math_sqrt_op;
extern const sl__op_def sl__math_rsqrt_op;
extern const sl__op_def sl__math_cbrt_op;
extern const sl__op_def sl__math_exp_op;
extern const sl__op_def sl__math_log_op;
extern const sl__op_def sl__math_log2_op;
extern const sl__op_def sl__math_log10_op;
extern const sl__op_def sl__math_sin_op;
extern const sl__op_def sl__math_cos_op;
extern const sl__op_def sl__math_tan_op;
extern const sl__op_def sl__math_asin_op;
extern const sl__op_def sl__math_acos_op;
extern const sl__op_def sl__math_atan_op;
extern const sl__op_def sl__math_sinh_op;
extern const sl__op_def sl__math_cosh_op;
extern const sl__op_def sl__math_tanh_op;
extern const sl__op_def sl__math_asinh_op;
extern const sl__op_def sl__math_acosh_op;
extern const sl__op_def sl__math_atanh_op;
extern const sl__op_def sl__math_fabs_op;
extern const sl__op_def sl__math_floor_op;
extern const sl__op_def sl__math_ceil_op;
extern const sl__op_def sl__math_abs_op;
extern const sl__op_def sl__math_pow_op;
extern const sl__op_def sl__math_fpow_op;
extern const sl__op_def sl__math_atan2_op;
extern const sl__op_def sl__math_min_op;
extern const sl__op_def sl__math_max_op;
extern const sl__op_def sl__math_clamp_op;
extern const sl__op_def sl__noise_gaussian_op;
extern const sl__op_def sl__noise_salt_and_pepper_op;
extern const sl__op_def sl__noise_shot_op;
extern const sl__op_def sl__random_choice_op;
extern const sl__op_def sl__random_beta_op;
extern const sl__op_def sl__erase_op;
extern const sl__op_def sl__tr_translation_op;
extern const sl__op_def sl__tr_scale_op;
extern const sl__op_def sl__tr_rotation_op;
extern const sl__op_def sl__tr_shear_op;
extern const sl__op_def sl__tr_crop_op;
extern const sl__op_def sl__tr_combine_op;
extern const sl__op_def sl__coord_transform_op;
extern const sl__op_def sl__water_op;
extern const sl__op_def sl__sphere_op;
extern const sl__op_def sl__jitter_op;
extern const sl__op_def sl__color_space_conversion_op;
extern const sl__op_def sl__paste_op;
extern const sl__op_def sl__laplacian_op;
extern const sl__op_def sl__jpeg_compression_distortion_op;
extern const sl__op_def sl__python_function_op;
extern const sl__op_def sl__torch_python_function_op;
extern const sl__op_def sl__dl_tensor_python_function_op;
extern const sl__op_def sl__filter_op;
extern const sl__op_def sl__equalize_op;
extern const sl__op_def sl__clahe_op;
extern const sl__op_def sl__peek_image_shape_op;
extern const sl__op_def sl__copy_op;
extern const sl__op_def sl__element_extract_op;
extern const sl__op_def sl__sequence_rearrange_op;
extern const sl__op_def sl__io_file_read_op;
extern const sl__op_def sl__decode_numpy_op;
extern const sl__op_def sl__grid_mask_op;
extern const sl__op_def sl__permute_batch_op;
extern const sl__op_def sl__batch_permutation_op;
extern const sl__op_def sl__lookup_table_op;
extern const sl__op_def sl__zeros_op;
extern const sl__op_def sl__ones_op;
extern const sl__op_def sl__zeros_like_op;
extern const sl__op_def sl__ones_like_op;
extern const sl__op_def sl__full_op;
extern const sl__op_def sl__full_like_op;

const sl__op_def *const sl__generic_ops[] = {
    &sl__slice_op,
    &sl__image_slice_op,
    &sl__image_crop_op,
    &sl__shapes_op,
    &sl__get_property_op,
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
    &sl__math_sqrt_op,
    &sl__math_rsqrt_op,
    &sl__math_cbrt_op,
    &sl__math_exp_op,
    &sl__math_log_op,
    &sl__math_log2_op,
    &sl__math_log10_op,
    &sl__math_sin_op,
    &sl__math_cos_op,
    &sl__math_tan_op,
    &sl__math_asin_op,
    &sl__math_acos_op,
    &sl__math_atan_op,
    &sl__math_sinh_op,
    &sl__math_cosh_op,
    &sl__math_tanh_op,
    &sl__math_asinh_op,
    &sl__math_acosh_op,
    &sl__math_atanh_op,
    &sl__math_fabs_op,
    &sl__math_floor_op,
    &sl__math_ceil_op,
    &sl__math_abs_op,
    &sl__math_pow_op,
    &sl__math_fpow_op,
    &sl__math_atan2_op,
    &sl__math_min_op,
    &sl__math_max_op,
    &sl__math_clamp_op,
    &sl__noise_gaussian_op,
    &sl__noise_salt_and_pepper_op,
    &sl__noise_shot_op,
    &sl__random_choice_op,
    &sl__random_beta_op,
    &sl__erase_op,
    &sl__tr_translation_op,
    &sl__tr_scale_op,
    &sl__tr_rotation_op,
    &sl__tr_shear_op,
    &sl__tr_crop_op,
    &sl__tr_combine_op,
    &sl__coord_transform_op,
    &sl__water_op,
    &sl__sphere_op,
    &sl__jitter_op,
    &sl__color_space_conversion_op,
    &sl__paste_op,
    &sl__laplacian_op,
    &sl__jpeg_compression_distortion_op,
    &sl__python_function_op,
    &sl__torch_python_function_op,
    &sl__dl_tensor_python_function_op,
    &sl__filter_op,
    &sl__equalize_op,
    &sl__clahe_op,
    &sl__peek_image_shape_op,
    &sl__copy_op,
    &sl__element_extract_op,
    &sl__sequence_rearrange_op,
    &sl__io_file_read_op,
    &sl__decode_numpy_op,
    &sl__grid_mask_op,
    &sl__permute_batch_op,
    &sl__batch_permutation_op,
    &sl__lookup_table_op,
    &sl__zeros_op,
    &sl__ones_op,
    &sl__zeros_like_op,
    &sl__ones_like_op,
    &sl__full_op,
    &sl__full_like_op,
    NULL,
};
