/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser, layer two: sl_pipeline_parse reads the text into a program
 * (sl__parse_program, parse.c) and walks it, making the builder calls a C user would make --
 * sl_pipeline_op_begin/input/device/arg_node/end for each op call, sl_pipeline_transfer for
 * .gpu()/.cpu(), sl_pipeline_set_outputs for the return line -- except that argument values go
 * over as the typed values the evaluator made (sl__pipeline_op_arg_val), not as text to read again.
 * Errors the builder raises (an unknown operator, an argument the op's schema lacks, a wrong
 * device) are pointed at the statement, or at the argument the builder names as the failed one
 * (sl__pipeline_failed_arg), with its line, column and caret; the same message is left in the
 * pipeline's own error (sl_pipeline_errmsg). */
#include "text/parse.h"
#include "graph/pipeline.h"
#include "ops/registry.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The statement's argument called name (as the builder reports a failed one), or NULL. */
static const sl__parse_arg *arg_named(const sl__parse_stmt *s, const char *name) {
    for (int k = 0; name && k < s->num_args; k++)
        if (!strcmp(s->args[k].name, name)) return &s->args[k];
    return NULL;
}

typedef struct applier {
    const sl__parse_prog *prog;
    sl_pipeline *p;
    int *map; /* program node -> pipeline node */
    sl_err *err;
} applier;

/* The builder's last error, pointed at pos. */
static sl_status builder_error(applier *a, sl_status st, sl__parse_pos pos) {
    char msg[SL_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", sl_pipeline_errmsg(a->p));
    return sl__parse_error(a->err, st ? st : SL_EINVAL, a->prog->text, a->prog->filename, pos, "%s",
                           msg);
}

static sl_status apply_op(applier *a, const sl__parse_stmt *s) {
    const sl__parse_prog *prog = a->prog;
    if (!sl__registry_find(s->op)) {
        const char *best = sl__registry_suggest(s->op);
        if (best)
            return sl__parse_error(a->err, SL_EINVAL, prog->text, prog->filename, s->pos,
                                   "unknown operator '%s'; did you mean '%s'?", s->written, best);
        return sl__parse_error(a->err, SL_EINVAL, prog->text, prog->filename, s->pos,
                               "unknown operator '%s' (sluice ops lists them)", s->written);
    }
    sl_pipeline_op *op = sl_pipeline_op_begin(a->p, s->op);
    if (!op) return builder_error(a, sl_pipeline_status(a->p), s->pos);
    sl_status st = SL_OK;
    sl__parse_pos at = s->pos;
    for (int k = 0; k < s->num_inputs && st == SL_OK; k++) {
        at = s->input_pos[k];
        st = sl_pipeline_op_input(op, a->map[s->inputs[k]]);
    }
    if (st == SL_OK && s->device[0]) {
        at = s->device_pos;
        st = sl_pipeline_op_device(op, s->device);
    }
    for (int k = 0; k < s->num_args && st == SL_OK; k++) {
        const sl__parse_arg *arg = &s->args[k];
        at = arg->pos;
        if (arg->val.kind == SL_VAL_NODE) {
            st = sl_pipeline_op_arg_node(op, arg->name, a->map[arg->val.node]);
        } else {
            st = sl__pipeline_op_arg_val(op, arg->name, &arg->val);
        }
    }
    int count = 0;
    sl_status end = sl_pipeline_op_end(op, NULL, 0, &count);
    if (st != SL_OK) return builder_error(a, st, at);
    if (end != SL_OK) {
        const sl__parse_arg *arg = arg_named(s, sl__pipeline_failed_arg(a->p));
        return builder_error(a, end, arg ? arg->pos : s->pos);
    }
    if (count != s->num_outputs) {
        if (s->num_outputs == 1)
            return sl__parse_error(a->err, SL_EINVAL, prog->text, prog->filename, s->pos,
                                   "%s gives %d outputs; unpack them: a, b = %s(...)", s->written,
                                   count, s->written);
        return sl__parse_error(a->err, SL_EINVAL, prog->text, prog->filename, s->pos,
                               "%s gives %d output%s, not %d", s->written, count,
                               count == 1 ? "" : "s", s->num_outputs);
    }
    for (int k = 0; k < count; k++)
        a->map[s->first_output + k] = sl_pipeline_last_op_output(a->p, k);
    return SL_OK;
}

static sl_status apply(applier *a) {
    const sl__parse_prog *prog = a->prog;
    for (int i = 0; i < prog->num_stmts; i++) {
        const sl__parse_stmt *s = &prog->stmts[i];
        const int *in = s->inputs;
        sl_status st = SL_OK;
        switch (s->kind) {
        case SL__PARSE_OP:
            SL_TRY(apply_op(a, s));
            break;
        case SL__PARSE_TRANSFER:
            st = sl_pipeline_transfer(a->p, a->map[in[0]], s->to, &a->map[s->first_output]);
            break;
        case SL__PARSE_IF:
            st = sl_pipeline_if(a->p, a->map[in[0]]);
            break;
        case SL__PARSE_ELSE:
            st = sl_pipeline_else(a->p);
            break;
        case SL__PARSE_ENDIF:
            st = sl_pipeline_endif(a->p);
            break;
        case SL__PARSE_MERGE:
            st = sl_pipeline_merge(a->p, a->map[in[0]], a->map[in[1]], a->map[in[2]],
                                   &a->map[s->first_output]);
            break;
        }
        if (st != SL_OK) return builder_error(a, st, s->pos);
    }
    int *nodes = sl__calloc((size_t)prog->num_outputs + 1, sizeof *nodes, a->err);
    if (!nodes) return SL_ENOMEM;
    for (int k = 0; k < prog->num_outputs; k++) nodes[k] = a->map[prog->outputs[k]];
    sl_status st = sl_pipeline_set_outputs(a->p, prog->num_outputs, nodes,
                                           (const char *const *)prog->output_names);
    free(nodes);
    if (st != SL_OK)
        return builder_error(a, st, prog->num_outputs ? prog->output_pos[0] : prog->stmts[0].pos);
    return SL_OK;
}

sl_status sl_pipeline_parse(sl_pipeline *p, const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl_err *err) {
    return sl_pipeline_parse_function(p, text, filename, NULL, nbind, binds, err);
}

sl_status sl_pipeline_parse_function(sl_pipeline *p, const char *text, const char *filename,
                                     const char *function, int nbind, const sl_pipeline_bind *binds,
                                     sl_err *err) {
    return sl__parse_pipeline_vals(p, text, filename, function, nbind, binds, 0, NULL, err);
}

sl_status sl__parse_pipeline_vals(sl_pipeline *p, const char *text, const char *filename,
                                  const char *function, int nbind, const sl_pipeline_bind *binds,
                                  int nvals, const sl__parse_bindv *vals, sl_err *err) {
    sl_err local;
    if (!err) err = &local;
    sl__parse_prog *prog = NULL;
    /* registered sources are names the text may use bare (source=my_source): bound first, so
     * that the caller's own binds win */
    sl_pipeline_bind *all = NULL;
    char(*quoted)[68] = NULL;
    int nsources = sl__pipeline_num_sources(p);
    if (nsources) {
        all = sl__calloc((size_t)(nsources + nbind), sizeof *all, err);
        quoted = sl__calloc((size_t)nsources, sizeof *quoted, err);
        if (!all || !quoted) {
            free(all);
            free(quoted);
            return SL_ENOMEM;
        }
        for (int i = 0; i < nsources; i++) {
            snprintf(quoted[i], sizeof quoted[i], "\"%s\"", sl__pipeline_source_name(p, i));
            all[i].name = sl__pipeline_source_name(p, i);
            all[i].value = quoted[i];
        }
        for (int i = 0; i < nbind; i++) all[nsources + i] = binds[i];
        binds = all;
        nbind += nsources;
    }
    sl_status st =
        sl__parse_program_vals(text, filename, function, nbind, binds, nvals, vals, &prog, err);
    free(all);
    free(quoted);
    if (st == SL_OK) {
        applier a = {prog, p, NULL, err};
        a.map = sl__calloc((size_t)prog->num_nodes + 1, sizeof *a.map, err);
        st = a.map ? apply(&a) : SL_ENOMEM;
        free(a.map);
    }
    sl__parse_prog_free(prog);
    if (st != SL_OK) sl__pipeline_set_err(p, err); /* sl_pipeline_errmsg shows the same message */
    return st;
}
