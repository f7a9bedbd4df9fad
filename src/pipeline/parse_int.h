/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's state, shared by its layers: the tokens (parse_lex.h) and the
 * trees (parse_tree.h) that the lexer and the grammar read the text into, and what parse_run.c
 * runs them with -- helper calls, loops, conditions -- into the flat program of parse.h. Nothing
 * here is part of any interface. */
#ifndef SLUICE_PIPELINE_PARSE_INT_H
#define SLUICE_PIPELINE_PARSE_INT_H

#include "pipeline/parse_tree.h"

#include <stddef.h>
#include <stdint.h>

/* Build-time work is bounded: loops and helper calls run when the pipeline is built, so that
 * `for i in range(10**12)` must stop. Steps are statements run, expressions evaluated, loop turns
 * and constant cells copied; a text may take this many on top of its own size (a text without
 * loops or helper calls runs each of its statements once). */
#define SL__PARSE_STEPS_MAX 2000000
/* Operators one pipeline text may build (real pipelines have tens). */
#define SL__PARSE_OPS_MAX   10000
/* Helper calls running inside one another (recursion is refused: this bounds a chain of them). */
#define SL__PARSE_CALLS_MAX 32
/* A constant built at build time (a list, a string) holds at most this many cells. */
#define SL__PARSE_CELLS_MAX (1 << 20)

/* ---- parser state ---------------------------------------------------------------------------- */

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

struct parser {
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
    int nest; /* current recursion depth of sl__parse_expr/parse_unary */
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
};

/* ---- shared by all the files ----------------------------------------------------------------- */

/* Records "file:line:col: error: ..." at pos (sl__parse_error with the parser's text);
 * returns st. */
sl_status sl__parse_perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...)
    SL_PRINTF(4, 5);
bool sl__parse_has_prefix(const char *s, const char *prefix);
/* types.X, dali.types.X, nvidia.dali.types.X */
bool sl__parse_types_name(const char *s);

#endif
