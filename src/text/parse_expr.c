/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's expression grammar: recursive descent from the tokens (parse_lex.h)
 * to expression trees in the arena (parse_tree.h) -- literals, adjacent strings joined, names,
 * attributes, calls with keyword and ** arguments, lists, tuples, dicts, + - * / // % **, | ^ &
 * << >>, unary - + ~, comparison chains, and/or/not, conditional expressions -- with the depth of
 * the trees and of the recursion bounded. Python outside the subset (lambda, comprehensions, sets,
 * '*' unpacking, '@') is an error saying so. Subscripts: a dict's key (readers.tfrecord's
 * outputs by feature name), a list's index, or an op output's indices and slices (x[1:, 2]). */
#include "text/parse_int.h"

#include "core/log.h"

#include <stdio.h>
#include <string.h>

/* ---- expression parsing ---------------------------------------------------------------------- */

/* Sets e->depth from its children; an error at e when the tree gets too deep. */
static sl_status set_depth(parser *ps, expr *e) {
    int d = 0;
    if (e->a && e->a->depth > d) d = e->a->depth;
    if (e->b && e->b->depth > d) d = e->b->depth;
    if (e->c && e->c->depth > d) d = e->c->depth;
    for (int k = 0; k < e->n; k++)
        if (e->items[k]->depth > d) d = e->items[k]->depth;
    for (int k = 0; k < e->nkw; k++)
        if (e->kwvals[k]->depth > d) d = e->kwvals[k]->depth;
    e->depth = d + 1;
    if (e->depth > SL__PARSE_DEPTH_MAX)
        return sl__parse_perr(ps, SL_ESYNTAX, e->pos,
                              "expression nested too deeply (over %d levels)", SL__PARSE_DEPTH_MAX);
    return SL_OK;
}

/* Entering sl__parse_expr or parse_unary, which recurse into each other: bounded like the
 * trees. */
static sl_status nest_enter(parser *ps) {
    if (ps->nest >= SL__PARSE_DEPTH_MAX)
        return sl__parse_perr(ps, SL_ESYNTAX, sl__parse_tok(ps)->pos,
                              "expression nested too deeply (over %d levels)", SL__PARSE_DEPTH_MAX);
    ps->nest++;
    return SL_OK;
}

/* Call arguments after '(' up to and including ')'. */
static sl_status parse_call_args(parser *ps, expr *call) {
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ")")) {
            sl__parse_next(ps);
            return SL_OK;
        }
        if (sl__parse_is_op(t, "*"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "'*' unpacking is not supported in a pipeline");
        if (sl__parse_is_op(t, "**") ||
            (t->kind == T_NAME && sl__parse_is_op(sl__parse_tok_ahead(ps, 1), "="))) {
            bool splat = sl__parse_is_op(t, "**"); /* **mapping: its keys are keywords */
            if (!splat && t->len >= SL__PARSE_NAME_MAX)
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "name too long");
            const char *name = splat ? NULL : sl__parse_arena_strndup(ps, t->start, (size_t)t->len);
            if (!splat && !name) return SL_ENOMEM;
            if (call->nkw >= SL__PARSE_KWARGS_MAX) /* the check below scans them */
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                      "too many keyword arguments (over %d)", SL__PARSE_KWARGS_MAX);
            for (int k = 0; name && k < call->nkw; k++)
                if (call->kwnames[k] && !strcmp(call->kwnames[k], name))
                    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "keyword argument repeated: %s",
                                          name);
            sl__parse_pos pos = t->pos;
            sl__parse_next(ps);
            if (!splat) sl__parse_next(ps);
            expr *v;
            SL_TRY(sl__parse_expr(ps, &v));
            int n = call->nkw;
            if (!sl__parse_arena_push(ps, (void **)&call->kwnames, &n, sizeof name, &name))
                return SL_ENOMEM;
            n = call->nkw;
            if (!sl__parse_arena_push(ps, (void **)&call->kwpos, &n, sizeof pos, &pos))
                return SL_ENOMEM;
            n = call->nkw;
            if (!sl__parse_arena_push(ps, (void **)&call->kwvals, &n, sizeof v, &v))
                return SL_ENOMEM;
            call->nkw = n;
        } else {
            if (call->nkw)
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                      "positional argument follows keyword argument%s",
                                      call->kwnames[call->nkw - 1] ? "" : " unpacking");
            expr *v;
            SL_TRY(sl__parse_expr(ps, &v));
            if (!sl__parse_arena_push(ps, (void **)&call->items, &call->n, sizeof v, &v))
                return SL_ENOMEM;
        }
        t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ",")) {
            sl__parse_next(ps);
        } else if (!sl__parse_is_op(t, ")")) {
            char b[64];
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or ')' in the call, got %s",
                                  sl__parse_tok_desc(t, b, sizeof b));
        }
    }
}

/* Items of a list or parenthesised tuple after the opening bracket, up to and including close. */
static sl_status parse_items(parser *ps, expr *e, const char *close, bool *had_comma) {
    *had_comma = false;
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, close)) {
            sl__parse_next(ps);
            return SL_OK;
        }
        expr *v;
        SL_TRY(sl__parse_expr(ps, &v));
        if (!sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v)) return SL_ENOMEM;
        t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ",")) {
            *had_comma = true;
            sl__parse_next(ps);
        } else if (!sl__parse_is_op(t, close)) {
            char b[64];
            if (t->kind == T_NAME && sl__parse_is_name(t, "for"))
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                      "comprehensions are not supported in a pipeline");
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '%s', got %s", close,
                                  sl__parse_tok_desc(t, b, sizeof b));
        }
    }
}

/* {key: value, ...} after the '{', up to and including the '}' (n pairs: keys in items, values
 * in kwvals); a set display is refused. */
static sl_status parse_dict(parser *ps, expr *e) {
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, "}")) {
            sl__parse_next(ps);
            e->nkw = e->n;
            return SL_OK;
        }
        expr *k, *v;
        SL_TRY(sl__parse_expr(ps, &k));
        t = sl__parse_tok(ps);
        char b[64];
        if (sl__parse_is_op(t, ",") || sl__parse_is_op(t, "}"))
            return sl__parse_perr(ps, SL_ESYNTAX, e->pos, "sets are not supported in a pipeline");
        if (sl__parse_is_name(t, "for"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "comprehensions are not supported in a pipeline");
        if (!sl__parse_is_op(t, ":"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ':' in the dict, got %s",
                                  sl__parse_tok_desc(t, b, sizeof b));
        sl__parse_next(ps);
        SL_TRY(sl__parse_expr(ps, &v));
        int m = e->n;
        if (!sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof k, &k) ||
            !sl__parse_arena_push(ps, (void **)&e->kwvals, &m, sizeof v, &v))
            return SL_ENOMEM;
        t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ",")) {
            sl__parse_next(ps);
        } else if (!sl__parse_is_op(t, "}")) {
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '}' in the dict, got %s",
                                  sl__parse_tok_desc(t, b, sizeof b));
        }
    }
}

static sl_status parse_subscripts(parser *ps, sl__parse_pos pos, expr **out);

sl_status sl__parse_primary(parser *ps, expr **out) {
    token *t = sl__parse_tok(ps);
    char b[64];
    expr *e = NULL;
    switch (t->kind) {
    case T_INT:
    case T_FLOAT:
        e = sl__parse_new_expr(ps, t->kind == T_INT ? E_INT : E_FLOAT, t->pos);
        if (!e) return SL_ENOMEM;
        e->i = t->i;
        e->f = t->f;
        sl__parse_next(ps);
        break;
    case T_STR: {
        e = sl__parse_new_expr(ps, E_STR, t->pos);
        if (!e) return SL_ENOMEM;
        size_t n = 0;
        for (int k = 0; sl__parse_tok_ahead(ps, k)->kind == T_STR; k++)
            n += strlen(sl__parse_tok_ahead(ps, k)->s);
        char *s = sl__parse_arena_alloc(ps, n + 1);
        if (!s) return SL_ENOMEM;
        size_t at = 0;
        for (; sl__parse_tok(ps)->kind == T_STR; sl__parse_next(ps)) { /* "a" "b" joins */
            size_t l = strlen(sl__parse_tok(ps)->s);
            memcpy(s + at, sl__parse_tok(ps)->s, l);
            at += l;
        }
        s[at] = '\0';
        e->s = s;
        break;
    }
    case T_NAME:
        if (sl__parse_is_name(t, "True") || sl__parse_is_name(t, "False") ||
            sl__parse_is_name(t, "None")) {
            e = sl__parse_new_expr(ps,
                                   sl__parse_is_name(t, "True")    ? E_TRUE
                                   : sl__parse_is_name(t, "False") ? E_FALSE
                                                                   : E_NONE,
                                   t->pos);
            if (!e) return SL_ENOMEM;
            sl__parse_next(ps);
            break;
        }
        if (sl__parse_is_name(t, "lambda"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "lambda is not supported in a pipeline");
        if (sl__parse_is_keyword(t))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "unsupported syntax: '%.*s' in an expression", t->len, t->start);
        if (t->len >= SL__PARSE_NAME_MAX)
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "name too long");
        e = sl__parse_new_expr(ps, E_NAME, t->pos);
        if (!e || !(e->s = sl__parse_arena_strndup(ps, t->start, (size_t)t->len))) return SL_ENOMEM;
        sl__parse_next(ps);
        break;
    case T_OP:
        if (sl__parse_is_op(t, "(") || sl__parse_is_op(t, "[")) {
            bool list = sl__parse_is_op(t, "["), comma;
            e = sl__parse_new_expr(ps, list ? E_LIST : E_TUPLE, t->pos);
            if (!e) return SL_ENOMEM;
            sl__parse_next(ps);
            SL_TRY(parse_items(ps, e, list ? "]" : ")", &comma));
            if (!list && e->n == 1 && !comma)
                e = e->items[0]; /* (x) is x */
            else
                SL_TRY(set_depth(ps, e));
            break;
        }
        if (sl__parse_is_op(t, "{")) {
            e = sl__parse_new_expr(ps, E_DICT, t->pos);
            if (!e) return SL_ENOMEM;
            sl__parse_next(ps);
            SL_TRY(parse_dict(ps, e));
            SL_TRY(set_depth(ps, e));
            break;
        }
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                              sl__parse_tok_desc(t, b, sizeof b));
    default:
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                              sl__parse_tok_desc(t, b, sizeof b));
    }
    /* trailers: .name, (call), [subscript] */
    for (;;) {
        t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ".")) {
            sl__parse_next(ps);
            token *n = sl__parse_tok(ps);
            if (n->kind != T_NAME || sl__parse_is_keyword(n))
                return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "expected a name after '.', got %s",
                                      sl__parse_tok_desc(n, b, sizeof b));
            if (n->len >= SL__PARSE_NAME_MAX)
                return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "name too long");
            expr *a = sl__parse_new_expr(ps, E_ATTR, e->pos);
            if (!a || !(a->s = sl__parse_arena_strndup(ps, n->start, (size_t)n->len)))
                return SL_ENOMEM;
            a->npos = n->pos;
            a->a = e;
            e = a;
            SL_TRY(set_depth(ps, e));
            sl__parse_next(ps);
        } else if (sl__parse_is_op(t, "(")) {
            expr *c = sl__parse_new_expr(ps, E_CALL, e->pos);
            if (!c) return SL_ENOMEM;
            c->a = e;
            sl__parse_next(ps);
            SL_TRY(parse_call_args(ps, c));
            SL_TRY(set_depth(ps, c));
            e = c;
        } else if (sl__parse_is_op(t, "[")) {
            expr *x = sl__parse_new_expr(ps, E_INDEX, t->pos);
            if (!x) return SL_ENOMEM;
            x->a = e;
            sl__parse_next(ps);
            SL_TRY(parse_subscripts(ps, t->pos, &x->b));
            SL_TRY(set_depth(ps, x));
            e = x;
        } else {
            break;
        }
    }
    *out = e;
    return SL_OK;
}

static sl_status parse_unary(parser *ps, expr **out);

/* One part of a slice: an expression, or NULL where it is left out (before ':', ',' or ']'). */
static sl_status slice_part(parser *ps, expr **out) {
    token *t = sl__parse_tok(ps);
    *out = NULL;
    if (sl__parse_is_op(t, ":") || sl__parse_is_op(t, ",") || sl__parse_is_op(t, "]")) return SL_OK;
    return sl__parse_expr(ps, out);
}

/* The subscripts after '[' (at pos) up to and past ']': one expression (x["key"], x[0]), or,
 * with slices or commas (x[1:, :-1, 2]), an E_TUPLE of them, slices as E_SLICE. */
static sl_status parse_subscripts(parser *ps, sl__parse_pos pos, expr **out) {
    char b[64];
    expr *list = sl__parse_new_expr(ps, E_TUPLE, pos);
    if (!list) return SL_ENOMEM;
    bool several = false;
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, "]"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "an empty subscript");
        expr *item;
        if (sl__parse_is_op(t, "...")) { /* x[..., 0]: the dims the other subscripts leave */
            if (!(item = sl__parse_new_expr(ps, E_ELLIPSIS, t->pos))) return SL_ENOMEM;
            sl__parse_next(ps);
            several = true;
        } else {
            SL_TRY(slice_part(ps, &item));
        }
        if ((!item || item->kind != E_ELLIPSIS) && sl__parse_is_op(sl__parse_tok(ps), ":")) {
            expr *sl = sl__parse_new_expr(ps, E_SLICE, item ? item->pos : t->pos);
            if (!sl) return SL_ENOMEM;
            sl->a = item;
            sl__parse_next(ps);
            SL_TRY(slice_part(ps, &sl->b));
            if (sl__parse_is_op(sl__parse_tok(ps), ":")) {
                sl__parse_next(ps);
                SL_TRY(slice_part(ps, &sl->c));
            }
            SL_TRY(set_depth(ps, sl));
            item = sl;
            several = true; /* (a slice always goes in the tuple) */
        }
        if (!sl__parse_arena_push(ps, (void **)&list->items, &list->n, sizeof item, &item))
            return SL_ENOMEM;
        t = sl__parse_tok(ps);
        if (sl__parse_is_op(t, ",")) {
            several = true;
            sl__parse_next(ps);
            if (sl__parse_is_op(sl__parse_tok(ps), "]")) break; /* x[1, ] */
            continue;
        }
        if (!sl__parse_is_op(t, "]"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "expected ']' after the subscript, got %s",
                                  sl__parse_tok_desc(t, b, sizeof b));
        break;
    }
    sl__parse_next(ps);
    SL_TRY(set_depth(ps, list));
    *out = several ? list : list->items[0];
    return SL_OK;
}

static sl_status parse_power(parser *ps, expr **out) {
    SL_TRY(sl__parse_primary(ps, out));
    token *t = sl__parse_tok(ps);
    if (sl__parse_is_op(t, "**")) {
        expr *e = sl__parse_new_expr(ps, E_BIN, t->pos);
        if (!e) return SL_ENOMEM;
        strcpy(e->op, "**");
        e->a = *out;
        sl__parse_next(ps);
        SL_TRY(parse_unary(ps, &e->b));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

static sl_status parse_unary_in(parser *ps, expr **out) {
    token *t = sl__parse_tok(ps);
    if (sl__parse_is_op(t, "-") || sl__parse_is_op(t, "+") || sl__parse_is_op(t, "~")) {
        expr *e = sl__parse_new_expr(ps,
                                     sl__parse_is_op(t, "-")   ? E_NEG
                                     : sl__parse_is_op(t, "+") ? E_POS
                                                               : E_INV,
                                     t->pos);
        if (!e) return SL_ENOMEM;
        sl__parse_next(ps);
        SL_TRY(parse_unary(ps, &e->a));
        SL_TRY(set_depth(ps, e));
        *out = e;
        return SL_OK;
    }
    return parse_power(ps, out);
}

static sl_status parse_unary(parser *ps, expr **out) {
    SL_TRY(nest_enter(ps));
    sl_status st = parse_unary_in(ps, out);
    ps->nest--;
    return st;
}

/* Python's binary operators by precedence, loosest first */
static sl_status parse_binary(parser *ps, expr **out, int level) {
    static const char *const levels[6][4] = {{"|", NULL, NULL, NULL}, {"^", NULL, NULL, NULL},
                                             {"&", NULL, NULL, NULL}, {"<<", ">>", NULL, NULL},
                                             {"+", "-", NULL, NULL},  {"*", "/", "//", "%"}};
    if (level == 6) return parse_unary(ps, out);
    SL_TRY(parse_binary(ps, out, level + 1));
    for (;;) {
        token *t = sl__parse_tok(ps);
        const char *op = NULL;
        for (int k = 0; k < 4 && levels[level][k]; k++)
            if (sl__parse_is_op(t, levels[level][k])) op = levels[level][k];
        if (!op) return SL_OK;
        expr *e = sl__parse_new_expr(ps, E_BIN, t->pos);
        if (!e) return SL_ENOMEM;
        snprintf(e->op, sizeof e->op, "%s", op);
        e->a = *out;
        sl__parse_next(ps);
        SL_TRY(parse_binary(ps, &e->b, level + 1));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
}

static sl_status parse_expr_in(parser *ps, expr **out);

sl_status sl__parse_expr(parser *ps, expr **out) {
    SL_TRY(nest_enter(ps));
    sl_status st = parse_expr_in(ps, out);
    ps->nest--;
    return st;
}

/* comparison: a chain of arithmetic expressions joined by == != < <= > >= in, not in, is, is not */
static sl_status parse_comparison(parser *ps, expr **out) {
    SL_TRY(parse_binary(ps, out, 0));
    static const struct {
        const char *op;
        int code;
    } cmp_ops[] = {{"==", C_EQ}, {"!=", C_NE}, {"<", C_LT},
                   {"<=", C_LE}, {">", C_GT},  {">=", C_GE}};
    expr *e = NULL;
    for (;;) {
        token *t = sl__parse_tok(ps);
        int code = -1, skip = 1;
        for (size_t i = 0; i < SL_ARRAY_LEN(cmp_ops); i++)
            if (sl__parse_is_op(t, cmp_ops[i].op)) code = cmp_ops[i].code;
        if (sl__parse_is_name(t, "in")) code = C_IN;
        if (sl__parse_is_name(t, "not") && sl__parse_is_name(sl__parse_tok_ahead(ps, 1), "in"))
            code = C_NOT_IN, skip = 2;
        if (sl__parse_is_name(t, "is")) {
            code = C_IS;
            if (sl__parse_is_name(sl__parse_tok_ahead(ps, 1), "not")) code = C_IS_NOT, skip = 2;
        }
        if (code < 0) break;
        if (!e) {
            if (!(e = sl__parse_new_expr(ps, E_CMP, t->pos)) ||
                !sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof *out, out))
                return SL_ENOMEM;
        }
        while (skip--) sl__parse_next(ps);
        expr *v;
        SL_TRY(parse_binary(ps, &v, 0));
        int m = e->n - 1;
        if (!sl__parse_arena_push(ps, (void **)&e->cops, &m, sizeof code, &code) ||
            !sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v))
            return SL_ENOMEM;
    }
    if (e) {
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

/* not_test: 'not' not_test | comparison */
static sl_status parse_not(parser *ps, expr **out) {
    token *t = sl__parse_tok(ps);
    if (!sl__parse_is_name(t, "not")) return parse_comparison(ps, out);
    SL_TRY(nest_enter(ps));
    sl_status st = SL_ENOMEM;
    expr *e = sl__parse_new_expr(ps, E_NOT, t->pos);
    if (e) {
        sl__parse_next(ps);
        st = parse_not(ps, &e->a);
        if (st == SL_OK) st = set_depth(ps, e);
    }
    ps->nest--;
    if (st == SL_OK) *out = e;
    return st;
}

/* or_test / and_test: level 0 'or', level 1 'and' */
static sl_status parse_bool(parser *ps, expr **out, int level) {
    const char *word = level ? "and" : "or";
    SL_TRY(level ? parse_not(ps, out) : parse_bool(ps, out, 1));
    while (sl__parse_is_name(sl__parse_tok(ps), word)) {
        expr *e = sl__parse_new_expr(ps, level ? E_AND : E_OR, sl__parse_tok(ps)->pos);
        if (!e) return SL_ENOMEM;
        e->a = *out;
        sl__parse_next(ps);
        SL_TRY(level ? parse_not(ps, &e->b) : parse_bool(ps, &e->b, 1));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

static sl_status parse_expr_in(parser *ps, expr **out) {
    SL_TRY(parse_bool(ps, out, 0));
    token *t = sl__parse_tok(ps);
    if (sl__parse_is_name(t, "if")) { /* a if c else b */
        expr *e = sl__parse_new_expr(ps, E_IFEXP, t->pos);
        if (!e) return SL_ENOMEM;
        e->a = *out;
        sl__parse_next(ps);
        SL_TRY(parse_bool(ps, &e->c, 0));
        t = sl__parse_tok(ps);
        if (!sl__parse_is_name(t, "else")) {
            char b[64];
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "expected 'else' in the conditional expression, got %s",
                                  sl__parse_tok_desc(t, b, sizeof b));
        }
        sl__parse_next(ps);
        SL_TRY(sl__parse_expr(ps, &e->b));
        SL_TRY(set_depth(ps, e));
        *out = e;
        t = sl__parse_tok(ps);
    }
    static const char *const bad_ops[] = {"@", ":=", "..."};
    static const char *const bad_words[] = {"if", "and", "or", "not", "in", "is", "else"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_ops); i++)
        if (sl__parse_is_op(t, bad_ops[i]))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '%s' in a pipeline",
                                  bad_ops[i]);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_words); i++)
        if (sl__parse_is_name(t, bad_words[i]))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "unsupported syntax: '%s' in an expression", bad_words[i]);
    if (sl__parse_is_name(t, "for"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "comprehensions are not supported in a pipeline");
    return SL_OK;
}

/* expr (',' expr)* [','] -- a tuple when there is a comma */
sl_status sl__parse_exprlist(parser *ps, expr **out) {
    SL_TRY(sl__parse_expr(ps, out));
    if (!sl__parse_is_op(sl__parse_tok(ps), ",")) return SL_OK;
    expr *e = sl__parse_new_expr(ps, E_TUPLE, (*out)->pos);
    if (!e || !sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof *out, out))
        return SL_ENOMEM;
    while (sl__parse_is_op(sl__parse_tok(ps), ",")) {
        sl__parse_next(ps);
        token *t = sl__parse_tok(ps);
        if (t->kind == T_NEWLINE || sl__parse_is_op(t, "=")) break;
        expr *v;
        SL_TRY(sl__parse_expr(ps, &v));
        if (!sl__parse_arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v)) return SL_ENOMEM;
    }
    SL_TRY(set_depth(ps, e));
    *out = e;
    return SL_OK;
}

/* "a.b.c" for a chain of names and attributes, else false. */
bool sl__parse_dotted(const expr *e, char *buf, size_t size) {
    if (e->kind == E_NAME) return (size_t)snprintf(buf, size, "%s", e->s) < size;
    if (e->kind != E_ATTR || !sl__parse_dotted(e->a, buf, size)) return false;
    size_t n = strlen(buf);
    return (size_t)snprintf(buf + n, size - n, ".%s", e->s) < size - n;
}
