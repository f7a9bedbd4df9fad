/* SPDX-License-Identifier: Apache-2.0 */
/* Creating a built graph's op instances (sl_pipeline_build): each op's create opens its stores and
 * checks its arguments, with what it may ask of the pipeline (the registered sources). An error
 * DALI finds only when its op runs (sl__op_at_run) does not fail the build: it is kept with the
 * op and every batch fails with it there (pipeline_exec.c, run_op), as DALI's run() raises it. */
#include "graph/pipeline_ops.h"

#include "graph/pipeline_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <string.h>

/* sl__op_init's find_source */
static sl_status find_source(const void *ctx, const char *name, sl_source *out, sl_err *err) {
    const sl_pipeline *p = ctx;
    for (int i = 0; i < p->nsources; i++)
        if (!strcmp(p->sources[i].name, name)) {
            *out = p->sources[i].src;
            return SL_OK;
        }
    if (p->nsources == 0)
        return sl_err_set(err, SL_ENOENT,
                          "no source named '%s': none is registered (sl_pipeline_add_source)",
                          name);
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < p->nsources && used + 1 < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                                 p->sources[i].name);
    return sl_err_set(err, SL_ENOENT, "no source named '%s' (registered: %s)", name, list);
}

sl_status sl__pipeline_create_ops(sl_pipeline *p) {
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        sl__op_init init;
        memset(&init, 0, sizeof init);
        init.name = op->name;
        init.device = sl_cpu();
        init.batch_size = p->cfg.batch_size;
        init.threads = p->cfg.num_threads;
        init.seed = op->seed;
        init.global_shards = p->cfg.global_shards;
        init.global_shard = p->cfg.global_shard;
        init.global_drop = p->cfg.global_drop != 0;
        init.stream_priority = p->cfg.stream_priority;
        init.find_source = find_source;
        init.source_ctx = p;
        bool at_run = false;
        init.at_run = &at_run;
        sl_status st =
            op->def->create ? op->def->create(&op->args, &init, &op->state, &p->err) : SL_OK;
        if (st && !strstr(p->err.msg, op->name)) sl_err_prefix(&p->err, "%s: ", op->name);
        if (st && at_run) { /* DALI finds it when the op runs: so does each batch */
            SL_ASSERT(!op->state);
            if (!(op->at_run = sl__malloc(sizeof *op->at_run, &p->err))) return SL_ENOMEM;
            sl_err_copy(op->at_run, &p->err);
            sl_err_clear(&p->err);
            st = SL_OK;
        }
        if (st) return st;
        snprintf(p->stats.ops[k < 32 ? k : 31].name, sizeof p->stats.ops[0].name, "%s", op->name);
    }
    return SL_OK;
}
