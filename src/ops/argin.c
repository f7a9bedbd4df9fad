/* Per-sample argument inputs: converts sample i of an argument input list to doubles. */
#include "ops/argin.h"

#include "core/half.h"

#include <string.h>

static double elem(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_U8:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[k] != 0;
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[k];
    case SL_DTYPE_I32:
        return ((const int32_t *)p)[k];
    case SL_DTYPE_I64:
        return (double)((const int64_t *)p)[k];
    case SL_DTYPE_F16:
        return sl__f16_to_f32(((const uint16_t *)p)[k]);
    case SL_DTYPE_BF16:
        return sl__bf16_to_f32(((const uint16_t *)p)[k]);
    case SL_DTYPE_F32:
        return ((const float *)p)[k];
    case SL_DTYPE_F64:
        return ((const double *)p)[k];
    default:
        return 0;
    }
}

int sl__argin_values(const sl__op_io *io, int node, int i, double *out, int max) {
    if (node < 0 || node >= io->num_arg_inputs || !io->arg_in) return -1;
    const sl_tlist *l = io->arg_in[node];
    if (l->device.kind != SL_DEVICE_CPU || i < 0 || i >= l->count) return -1;
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(l, i) / sl_dtype_size(l->dtype));
    for (int64_t k = 0; k < n && k < max; k++) out[k] = elem(l->data[i], l->dtype, k);
    return (int)n;
}
