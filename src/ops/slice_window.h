/* SPDX-License-Identifier: Apache-2.0 */
/* slice's window arguments and rounding (slice.c), for decoders.image_slice: the same axes,
 * axis_names, normalized_anchor / normalized_shape, anchor and shape inputs and start / end /
 * shape arguments, so the two ops cut the same windows. C only. */
#ifndef SLUICE_OPS_SLICE_WINDOW_H
#define SLUICE_OPS_SLICE_WINDOW_H

#include "operator/op.h"

/* A window state from a's slice arguments (ones the op lacks take slice's defaults); opname
 * names the op in messages. */
sl_status sl__slice_window_create(const sl__args *a, const char *opname, void **state, sl_err *err);
void sl__slice_window_destroy(void *state);
/* Refuses a batch whose window comes both as inputs and as arguments, or half as inputs. */
sl_status sl__slice_window_check(void *state, const sl__op_io *io, sl_err *err);
/* Sample i's window over a shape (ndim dims, layout): anchor and extent per dimension. */
sl_status sl__slice_window_sample(void *state, const sl__op_io *io, int i, const int64_t *shape,
                                  int ndim, const char *layout, int64_t *anchor, int64_t *extent,
                                  sl_err *err);

#endif
