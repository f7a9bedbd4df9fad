/* SPDX-License-Identifier: Apache-2.0 */
/* Reading per-sample argument inputs (an argument given as another op's output, e.g.
 * mirror=coin_flip()): sample i of io->arg_in[node], converted to double. */
#ifndef SLUICE_OPERATOR_ARGIN_H
#define SLUICE_OPERATOR_ARGIN_H

#include "operator/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Up to max values of sample i of arg input node, as doubles; returns how many the sample has
 * (may exceed max) or -1 when node is out of range or the input is not on the CPU. */
int sl__argin_values(const sl__op_io *io, int node, int i, double *out, int max);

#ifdef __cplusplus
}
#endif
#endif
