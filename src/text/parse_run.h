/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's running half: the evaluator (parse_eval.c), calls (parse_call.c),
 * names and helper functions (parse_func.c) and statements (parse_stmt.c), which run the trees of
 * parse_tree.h into the program of parse.h. Here: the bounds on build-time work, build-time
 * values, scopes and frames, and the functions the four files share. Nothing here is part of any
 * interface. */
#ifndef SLUICE_PIPELINE_PARSE_RUN_H
#define SLUICE_PIPELINE_PARSE_RUN_H

#include "text/parse_tree.h"

#include <stdbool.h>
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

/* ---- values, scopes, frames ------------------------------------------------------------------ */

/* A value at build time: a constant, an op output (val.kind SL_VAL_NODE), a list or tuple of
 * them, or (dict) a dict literal, held as a list of [key, value] pairs. */
typedef struct result {
    sl__val val;
    bool dict;
} result;

typedef struct env_entry {
    char name[SL__PARSE_NAME_MAX];
    bool unbound; /* a pipeline parameter with no bound value and no default */
    /* assigned in one branch only of the `if` on data at line one_sided (parse_cond.c), else 0 */
    int one_sided;
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

/* A call's keyword arguments, **mappings expanded: names (owned by the arena or the values),
 * positions, values. */
typedef struct kwargs {
    int n;
    char **names; /* owned */
    sl__parse_pos *pos;
    result *vals;
} kwargs;

/* ---- parse_eval.c: values and the evaluator -------------------------------------------------- */

void sl__parse_result_free(result *r);
/* r is one op output; v is one or holds one (a list of them) */
bool sl__parse_is_node(const result *r);
bool sl__parse_has_node(const sl__val *v);
void sl__parse_set_node(sl__val *v, int node);
void sl__parse_set_int(sl__val *v, int64_t i);
void sl__parse_set_bool(sl__val *v, bool b);
/* an int, a float or a bool; an int's or a bool's value */
bool sl__parse_numeric(const sl__val *v);
int64_t sl__parse_as_i(const sl__val *v);
/* What r is, for a message: "int", "dict", "list of op outputs", ... */
const char *sl__parse_kind_name(const result *r);
/* One step of build-time work more (cost of them); an error at pos -- or at the loop that is
 * running -- when the text has done too much. */
sl_status sl__parse_step(parser *ps, sl__parse_pos pos, int64_t cost);
/* e's value into r; want: how many values the caller unpacks (an op's outputs). */
sl_status sl__parse_eval(parser *ps, const expr *e, int want, result *r);
/* e as a plain constant (no op output, no dict): what names it in errors */
sl_status sl__parse_eval_const(parser *ps, const expr *e, sl__val *out, const char *what);
/* Python's truth of a constant; op outputs and dicts are refused (what: "if", "and", ...) */
sl_status sl__parse_truth(parser *ps, const expr *at, const result *v, const char *what, bool *out);

/* ---- parse_call.c: calls --------------------------------------------------------------------- */

/* e (E_CALL): an op, a transfer, a helper function, range() or len(), a tfrec feature */
sl_status sl__parse_eval_call(parser *ps, const expr *e, int want, result *r);
/* node[...]: DALI's tensor indexing of program node `node` (indices and slices of ints, newaxis,
 * ...): a tensor_subscript op statement; r: its output */
sl_status sl__parse_node_subscript(parser *ps, const expr *e, int node, result *r);
/* An operator (sym: "+", "==", "&", ...) with an op output on either side (a at apos, b at
 * bpos), or unary - or ~ of one (b NULL; sym "-" or "~"): an arithmetic op, at pos */
sl_status sl__parse_arith_op(parser *ps, sl__parse_pos pos, const char *sym, const result *a,
                             sl__parse_pos apos, const result *b, sl__parse_pos bpos, result *r);
/* A conditional's statement (sl__parse_prog): kind with n input nodes at pos; for a merge, r is
 * its output node. */
sl_status sl__parse_cond_stmt(parser *ps, sl__parse_stmt_kind kind, sl__parse_pos pos,
                              const int *nodes, int n, result *r);
/* The op `op` (no arguments) on program node `node`, at pos; r its output */
sl_status sl__parse_named_op(parser *ps, sl__parse_pos pos, const char *op, int node, result *r);
/* Evaluates e's keyword arguments in order into kw (freed on error). */
sl_status sl__parse_eval_kwargs(parser *ps, const expr *e, kwargs *kw);
void sl__parse_kwargs_free(kwargs *kw);
/* range(stop) / range(start, stop[, step]) from e's arguments; how many values it gives */
sl_status sl__parse_range_args(parser *ps, const expr *e, int64_t *start, int64_t *stop,
                               int64_t *stepv);
uint64_t sl__parse_range_len(int64_t start, int64_t stop, int64_t stepv);
/* tfrec.X, dali.tfrecord.X, nvidia.dali.tfrecord.X: X, else NULL */
const char *sl__parse_tfrec_member(const char *dotted);
/* Frees what a program statement holds and zeroes it. */
void sl__parse_stmt_clear(sl__parse_stmt *s);

/* ---- parse_cond.c: conditionals on data (enable_conditionals=True) -----------------------------
 */

/* The if statement s from its condition k on: Python's meaning for constants; a condition that is
 * an op output opens a conditional on it (its body on the samples where it is true, the rest of
 * the chain on the others), and every name either branch assigns is merged after it. */
sl_status sl__parse_exec_if(parser *ps, const stmt *s, int k);
/* `not a`, `a and b`, `a or b`, `x if c else y` (e) whose deciding operand is the op output v
 * (consumed): per sample, as DALI's conditionals compute them. */
sl_status sl__parse_cond_logic(parser *ps, const expr *e, result *v, result *r);

/* ---- parse_func.c: names and functions ------------------------------------------------------- */

void sl__parse_scope_free(scope *sc);
/* The running function's names, else the module's; NULL when name is in neither. */
env_entry *sl__parse_env_find(parser *ps, const char *name);
/* The entry for name in the running scope, its old value freed; NULL when out of memory. */
env_entry *sl__parse_env_set(parser *ps, const char *name);
/* name's bound value (the last one given), else NULL */
const sl_pipeline_bind *sl__parse_bind_find(parser *ps, const char *name);
/* Whether name is bound: to a typed value or to a text one. */
bool sl__parse_bound(parser *ps, const char *name);
/* name's bound value into *out: the typed one (the last given) before the text one, read as
 * sl__parse_bind_value reads it; *found false when name is not bound. */
sl_status sl__parse_bind_get(parser *ps, const char *name, sl__val *out, bool *found);
func *sl__parse_func_find(parser *ps, const char *name);
/* Indexes the functions once they are all parsed; a name defined twice is an error. */
sl_status sl__parse_func_index(parser *ps);
/* The defined or bound name closest to name, when one is close enough; else NULL */
const char *sl__parse_suggest_name(parser *ps, const char *name);
/* Runs f's body for a call (e), with a scope of its own; r: its return value (None without). */
sl_status sl__parse_call_func(parser *ps, func *f, const expr *e, int want, result *r);
/* Sets ps->pipe: the function asked for; else the decorated one; else the only one nobody calls.
 * NULL: the module's code is the pipeline (it returns, or there is no function). */
sl_status sl__parse_choose_pipeline(parser *ps);

/* ---- parse_stmt.c: statements ---------------------------------------------------------------- */

/* Runs b's statements until one changes ps->flow. */
sl_status sl__parse_exec_block(parser *ps, const block *b);
/* The pipeline function's def line and decorator into the program's settings. */
sl_status sl__parse_deco_apply(parser *ps, const func *f);
/* Runs the module's code, then the pipeline function (when there is one). */
sl_status sl__parse_run_module(parser *ps);

#endif
