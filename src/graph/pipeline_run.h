/* SPDX-License-Identifier: Apache-2.0 */
/* One op's run_cpu over a batch (pipeline_run.c), for the executor's CPU stage. */
#ifndef SLUICE_GRAPH_PIPELINE_RUN_H
#define SLUICE_GRAPH_PIPELINE_RUN_H

#include "graph/pipeline_int.h"

/* Runs op's run_cpu over io's n samples (those of io->run_index where setup chose some; with
 * io->batch_job, the batch job beside them): on pool, or on the calling thread while the op's
 * whole batch is lighter than waking the pool. The error of the lowest failing sample either
 * way, as the pool gives. */
sl_status sl__run_cpu_batch(sl__pool *pool, sl__opinst *op, sl__op_io *io, int64_t n, sl_err *err);

#endif
