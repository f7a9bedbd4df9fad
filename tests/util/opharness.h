/* SPDX-License-Identifier: Apache-2.0 */
/* A small stand-in for the executor, for operator tests: builds an op instance from "name=value"
 * argument strings, then runs one batch through setup, run_cpu (per sample, on a thread pool when
 * threads > 1) and destroy. Per-sample argument inputs are written "name=@k" (io->arg_in[k]). */
#ifndef SLUICE_TEST_OPHARNESS_H
#define SLUICE_TEST_OPHARNESS_H

#include "operator/op.h"

#define OPH_MAX_OUT 4

typedef struct oph {
    const sl__op_def *def;
    sl__args args;
    void *state;
    int threads;
    int num_outputs;
    sl_tlist out[OPH_MAX_OUT];
    struct sl__pool *pool;
    int64_t iteration;
    uint64_t seed;
    const int *run_index; /* the last batch's run: setup's io->run_index (NULL: every sample in */
    int run_count;        /* order), valid until the next oph_run; run_count samples */
} oph;

/* argv: NULL-terminated "name=value" strings (value in pipeline syntax). */
sl_status oph_create(oph *h, const char *opname, const char *const *argv, int threads, int batch,
                     uint64_t seed, sl_err *err);
/* One batch: in[num_in], arg_in[num_arg] (may be NULL), keys (may be NULL). Outputs in h->out. */
sl_status oph_run(oph *h, int batch, sl_tlist *const *in, int num_in, sl_tlist *const *arg_in,
                  int num_arg, const char *const *keys, int64_t sample_base, sl_err *err);
void oph_destroy(oph *h);

/* Helpers: a list of count byte records (each its own external pointer, shape (len,)). */
sl_status oph_bytes(sl_tlist *l, int count, const void *const *data, const size_t *len,
                    sl_err *err);
/* Reads a whole file (malloc'd); NULL on failure. */
void *oph_read_file(const char *path, size_t *len);

#endif
