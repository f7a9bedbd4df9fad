/* SPDX-License-Identifier: Apache-2.0 */
/* Reading per-sample argument inputs (an argument given as another op's output, e.g.
 * mirror=coin_flip(), or a tensor such as types.Constant([6, 7])): sample i of io->arg_in[node],
 * converted to double; and, for a list argument that may be either, one sample's values whatever
 * form the user gave (the literal list, the same for every sample, or the sample's tensor); and an
 * enum argument's choice for one sample (interp_type=fn.random.choice([...]) picks the filter per
 * sample). */
#ifndef SLUICE_OPERATOR_ARGIN_H
#define SLUICE_OPERATOR_ARGIN_H

#include "operator/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Up to max values of sample i of arg input node, as doubles; returns how many the sample has
 * (may exceed max) or -1 when node is out of range or the input is not on the CPU. */
int sl__argin_values(const sl__op_io *io, int node, int i, double *out, int max);

/* The values of list argument `name` (SL_ARG_INTS) for sample i of the batch: the sample's
 * tensor where the argument is an op output, else the literal list (None: no values). *n = how
 * many (at most max: more is an error naming the op, the argument and the sample, as is a
 * value that is not a whole number). */
sl_status sl__args_sample_ints(const sl__args *a, const sl__op_io *io, const char *opname,
                               const char *name, int i, int64_t *out, int max, int *n, sl_err *err);
/* The same for SL_ARG_FLOATS. */
sl_status sl__args_sample_floats(const sl__args *a, const sl__op_io *io, const char *opname,
                                 const char *name, int i, double *out, int max, int *n,
                                 sl_err *err);

/* The value of enum argument `name` (SL_ARG_ENUM) for sample i: the literal's name, the same for
 * every sample, or, where the argument is an op output, the name its sample codes: one value of
 * DALI's code (a DALIInterpType tensor, fn.random.choice over interpolation types, or an integer
 * one), checked against the schema's choices; *out = NULL where the literal is None. An error
 * names the op, the argument and the sample. */
sl_status sl__args_sample_enum(const sl__args *a, const sl__op_io *io, const char *opname,
                               const char *name, int i, const char **out, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
