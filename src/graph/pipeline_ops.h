/* SPDX-License-Identifier: Apache-2.0 */
/* The op instances of a graph being built (pipeline_ops.c). */
#ifndef SLUICE_PIPELINE_PIPELINE_OPS_H
#define SLUICE_PIPELINE_PIPELINE_OPS_H

#include "sluice/pipeline.h"

/* Creates every op instance of p's graph, in order; the first error that fails the build is p's
 * (an op's error that DALI gives when the op runs is kept with the op: sl__opinst.at_run). */
sl_status sl__pipeline_create_ops(sl_pipeline *p);

#endif
