/* SPDX-License-Identifier: Apache-2.0 */
/* Conditionals in the graph: DALI's `if` on per-sample predicates (enable_conditionals=True).
 *
 * A scope is a set of a batch's samples: scope 0 the whole batch, and each conditional branch the
 * samples of its enclosing scope whose predicate (a node of that scope, one bool per sample) is
 * true, or false. Every node and op belongs to one: an op added between sl_pipeline_if and
 * sl_pipeline_endif to the branch then open, and it runs on that branch's samples only, as a
 * smaller batch. A node an op of a branch takes from an enclosing scope is first split by the
 * branch's predicate (the `_conditional.split` op, its two outputs the two branches' samples,
 * made once per node and branch); sl_pipeline_merge joins a true part and a false part back in
 * sample order (`_conditional.merge`). Both are views, so they cost no copy, on the CPU or GPU.
 *
 * At run time the executor sizes each op's batch by its scope: when the CPU stage reaches a split
 * op it counts, from the predicate, the samples of the split's two scopes and takes their record
 * keys (for messages naming a sample's record), so that an op of a branch -- in either stage --
 * gets that branch's count and keys (sl__pipeline_cond_scopes). An empty branch runs its ops on
 * zero samples. */
#include "graph/pipeline_int.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the scope (parent, pred, branch), added when new */
static sl_status scope_of(sl_pipeline *p, int parent, int pred, bool branch, int *out) {
    if (p->nscopes == 0) { /* scope 0, the whole batch */
        SL_TRY(
            sl__pipeline_grow((void **)&p->scopes, &p->scopes_cap, 1, sizeof *p->scopes, &p->err));
        p->scopes[0] = (sl__scope){-1, -1, false};
        p->nscopes = 1;
    }
    for (int s = 1; s < p->nscopes; s++)
        if (p->scopes[s].parent == parent && p->scopes[s].pred == pred &&
            p->scopes[s].branch == branch) {
            *out = s;
            return SL_OK;
        }
    SL_TRY(sl__pipeline_grow((void **)&p->scopes, &p->scopes_cap, p->nscopes + 1, sizeof *p->scopes,
                             &p->err));
    p->scopes[p->nscopes] = (sl__scope){parent, pred, branch};
    *out = p->nscopes++;
    return SL_OK;
}

/* a is target or one of its enclosing scopes */
static bool encloses(const sl_pipeline *p, int a, int target) {
    for (int s = target; s >= 0; s = s ? p->scopes[s].parent : -1)
        if (s == a) return true;
    return false;
}

/* what a node is, for messages: "the output of flip", "output 1 of readers.file" */
static const char *node_desc(const sl_pipeline *p, int node, char *buf, size_t size) {
    while (p->nodes[node].op < 0) node = p->nodes[node].src;
    const sl__opinst *op = &p->ops[p->nodes[node].op];
    if (op->nout > 1)
        snprintf(buf, size, "output %d of %s", p->nodes[node].out, op->name);
    else
        snprintf(buf, size, "the output of %s", op->name);
    return buf;
}

/* adds _conditional.split of node (in scope parent) by the predicate of scope `target`; its
 * outputs go to the cache */
static sl_status add_split(sl_pipeline *p, int node, int target) {
    const sl__scope sc = p->scopes[target];
    int t, f;
    SL_TRY(scope_of(p, sc.parent, sc.pred, true, &t));
    SL_TRY(scope_of(p, sc.parent, sc.pred, false, &f));
    int saved = p->cur_scope;
    p->cur_scope = sc.parent;
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "_conditional.split");
    if (!op) {
        p->cur_scope = saved;
        return p->err.status ? p->err.status : SL_EINVAL;
    }
    sl_pipeline_op_input(op, node);
    sl_pipeline_op_arg_node(op, "predicate", sc.pred);
    int outs[2];
    sl_status st = sl_pipeline_op_end(op, outs, 2, NULL);
    p->cur_scope = saved;
    if (st) return st;
    p->nodes[outs[0]].scope = t;
    p->nodes[outs[1]].scope = f;
    SL_TRY(sl__pipeline_grow((void **)&p->splits, &p->splits_cap, p->nsplits + 2, sizeof *p->splits,
                             &p->err));
    p->splits[p->nsplits++] = (struct sl__split_entry){node, t, outs[0]};
    p->splits[p->nsplits++] = (struct sl__split_entry){node, f, outs[1]};
    return SL_OK;
}

sl_status sl__pipeline_cond_bring(sl_pipeline *p, int node, int target, const char *what,
                                  int *out) {
    int s = p->nodes[node].scope;
    if (s == target) {
        *out = node;
        return SL_OK;
    }
    if (p->nscopes == 0 || !encloses(p, s, target)) {
        char b[96];
        return sl__pipeline_fail(p, SL_EINVAL,
                                 "%s: %s is data of a conditional branch that it cannot be used "
                                 "outside of (merge it after the `if` first)",
                                 what, node_desc(p, node, b, sizeof b));
    }
    int up;
    SL_TRY(sl__pipeline_cond_bring(p, node, p->scopes[target].parent, what, &up));
    for (int k = 0; k < p->nsplits; k++)
        if (p->splits[k].node == up && p->splits[k].scope == target) {
            *out = p->splits[k].out;
            return SL_OK;
        }
    SL_TRY(add_split(p, up, target));
    *out = p->splits[p->nsplits - (p->scopes[target].branch ? 2 : 1)].out;
    return SL_OK;
}

sl_status sl__pipeline_cond_inputs(sl_pipeline *p, sl_pipeline_op *op) {
    const sl__op_def *def = op->def;
    if (p->cur_scope && (def->flags & SL_OPF_READER || !strcmp(def->name, "external_source")))
        return sl__pipeline_fail(p, SL_EINVAL,
                                 "%s cannot be inside a conditional branch (`if` on data): read "
                                 "before the `if`",
                                 def->name);
    if (def->flags & (SL_OPF_SPLIT | SL_OPF_MERGE)) return SL_OK; /* what branches are made of */
    for (int i = 0; i < op->ninputs + op->nargs; i++) {
        bool arg = i >= op->ninputs;
        if (arg && op->argvals[i - op->ninputs].kind != SL_VAL_NODE) continue;
        int *node = arg ? &op->argvals[i - op->ninputs].node : &op->inputs[i];
        char what[128];
        if (arg)
            snprintf(what, sizeof what, "%s: argument %s", def->name,
                     op->argnames[i - op->ninputs]);
        else
            snprintf(what, sizeof what, "%s: input %d", def->name, i);
        SL_TRY(sl__pipeline_cond_bring(p, *node, p->cur_scope, what, node));
    }
    return SL_OK;
}

static sl_status check_open(sl_pipeline *p, const char *call) {
    if (p->built) return sl__pipeline_fail(p, SL_ESTATE, "%s after sl_pipeline_build", call);
    return SL_OK;
}

sl_status sl_pipeline_if(sl_pipeline *p, int predicate) {
    SL_TRY(check_open(p, "sl_pipeline_if"));
    if (predicate < 0 || predicate >= p->nnodes)
        return sl__pipeline_fail(p, SL_EINVAL, "if: predicate %d is not a node", predicate);
    if (p->nodes[predicate].gpu)
        return sl__pipeline_fail(p, SL_EINVAL,
                                 "if: the condition is on the GPU: a predicate "
                                 "must be CPU data (as in DALI)");
    int pred, s, f, unused;
    SL_TRY(sl__pipeline_cond_bring(p, predicate, p->cur_scope, "if", &pred));
    SL_TRY(scope_of(p, p->cur_scope, pred, true, &s));
    SL_TRY(scope_of(p, p->cur_scope, pred, false, &f));
    /* the predicate's own split: a split op that sizes both branches at run time, whatever
     * their ops take (an op without inputs, or none at all) */
    SL_TRY(sl__pipeline_cond_bring(p, pred, s, "if", &unused));
    p->cur_scope = s;
    return SL_OK;
}

sl_status sl_pipeline_else(sl_pipeline *p) {
    SL_TRY(check_open(p, "sl_pipeline_else"));
    if (p->cur_scope == 0 || !p->scopes[p->cur_scope].branch)
        return sl__pipeline_fail(p, SL_ESTATE, "else without an open if");
    const sl__scope sc = p->scopes[p->cur_scope];
    return scope_of(p, sc.parent, sc.pred, false, &p->cur_scope);
}

sl_status sl_pipeline_endif(sl_pipeline *p) {
    SL_TRY(check_open(p, "sl_pipeline_endif"));
    if (p->cur_scope == 0) return sl__pipeline_fail(p, SL_ESTATE, "endif without an open if");
    p->cur_scope = p->scopes[p->cur_scope].parent;
    return SL_OK;
}

sl_status sl_pipeline_merge(sl_pipeline *p, int predicate, int true_node, int false_node,
                            int *out_node) {
    SL_TRY(check_open(p, "sl_pipeline_merge"));
    int ids[3] = {predicate, true_node, false_node};
    for (int k = 0; k < 3; k++)
        if (ids[k] < 0 || ids[k] >= p->nnodes)
            return sl__pipeline_fail(p, SL_EINVAL, "merge: %d is not a node", ids[k]);
    int pred, t, f, side[2];
    SL_TRY(sl__pipeline_cond_bring(p, predicate, p->cur_scope, "merge", &pred));
    SL_TRY(scope_of(p, p->cur_scope, pred, true, &side[0]));
    SL_TRY(scope_of(p, p->cur_scope, pred, false, &side[1]));
    SL_TRY(sl__pipeline_cond_bring(p, true_node, side[0], "merge (the `if` side)", &t));
    SL_TRY(sl__pipeline_cond_bring(p, false_node, side[1], "merge (the `else` side)", &f));
    /* a CPU side goes to the GPU when the other is there */
    int *cpu = p->nodes[t].gpu && !p->nodes[f].gpu   ? &f
               : p->nodes[f].gpu && !p->nodes[t].gpu ? &t
                                                     : NULL;
    if (cpu) SL_TRY(sl_pipeline_transfer(p, *cpu, SL_DEVICE_CUDA, cpu));
    sl_pipeline_op *op = sl_pipeline_op_begin(p, "_conditional.merge");
    if (!op) return p->err.status ? p->err.status : SL_EINVAL;
    sl_pipeline_op_input(op, t);
    sl_pipeline_op_input(op, f);
    sl_pipeline_op_arg_node(op, "predicate", pred);
    return sl_pipeline_op_end(op, out_node, 1, NULL);
}

/* ---- at run time ---- */

void sl__pipeline_cond_scopes(sl_pipeline *p, sl_batch *b, int k) {
    const sl__opinst *op = &p->ops[k];
    int parent = op->scope, bs = p->cfg.batch_size;
    int t = p->nodes[op->first_node].scope, f = p->nodes[op->first_node + 1].scope;
    int id = op->arg_inputs[0];
    while (p->nodes[id].op == SL__NODE_ALIAS) id = p->nodes[id].src;
    const sl_tlist *pred = &b->nodes[id];
    const char **pk = parent ? b->scope_keys + (size_t)parent * (size_t)bs : NULL;
    const char **kt = b->scope_keys + (size_t)t * (size_t)bs;
    const char **kf = b->scope_keys + (size_t)f * (size_t)bs;
    int nt = 0, nf = 0;
    for (int i = 0; i < b->scope_n[parent] && i < pred->count; i++) {
        /* a predicate that is not one bool: the split's setup names the sample */
        if (pred->dtype != SL_DTYPE_BOOL || sl_tlist_sample_nbytes(pred, i) != 1) break;
        const char *key = pk ? pk[i] : b->keys[i];
        if (*(const uint8_t *)pred->data[i])
            kt[nt++] = key;
        else
            kf[nf++] = key;
    }
    b->scope_n[t] = nt;
    b->scope_n[f] = nf;
}
