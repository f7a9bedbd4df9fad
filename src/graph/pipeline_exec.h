/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's executor (pipeline_exec.c) as sl_pipeline_build hands it a graph. */
#ifndef SLUICE_PIPELINE_PIPELINE_EXEC_H
#define SLUICE_PIPELINE_PIPELINE_EXEC_H

#include "sluice/pipeline.h"

/* Sets the stages up for a built graph (its op instances created, a checkpoint applied): the
 * thread pool, the batch slots, the snapshot ring and the queues, on a CUDA pipeline with GPU work
 * the GPU stage's stream; then starts the stage threads. */
sl_status sl__pipeline_exec_start(sl_pipeline *p);
/* max_batch_bytes as sluice/pipeline.h says, and one batch's bookkeeping checked against it. */
sl_status sl__pipeline_resolve_batch_limit(sl_pipeline *p);

#endif
