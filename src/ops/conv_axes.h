/* SPDX-License-Identifier: Apache-2.0 */
/* The spatial axes of a convolution op's input (gaussian_blur, laplacian), as DALI's convolution
 * ops decide them from the layout (conv_axes.c). */
#ifndef SLUICE_OPS_CONV_AXES_H
#define SLUICE_OPS_CONV_AXES_H

#include "sluice/status.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The spatial axes [*first, *first + *count) of an input of ndim dims with this layout: a
 * layout-less input of 1 to max dims is all spatial; otherwise a last 'C' (channels) and up to
 * two leading 'F' or 'C' (frames, channels first) are not spatial and the 1 to max axes between
 * them are; another 'C' or 'F' is an error. seq: the input is one frame of a sequence (the
 * executor runs sequences frame by frame), so the messages show the sequence's layout. Errors
 * name op and the layout and end with DALI's own sentence. */
sl_status sl__conv_axes(const char *op, const char *layout, int ndim, bool seq, int max, int *first,
                        int *count, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
