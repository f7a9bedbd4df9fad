/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser, running: the trees parse.c read (parse_int.h) are run as DALI runs a
 * pipeline function to build its graph -- the module's code, then the pipeline function, with
 * helper calls in scopes of their own, for loops, if/elif/else and conditional expressions on
 * constants and bound values, ** dicts -- folding constants to sl__val and turning op calls and
 * transfers into the statements of an sl__parse_prog (parse.h). Which function is the pipeline is
 * decided here, and its decorator read. Build-time work is bounded (steps, operators, call depth,
 * value sizes), and anything that would depend on the data is an error saying so. */
#include "core/alloc.h"
#include "core/log.h"
#include "pipeline/parse_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- evaluation ---------------------------------------------------------------------------------
 */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static env_entry *scope_find(scope *sc, const char *name) {
    if (!sc->hcap) return NULL;
    uint32_t mask = (uint32_t)sc->hcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = sc->hash[h];
        if (!slot) return NULL;
        if (!strcmp(sc->env[slot - 1].name, name)) return &sc->env[slot - 1];
    }
}

/* Indexes env[i]; the table is kept at most half full. */
static bool scope_index(scope *sc, int i) {
    if (2 * (sc->nenv + 1) > sc->hcap) {
        int cap = sc->hcap ? 2 * sc->hcap : 64;
        int *h = calloc((size_t)cap, sizeof *h);
        if (!h) return false;
        free(sc->hash);
        sc->hash = h;
        sc->hcap = cap;
        for (int k = 0; k < sc->nenv; k++)
            if (k != i && !scope_index(sc, k)) return false;
    }
    uint32_t mask = (uint32_t)sc->hcap - 1, h = name_hash(sc->env[i].name) & mask;
    while (sc->hash[h]) h = (h + 1) & mask;
    sc->hash[h] = i + 1;
    return true;
}

static void scope_free(scope *sc) {
    for (int i = 0; i < sc->nenv; i++) sl__val_free(&sc->env[i].v.val);
    free(sc->env);
    free(sc->hash);
    memset(sc, 0, sizeof *sc);
}

/* The running function's names, else the module's. */
static env_entry *env_find(parser *ps, const char *name) {
    env_entry *e = ps->local ? scope_find(ps->local, name) : NULL;
    return e ? e : scope_find(&ps->globals, name);
}

static const sl_pipeline_bind *bind_find(parser *ps, const char *name) {
    const sl_pipeline_bind *found = NULL;
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name && !strcmp(ps->binds[i].name, name)) found = &ps->binds[i];
    return found; /* the last one wins */
}

/* The entry for name in the running scope, its old value freed. */
static env_entry *env_set(parser *ps, const char *name) {
    scope *sc = ps->local ? ps->local : &ps->globals;
    env_entry *e = scope_find(sc, name);
    if (e) {
        sl__val_free(&e->v.val);
        memset(&e->v, 0, sizeof e->v);
        e->unbound = false;
        return e;
    }
    if (sc->nenv == sc->capenv) {
        int cap = sc->capenv ? 2 * sc->capenv : 16;
        env_entry *n = realloc(sc->env, (size_t)cap * sizeof *n);
        if (!n) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        sc->env = n;
        sc->capenv = cap;
    }
    e = &sc->env[sc->nenv];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!scope_index(sc, sc->nenv)) {
        sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return NULL;
    }
    sc->nenv++;
    return e;
}

static func *func_find(parser *ps, const char *name) {
    if (!ps->fhcap) return NULL;
    uint32_t mask = (uint32_t)ps->fhcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = ps->fhash[h];
        if (!slot) return NULL;
        if (!strcmp(ps->funcs[slot - 1]->name, name)) return ps->funcs[slot - 1];
    }
}

/* Indexes the functions once they are all parsed; a name defined twice is an error. */
static sl_status func_index(parser *ps) {
    int cap = 64;
    while (cap < 2 * ps->nfuncs) cap *= 2;
    if (!(ps->fhash = calloc((size_t)cap, sizeof *ps->fhash)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    ps->fhcap = cap;
    for (int i = 0; i < ps->nfuncs; i++) {
        func *f = ps->funcs[i], *twice = func_find(ps, f->name);
        if (twice)
            return sl__parse_perr(ps, SL_EINVAL, f->pos,
                                  "function '%s' is defined twice (first on line %d)", f->name,
                                  twice->pos.line);
        uint32_t mask = (uint32_t)cap - 1, h = name_hash(f->name) & mask;
        while (ps->fhash[h]) h = (h + 1) & mask;
        ps->fhash[h] = i + 1;
    }
    return SL_OK;
}

static void suggest_in(const char *name, const char *cand, int *bd, const char **best) {
    int d = sl__op_distance(name, cand);
    if (d < *bd) *bd = d, *best = cand;
}

static const char *suggest_name(parser *ps, const char *name) {
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; ps->local && i < ps->local->nenv; i++)
        suggest_in(name, ps->local->env[i].name, &bd, &best);
    for (int i = 0; i < ps->globals.nenv; i++)
        suggest_in(name, ps->globals.env[i].name, &bd, &best);
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name) suggest_in(name, ps->binds[i].name, &bd, &best);
    for (int i = 0; i < ps->nfuncs; i++) suggest_in(name, ps->funcs[i]->name, &bd, &best);
    size_t len = strlen(name);
    return best && bd <= (len < 4 ? 1 : len < 8 ? 2 : 3) ? best : NULL;
}

static void result_free(result *r) {
    sl__val_free(&r->val);
    r->dict = false;
}

static bool is_node(const result *r) {
    return r->val.kind == SL_VAL_NODE;
}

static bool has_node(const sl__val *v) {
    if (v->kind == SL_VAL_NODE) return true;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++)
        if (has_node(&v->items[k])) return true;
    return false;
}

static void set_node(sl__val *v, int node) {
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
static sl_status step(parser *ps, sl__parse_pos pos, int64_t cost) {
    ps->steps += cost;
    if (ps->steps <= ps->step_limit) return SL_OK;
    if (ps->loop) pos = ps->loop->pos;
    return sl__parse_perr(
        ps, SL_EINVAL, pos,
        "the pipeline takes too long to build: over %lld steps%s (loops and helper "
        "calls run when the pipeline is built)",
        (long long)(ps->step_limit - (ps->nexprs + ps->nstmts)), ps->loop ? " in this loop" : "");
}

static sl_status eval(parser *ps, const expr *e, int want, result *r);

/* e as a plain constant (no op output, no dict): what names it in errors */
static sl_status eval_const(parser *ps, const expr *e, sl__val *out, const char *what) {
    result r;
    SL_TRY(eval(ps, e, 1, &r));
    if (has_node(&r.val) || r.dict) {
        result_free(&r);
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "%s must be a constant, not %s", what,
                              r.dict ? "a dict" : "an op output");
    }
    *out = r.val;
    return SL_OK;
}

static sl_status copy_result(parser *ps, result *dst, const result *src, sl__parse_pos pos) {
    SL_TRY(step(ps, pos, val_cost(&src->val)));
    dst->dict = src->dict;
    return sl__val_copy(&dst->val, &src->val, ps->err);
}

static sl_status eval_name(parser *ps, const expr *e, result *r) {
    env_entry *v = env_find(ps, e->s);
    if (v && v->unbound)
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "parameter '%s' is not bound; pass --arg %s=VALUE", e->s, e->s);
    if (v) return copy_result(ps, r, &v->v, e->pos);
    const sl_pipeline_bind *b = bind_find(ps, e->s);
    if (b) return sl__parse_bind_value(b->value ? b->value : "", &r->val, ps->err);
    if (!strcmp(e->s, "fn") || !strcmp(e->s, "types") || !strcmp(e->s, "dali"))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is a module, not a value", e->s);
    if (func_find(ps, e->s))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' is a function: call it, %s(...)", e->s,
                              e->s);
    const char *s = suggest_name(ps, e->s);
    if (s)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "name '%s' is not defined; did you mean '%s'?",
                              e->s, s);
    return sl__parse_perr(ps, SL_EINVAL, e->pos,
                          "name '%s' is not defined; bind it with --arg %s=VALUE", e->s, e->s);
}

static bool numeric(const sl__val *v) {
    return v->kind == SL_VAL_INT || v->kind == SL_VAL_FLOAT || v->kind == SL_VAL_BOOL;
}
static double as_f(const sl__val *v) {
    return v->kind == SL_VAL_FLOAT ? v->f : v->kind == SL_VAL_BOOL ? (double)v->b : (double)v->i;
}
static int64_t as_i(const sl__val *v) {
    return v->kind == SL_VAL_BOOL ? v->b : v->i;
}

static const char *kind_name(const result *r) {
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
        return has_node(&r->val) ? "list of op outputs" : "list";
    case SL_VAL_NODE:
        return "op output";
    }
    return "?";
}

static const char *val_kind_name(const sl__val *v) {
    result r = {*v, false};
    return kind_name(&r);
}

static void set_int(sl__val *v, int64_t i) {
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
static void set_bool(sl__val *v, bool b) {
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
    if (!numeric(a) || !numeric(b))
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s",
                              op, val_kind_name(a), val_kind_name(b));
    bool ints = a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT;
    if (!strcmp(op, "/") || !strcmp(op, "//") || !strcmp(op, "%")) {
        if (as_f(b) == 0.0) return sl__parse_perr(ps, SL_EINVAL, e->pos, "division by zero");
    }
    if (ints) {
        int64_t x = as_i(a), y = as_i(b), z = 0;
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
        set_int(out, z);
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

static void stmt_clear(sl__parse_stmt *s) {
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
    if (prog->num_stmts == ps->stmt_cap) {
        int cap = ps->stmt_cap ? 2 * ps->stmt_cap : 16;
        sl__parse_stmt *n = realloc(prog->stmts, (size_t)cap * sizeof *n);
        if (!n) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        prog->stmts = n;
        ps->stmt_cap = cap;
    }
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
        set_node(&r->val, first);
        return SL_OK;
    }
    r->val.kind = SL_VAL_LIST;
    if (!(r->val.items = calloc((size_t)want, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    r->val.n = want;
    for (int k = 0; k < want; k++) set_node(&r->val.items[k], first + k);
    return SL_OK;
}

/* Adds s with want outputs and sets r to them; s is cleared either way. */
static sl_status emit(parser *ps, sl__parse_stmt *s, int want, result *r) {
    int first = ps->prog->num_nodes;
    sl_status st = add_stmt(ps, s, want);
    if (st == SL_OK) st = node_result(ps, first, want, r);
    stmt_clear(s);
    return st;
}

/* + - * / with an op output on either side, or unary - of one (b NULL), as DALI's arithmetic
 * expressions: an `arithmetic` op statement, with the constant operand (if any) as its arguments --
 * a Python int as int32, a float as float32, as DALI types them. */
static sl_status arith_op(parser *ps, const expr *e, const result *a, const result *b, result *r) {
    static const struct {
        const char *symbol, *name;
    } ops[] = {{"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "fdiv"}};
    const char *name = NULL;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0] && b; k++)
        if (!strcmp(e->op, ops[k].symbol)) name = ops[k].name;
    if (!b) name = "minus"; /* unary - */
    if (!name)
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "'%s' on op outputs is not supported (+ - * / are)", e->op);
    if (ps->no_ops)
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "arithmetic on op outputs cannot be used here");
    if ((!is_node(a) && has_node(&a->val)) || (b && !is_node(b) && has_node(&b->val)))
        return sl__parse_perr(ps, SL_EINVAL, e->pos,
                              "'%s' on several op outputs: unpack them first (a, b = ...)",
                              b ? e->op : "-");
    const result *cst = !is_node(a) ? a : b && !is_node(b) ? b : NULL;
    if (cst && (cst->dict || cst->val.kind == SL_VAL_BOOL || !numeric(&cst->val)))
        return sl__parse_perr(
            ps, SL_EINVAL, cst == a ? e->a->pos : e->b->pos,
            "unsupported operand type for '%s' with an op output: %s (int or float "
            "wanted)",
            e->op, kind_name(cst));
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = e->pos;
    snprintf(s.op, sizeof s.op, "arithmetic");
    snprintf(s.written, sizeof s.written, "'%s'", b ? e->op : "-");
    sl_status st = SL_OK;
    s.inputs = malloc(2 * sizeof *s.inputs);
    s.input_pos = malloc(2 * sizeof *s.input_pos);
    s.args = calloc(4, sizeof *s.args);
    if (!s.inputs || !s.input_pos || !s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        const result *x = k ? b : a;
        if (!x || !is_node(x)) continue;
        s.inputs[s.num_inputs] = x->val.node;
        s.input_pos[s.num_inputs++] = k ? e->b->pos : e->a->pos;
    }
    if (st == SL_OK) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "op");
        arg->pos = e->pos;
        arg->val.kind = SL_VAL_STR;
        if (!(arg->val.s = strdup(name))) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    if (st == SL_OK && cst) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant");
        arg->pos = cst == a ? e->a->pos : e->b->pos;
        arg->val = cst->val; /* a number: nothing to own */
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_type");
        arg->pos = e->pos;
        arg->val.kind = SL_VAL_STR;
        arg->val.s = strdup(cst->val.kind == SL_VAL_FLOAT ? "float32" : "int32");
        if (!arg->val.s) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_left");
        arg->pos = e->pos;
        set_bool(&arg->val, cst == a);
    }
    if (st != SL_OK) {
        stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, 1, r);
}

/* A call's keyword arguments, **mappings expanded: names (owned by the arena or the values),
 * positions, values. */
typedef struct kwargs {
    int n;
    char **names; /* owned */
    sl__parse_pos *pos;
    result *vals;
} kwargs;

static void kwargs_free(kwargs *kw) {
    for (int k = 0; k < kw->n; k++) {
        result_free(&kw->vals[k]);
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
            result_free(v);
            return sl__parse_perr(ps, SL_EINVAL, pos, "keyword argument repeated: %s", name);
        }
    if (kw->n >= SL__PARSE_KWARGS_MAX) {
        result_free(v);
        return sl__parse_perr(ps, SL_EINVAL, pos, "too many keyword arguments (over %d)",
                              SL__PARSE_KWARGS_MAX);
    }
    char *owned = strdup(name);
    if (!owned) {
        result_free(v);
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
            result_free(v);
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
static sl_status eval_kwargs(parser *ps, const expr *e, kwargs *kw) {
    memset(kw, 0, sizeof *kw);
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        result v;
        st = eval(ps, e->kwvals[k], 1, &v);
        if (st != SL_OK) break;
        if (e->kwnames[k]) {
            st = kwargs_add(ps, kw, e->kwnames[k], e->kwpos[k], &v);
            continue;
        }
        if (!v.dict) { /* **mapping */
            st =
                sl__parse_perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                               "'**' needs a dict (a dict literal, or a name bound to one), not %s",
                               kind_name(&v));
            result_free(&v);
            break;
        }
        for (int j = 0; j < v.val.n && st == SL_OK; j++) {
            sl__val *pair = &v.val.items[j];
            result item = {pair->items[1], false};
            memset(&pair->items[1], 0, sizeof pair->items[1]);
            st = kwargs_add(ps, kw, pair->items[0].s, e->kwpos[k], &item);
        }
        result_free(&v);
    }
    if (st != SL_OK) kwargs_free(kw);
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
        st = eval(ps, e->items[k], 1, &in);
        if (st != SL_OK) break;
        if (!is_node(&in)) {
            st = sl__parse_perr(
                ps, SL_EINVAL, e->items[k]->pos,
                has_node(&in.val)
                    ? "input %d of %s is several op outputs: unpack them (a, b = ...) and "
                      "pass one"
                    : "input %d of %s must be an op output; constants are not supported as "
                      "inputs",
                k, name);
            result_free(&in);
            break;
        }
        s.inputs[s.num_inputs] = in.val.node;
        s.input_pos[s.num_inputs++] = e->items[k]->pos;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = eval_kwargs(ps, e, &kw);
    if (st == SL_OK && kw.n) {
        s.args = calloc((size_t)kw.n, sizeof *s.args);
        if (!s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        result *v = &kw.vals[k];
        /* a dict (readers.tfrecord's features) goes as its list of [key, value] pairs */
        if (!is_node(v) && has_node(&v->val)) {
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
    kwargs_free(&kw);
    if (st != SL_OK) {
        stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, want, r);
}

static sl_status exec_block(parser *ps, const block *b);

/* Runs f's body for a call (e), with a scope of its own; r: its return value (None without). */
static sl_status call_func(parser *ps, func *f, const expr *e, int want, result *r) {
    if (f->active)
        return sl__parse_perr(
            ps, SL_EINVAL, e->pos,
            "recursion is not supported in a pipeline: '%s' is called while it runs (line "
            "%d); the pipeline is unrolled when it is built",
            f->name, f->pos.line);
    if (ps->calls >= SL__PARSE_CALLS_MAX)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "helper calls nested too deeply (over %d)",
                              SL__PARSE_CALLS_MAX);
    if (e->n > f->nparams)
        return sl__parse_perr(ps, SL_EINVAL, e->items[f->nparams]->pos,
                              "%s() takes %d positional argument%s but %d were given", f->name,
                              f->nparams, f->nparams == 1 ? "" : "s", e->n);
    result args[SL__PARSE_PARAMS_MAX];
    bool given[SL__PARSE_PARAMS_MAX] = {false};
    memset(args, 0, sizeof args);
    sl_status st = SL_OK;
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        st = eval(ps, e->items[k], 1, &args[k]);
        given[k] = st == SL_OK;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = eval_kwargs(ps, e, &kw);
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        int p = 0;
        while (p < f->nparams && strcmp(f->params[p], kw.names[k])) p++;
        if (p == f->nparams) {
            st = sl__parse_perr(ps, SL_EINVAL, kw.pos[k],
                                "%s() got an unexpected keyword argument '%s'", f->name,
                                kw.names[k]);
        } else if (given[p]) {
            st = sl__parse_perr(ps, SL_EINVAL, kw.pos[k],
                                "%s() got multiple values for argument '%s'", f->name, kw.names[k]);
        } else {
            args[p] = kw.vals[k];
            memset(&kw.vals[k], 0, sizeof kw.vals[k]);
            given[p] = true;
        }
    }
    kwargs_free(&kw);
    /* defaults: constants, evaluated in the module's scope when the call needs them */
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        if (given[p]) continue;
        if (!f->defaults[p]) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "%s() missing argument '%s'", f->name,
                                f->params[p]);
            break;
        }
        scope *saved = ps->local;
        bool no_ops = ps->no_ops;
        ps->local = NULL;
        ps->no_ops = true;
        st = eval_const(ps, f->defaults[p], &args[p].val, "a default");
        ps->local = saved;
        ps->no_ops = no_ops;
        given[p] = st == SL_OK;
    }
    scope sc;
    memset(&sc, 0, sizeof sc);
    scope *saved = ps->local;
    ps->local = &sc;
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        env_entry *v = env_set(ps, f->params[p]);
        if (!v) {
            st = SL_ENOMEM;
            break;
        }
        v->v = args[p];
        memset(&args[p], 0, sizeof args[p]);
    }
    for (int p = 0; p < SL__PARSE_PARAMS_MAX; p++) result_free(&args[p]);
    frame fr, *saved_fr = ps->fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = f;
    fr.want = want;
    const stmt *saved_loop = ps->loop;
    if (st == SL_OK) {
        ps->fr = &fr;
        ps->loop = NULL;
        f->active = true;
        ps->calls++;
        st = exec_block(ps, &f->body);
        ps->calls--;
        f->active = false;
        ps->flow = FLOW_NEXT;
    }
    ps->fr = saved_fr;
    ps->loop = saved_loop;
    ps->local = saved;
    scope_free(&sc);
    if (st != SL_OK) {
        result_free(&fr.ret);
        return st;
    }
    *r = fr.ret; /* None when it did not return */
    return SL_OK;
}

/* range(stop) / range(start, stop[, step]) from e's arguments. */
static sl_status range_args(parser *ps, const expr *e, int64_t *start, int64_t *stop,
                            int64_t *stepv) {
    if (e->nkw || e->n < 1 || e->n > 3)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "range() takes 1 to 3 positional integers");
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < e->n; k++) {
        sl__val x;
        SL_TRY(eval_const(ps, e->items[k], &x, "a range() argument"));
        bool ok = x.kind == SL_VAL_INT || x.kind == SL_VAL_BOOL;
        int64_t i = as_i(&x);
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

static uint64_t range_len(int64_t start, int64_t stop, int64_t stepv) {
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
        SL_TRY(range_args(ps, e, &a, &b, &s));
        uint64_t n = range_len(a, b, s);
        if (n > SL__PARSE_CELLS_MAX)
            return sl__parse_perr(ps, SL_EINVAL, e->pos,
                                  "range() too long for a list (over %d items)",
                                  SL__PARSE_CELLS_MAX);
        SL_TRY(step(ps, e->pos, (int64_t)n));
        r->val.kind = SL_VAL_LIST;
        if (n && !(r->val.items = calloc(n, sizeof *r->val.items)))
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        r->val.n = (int)n;
        for (uint64_t k = 0; k < n; k++) set_int(&r->val.items[k], a + (int64_t)k * s);
        return SL_OK;
    }
    /* len */
    if (e->nkw || e->n != 1)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "len() takes one argument");
    result x;
    SL_TRY(eval(ps, e->items[0], 1, &x));
    int64_t n = -1;
    if (x.val.kind == SL_VAL_LIST) n = x.val.n;
    if (x.val.kind == SL_VAL_STR && !x.dict) n = (int64_t)strlen(x.val.s);
    sl_status st = SL_OK;
    if (n < 0)
        st = sl__parse_perr(ps, SL_EINVAL, e->items[0]->pos,
                            "len() of %s is not known when the pipeline "
                            "is built",
                            kind_name(&x));
    else
        set_int(&r->val, n);
    result_free(&x);
    return st;
}

/* tfrec.X (DALI's `import nvidia.dali.tfrecord as tfrec`), dali.tfrecord.X, nvidia.dali.tfrecord.X:
 * X, else NULL */
static const char *tfrec_member(const char *dotted) {
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
 * inlined: eval recurses through eval_call, and hostile nesting must not find its frame grown by
 * these buffers. */
__attribute__((noinline)) static bool eval_feature_call(parser *ps, const expr *e, result *r,
                                                        sl_status *st) {
    char dotted[256];
    const char *tf = sl__parse_dotted(e->a, dotted, sizeof dotted) ? tfrec_member(dotted) : NULL;
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
        result_free(r);
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int p = 0; p < 3; p++) {
        if (!slot[p]) continue;
        sl_status st = eval_const(ps, slot[p], &r->val.items[r->val.n], "a feature's argument");
        if (st != SL_OK) {
            result_free(r);
            return st;
        }
        r->val.n++;
    }
    return SL_OK;
}

static sl_status eval_call(parser *ps, const expr *e, int want, result *r) {
    const expr *callee = e->a;
    if (op_callee(callee, NULL, 0)) return eval_op(ps, e, want, r);
    if (callee->kind == E_ATTR &&
        (!strcmp(callee->s, "FixedLenFeature") || !strcmp(callee->s, "VarLenFeature"))) {
        sl_status st;
        if (eval_feature_call(ps, e, r, &st)) return st;
    }
    if (callee->kind == E_NAME) {
        func *f = func_find(ps, callee->s);
        if (f) return call_func(ps, f, e, want, r);
        if ((!strcmp(callee->s, "range") || !strcmp(callee->s, "len")) && !env_find(ps, callee->s))
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
        SL_TRY(eval(ps, callee->a, 1, &base));
        if (!is_node(&base)) {
            result_free(&base);
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
            stmt_clear(&s);
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        }
        s.inputs[0] = base.val.node;
        s.input_pos[0] = callee->a->pos;
        s.num_inputs = 1;
        return emit(ps, &s, 1, r);
    }
    return call_unsupported(ps, e);
}

/* Python's truth of a constant; op outputs and dicts are refused (what: "if", "and", ...) */
static sl_status truth(parser *ps, const expr *at, const result *v, const char *what, bool *out) {
    if (has_node(&v->val))
        return sl__parse_perr(
            ps, SL_EINVAL, at->pos,
            "'%s' on an op output: conditions on data are not supported (they are "
            "decided when the pipeline is built, from constants and --arg values; "
            "DALI's enable_conditionals is not supported)",
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
    if (numeric(a) && numeric(b)) {
        if (a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT) return as_i(a) == as_i(b);
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
    if (has_node(&a->val) || has_node(&b->val))
        return sl__parse_perr(
            ps, SL_EINVAL, e->items[has_node(&a->val) ? k : k + 1]->pos,
            "'%s' on an op output: comparisons of data are not supported (conditions are "
            "decided when the pipeline is built, from constants and --arg values)",
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
                              kind_name(b));
    default:
        break;
    }
    int c;
    if (numeric(x) && numeric(y)) {
        if (x->kind != SL_VAL_FLOAT && y->kind != SL_VAL_FLOAT)
            c = as_i(x) < as_i(y) ? -1 : as_i(x) > as_i(y);
        else
            c = as_f(x) < as_f(y) ? -1 : as_f(x) > as_f(y);
    } else if (x->kind == SL_VAL_STR && y->kind == SL_VAL_STR) {
        c = strcmp(x->s, y->s);
    } else {
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "'%s' not supported between %s and %s", sym,
                              kind_name(a), kind_name(b));
    }
    *out = op == C_LT ? c < 0 : op == C_LE ? c <= 0 : op == C_GT ? c > 0 : c >= 0;
    return SL_OK;
}

static sl_status eval_logic(parser *ps, const expr *e, result *r) {
    if (e->kind == E_NOT) {
        result a;
        bool t;
        SL_TRY(eval(ps, e->a, 1, &a));
        sl_status st = truth(ps, e->a, &a, "not", &t);
        result_free(&a);
        if (st == SL_OK) set_bool(&r->val, !t);
        return st;
    }
    if (e->kind == E_AND || e->kind == E_OR) { /* the deciding operand, as Python */
        SL_TRY(eval(ps, e->a, 1, r));
        bool t;
        sl_status st = truth(ps, e->a, r, e->kind == E_AND ? "and" : "or", &t);
        if (st != SL_OK || t == (e->kind == E_OR)) {
            if (st != SL_OK) result_free(r);
            return st;
        }
        result_free(r);
        return eval(ps, e->b, 1, r);
    }
    if (e->kind == E_IFEXP) { /* only the branch taken is built */
        result c;
        bool t;
        SL_TRY(eval(ps, e->c, 1, &c));
        sl_status st = truth(ps, e->c, &c, "if", &t);
        result_free(&c);
        if (st != SL_OK) return st;
        return eval(ps, t ? e->a : e->b, 1, r);
    }
    /* E_CMP: a chain, each operand evaluated once, stopping at the first false */
    result a, b;
    SL_TRY(eval(ps, e->items[0], 1, &a));
    bool t = true;
    sl_status st = SL_OK;
    for (int k = 0; k + 1 < e->n && t; k++) {
        st = eval(ps, e->items[k + 1], 1, &b);
        if (st != SL_OK) break;
        st = compare(ps, e, k, &a, &b, &t);
        result_free(&a);
        a = b;
        if (st != SL_OK) break;
    }
    result_free(&a);
    if (st == SL_OK) set_bool(&r->val, t);
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
        st = eval(ps, e->items[k], 1, &it);
        if (st == SL_OK && dict) {
            if (it.dict || it.val.kind != SL_VAL_STR)
                st = sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos,
                                    "dict keys must be strings (they become keyword names), not %s",
                                    kind_name(&it));
            else if (it.val.s[0] == '\0' || strlen(it.val.s) >= SL__PARSE_NAME_MAX)
                st =
                    sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos, "bad keyword name in the dict");
            for (int j = 0; j < k && st == SL_OK; j++)
                if (!strcmp(r->val.items[j].items[0].s, it.val.s))
                    st = sl__parse_perr(ps, SL_EINVAL, e->items[k]->pos, "dict key repeated: '%s'",
                                        it.val.s);
            if (st == SL_OK) st = eval(ps, e->kwvals[k], 1, &v);
            if (st == SL_OK && v.dict)
                st = sl__parse_perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                                    "a dict inside a dict is not "
                                    "supported");
            if (st != SL_OK) {
                result_free(&it);
                result_free(&v);
                break;
            }
        } else if (st == SL_OK && it.dict) {
            st = sl__parse_perr(
                ps, SL_EINVAL, e->items[k]->pos,
                "a dict inside a list is not supported (dicts are for ** arguments)");
            result_free(&it);
        }
        if (st != SL_OK) break;
        sl__val *slot = &r->val.items[r->val.n++];
        if (dict) { /* [key, value] */
            slot->kind = SL_VAL_LIST;
            if (!(slot->items = calloc(2, sizeof *slot->items))) {
                result_free(&it);
                result_free(&v);
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
    if (st != SL_OK) result_free(r);
    return st;
}

/* types.X constants; anything else with a dot is an error naming what it is */
static sl_status eval_attr(parser *ps, const expr *e, result *r) {
    char name[256];
    if (sl__parse_dotted(e, name, sizeof name)) {
        const char *tf = tfrec_member(name);
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
        if (!env_find(ps, root->s) && !bind_find(ps, root->s) && strcmp(root->s, "types"))
            return eval_name(ps, root, r); /* names the undefined root */
    }
    if (!strcmp(e->s, "gpu") || !strcmp(e->s, "cpu"))
        return sl__parse_perr(ps, SL_EINVAL, e->npos, "'.%s' is a method: call it, .%s()", e->s,
                              e->s);
    return sl__parse_perr(
        ps, SL_EINVAL, e->npos,
        "unsupported attribute '.%s': only types.* and tfrec.* constants can be used here", e->s);
}

static sl_status eval(parser *ps, const expr *e, int want, result *r) {
    memset(r, 0, sizeof *r);
    SL_TRY(step(ps, e->pos, 1));
    if (e->kind == E_CALL) return eval_call(ps, e, want, r);
    sl_status st = SL_OK;
    switch (e->kind) {
    case E_INT:
        set_int(&r->val, e->i);
        return SL_OK;
    case E_FLOAT:
        set_float(&r->val, e->f);
        return SL_OK;
    case E_TRUE:
    case E_FALSE:
        set_bool(&r->val, e->kind == E_TRUE);
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
    case E_POS: {
        result a;
        SL_TRY(eval(ps, e->a, 1, &a));
        if (is_node(&a) && e->kind == E_POS) { /* +x is x */
            *r = a;
            return SL_OK;
        }
        if (has_node(&a.val)) {
            st = arith_op(ps, e, &a, NULL, r);
            result_free(&a);
            return st;
        }
        if (a.dict || !numeric(&a.val)) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "bad operand type for unary %c: %s",
                                e->kind == E_NEG ? '-' : '+', kind_name(&a));
            result_free(&a);
            return st;
        }
        if (e->kind == E_POS) {
            if (a.val.kind == SL_VAL_BOOL) set_int(&a.val, a.val.b);
        } else if (a.val.kind == SL_VAL_FLOAT) {
            a.val.f = -a.val.f;
        } else {
            int64_t x = as_i(&a.val);
            if (x == INT64_MIN)
                return sl__parse_perr(ps, SL_EINVAL, e->pos, "integer overflow in '-'");
            set_int(&a.val, -x);
        }
        *r = a;
        return SL_OK;
    }
    case E_BIN: {
        result a, b;
        SL_TRY(eval(ps, e->a, 1, &a));
        st = eval(ps, e->b, 1, &b);
        if (st != SL_OK) {
            result_free(&a);
            return st;
        }
        if (has_node(&a.val) || has_node(&b.val))
            st = arith_op(ps, e, &a, &b, r);
        else if (a.dict || b.dict)
            st =
                sl__parse_perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s",
                               e->op, kind_name(&a), kind_name(&b));
        else
            st = arith(ps, e, &a.val, &b.val, &r->val);
        result_free(&a);
        result_free(&b);
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
    case E_CALL:
        break;
    }
    return SL_OK;
}

/* ---- which function is the pipeline ----------------------------------------------------------
 */

static void mark_calls_block(parser *ps, const block *b, const func *in);

static void mark_calls(parser *ps, const expr *e, const func *in) {
    if (!e) return;
    if (e->kind == E_CALL && e->a->kind == E_NAME) {
        func *f = func_find(ps, e->a->s);
        if (f && f != in) f->called = true;
    }
    mark_calls(ps, e->a, in);
    mark_calls(ps, e->b, in);
    mark_calls(ps, e->c, in);
    for (int k = 0; k < e->n; k++) mark_calls(ps, e->items[k], in);
    for (int k = 0; k < e->nkw; k++) mark_calls(ps, e->kwvals[k], in);
}

static void mark_calls_block(parser *ps, const block *b, const func *in) {
    for (int k = 0; k < b->n; k++) {
        const stmt *s = b->items[k];
        mark_calls(ps, s->lhs, in);
        mark_calls(ps, s->rhs, in);
        for (int c = 0; c < s->ncond; c++) mark_calls(ps, s->conds[c], in);
        for (int c = 0; s->kind == S_IF && c <= s->ncond; c++)
            mark_calls_block(ps, &s->bodies[c], in);
        mark_calls_block(ps, &s->body, in);
        if (s->fn) {
            mark_calls_block(ps, &s->fn->body, s->fn);
            for (int p = 0; p < s->fn->nparams; p++) mark_calls(ps, s->fn->defaults[p], in);
        }
    }
}

/* "'a' (line 3), 'b' (line 9)" for the functions with pick(f) */
static void list_funcs(parser *ps, bool (*pick)(const func *), char *buf, size_t size) {
    size_t n = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < ps->nfuncs && n < size; i++) {
        const func *f = ps->funcs[i];
        if (pick && !pick(f)) continue;
        if (shown == 8) {
            snprintf(buf + n, size - n, ", ...");
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s'%s' (line %d)", shown ? ", " : "", f->name,
                              f->pos.line);
        shown++;
    }
}

static bool decorated(const func *f) {
    return f->deco != NULL;
}
static bool uncalled(const func *f) {
    return !f->called;
}

/* Sets ps->pipe: the function asked for; else the decorated one; else the only one nobody calls.
 * NULL: the module's code is the pipeline (it returns, or there is no function). */
static sl_status choose_pipeline(parser *ps) {
    char names[320];
    ps->pipe = NULL;
    if (ps->function) {
        ps->pipe = func_find(ps, ps->function);
        if (ps->pipe) return SL_OK;
        list_funcs(ps, NULL, names, sizeof names);
        return sl_err_set(ps->err, SL_EINVAL,
                          "%s: error: no function '%s' in the pipeline text (%s%s)", ps->filename,
                          ps->function, ps->nfuncs ? "it defines " : "it defines no function",
                          names);
    }
    if (ps->module_returns || !ps->nfuncs) return SL_OK;
    const func *first = NULL;
    int n = 0;
    for (int i = 0; i < ps->nfuncs; i++)
        if (ps->funcs[i]->deco) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n > 1) {
        list_funcs(ps, decorated, names, sizeof names);
        return sl__parse_perr(
            ps, SL_EINVAL, first->pos,
            "several functions have a pipeline decorator: %s; pick one with --pipeline "
            "NAME",
            names);
    }
    mark_calls_block(ps, &ps->module, NULL);
    ps->pipe = NULL;
    for (int i = 0; i < ps->nfuncs; i++)
        if (!ps->funcs[i]->called) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n == 0)
        return sl__parse_perr(ps, SL_EINVAL, ps->funcs[0]->pos,
                              "no pipeline function: every function here is called by another; add "
                              "@pipeline_def to the pipeline, or pick it with --pipeline NAME");
    list_funcs(ps, uncalled, names, sizeof names);
    ps->pipe = NULL;
    return sl__parse_perr(ps, SL_EINVAL, first->pos,
                          "which function is the pipeline? %s are called by no other function; add "
                          "@pipeline_def to it, or pick one with --pipeline NAME",
                          names);
}

/* ---- statements: running ----------------------------------------------------------------------
 */

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
        if (!ps->local && !has_node(&v->val) && !v->dict && bind_find(ps, lhs->s)) {
            result_free(v);
            return SL_OK;
        }
        env_entry *e = env_set(ps, lhs->s);
        if (!e) {
            result_free(v);
            return SL_ENOMEM;
        }
        e->v = *v;
        memset(v, 0, sizeof *v);
        return SL_OK;
    }
    if (v->dict || v->val.kind != SL_VAL_LIST)
        st = sl__parse_perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos,
                            "cannot unpack %s into %d names",
                            is_node(v) ? "one op output"
                            : v->dict  ? "a dict"
                                       : "a constant",
                            n);
    else if (v->val.n != n)
        st = sl__parse_perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos,
                            "cannot unpack %d values into %d names", v->val.n, n);
    for (int k = 0; k < n && st == SL_OK; k++) {
        env_entry *e = env_set(ps, targets[k]->s);
        if (!e) {
            st = SL_ENOMEM;
            break;
        }
        e->v.val = v->val.items[k];
        memset(&v->val.items[k], 0, sizeof v->val.items[k]);
    }
    result_free(v);
    return st;
}

static sl_status exec_stmt(parser *ps, const stmt *s);

static sl_status exec_block(parser *ps, const block *b) {
    for (int k = 0; k < b->n; k++) {
        SL_TRY(exec_stmt(ps, b->items[k]));
        if (ps->flow != FLOW_NEXT) return SL_OK;
    }
    return SL_OK;
}

/* One turn of a for loop with the target bound to v (consumed); false: leave the loop. */
static sl_status loop_turn(parser *ps, const stmt *s, result *v, bool *go_on) {
    SL_TRY(step(ps, s->pos, 1));
    SL_TRY(assign(ps, s->lhs, v, NULL));
    SL_TRY(exec_block(ps, &s->body));
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
        !func_find(ps, "range") && !env_find(ps, "range")) { /* range: not made into a list */
        int64_t a, b, d;
        SL_TRY(range_args(ps, it, &a, &b, &d));
        uint64_t n = range_len(a, b, d);
        ps->loop = s;
        for (uint64_t k = 0; k < n && go_on && st == SL_OK; k++) {
            result v;
            memset(&v, 0, sizeof v);
            set_int(&v.val, (int64_t)((uint64_t)a + k * (uint64_t)d));
            st = loop_turn(ps, s, &v, &go_on);
        }
        ps->loop = saved;
        return st;
    }
    result seq;
    SL_TRY(eval(ps, it, 1, &seq));
    if (seq.dict || seq.val.kind != SL_VAL_LIST) {
        st = sl__parse_perr(ps, SL_EINVAL, it->pos,
                            is_node(&seq)
                                ? "a loop over an op output (data) is not supported: loops run "
                                  "when the pipeline is built, over range(...), lists and tuples"
                                : "a for loop runs over range(...), a list or a tuple, not %s",
                            kind_name(&seq));
        result_free(&seq);
        return st;
    }
    ps->loop = s;
    for (int k = 0; k < seq.val.n && go_on && st == SL_OK; k++) {
        result v = {seq.val.items[k], false};
        memset(&seq.val.items[k], 0, sizeof seq.val.items[k]);
        st = loop_turn(ps, s, &v, &go_on);
    }
    ps->loop = saved;
    result_free(&seq);
    return st;
}

static sl_status deco_apply(parser *ps, const func *f);

static sl_status exec_stmt(parser *ps, const stmt *s) {
    SL_TRY(step(ps, s->pos, 1));
    switch (s->kind) {
    case S_PASS:
        return SL_OK;
    case S_DEF:
        return s->fn == ps->pipe ? deco_apply(ps, s->fn) : SL_OK;
    case S_BREAK:
    case S_CONTINUE:
        ps->flow = s->kind == S_BREAK ? FLOW_BREAK : FLOW_CONTINUE;
        return SL_OK;
    case S_ASSIGN: {
        const expr *lhs = s->lhs;
        int n = lhs->kind == E_TUPLE || lhs->kind == E_LIST ? lhs->n : 1;
        result v;
        SL_TRY(eval(ps, s->rhs, n, &v));
        return assign(ps, lhs, &v, s->rhs);
    }
    case S_RETURN: {
        frame *fr = ps->fr;
        if (!fr->fn && ps->pipe)
            return sl__parse_perr(ps, SL_ESYNTAX, s->pos, "'return' outside the pipeline function");
        result v;
        memset(&v, 0, sizeof v);
        if (s->rhs) SL_TRY(eval(ps, s->rhs, fr->want, &v));
        fr->ret = v;
        fr->returned = true;
        fr->ret_expr = s->rhs;
        fr->ret_pos = s->pos;
        ps->flow = FLOW_RETURN;
        return SL_OK;
    }
    case S_IF:
        for (int k = 0; k < s->ncond; k++) {
            result c;
            bool t;
            SL_TRY(eval(ps, s->conds[k], 1, &c));
            sl_status st = truth(ps, s->conds[k], &c, k ? "elif" : "if", &t);
            result_free(&c);
            if (st != SL_OK) return st;
            if (t) return exec_block(ps, &s->bodies[k]);
        }
        return exec_block(ps, &s->bodies[s->ncond]);
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
    if (n > SL_MAX_OUTPUTS)
        return sl__parse_perr(ps, SL_EINVAL, re->pos, "at most %d outputs are supported",
                              SL_MAX_OUTPUTS);
    for (int k = 0; k < n; k++) {
        const expr *at = literal ? re->items[k] : re;
        if (items[k].kind != SL_VAL_NODE || fr->ret.dict)
            return sl__parse_perr(ps, SL_EINVAL, at->pos, "a pipeline returns op outputs, not %s",
                                  has_node(&items[k]) ? "a list of them" : "constants");
        prog->outputs[k] = items[k].node;
        prog->output_pos[k] = at->pos;
        if (at->kind == E_NAME)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", at->s);
        else
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "out%d", k);
    }
    prog->num_outputs = n;
    const sl_pipeline_decorator *d = &prog->deco;
    if (d->num_outputs) {
        if (d->num_outputs != n)
            return sl__parse_perr(ps, SL_EINVAL, re->pos,
                                  "output_map names %d output%s but the pipeline returns %d",
                                  d->num_outputs, d->num_outputs == 1 ? "" : "s", n);
        for (int k = 0; k < n; k++)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", d->output_map[k]);
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
        const sl_pipeline_bind *bd = bind_find(ps, f->params[k]);
        result v;
        memset(&v, 0, sizeof v);
        bool unbound = false;
        if (bd) {
            st = sl__parse_bind_value(bd->value ? bd->value : "", &v.val, ps->err);
        } else if (f->defaults[k]) {
            ps->no_ops = true;
            st = eval_const(ps, f->defaults[k], &v.val, "a default");
            ps->no_ops = false;
        } else {
            unbound = true;
        }
        if (st != SL_OK) break;
        ps->local = &sc;
        env_entry *e = env_set(ps, f->params[k]);
        ps->local = NULL;
        if (!e) {
            result_free(&v);
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
        st = exec_block(ps, &f->body);
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
    result_free(&fr.ret);
    scope_free(&sc);
    return st;
}

/* Runs the module's code, then the pipeline function (when there is one). */
static sl_status run_module(parser *ps) {
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
    result_free(&fr.ret);
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
    SL_TRY(eval_const(ps, e, &v, key));
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
        SL_TRY(eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_LIST) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "output_map must be a list of names");
        } else if (v.n > SL_MAX_OUTPUTS) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "output_map: at most %d outputs",
                                SL_MAX_OUTPUTS);
        } else {
            for (int k = 0; k < v.n && st == SL_OK; k++) {
                if (v.items[k].kind != SL_VAL_STR)
                    st = sl__parse_perr(ps, SL_EINVAL, e->items ? e->items[k]->pos : e->pos,
                                        "output_map must be a list of strings");
                else if (strlen(v.items[k].s) >= sizeof d->output_map[k])
                    st = sl__parse_perr(ps, SL_EINVAL, e->pos, "output_map: name too long");
                else
                    snprintf(d->output_map[k], sizeof d->output_map[k], "%s", v.items[k].s);
            }
            if (st == SL_OK) d->num_outputs = v.n;
        }
    } else if (!strcmp(key, "reader_name")) {
        SL_TRY(eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_STR || strlen(v.s) >= sizeof d->reader_name)
            st = sl__parse_perr(ps, SL_EINVAL, e->pos,
                                "reader_name must be a string (the reader's name=)");
        else
            snprintf(d->reader_name, sizeof d->reader_name, "%s", v.s);
    } else if (!strcmp(key, "size")) {
        SL_TRY(eval_const(ps, e, &v, key));
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
static sl_status deco_apply(parser *ps, const func *f) {
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

static void deco_init(sl_pipeline_decorator *d) {
    memset(d, 0, sizeof *d);
    d->size = -1;
    d->prepare_first_batch = true;
    d->batch_size = d->num_threads = -1;
    d->seed = -1;
    d->prefetch_queue_depth = d->device_id = -1;
}

void sl__parse_prog_free(sl__parse_prog *prog) {
    if (!prog) return;
    for (int i = 0; i < prog->num_stmts; i++) stmt_clear(&prog->stmts[i]);
    free(prog->stmts);
    free(prog->text);
    free(prog);
}

static sl_status run_parser(const char *text, const char *filename, const char *function, int nbind,
                            const sl_pipeline_bind *binds, bool header_only, sl__parse_prog *prog,
                            sl_err *err) {
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.text = text;
    ps.filename = filename;
    ps.function = function && function[0] ? function : NULL;
    ps.err = err;
    ps.nbind = nbind;
    ps.binds = binds;
    ps.prog = prog;
    sl_status st = sl__parse_read(&ps);
    ps.step_limit = SL__PARSE_STEPS_MAX + ps.nexprs + ps.nstmts;
    if (st == SL_OK) st = func_index(&ps);
    if (st == SL_OK) st = choose_pipeline(&ps);
    if (st == SL_OK && header_only && ps.pipe) st = deco_apply(&ps, ps.pipe);
    if (st == SL_OK && !header_only) st = run_module(&ps);
    scope_free(&ps.globals);
    free(ps.fhash);
    sl__parse_release(&ps);
    return st;
}

sl_status sl__parse_program_fn(const char *text, const char *filename, const char *function,
                               int nbind, const sl_pipeline_bind *binds, sl__parse_prog **out,
                               sl_err *err) {
    *out = NULL;
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    if (nbind < 0 || (nbind && !binds)) return sl_err_set(err, SL_EINVAL, "bad bind list");
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    snprintf(prog->filename, sizeof prog->filename, "%s", filename);
    if (!(prog->text = strdup(text))) {
        free(prog);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    sl_status st = run_parser(text, filename, function, nbind, binds, false, prog, err);
    if (st != SL_OK) {
        sl__parse_prog_free(prog);
        return st;
    }
    *out = prog;
    return SL_OK;
}

sl_status sl__parse_program(const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl__parse_prog **out, sl_err *err) {
    return sl__parse_program_fn(text, filename, NULL, nbind, binds, out, err);
}

sl_status sl__parse_header(const char *text, const char *filename, const char *function,
                           sl_pipeline_decorator *out, sl_err *err) {
    deco_init(out);
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    sl_status st = run_parser(text, filename, function, 0, NULL, true, prog, err);
    if (st == SL_OK) *out = prog->deco;
    sl__parse_prog_free(prog);
    return st;
}

sl_status sl_pipeline_text_decorator(const char *text, const char *filename,
                                     sl_pipeline_decorator *out, sl_err *err) {
    return sl__parse_header(text, filename, NULL, out, err);
}

sl_status sl_pipeline_text_function_decorator(const char *text, const char *filename,
                                              const char *function, sl_pipeline_decorator *out,
                                              sl_err *err) {
    return sl__parse_header(text, filename, function, out, err);
}
