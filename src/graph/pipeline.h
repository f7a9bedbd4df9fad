/* SPDX-License-Identifier: Apache-2.0 */
/* What the graph part offers the parts above it (the pipeline text, the iterator) beyond the
 * public API: a pipeline's own error, the batches handed out, the checkpoint after a given batch,
 * its registered sources and the thread-count rule. Everything else about a pipeline's insides
 * stays in pipeline_int.h, which no other part includes (scripts/check-layers). */
#ifndef SLUICE_GRAPH_PIPELINE_H
#define SLUICE_GRAPH_PIPELINE_H

#include "sluice/pipeline.h"

#include "operator/op.h" /* sl__val */

#include <stddef.h>
#include <stdint.h>

/* The pipeline's own error (the one sl_pipeline_errmsg shows). */
const sl_err *sl__pipeline_err(const sl_pipeline *p);

/* Leaves err in the pipeline's own error (a failure found above the graph: the pipeline text). */
void sl__pipeline_set_err(sl_pipeline *p, const sl_err *err);

/* Gives the op the argument's value as it is (a copy), where sl_pipeline_op_arg reads it from
 * text: the pipeline text's evaluator hands its values over this way. */
sl_status sl__pipeline_op_arg_val(sl_pipeline_op *op, const char *name, const sl__val *value);

/* The name of the argument that the last sl_pipeline_op_end failure is about (unknown, of the
 * wrong type or value, per-sample where it may not be), or NULL when it is about none. */
const char *sl__pipeline_failed_arg(const sl_pipeline *p);

/* Batches handed to the consumer so far. */
int64_t sl__pipeline_taken(const sl_pipeline *p);

/* Reader ops in the graph. */
int sl__pipeline_num_readers(const sl_pipeline *p);

/* The sources registered with sl_pipeline_add_source, in order: their count, and the name of the
 * i-th (NULL past the end). */
int sl__pipeline_num_sources(const sl_pipeline *p);
const char *sl__pipeline_source_name(const sl_pipeline *p, int i);

/* sl_pipeline_default_threads's rule for a process that may run on `cpus` CPUs:
 * max(1, min(64, cpus / pipelines - 1)), pipelines < 1 counting as 1. */
int sl__pipeline_threads_for(int cpus, int pipelines);

/* The snapshot taken before batch seq (seq from taken - 2 to taken): a checkpoint after seq
 * batches (pipeline_checkpoint.c). */
sl_status sl__pipeline_checkpoint_save_at(sl_pipeline *p, int64_t seq, void **bytes, size_t *size);

#endif
