/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text's tokens: what the lexer (parse_lex.c) makes of the text, and what the
 * grammar (parse_expr.c, parse_tree.c) asks of a token. Nothing here is part of any interface. */
#ifndef SLUICE_PIPELINE_PARSE_LEX_H
#define SLUICE_PIPELINE_PARSE_LEX_H

#include "text/parse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- tokens ---------------------------------------------------------------------------------- */

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

/* Reads text into tokens, the last one T_END: INDENT/DEDENT from the indentation, no NEWLINE
 * inside brackets. *toks and *ntok are set also on an error; the caller frees the array and each
 * token's s. Errors are SL_ESYNTAX, "file:line:col: error: ..." with a caret. */
sl_status sl__parse_lex(const char *text, const char *filename, sl_err *err, token **toks,
                        int *ntok);
/* t is the operator op; t is the name name */
bool sl__parse_is_op(const token *t, const char *op);
bool sl__parse_is_name(const token *t, const char *name);
/* t is one of Python's keywords */
bool sl__parse_is_keyword(const token *t);
/* How a token reads in a message ("end of line", "a string", "'x'" written into buf). */
const char *sl__parse_tok_desc(const token *t, char *buf, size_t size);

#endif
