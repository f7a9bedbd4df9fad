/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's program representation (docs/pipelines.md).
 *
 * Parsing runs in two layers. sl__parse_program reads the text (a DALI pipeline function in Python
 * syntax) with its bound names and produces an sl__parse_prog: the decorator's settings, and a flat
 * list of statements in execution order -- op calls (name, device, positional inputs, keyword
 * arguments as values or per-sample node references) and .gpu()/.cpu() transfers -- whose outputs
 * are numbered "program nodes" 0, 1, 2, ...; then the return list. It reads the text into trees
 * (parse_lex.c, parse_expr.c, parse_tree.c) and runs them (parse_eval.c, parse_call.c,
 * parse_func.c, parse_stmt.c: helper calls, loops and conditions are unrolled here); parse.c holds
 * the entry points.
 * Every syntax error and every unknown or unbound name is found here, with line, column and a
 * caret. It needs no operator table.
 * sl_pipeline_parse (parse_apply.c) walks the program and makes the builder calls; errors the
 * builder raises (unknown operator, unknown argument) are pointed at the statement's position with
 * sl__parse_error. */
#ifndef SLUICE_PIPELINE_PARSE_H
#define SLUICE_PIPELINE_PARSE_H

#include "operator/op.h"
#include "sluice/pipeline.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__PARSE_NAME_MAX 64

typedef struct sl__parse_pos {
    int line, col; /* 1-based; col counts bytes */
} sl__parse_pos;

/* A keyword argument: a literal value, or (val.kind == SL_VAL_NODE) a program node. */
typedef struct sl__parse_arg {
    char name[SL__PARSE_NAME_MAX];
    sl__parse_pos pos; /* of the argument's name */
    sl__val val;
} sl__parse_arg;

typedef enum sl__parse_stmt_kind {
    SL__PARSE_OP,       /* an op call */
    SL__PARSE_TRANSFER, /* x.gpu() / x.cpu() */
    /* conditionals on data (sl_pipeline_if ...): if inputs[0]; else; endif; merge of inputs
     * (predicate, true side, false side) into its output */
    SL__PARSE_IF,
    SL__PARSE_ELSE,
    SL__PARSE_ENDIF,
    SL__PARSE_MERGE
} sl__parse_stmt_kind;

typedef struct sl__parse_stmt {
    sl__parse_stmt_kind kind;
    sl__parse_pos pos;                /* op: start of the callee; transfer: the method name */
    char op[SL__PARSE_NAME_MAX];      /* op name without "fn.": "decoders.image" */
    char written[SL__PARSE_NAME_MAX]; /* as written: "fn.decoders.image" */
    char device[8];                   /* "", "cpu", "mixed" or "gpu" (the device= argument) */
    sl__parse_pos device_pos;
    int num_inputs;
    int *inputs; /* program nodes */
    sl__parse_pos *input_pos;
    int num_args;
    sl__parse_arg *args;
    sl_device_kind to;             /* transfer: where to */
    int first_output, num_outputs; /* program nodes first_output .. + num_outputs - 1 */
} sl__parse_stmt;

typedef struct sl__parse_prog {
    char *text; /* a copy of the source, for error carets */
    char filename[256];
    sl_pipeline_decorator deco;
    int num_stmts;
    sl__parse_stmt *stmts;
    int num_nodes;
    int num_outputs;
    int *outputs;              /* num_outputs program nodes */
    char **output_names;       /* output_map, else return-line names */
    sl__parse_pos *output_pos; /* where each is returned */
} sl__parse_prog;

/* A name bound to a typed value: a number the caller holds as one (a shard id) is handed over as
 * it is, not written as text to be read back. */
typedef struct sl__parse_bindv {
    const char *name;
    sl__val val;
} sl__parse_bindv;

/* Text -> program. binds: def parameters and free names (value text in pipeline syntax; what does
 * not read as a literal is a string). SL_ESYNTAX for syntax errors, SL_EINVAL for names and values;
 * the message is "file:line:col: error: what" + the source line + a caret line. */
sl_status sl__parse_program(const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl__parse_prog **out, sl_err *err);
/* The same, with the pipeline function named (NULL or "": the decorated one, else the only one no
 * other function calls; an unknown name is an error listing the functions). */
sl_status sl__parse_program_fn(const char *text, const char *filename, const char *function,
                               int nbind, const sl_pipeline_bind *binds, sl__parse_prog **out,
                               sl_err *err);
/* The same, with names bound to typed values beside the text binds (a typed one wins over a text
 * one of the same name). */
sl_status sl__parse_program_vals(const char *text, const char *filename, const char *function,
                                 int nbind, const sl_pipeline_bind *binds, int nvals,
                                 const sl__parse_bindv *vals, sl__parse_prog **out, sl_err *err);
void sl__parse_prog_free(sl__parse_prog *prog);
/* sl_pipeline_parse_function with names bound to typed values beside the text binds. */
sl_status sl__parse_pipeline_vals(sl_pipeline *p, const char *text, const char *filename,
                                  const char *function, int nbind, const sl_pipeline_bind *binds,
                                  int nvals, const sl__parse_bindv *vals, sl_err *err);

/* Checks len bytes of pipeline text read from a file for a NUL byte (which would silently cut
 * the C string the parser takes): SL_ESYNTAX "file:line:col: error: NUL byte ..." at the first. */
sl_status sl__parse_check_text(const char *text, size_t len, const char *filename, sl_err *err);

/* Reads the text, decides which function is the pipeline (function, as for sl__parse_program_fn)
 * and reads its decorator and def line; runs nothing. */
sl_status sl__parse_header(const char *text, const char *filename, const char *function,
                           sl_pipeline_decorator *out, sl_err *err);

/* Records "file:line:col: error: <fmt>\n<source line>\n<caret>" in err, trimming the echoed line
 * so that the whole fits in SL_ERRMSG_MAX; returns status. */
sl_status sl__parse_error(sl_err *err, sl_status status, const char *text, const char *filename,
                          sl__parse_pos pos, const char *fmt, ...) SL_PRINTF(6, 7);
/* The same with the message's arguments in a va_list. */
sl_status sl__parse_errorv(sl_err *err, sl_status status, const char *text, const char *filename,
                           sl__parse_pos pos, const char *fmt, va_list ap);

/* Reads a bound value: a literal (sl__val_parse) when it is one, else the text as a string. */
sl_status sl__parse_bind_value(const char *text, sl__val *out, sl_err *err);

/* Writes v in pipeline syntax so that sl__val_parse reads it back exactly (floats to 17 digits);
 * SL_EINVAL when it cannot (a string with both quote kinds, a non-finite float, a node). */
sl_status sl__parse_format_val(const sl__val *v, char *buf, size_t size, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
