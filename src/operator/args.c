/* SPDX-License-Identifier: Apache-2.0 */
/* Argument values and their checking against an operator's schema: literal parsing (the subset of
 * Python literals a DALI pipeline uses), defaults, type conversion (int -> float, scalar -> list,
 * types.X -> dtype), and "did you mean" suggestions for unknown argument names. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl__val_free(sl__val *v) {
    if (!v) return;
    free(v->s);
    for (int i = 0; i < v->n; i++) sl__val_free(&v->items[i]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

sl_status sl__val_copy(sl__val *dst, const sl__val *src, sl_err *err) {
    *dst = *src;
    dst->s = NULL;
    dst->items = NULL;
    dst->n = 0;
    /* a list's s holds its private flat copy (see flatten): rebuilt, never copied */
    if (src->kind != SL_VAL_LIST && src->s && !(dst->s = strdup(src->s)))
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    if (src->n) {
        dst->items = sl__calloc((size_t)src->n, sizeof *dst->items, err);
        if (!dst->items) return SL_ENOMEM;
        dst->n = src->n;
        for (int i = 0; i < src->n; i++) SL_TRY(sl__val_copy(&dst->items[i], &src->items[i], err));
    }
    return SL_OK;
}

/* ---- literal parser ------------------------------------------------------------------------- */

typedef struct {
    const char *p;
    const char *text;
    sl_err *err;
    int depth; /* lists open around l->p */
} lit;

/* Nesting a literal may have: parse_list recurses once per level (and sl__val_free/copy/format
 * after it), so a hostile "[[[[..." must stop here, not overflow the stack. */
#define SL__LIT_DEPTH_MAX 200

static void skip_ws(lit *l) {
    while (isspace((unsigned char)*l->p)) l->p++;
}

static sl_status parse_value(lit *l, sl__val *out);
static sl_status parse_list_items(lit *l, sl__val *out, char close);

static sl_status parse_list(lit *l, sl__val *out, char close) {
    out->kind = SL_VAL_LIST;
    if (l->depth >= SL__LIT_DEPTH_MAX)
        return sl_err_set(l->err, SL_ESYNTAX,
                          "lists nested too deeply (over %d levels) at offset %zu",
                          SL__LIT_DEPTH_MAX, (size_t)(l->p - l->text));
    l->depth++;
    sl_status st = parse_list_items(l, out, close);
    l->depth--;
    return st;
}

static sl_status parse_list_items(lit *l, sl__val *out, char close) {
    int cap = 0; /* grown geometrically: a realloc per item can copy the list each time */
    l->p++;
    for (;;) {
        skip_ws(l);
        if (*l->p == close) {
            l->p++;
            return SL_OK;
        }
        sl__val item;
        memset(&item, 0, sizeof item);
        sl_status st = parse_value(l, &item);
        if (st != SL_OK) { /* a list that failed half-way holds what it had read */
            sl__val_free(&item);
            return st;
        }
        if (out->n == cap) {
            sl__val *items = cap < INT32_MAX / 2
                                 ? realloc(out->items, (size_t)(cap ? 2 * cap : 8) * sizeof *items)
                                 : NULL;
            if (!items) {
                sl__val_free(&item);
                return sl_err_set(l->err, SL_ENOMEM, "out of memory");
            }
            out->items = items;
            cap = cap ? 2 * cap : 8;
        }
        out->items[out->n++] = item;
        skip_ws(l);
        if (*l->p == ',') {
            l->p++;
        } else if (*l->p != close) {
            return sl_err_set(l->err, SL_ESYNTAX, "expected ',' or '%c' in \"%s\"", close, l->text);
        }
    }
}

static sl_status parse_value(lit *l, sl__val *out) {
    memset(out, 0, sizeof *out);
    skip_ws(l);
    const char *p = l->p;
    if (*p == '[' || *p == '(') return parse_list(l, out, *p == '[' ? ']' : ')');
    if (*p == '"' || *p == '\'') { /* \\, \' and \" stand for \, ' and " (any other \ for itself) */
        char q = *p++;
        const char *end = p;
        size_t n = 0;
        for (; *end && *end != q; end++, n++)
            if (*end == '\\' && (end[1] == '\\' || end[1] == '\'' || end[1] == '"')) end++;
        if (!*end) return sl_err_set(l->err, SL_ESYNTAX, "unterminated string in \"%s\"", l->text);
        out->kind = SL_VAL_STR;
        if (!(out->s = malloc(n + 1))) return sl_err_set(l->err, SL_ENOMEM, "out of memory");
        for (n = 0; p < end; p++) {
            if (*p == '\\' && (p[1] == '\\' || p[1] == '\'' || p[1] == '"')) p++;
            out->s[n++] = *p;
        }
        out->s[n] = '\0';
        l->p = end + 1;
        return SL_OK;
    }
    if (isdigit((unsigned char)*p) || ((*p == '-' || *p == '+' || *p == '.') && p[1])) {
        char *end;
        errno = 0;
        long long iv = strtoll(p, &end, 10);
        if (*end == '.' || *end == 'e' || *end == 'E') {
            out->kind = SL_VAL_FLOAT;
            errno = 0;
            out->f = strtod(p, &end);
        } else {
            out->kind = SL_VAL_INT;
            out->i = iv;
            out->f = (double)iv;
        }
        if (end == p) return sl_err_set(l->err, SL_ESYNTAX, "bad number in \"%s\"", l->text);
        /* 1e999 or 99999999999999999999: not a number an argument can hold */
        if ((errno == ERANGE && (out->kind == SL_VAL_INT || !isfinite(out->f))) ||
            !isfinite(out->f))
            return sl_err_set(l->err, SL_ESYNTAX, "number %.*s is out of range in \"%s\"",
                              (int)(end - p < 40 ? end - p : 40), p, l->text);
        l->p = end;
        return SL_OK;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        const char *s = p;
        while (isalnum((unsigned char)*p) || *p == '_' || *p == '.') p++;
        size_t n = (size_t)(p - s);
        l->p = p;
        if (n == 4 && !strncmp(s, "True", 4)) {
            out->kind = SL_VAL_BOOL;
            out->b = true;
            out->i = 1;
            return SL_OK;
        }
        if (n == 5 && !strncmp(s, "False", 5)) {
            out->kind = SL_VAL_BOOL;
            return SL_OK;
        }
        if (n == 4 && !strncmp(s, "None", 4)) return SL_OK;
        /* types.FLOAT, dali.types.GRAY, GRAY: keep the last component */
        const char *dot = s;
        for (const char *q = s; q < p; q++)
            if (*q == '.') dot = q + 1;
        out->kind = SL_VAL_ENUM;
        out->s = strndup(dot, (size_t)(p - dot));
        if (!out->s) return sl_err_set(l->err, SL_ENOMEM, "out of memory");
        return SL_OK;
    }
    return sl_err_set(l->err, SL_ESYNTAX, "cannot read a value from \"%s\"", l->text);
}

sl_status sl__val_parse(const char *text, sl__val *out, sl_err *err) {
    lit l = {text, text, err, 0};
    sl_status st = parse_value(&l, out);
    if (st == SL_OK) {
        skip_ws(&l);
        if (*l.p) st = sl_err_set(err, SL_ESYNTAX, "unexpected \"%s\" after a value", l.p);
    }
    if (st != SL_OK) sl__val_free(out);
    return st;
}

const char *sl__val_format(const sl__val *v, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    switch (v->kind) {
    case SL_VAL_NONE:
        snprintf(buf, size, "None");
        break;
    case SL_VAL_BOOL:
        snprintf(buf, size, "%s", v->b ? "True" : "False");
        break;
    case SL_VAL_INT:
        snprintf(buf, size, "%lld", (long long)v->i);
        break;
    case SL_VAL_FLOAT:
        snprintf(buf, size, "%g%s", v->f,
                 isfinite(v->f) && fabs(v->f) < 1e15 && v->f == (double)(long long)v->f ? ".0"
                                                                                        : "");
        break;
    case SL_VAL_STR:
        snprintf(buf, size, "\"%s\"", v->s);
        break;
    case SL_VAL_ENUM:
        snprintf(buf, size, "%s", v->s);
        break;
    case SL_VAL_NODE:
        snprintf(buf, size, "<per-sample input %d>", v->node);
        break;
    case SL_VAL_LIST:
        n = (size_t)snprintf(buf, size, "[");
        for (int i = 0; i < v->n && n < size; i++) {
            char item[128];
            sl__val_format(&v->items[i], item, sizeof item);
            n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", item);
        }
        if (n < size) snprintf(buf + n, size - n, "]");
        break;
    }
    return buf;
}

/* ---- schema checking ------------------------------------------------------------------------ */

const char *sl__arg_type_name(sl__arg_type t) {
    switch (t) {
    case SL_ARG_BOOL:
        return "bool";
    case SL_ARG_INT:
        return "int";
    case SL_ARG_FLOAT:
        return "float";
    case SL_ARG_STR:
        return "str";
    case SL_ARG_DTYPE:
        return "DALIDataType";
    case SL_ARG_ENUM:
        return "enum";
    case SL_ARG_INTS:
        return "int or list of int";
    case SL_ARG_FLOATS:
        return "float or list of float";
    case SL_ARG_STRS:
        return "str or list of str";
    case SL_ARG_FEATURES:
        return "dict of str to tfrec feature";
    }
    return "?";
}

bool sl__enum_choice_ok(const char *choices, const char *s) {
    size_t n = strlen(s);
    for (const char *c = choices; c && *c;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, s, n) == 0) return true;
        c = bar ? bar + 1 : NULL;
    }
    return false;
}

/* DALI's codes of its interpolation types (DALIInterpType), by name */
static const char *const interp_names[] = {"INTERP_NN",         "INTERP_LINEAR",
                                           "INTERP_CUBIC",      "INTERP_LANCZOS3",
                                           "INTERP_TRIANGULAR", "INTERP_GAUSSIAN"};

int sl__enum_code(const char *name) {
    for (int k = 0; k < (int)SL_ARRAY_LEN(interp_names); k++)
        if (!strcmp(interp_names[k], name)) return k;
    return -1;
}

const char *sl__enum_code_name(const char *choices, int code) {
    if (!choices || strncmp(choices, "INTERP_", 7) || code < 0 ||
        code >= (int)SL_ARRAY_LEN(interp_names))
        return NULL;
    return interp_names[code];
}

/* Converts v in place to schema type t. */
static sl_status convert(sl__val *v, const sl__arg_schema *a, const char *opname, sl_err *err) {
    char shown[256];
    if (v->kind == SL_VAL_NONE || v->kind == SL_VAL_NODE) return SL_OK;
    switch (a->type) {
    case SL_ARG_BOOL:
        if (v->kind == SL_VAL_BOOL || v->kind == SL_VAL_INT) {
            v->b = v->kind == SL_VAL_BOOL ? v->b : v->i != 0;
            v->kind = SL_VAL_BOOL;
            return SL_OK;
        }
        break;
    case SL_ARG_INT:
        if (v->kind == SL_VAL_INT || v->kind == SL_VAL_BOOL) {
            v->i = v->kind == SL_VAL_BOOL ? v->b : v->i;
            v->kind = SL_VAL_INT;
            return SL_OK;
        }
        if (v->kind == SL_VAL_FLOAT && fabs(v->f) < 0x1p63 && v->f == (double)(int64_t)v->f) {
            v->i = (int64_t)v->f;
            v->kind = SL_VAL_INT;
            return SL_OK;
        }
        if (v->kind == SL_VAL_ENUM && sl__enum_code(v->s) >= 0) { /* an IntEnum: DALI's code */
            int64_t code = sl__enum_code(v->s);
            free(v->s);
            v->s = NULL;
            v->i = code;
            v->kind = SL_VAL_INT;
            return SL_OK;
        }
        break;
    case SL_ARG_FLOAT:
        if (v->kind == SL_VAL_FLOAT) return SL_OK;
        if (v->kind == SL_VAL_INT) {
            v->f = (double)v->i;
            v->kind = SL_VAL_FLOAT;
            return SL_OK;
        }
        break;
    case SL_ARG_STR:
        if (v->kind == SL_VAL_STR) return SL_OK;
        break;
    case SL_ARG_DTYPE:
        if (v->kind == SL_VAL_ENUM || v->kind == SL_VAL_STR) {
            sl_dtype t;
            if (sl_dtype_parse(v->s, &t) != SL_OK)
                return sl_err_set(err, SL_EINVAL, "%s: argument %s: unknown data type %s", opname,
                                  a->name, v->s);
            if (t == SL_DTYPE_INTERP && !(a->flags & SL_ARGF_ENUM_DTYPE))
                return sl_err_set(err, SL_EINVAL,
                                  "%s: argument %s: %s is no type of numbers (it is for "
                                  "constants of interpolation types)",
                                  opname, a->name, v->s);
            v->kind = SL_VAL_INT;
            v->i = t;
            return SL_OK;
        }
        break;
    case SL_ARG_ENUM:
        if (v->kind == SL_VAL_ENUM || v->kind == SL_VAL_STR) {
            if (a->choices && !sl__enum_choice_ok(a->choices, v->s))
                return sl_err_set(err, SL_EINVAL, "%s: argument %s: %s is not one of %s", opname,
                                  a->name, v->s, a->choices);
            v->kind = SL_VAL_ENUM;
            return SL_OK;
        }
        break;
    case SL_ARG_INTS:
    case SL_ARG_FLOATS:
    case SL_ARG_STRS: {
        if (v->kind != SL_VAL_LIST) { /* a scalar is a list of one */
            sl__val item = *v;
            memset(v, 0, sizeof *v);
            v->kind = SL_VAL_LIST;
            v->items = malloc(sizeof *v->items);
            if (!v->items) {
                sl__val_free(&item);
                return sl_err_set(err, SL_ENOMEM, "out of memory");
            }
            v->items[0] = item;
            v->n = 1;
        }
        sl__arg_schema one = *a;
        one.type = a->type == SL_ARG_INTS     ? SL_ARG_INT
                   : a->type == SL_ARG_FLOATS ? SL_ARG_FLOAT
                                              : SL_ARG_STR;
        for (int i = 0; i < v->n; i++) {
            if (v->items[i].kind == SL_VAL_NONE || v->items[i].kind == SL_VAL_LIST) goto bad;
            SL_TRY(convert(&v->items[i], &one, opname, err));
        }
        return SL_OK;
    }
    case SL_ARG_FEATURES: /* [[name, [kind, ...]], ...]; the op reads the rest */
        if (v->kind != SL_VAL_LIST) break;
        for (int i = 0; i < v->n; i++) {
            const sl__val *p = &v->items[i];
            if (p->kind != SL_VAL_LIST || p->n != 2 || p->items[0].kind != SL_VAL_STR ||
                p->items[1].kind != SL_VAL_LIST)
                goto bad;
        }
        return SL_OK;
    }
bad:
    return sl_err_set(err, SL_EINVAL, "%s: argument %s wants %s, got %s", opname, a->name,
                      sl__arg_type_name(a->type), sl__val_format(v, shown, sizeof shown));
}

int sl__op_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int c = d[i - 1][j - 1] +
                    (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
        }
    return d[n][m];
}

typedef struct flat flat;
static const flat *flatten(const sl__args *a, const char *name);

static int schema_index(const sl__op_def *op, const char *name) {
    for (int i = 0; op->args && op->args[i].name; i++)
        if (strcmp(op->args[i].name, name) == 0) return i;
    return -1;
}

/* Arguments every op takes, handled by the pipeline itself (sl_pipeline_op_arg: device and name;
 * the executor: seed). `seed` too where the schema lacks it: the pipeline gives each op its seed
 * (this argument, or one derived from the pipeline's) through sl__op_init / sl__op_io. The one
 * list: the argument check below and the public table (sl_op_common_arg) both read it. */
static const sl__arg_schema common_args[] = {
    {"device", SL_ARG_STR, NULL,
     "where the op runs: \"cpu\", \"mixed\" or \"gpu\" (default: gpu when an input is on the GPU, "
     "else cpu, as DALI); on a CPU pipeline mixed and gpu ops run their CPU implementation",
     0, "cpu|mixed|gpu"},
    {"name", SL_ARG_STR, NULL,
     "the instance's name (default: the op's): what reader_name refers to, and what errors and "
     "stage statistics call it",
     0, NULL},
    {"seed", SL_ARG_INT, NULL,
     "the op's random seed (default, or -1: derived from the pipeline seed and the op's place in "
     "the pipeline)",
     0, NULL},
    {"preserve", SL_ARG_BOOL, "False",
     "accepted for DALI's sake, not used (sluice never prunes an op)", 0, NULL},
    {"bytes_per_sample_hint", SL_ARG_INTS, "[0]",
     "accepted for DALI's sake, not used (output buffers grow as samples need)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

const sl__arg_schema *sl__args_common(int *count) {
    if (count) *count = (int)SL_ARRAY_LEN(common_args) - 1;
    return common_args;
}

static const sl__arg_schema *common_arg(const char *name) {
    for (int i = 0; common_args[i].name; i++)
        if (strcmp(common_args[i].name, name) == 0) return &common_args[i];
    return NULL;
}

sl_status sl__args_build_at(const sl__op_def *op, int n, const char *const *names,
                            const sl__val *vals, sl__args *out, int *bad, sl_err *err) {
    if (bad) *bad = -1;
    memset(out, 0, sizeof *out);
    out->op = op;
    int count = 0;
    while (op->args && op->args[count].name) count++;
    out->count = count;
    out->vals = sl__calloc((size_t)count + 1, sizeof *out->vals, err);
    out->given = sl__calloc((size_t)count + 1, sizeof *out->given, err);
    if (!out->vals || !out->given) {
        sl__args_free(out);
        return SL_ENOMEM;
    }
    sl_status st = SL_OK;
    int k = 0;
    for (; k < n && st == SL_OK; k++) {
        int i = schema_index(op, names[k]);
        const sl__arg_schema *common = i < 0 ? common_arg(names[k]) : NULL;
        if (common) { /* used by the pipeline, not the op: checked here all the same */
            if (vals[k].kind == SL_VAL_NODE) {
                st = sl_err_set(err, SL_EINVAL, "%s: argument %s cannot take per-sample values",
                                op->name, names[k]);
                break;
            }
            sl__val v;
            st = sl__val_copy(&v, &vals[k], err);
            if (st == SL_OK) {
                st = convert(&v, common, op->name, err);
                sl__val_free(&v);
            }
            if (st != SL_OK) break;
            continue;
        }
        if (i < 0) {
            const char *best = NULL;
            int bd = 99;
            for (int j = 0; j < count; j++) {
                int d = sl__op_distance(names[k], op->args[j].name);
                if (d < bd) bd = d, best = op->args[j].name;
            }
            if (best && bd <= 3)
                st = sl_err_set(err, SL_EINVAL, "%s has no argument '%s'; did you mean '%s'?",
                                op->name, names[k], best);
            else
                st = sl_err_set(err, SL_EINVAL, "%s has no argument '%s'", op->name, names[k]);
            break;
        }
        if (out->given[i]) {
            st = sl_err_set(err, SL_EINVAL, "%s: argument %s given twice", op->name, names[k]);
            break;
        }
        /* None is "not given", as in DALI: the default then (else a required argument is
         * missing), never a None the op would have to expect where its schema has a value */
        if (vals[k].kind == SL_VAL_NONE) continue;
        if (vals[k].kind == SL_VAL_NODE && !(op->args[i].flags & SL_ARGF_PER_SAMPLE)) {
            st = sl_err_set(err, SL_EINVAL, "%s: argument %s cannot take per-sample values",
                            op->name, names[k]);
            break;
        }
        st = sl__val_copy(&out->vals[i], &vals[k], err);
        if (st == SL_OK) st = convert(&out->vals[i], &op->args[i], op->name, err);
        out->given[i] = true;
        if (st != SL_OK) break;
    }
    if (st != SL_OK && bad) *bad = k; /* the loop stopped at the argument it failed on */
    for (int i = 0; i < count && st == SL_OK; i++) {
        if (out->given[i]) continue;
        if (op->args[i].flags & SL_ARGF_REQUIRED) {
            st = sl_err_set(err, SL_EINVAL, "%s: argument %s is required", op->name,
                            op->args[i].name);
        } else if (op->args[i].def) {
            st = sl__val_parse(op->args[i].def, &out->vals[i], err);
            if (st == SL_OK) st = convert(&out->vals[i], &op->args[i], op->name, err);
            /* a schema's default must be valid: only memory can run out here */
            SL_ASSERT(st == SL_OK || st == SL_ENOMEM);
        }
    }
    /* flat copies of list values, built now so that accessors only read (workers call them) */
    for (int i = 0; i < count && st == SL_OK; i++)
        if (out->vals[i].kind == SL_VAL_LIST && !flatten(out, op->args[i].name))
            st = sl_err_set(err, SL_ENOMEM, "%s: out of memory for argument %s", op->name,
                            op->args[i].name);
    if (st != SL_OK) sl__args_free(out);
    return st;
}

sl_status sl__args_build(const sl__op_def *op, int n, const char *const *names, const sl__val *vals,
                         sl__args *out, sl_err *err) {
    return sl__args_build_at(op, n, names, vals, out, NULL, err);
}

void sl__args_free(sl__args *a) {
    if (!a) return;
    for (int i = 0; a->vals && i < a->count; i++) sl__val_free(&a->vals[i]);
    free(a->vals);
    free(a->given);
    memset(a, 0, sizeof *a);
}

const sl__val *sl__args_get(const sl__args *a, const char *name) {
    int i = schema_index(a->op, name);
    SL_ASSERT(i >= 0); /* asking for an argument the schema does not have */
    return &a->vals[i];
}

bool sl__args_has(const sl__args *a, const char *name) {
    return schema_index(a->op, name) >= 0;
}

bool sl__args_given(const sl__args *a, const char *name) {
    int i = schema_index(a->op, name);
    return i >= 0 && a->given[i] && a->vals[i].kind != SL_VAL_NONE;
}

int64_t sl__args_int(const sl__args *a, const char *name) {
    return sl__args_get(a, name)->i;
}
double sl__args_float(const sl__args *a, const char *name) {
    return sl__args_get(a, name)->f;
}
bool sl__args_bool(const sl__args *a, const char *name) {
    return sl__args_get(a, name)->b;
}
const char *sl__args_str(const sl__args *a, const char *name) {
    return sl__args_get(a, name)->s;
}
sl_dtype sl__args_dtype(const sl__args *a, const char *name) {
    return (sl_dtype)sl__args_get(a, name)->i;
}

int sl__args_node(const sl__args *a, const char *name) {
    const sl__val *v = sl__args_get(a, name);
    return v->kind == SL_VAL_NODE ? v->node : -1;
}

/* List accessors keep a flat copy next to the value (items are sl__val). */
struct flat {
    int n;
    union {
        int64_t i;
        double f;
        const char *s;
    } x[];
};

static const flat *flatten(const sl__args *a, const char *name) {
    sl__val *v = (sl__val *)sl__args_get(a, name);
    if (v->kind != SL_VAL_LIST) return NULL;
    /* the flat copy hides in v->s (unused for lists), built once */
    if (!v->s) {
        flat *f = malloc(sizeof *f + (size_t)v->n * sizeof f->x[0]);
        if (!f) return NULL;
        f->n = v->n;
        for (int i = 0; i < v->n; i++) {
            f->x[i].i = 0;
            if (v->items[i].kind == SL_VAL_INT) f->x[i].i = v->items[i].i;
            if (v->items[i].kind == SL_VAL_FLOAT) f->x[i].f = v->items[i].f;
            if (v->items[i].kind == SL_VAL_STR) f->x[i].s = v->items[i].s;
        }
        v->s = (char *)f;
    }
    return (const flat *)v->s;
}

int sl__args_ints(const sl__args *a, const char *name, const int64_t **out) {
    const flat *f = flatten(a, name);
    *out = f ? &f->x[0].i : NULL;
    return f ? f->n : 0;
}

int sl__args_floats(const sl__args *a, const char *name, const double **out) {
    const flat *f = flatten(a, name);
    *out = f ? &f->x[0].f : NULL;
    return f ? f->n : 0;
}

int sl__args_strs(const sl__args *a, const char *name, const char *const **out) {
    const flat *f = flatten(a, name);
    *out = f ? &f->x[0].s : NULL;
    return f ? f->n : 0;
}
