/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's calls, run when the pipeline is built: fn.<op>(...) and arithmetic
 * on op outputs become op statements of the sl__parse_prog (parse.h), .gpu()/.cpu() transfer
 * statements, with numbered program nodes for their outputs; a helper function defined in the
 * text runs (parse_func.c); range(), len() and tfrec.FixedLenFeature / VarLenFeature give
 * constants. Keyword arguments, ** dicts expanded, are read here, and the number of operators
 * a text may build is bounded. */
#include "text/parse_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- op statements --------------------------------------------------------------------------- */

void sl__parse_stmt_clear(sl__parse_stmt *s) {
    free(s->inputs);
    free(s->input_pos);
    for (int i = 0; i < s->num_args; i++) sl__val_free(&s->args[i].val);
    free(s->args);
    memset(s, 0, sizeof *s);
}

static sl_status add_stmt(parser *ps, sl__parse_stmt *s, int outputs) {
    sl__parse_prog *prog = ps->prog;
    if (prog->num_stmts >= SL__PARSE_OPS_MAX)
        return sl__parse_perr(ps, SL_EINVAL, ps->loop ? ps->loop->pos : s->pos,
                              "too many operators: the pipeline would have over %d%s",
                              SL__PARSE_OPS_MAX, ps->loop ? " (this loop builds them)" : "");
    sl__parse_stmt *grown =
        sl__grow(prog->stmts, &ps->stmt_cap, prog->num_stmts + 1, sizeof *grown, 16, ps->err);
    if (!grown) return SL_ENOMEM;
    prog->stmts = grown;
    s->first_output = prog->num_nodes;
    s->num_outputs = outputs;
    prog->num_nodes += outputs;
    prog->stmts[prog->num_stmts++] = *s;
    memset(s, 0, sizeof *s);
    return SL_OK;
}

/* The result of a statement with outputs first .. first + want - 1: one node, or a list. */
static sl_status node_result(parser *ps, int first, int want, result *r) {
    memset(r, 0, sizeof *r);
    if (want == 1) {
        sl__parse_set_node(&r->val, first);
        return SL_OK;
    }
    r->val.kind = SL_VAL_LIST;
    if (!(r->val.items = calloc((size_t)want, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    r->val.n = want;
    for (int k = 0; k < want; k++) sl__parse_set_node(&r->val.items[k], first + k);
    return SL_OK;
}

/* Adds s with want outputs and sets r to them; s is cleared either way. */
static sl_status emit(parser *ps, sl__parse_stmt *s, int want, result *r) {
    int first = ps->prog->num_nodes;
    sl_status st = add_stmt(ps, s, want);
    if (st == SL_OK) st = node_result(ps, first, want, r);
    sl__parse_stmt_clear(s);
    return st;
}

sl_status sl__parse_cond_stmt(parser *ps, sl__parse_stmt_kind kind, sl__parse_pos pos,
                              const int *nodes, int n, result *r) {
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.pos = pos;
    snprintf(s.written, sizeof s.written, "%s", kind == SL__PARSE_MERGE ? "merge" : "if");
    if (n && !(s.inputs = calloc((size_t)n, sizeof *s.inputs)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int k = 0; k < n; k++) s.inputs[s.num_inputs++] = nodes[k];
    if (r) return emit(ps, &s, 1, r);
    sl_status st = add_stmt(ps, &s, 0);
    sl__parse_stmt_clear(&s);
    return st;
}

sl_status sl__parse_named_op(parser *ps, sl__parse_pos pos, const char *op, int node, result *r) {
    if (ps->no_ops) return sl__parse_perr(ps, SL_EINVAL, pos, "%s cannot be used here", op);
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = pos;
    snprintf(s.op, sizeof s.op, "%s", op);
    snprintf(s.written, sizeof s.written, "%s", op);
    s.inputs = malloc(sizeof *s.inputs);
    s.input_pos = malloc(sizeof *s.input_pos);
    if (!s.inputs || !s.input_pos) {
        sl__parse_stmt_clear(&s);
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    s.inputs[0] = node;
    s.input_pos[0] = pos;
    s.num_inputs = 1;
    return emit(ps, &s, 1, r);
}

/* readers.tfrecord taken whole (`inputs = fn.readers.tfrecord(...)`): as DALI, a dict of its
 * outputs by feature name, in the order of `features` (held as a list of [key, node] pairs);
 * s is cleared either way. */
static sl_status emit_by_feature(parser *ps, sl__parse_stmt *s, result *r) {
    const sl__val *features = NULL;
    for (int i = 0; i < s->num_args; i++)
        if (!strcmp(s->args[i].name, "features")) features = &s->args[i].val;
    if (!features || features->kind != SL_VAL_LIST || features->n < 1) /* the op says why */
        return emit(ps, s, 1, r);
    int n = features->n;
    for (int k = 0; k < n; k++) {
        const sl__val *p = &features->items[k];
        if (p->kind != SL_VAL_LIST || p->n != 2 || p->items[0].kind != SL_VAL_STR)
            return emit(ps, s, 1, r); /* not a dict of features: the op says why */
    }
    sl__val keys;
    memset(&keys, 0, sizeof keys);
    keys.kind = SL_VAL_LIST;
    keys.n = n;
    keys.items = calloc((size_t)n, sizeof *keys.items);
    sl_status st = keys.items ? SL_OK : sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int k = 0; k < n && st == SL_OK; k++)
        st = sl__val_copy(&keys.items[k], &features->items[k].items[0], ps->err);
    result nodes;
    memset(&nodes, 0, sizeof nodes);
    if (st == SL_OK)
        st = emit(ps, s, n, &nodes);
    else
        sl__parse_stmt_clear(s);
    memset(r, 0, sizeof *r);
    if (st == SL_OK) {
        r->dict = true;
        r->val.kind = SL_VAL_LIST;
        r->val.items = calloc((size_t)n, sizeof *r->val.items);
        if (!r->val.items)
            st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        else
            r->val.n = n;
    }
    for (int k = 0; k < n && st == SL_OK; k++) {
        sl__val *pair = &r->val.items[k];
        pair->kind = SL_VAL_LIST;
        if (!(pair->items = calloc(2, sizeof *pair->items))) {
            st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            break;
        }
        pair->n = 2;
        pair->items[0] = keys.items[k];
        memset(&keys.items[k], 0, sizeof keys.items[k]);
        sl__parse_set_node(&pair->items[1], n == 1 ? nodes.val.node : nodes.val.items[k].node);
    }
    if (st != SL_OK) sl__parse_result_free(r);
    sl__val_free(&keys);
    sl__parse_result_free(&nodes);
    return st;
}

static sl_status ints_arg(parser *ps, sl__parse_arg *a, const char *name, sl__parse_pos pos, int k,
                          const int64_t *v) {
    snprintf(a->name, sizeof a->name, "%s", name);
    a->pos = pos;
    a->val.kind = SL_VAL_LIST;
    if (!(a->val.items = calloc((size_t)k, sizeof *a->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    a->val.n = k;
    for (int d = 0; d < k; d++) sl__parse_set_int(&a->val.items[d], v[d]);
    return SL_OK;
}

/* a part of a subscript given per sample: the op output for argument name (lo_1, at_0, ...) */
typedef struct sub_node {
    char name[16];
    int node;
    sl__parse_pos pos;
} sub_node;

static sl_status subscript_op(parser *ps, const expr *e, int node, int k, const int64_t *mode,
                              const int64_t *lo, const int64_t *hi, const int64_t *step,
                              const char *names, const sub_node *nodes, int nn, result *r) {
    if (ps->no_ops)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "an operator cannot be called here");
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = e->pos;
    snprintf(s.op, sizeof s.op, "tensor_subscript");
    snprintf(s.written, sizeof s.written, "[] (tensor_subscript)");
    s.inputs = malloc(sizeof *s.inputs);
    s.input_pos = malloc(sizeof *s.input_pos);
    s.args = calloc((size_t)(5 + nn), sizeof *s.args);
    sl_status st =
        s.inputs && s.input_pos && s.args ? SL_OK : sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    if (st == SL_OK) {
        s.inputs[0] = node;
        s.input_pos[0] = e->a->pos;
        s.num_inputs = 1;
        const char *argnames[4] = {"mode", "lo", "hi", "step"};
        const int64_t *vals[4] = {mode, lo, hi, step};
        for (int i = 0; i < 4 && st == SL_OK; i++, s.num_args++)
            st = ints_arg(ps, &s.args[i], argnames[i], e->pos, k, vals[i]);
    }
    if (st == SL_OK && names[0]) {
        sl__parse_arg *a = &s.args[s.num_args++];
        snprintf(a->name, sizeof a->name, "names");
        a->pos = e->pos;
        a->val.kind = SL_VAL_STR;
        if (!(a->val.s = strdup(names))) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int i = 0; i < nn && st == SL_OK; i++) {
        sl__parse_arg *a = &s.args[s.num_args++];
        _Static_assert(sizeof a->name >= sizeof nodes[i].name, "an argument's name fits");
        memcpy(a->name, nodes[i].name, sizeof nodes[i].name);
        a->pos = nodes[i].pos;
        sl__parse_set_node(&a->val, nodes[i].node);
    }
    if (st != SL_OK) {
        sl__parse_stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, 1, r);
}

/* Part `which` (lo, hi, step, at) of subscript d: an int into *v, or an op output (an integer per
 * sample) added to nodes as argument which_d, *v the placeholder 0; NULL part: *v unchanged. */
static sl_status subscript_part(parser *ps, const expr *part, int64_t *v, const char *which, int d,
                                sub_node *nodes, int *nn) {
    if (!part) return SL_OK;
    result x;
    SL_TRY(sl__parse_eval(ps, part, 1, &x));
    sl_status st = SL_OK;
    if (sl__parse_is_node(&x)) {
        sub_node *n = &nodes[(*nn)++];
        snprintf(n->name, sizeof n->name, "%s_%d", which, d);
        n->node = x.val.node;
        n->pos = part->pos;
        *v = 0;
    } else if (!x.dict && (x.val.kind == SL_VAL_INT || x.val.kind == SL_VAL_BOOL)) {
        *v = sl__parse_as_i(&x.val);
    } else {
        st = sl__parse_perr(ps, SL_EINVAL, part->pos,
                            "an op output's subscripts are ints, op outputs and slices of them, "
                            "newaxis or ...");
    }
    sl__parse_result_free(&x);
    return st;
}

/* x is DALI's newaxis (dali.newaxis, sluice.newaxis, nvidia.dali.newaxis; None, numpy's), or
 * newaxis("F") naming the new dim: its letter in *name ('*' unnamed) */
static sl_status newaxis_of(parser *ps, const expr *x, bool *is, char *name) {
    *is = false;
    *name = '*';
    if (x->kind == E_NONE) return (*is = true), SL_OK;
    const expr *f = x->kind == E_CALL ? x->a : x;
    char dotted[64];
    if (f->kind != E_ATTR || !sl__parse_dotted(f, dotted, sizeof dotted)) return SL_OK;
    if (strcmp(dotted, "dali.newaxis") && strcmp(dotted, "sluice.newaxis") &&
        strcmp(dotted, "nvidia.dali.newaxis"))
        return SL_OK;
    *is = true;
    if (x->kind != E_CALL) return SL_OK;
    if (x->n != 1 || x->nkw || x->items[0]->kind != E_STR || strlen(x->items[0]->s) != 1)
        return sl__parse_perr(ps, SL_EINVAL, x->pos,
                              "newaxis takes one layout letter for the new dim: %s(\"F\")", dotted);
    *name = x->items[0]->s[0];
    return SL_OK;
}

/* node[...]: DALI's tensor indexing, the tensor_subscript op (indices and slices of ints or of op
 * outputs, newaxis and ...) */
sl_status sl__parse_node_subscript(parser *ps, const expr *e, int node, result *r) {
    const expr *const *items = (const expr *const *)&e->b;
    int k = 1;
    if (e->b->kind == E_TUPLE) items = (const expr *const *)e->b->items, k = e->b->n;
    if (k > 2 * SL_MAX_DIMS)
        return sl__parse_perr(ps, SL_EINVAL, e->b->pos, "%d subscripts (at most %d)", k,
                              2 * SL_MAX_DIMS);
    int64_t mode[2 * SL_MAX_DIMS], lo[2 * SL_MAX_DIMS], hi[2 * SL_MAX_DIMS], step[2 * SL_MAX_DIMS];
    char names[2 * SL_MAX_DIMS + 1];
    sub_node nodes[4 * 2 * SL_MAX_DIMS];
    int nnew = 0, ells = 0, nn = 0;
    bool named = false;
    for (int d = 0; d < k; d++) {
        const expr *x = items[d];
        lo[d] = hi[d] = 0, step[d] = 1;
        bool is_new;
        char letter;
        SL_TRY(newaxis_of(ps, x, &is_new, &letter));
        if (is_new) {
            mode[d] = 16;
            names[nnew++] = letter;
            named |= letter != '*';
        } else if (x->kind == E_ELLIPSIS) {
            if (ells++)
                return sl__parse_perr(ps, SL_EINVAL, x->pos,
                                      "an index can only have a single ellipsis ('...')");
            mode[d] = 32;
        } else if (x->kind == E_SLICE) {
            mode[d] = (x->a == NULL) * 1 + (x->b == NULL) * 2;
            int before = nn;
            SL_TRY(subscript_part(ps, x->a, &lo[d], "lo", d, nodes, &nn));
            SL_TRY(subscript_part(ps, x->b, &hi[d], "hi", d, nodes, &nn));
            SL_TRY(subscript_part(ps, x->c, &step[d], "step", d, nodes, &nn));
            bool step_node = nn > before && !strncmp(nodes[nn - 1].name, "step", 4);
            if (step[d] == 0 && !step_node)
                return sl__parse_perr(ps, SL_EINVAL, x->c->pos,
                                      "a slice's step cannot be 0 (Step cannot be zero)");
            if (step_node) step[d] = 1;
        } else {
            mode[d] = 4;
            SL_TRY(subscript_part(ps, x, &lo[d], "at", d, nodes, &nn));
        }
    }
    names[named ? nnew : 0] = '\0';
    return subscript_op(ps, e, node, k, mode, lo, hi, step, names, nodes, nn, r);
}

/* DALI's expressions with an op output on either side, or unary - or ~ of one (b NULL): an
 * `arithmetic` op statement, with the constant operand (if any) as its arguments -- a Python int
 * as int32, a float as float32, a bool as bool, as DALI types them. */
sl_status sl__parse_arith_op(parser *ps, sl__parse_pos pos, const char *sym, const result *a,
                             sl__parse_pos apos, const result *b, sl__parse_pos bpos, result *r) {
    static const struct {
        const char *symbol, *name;
    } ops[] = {{"+", "add"},    {"-", "sub"},     {"*", "mul"},    {"/", "fdiv"},   {"//", "div"},
               {"%", "mod"},    {"**", "pow"},    {"==", "eq"},    {"!=", "neq"},   {"<", "lt"},
               {"<=", "leq"},   {">", "gt"},      {">=", "geq"},   {"&", "bitand"}, {"|", "bitor"},
               {"^", "bitxor"}, {"<<", "lshift"}, {">>", "rshift"}};
    const char *name = NULL;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0] && b; k++)
        if (!strcmp(sym, ops[k].symbol)) name = ops[k].name;
    if (!b) name = !strcmp(sym, "~") ? "invert" : "minus"; /* unary */
    if (!name)
        return sl__parse_perr(ps, SL_EINVAL, pos, "'%s' on op outputs is not supported", sym);
    if (ps->no_ops)
        return sl__parse_perr(ps, SL_EINVAL, pos, "arithmetic on op outputs cannot be used here");
    if ((!sl__parse_is_node(a) && sl__parse_has_node(&a->val)) ||
        (b && !sl__parse_is_node(b) && sl__parse_has_node(&b->val)))
        return sl__parse_perr(ps, SL_EINVAL, pos,
                              "'%s' on several op outputs: unpack them first (a, b = ...)", sym);
    const result *cst = !sl__parse_is_node(a) ? a : b && !sl__parse_is_node(b) ? b : NULL;
    if (cst && (cst->dict || !sl__parse_numeric(&cst->val)))
        return sl__parse_perr(ps, SL_EINVAL, cst == a ? apos : bpos,
                              "unsupported operand type for '%s' with an op output: %s (int, "
                              "float or bool wanted)",
                              sym, sl__parse_kind_name(cst));
    if (cst && cst->val.kind == SL_VAL_INT && (cst->val.i < INT32_MIN || cst->val.i > INT32_MAX))
        return sl__parse_perr(ps, SL_EINVAL, cst == a ? apos : bpos,
                              "the constant %lld does not fit an int32 (DALI's type for a "
                              "Python int)",
                              (long long)cst->val.i);
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = pos;
    snprintf(s.op, sizeof s.op, "arithmetic");
    snprintf(s.written, sizeof s.written, "'%s'", sym);
    sl_status st = SL_OK;
    s.inputs = malloc(2 * sizeof *s.inputs);
    s.input_pos = malloc(2 * sizeof *s.input_pos);
    s.args = calloc(4, sizeof *s.args);
    if (!s.inputs || !s.input_pos || !s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        const result *x = k ? b : a;
        if (!x || !sl__parse_is_node(x)) continue;
        s.inputs[s.num_inputs] = x->val.node;
        s.input_pos[s.num_inputs++] = k ? bpos : apos;
    }
    if (st == SL_OK) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "op");
        arg->pos = pos;
        arg->val.kind = SL_VAL_STR;
        if (!(arg->val.s = strdup(name))) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    if (st == SL_OK && cst) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant");
        arg->pos = cst == a ? apos : bpos;
        arg->val = cst->val;                /* a number: nothing to own */
        if (arg->val.kind == SL_VAL_BOOL) { /* the op's constant is a float argument */
            arg->val.kind = SL_VAL_INT;
            arg->val.i = arg->val.b;
        }
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_type");
        arg->pos = pos;
        arg->val.kind = SL_VAL_STR;
        arg->val.s = strdup(cst->val.kind == SL_VAL_FLOAT  ? "float32"
                            : cst->val.kind == SL_VAL_BOOL ? "bool"
                                                           : "int32");
        if (!arg->val.s) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_left");
        arg->pos = pos;
        sl__parse_set_bool(&arg->val, cst == a);
    }
    if (st != SL_OK) {
        sl__parse_stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, 1, r);
}

/* ---- calls ----------------------------------------------------------------------------------- */

void sl__parse_kwargs_free(kwargs *kw) {
    for (int k = 0; k < kw->n; k++) {
        sl__parse_result_free(&kw->vals[k]);
        free(kw->names[k]);
    }
    free(kw->names);
    free(kw->pos);
    free(kw->vals);
    memset(kw, 0, sizeof kw[0]);
}

static sl_status kwargs_add(parser *ps, kwargs *kw, const char *name, sl__parse_pos pos,
                            result *v) {
    for (int k = 0; k < kw->n; k++)
        if (!strcmp(kw->names[k], name)) {
            sl__parse_result_free(v);
            return sl__parse_perr(ps, SL_EINVAL, pos, "keyword argument repeated: %s", name);
        }
    if (kw->n >= SL__PARSE_KWARGS_MAX) {
        sl__parse_result_free(v);
        return sl__parse_perr(ps, SL_EINVAL, pos, "too many keyword arguments (over %d)",
                              SL__PARSE_KWARGS_MAX);
    }
    char *owned = strdup(name);
    if (!owned) {
        sl__parse_result_free(v);
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    if ((kw->n & (kw->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        size_t cap = kw->n ? 2 * (size_t)kw->n : 1;
        char **nn = realloc(kw->names, cap * sizeof *nn);
        if (nn) kw->names = nn;
        sl__parse_pos *np = nn ? realloc(kw->pos, cap * sizeof *np) : NULL;
        if (np) kw->pos = np;
        result *nv = np ? realloc(kw->vals, cap * sizeof *nv) : NULL;
        if (!nv) {
            free(owned);
            sl__parse_result_free(v);
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        }
        kw->vals = nv;
    }
    kw->names[kw->n] = owned;
    kw->pos[kw->n] = pos;
    kw->vals[kw->n++] = *v;
    memset(v, 0, sizeof *v);
    return SL_OK;
}

/* Evaluates e's keyword arguments in order into kw (freed on error). */
sl_status sl__parse_eval_kwargs(parser *ps, const expr *e, kwargs *kw) {
    memset(kw, 0, sizeof *kw);
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        result v;
        st = sl__parse_eval(ps, e->kwvals[k], 1, &v);
        if (st != SL_OK) break;
        if (e->kwnames[k]) {
            st = kwargs_add(ps, kw, e->kwnames[k], e->kwpos[k], &v);
            continue;
        }
        if (!v.dict) { /* **mapping */
            st =
                sl__parse_perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                               "'**' needs a dict (a dict literal, or a name bound to one), not %s",
                               sl__parse_kind_name(&v));
            sl__parse_result_free(&v);
            break;
        }
        for (int j = 0; j < v.val.n && st == SL_OK; j++) {
            sl__val *pair = &v.val.items[j];
            result item = {pair->items[1], false};
            memset(&pair->items[1], 0, sizeof pair->items[1]);
            st = kwargs_add(ps, kw, pair->items[0].s, e->kwpos[k], &item);
        }
        sl__parse_result_free(&v);
    }
    if (st != SL_OK) sl__parse_kwargs_free(kw);
    return st;
}

/* The callee as a dotted name into name when it is fn.<op>, dali.fn.<op> or nvidia.dali.fn.<op>. */
static bool op_callee(const expr *callee, char *name, size_t size) {
    char local[256];
    if (!name) name = local, size = sizeof local;
    return sl__parse_dotted(callee, name, size) &&
           (sl__parse_has_prefix(name, "fn.") || sl__parse_has_prefix(name, "dali.fn.") ||
            sl__parse_has_prefix(name, "nvidia.dali.fn."));
}

static sl_status call_unsupported(parser *ps, const expr *e) {
    char name[256];
    if (sl__parse_dotted(e->a, name, sizeof name))
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "unsupported call '%s(...)': only fn.<operator>(...), .gpu()/.cpu(), "
                              "range(), len() and functions defined in the text can be called",
                              name);
    return sl__parse_perr(
        ps, SL_EINVAL, e->pos,
        "unsupported call: only fn.<operator>(...), .gpu()/.cpu(), range(), len() and "
        "functions defined in the text can be called");
}

/* fn.<op>(inputs..., kw=...) */
static sl_status eval_op(parser *ps, const expr *e, int want, result *r) {
    if (ps->no_ops)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "an operator cannot be called here");
    char name[256];
    if (!op_callee(e->a, name, sizeof name)) return call_unsupported(ps, e);
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = e->pos;
    const char *bare = name;
    if (sl__parse_has_prefix(bare, "nvidia.dali.")) bare += strlen("nvidia.dali.");
    if (sl__parse_has_prefix(bare, "dali.")) bare += strlen("dali.");
    bare += strlen("fn.");
    if (strlen(name) >= sizeof s.written)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "operator name too long");
    memcpy(s.written, name, strlen(name) + 1); /* bare is a tail of name: it fits too */
    memcpy(s.op, bare, strlen(bare) + 1);
    sl_status st = SL_OK;
    if (e->n) {
        s.inputs = malloc((size_t)e->n * sizeof *s.inputs);
        s.input_pos = malloc((size_t)e->n * sizeof *s.input_pos);
        if (!s.inputs || !s.input_pos) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        result in;
        st = sl__parse_eval(ps, e->items[k], 1, &in);
        if (st != SL_OK) break;
        if (!sl__parse_is_node(&in)) {
            st = sl__parse_perr(
                ps, SL_EINVAL, e->items[k]->pos,
                sl__parse_has_node(&in.val)
                    ? "input %d of %s is several op outputs: unpack them (a, b = ...) and "
                      "pass one"
                    : "input %d of %s must be an op output; constants are not supported as "
                      "inputs",
                k, name);
            sl__parse_result_free(&in);
            break;
        }
        s.inputs[s.num_inputs] = in.val.node;
        s.input_pos[s.num_inputs++] = e->items[k]->pos;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = sl__parse_eval_kwargs(ps, e, &kw);
    if (st == SL_OK && kw.n) {
        s.args = calloc((size_t)kw.n, sizeof *s.args);
        if (!s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        result *v = &kw.vals[k];
        /* a dict (readers.tfrecord's features) goes as its list of [key, value] pairs */
        if (!sl__parse_is_node(v) && sl__parse_has_node(&v->val)) {
            st = sl__parse_perr(ps, SL_EINVAL, kw.pos[k],
                                "argument %s: %s is not supported as an argument", kw.names[k],
                                v->dict ? "a dict of op outputs" : "a list of op outputs");
            break;
        }
        if (!strcmp(kw.names[k], "device")) {
            sl__parse_pos at = kw.pos[k]; /* the value, when written device=... */
            for (int j = 0; j < e->nkw; j++)
                if (e->kwnames[j] && !strcmp(e->kwnames[j], "device")) at = e->kwvals[j]->pos;
            const char *d = v->val.kind == SL_VAL_STR ? v->val.s : NULL;
            if (!d || (strcmp(d, "cpu") && strcmp(d, "gpu") && strcmp(d, "mixed"))) {
                st = sl__parse_perr(ps, SL_EINVAL, at,
                                    "device must be \"cpu\", \"mixed\" or \"gpu\"");
                break;
            }
            snprintf(s.device, sizeof s.device, "%s", d);
            s.device_pos = at;
            continue;
        }
        sl__parse_arg *a = &s.args[s.num_args++];
        snprintf(a->name, sizeof a->name, "%s", kw.names[k]);
        a->pos = kw.pos[k];
        a->val = v->val;
        memset(&v->val, 0, sizeof v->val);
    }
    sl__parse_kwargs_free(&kw);
    if (st != SL_OK) {
        sl__parse_stmt_clear(&s);
        return st;
    }
    if (want == 1 && !strcmp(s.op, "readers.tfrecord")) return emit_by_feature(ps, &s, r);
    return emit(ps, &s, want, r);
}

/* range(stop) / range(start, stop[, step]) from e's arguments. */
sl_status sl__parse_range_args(parser *ps, const expr *e, int64_t *start, int64_t *stop,
                               int64_t *stepv) {
    if (e->nkw || e->n < 1 || e->n > 3)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "range() takes 1 to 3 positional integers");
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < e->n; k++) {
        sl__val x;
        SL_TRY(sl__parse_eval_const(ps, e->items[k], &x, "a range() argument"));
        bool ok = x.kind == SL_VAL_INT || x.kind == SL_VAL_BOOL;
        int64_t i = sl__parse_as_i(&x);
        sl__val_free(&x);
        if (!ok)
            return sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos,
                                  "range() arguments must be integers");
        v[e->n == 1 ? 1 : k] = i;
    }
    *start = v[0];
    *stop = v[1];
    *stepv = v[2];
    if (*stepv == 0)
        return sl__parse_perr(ps, SL_EINVAL, e->items[2]->pos, "range() step must not be zero");
    return SL_OK;
}

uint64_t sl__parse_range_len(int64_t start, int64_t stop, int64_t stepv) {
    if (stepv > 0 && start < stop)
        return ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)stepv + 1;
    if (stepv < 0 && start > stop)
        return ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)stepv) + 1;
    return 0;
}

/* range(...) as a list (outside a for loop), len(x) */
static sl_status eval_builtin(parser *ps, const expr *e, const char *name, result *r) {
    memset(r, 0, sizeof *r);
    if (!strcmp(name, "range")) {
        int64_t a, b, s;
        SL_TRY(sl__parse_range_args(ps, e, &a, &b, &s));
        uint64_t n = sl__parse_range_len(a, b, s);
        if (n > SL__PARSE_CELLS_MAX)
            return sl__parse_perr(ps, SL_EINVAL, e->pos,
                                  "range() too long for a list (over %d items)",
                                  SL__PARSE_CELLS_MAX);
        SL_TRY(sl__parse_step(ps, e->pos, (int64_t)n));
        r->val.kind = SL_VAL_LIST;
        if (n && !(r->val.items = calloc(n, sizeof *r->val.items)))
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        r->val.n = (int)n;
        for (uint64_t k = 0; k < n; k++) sl__parse_set_int(&r->val.items[k], a + (int64_t)k * s);
        return SL_OK;
    }
    /* len */
    if (e->nkw || e->n != 1)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "len() takes one argument");
    result x;
    SL_TRY(sl__parse_eval(ps, e->items[0], 1, &x));
    int64_t n = -1;
    if (x.val.kind == SL_VAL_LIST) n = x.val.n;
    if (x.val.kind == SL_VAL_STR && !x.dict) n = (int64_t)strlen(x.val.s);
    sl_status st = SL_OK;
    if (n < 0)
        st = sl__parse_perr(ps, SL_EINVAL, e->items[0]->pos,
                            "len() of %s is not known when the pipeline "
                            "is built",
                            sl__parse_kind_name(&x));
    else
        sl__parse_set_int(&r->val, n);
    sl__parse_result_free(&x);
    return st;
}

/* tfrec.X (DALI's `import nvidia.dali.tfrecord as tfrec`), dali.tfrecord.X, nvidia.dali.tfrecord.X:
 * X, else NULL */
const char *sl__parse_tfrec_member(const char *dotted) {
    static const char *const prefixes[] = {"tfrec.", "dali.tfrecord.", "nvidia.dali.tfrecord."};
    for (int k = 0; k < 3; k++)
        if (sl__parse_has_prefix(dotted, prefixes[k])) return dotted + strlen(prefixes[k]);
    return NULL;
}

/* tfrec.FixedLenFeature(shape, dtype, default_value) and
 * tfrec.VarLenFeature([partial_shape,] dtype, default_value): the list [kind, shape, dtype,
 * default] (VarLen without a partial shape: [kind, dtype, default]) that readers.tfrecord reads */
static sl_status eval_feature(parser *ps, const expr *e, const char *kind, result *r);

/* e calls tfrec.FixedLenFeature / VarLenFeature: *st its value's status, true; else false. Not
 * inlined: sl__parse_eval recurses through sl__parse_eval_call, and hostile nesting must
 * not find its frame grown by these buffers. */
__attribute__((noinline)) static bool eval_feature_call(parser *ps, const expr *e, result *r,
                                                        sl_status *st) {
    char dotted[256];
    const char *tf =
        sl__parse_dotted(e->a, dotted, sizeof dotted) ? sl__parse_tfrec_member(dotted) : NULL;
    if (!tf || (strcmp(tf, "FixedLenFeature") && strcmp(tf, "VarLenFeature"))) return false;
    *st = eval_feature(ps, e, tf, r);
    return true;
}

__attribute__((noinline)) static sl_status eval_feature(parser *ps, const expr *e, const char *kind,
                                                        result *r) {
    bool var = !strcmp(kind, "VarLenFeature");
    const char *params[3] = {var ? "partial_shape" : "shape", "dtype", "default_value"};
    const expr *slot[3] = {NULL, NULL, NULL};
    int first = var && e->n == 2 ? 1 : 0; /* VarLenFeature(dtype, default_value) */
    if (e->n > 3)
        return sl__parse_perr(ps, SL_EINVAL, e->items[3]->pos, "tfrec.%s takes at most 3 arguments",
                              kind);
    for (int k = 0; k < e->n; k++) slot[first + k] = e->items[k];
    for (int k = 0; k < e->nkw; k++) {
        int p = 0;
        while (e->kwnames[k] && p < 3 && strcmp(e->kwnames[k], params[p])) p++;
        if (!e->kwnames[k] || p == 3)
            return sl__parse_perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                                  "tfrec.%s takes %s, dtype and default_value", kind, params[0]);
        if (slot[p])
            return sl__parse_perr(ps, SL_EINVAL, e->kwpos[k],
                                  "tfrec.%s got multiple values for '%s'", kind, params[p]);
        slot[p] = e->kwvals[k];
    }
    for (int p = var ? 1 : 0; p < 3; p++)
        if (!slot[p])
            return sl__parse_perr(ps, SL_EINVAL, e->pos, "tfrec.%s needs %s", kind, params[p]);
    memset(r, 0, sizeof *r);
    r->val.kind = SL_VAL_LIST;
    if (!(r->val.items = calloc(4, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    r->val.items[0].kind = SL_VAL_ENUM;
    r->val.n = 1;
    if (!(r->val.items[0].s = strdup(kind))) {
        sl__parse_result_free(r);
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int p = 0; p < 3; p++) {
        if (!slot[p]) continue;
        sl_status st =
            sl__parse_eval_const(ps, slot[p], &r->val.items[r->val.n], "a feature's argument");
        if (st != SL_OK) {
            sl__parse_result_free(r);
            return st;
        }
        r->val.n++;
    }
    return SL_OK;
}

sl_status sl__parse_eval_call(parser *ps, const expr *e, int want, result *r) {
    const expr *callee = e->a;
    if (op_callee(callee, NULL, 0)) return eval_op(ps, e, want, r);
    if (callee->kind == E_ATTR &&
        (!strcmp(callee->s, "FixedLenFeature") || !strcmp(callee->s, "VarLenFeature"))) {
        sl_status st;
        if (eval_feature_call(ps, e, r, &st)) return st;
    }
    if (callee->kind == E_NAME) {
        func *f = sl__parse_func_find(ps, callee->s);
        if (f) return sl__parse_call_func(ps, f, e, want, r);
        if ((!strcmp(callee->s, "range") || !strcmp(callee->s, "len")) &&
            !sl__parse_env_find(ps, callee->s))
            return eval_builtin(ps, e, callee->s, r);
    }
    if (callee->kind == E_ATTR && (!strcmp(callee->s, "gpu") || !strcmp(callee->s, "cpu"))) {
        if (e->n || e->nkw)
            return sl__parse_perr(ps, SL_EINVAL, callee->npos, ".%s() takes no arguments",
                                  callee->s);
        if (ps->no_ops)
            return sl__parse_perr(ps, SL_EINVAL, callee->npos, ".%s() cannot be used here",
                                  callee->s);
        result base;
        SL_TRY(sl__parse_eval(ps, callee->a, 1, &base));
        if (!sl__parse_is_node(&base)) {
            sl__parse_result_free(&base);
            return sl__parse_perr(ps, SL_EINVAL, callee->npos, ".%s() needs an op output",
                                  callee->s);
        }
        if (want != 1)
            return sl__parse_perr(ps, SL_EINVAL, e->pos, ".%s() gives one value, not %d", callee->s,
                                  want);
        sl__parse_stmt s;
        memset(&s, 0, sizeof s);
        s.kind = SL__PARSE_TRANSFER;
        s.pos = callee->npos;
        snprintf(s.op, sizeof s.op, "%s", callee->s);
        snprintf(s.written, sizeof s.written, ".%s()", callee->s);
        s.to = !strcmp(callee->s, "gpu") ? SL_DEVICE_CUDA : SL_DEVICE_CPU;
        s.inputs = malloc(sizeof *s.inputs);
        s.input_pos = malloc(sizeof *s.input_pos);
        if (!s.inputs || !s.input_pos) {
            sl__parse_stmt_clear(&s);
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        }
        s.inputs[0] = base.val.node;
        s.input_pos[0] = callee->a->pos;
        s.num_inputs = 1;
        return emit(ps, &s, 1, r);
    }
    return call_unsupported(ps, e);
}
