/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text's syntax trees: expressions and statements as the grammar (parse_expr.c,
 * parse_tree.c) reads them from the tokens (parse_lex.h), kept in an arena until the running half
 * (parse_run.h) has run them; and what the two grammar files share. Nothing here is part of any
 * interface. */
#ifndef SLUICE_PIPELINE_PARSE_TREE_H
#define SLUICE_PIPELINE_PARSE_TREE_H

#include "text/parse_lex.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- expression trees ------------------------------------------------------------------------ */

typedef enum ekind {
    E_INT,
    E_FLOAT,
    E_STR,
    E_TRUE,
    E_FALSE,
    E_NONE,
    E_NAME,    /* s */
    E_ATTR,    /* a.s */
    E_CALL,    /* a(items..., kw...) */
    E_BIN,     /* a op b */
    E_NEG,     /* -a */
    E_POS,     /* +a */
    E_INV,     /* ~a */
    E_LIST,    /* [items] */
    E_TUPLE,   /* (items) or a, b */
    E_DICT,    /* {items[k]: kwvals[k]}, n pairs */
    E_AND,     /* a and b */
    E_OR,      /* a or b */
    E_NOT,     /* not a */
    E_CMP,     /* items[0] cops[0] items[1] cops[1] ... (a chain: a < b <= c) */
    E_IFEXP,   /* a if c else b */
    E_INDEX,   /* a[b]; b an E_TUPLE of the subscripts when there are several (x[1:, 2]) */
    E_SLICE,   /* a:b:c inside a subscript, each part NULL when left out */
    E_ELLIPSIS /* ... inside a subscript */
} ekind;

/* comparison operators (E_CMP) */
enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE, C_IN, C_NOT_IN, C_IS, C_IS_NOT };

typedef struct expr expr;
struct expr {
    ekind kind;
    sl__parse_pos pos;  /* start of the expression; E_BIN: the operator */
    sl__parse_pos npos; /* E_ATTR: the attribute's name */
    int64_t i;
    double f;
    const char *s;
    char op[3];
    expr *a, *b, *c;
    int n;
    expr **items;
    int *cops; /* E_CMP: n - 1 operators */
    int nkw;
    const char **kwnames; /* NULL for **mapping */
    sl__parse_pos *kwpos;
    expr **kwvals;
    /* levels of the tree below and including this node (evaluation recurses this deep) */
    int depth;
};

/* How deep an expression tree (and the parser's recursion) may go: the evaluator and dotted()
 * recurse once per level, so a hostile chain of 15,000 operators must stop here, not overflow the
 * stack. Real pipelines stay under ten. */
#define SL__PARSE_DEPTH_MAX  200
/* Keyword arguments in one call (no operator has more than a few dozen). */
#define SL__PARSE_KWARGS_MAX 1024

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    max_align_t data[];
} arena_block;

/* Parameters of one function. */
#define SL__PARSE_PARAMS_MAX 16

/* ---- statement trees ------------------------------------------------------------------------- */

/* Statements are parsed whole into trees before anything runs, so that loops and helper functions
 * can run them again. */
typedef enum skind { S_ASSIGN, S_RETURN, S_PASS, S_IF, S_FOR, S_DEF, S_BREAK, S_CONTINUE } skind;

typedef struct stmt stmt;
typedef struct block {
    int n;
    stmt **items;
} block;

typedef struct func {
    char name[SL__PARSE_NAME_MAX];
    sl__parse_pos pos; /* of the name on the def line */
    int nparams;
    char params[SL__PARSE_PARAMS_MAX][SL__PARSE_NAME_MAX];
    expr *defaults[SL__PARSE_PARAMS_MAX];
    block body;
    expr *deco;  /* the decorator after '@', NULL without one */
    bool called; /* another function or the module's code calls it */
    bool active; /* running now: a second call would be recursion */
} func;

struct stmt {
    skind kind;
    sl__parse_pos pos;
    expr *lhs, *rhs; /* S_ASSIGN: lhs = rhs; S_RETURN: return rhs; S_FOR: for lhs in rhs */
    int ncond;       /* S_IF: conds[k] runs bodies[k]; bodies[ncond] is the else block */
    expr **conds;
    block *bodies;
    block body; /* S_FOR */
    func *fn;   /* S_DEF */
};

/* ---- shared by the grammar (parse_tree.c, parse_expr.c) -------------------------------------- */

typedef struct parser parser; /* parse_int.h */

/* The token at the cursor; the one k tokens on (T_END past the end); the cursor one token on
 * (it stays on T_END). */
token *sl__parse_tok(parser *ps);
token *sl__parse_tok_ahead(parser *ps, int k);
void sl__parse_next(parser *ps);
/* size bytes, zeroed, in the parser's arena (freed all at once by sl__parse_release); NULL (out
 * of memory, in ps->err) */
void *sl__parse_arena_alloc(parser *ps, size_t size);
/* s[0 .. n) as a string in the arena */
char *sl__parse_arena_strndup(parser *ps, const char *s, size_t n);
/* Appends item (elem bytes) to the arena array *arr of *n items; false when out of memory. */
bool sl__parse_arena_push(parser *ps, void **arr, int *n, size_t elem, const void *item);
/* A node in the arena (counted in ps->nexprs), of depth 1; NULL when out of memory. */
expr *sl__parse_new_expr(parser *ps, ekind kind, sl__parse_pos pos);
/* One expression (a conditional expression at the top) into *out. */
sl_status sl__parse_expr(parser *ps, expr **out);
/* A primary and its trailers: a literal, a name or a bracket, then .name and (call) */
sl_status sl__parse_primary(parser *ps, expr **out);
/* expr (',' expr)* [','] -- a tuple when there is a comma */
sl_status sl__parse_exprlist(parser *ps, expr **out);

/* ---- what the reading half gives the running half -------------------------------------------- */

/* "a.b.c" for a chain of names and attributes into buf, else false. */
bool sl__parse_dotted(const expr *e, char *buf, size_t size);
/* Reads ps->text into trees: ps->module (the module's statements) and ps->funcs, and counts
 * (nexprs, nstmts, module_returns); ps->text, filename and err set. Syntax errors only. */
sl_status sl__parse_read(parser *ps);
/* Frees what sl__parse_read made (tokens, trees). */
void sl__parse_release(parser *ps);

#endif
