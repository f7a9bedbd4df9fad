/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text's conditionals on data, as DALI's with @pipeline_def(enable_conditionals=True):
 * an `if`/`elif`/`else` whose condition is an op output (one bool per sample), and `not`, `and`,
 * `or` and `x if c else y` on one.
 *
 * The program gets the builder's conditional statements (sl_pipeline_if, _else, _endif, _merge:
 * docs/design.md, "Conditionals"): the if body runs once, its ops on the samples whose predicate is
 * true, then the rest of the chain (the elif conditions too) on the others. The running scope's
 * names are saved before the body and put back before the else part; after it, a name both
 * branches left the same keeps its value, one given op outputs in both is merged in sample order,
 * and one only a branch assigned is marked: using it later is an error naming the `if`, as is a
 * name given different constants, or a return, break or continue inside a branch. */
#include "text/parse_int.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a scope's names and values at one point */
typedef struct snap {
    int n;
    env_entry *e; /* values deep-copied */
} snap;

static void snap_free(snap *s) {
    for (int i = 0; i < s->n; i++) sl__parse_result_free(&s->e[i].v);
    free(s->e);
    memset(s, 0, sizeof *s);
}

static scope *running(parser *ps) {
    return ps->local ? ps->local : &ps->globals;
}

static sl_status take(parser *ps, snap *out) {
    scope *sc = running(ps);
    memset(out, 0, sizeof *out);
    out->e = calloc((size_t)(sc->nenv ? sc->nenv : 1), sizeof *out->e);
    if (!out->e) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int i = 0; i < sc->nenv; i++) {
        env_entry *d = &out->e[out->n++];
        *d = sc->env[i];
        memset(&d->v, 0, sizeof d->v);
        d->v.dict = sc->env[i].v.dict;
        SL_TRY(sl__val_copy(&d->v.val, &sc->env[i].v.val, ps->err));
    }
    return SL_OK;
}

static const env_entry *find(const snap *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].name, name)) return &s->e[i];
    return NULL;
}

static bool bound(const env_entry *e) {
    return e && !e->unbound && !e->one_sided;
}

/* every name of the running scope back to its value in s; one s lacks is marked one-sided */
static sl_status restore(parser *ps, const snap *s, int line) {
    scope *sc = running(ps);
    for (int i = 0; i < sc->nenv; i++) {
        env_entry *e = &sc->env[i];
        const env_entry *was = find(s, e->name);
        sl__parse_result_free(&e->v);
        if (!was) {
            e->one_sided = line;
            continue;
        }
        e->unbound = was->unbound;
        e->one_sided = was->one_sided;
        e->v.dict = was->v.dict;
        SL_TRY(sl__val_copy(&e->v.val, &was->v.val, ps->err));
    }
    return SL_OK;
}

static bool same(const sl__val *a, const sl__val *b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case SL_VAL_NONE:
        return true;
    case SL_VAL_BOOL:
    case SL_VAL_INT:
        return a->i == b->i && a->b == b->b;
    case SL_VAL_FLOAT:
        return a->f == b->f;
    case SL_VAL_STR:
    case SL_VAL_ENUM:
        return !strcmp(a->s, b->s);
    case SL_VAL_NODE:
        return a->node == b->node;
    case SL_VAL_LIST:
        if (a->n != b->n) return false;
        for (int k = 0; k < a->n; k++)
            if (!same(&a->items[k], &b->items[k])) return false;
        return true;
    }
    return false;
}

/* *f (the else side) becomes t and f merged per sample by pred: equal parts kept, op outputs
 * merged, lists item by item; false when they cannot be (constants that differ) */
static sl_status merge_val(parser *ps, sl__parse_pos pos, int pred, const sl__val *t, sl__val *f,
                           bool *ok) {
    if (same(t, f)) return SL_OK;
    if (t->kind == SL_VAL_NODE && f->kind == SL_VAL_NODE) {
        int in[3] = {pred, t->node, f->node};
        result r;
        SL_TRY(sl__parse_cond_stmt(ps, SL__PARSE_MERGE, pos, in, 3, &r));
        f->node = r.val.node;
        return SL_OK;
    }
    if (t->kind == SL_VAL_LIST && f->kind == SL_VAL_LIST && t->n == f->n) {
        for (int k = 0; k < t->n && *ok; k++)
            SL_TRY(merge_val(ps, pos, pred, &t->items[k], &f->items[k], ok));
        return SL_OK;
    }
    *ok = false;
    return SL_OK;
}

static const char *kind_of(const env_entry *e) {
    static const char *const names[] = {"None",     "a bool", "an int", "a float",
                                        "a string", "a name", "a list", "an op output"};
    return e->v.dict ? "a dict" : names[e->v.val.kind];
}

/* after the else part: each name of the running scope from the two branches' (t: the if
 * body's values; the scope holds the else part's) */
static sl_status merge_names(parser *ps, const stmt *s, sl__parse_pos pos, int pred,
                             const snap *t) {
    scope *sc = running(ps);
    for (int i = 0; i < sc->nenv; i++) {
        env_entry *e = &sc->env[i];
        const env_entry *te = find(t, e->name);
        if (!bound(te) || !bound(e)) {
            if (bound(te) || bound(e)) e->one_sided = s->pos.line;
            continue;
        }
        bool ok = te->v.dict == e->v.dict;
        if (ok) SL_TRY(merge_val(ps, pos, pred, &te->v.val, &e->v.val, &ok));
        if (!ok)
            return sl__parse_perr(ps, SL_EINVAL, pos,
                                  "variable '%s' is %s in the `if` branch and %s in the `else` "
                                  "branch of this `if` on data: per sample it must be op outputs "
                                  "in both",
                                  e->name, kind_of(te), kind_of(e));
    }
    return SL_OK;
}

static sl_status need_conditionals(parser *ps, sl__parse_pos pos, const char *what) {
    if (ps->conditionals) return SL_OK;
    return sl__parse_perr(ps, SL_EINVAL, pos,
                          "'%s' on an op output: a condition on data needs "
                          "@pipeline_def(enable_conditionals=True), as in DALI",
                          what);
}

static sl_status no_jump(parser *ps, const stmt *s) {
    if (ps->flow == FLOW_NEXT) return SL_OK;
    const char *w = ps->flow == FLOW_RETURN  ? "return"
                    : ps->flow == FLOW_BREAK ? "break"
                                             : "continue";
    return sl__parse_perr(ps, SL_EINVAL, s->pos,
                          "`%s` inside an `if` on data is not supported (each branch runs on "
                          "its own samples): assign a variable in the branches and %s after "
                          "the `if`",
                          w, w);
}

/* the if statement s at condition k, whose value is the op output pred */
static sl_status cond_if(parser *ps, const stmt *s, int k, int pred) {
    sl__parse_pos pos = s->conds[k]->pos;
    SL_TRY(need_conditionals(ps, pos, k ? "elif" : "if"));
    snap before, t;
    SL_TRY(take(ps, &before));
    sl_status st = sl__parse_cond_stmt(ps, SL__PARSE_IF, pos, &pred, 1, NULL);
    if (st == SL_OK) st = sl__parse_exec_block(ps, &s->bodies[k]);
    if (st == SL_OK) st = no_jump(ps, s);
    memset(&t, 0, sizeof t);
    if (st == SL_OK) st = take(ps, &t);
    if (st == SL_OK) st = restore(ps, &before, s->pos.line);
    if (st == SL_OK) st = sl__parse_cond_stmt(ps, SL__PARSE_ELSE, pos, NULL, 0, NULL);
    if (st == SL_OK) st = sl__parse_exec_if(ps, s, k + 1);
    if (st == SL_OK) st = no_jump(ps, s);
    if (st == SL_OK) st = sl__parse_cond_stmt(ps, SL__PARSE_ENDIF, pos, NULL, 0, NULL);
    if (st == SL_OK) st = merge_names(ps, s, pos, pred, &t);
    snap_free(&before);
    snap_free(&t);
    return st;
}

sl_status sl__parse_exec_if(parser *ps, const stmt *s, int k) {
    for (; k < s->ncond; k++) {
        result c;
        SL_TRY(sl__parse_eval(ps, s->conds[k], 1, &c));
        if (sl__parse_is_node(&c)) {
            int pred = c.val.node;
            sl__parse_result_free(&c);
            return cond_if(ps, s, k, pred);
        }
        bool t;
        sl_status st = sl__parse_truth(ps, s->conds[k], &c, k ? "elif" : "if", &t);
        sl__parse_result_free(&c);
        if (st != SL_OK) return st;
        if (t) return sl__parse_exec_block(ps, &s->bodies[k]);
    }
    return sl__parse_exec_block(ps, &s->bodies[s->ncond]);
}

/* e's operand x evaluated into a node (inside a branch, so its ops run on the branch's samples) */
static sl_status branch_value(parser *ps, const expr *x, const char *what, int *node) {
    result r;
    SL_TRY(sl__parse_eval(ps, x, 1, &r));
    bool ok = sl__parse_is_node(&r);
    if (ok) *node = r.val.node;
    sl__parse_result_free(&r);
    if (!ok)
        return sl__parse_perr(ps, SL_EINVAL, x->pos,
                              "%s with a condition on data: this operand must be an op output "
                              "too (one value per sample)",
                              what);
    return SL_OK;
}

sl_status sl__parse_cond_logic(parser *ps, const expr *e, result *v, result *r) {
    int c = v->val.node;
    sl__parse_result_free(v);
    const char *what = e->kind == E_NOT   ? "not"
                       : e->kind == E_AND ? "and"
                       : e->kind == E_OR  ? "or"
                                          : "if";
    SL_TRY(need_conditionals(ps, e->kind == E_IFEXP ? e->c->pos : e->pos, what));
    if (e->kind == E_NOT) return sl__parse_named_op(ps, e->pos, "_conditional.not_", c, r);
    /* and: b where c is true, c elsewhere; or: c where true, b elsewhere; a if c else b */
    int side[2] = {c, c};
    sl_status st = sl__parse_cond_stmt(ps, SL__PARSE_IF, e->pos, &c, 1, NULL);
    if (st == SL_OK && e->kind != E_OR)
        st = branch_value(ps, e->kind == E_IFEXP ? e->a : e->b, what, &side[0]);
    if (st == SL_OK) st = sl__parse_cond_stmt(ps, SL__PARSE_ELSE, e->pos, NULL, 0, NULL);
    if (st == SL_OK && e->kind != E_AND) st = branch_value(ps, e->b, what, &side[1]);
    if (st == SL_OK) st = sl__parse_cond_stmt(ps, SL__PARSE_ENDIF, e->pos, NULL, 0, NULL);
    int in[3] = {c, side[0], side[1]};
    if (st == SL_OK) st = sl__parse_cond_stmt(ps, SL__PARSE_MERGE, e->pos, in, 3, r);
    return st;
}
