/* SPDX-License-Identifier: Apache-2.0 */
/* The operators, listed for the op table (registry.c joins the lists): the readers, then the image
 * and generic operators (and external_source). Each lives in its own file here. */
#include "ops/registry.h"

#include <stddef.h>

extern const sl__op_def sl__reader_caffe_op;
extern const sl__op_def sl__reader_coco_op;
extern const sl__op_def sl__reader_caffe2_op;
extern const sl__op_def sl__reader_file_op;
extern const sl__op_def sl__reader_mnist_op;
extern const sl__op_def sl__reader_numpy_op;
extern const sl__op_def sl__reader_webdataset_op;
extern const sl__op_def sl__reader_tfrecord_op;
extern const sl__op_def sl__reader_nemo_asr_op;
extern const sl__op_def sl__reader_mxnet_op;
extern const sl__op_def sl__reader_sequence_op;

/* one reader a line */
// clang-format off
const sl__op_def *const sl__reader_ops[] = {
    &sl__reader_caffe_op,
    &sl__reader_coco_op,
    &sl__reader_caffe2_op,
    &sl__reader_file_op,
    &sl__reader_mnist_op,
    &sl__reader_numpy_op,
    &sl__reader_webdataset_op,
    &sl__reader_tfrecord_op,
    &sl__reader_nemo_asr_op,
    &sl__reader_mxnet_op,
    &sl__reader_sequence_op,
    NULL,
};
// clang-format on

extern const sl__op_def sl__decode_image_op;
extern const sl__op_def sl__crop_mirror_normalize_op;
extern const sl__op_def sl__reshape_op;
extern const sl__op_def sl__squeeze_op;
extern const sl__op_def sl__expand_dims_op;
extern const sl__op_def sl__tensor_subscript_op;
extern const sl__op_def sl__one_hot_op;
extern const sl__op_def sl__cast_op;
extern const sl__op_def sl__flip_op;
extern const sl__op_def sl__coin_flip_op;
extern const sl__op_def sl__uniform_op;
extern const sl__op_def sl__normal_op;
extern const sl__op_def sl__resize_op;
extern const sl__op_def sl__resize_crop_mirror_op;
extern const sl__op_def sl__fast_resize_crop_mirror_op;
extern const sl__op_def sl__tensor_resize_op;
extern const sl__op_def sl__warp_affine_op;
extern const sl__op_def sl__warp_perspective_op;
extern const sl__op_def sl__power_spectrum_op;
extern const sl__op_def sl__per_frame_op;
extern const sl__op_def sl__rotate_op;
extern const sl__op_def sl__gaussian_blur_op;
extern const sl__op_def sl__pad_op;
extern const sl__op_def sl__random_resized_crop_op;
extern const sl__op_def sl__image_random_crop_op;
extern const sl__op_def sl__external_source_op;
extern const sl__op_def sl__brightness_contrast_op;
extern const sl__op_def sl__color_twist_op;
extern const sl__op_def sl__hsv_op;
extern const sl__op_def sl__hue_op;
extern const sl__op_def sl__saturation_op;
extern const sl__op_def sl__brightness_op;
extern const sl__op_def sl__contrast_op;
extern const sl__op_def sl__transpose_op;
extern const sl__op_def sl__arithmetic_op;
extern const sl__op_def sl__cond_split_op;
extern const sl__op_def sl__cond_merge_op;
extern const sl__op_def sl__cond_not_op;
extern const sl__op_def sl__normalize_op;
extern const sl__op_def sl__crop_op;
extern const sl__op_def sl__cat_op;
extern const sl__op_def sl__stack_op;
extern const sl__op_def sl__decode_audio_op;
extern const sl__op_def sl__audio_resample_op;
extern const sl__op_def sl__nonsilent_region_op;
extern const sl__op_def sl__preemphasis_filter_op;
extern const sl__op_def sl__spectrogram_op;
extern const sl__op_def sl__mel_filter_bank_op;
extern const sl__op_def sl__to_decibels_op;
extern const sl__op_def sl__mfcc_op;
extern const sl__op_def sl__bb_flip_op;
extern const sl__op_def sl__box_encoder_op;
extern const sl__op_def sl__random_bbox_crop_op;
extern const sl__op_def sl__bbox_paste_op;
extern const sl__op_def sl__coord_flip_op;
extern const sl__op_def sl__roi_random_crop_op;
extern const sl__op_def sl__random_crop_generator_op;
extern const sl__op_def sl__random_mask_pixel_op;
extern const sl__op_def sl__select_masks_op;
extern const sl__op_def sl__multi_paste_op;
extern const sl__op_def sl__random_object_bbox_op;

const sl__op_def *const sl__image_ops[] = {
    &sl__decode_image_op,
    &sl__crop_mirror_normalize_op,
    &sl__reshape_op,
    &sl__squeeze_op,
    &sl__expand_dims_op,
    &sl__tensor_subscript_op,
    &sl__one_hot_op,
    &sl__cast_op,
    &sl__flip_op,
    &sl__coin_flip_op,
    &sl__uniform_op,
    &sl__normal_op,
    &sl__resize_op,
    &sl__resize_crop_mirror_op,
    &sl__fast_resize_crop_mirror_op,
    &sl__tensor_resize_op,
    &sl__warp_affine_op,
    &sl__warp_perspective_op,
    &sl__power_spectrum_op,
    &sl__per_frame_op,
    &sl__rotate_op,
    &sl__gaussian_blur_op,
    &sl__pad_op,
    &sl__random_resized_crop_op,
    &sl__image_random_crop_op,
    &sl__external_source_op,
    &sl__brightness_contrast_op,
    &sl__color_twist_op,
    &sl__hsv_op,
    &sl__hue_op,
    &sl__saturation_op,
    &sl__brightness_op,
    &sl__contrast_op,
    &sl__transpose_op,
    &sl__arithmetic_op,
    &sl__cond_split_op,
    &sl__cond_merge_op,
    &sl__cond_not_op,
    &sl__normalize_op,
    &sl__crop_op,
    &sl__cat_op,
    &sl__stack_op,
    &sl__decode_audio_op,
    &sl__audio_resample_op,
    &sl__nonsilent_region_op,
    &sl__preemphasis_filter_op,
    &sl__spectrogram_op,
    &sl__mel_filter_bank_op,
    &sl__to_decibels_op,
    &sl__mfcc_op,
    &sl__bb_flip_op,
    &sl__box_encoder_op,
    &sl__random_bbox_crop_op,
    &sl__bbox_paste_op,
    &sl__coord_flip_op,
    &sl__roi_random_crop_op,
    &sl__random_crop_generator_op,
    &sl__random_mask_pixel_op,
    &sl__select_masks_op,
    &sl__multi_paste_op,
    &sl__random_object_bbox_op,
    NULL,
};
