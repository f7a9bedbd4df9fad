/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's front (parse.h): the entry points, which read a text into trees
 * (parse_lex.c, parse_expr.c, parse_tree.c) and run them (parse_eval.c, parse_call.c,
 * parse_func.c, parse_stmt.c) into an sl__parse_prog or read only its decorator; and what those
 * layers and parse_apply.c share: error messages with a caret, bound values read, values written
 * back as text, the check of a text for NUL bytes. */
#include "text/parse_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---------------------------------------------------------------------------------- */

sl_status sl__parse_error(sl_err *err, sl_status status, const char *text, const char *filename,
                          sl__parse_pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sl_status st = sl__parse_errorv(err, status, text, filename, pos, fmt, ap);
    va_end(ap);
    return st;
}

sl_status sl__parse_errorv(sl_err *err, sl_status status, const char *text, const char *filename,
                           sl__parse_pos pos, const char *fmt, va_list ap) {
    if (!err) return status;
    char what[SL_ERRMSG_MAX], head[2 * SL_ERRMSG_MAX];
    vsnprintf(what, sizeof what, fmt, ap);
    snprintf(head, sizeof head, "%s:%d:%d: error: %s", filename ? filename : "<text>", pos.line,
             pos.col, what);
    /* the source line */
    const char *ls = text;
    for (int l = 1; ls && l < pos.line; l++) {
        const char *nl = strchr(ls, '\n');
        ls = nl ? nl + 1 : NULL;
    }
    head[SL_ERRMSG_MAX - 1] = '\0';
    size_t hlen = strlen(head);
    size_t budget = SL_ERRMSG_MAX - 1 > hlen + 2 ? SL_ERRMSG_MAX - 1 - hlen - 2 : 0;
    size_t maxshow = budget / 2; /* the echoed line and the caret line each get half */
    if (!ls || maxshow < 16) return sl_err_set(err, status, "%s", head);
    size_t len = strcspn(ls, "\r\n");
    size_t c = pos.col > 0 ? (size_t)pos.col - 1 : 0;
    if (c > len) c = len;
    size_t w0 = 0, w1 = len;
    if (len + 1 > maxshow) { /* a window of the line around the caret, with "..." on cut sides */
        size_t w = maxshow - 7;
        w0 = c > w / 2 ? c - w / 2 : 0;
        if (w0 + w > len) w0 = len > w ? len - w : 0;
        w1 = w0 + w;
    }
    char shown[SL_ERRMSG_MAX], caret[SL_ERRMSG_MAX];
    size_t n = 0, k = 0;
    if (w0 > 0) {
        memcpy(shown, "...", 3);
        memcpy(caret, "   ", 3);
        n = k = 3;
    }
    for (size_t i = w0; i < w1; i++) shown[n++] = ls[i];
    if (w1 < len) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }
    shown[n] = '\0';
    for (size_t i = w0; i < c; i++) caret[k++] = ls[i] == '\t' ? '\t' : ' ';
    caret[k++] = '^';
    caret[k] = '\0';
    return sl_err_set(err, status, "%s\n%s\n%s", head, shown, caret);
}

sl_status sl__parse_perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = sl__parse_errorv(ps->err, st, ps->text, ps->filename, pos, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- values ---------------------------------------------------------------------------------- */

bool sl__parse_has_prefix(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool sl__parse_types_name(const char *s) {
    return sl__parse_has_prefix(s, "types.") || sl__parse_has_prefix(s, "dali.types.") ||
           sl__parse_has_prefix(s, "nvidia.dali.types.");
}

sl_status sl__parse_bind_value(const char *text, sl__val *out, sl_err *err) {
    sl_err ignored;
    memset(out, 0, sizeof *out);
    if (sl__val_parse(text, out, &ignored) == SL_OK) {
        if (out->kind != SL_VAL_ENUM || sl__parse_types_name(text)) return SL_OK;
        sl__val_free(out); /* a bare word is a string: data_path=training */
    }
    memset(out, 0, sizeof *out);
    out->kind = SL_VAL_STR;
    out->s = strdup(text);
    if (!out->s) return sl_err_set(err, SL_ENOMEM, "out of memory");
    return SL_OK;
}

static bool put(char *buf, size_t size, size_t *n, const char *s) {
    size_t l = strlen(s);
    if (*n + l + 1 > size) return false;
    memcpy(buf + *n, s, l + 1);
    *n += l;
    return true;
}

static sl_status format_into(const sl__val *v, char *buf, size_t size, size_t *n, sl_err *err) {
    char tmp[64];
    switch (v->kind) {
    case SL_VAL_NONE:
        snprintf(tmp, sizeof tmp, "None");
        break;
    case SL_VAL_BOOL:
        snprintf(tmp, sizeof tmp, "%s", v->b ? "True" : "False");
        break;
    case SL_VAL_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->i);
        break;
    case SL_VAL_FLOAT:
        if (!isfinite(v->f)) return sl_err_set(err, SL_EINVAL, "value %g is not finite", v->f);
        for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back exactly */
            snprintf(tmp, sizeof tmp, "%.*g", prec, v->f);
            if (strtod(tmp, NULL) == v->f) break;
        }
        if (!strpbrk(tmp, ".e")) strcat(tmp, ".0");
        break;
    case SL_VAL_STR: {
        const char *q = strchr(v->s, '"') ? "'" : "\"";
        if (strchr(v->s, '"') && strchr(v->s, '\''))
            return sl_err_set(err, SL_EINVAL,
                              "a string with both kinds of quotes is not supported");
        if (!put(buf, size, n, q) || !put(buf, size, n, v->s) || !put(buf, size, n, q)) goto full;
        return SL_OK;
    }
    case SL_VAL_ENUM:
        if (!put(buf, size, n, v->s)) goto full;
        return SL_OK;
    case SL_VAL_NODE:
        return sl_err_set(err, SL_EINVAL, "an op output is not a literal value");
    case SL_VAL_LIST:
        if (!put(buf, size, n, "[")) goto full;
        for (int i = 0; i < v->n; i++) {
            if (i && !put(buf, size, n, ", ")) goto full;
            SL_TRY(format_into(&v->items[i], buf, size, n, err));
        }
        if (!put(buf, size, n, "]")) goto full;
        return SL_OK;
    }
    if (put(buf, size, n, tmp)) return SL_OK;
full:
    return sl_err_set(err, SL_EINVAL, "value too long (over %zu characters)", size - 1);
}

sl_status sl__parse_format_val(const sl__val *v, char *buf, size_t size, sl_err *err) {
    size_t n = 0;
    if (size) buf[0] = '\0';
    return format_into(v, buf, size, &n, err);
}

/* ---- entry points ---------------------------------------------------------------------------- */

sl_status sl__parse_check_text(const char *text, size_t len, const char *filename, sl_err *err) {
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (!nul) return SL_OK;
    sl__parse_pos pos = {1, 1};
    const char *line_start = text;
    for (const char *q = text; q < nul; q++)
        if (*q == '\n') pos.line++, line_start = q + 1;
    pos.col = (int)(nul - line_start) + 1;
    return sl__parse_error(err, SL_ESYNTAX, text, filename ? filename : "<text>", pos,
                           "NUL byte in the pipeline text (byte %zu of %zu)", (size_t)(nul - text),
                           len);
}

void sl_pipeline_decorator_clear(sl_pipeline_decorator *d) {
    for (int k = 0; d->output_map && k < d->num_outputs; k++) free(d->output_map[k]);
    free(d->output_map);
    d->output_map = NULL;
    d->num_outputs = 0;
}

static void deco_init(sl_pipeline_decorator *d) {
    memset(d, 0, sizeof *d);
    d->size = -1;
    d->prepare_first_batch = true;
    d->batch_size = d->num_threads = -1;
    d->seed = -1;
    d->prefetch_queue_depth = d->device_id = -1;
}

void sl__parse_prog_free(sl__parse_prog *prog) {
    if (!prog) return;
    for (int i = 0; i < prog->num_stmts; i++) sl__parse_stmt_clear(&prog->stmts[i]);
    free(prog->stmts);
    free(prog->text);
    sl_pipeline_decorator_clear(&prog->deco);
    for (int k = 0; prog->output_names && k < prog->num_outputs; k++) free(prog->output_names[k]);
    free(prog->output_names);
    free(prog->outputs);
    free(prog->output_pos);
    free(prog);
}

static sl_status run_parser(const char *text, const char *filename, const char *function, int nbind,
                            const sl_pipeline_bind *binds, int nvals, const sl__parse_bindv *vals,
                            bool header_only, sl__parse_prog *prog, sl_err *err) {
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.text = text;
    ps.filename = filename;
    ps.function = function && function[0] ? function : NULL;
    ps.err = err;
    ps.nbind = nbind;
    ps.binds = binds;
    ps.nvals = nvals;
    ps.vals = vals;
    ps.prog = prog;
    sl_status st = sl__parse_read(&ps);
    ps.step_limit = SL__PARSE_STEPS_MAX + ps.nexprs + ps.nstmts;
    if (st == SL_OK) st = sl__parse_func_index(&ps);
    if (st == SL_OK) st = sl__parse_choose_pipeline(&ps);
    if (st == SL_OK && header_only && ps.pipe) st = sl__parse_deco_apply(&ps, ps.pipe);
    if (st == SL_OK && !header_only) st = sl__parse_run_module(&ps);
    sl__parse_scope_free(&ps.globals);
    free(ps.fhash);
    sl__parse_release(&ps);
    return st;
}

sl_status sl__parse_program_fn(const char *text, const char *filename, const char *function,
                               int nbind, const sl_pipeline_bind *binds, sl__parse_prog **out,
                               sl_err *err) {
    return sl__parse_program_vals(text, filename, function, nbind, binds, 0, NULL, out, err);
}

sl_status sl__parse_program_vals(const char *text, const char *filename, const char *function,
                                 int nbind, const sl_pipeline_bind *binds, int nvals,
                                 const sl__parse_bindv *vals, sl__parse_prog **out, sl_err *err) {
    *out = NULL;
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    if (nbind < 0 || (nbind && !binds) || nvals < 0 || (nvals && !vals))
        return sl_err_set(err, SL_EINVAL, "bad bind list");
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    snprintf(prog->filename, sizeof prog->filename, "%s", filename);
    if (!(prog->text = strdup(text))) {
        free(prog);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    sl_status st =
        run_parser(text, filename, function, nbind, binds, nvals, vals, false, prog, err);
    if (st != SL_OK) {
        sl__parse_prog_free(prog);
        return st;
    }
    *out = prog;
    return SL_OK;
}

sl_status sl__parse_program(const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl__parse_prog **out, sl_err *err) {
    return sl__parse_program_fn(text, filename, NULL, nbind, binds, out, err);
}

sl_status sl__parse_header(const char *text, const char *filename, const char *function,
                           sl_pipeline_decorator *out, sl_err *err) {
    deco_init(out);
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    sl_status st = run_parser(text, filename, function, 0, NULL, 0, NULL, true, prog, err);
    if (st == SL_OK) {
        *out = prog->deco; /* its names are the caller's now */
        prog->deco.output_map = NULL;
        prog->deco.num_outputs = 0;
    }
    sl__parse_prog_free(prog);
    return st;
}

sl_status sl_pipeline_text_decorator(const char *text, const char *filename,
                                     sl_pipeline_decorator *out, sl_err *err) {
    return sl__parse_header(text, filename, NULL, out, err);
}

sl_status sl_pipeline_text_function_decorator(const char *text, const char *filename,
                                              const char *function, sl_pipeline_decorator *out,
                                              sl_err *err) {
    return sl__parse_header(text, filename, function, out, err);
}
