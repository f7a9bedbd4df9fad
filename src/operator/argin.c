/* SPDX-License-Identifier: Apache-2.0 */
/* Per-sample argument inputs: converts sample i of an argument input list to doubles, and reads a
 * list argument's values, or an enum argument's choice, for one sample whether it was given as a
 * literal or as an op output. */
#include "operator/argin.h"

#include "operator/dtype_conv.h"

#include "core/log.h"

#include <math.h>
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

/* sample i's values of argument name as doubles (whole numbers when whole) */
static sl_status sample_values(const sl__args *a, const sl__op_io *io, const char *opname,
                               const char *name, int i, bool whole, double *out, int max, int *n,
                               sl_err *err) {
    *n = 0;
    int node = sl__args_node(a, name);
    int got;
    if (node >= 0) {
        got = sl__argin_values(io, node, i, out, max);
        if (got < 0)
            return sl__op_fail(err, SL_EINVAL, io, i, opname,
                               "argument %s: the per-sample input is not on the CPU", name);
    } else if (whole) {
        const int64_t *v;
        got = sl__args_ints(a, name, &v);
        for (int k = 0; k < got && k < max; k++) out[k] = (double)v[k];
    } else {
        const double *v;
        got = sl__args_floats(a, name, &v);
        for (int k = 0; k < got && k < max; k++) out[k] = v[k];
    }
    if (got > max)
        return sl__op_fail(err, SL_EINVAL, io, i, opname, "argument %s has %d values (at most %d)",
                           name, got, max);
    for (int k = 0; k < got && whole; k++)
        if (!(out[k] == floor(out[k]) && fabs(out[k]) < 0x1p62))
            return sl__op_fail(err, SL_EINVAL, io, i, opname,
                               "argument %s: value %d is %g, not a whole number", name, k, out[k]);
    *n = got;
    return SL_OK;
}

sl_status sl__args_sample_ints(const sl__args *a, const sl__op_io *io, const char *opname,
                               const char *name, int i, int64_t *out, int max, int *n,
                               sl_err *err) {
    double v[SL_MAX_DIMS * 4];
    if (max > (int)(sizeof v / sizeof *v)) max = (int)(sizeof v / sizeof *v);
    SL_TRY(sample_values(a, io, opname, name, i, true, v, max, n, err));
    for (int k = 0; k < *n; k++) out[k] = (int64_t)v[k];
    return SL_OK;
}

sl_status sl__args_sample_floats(const sl__args *a, const sl__op_io *io, const char *opname,
                                 const char *name, int i, double *out, int max, int *n,
                                 sl_err *err) {
    return sample_values(a, io, opname, name, i, false, out, max, n, err);
}

sl_status sl__args_sample_enum(const sl__args *a, const sl__op_io *io, const char *opname,
                               const char *name, int i, const char **out, sl_err *err) {
    *out = NULL;
    int node = sl__args_node(a, name);
    if (node < 0) {
        *out = sl__args_str(a, name);
        return SL_OK;
    }
    const sl__arg_schema *sc = NULL;
    for (int k = 0; a->op->args && a->op->args[k].name; k++)
        if (!strcmp(a->op->args[k].name, name)) sc = &a->op->args[k];
    SL_ASSERT(sc && sc->type == SL_ARG_ENUM);
    const sl_tlist *l = node < io->num_arg_inputs && io->arg_in ? io->arg_in[node] : NULL;
    if (l && (sl_dtype_is_float(l->dtype) || l->dtype == SL_DTYPE_BOOL))
        return sl__op_fail(err, SL_EINVAL, io, i, opname,
                           "argument %s: the per-sample input is %s, not DALIInterpType (or an "
                           "integer holding DALI's code)",
                           name, sl_dtype_name(l->dtype));
    double v[2];
    int n = sl__argin_values(io, node, i, v, 2);
    if (n < 0)
        return sl__op_fail(err, SL_EINVAL, io, i, opname,
                           "argument %s: the per-sample input is not on the CPU", name);
    if (n != 1)
        return sl__op_fail(err, SL_EINVAL, io, i, opname,
                           "argument %s: the per-sample value must be one value, not %d", name, n);
    const char *s = v[0] >= 0 && v[0] < 1000 ? sl__enum_code_name(sc->choices, (int)v[0]) : NULL;
    if (!s)
        return sl__op_fail(err, SL_EINVAL, io, i, opname,
                           "argument %s: %.0f is no interpolation type (DALI's codes: INTERP_NN 0, "
                           "INTERP_LINEAR 1, INTERP_CUBIC 2, INTERP_LANCZOS3 3, INTERP_TRIANGULAR "
                           "4, INTERP_GAUSSIAN 5)",
                           name, v[0]);
    if (!sl__enum_choice_ok(sc->choices, s))
        return sl__op_fail(err, SL_EINVAL, io, i, opname, "argument %s: %s is not one of %s", name,
                           s, sc->choices);
    *out = s;
    return SL_OK;
}
