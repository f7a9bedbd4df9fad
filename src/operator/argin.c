/* SPDX-License-Identifier: Apache-2.0 */
/* Per-sample argument inputs: converts sample i of an argument input list to doubles. */
#include "operator/argin.h"

#include "operator/dtype_conv.h"

#include <string.h>

int sl__argin_values(const sl__op_io *io, int node, int i, double *out, int max) {
    if (node < 0 || node >= io->num_arg_inputs || !io->arg_in) return -1;
    const sl_tlist *l = io->arg_in[node];
    if (l->device.kind != SL_DEVICE_CPU || i < 0 || i >= l->count) return -1;
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(l, i) / sl_dtype_size(l->dtype));
    for (int64_t k = 0; k < n && k < max; k++)
        out[k] = sl__dtype_conv_load(l->data[i], l->dtype, k);
    return (int)n;
}
