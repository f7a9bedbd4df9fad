/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's state, shared by all its files: what it reads (the text, the
 * tokens of parse_lex.h, the trees of parse_tree.h in their arena) and what it runs them with
 * (parse_run.h: scopes, the running frame, the program being built, the counts that bound the
 * work). Nothing here is part of any interface. */
#ifndef SLUICE_PIPELINE_PARSE_INT_H
#define SLUICE_PIPELINE_PARSE_INT_H

#include "text/parse_run.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- parser state ---------------------------------------------------------------------------- */

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
    bool conditionals;    /* @pipeline_def(enable_conditionals=True): `if` on data allowed */
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
