/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's inside, shared by its two halves: parse.c reads the text (lexer,
 * expression and statement parsers) into trees, and parse_run.c runs them -- helper calls, loops,
 * conditions -- into the flat program of parse.h. Nothing here is part of any interface. */
#ifndef SLUICE_PIPELINE_PARSE_INT_H
#define SLUICE_PIPELINE_PARSE_INT_H

#include "pipeline/parse.h"

#include <stddef.h>
#include <stdint.h>

/* ---- tokens ------------------------------------------------------------------------------------
 */

typedef enum tkind {
    T_END,
    T_NEWLINE,
    T_INDENT,
    T_DEDENT,
    T_NAME,
    T_INT,
    T_FLOAT,
    T_STR,
    T_OP
} tkind;

typedef struct token {
    tkind kind;
    sl__parse_pos pos;
    const char *start; /* NAME, OP: the text */
    int len;
    int64_t i;
    double f;
    char *s; /* STR: the decoded value (malloc'd) */
} token;

/* ---- expression trees -------------------------------------------------------------------------
 */

typedef enum ekind {
    E_INT,
    E_FLOAT,
    E_STR,
    E_TRUE,
    E_FALSE,
    E_NONE,
    E_NAME,  /* s */
    E_ATTR,  /* a.s */
    E_CALL,  /* a(items..., kw...) */
    E_BIN,   /* a op b */
    E_NEG,   /* -a */
    E_POS,   /* +a */
    E_LIST,  /* [items] */
    E_TUPLE, /* (items) or a, b */
    E_DICT,  /* {items[k]: kwvals[k]}, n pairs */
    E_AND,   /* a and b */
    E_OR,    /* a or b */
    E_NOT,   /* not a */
    E_CMP,   /* items[0] cops[0] items[1] cops[1] ... (a chain: a < b <= c) */
    E_IFEXP  /* a if c else b */
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
    int depth; /* levels of the tree below and including this node (evaluation recurses this deep)
                */
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

/* Build-time work is bounded: loops and helper calls run when the pipeline is built, so that
 * `for i in range(10**12)` must stop. Steps are statements run, expressions evaluated, loop turns
 * and constant cells copied; a text may take this many on top of its own size (a text without
 * loops or helper calls runs each of its statements once). */
#define SL__PARSE_STEPS_MAX  2000000
/* Operators one pipeline text may build (real pipelines have tens). */
#define SL__PARSE_OPS_MAX    10000
/* Helper calls running inside one another (recursion is refused: this bounds a chain of them). */
#define SL__PARSE_CALLS_MAX  32
/* A constant built at build time (a list, a string) holds at most this many cells. */
#define SL__PARSE_CELLS_MAX  (1 << 20)
#define SL__PARSE_PARAMS_MAX 16

/* ---- parser state ---------------------------------------------------------------------------- */

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

/* A value at build time: a constant, an op output (val.kind SL_VAL_NODE), a list or tuple of
 * them, or (dict) a dict literal, held as a list of [key, value] pairs. */
typedef struct result {
    sl__val val;
    bool dict;
} result;

typedef struct env_entry {
    char name[SL__PARSE_NAME_MAX];
    bool unbound; /* a pipeline parameter with no bound value and no default */
    result v;
} env_entry;

/* The names of one function call, or of the module: an array indexed by an open-addressing hash
 * (a scan per lookup made 100,000 assignments quadratic). */
typedef struct scope {
    env_entry *env;
    int nenv, capenv;
    int *hash; /* index + 1, 0 empty; hcap slots (a power of 2) */
    int hcap;
} scope;

/* A running function (or the module): where its return goes. */
typedef struct frame {
    func *fn; /* NULL: the module's code */
    int want; /* values the caller unpacks (a multi-output op returned as is) */
    result ret;
    bool returned;
    const expr *ret_expr;  /* the return statement's expression (output names) */
    sl__parse_pos ret_pos; /* the return keyword */
} frame;

typedef enum flow { FLOW_NEXT, FLOW_RETURN, FLOW_BREAK, FLOW_CONTINUE } flow;

typedef struct parser {
    const char *text, *filename;
    token *toks;
    int ntok, at;
    sl_err *err;
    arena_block *arena;
    int nbind;
    const sl_pipeline_bind *binds;
    scope globals;
    scope *local; /* the running function's names; NULL while the module's code runs */
    frame *fr;
    flow flow;
    int nest; /* current recursion depth of parse_expr/parse_unary */
    sl__parse_prog *prog;
    int stmt_cap;
    bool no_ops;          /* evaluating a decorator argument or a default: no op calls */
    const char *function; /* the pipeline function asked for, NULL to choose */
    /* parsing */
    func **funcs;
    int nfuncs;
    int *fhash; /* funcs by name: index + 1, 0 empty; fhcap slots */
    int fhcap;
    block module;
    int loops, in_func;  /* loops and functions open around the statement being parsed */
    bool module_returns; /* a return in the module's code: that code is the pipeline */
    int64_t nexprs, nstmts;
    /* running */
    func *pipe;
    int64_t steps, step_limit;
    int calls;
    const stmt *loop; /* the innermost loop running, where a run that takes too long stops */
} parser;

/* ---- shared between the halves -------------------------------------------------------------- */

/* Records "file:line:col: error: ..." at pos (sl__parse_error with the parser's text); returns st.
 */
sl_status sl__parse_perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...)
    SL_PRINTF(4, 5);
/* "a.b.c" for a chain of names and attributes into buf, else false. */
bool sl__parse_dotted(const expr *e, char *buf, size_t size);
bool sl__parse_has_prefix(const char *s, const char *prefix);
/* types.X, dali.types.X, nvidia.dali.types.X */
bool sl__parse_types_name(const char *s);
/* Reads ps->text into trees: ps->module (the module's statements) and ps->funcs, and counts
 * (nexprs, nstmts, module_returns); ps->text, filename and err set. Syntax errors only. */
sl_status sl__parse_read(parser *ps);
/* Frees what sl__parse_read made (tokens, trees). */
void sl__parse_release(parser *ps);

#endif
