/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's statements, run as DALI runs a pipeline function to build its
 * graph: the module's code, then the pipeline function with its parameters bound -- assignments
 * and unpacking, for loops over range(), lists and tuples (range not made into a list), break,
 * continue, if/elif/else on constants and bound values, return -- into the program's outputs;
 * and the pipeline's decorator (@pipeline_def / @data_iterator) read into the program's
 * settings. */
#include "text/parse_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- statements: running --------------------------------------------------------------------- */

/* Binds the targets (a name, or names to unpack) to v, which is consumed. */
static sl_status assign(parser *ps, const expr *lhs, result *v, const expr *rhs) {
    const expr *const *targets = &lhs;
    int n = 1;
    if (lhs->kind == E_TUPLE || lhs->kind == E_LIST) {
        targets = (const expr *const *)lhs->items;
        n = lhs->n;
    }
    sl_status st = SL_OK;
    if (n == 1 && lhs->kind == E_NAME) {
        /* a module-level constant is a default: a bound value of the same name wins */
        if (!ps->local && !sl__parse_has_node(&v->val) && !v->dict && sl__parse_bound(ps, lhs->s)) {
            sl__parse_result_free(v);
            return SL_OK;
        }
        env_entry *e = sl__parse_env_set(ps, lhs->s);
        if (!e) {
            sl__parse_result_free(v);
            return SL_ENOMEM;
        }
        e->v = *v;
        memset(v, 0, sizeof *v);
        return SL_OK;
    }
    if (v->dict || v->val.kind != SL_VAL_LIST)
        st = sl__parse_perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos,
                            "cannot unpack %s into %d names",
                            sl__parse_is_node(v) ? "one op output"
                            : v->dict            ? "a dict"
                                                 : "a constant",
                            n);
    else if (v->val.n != n)
        st = sl__parse_perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos,
                            "cannot unpack %d values into %d names", v->val.n, n);
    for (int k = 0; k < n && st == SL_OK; k++) {
        env_entry *e = sl__parse_env_set(ps, targets[k]->s);
        if (!e) {
            st = SL_ENOMEM;
            break;
        }
        e->v.val = v->val.items[k];
        memset(&v->val.items[k], 0, sizeof v->val.items[k]);
    }
    sl__parse_result_free(v);
    return st;
}

static sl_status exec_stmt(parser *ps, const stmt *s);

sl_status sl__parse_exec_block(parser *ps, const block *b) {
    for (int k = 0; k < b->n; k++) {
        SL_TRY(exec_stmt(ps, b->items[k]));
        if (ps->flow != FLOW_NEXT) return SL_OK;
    }
    return SL_OK;
}

/* One turn of a for loop with the target bound to v (consumed); false: leave the loop. */
static sl_status loop_turn(parser *ps, const stmt *s, result *v, bool *go_on) {
    SL_TRY(sl__parse_step(ps, s->pos, 1));
    SL_TRY(assign(ps, s->lhs, v, NULL));
    SL_TRY(sl__parse_exec_block(ps, &s->body));
    *go_on = ps->flow == FLOW_NEXT || ps->flow == FLOW_CONTINUE;
    if (ps->flow != FLOW_RETURN) ps->flow = FLOW_NEXT;
    return SL_OK;
}

static sl_status exec_for(parser *ps, const stmt *s) {
    const expr *it = s->rhs;
    sl_status st = SL_OK;
    bool go_on = true;
    const stmt *saved = ps->loop;
    if (it->kind == E_CALL && it->a->kind == E_NAME && !strcmp(it->a->s, "range") &&
        !sl__parse_func_find(ps, "range") &&
        !sl__parse_env_find(ps, "range")) { /* range: not made into a list */
        int64_t a, b, d;
        SL_TRY(sl__parse_range_args(ps, it, &a, &b, &d));
        uint64_t n = sl__parse_range_len(a, b, d);
        ps->loop = s;
        for (uint64_t k = 0; k < n && go_on && st == SL_OK; k++) {
            result v;
            memset(&v, 0, sizeof v);
            sl__parse_set_int(&v.val, (int64_t)((uint64_t)a + k * (uint64_t)d));
            st = loop_turn(ps, s, &v, &go_on);
        }
        ps->loop = saved;
        return st;
    }
    result seq;
    SL_TRY(sl__parse_eval(ps, it, 1, &seq));
    if (seq.dict || seq.val.kind != SL_VAL_LIST) {
        st = sl__parse_perr(ps, SL_EINVAL, it->pos,
                            sl__parse_is_node(&seq)
                                ? "a loop over an op output (data) is not supported: loops run "
                                  "when the pipeline is built, over range(...), lists and tuples"
                                : "a for loop runs over range(...), a list or a tuple, not %s",
                            sl__parse_kind_name(&seq));
        sl__parse_result_free(&seq);
        return st;
    }
    ps->loop = s;
    for (int k = 0; k < seq.val.n && go_on && st == SL_OK; k++) {
        result v = {seq.val.items[k], false};
        memset(&seq.val.items[k], 0, sizeof seq.val.items[k]);
        st = loop_turn(ps, s, &v, &go_on);
    }
    ps->loop = saved;
    sl__parse_result_free(&seq);
    return st;
}

static sl_status exec_stmt(parser *ps, const stmt *s) {
    SL_TRY(sl__parse_step(ps, s->pos, 1));
    switch (s->kind) {
    case S_PASS:
        return SL_OK;
    case S_DEF:
        return s->fn == ps->pipe ? sl__parse_deco_apply(ps, s->fn) : SL_OK;
    case S_BREAK:
    case S_CONTINUE:
        ps->flow = s->kind == S_BREAK ? FLOW_BREAK : FLOW_CONTINUE;
        return SL_OK;
    case S_ASSIGN: {
        const expr *lhs = s->lhs;
        int n = lhs->kind == E_TUPLE || lhs->kind == E_LIST ? lhs->n : 1;
        result v;
        SL_TRY(sl__parse_eval(ps, s->rhs, n, &v));
        return assign(ps, lhs, &v, s->rhs);
    }
    case S_RETURN: {
        frame *fr = ps->fr;
        if (!fr->fn && ps->pipe)
            return sl__parse_perr(ps, SL_ESYNTAX, s->pos, "'return' outside the pipeline function");
        result v;
        memset(&v, 0, sizeof v);
        if (s->rhs) SL_TRY(sl__parse_eval(ps, s->rhs, fr->want, &v));
        fr->ret = v;
        fr->returned = true;
        fr->ret_expr = s->rhs;
        fr->ret_pos = s->pos;
        ps->flow = FLOW_RETURN;
        return SL_OK;
    }
    case S_IF: /* constants as Python; a condition on data per sample (parse_cond.c) */
        return sl__parse_exec_if(ps, s, 0);
    case S_FOR:
        return exec_for(ps, s);
    }
    return SL_OK;
}

/* The pipeline's outputs from its return (fr). */
static sl_status set_outputs(parser *ps, frame *fr) {
    sl__parse_prog *prog = ps->prog;
    const expr *re = fr->ret_expr;
    if (!re)
        return sl__parse_perr(ps, SL_EINVAL, fr->ret_pos,
                              "return needs the pipeline's outputs: return a, b");
    const sl__val *v = &fr->ret.val;
    const sl__val *items = v;
    int n = 1;
    if (v->kind == SL_VAL_LIST && !fr->ret.dict) {
        items = v->items;
        n = v->n;
    }
    bool literal = (re->kind == E_TUPLE || re->kind == E_LIST) && re->n == n;
    if (n == 0)
        return sl__parse_perr(ps, SL_EINVAL, re->pos,
                              "the pipeline must return at least one output");
    for (int k = 0; prog->output_names && k < prog->num_outputs; k++) free(prog->output_names[k]);
    free(prog->outputs);
    free(prog->output_pos);
    free(prog->output_names);
    prog->outputs = sl__calloc((size_t)n, sizeof *prog->outputs, ps->err);
    prog->output_pos = sl__calloc((size_t)n, sizeof *prog->output_pos, ps->err);
    prog->output_names = sl__calloc((size_t)n, sizeof *prog->output_names, ps->err);
    if (!prog->outputs || !prog->output_pos || !prog->output_names) return SL_ENOMEM;
    prog->num_outputs = n;
    const sl_pipeline_decorator *d = &prog->deco;
    if (d->num_outputs && d->num_outputs != n)
        return sl__parse_perr(ps, SL_EINVAL, re->pos,
                              "output_map names %d output%s but the pipeline returns %d",
                              d->num_outputs, d->num_outputs == 1 ? "" : "s", n);
    for (int k = 0; k < n; k++) {
        const expr *at = literal ? re->items[k] : re;
        if (items[k].kind != SL_VAL_NODE || fr->ret.dict)
            return sl__parse_perr(ps, SL_EINVAL, at->pos, "a pipeline returns op outputs, not %s",
                                  sl__parse_has_node(&items[k]) ? "a list of them" : "constants");
        prog->outputs[k] = items[k].node;
        prog->output_pos[k] = at->pos;
        char dflt[24];
        snprintf(dflt, sizeof dflt, "out%d", k);
        const char *name = d->num_outputs ? d->output_map[k] : at->kind == E_NAME ? at->s : dflt;
        if (!(prog->output_names[k] = strdup(name)))
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    return SL_OK;
}

/* Runs the pipeline function with its parameters bound: a bound value, else the default, else
 * unbound (an error when used). */
static sl_status run_pipeline(parser *ps, func *f) {
    scope sc;
    memset(&sc, 0, sizeof sc);
    frame fr, *saved = ps->fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = f;
    fr.want = 1;
    sl_status st = SL_OK;
    for (int k = 0; k < f->nparams && st == SL_OK; k++) {
        result v;
        memset(&v, 0, sizeof v);
        bool unbound = false, bound = false;
        st = sl__parse_bind_get(ps, f->params[k], &v.val, &bound);
        if (st == SL_OK && !bound && f->defaults[k]) {
            ps->no_ops = true;
            st = sl__parse_eval_const(ps, f->defaults[k], &v.val, "a default");
            ps->no_ops = false;
        } else if (st == SL_OK && !bound) {
            unbound = true;
        }
        if (st != SL_OK) break;
        ps->local = &sc;
        env_entry *e = sl__parse_env_set(ps, f->params[k]);
        ps->local = NULL;
        if (!e) {
            sl__parse_result_free(&v);
            st = SL_ENOMEM;
            break;
        }
        e->v = v;
        e->unbound = unbound;
    }
    if (st == SL_OK) {
        ps->local = &sc;
        ps->fr = &fr;
        f->active = true;
        st = sl__parse_exec_block(ps, &f->body);
        f->active = false;
        ps->flow = FLOW_NEXT;
        ps->local = NULL;
        ps->fr = saved;
    }
    if (st == SL_OK && !fr.returned)
        st = sl__parse_perr(ps, SL_EINVAL, f->pos,
                            "pipeline function '%s' does not return its outputs (return a, b)",
                            f->name);
    if (st == SL_OK) st = set_outputs(ps, &fr);
    sl__parse_result_free(&fr.ret);
    sl__parse_scope_free(&sc);
    return st;
}

/* Runs the module's code, then the pipeline function (when there is one). */
sl_status sl__parse_run_module(parser *ps) {
    frame fr;
    memset(&fr, 0, sizeof fr);
    fr.want = 1;
    ps->fr = &fr;
    ps->step_limit = SL__PARSE_STEPS_MAX + ps->nexprs + ps->nstmts;
    sl_status st = SL_OK;
    for (int k = 0; k < ps->module.n && st == SL_OK && ps->flow == FLOW_NEXT; k++) {
        const stmt *s = ps->module.items[k];
        int before = ps->prog->num_stmts;
        st = exec_stmt(ps, s);
        if (st == SL_OK && ps->pipe && ps->prog->num_stmts > before)
            st = sl__parse_perr(ps, SL_ESYNTAX, s->pos,
                                "op calls must be inside the pipeline function");
    }
    ps->flow = FLOW_NEXT;
    if (st == SL_OK && ps->pipe) st = run_pipeline(ps, ps->pipe);
    if (st == SL_OK && !ps->pipe) {
        if (fr.returned)
            st = set_outputs(ps, &fr);
        else
            st = sl__parse_perr(ps, SL_EINVAL, ps->toks[ps->ntok - 1].pos, /* the end */
                                ps->prog->num_stmts
                                    ? "the pipeline has no return statement"
                                    : "no pipeline here: expected a def or op calls");
    }
    sl__parse_result_free(&fr.ret);
    return st;
}

/* ---- the decorator -------------------------------------------------------------------------- */

static bool decorator_literal_int(const expr *e, int64_t *out) {
    if (e->kind == E_INT) {
        *out = e->i;
        return true;
    }
    if (e->kind == E_NEG && e->a->kind == E_INT) {
        *out = -e->a->i;
        return true;
    }
    return false;
}

static sl_status decorator_bool(parser *ps, const expr *e, const char *key, bool *out,
                                bool yes_no) {
    sl__val v;
    SL_TRY(sl__parse_eval_const(ps, e, &v, key));
    sl_status st = SL_OK;
    if (v.kind == SL_VAL_BOOL)
        *out = v.b;
    else if (yes_no && v.kind == SL_VAL_STR && (!strcmp(v.s, "yes") || !strcmp(v.s, "no")))
        *out = !strcmp(v.s, "yes");
    else
        st = sl__parse_perr(ps, SL_EINVAL, e->pos, "%s must be True or False%s", key,
                            yes_no ? " (or \"yes\"/\"no\")" : "");
    sl__val_free(&v);
    return st;
}

static sl_status decorator_arg(parser *ps, const char *key, sl__parse_pos kpos, const expr *e,
                               bool *sharding, bool *devices) {
    sl_pipeline_decorator *d = &ps->prog->deco;
    sl__val v;
    memset(&v, 0, sizeof v);
    sl_status st = SL_OK;
    if (!strcmp(key, "output_map")) {
        SL_TRY(sl__parse_eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_LIST) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "output_map must be a list of names");
        } else {
            sl_pipeline_decorator_clear(d);
            if (v.n && !(d->output_map = sl__calloc((size_t)v.n, sizeof *d->output_map, ps->err)))
                st = SL_ENOMEM;
            else
                d->num_outputs = v.n;
            for (int k = 0; k < v.n && st == SL_OK; k++) {
                if (v.items[k].kind != SL_VAL_STR)
                    st = sl__parse_perr(ps, SL_EINVAL, e->items ? e->items[k]->pos : e->pos,
                                        "output_map must be a list of strings");
                else if (!(d->output_map[k] = strdup(v.items[k].s)))
                    st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            }
            if (st != SL_OK) sl_pipeline_decorator_clear(d);
        }
    } else if (!strcmp(key, "reader_name")) {
        SL_TRY(sl__parse_eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_STR || strlen(v.s) >= sizeof d->reader_name)
            st = sl__parse_perr(ps, SL_EINVAL, e->pos,
                                "reader_name must be a string (the reader's name=)");
        else
            snprintf(d->reader_name, sizeof d->reader_name, "%s", v.s);
    } else if (!strcmp(key, "size")) {
        SL_TRY(sl__parse_eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_INT)
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "size must be an integer");
        else
            d->size = v.i;
    } else if (!strcmp(key, "last_batch_policy")) {
        char name[256];
        const char *p = NULL;
        if (e->kind == E_STR)
            p = e->s;
        else if (sl__parse_dotted(e, name, sizeof name))
            p = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
        if (p && !strcmp(p, "FILL"))
            d->last_batch_policy = SL_LAST_BATCH_FILL;
        else if (p && !strcmp(p, "DROP"))
            d->last_batch_policy = SL_LAST_BATCH_DROP;
        else if (p && !strcmp(p, "PARTIAL"))
            d->last_batch_policy = SL_LAST_BATCH_PARTIAL;
        else
            st =
                sl__parse_perr(ps, SL_EINVAL, e->pos,
                               "last_batch_policy must be LastBatchPolicy.FILL, .DROP or .PARTIAL");
    } else if (!strcmp(key, "last_batch_padded")) {
        st = decorator_bool(ps, e, key, &d->last_batch_padded, false);
    } else if (!strcmp(key, "prepare_first_batch")) {
        st = decorator_bool(ps, e, key, &d->prepare_first_batch, false);
    } else if (!strcmp(key, "enable_conditionals")) {
        st = decorator_bool(ps, e, key, &ps->conditionals, false);
    } else if (!strcmp(key, "auto_reset")) {
        st = decorator_bool(ps, e, key, &d->auto_reset, true);
    } else if (!strcmp(key, "sharding") || !strcmp(key, "devices")) {
        /* any expression (sharding, jax.devices()): only its presence matters; None is absence */
        if (e->kind != E_NONE) {
            bool *mine = key[0] == 's' ? sharding : devices,
                 *other = key[0] == 's' ? devices : sharding;
            *mine = true;
            if (*other)
                return sl__parse_perr(ps, SL_EINVAL, kpos,
                                      "only one of 'sharding' and 'devices' can be given");
            d->layout = key[0] == 's' ? SL_LAYOUT_SHARDED : SL_LAYOUT_STACKED;
        }
    } else {
        int64_t x;
        if (decorator_literal_int(e, &x)) {
            if (!strcmp(key, "batch_size") && x > 0 && x <= INT32_MAX) d->batch_size = (int)x;
            if (!strcmp(key, "num_threads") && x > 0 && x <= INT32_MAX) d->num_threads = (int)x;
            if (!strcmp(key, "seed")) d->seed = x;
            if (!strcmp(key, "prefetch_queue_depth") && x > 0 && x <= INT32_MAX)
                d->prefetch_queue_depth = (int)x;
            if (!strcmp(key, "device_id") && x >= 0 && x <= INT32_MAX) d->device_id = (int)x;
        } else if (!strcmp(key, "device_id") && e->kind == E_NONE) {
            d->device_id = SL_DECORATOR_DEVICE_NONE; /* DALI: a CPU-only pipeline */
        }
        /* other pipeline settings (exec_async, a {cpu_size, gpu_size} prefetch, ...): not ours */
    }
    sl__val_free(&v);
    return st;
}

/* The pipeline function's def line and decorator into the program's settings. */
sl_status sl__parse_deco_apply(parser *ps, const func *f) {
    sl_pipeline_decorator *d = &ps->prog->deco;
    snprintf(d->func_name, sizeof d->func_name, "%s", f->name);
    d->num_params = f->nparams;
    for (int k = 0; k < f->nparams; k++)
        snprintf(d->params[k], sizeof d->params[k], "%s", f->params[k]);
    const expr *e = f->deco;
    if (!e) return SL_OK;
    d->present = true;
    if (e->kind != E_CALL) return SL_OK;
    if (e->n)
        return sl__parse_perr(ps, SL_EINVAL, e->items[0]->pos,
                              "decorator arguments must be keyword arguments (name=value)");
    bool sharding = false, devices = false;
    ps->no_ops = true;
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        if (!e->kwnames[k])
            st = sl__parse_perr(ps, SL_EINVAL, e->kwpos[k],
                                "decorator arguments must be keyword arguments (name=value)");
        else
            st = decorator_arg(ps, e->kwnames[k], e->kwpos[k], e->kwvals[k], &sharding, &devices);
    }
    ps->no_ops = false;
    return st;
}
