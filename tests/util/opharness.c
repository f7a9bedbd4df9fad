/* SPDX-License-Identifier: Apache-2.0 */
/* The operator test harness: create / setup / run_cpu / destroy for one op over one batch. */
#include "opharness.h"

#include "core/log.h"
#include "core/pool.h"
#include "ops/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sl_status oph_create(oph *h, const char *opname, const char *const *argv, int threads, int batch,
                     uint64_t seed, sl_err *err) {
    memset(h, 0, sizeof *h);
    h->def = sl__registry_find(opname);
    if (!h->def) return sl_err_set(err, SL_ENOENT, "no operator %s", opname);
    int n = 0;
    while (argv && argv[n]) n++;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    sl__val *vals = calloc((size_t)n + 1, sizeof *vals);
    char **bufs = calloc((size_t)n + 1, sizeof *bufs);
    sl_status st = names && vals && bufs ? SL_OK : sl_err_set(err, SL_ENOMEM, "out of memory");
    for (int i = 0; i < n && st == SL_OK; i++) {
        bufs[i] = strdup(argv[i]);
        char *eq = strchr(bufs[i], '=');
        if (!eq) {
            st = sl_err_set(err, SL_EINVAL, "argument %s lacks '='", argv[i]);
            break;
        }
        *eq = '\0';
        names[i] = bufs[i];
        if (eq[1] == '@') {
            vals[i].kind = SL_VAL_NODE;
            vals[i].node = atoi(eq + 2);
        } else {
            st = sl__val_parse(eq + 1, &vals[i], err);
        }
    }
    if (st == SL_OK) st = sl__args_build(h->def, n, names, vals, &h->args, err);
    for (int i = 0; i < n; i++) {
        sl__val_free(&vals[i]);
        free(bufs[i]);
    }
    free(names);
    free(vals);
    free(bufs);
    if (st != SL_OK) return st;
    h->threads = threads < 1 ? 1 : threads;
    h->seed = seed;
    h->args.num_inputs = h->def->min_inputs; /* the inputs come with oph_run: the fewest here */
    h->num_outputs = h->def->num_outputs ? h->def->num_outputs(&h->args) : 1;
    sl__op_init init;
    memset(&init, 0, sizeof init);
    init.name = opname;
    init.device = sl_cpu();
    init.batch_size = batch;
    init.threads = h->threads;
    init.seed = seed;
    if (h->def->create) {
        st = h->def->create(&h->args, &init, &h->state, err);
        if (st != SL_OK) {
            sl__args_free(&h->args);
            return st;
        }
    }
    if (h->threads > 1) {
        st = sl__pool_create(h->threads, &h->pool, err);
        if (st != SL_OK) oph_destroy(h);
    }
    return st;
}

typedef struct {
    oph *h;
    sl__op_io *io;
} run_ctx;

static sl_status run_one(void *ctx, int64_t i, int worker, sl_err *err) {
    run_ctx *c = ctx;
    int k = c->io->run_index ? c->io->run_index[i] : (int)i;
    return c->h->def->run_cpu(c->h->state, c->io, k, worker, err);
}

sl_status oph_run(oph *h, int batch, sl_tlist *const *in, int num_in, sl_tlist *const *arg_in,
                  int num_arg, const char *const *keys, int64_t sample_base, sl_err *err) {
    sl_tlist *outs[OPH_MAX_OUT];
    for (int i = 0; i < OPH_MAX_OUT; i++) outs[i] = &h->out[i];
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = batch;
    io.num_inputs = num_in;
    io.in = in;
    io.num_arg_inputs = num_arg;
    io.arg_in = arg_in;
    io.num_outputs = h->num_outputs;
    io.out = outs;
    io.keys = keys;
    io.seed = h->seed;
    io.sample_base = sample_base;
    io.iteration = h->iteration++;
    io.device = sl_cpu();
    SL_TRY(h->def->setup(h->state, &io, err));
    /* as the executor: run_cpu on the samples setup lists, in its order, or on all of them */
    int n = io.run_index ? io.run_count : batch;
    h->run_index = io.run_index;
    h->run_count = n;
    if (!h->def->run_cpu) return SL_OK;
    if (io.batch_job) SL_TRY(h->def->run_cpu(h->state, &io, -1, -1, err));
    run_ctx c = {h, &io};
    if (h->pool) return sl__pool_parallel_for(h->pool, n, run_one, &c, err);
    for (int i = 0; i < n; i++) SL_TRY(run_one(&c, i, 0, err));
    return SL_OK;
}

void oph_destroy(oph *h) {
    if (h->def && h->def->destroy && h->state) h->def->destroy(h->state);
    h->state = NULL;
    for (int i = 0; i < OPH_MAX_OUT; i++) sl_tlist_free(&h->out[i]);
    if (h->pool) sl__pool_free(h->pool);
    h->pool = NULL;
    sl__args_free(&h->args);
}

sl_status oph_bytes(sl_tlist *l, int count, const void *const *data, const size_t *len,
                    sl_err *err) {
    SL_TRY(sl_tlist_reset(l, count, SL_DTYPE_U8, 1, sl_cpu(), err));
    for (int i = 0; i < count; i++) {
        int64_t n = (int64_t)len[i];
        sl_tlist_set_external(l, i, (void *)data[i], &n);
    }
    return SL_OK;
}

void *oph_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && n > 0 && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return p;
}
