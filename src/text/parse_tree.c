/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's statement grammar, and what it shares with the expression grammar
 * (parse_expr.c): the arena the trees live in, the cursor over the tokens (parse_lex.h), node
 * constructors. Recursive descent over the statements of the subset of Python that DALI pipeline
 * functions use -- functions with an optional @data_iterator/@pipeline_def decorator and
 * defaults, assignments and unpacking, if/elif/else, for, return, break, continue, pass,
 * docstrings, imports (read and skipped) -- into the blocks of parse_tree.h. Everything is parsed
 * before anything runs; the running half (parse_run.h) runs the trees. */
#include "text/parse_int.h"

#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the arena and the token cursor ---------------------------------------------------------- */

void *sl__parse_arena_alloc(parser *ps, size_t size) {
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_block *b = ps->arena;
    if (!b || b->used + size > b->size) {
        size_t cap = size > 16384 ? size : 16384;
        b = malloc(sizeof *b + cap);
        if (!b) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        b->next = ps->arena;
        b->used = 0;
        b->size = cap;
        ps->arena = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

static void arena_free(parser *ps) {
    while (ps->arena) {
        arena_block *n = ps->arena->next;
        free(ps->arena);
        ps->arena = n;
    }
}

token *sl__parse_tok(parser *ps) {
    return &ps->toks[ps->at];
}
token *sl__parse_tok_ahead(parser *ps, int k) {
    int i = ps->at + k;
    return &ps->toks[i < ps->ntok ? i : ps->ntok - 1];
}
void sl__parse_next(parser *ps) {
    if (ps->at < ps->ntok - 1) ps->at++;
}

static sl_status expect_op(parser *ps, const char *op, const char *what) {
    token *t = sl__parse_tok(ps);
    if (sl__parse_is_op(t, op)) {
        sl__parse_next(ps);
        return SL_OK;
    }
    char b[64];
    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected '%s'%s%s, got %s", op, what ? " " : "",
                          what ? what : "", sl__parse_tok_desc(t, b, sizeof b));
}

static sl_status expect_newline(parser *ps) {
    token *t = sl__parse_tok(ps);
    if (t->kind == T_NEWLINE) {
        sl__parse_next(ps);
        return SL_OK;
    }
    char b[64];
    if (t->kind == T_OP && (sl__parse_is_op(t, "+=") || sl__parse_is_op(t, "-=") ||
                            sl__parse_is_op(t, "*=") || sl__parse_is_op(t, "/=")))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "augmented assignment is not supported in a pipeline");
    if (sl__parse_is_op(t, ";"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "';' is not supported: one statement per line");
    if (t->kind == T_NAME && sl__parse_is_keyword(t))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unsupported syntax: '%.*s' here", t->len,
                              t->start);
    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected end of line, got %s",
                          sl__parse_tok_desc(t, b, sizeof b));
}

char *sl__parse_arena_strndup(parser *ps, const char *s, size_t n) {
    char *d = sl__parse_arena_alloc(ps, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

expr *sl__parse_new_expr(parser *ps, ekind kind, sl__parse_pos pos) {
    expr *e = sl__parse_arena_alloc(ps, sizeof *e);
    ps->nexprs++;
    if (e) {
        e->kind = kind;
        e->pos = pos;
        e->depth = 1;
    }
    return e;
}

/* Appends to an arena array. The capacity is implicit in the count: 4, then doubled each time
 * the count reaches a power of two, so n pushes copy and allocate O(n) in all (a copy per push
 * made a 100,000-item list cost tens of GB). */
bool sl__parse_arena_push(parser *ps, void **arr, int *n, size_t elem, const void *item) {
    int k = *n;
    if (k == INT32_MAX) {
        sl_err_set(ps->err, SL_ENOMEM, "too many items");
        return false;
    }
    if (k == 0 || (k >= 4 && (k & (k - 1)) == 0)) {
        size_t cap = k == 0 ? 4 : 2 * (size_t)k;
        void *grown = sl__parse_arena_alloc(ps, cap * elem);
        if (!grown) return false;
        if (k) memcpy(grown, *arr, (size_t)k * elem);
        *arr = grown;
    }
    memcpy((char *)*arr + (size_t)k * elem, item, elem);
    (*n)++;
    return true;
}

/* ---- statements: parsing --------------------------------------------------------------------- */

static sl_status skip_import(parser *ps) {
    /* import a.b [as c], ... | from a.b import (x, y) | from a import * */
    while (sl__parse_tok(ps)->kind != T_NEWLINE && sl__parse_tok(ps)->kind != T_END) {
        token *t = sl__parse_tok(ps);
        if (!(t->kind == T_NAME || sl__parse_is_op(t, ".") || sl__parse_is_op(t, ",") ||
              sl__parse_is_op(t, "*") || sl__parse_is_op(t, "(") || sl__parse_is_op(t, ")"))) {
            char b[64];
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected %s in an import line",
                                  sl__parse_tok_desc(t, b, sizeof b));
        }
        sl__parse_next(ps);
    }
    return expect_newline(ps);
}

static stmt *new_stmt(parser *ps, skind kind, sl__parse_pos pos) {
    stmt *s = sl__parse_arena_alloc(ps, sizeof *s);
    if (s) {
        s->kind = kind;
        s->pos = pos;
    }
    return s;
}

/* Appends s to b; nothing may follow a return, break or continue in the same block (it would
 * never run). */
static sl_status push_stmt(parser *ps, block *b, stmt *s) {
    if (!s) return SL_ENOMEM;
    if (b->n && s->kind != S_DEF) {
        skind last = b->items[b->n - 1]->kind;
        if (last == S_RETURN || last == S_BREAK || last == S_CONTINUE)
            return sl__parse_perr(ps, SL_ESYNTAX, s->pos, "statement after %s",
                                  last == S_RETURN  ? "return"
                                  : last == S_BREAK ? "break"
                                                    : "continue");
    }
    ps->nstmts++;
    return sl__parse_arena_push(ps, (void **)&b->items, &b->n, sizeof s, &s) ? SL_OK : SL_ENOMEM;
}

static sl_status parse_stmt(parser *ps, block *b, bool top, bool inline_suite);

/* The statements of an indented block, after its INDENT, up to and including its DEDENT. */
static sl_status parse_block_body(parser *ps, block *b) {
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (t->kind == T_DEDENT) {
            sl__parse_next(ps);
            return SL_OK;
        }
        if (t->kind == T_END) return SL_OK;
        if (t->kind == T_NEWLINE) {
            sl__parse_next(ps);
            continue;
        }
        if (t->kind == T_INDENT) return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, b, false, false));
    }
}

/* After the ':' of a compound statement: an indented block, or one simple statement on the same
 * line. */
static sl_status parse_suite(parser *ps, block *b, const char *after) {
    if (sl__parse_tok(ps)->kind != T_NEWLINE) return parse_stmt(ps, b, false, true);
    sl__parse_next(ps);
    if (sl__parse_tok(ps)->kind != T_INDENT)
        return sl__parse_perr(ps, SL_ESYNTAX, sl__parse_tok(ps)->pos,
                              "expected an indented block after %s", after);
    sl__parse_next(ps);
    return parse_block_body(ps, b);
}

static sl_status parse_if(parser *ps, block *b) {
    stmt *s = new_stmt(ps, S_IF, sl__parse_tok(ps)->pos);
    if (!s) return SL_ENOMEM;
    int nb = 0;
    for (;;) { /* if / elif */
        sl__parse_next(ps);
        expr *c;
        SL_TRY(sl__parse_expr(ps, &c));
        SL_TRY(expect_op(ps, ":", "after the condition"));
        block body = {0, NULL};
        SL_TRY(parse_suite(ps, &body, "the condition"));
        int n = s->ncond;
        if (!sl__parse_arena_push(ps, (void **)&s->conds, &s->ncond, sizeof c, &c) ||
            !sl__parse_arena_push(ps, (void **)&s->bodies, &n, sizeof body, &body))
            return SL_ENOMEM;
        nb = n;
        if (!sl__parse_is_name(sl__parse_tok(ps), "elif")) break;
    }
    block other = {0, NULL};
    if (sl__parse_is_name(sl__parse_tok(ps), "else")) {
        sl__parse_next(ps);
        SL_TRY(expect_op(ps, ":", "after 'else'"));
        SL_TRY(parse_suite(ps, &other, "'else'"));
    }
    if (!sl__parse_arena_push(ps, (void **)&s->bodies, &nb, sizeof other, &other)) return SL_ENOMEM;
    return push_stmt(ps, b, s);
}

/* A for loop's or an assignment's targets: a name, or names to unpack (a, b / (a, b) / [a, b]). */
static sl_status check_targets(parser *ps, const expr *lhs, const char *what) {
    const expr *const *targets = &lhs;
    int n = 1;
    if (lhs->kind == E_TUPLE || lhs->kind == E_LIST) {
        targets = (const expr *const *)lhs->items;
        n = lhs->n;
    }
    if (n == 0) return sl__parse_perr(ps, SL_ESYNTAX, lhs->pos, "cannot assign to ()");
    for (int k = 0; k < n; k++) {
        if (targets[k]->kind != E_NAME)
            return sl__parse_perr(ps, SL_ESYNTAX, targets[k]->pos,
                                  "cannot assign to this expression; %s", what);
        for (int j = 0; j < k; j++)
            if (!strcmp(targets[j]->s, targets[k]->s))
                return sl__parse_perr(ps, SL_EINVAL, targets[k]->pos, "'%s' is assigned twice",
                                      targets[k]->s);
    }
    return SL_OK;
}

static sl_status parse_for(parser *ps, block *b) {
    stmt *s = new_stmt(ps, S_FOR, sl__parse_tok(ps)->pos);
    if (!s) return SL_ENOMEM;
    sl__parse_next(ps);
    /* targets: primaries separated by commas, up to 'in' (an expression would read 'in') */
    SL_TRY(sl__parse_primary(ps, &s->lhs));
    if (sl__parse_is_op(sl__parse_tok(ps), ",")) {
        expr *t = sl__parse_new_expr(ps, E_TUPLE, s->lhs->pos);
        if (!t || !sl__parse_arena_push(ps, (void **)&t->items, &t->n, sizeof s->lhs, &s->lhs))
            return SL_ENOMEM;
        while (sl__parse_is_op(sl__parse_tok(ps), ",")) {
            sl__parse_next(ps);
            if (sl__parse_is_name(sl__parse_tok(ps), "in")) break;
            expr *v;
            SL_TRY(sl__parse_primary(ps, &v));
            if (!sl__parse_arena_push(ps, (void **)&t->items, &t->n, sizeof v, &v))
                return SL_ENOMEM;
        }
        s->lhs = t;
    }
    SL_TRY(
        check_targets(ps, s->lhs, "a for loop assigns to names (for x in ..., for a, b in ...)"));
    if (!sl__parse_is_name(sl__parse_tok(ps), "in")) {
        char d[64];
        return sl__parse_perr(ps, SL_ESYNTAX, sl__parse_tok(ps)->pos,
                              "expected 'in' in the for loop, got %s",
                              sl__parse_tok_desc(sl__parse_tok(ps), d, sizeof d));
    }
    sl__parse_next(ps);
    SL_TRY(sl__parse_exprlist(ps, &s->rhs));
    SL_TRY(expect_op(ps, ":", "at the end of the for line"));
    ps->loops++;
    sl_status st = parse_suite(ps, &s->body, "the for line");
    ps->loops--;
    if (st != SL_OK) return st;
    return push_stmt(ps, b, s);
}

/* def name(params): body -- at the module level only; deco: its decorator or NULL. */
static sl_status parse_def(parser *ps, block *b, expr *deco) {
    stmt *s = new_stmt(ps, S_DEF, sl__parse_tok(ps)->pos);
    func *f = sl__parse_arena_alloc(ps, sizeof *f);
    if (!s || !f) return SL_ENOMEM;
    s->fn = f;
    f->deco = deco;
    sl__parse_next(ps);
    token *n = sl__parse_tok(ps);
    char d[64];
    if (n->kind != T_NAME || sl__parse_is_keyword(n))
        return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "expected the function's name, got %s",
                              sl__parse_tok_desc(n, d, sizeof d));
    if (n->len >= (int)sizeof f->name)
        return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "name too long");
    snprintf(f->name, sizeof f->name, "%.*s", n->len, n->start);
    f->pos = n->pos;
    sl__parse_next(ps);
    SL_TRY(expect_op(ps, "(", "after the function's name"));
    /* parameters: name [: annotation] [= default], ... */
    while (!sl__parse_is_op(sl__parse_tok(ps), ")")) {
        token *p = sl__parse_tok(ps);
        if (sl__parse_is_op(p, "*") || sl__parse_is_op(p, "**") || sl__parse_is_op(p, "/"))
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "'%.*s' parameters are not supported",
                                  p->len, p->start);
        if (p->kind != T_NAME || sl__parse_is_keyword(p))
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "expected a parameter name, got %s",
                                  sl__parse_tok_desc(p, d, sizeof d));
        if (f->nparams == SL__PARSE_PARAMS_MAX)
            return sl__parse_perr(ps, SL_EINVAL, p->pos, "too many parameters (at most %d)",
                                  SL__PARSE_PARAMS_MAX);
        if (p->len >= SL__PARSE_NAME_MAX)
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "name too long");
        for (int k = 0; k < f->nparams; k++)
            if ((int)strlen(f->params[k]) == p->len &&
                !strncmp(f->params[k], p->start, (size_t)p->len))
                return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "duplicate parameter '%.*s'", p->len,
                                      p->start);
        snprintf(f->params[f->nparams], sizeof f->params[0], "%.*s", p->len, p->start);
        sl__parse_next(ps);
        expr *ann = NULL, *def = NULL;
        if (sl__parse_is_op(sl__parse_tok(ps), ":")) {
            sl__parse_next(ps);
            SL_TRY(sl__parse_expr(ps, &ann)); /* annotations are ignored */
        }
        if (sl__parse_is_op(sl__parse_tok(ps), "=")) {
            sl__parse_next(ps);
            SL_TRY(sl__parse_expr(ps, &def));
        } else if (f->nparams && f->defaults[f->nparams - 1]) {
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos,
                                  "parameter without a default follows parameter "
                                  "with a default");
        }
        f->defaults[f->nparams++] = def;
        if (sl__parse_is_op(sl__parse_tok(ps), ",")) {
            sl__parse_next(ps);
        } else if (!sl__parse_is_op(sl__parse_tok(ps), ")")) {
            return sl__parse_perr(ps, SL_ESYNTAX, sl__parse_tok(ps)->pos,
                                  "expected ',' or ')' in the parameters, got %s",
                                  sl__parse_tok_desc(sl__parse_tok(ps), d, sizeof d));
        }
    }
    sl__parse_next(ps);
    if (sl__parse_is_op(sl__parse_tok(ps), "->")) {
        sl__parse_next(ps);
        expr *ann;
        SL_TRY(sl__parse_expr(ps, &ann));
    }
    SL_TRY(expect_op(ps, ":", "at the end of the def line"));
    ps->in_func++;
    sl_status st = parse_suite(ps, &f->body, "the def line");
    ps->in_func--;
    if (st != SL_OK) return st;
    if (!sl__parse_arena_push(ps, (void **)&ps->funcs, &ps->nfuncs, sizeof f, &f)) return SL_ENOMEM;
    return push_stmt(ps, b, s);
}

static sl_status parse_decorator(parser *ps, block *b) {
    sl__parse_next(ps);
    expr *e;
    SL_TRY(sl__parse_primary(ps, &e));
    SL_TRY(expect_newline(ps));
    const expr *callee = e->kind == E_CALL ? e->a : e;
    char name[256];
    if (!sl__parse_dotted(callee, name, sizeof name))
        return sl__parse_perr(ps, SL_ESYNTAX, e->pos, "expected a decorator name");
    const char *last = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
    if (strcmp(last, "data_iterator") && strcmp(last, "pipeline_def"))
        return sl__parse_perr(
            ps, SL_EINVAL, e->pos,
            "unknown decorator '@%s'; expected @data_iterator(...) or @pipeline_def(...)", name);
    while (sl__parse_tok(ps)->kind == T_NEWLINE) sl__parse_next(ps);
    token *d = sl__parse_tok(ps);
    if (sl__parse_is_op(d, "@"))
        return sl__parse_perr(ps, SL_ESYNTAX, d->pos, "only one decorator is supported");
    if (!sl__parse_is_name(d, "def")) {
        char k[64];
        return sl__parse_perr(ps, SL_ESYNTAX, d->pos, "expected 'def' after the decorator, got %s",
                              sl__parse_tok_desc(d, k, sizeof k));
    }
    return parse_def(ps, b, e);
}

static sl_status unsupported_stmt(parser *ps, token *t) {
    if (sl__parse_is_name(t, "while"))
        return sl__parse_perr(
            ps, SL_ESYNTAX, t->pos,
            "'while' loops are not supported in a pipeline: a loop runs when the pipeline "
            "is built and needs a known bound (for ... in range(...))");
    return sl__parse_perr(
        ps, SL_ESYNTAX, t->pos,
        "'%.*s' statements are not supported in a pipeline (assignments, op calls, if, "
        "for, def and return are)",
        t->len, t->start);
}

/* One statement into b. top: at the module level; inline_suite: on the line of an if/for/def,
 * after its ':' (a simple statement only). */
static sl_status parse_stmt(parser *ps, block *b, bool top, bool inline_suite) {
    token *t = sl__parse_tok(ps);
    if (inline_suite &&
        (sl__parse_is_name(t, "if") || sl__parse_is_name(t, "for") || sl__parse_is_name(t, "def") ||
         sl__parse_is_name(t, "while") || sl__parse_is_op(t, "@")))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "'%.*s' must start a line of its own", t->len,
                              t->start);
    if (sl__parse_is_name(t, "import") || sl__parse_is_name(t, "from")) return skip_import(ps);
    if (sl__parse_is_op(t, "@")) {
        if (!top)
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "decorators inside a block are not supported");
        return parse_decorator(ps, b);
    }
    if (sl__parse_is_name(t, "def")) {
        if (!top)
            return sl__parse_perr(
                ps, SL_ESYNTAX, t->pos,
                "nested functions are not supported in a pipeline: define helpers at the "
                "top level");
        return parse_def(ps, b, NULL);
    }
    if (sl__parse_is_name(t, "if")) return parse_if(ps, b);
    if (sl__parse_is_name(t, "for")) return parse_for(ps, b);
    if (sl__parse_is_name(t, "return")) {
        stmt *s = new_stmt(ps, S_RETURN, t->pos);
        if (!s) return SL_ENOMEM;
        sl__parse_next(ps);
        if (sl__parse_tok(ps)->kind != T_NEWLINE) SL_TRY(sl__parse_exprlist(ps, &s->rhs));
        SL_TRY(expect_newline(ps));
        if (!ps->in_func) ps->module_returns = true;
        return push_stmt(ps, b, s);
    }
    if (sl__parse_is_name(t, "break") || sl__parse_is_name(t, "continue") ||
        sl__parse_is_name(t, "pass")) {
        skind k = sl__parse_is_name(t, "pass")    ? S_PASS
                  : sl__parse_is_name(t, "break") ? S_BREAK
                                                  : S_CONTINUE;
        if (k != S_PASS && !ps->loops)
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "'%.*s' outside a loop", t->len,
                                  t->start);
        stmt *s = new_stmt(ps, k, t->pos);
        sl__parse_next(ps);
        SL_TRY(expect_newline(ps));
        return push_stmt(ps, b, s);
    }
    if (sl__parse_is_keyword(t) && !sl__parse_is_name(t, "True") &&
        !sl__parse_is_name(t, "False") && !sl__parse_is_name(t, "None") &&
        !sl__parse_is_name(t, "lambda") && !sl__parse_is_name(t, "not"))
        return unsupported_stmt(ps, t);
    expr *lhs;
    SL_TRY(sl__parse_exprlist(ps, &lhs));
    t = sl__parse_tok(ps);
    if (sl__parse_is_op(t, "=")) {
        sl__parse_next(ps);
        expr *rhs;
        SL_TRY(sl__parse_exprlist(ps, &rhs));
        if (sl__parse_is_op(sl__parse_tok(ps), "="))
            return sl__parse_perr(ps, SL_ESYNTAX, sl__parse_tok(ps)->pos,
                                  "chained assignment is not supported");
        SL_TRY(expect_newline(ps));
        SL_TRY(check_targets(ps, lhs, "assign to names (x = ..., a, b = ...)"));
        stmt *s = new_stmt(ps, S_ASSIGN, lhs->pos);
        if (!s) return SL_ENOMEM;
        s->lhs = lhs;
        s->rhs = rhs;
        return push_stmt(ps, b, s);
    }
    if (sl__parse_is_op(t, ":"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "annotated assignments are not supported");
    if (t->kind == T_NEWLINE && lhs->kind == E_STR) { /* a docstring */
        sl__parse_next(ps);
        return push_stmt(ps, b, new_stmt(ps, S_PASS, lhs->pos));
    }
    if (t->kind == T_NEWLINE)
        return sl__parse_perr(
            ps, SL_ESYNTAX, lhs->pos,
            "expected an assignment (name = fn.op(...)); a bare expression's value would "
            "be lost");
    return expect_newline(ps);
}

static sl_status parse_file(parser *ps) {
    for (;;) {
        token *t = sl__parse_tok(ps);
        if (t->kind == T_END) break;
        if (t->kind == T_NEWLINE || t->kind == T_DEDENT) { /* no DEDENT at the top; be safe */
            sl__parse_next(ps);
            continue;
        }
        if (t->kind == T_INDENT) return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, &ps->module, true, false));
    }
    return SL_OK;
}

sl_status sl__parse_read(parser *ps) {
    /* the tokens are freed by sl__parse_release, with the strings */
    sl_status st = sl__parse_lex(ps->text, ps->filename, ps->err, &ps->toks, &ps->ntok);
    return st == SL_OK ? parse_file(ps) : st;
}

void sl__parse_release(parser *ps) {
    for (int i = 0; i < ps->ntok; i++) free(ps->toks[i].s);
    free(ps->toks);
    ps->toks = NULL;
    ps->ntok = 0;
    arena_free(ps);
}
