/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's evaluator: an expression tree (parse_tree.h) to its value when the
 * pipeline is built (parse_run.h's result) -- constants folded to sl__val with Python's
 * arithmetic (ints checked for overflow, floors as Python's), comparison chains, truth, and/or/not
 * and conditional expressions deciding what is built, lists, tuples and dicts checked for size
 * and depth, names looked up, types.* and tfrec.* constants -- handing calls and arithmetic on
 * op outputs to parse_call.c. Every expression evaluated is a step of the bounded build-time
 * work, and anything that would depend on the data is an error saying so. */
#include "text/parse_int.h"

#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- evaluation ------------------------------------------------------------------------------ */

void sl__parse_result_free(result *r) {
    sl__val_free(&r->val);
    r->dict = false;
}

bool sl__parse_is_node(const result *r) {
    return r->val.kind == SL_VAL_NODE;
}

bool sl__parse_has_node(const sl__val *v) {
    if (v->kind == SL_VAL_NODE) return true;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++)
        if (sl__parse_has_node(&v->items[k])) return true;
    return false;
}

void sl__parse_set_node(sl__val *v, int node) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_NODE;
    v->node = node;
}

/* What copying v costs in steps: its cells, a string counting one per 16 bytes. */
static int64_t val_cost(const sl__val *v) {
    int64_t c = 1;
    if ((v->kind == SL_VAL_STR || v->kind == SL_VAL_ENUM) && v->s) c += (int64_t)strlen(v->s) / 16;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++) c += val_cost(&v->items[k]);
    return c;
}

static int val_depth(const sl__val *v) {
    int d = 0;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++) {
        int x = val_depth(&v->items[k]);
        if (x > d) d = x;
    }
    return d + 1;
}

/* One step of build-time work more (cost of them); an error at pos -- or at the loop that is
 * running -- when the text has done too much. */
sl_status sl__parse_step(parser *ps, sl__parse_pos pos, int64_t cost) {
    ps->steps += cost;
    if (ps->steps <= ps->step_limit) return SL_OK;
    if (ps->loop) pos = ps->loop->pos;
    return sl__parse_perr(
        ps, SL_EINVAL, pos,
        "the pipeline takes too long to build: over %lld steps%s (loops and helper "
        "calls run when the pipeline is built)",
        (long long)(ps->step_limit - (ps->nexprs + ps->nstmts)), ps->loop ? " in this loop" : "");
}

/* e as a plain constant (no op output, no dict): what names it in errors */
sl_status sl__parse_eval_const(parser *ps, const expr *e, sl__val *out, const char *what) {
    result r;
    SL_TRY(sl__parse_eval(ps, e, 1, &r));
    if (sl__parse_has_node(&r.val) || r.dict) {
        sl__parse_result_free(&r);
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "%s must be a constant, not %s", what,
                              r.dict ? "a dict" : "an op output");
    }
    *out = r.val;
    return SL_OK;
}

static sl_status copy_result(parser *ps, result *dst, const result *src, sl__parse_pos pos) {
    SL_TRY(sl__parse_step(ps, pos, val_cost(&src->val)));
    dst->dict = src->dict;
    return sl__val_copy(&dst->val, &src->val, ps->err);
}

static sl_status eval_name(parser *ps, const expr *e, result *r) {
    env_entry *v = sl__parse_env_find(ps, e->s);
    if (v && v->unbound)
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "parameter '%s' is not bound; pass --arg %s=VALUE", e->s, e->s);
    if (v && v->one_sided)
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "'%s' is assigned in only one branch of the `if` on data at line "
                              "%d, so only some samples have it: assign it in both branches (or "
                              "before the `if`)",
                              e->s, v->one_sided);
    if (v) return copy_result(ps, r, &v->v, e->pos);
    bool bound;
    SL_TRY(sl__parse_bind_get(ps, e->s, &r->val, &bound));
    if (bound) return SL_OK;
    if (!strcmp(e->s, "fn") || !strcmp(e->s, "types") || !strcmp(e->s, "dali"))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is a module, not a value", e->s);
    if (sl__parse_func_find(ps, e->s))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is a function: call it, %s(...)", e->s,
                              e->s);
    const char *s = sl__parse_suggest_name(ps, e->s);
    if (s)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "name '%s' is not defined; did you mean '%s'?",
                              e->s, s);
    return sl__parse_perr(ps, SL_EINVAL, e->pos,
                          "name '%s' is not defined; bind it with --arg %s=VALUE", e->s, e->s);
}

bool sl__parse_numeric(const sl__val *v) {
    return v->kind == SL_VAL_INT || v->kind == SL_VAL_FLOAT || v->kind == SL_VAL_BOOL;
}
static double as_f(const sl__val *v) {
    return v->kind == SL_VAL_FLOAT ? v->f : v->kind == SL_VAL_BOOL ? (double)v->b : (double)v->i;
}
int64_t sl__parse_as_i(const sl__val *v) {
    return v->kind == SL_VAL_BOOL ? v->b : v->i;
}

const char *sl__parse_kind_name(const result *r) {
    if (r->dict) return "dict";
    switch (r->val.kind) {
    case SL_VAL_NONE:
        return "None";
    case SL_VAL_BOOL:
        return "bool";
    case SL_VAL_INT:
        return "int";
    case SL_VAL_FLOAT:
        return "float";
    case SL_VAL_STR:
        return "str";
    case SL_VAL_ENUM:
        return "constant";
    case SL_VAL_LIST:
        return sl__parse_has_node(&r->val) ? "list of op outputs" : "list";
    case SL_VAL_NODE:
        return "op output";
    }
    return "?";
}

static const char *val_kind_name(const sl__val *v) {
    result r = {*v, false};
    return sl__parse_kind_name(&r);
}

void sl__parse_set_int(sl__val *v, int64_t i) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_INT;
    v->i = i;
    v->f = (double)i;
}
static void set_float(sl__val *v, double f) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_FLOAT;
    v->f = f;
}
void sl__parse_set_bool(sl__val *v, bool b) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_BOOL;
    v->b = b;
    v->i = b;
}

static sl_status arith(parser *ps, const expr *e, const sl__val *a, const sl__val *b,
                       sl__val *out) {
    const char *op = e->op;
    if (a->kind == SL_VAL_STR && b->kind == SL_VAL_STR && !strcmp(op, "+")) {
        size_t la = strlen(a->s), lb = strlen(b->s);
        if (la + lb > SL__PARSE_CELLS_MAX)
            return sl__parse_perr(ps, SL_EINVAL, e->pos, "string too long (over %d bytes)",
                                  SL__PARSE_CELLS_MAX);
        memset(out, 0, sizeof *out);
        out->kind = SL_VAL_STR;
        out->s = malloc(la + lb + 1);
        if (!out->s) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        memcpy(out->s, a->s, la);
        memcpy(out->s + la, b->s, lb + 1);
        return SL_OK;
    }
    if (!sl__parse_numeric(a) || !sl__parse_numeric(b))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s",
                              op, val_kind_name(a), val_kind_name(b));
    bool ints = a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT;
    if (strchr("&|^<>", op[0])) { /* bitwise: ints and bools, as Python */
        if (!ints)
            return sl__parse_perr(ps, SL_EINVAL, e->pos,
                                  "unsupported operand types for %s: %s and %s", op,
                                  val_kind_name(a), val_kind_name(b));
        int64_t x = sl__parse_as_i(a), y = sl__parse_as_i(b);
        if (op[0] == '&' || op[0] == '|' || op[0] == '^') {
            int64_t z = op[0] == '&' ? x & y : op[0] == '|' ? x | y : x ^ y;
            if (a->kind == SL_VAL_BOOL && b->kind == SL_VAL_BOOL)
                sl__parse_set_bool(out, z != 0);
            else
                sl__parse_set_int(out, z);
            return SL_OK;
        }
        if (y < 0) return sl__parse_perr(ps, SL_EINVAL, e->pos, "negative shift count");
        if (op[0] == '>') {
            sl__parse_set_int(out, y >= 63 ? (x < 0 ? -1 : 0) : x >> y);
            return SL_OK;
        }
        if (x != 0 && (y >= 63 || (x > 0 ? x > (INT64_MAX >> y) : x < (INT64_MIN >> y))))
            return sl__parse_perr(ps, SL_EINVAL, e->pos, "integer overflow in '<<'");
        sl__parse_set_int(out, (int64_t)((uint64_t)x << y));
        return SL_OK;
    }
    if (!strcmp(op, "/") || !strcmp(op, "//") || !strcmp(op, "%")) {
        if (as_f(b) == 0.0) return sl__parse_perr(ps, SL_EINVAL, e->pos, "division by zero");
    }
    if (ints) {
        int64_t x = sl__parse_as_i(a), y = sl__parse_as_i(b), z = 0;
        bool ovf = false;
        if (!strcmp(op, "+"))
            ovf = __builtin_add_overflow(x, y, &z);
        else if (!strcmp(op, "-"))
            ovf = __builtin_sub_overflow(x, y, &z);
        else if (!strcmp(op, "*"))
            ovf = __builtin_mul_overflow(x, y, &z);
        else if (!strcmp(op, "/")) {
            set_float(out, (double)x / (double)y);
            return SL_OK;
        } else if (!strcmp(op, "//") || !strcmp(op, "%")) {
            if (x == INT64_MIN && y == -1) {
                ovf = !strcmp(op, "//");
                z = 0;
            } else {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) q--, m += y; /* Python floors */
                z = !strcmp(op, "//") ? q : m;
            }
        } else { /* ** */
            if (y < 0) {
                set_float(out, pow((double)x, (double)y));
                return SL_OK;
            }
            z = 1;
            for (int64_t k = 0; k < y && !ovf; k++) {
                ovf = __builtin_mul_overflow(z, x, &z);
                if (z == 0 || z == 1) break; /* 0**n, 1**n */
                if (x == -1) {
                    z = (y % 2) ? -1 : 1;
                    break;
                }
            }
        }
        if (ovf) return sl__parse_perr(ps, SL_EINVAL, e->pos, "integer overflow in '%s'", op);
        sl__parse_set_int(out, z);
        return SL_OK;
    }
    double x = as_f(a), y = as_f(b), z;
    if (!strcmp(op, "+"))
        z = x + y;
    else if (!strcmp(op, "-"))
        z = x - y;
    else if (!strcmp(op, "*"))
        z = x * y;
    else if (!strcmp(op, "/"))
        z = x / y;
    else if (!strcmp(op, "//"))
        z = floor(x / y);
    else if (!strcmp(op, "%")) {
        z = fmod(x, y);
        if (z != 0 && ((z < 0) != (y < 0))) z += y;
    } else
        z = pow(x, y);
    if (!isfinite(z))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "the result of '%s' is not finite", op);
    set_float(out, z);
    return SL_OK;
}

/* Python's truth of a constant; op outputs and dicts are refused (what: "if", "and", ...) */
sl_status sl__parse_truth(parser *ps, const expr *at, const result *v, const char *what,
                          bool *out) {
    if (sl__parse_has_node(&v->val) && !ps->conditionals)
        return sl__parse_perr(ps, SL_EINVAL, at->pos,
                              "'%s' on an op output: a condition on data needs "
                              "@pipeline_def(enable_conditionals=True), as in DALI",
                              what);
    if (sl__parse_has_node(&v->val))
        return sl__parse_perr(ps, SL_EINVAL, at->pos,
                              "'%s' on several op outputs: a condition on data is one op output "
                              "(one bool per sample)",
                              what);
    const sl__val *x = &v->val;
    switch (x->kind) {
    case SL_VAL_NONE:
        *out = false;
        break;
    case SL_VAL_BOOL:
        *out = x->b;
        break;
    case SL_VAL_INT:
        *out = x->i != 0;
        break;
    case SL_VAL_FLOAT:
        *out = x->f != 0.0;
        break;
    case SL_VAL_STR:
        *out = x->s && x->s[0];
        break;
    case SL_VAL_LIST:
        *out = x->n > 0;
        break;
    default:
        *out = true;
    }
    return SL_OK;
}

static bool val_equal(const sl__val *a, const sl__val *b) {
    if (sl__parse_numeric(a) && sl__parse_numeric(b)) {
        if (a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT)
            return sl__parse_as_i(a) == sl__parse_as_i(b);
        return as_f(a) == as_f(b);
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case SL_VAL_NONE:
        return true;
    case SL_VAL_STR:
    case SL_VAL_ENUM:
        return !strcmp(a->s, b->s);
    case SL_VAL_LIST:
        if (a->n != b->n) return false;
        for (int k = 0; k < a->n; k++)
            if (!val_equal(&a->items[k], &b->items[k])) return false;
        return true;
    default:
        return false;
    }
}

/* a <op> b for constants */
static sl_status compare(parser *ps, const expr *e, int k, const result *a, const result *b,
                         bool *out) {
    static const char *const names[] = {
        "==", "!=", "<", ">", "<=", ">=", "in", "not in", "is", "is not"};
    static const int order[] = {0, 1, 2, 4, 3, 5, 6, 7, 8, 9}; /* C_* -> names */
    int op = e->cops[k];
    const char *sym = names[order[op]];
    if (sl__parse_has_node(&a->val) || sl__parse_has_node(&b->val))
        return sl__parse_perr(
            ps, SL_EINVAL, e->items[sl__parse_has_node(&a->val) ? k : k + 1]->pos,
            "'%s' on an op output in a chain of comparisons: write them apart, joined by & "
            "((a < x) & (x < b))",
            sym);
    if (a->dict || b->dict)
        return sl__parse_perr(ps, SL_EINVAL, e->items[a->dict ? k : k + 1]->pos,
                              "'%s' on a dict is not supported", sym);
    const sl__val *x = &a->val, *y = &b->val;
    switch (op) {
    case C_EQ:
    case C_NE:
        *out = val_equal(x, y) == (op == C_EQ);
        return SL_OK;
    case C_IS:
    case C_IS_NOT: /* identity is equality for the singletons None, True, False */
        *out = (x->kind == y->kind && val_equal(x, y)) == (op == C_IS);
        if (x->kind == SL_VAL_NONE || y->kind == SL_VAL_NONE || x->kind == SL_VAL_BOOL ||
            y->kind == SL_VAL_BOOL)
            return SL_OK;
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "'%s' is only supported against None, True or False", sym);
    case C_IN:
    case C_NOT_IN:
        if (y->kind == SL_VAL_LIST) {
            bool found = false;
            for (int j = 0; j < y->n && !found; j++) found = val_equal(x, &y->items[j]);
            *out = found == (op == C_IN);
            return SL_OK;
        }
        if (y->kind == SL_VAL_STR && x->kind == SL_VAL_STR) {
            *out = (strstr(y->s, x->s) != NULL) == (op == C_IN);
            return SL_OK;
        }
        return sl__parse_perr(ps, SL_EINVAL, e->items[k + 1]->pos,
                              "'%s' needs a list, a tuple or a string on its right, not %s", sym,
                              sl__parse_kind_name(b));
    default:
        break;
    }
    int c;
    if (sl__parse_numeric(x) && sl__parse_numeric(y)) {
        if (x->kind != SL_VAL_FLOAT && y->kind != SL_VAL_FLOAT)
            c = sl__parse_as_i(x) < sl__parse_as_i(y) ? -1 : sl__parse_as_i(x) > sl__parse_as_i(y);
        else
            c = as_f(x) < as_f(y) ? -1 : as_f(x) > as_f(y);
    } else if (x->kind == SL_VAL_STR && y->kind == SL_VAL_STR) {
        c = strcmp(x->s, y->s);
    } else {
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' not supported between %s and %s", sym,
                              sl__parse_kind_name(a), sl__parse_kind_name(b));
    }
    *out = op == C_LT ? c < 0 : op == C_LE ? c <= 0 : op == C_GT ? c > 0 : c >= 0;
    return SL_OK;
}

static sl_status eval_logic(parser *ps, const expr *e, result *r) {
    if (e->kind == E_NOT) {
        result a;
        bool t;
        SL_TRY(sl__parse_eval(ps, e->a, 1, &a));
        if (sl__parse_is_node(&a)) return sl__parse_cond_logic(ps, e, &a, r);
        sl_status st = sl__parse_truth(ps, e->a, &a, "not", &t);
        sl__parse_result_free(&a);
        if (st == SL_OK) sl__parse_set_bool(&r->val, !t);
        return st;
    }
    if (e->kind == E_AND || e->kind == E_OR) { /* the deciding operand, as Python */
        SL_TRY(sl__parse_eval(ps, e->a, 1, r));
        if (sl__parse_is_node(r)) { /* per sample (parse_cond.c) */
            result a = *r;
            memset(r, 0, sizeof *r);
            return sl__parse_cond_logic(ps, e, &a, r);
        }
        bool t;
        sl_status st = sl__parse_truth(ps, e->a, r, e->kind == E_AND ? "and" : "or", &t);
        if (st != SL_OK || t == (e->kind == E_OR)) {
            if (st != SL_OK) sl__parse_result_free(r);
            return st;
        }
        sl__parse_result_free(r);
        return sl__parse_eval(ps, e->b, 1, r);
    }
    if (e->kind == E_IFEXP) { /* only the branch taken is built */
        result c;
        bool t;
        SL_TRY(sl__parse_eval(ps, e->c, 1, &c));
        if (sl__parse_is_node(&c)) return sl__parse_cond_logic(ps, e, &c, r);
        sl_status st = sl__parse_truth(ps, e->c, &c, "if", &t);
        sl__parse_result_free(&c);
        if (st != SL_OK) return st;
        return sl__parse_eval(ps, t ? e->a : e->b, 1, r);
    }
    /* E_CMP: a chain, each operand evaluated once, stopping at the first false */
    result a, b;
    SL_TRY(sl__parse_eval(ps, e->items[0], 1, &a));
    if (e->n == 2 && e->cops[0] <= C_GE) { /* x < 3 with an op output: an arithmetic op */
        static const char *const syms[] = {"==", "!=", "<", "<=", ">", ">="};
        sl_status st = sl__parse_eval(ps, e->items[1], 1, &b);
        if (st != SL_OK) {
            sl__parse_result_free(&a);
            return st;
        }
        bool nodes = sl__parse_has_node(&a.val) || sl__parse_has_node(&b.val);
        if (nodes)
            st = sl__parse_arith_op(ps, e->pos, syms[e->cops[0]], &a, e->items[0]->pos, &b,
                                    e->items[1]->pos, r);
        bool t = false;
        if (!nodes) st = compare(ps, e, 0, &a, &b, &t);
        if (!nodes && st == SL_OK) sl__parse_set_bool(&r->val, t);
        sl__parse_result_free(&a);
        sl__parse_result_free(&b);
        return st;
    }
    bool t = true;
    sl_status st = SL_OK;
    for (int k = 0; k + 1 < e->n && t; k++) {
        st = sl__parse_eval(ps, e->items[k + 1], 1, &b);
        if (st != SL_OK) break;
        st = compare(ps, e, k, &a, &b, &t);
        sl__parse_result_free(&a);
        a = b;
        if (st != SL_OK) break;
    }
    sl__parse_result_free(&a);
    if (st == SL_OK) sl__parse_set_bool(&r->val, t);
    return st;
}

/* [items] / (items) / {k: v}: a constant list of the values, checked for size */
static sl_status eval_items(parser *ps, const expr *e, result *r) {
    bool dict = e->kind == E_DICT;
    r->val.kind = SL_VAL_LIST;
    r->dict = dict;
    if (e->n && !(r->val.items = calloc((size_t)e->n, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    sl_status st = SL_OK;
    int64_t cells = 1;
    int depth = 1;
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        result it, v;
        memset(&v, 0, sizeof v);
        st = sl__parse_eval(ps, e->items[k], 1, &it);
        if (st == SL_OK && dict) {
            if (it.dict || it.val.kind != SL_VAL_STR)
                st = sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos,
                                    "dict keys must be strings (they become keyword names), not %s",
                                    sl__parse_kind_name(&it));
            else if (it.val.s[0] == '\0' || strlen(it.val.s) >= SL__PARSE_NAME_MAX)
                st =
                    sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos, "bad keyword name in the dict");
            for (int j = 0; j < k && st == SL_OK; j++)
                if (!strcmp(r->val.items[j].items[0].s, it.val.s))
                    st = sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos, "dict key repeated: '%s'",
                                        it.val.s);
            if (st == SL_OK) st = sl__parse_eval(ps, e->kwvals[k], 1, &v);
            if (st == SL_OK && v.dict)
                st = sl__parse_perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                                    "a dict inside a dict is not "
                                    "supported");
            if (st != SL_OK) {
                sl__parse_result_free(&it);
                sl__parse_result_free(&v);
                break;
            }
        } else if (st == SL_OK && it.dict) {
            st = sl__parse_perr(
                ps, SL_EINVAL, e->items[k]->pos,
                "a dict inside a list is not supported (dicts are for ** arguments)");
            sl__parse_result_free(&it);
        }
        if (st != SL_OK) break;
        sl__val *slot = &r->val.items[r->val.n++];
        if (dict) { /* [key, value] */
            slot->kind = SL_VAL_LIST;
            if (!(slot->items = calloc(2, sizeof *slot->items))) {
                sl__parse_result_free(&it);
                sl__parse_result_free(&v);
                st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
                break;
            }
            slot->n = 2;
            slot->items[0] = it.val;
            slot->items[1] = v.val;
        } else {
            *slot = it.val;
        }
        cells += val_cost(slot);
        int d = val_depth(slot) + 1;
        if (d > depth) depth = d;
        if (cells > SL__PARSE_CELLS_MAX)
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "value too large (over %d items)",
                                SL__PARSE_CELLS_MAX);
        else if (depth > SL__PARSE_DEPTH_MAX)
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "lists nested too deeply (over %d levels)",
                                SL__PARSE_DEPTH_MAX);
    }
    if (st != SL_OK) sl__parse_result_free(r);
    return st;
}

/* types.X constants; anything else with a dot is an error naming what it is */
static sl_status eval_attr(parser *ps, const expr *e, result *r) {
    char name[256];
    if (sl__parse_dotted(e, name, sizeof name)) {
        const char *tf = sl__parse_tfrec_member(name);
        if (tf && (!strcmp(tf, "FixedLenFeature") || !strcmp(tf, "VarLenFeature")))
            return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is a feature type: call it, %s(...)",
                                  name, name);
        if (tf && strcmp(tf, "string") && strcmp(tf, "int64") && strcmp(tf, "float32"))
            return sl__parse_perr(ps, SL_EINVAL, e->pos,
                                  "unknown '%s': tfrec has string, int64, float32, "
                                  "FixedLenFeature and VarLenFeature",
                                  name);
        if (sl__parse_types_name(name) || tf) {
            r->val.kind = SL_VAL_ENUM;
            if (!(r->val.s = strdup(strrchr(name, '.') + 1)))
                return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return SL_OK;
        }
        if (sl__parse_has_prefix(name, "fn.") || sl__parse_has_prefix(name, "dali.fn."))
            return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is an operator: call it, %s(...)",
                                  name, name);
        const expr *root = e;
        while (root->kind == E_ATTR) root = root->a;
        if (!sl__parse_env_find(ps, root->s) && !sl__parse_bound(ps, root->s) &&
            strcmp(root->s, "types"))
            return eval_name(ps, root, r); /* names the undefined root */
    }
    if (!strcmp(e->s, "gpu") || !strcmp(e->s, "cpu"))
        return sl__parse_perr(ps, SL_EINVAL, e->npos, "'.%s' is a method: call it, .%s()", e->s,
                              e->s);
    return sl__parse_perr(
        ps, SL_EINVAL, e->npos,
        "unsupported attribute '.%s': only types.* and tfrec.* constants can be used here", e->s);
}

/* a[b]: a dict's value for a string key (readers.tfrecord's outputs by feature name), or a list's
 * or a tuple's item (a negative index counts from the end) */
static sl_status eval_index(parser *ps, const expr *e, result *r) {
    result a;
    SL_TRY(sl__parse_eval(ps, e->a, 1, &a));
    sl__val key;
    memset(&key, 0, sizeof key);
    sl_status st = SL_OK;
    const sl__val *found = NULL;
    if (sl__parse_is_node(&a)) {
        st = sl__parse_node_subscript(ps, e, a.val.node, r);
        sl__parse_result_free(&a);
        return st;
    }
    if (e->b->kind == E_TUPLE && e->b->n && (e->b->items[0]->kind == E_SLICE || e->b->n > 1))
        st = sl__parse_perr(ps, SL_EINVAL, e->b->pos,
                            "slices and several subscripts are for op outputs (DALI's tensor "
                            "indexing), not %s",
                            sl__parse_kind_name(&a));
    else if (!a.dict && a.val.kind != SL_VAL_LIST)
        st = sl__parse_perr(ps, SL_EINVAL, e->pos, "%s is not subscriptable",
                            sl__parse_kind_name(&a));
    if (st == SL_OK) st = sl__parse_eval_const(ps, e->b, &key, "a subscript");
    if (st == SL_OK && a.dict) {
        if (key.kind != SL_VAL_STR)
            st = sl__parse_perr(ps, SL_EINVAL, e->b->pos, "a dict's keys are strings here");
        for (int k = 0; st == SL_OK && k < a.val.n && !found; k++)
            if (!strcmp(a.val.items[k].items[0].s, key.s)) found = &a.val.items[k].items[1];
        if (st == SL_OK && !found) {
            char keys[256];
            size_t n = 0;
            keys[0] = '\0';
            for (int k = 0; k < a.val.n && n < sizeof keys; k++)
                n += (size_t)snprintf(keys + n, sizeof keys - n, "%s'%s'", k ? ", " : "",
                                      a.val.items[k].items[0].s);
            st = sl__parse_perr(ps, SL_EINVAL, e->b->pos, "no key '%s' in the dict (its keys: %s)",
                                key.s, a.val.n ? keys : "none");
        }
    } else if (st == SL_OK) {
        if (key.kind != SL_VAL_INT && key.kind != SL_VAL_BOOL) {
            st = sl__parse_perr(ps, SL_EINVAL, e->b->pos, "a list's index is an int");
        } else {
            int64_t i = sl__parse_as_i(&key);
            if (i < 0) i += a.val.n;
            if (i < 0 || i >= a.val.n)
                st = sl__parse_perr(ps, SL_EINVAL, e->b->pos,
                                    "index %lld is out of range (%d items)",
                                    (long long)sl__parse_as_i(&key), a.val.n);
            else
                found = &a.val.items[i];
        }
    }
    if (st == SL_OK) st = sl__val_copy(&r->val, found, ps->err);
    sl__val_free(&key);
    sl__parse_result_free(&a);
    return st;
}

sl_status sl__parse_eval(parser *ps, const expr *e, int want, result *r) {
    memset(r, 0, sizeof *r);
    SL_TRY(sl__parse_step(ps, e->pos, 1));
    if (e->kind == E_CALL) return sl__parse_eval_call(ps, e, want, r);
    sl_status st = SL_OK;
    switch (e->kind) {
    case E_INT:
        sl__parse_set_int(&r->val, e->i);
        return SL_OK;
    case E_FLOAT:
        set_float(&r->val, e->f);
        return SL_OK;
    case E_TRUE:
    case E_FALSE:
        sl__parse_set_bool(&r->val, e->kind == E_TRUE);
        return SL_OK;
    case E_NONE:
        return SL_OK;
    case E_STR:
        r->val.kind = SL_VAL_STR;
        if (!(r->val.s = strdup(e->s))) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return SL_OK;
    case E_NAME:
        return eval_name(ps, e, r);
    case E_ATTR:
        return eval_attr(ps, e, r);
    case E_NEG:
    case E_POS:
    case E_INV: {
        result a;
        SL_TRY(sl__parse_eval(ps, e->a, 1, &a));
        if (sl__parse_is_node(&a) && e->kind == E_POS) { /* +x is x */
            *r = a;
            return SL_OK;
        }
        const char *sym = e->kind == E_NEG ? "-" : e->kind == E_POS ? "+" : "~";
        if (sl__parse_has_node(&a.val)) {
            st = sl__parse_arith_op(ps, e->pos, sym, &a, e->a->pos, NULL, e->pos, r);
            sl__parse_result_free(&a);
            return st;
        }
        if (a.dict || !sl__parse_numeric(&a.val) ||
            (e->kind == E_INV && a.val.kind == SL_VAL_FLOAT)) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "bad operand type for unary %s: %s", sym,
                                sl__parse_kind_name(&a));
            sl__parse_result_free(&a);
            return st;
        }
        if (e->kind == E_POS) {
            if (a.val.kind == SL_VAL_BOOL) sl__parse_set_int(&a.val, a.val.b);
        } else if (e->kind == E_INV) {
            sl__parse_set_int(&a.val, ~sl__parse_as_i(&a.val));
        } else if (a.val.kind == SL_VAL_FLOAT) {
            a.val.f = -a.val.f;
        } else {
            int64_t x = sl__parse_as_i(&a.val);
            if (x == INT64_MIN)
                return sl__parse_perr(ps, SL_EINVAL, e->pos, "integer overflow in '-'");
            sl__parse_set_int(&a.val, -x);
        }
        *r = a;
        return SL_OK;
    }
    case E_BIN: {
        result a, b;
        SL_TRY(sl__parse_eval(ps, e->a, 1, &a));
        st = sl__parse_eval(ps, e->b, 1, &b);
        if (st != SL_OK) {
            sl__parse_result_free(&a);
            return st;
        }
        if (sl__parse_has_node(&a.val) || sl__parse_has_node(&b.val))
            st = sl__parse_arith_op(ps, e->pos, e->op, &a, e->a->pos, &b, e->b->pos, r);
        else if (a.dict || b.dict)
            st =
                sl__parse_perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s",
                               e->op, sl__parse_kind_name(&a), sl__parse_kind_name(&b));
        else
            st = arith(ps, e, &a.val, &b.val, &r->val);
        sl__parse_result_free(&a);
        sl__parse_result_free(&b);
        return st;
    }
    case E_LIST:
    case E_TUPLE:
    case E_DICT:
        return eval_items(ps, e, r);
    case E_AND:
    case E_OR:
    case E_NOT:
    case E_CMP:
    case E_IFEXP:
        return eval_logic(ps, e, r);
    case E_INDEX:
        return eval_index(ps, e, r);
    case E_SLICE:
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "a slice is only a subscript (x[1:3])");
    case E_ELLIPSIS:
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'...' is only a subscript (x[..., 0])");
    case E_CALL:
        break;
    }
    return SL_OK;
}
