/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser, layer one: a hand-written lexer (Python tokens, INDENT/DEDENT, implicit
 * line joining inside brackets) and a recursive-descent parser for the subset of Python that DALI
 * pipeline functions use -- one optional @data_iterator/@pipeline_def decorator, a def line,
 * op-call assignments, .gpu()/.cpu(), literal and arithmetic keyword arguments, types.* constants,
 * return -- turning the text and its bound names into an sl__parse_prog (parse.h). Expressions are
 * parsed to a small tree kept in an arena, then evaluated: constants fold to sl__val, op calls and
 * transfers become statements whose outputs are program nodes. Anything outside the subset is an
 * error with line, column and a caret under the spot; nothing here aborts on bad input. */
#include "pipeline/parse.h"

#include "core/alloc.h"
#include "core/log.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------------
 */

sl_status sl__parse_error(sl_err *err, sl_status status, const char *text, const char *filename,
                          sl__parse_pos pos, const char *fmt, ...) {
    if (!err) return status;
    char what[SL_ERRMSG_MAX], head[2 * SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
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

/* ---- values ------------------------------------------------------------------------------------
 */

static bool has_prefix(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool types_name(const char *s) {
    return has_prefix(s, "types.") || has_prefix(s, "dali.types.") ||
           has_prefix(s, "nvidia.dali.types.");
}

sl_status sl__parse_bind_value(const char *text, sl__val *out, sl_err *err) {
    sl_err ignored;
    memset(out, 0, sizeof *out);
    if (sl__val_parse(text, out, &ignored) == SL_OK) {
        if (out->kind != SL_VAL_ENUM || types_name(text)) return SL_OK;
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

/* ---- lexer -------------------------------------------------------------------------------------
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

typedef struct lexer {
    const char *text, *filename, *p, *line_start;
    int line;
    token *toks;
    int ntok, cap;
    int indents[64], nindent;
    struct {
        char c;
        sl__parse_pos pos;
    } parens[64];
    int depth;
    sl_err *err;
} lexer;

static sl__parse_pos lex_pos(const lexer *l, const char *at) {
    sl__parse_pos pos = {l->line, (int)(at - l->line_start) + 1};
    return pos;
}

static sl_status lex_error(lexer *l, sl_status st, sl__parse_pos pos, const char *fmt, ...)
    SL_PRINTF(4, 5);
static sl_status lex_error(lexer *l, sl_status st, sl__parse_pos pos, const char *fmt, ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sl__parse_error(l->err, st, l->text, l->filename, pos, "%s", what);
}

static sl_status lex_push(lexer *l, tkind kind, sl__parse_pos pos, const char *start, int len,
                          token **out) {
    if (l->ntok == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        token *t = realloc(l->toks, (size_t)cap * sizeof *t);
        if (!t) return sl_err_set(l->err, SL_ENOMEM, "out of memory");
        l->toks = t;
        l->cap = cap;
    }
    token *t = &l->toks[l->ntok++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->pos = pos;
    t->start = start;
    t->len = len;
    if (out) *out = t;
    return SL_OK;
}

static void lex_free(lexer *l) {
    for (int i = 0; i < l->ntok; i++) free(l->toks[i].s);
    free(l->toks);
    l->toks = NULL;
    l->ntok = l->cap = 0;
}

static bool ident_start(int c) {
    return isalpha(c) || c == '_';
}
static bool ident_char(int c) {
    return isalnum(c) || c == '_';
}

static void lex_newline(lexer *l, const char *after) {
    l->line++;
    l->line_start = after;
}

/* A string literal starting at the quote l->p points to (prefix already skipped). */
static sl_status lex_string(lexer *l, sl__parse_pos start, bool raw) {
    const char *p = l->p;
    char q = *p;
    bool triple = p[1] == q && p[2] == q;
    p += triple ? 3 : 1;
    size_t cap = 64, n = 0;
    char *buf = malloc(cap);
    if (!buf) return sl_err_set(l->err, SL_ENOMEM, "out of memory");
    for (;;) {
        char c = *p;
        if (c == '\0' || (!triple && (c == '\n' || c == '\r'))) {
            free(buf);
            return lex_error(l, SL_ESYNTAX, start, "unterminated %sstring literal",
                             triple ? "triple-quoted " : "");
        }
        if (n + 3 > cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                return sl_err_set(l->err, SL_ENOMEM, "out of memory");
            }
            buf = b;
        }
        if (c == q && (!triple || (p[1] == q && p[2] == q))) {
            p += triple ? 3 : 1;
            break;
        }
        if (c == '\n') lex_newline(l, p + 1);
        if (c == '\\' && p[1]) {
            char e = p[1];
            if (e == '\n') lex_newline(l, p + 2);
            if (raw) {
                buf[n++] = c;
                buf[n++] = e;
            } else if (e == '\n') {
                /* a backslash-newline inside a string joins the lines */
            } else {
                const char *from = "ntr0\\'\"", *to = "\n\t\r\0\\'\"";
                const char *k = strchr(from, e);
                if (k) {
                    buf[n++] = to[k - from];
                } else {
                    buf[n++] = c;
                    buf[n++] = e;
                }
            }
            p += 2;
            continue;
        }
        buf[n++] = c;
        p++;
    }
    buf[n] = '\0';
    token *t = NULL;
    sl_status st = lex_push(l, T_STR, start, l->p, (int)(p - l->p), &t);
    if (st != SL_OK) {
        free(buf);
        return st;
    }
    t->s = buf;
    l->p = p;
    return SL_OK;
}

static sl_status lex_number(lexer *l) {
    const char *p = l->p, *s = p;
    sl__parse_pos pos = lex_pos(l, s);
    char digits[128];
    size_t n = 0;
    bool is_float = false;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        while (isxdigit((unsigned char)*p) || *p == '_') {
            if (*p != '_' && n < sizeof digits - 1) digits[n++] = *p;
            p++;
        }
        digits[n] = '\0';
        if (!n || ident_char((unsigned char)*p))
            return lex_error(l, SL_ESYNTAX, pos, "invalid hexadecimal literal");
        token *t = NULL;
        SL_TRY(lex_push(l, T_INT, pos, s, (int)(p - s), &t));
        t->i = (int64_t)strtoull(digits, NULL, 16);
        t->f = (double)t->i;
        l->p = p;
        return SL_OK;
    }
    while (isdigit((unsigned char)*p) || *p == '_' || *p == '.' ||
           ((*p == 'e' || *p == 'E') &&
            (isdigit((unsigned char)p[1]) ||
             ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2]))))) {
        if (*p == '.' || *p == 'e' || *p == 'E') {
            if (*p == '.' && is_float) break; /* a second dot */
            is_float = true;
        }
        if ((*p == 'e' || *p == 'E') && (p[1] == '+' || p[1] == '-')) {
            if (n < sizeof digits - 2) digits[n++] = *p;
            p++;
        }
        if (*p != '_' && n < sizeof digits - 1) digits[n++] = *p;
        p++;
    }
    digits[n] = '\0';
    if (ident_char((unsigned char)*p))
        return lex_error(l, SL_ESYNTAX, lex_pos(l, p), "invalid decimal literal");
    token *t = NULL;
    SL_TRY(lex_push(l, is_float ? T_FLOAT : T_INT, pos, s, (int)(p - s), &t));
    char *end;
    if (is_float) {
        t->f = strtod(digits, &end);
        if (!isfinite(t->f)) return lex_error(l, SL_ESYNTAX, pos, "float literal out of range");
    } else {
        unsigned long long v = strtoull(digits, &end, 10);
        if (n > 19 || v > (unsigned long long)INT64_MAX)
            return lex_error(l, SL_ESYNTAX, pos, "integer literal too large");
        t->i = (int64_t)v;
        t->f = (double)v;
    }
    l->p = p;
    return SL_OK;
}

static const char *const ops3[] = {"**=", "//=", ">>=", "<<=", "..."};
static const char *const ops2[] = {"**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=", "*=",
                                   "/=", "%=", "&=", "|=", "^=", "<<", ">>", ":=", "@="};
static const char ops1[] = "()[]{},:.;@=+-*/%<>&|^~";

static sl_status lex_op(lexer *l) {
    const char *p = l->p;
    sl__parse_pos pos = lex_pos(l, p);
    int len = 0;
    for (size_t i = 0; !len && i < SL_ARRAY_LEN(ops3); i++)
        if (!strncmp(p, ops3[i], 3)) len = 3;
    for (size_t i = 0; !len && i < SL_ARRAY_LEN(ops2); i++)
        if (!strncmp(p, ops2[i], 2)) len = 2;
    if (!len && *p && strchr(ops1, *p)) len = 1;
    if (!len) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) return lex_error(l, SL_ESYNTAX, pos, "non-ASCII character in the text");
        if (isprint(c)) return lex_error(l, SL_ESYNTAX, pos, "unexpected character '%c'", c);
        return lex_error(l, SL_ESYNTAX, pos, "unexpected character 0x%02x", c);
    }
    if (len == 1 && strchr("([{", *p)) {
        if (l->depth == (int)SL_ARRAY_LEN(l->parens))
            return lex_error(l, SL_ESYNTAX, pos, "brackets nested too deeply");
        l->parens[l->depth].c = *p;
        l->parens[l->depth++].pos = pos;
    } else if (len == 1 && strchr(")]}", *p)) {
        if (!l->depth) return lex_error(l, SL_ESYNTAX, pos, "unmatched '%c'", *p);
        char open = l->parens[--l->depth].c;
        char want = open == '(' ? ')' : open == '[' ? ']' : '}';
        if (*p != want) {
            sl__parse_pos o = l->parens[l->depth].pos;
            return lex_error(l, SL_ESYNTAX, pos,
                             "closing '%c' does not match opening '%c' on line %d, column %d", *p,
                             open, o.line, o.col);
        }
    }
    SL_TRY(lex_push(l, T_OP, pos, p, len, NULL));
    l->p += len;
    return SL_OK;
}

/* Measures the indentation of the line at l->p and emits INDENT/DEDENT; blank and comment-only
 * lines are skipped. Returns with l->p at the first token of a line, or at the end. */
static sl_status lex_line_start(lexer *l) {
    for (;;) {
        const char *p = l->p;
        int width = 0;
        for (;; p++) {
            if (*p == ' ')
                width++;
            else if (*p == '\t')
                width = (width / 8 + 1) * 8;
            else if (*p == '\f')
                width = 0;
            else
                break;
        }
        if (*p == '#') p += strcspn(p, "\n");
        if (*p == '\r' && p[1] == '\n') p++;
        if (*p == '\n') { /* blank line */
            l->p = p + 1;
            lex_newline(l, l->p);
            continue;
        }
        l->p = p;
        if (*p == '\0') return SL_OK;
        sl__parse_pos pos = lex_pos(l, p);
        int top = l->indents[l->nindent - 1];
        if (width > top) {
            if (l->nindent == (int)SL_ARRAY_LEN(l->indents))
                return lex_error(l, SL_ESYNTAX, pos, "indented too deeply");
            l->indents[l->nindent++] = width;
            return lex_push(l, T_INDENT, pos, p, 0, NULL);
        }
        while (width < l->indents[l->nindent - 1]) {
            l->nindent--;
            SL_TRY(lex_push(l, T_DEDENT, pos, p, 0, NULL));
        }
        if (width != l->indents[l->nindent - 1])
            return lex_error(l, SL_ESYNTAX, pos,
                             "unindent does not match any outer indentation level");
        return SL_OK;
    }
}

static sl_status lex_all(lexer *l) {
    l->p = l->line_start = l->text;
    l->line = 1;
    l->indents[0] = 0;
    l->nindent = 1;
    sl__parse_pos last = {1, 1}; /* just after the last real token: where the end is reported */
    bool bol = true;
    for (;;) {
        if (bol && l->depth == 0) {
            SL_TRY(lex_line_start(l));
            bol = false;
        }
        const char *p = l->p;
        unsigned char c = (unsigned char)*p;
        if (c == '\0') break;
        if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
            l->p++;
            continue;
        }
        if (c == '#') {
            l->p += strcspn(p, "\n");
            continue;
        }
        if (c == '\\') {
            const char *q = p + 1;
            if (*q == '\r') q++;
            if (*q != '\n')
                return lex_error(l, SL_ESYNTAX, lex_pos(l, p),
                                 "unexpected character after line continuation character");
            l->p = q + 1;
            lex_newline(l, l->p);
            continue;
        }
        if (c == '\n') {
            if (l->depth == 0) {
                SL_TRY(lex_push(l, T_NEWLINE, lex_pos(l, p), p, 0, NULL));
                bol = true;
            }
            l->p++;
            lex_newline(l, l->p);
            continue;
        }
        if (ident_start(c)) {
            const char *s = p;
            while (ident_char((unsigned char)*p)) p++;
            size_t n = (size_t)(p - s);
            if ((*p == '"' || *p == '\'') && n <= 2) { /* a prefixed string: r"...", f"..." */
                bool raw = false, ok = true;
                for (size_t i = 0; i < n; i++) {
                    char k = (char)tolower((unsigned char)s[i]);
                    if (k == 'r')
                        raw = true;
                    else if (k != 'u')
                        ok = false;
                }
                if (!ok)
                    return lex_error(l, SL_ESYNTAX, lex_pos(l, s),
                                     "%.*s-strings are not supported in a pipeline", (int)n, s);
                l->p = p;
                SL_TRY(lex_string(l, lex_pos(l, s), raw));
            } else {
                SL_TRY(lex_push(l, T_NAME, lex_pos(l, s), s, (int)n, NULL));
                l->p = p;
            }
        } else if (isdigit(c) || (c == '.' && isdigit((unsigned char)p[1]))) {
            SL_TRY(lex_number(l));
        } else if (c == '"' || c == '\'') {
            SL_TRY(lex_string(l, lex_pos(l, p), false));
        } else {
            SL_TRY(lex_op(l));
        }
        last = lex_pos(l, l->p);
    }
    if (l->depth) {
        sl__parse_pos o = l->parens[l->depth - 1].pos;
        return lex_error(l, SL_ESYNTAX, o, "'%c' was never closed", l->parens[l->depth - 1].c);
    }
    if (l->ntok && l->toks[l->ntok - 1].kind != T_NEWLINE &&
        l->toks[l->ntok - 1].kind != T_DEDENT && l->toks[l->ntok - 1].kind != T_INDENT)
        SL_TRY(lex_push(l, T_NEWLINE, last, l->p, 0, NULL));
    while (l->nindent > 1) {
        l->nindent--;
        SL_TRY(lex_push(l, T_DEDENT, last, l->p, 0, NULL));
    }
    return lex_push(l, T_END, last, l->p, 0, NULL);
}

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
    bool header_only;     /* decide the pipeline function and read its decorator; run nothing */
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

static void *arena_alloc(parser *ps, size_t size) {
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    arena_block *b = ps->arena;
    if (!b || b->used + size > b->size) {
        size_t cap = size > 16384 ? size : 16384;
        b = malloc(sizeof *b + cap);
        if (!b) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        b->next = ps->arena;
        b->used = 0;
        b->size = cap;
        ps->arena = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

static void arena_free(parser *ps) {
    while (ps->arena) {
        arena_block *n = ps->arena->next;
        free(ps->arena);
        ps->arena = n;
    }
}

static sl_status perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...)
    SL_PRINTF(4, 5);
static sl_status perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sl__parse_error(ps->err, st, ps->text, ps->filename, pos, "%s", what);
}

static token *tok(parser *ps) {
    return &ps->toks[ps->at];
}
static token *tok_ahead(parser *ps, int k) {
    int i = ps->at + k;
    return &ps->toks[i < ps->ntok ? i : ps->ntok - 1];
}
static void next(parser *ps) {
    if (ps->at < ps->ntok - 1) ps->at++;
}

static bool is_op(const token *t, const char *op) {
    return t->kind == T_OP && t->len == (int)strlen(op) && !strncmp(t->start, op, (size_t)t->len);
}
static bool is_name(const token *t, const char *name) {
    return t->kind == T_NAME && t->len == (int)strlen(name) &&
           !strncmp(t->start, name, (size_t)t->len);
}

static const char *const keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

static bool is_keyword(const token *t) {
    for (size_t i = 0; i < SL_ARRAY_LEN(keywords); i++)
        if (is_name(t, keywords[i])) return true;
    return false;
}

/* How a token reads in a message. */
static const char *tok_desc(const token *t, char *buf, size_t size) {
    switch (t->kind) {
    case T_END:
        return "end of file";
    case T_NEWLINE:
        return "end of line";
    case T_INDENT:
        return "an indent";
    case T_DEDENT:
        return "end of the indented block";
    case T_STR:
        return "a string";
    case T_INT:
    case T_FLOAT:
        return "a number";
    case T_NAME:
    case T_OP:
        snprintf(buf, size, "'%.*s'", t->len > 40 ? 40 : t->len, t->start);
        return buf;
    }
    return "?";
}

static sl_status expect_op(parser *ps, const char *op, const char *what) {
    token *t = tok(ps);
    if (is_op(t, op)) {
        next(ps);
        return SL_OK;
    }
    char b[64];
    return perr(ps, SL_ESYNTAX, t->pos, "expected '%s'%s%s, got %s", op, what ? " " : "",
                what ? what : "", tok_desc(t, b, sizeof b));
}

static sl_status expect_newline(parser *ps) {
    token *t = tok(ps);
    if (t->kind == T_NEWLINE) {
        next(ps);
        return SL_OK;
    }
    char b[64];
    if (t->kind == T_OP && (is_op(t, "+=") || is_op(t, "-=") || is_op(t, "*=") || is_op(t, "/=")))
        return perr(ps, SL_ESYNTAX, t->pos, "augmented assignment is not supported in a pipeline");
    if (is_op(t, ";"))
        return perr(ps, SL_ESYNTAX, t->pos, "';' is not supported: one statement per line");
    if (t->kind == T_NAME && is_keyword(t))
        return perr(ps, SL_ESYNTAX, t->pos, "unsupported syntax: '%.*s' here", t->len, t->start);
    return perr(ps, SL_ESYNTAX, t->pos, "expected end of line, got %s", tok_desc(t, b, sizeof b));
}

static char *arena_strndup(parser *ps, const char *s, size_t n) {
    char *d = arena_alloc(ps, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static expr *new_expr(parser *ps, ekind kind, sl__parse_pos pos) {
    expr *e = arena_alloc(ps, sizeof *e);
    ps->nexprs++;
    if (e) {
        e->kind = kind;
        e->pos = pos;
        e->depth = 1;
    }
    return e;
}

/* Appends to an arena array. The capacity is implicit in the count: 4, then doubled each time
 * the count reaches a power of two, so n pushes copy and allocate O(n) in all (a copy per push
 * made a 100,000-item list cost tens of GB). */
static bool arena_push(parser *ps, void **arr, int *n, size_t elem, const void *item) {
    int k = *n;
    if (k == INT32_MAX) {
        sl_err_set(ps->err, SL_ENOMEM, "too many items");
        return false;
    }
    if (k == 0 || (k >= 4 && (k & (k - 1)) == 0)) {
        size_t cap = k == 0 ? 4 : 2 * (size_t)k;
        void *grown = arena_alloc(ps, cap * elem);
        if (!grown) return false;
        if (k) memcpy(grown, *arr, (size_t)k * elem);
        *arr = grown;
    }
    memcpy((char *)*arr + (size_t)k * elem, item, elem);
    (*n)++;
    return true;
}

/* Sets e->depth from its children; an error at e when the tree gets too deep. */
static sl_status set_depth(parser *ps, expr *e);

/* ---- expression parsing ------------------------------------------------------------------------
 */

static sl_status set_depth(parser *ps, expr *e) {
    int d = 0;
    if (e->a && e->a->depth > d) d = e->a->depth;
    if (e->b && e->b->depth > d) d = e->b->depth;
    if (e->c && e->c->depth > d) d = e->c->depth;
    for (int k = 0; k < e->n; k++)
        if (e->items[k]->depth > d) d = e->items[k]->depth;
    for (int k = 0; k < e->nkw; k++)
        if (e->kwvals[k]->depth > d) d = e->kwvals[k]->depth;
    e->depth = d + 1;
    if (e->depth > SL__PARSE_DEPTH_MAX)
        return perr(ps, SL_ESYNTAX, e->pos, "expression nested too deeply (over %d levels)",
                    SL__PARSE_DEPTH_MAX);
    return SL_OK;
}

/* Entering parse_expr or parse_unary, which recurse into each other: bounded like the trees. */
static sl_status nest_enter(parser *ps) {
    if (ps->nest >= SL__PARSE_DEPTH_MAX)
        return perr(ps, SL_ESYNTAX, tok(ps)->pos, "expression nested too deeply (over %d levels)",
                    SL__PARSE_DEPTH_MAX);
    ps->nest++;
    return SL_OK;
}

static sl_status parse_expr(parser *ps, expr **out);

/* Call arguments after '(' up to and including ')'. */
static sl_status parse_call_args(parser *ps, expr *call) {
    for (;;) {
        token *t = tok(ps);
        if (is_op(t, ")")) {
            next(ps);
            return SL_OK;
        }
        if (is_op(t, "*"))
            return perr(ps, SL_ESYNTAX, t->pos, "'*' unpacking is not supported in a pipeline");
        if (is_op(t, "**") || (t->kind == T_NAME && is_op(tok_ahead(ps, 1), "="))) {
            bool splat = is_op(t, "**"); /* **mapping: its keys are keywords */
            if (!splat && t->len >= SL__PARSE_NAME_MAX)
                return perr(ps, SL_ESYNTAX, t->pos, "name too long");
            const char *name = splat ? NULL : arena_strndup(ps, t->start, (size_t)t->len);
            if (!splat && !name) return SL_ENOMEM;
            if (call->nkw >= SL__PARSE_KWARGS_MAX) /* the check below scans them */
                return perr(ps, SL_ESYNTAX, t->pos, "too many keyword arguments (over %d)",
                            SL__PARSE_KWARGS_MAX);
            for (int k = 0; name && k < call->nkw; k++)
                if (call->kwnames[k] && !strcmp(call->kwnames[k], name))
                    return perr(ps, SL_ESYNTAX, t->pos, "keyword argument repeated: %s", name);
            sl__parse_pos pos = t->pos;
            next(ps);
            if (!splat) next(ps);
            expr *v;
            SL_TRY(parse_expr(ps, &v));
            int n = call->nkw;
            if (!arena_push(ps, (void **)&call->kwnames, &n, sizeof name, &name)) return SL_ENOMEM;
            n = call->nkw;
            if (!arena_push(ps, (void **)&call->kwpos, &n, sizeof pos, &pos)) return SL_ENOMEM;
            n = call->nkw;
            if (!arena_push(ps, (void **)&call->kwvals, &n, sizeof v, &v)) return SL_ENOMEM;
            call->nkw = n;
        } else {
            if (call->nkw)
                return perr(ps, SL_ESYNTAX, t->pos,
                            "positional argument follows keyword argument%s",
                            call->kwnames[call->nkw - 1] ? "" : " unpacking");
            expr *v;
            SL_TRY(parse_expr(ps, &v));
            if (!arena_push(ps, (void **)&call->items, &call->n, sizeof v, &v)) return SL_ENOMEM;
        }
        t = tok(ps);
        if (is_op(t, ",")) {
            next(ps);
        } else if (!is_op(t, ")")) {
            char b[64];
            return perr(ps, SL_ESYNTAX, t->pos, "expected ',' or ')' in the call, got %s",
                        tok_desc(t, b, sizeof b));
        }
    }
}

/* Items of a list or parenthesised tuple after the opening bracket, up to and including close. */
static sl_status parse_items(parser *ps, expr *e, const char *close, bool *had_comma) {
    *had_comma = false;
    for (;;) {
        token *t = tok(ps);
        if (is_op(t, close)) {
            next(ps);
            return SL_OK;
        }
        expr *v;
        SL_TRY(parse_expr(ps, &v));
        if (!arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v)) return SL_ENOMEM;
        t = tok(ps);
        if (is_op(t, ",")) {
            *had_comma = true;
            next(ps);
        } else if (!is_op(t, close)) {
            char b[64];
            if (t->kind == T_NAME && is_name(t, "for"))
                return perr(ps, SL_ESYNTAX, t->pos,
                            "comprehensions are not supported in a pipeline");
            return perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '%s', got %s", close,
                        tok_desc(t, b, sizeof b));
        }
    }
}

/* {key: value, ...} after the '{', up to and including the '}' (n pairs: keys in items, values
 * in kwvals); a set display is refused. */
static sl_status parse_dict(parser *ps, expr *e) {
    for (;;) {
        token *t = tok(ps);
        if (is_op(t, "}")) {
            next(ps);
            e->nkw = e->n;
            return SL_OK;
        }
        expr *k, *v;
        SL_TRY(parse_expr(ps, &k));
        t = tok(ps);
        char b[64];
        if (is_op(t, ",") || is_op(t, "}"))
            return perr(ps, SL_ESYNTAX, e->pos, "sets are not supported in a pipeline");
        if (is_name(t, "for"))
            return perr(ps, SL_ESYNTAX, t->pos, "comprehensions are not supported in a pipeline");
        if (!is_op(t, ":"))
            return perr(ps, SL_ESYNTAX, t->pos, "expected ':' in the dict, got %s",
                        tok_desc(t, b, sizeof b));
        next(ps);
        SL_TRY(parse_expr(ps, &v));
        int m = e->n;
        if (!arena_push(ps, (void **)&e->items, &e->n, sizeof k, &k) ||
            !arena_push(ps, (void **)&e->kwvals, &m, sizeof v, &v))
            return SL_ENOMEM;
        t = tok(ps);
        if (is_op(t, ",")) {
            next(ps);
        } else if (!is_op(t, "}")) {
            return perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '}' in the dict, got %s",
                        tok_desc(t, b, sizeof b));
        }
    }
}

static sl_status parse_primary(parser *ps, expr **out) {
    token *t = tok(ps);
    char b[64];
    expr *e = NULL;
    switch (t->kind) {
    case T_INT:
    case T_FLOAT:
        e = new_expr(ps, t->kind == T_INT ? E_INT : E_FLOAT, t->pos);
        if (!e) return SL_ENOMEM;
        e->i = t->i;
        e->f = t->f;
        next(ps);
        break;
    case T_STR: {
        e = new_expr(ps, E_STR, t->pos);
        if (!e) return SL_ENOMEM;
        size_t n = 0;
        for (int k = 0; tok_ahead(ps, k)->kind == T_STR; k++) n += strlen(tok_ahead(ps, k)->s);
        char *s = arena_alloc(ps, n + 1);
        if (!s) return SL_ENOMEM;
        size_t at = 0;
        for (; tok(ps)->kind == T_STR; next(ps)) { /* "a" "b" joins */
            size_t l = strlen(tok(ps)->s);
            memcpy(s + at, tok(ps)->s, l);
            at += l;
        }
        s[at] = '\0';
        e->s = s;
        break;
    }
    case T_NAME:
        if (is_name(t, "True") || is_name(t, "False") || is_name(t, "None")) {
            e = new_expr(ps,
                         is_name(t, "True")    ? E_TRUE
                         : is_name(t, "False") ? E_FALSE
                                               : E_NONE,
                         t->pos);
            if (!e) return SL_ENOMEM;
            next(ps);
            break;
        }
        if (is_name(t, "lambda"))
            return perr(ps, SL_ESYNTAX, t->pos, "lambda is not supported in a pipeline");
        if (is_keyword(t))
            return perr(ps, SL_ESYNTAX, t->pos, "unsupported syntax: '%.*s' in an expression",
                        t->len, t->start);
        if (t->len >= SL__PARSE_NAME_MAX) return perr(ps, SL_ESYNTAX, t->pos, "name too long");
        e = new_expr(ps, E_NAME, t->pos);
        if (!e || !(e->s = arena_strndup(ps, t->start, (size_t)t->len))) return SL_ENOMEM;
        next(ps);
        break;
    case T_OP:
        if (is_op(t, "(") || is_op(t, "[")) {
            bool list = is_op(t, "["), comma;
            e = new_expr(ps, list ? E_LIST : E_TUPLE, t->pos);
            if (!e) return SL_ENOMEM;
            next(ps);
            SL_TRY(parse_items(ps, e, list ? "]" : ")", &comma));
            if (!list && e->n == 1 && !comma)
                e = e->items[0]; /* (x) is x */
            else
                SL_TRY(set_depth(ps, e));
            break;
        }
        if (is_op(t, "{")) {
            e = new_expr(ps, E_DICT, t->pos);
            if (!e) return SL_ENOMEM;
            next(ps);
            SL_TRY(parse_dict(ps, e));
            SL_TRY(set_depth(ps, e));
            break;
        }
        return perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                    tok_desc(t, b, sizeof b));
    default:
        return perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                    tok_desc(t, b, sizeof b));
    }
    /* trailers: .name, (call), [subscript] */
    for (;;) {
        t = tok(ps);
        if (is_op(t, ".")) {
            next(ps);
            token *n = tok(ps);
            if (n->kind != T_NAME || is_keyword(n))
                return perr(ps, SL_ESYNTAX, n->pos, "expected a name after '.', got %s",
                            tok_desc(n, b, sizeof b));
            if (n->len >= SL__PARSE_NAME_MAX) return perr(ps, SL_ESYNTAX, n->pos, "name too long");
            expr *a = new_expr(ps, E_ATTR, e->pos);
            if (!a || !(a->s = arena_strndup(ps, n->start, (size_t)n->len))) return SL_ENOMEM;
            a->npos = n->pos;
            a->a = e;
            e = a;
            SL_TRY(set_depth(ps, e));
            next(ps);
        } else if (is_op(t, "(")) {
            expr *c = new_expr(ps, E_CALL, e->pos);
            if (!c) return SL_ENOMEM;
            c->a = e;
            next(ps);
            SL_TRY(parse_call_args(ps, c));
            SL_TRY(set_depth(ps, c));
            e = c;
        } else if (is_op(t, "[")) {
            return perr(ps, SL_ESYNTAX, t->pos, "subscripts are not supported in a pipeline");
        } else {
            break;
        }
    }
    *out = e;
    return SL_OK;
}

static sl_status parse_unary(parser *ps, expr **out);

static sl_status parse_power(parser *ps, expr **out) {
    SL_TRY(parse_primary(ps, out));
    token *t = tok(ps);
    if (is_op(t, "**")) {
        expr *e = new_expr(ps, E_BIN, t->pos);
        if (!e) return SL_ENOMEM;
        strcpy(e->op, "**");
        e->a = *out;
        next(ps);
        SL_TRY(parse_unary(ps, &e->b));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

static sl_status parse_unary_in(parser *ps, expr **out) {
    token *t = tok(ps);
    if (is_op(t, "-") || is_op(t, "+")) {
        expr *e = new_expr(ps, is_op(t, "-") ? E_NEG : E_POS, t->pos);
        if (!e) return SL_ENOMEM;
        next(ps);
        SL_TRY(parse_unary(ps, &e->a));
        SL_TRY(set_depth(ps, e));
        *out = e;
        return SL_OK;
    }
    if (is_op(t, "~"))
        return perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '~' in a pipeline");
    return parse_power(ps, out);
}

static sl_status parse_unary(parser *ps, expr **out) {
    SL_TRY(nest_enter(ps));
    sl_status st = parse_unary_in(ps, out);
    ps->nest--;
    return st;
}

static sl_status parse_binary(parser *ps, expr **out, int level) {
    static const char *const levels[2][4] = {{"+", "-", NULL, NULL}, {"*", "/", "//", "%"}};
    if (level == 2) return parse_unary(ps, out);
    SL_TRY(parse_binary(ps, out, level + 1));
    for (;;) {
        token *t = tok(ps);
        const char *op = NULL;
        for (int k = 0; k < 4 && levels[level][k]; k++)
            if (is_op(t, levels[level][k])) op = levels[level][k];
        if (!op) return SL_OK;
        expr *e = new_expr(ps, E_BIN, t->pos);
        if (!e) return SL_ENOMEM;
        snprintf(e->op, sizeof e->op, "%s", op);
        e->a = *out;
        next(ps);
        SL_TRY(parse_binary(ps, &e->b, level + 1));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
}

static sl_status parse_expr_in(parser *ps, expr **out);

static sl_status parse_expr(parser *ps, expr **out) {
    SL_TRY(nest_enter(ps));
    sl_status st = parse_expr_in(ps, out);
    ps->nest--;
    return st;
}

/* comparison: a chain of arithmetic expressions joined by == != < <= > >= in, not in, is, is not */
static sl_status parse_comparison(parser *ps, expr **out) {
    SL_TRY(parse_binary(ps, out, 0));
    static const struct {
        const char *op;
        int code;
    } cmp_ops[] = {{"==", C_EQ}, {"!=", C_NE}, {"<", C_LT},
                   {"<=", C_LE}, {">", C_GT},  {">=", C_GE}};
    expr *e = NULL;
    for (;;) {
        token *t = tok(ps);
        int code = -1, skip = 1;
        for (size_t i = 0; i < SL_ARRAY_LEN(cmp_ops); i++)
            if (is_op(t, cmp_ops[i].op)) code = cmp_ops[i].code;
        if (is_name(t, "in")) code = C_IN;
        if (is_name(t, "not") && is_name(tok_ahead(ps, 1), "in")) code = C_NOT_IN, skip = 2;
        if (is_name(t, "is")) {
            code = C_IS;
            if (is_name(tok_ahead(ps, 1), "not")) code = C_IS_NOT, skip = 2;
        }
        if (code < 0) break;
        if (!e) {
            if (!(e = new_expr(ps, E_CMP, t->pos)) ||
                !arena_push(ps, (void **)&e->items, &e->n, sizeof *out, out))
                return SL_ENOMEM;
        }
        while (skip--) next(ps);
        expr *v;
        SL_TRY(parse_binary(ps, &v, 0));
        int m = e->n - 1;
        if (!arena_push(ps, (void **)&e->cops, &m, sizeof code, &code) ||
            !arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v))
            return SL_ENOMEM;
    }
    if (e) {
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

/* not_test: 'not' not_test | comparison */
static sl_status parse_not(parser *ps, expr **out) {
    token *t = tok(ps);
    if (!is_name(t, "not")) return parse_comparison(ps, out);
    SL_TRY(nest_enter(ps));
    sl_status st = SL_ENOMEM;
    expr *e = new_expr(ps, E_NOT, t->pos);
    if (e) {
        next(ps);
        st = parse_not(ps, &e->a);
        if (st == SL_OK) st = set_depth(ps, e);
    }
    ps->nest--;
    if (st == SL_OK) *out = e;
    return st;
}

/* or_test / and_test: level 0 'or', level 1 'and' */
static sl_status parse_bool(parser *ps, expr **out, int level) {
    const char *word = level ? "and" : "or";
    SL_TRY(level ? parse_not(ps, out) : parse_bool(ps, out, 1));
    while (is_name(tok(ps), word)) {
        expr *e = new_expr(ps, level ? E_AND : E_OR, tok(ps)->pos);
        if (!e) return SL_ENOMEM;
        e->a = *out;
        next(ps);
        SL_TRY(level ? parse_not(ps, &e->b) : parse_bool(ps, &e->b, 1));
        SL_TRY(set_depth(ps, e));
        *out = e;
    }
    return SL_OK;
}

static sl_status parse_expr_in(parser *ps, expr **out) {
    SL_TRY(parse_bool(ps, out, 0));
    token *t = tok(ps);
    if (is_name(t, "if")) { /* a if c else b */
        expr *e = new_expr(ps, E_IFEXP, t->pos);
        if (!e) return SL_ENOMEM;
        e->a = *out;
        next(ps);
        SL_TRY(parse_bool(ps, &e->c, 0));
        t = tok(ps);
        if (!is_name(t, "else")) {
            char b[64];
            return perr(ps, SL_ESYNTAX, t->pos,
                        "expected 'else' in the conditional expression, got %s",
                        tok_desc(t, b, sizeof b));
        }
        next(ps);
        SL_TRY(parse_expr(ps, &e->b));
        SL_TRY(set_depth(ps, e));
        *out = e;
        t = tok(ps);
    }
    static const char *const bad_ops[] = {"&", "|", "^", "<<", ">>", "@", ":=", "..."};
    static const char *const bad_words[] = {"if", "and", "or", "not", "in", "is", "else"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_ops); i++)
        if (is_op(t, bad_ops[i]))
            return perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '%s' in a pipeline",
                        bad_ops[i]);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_words); i++)
        if (is_name(t, bad_words[i]))
            return perr(ps, SL_ESYNTAX, t->pos, "unsupported syntax: '%s' in an expression",
                        bad_words[i]);
    if (is_name(t, "for"))
        return perr(ps, SL_ESYNTAX, t->pos, "comprehensions are not supported in a pipeline");
    return SL_OK;
}

/* expr (',' expr)* [','] -- a tuple when there is a comma */
static sl_status parse_exprlist(parser *ps, expr **out) {
    SL_TRY(parse_expr(ps, out));
    if (!is_op(tok(ps), ",")) return SL_OK;
    expr *e = new_expr(ps, E_TUPLE, (*out)->pos);
    if (!e || !arena_push(ps, (void **)&e->items, &e->n, sizeof *out, out)) return SL_ENOMEM;
    while (is_op(tok(ps), ",")) {
        next(ps);
        token *t = tok(ps);
        if (t->kind == T_NEWLINE || is_op(t, "=")) break;
        expr *v;
        SL_TRY(parse_expr(ps, &v));
        if (!arena_push(ps, (void **)&e->items, &e->n, sizeof v, &v)) return SL_ENOMEM;
    }
    SL_TRY(set_depth(ps, e));
    *out = e;
    return SL_OK;
}

/* "a.b.c" for a chain of names and attributes, else false. */
static bool dotted(const expr *e, char *buf, size_t size) {
    if (e->kind == E_NAME) return (size_t)snprintf(buf, size, "%s", e->s) < size;
    if (e->kind != E_ATTR || !dotted(e->a, buf, size)) return false;
    size_t n = strlen(buf);
    return (size_t)snprintf(buf + n, size - n, ".%s", e->s) < size - n;
}

/* ---- evaluation ---------------------------------------------------------------------------------
 */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static env_entry *scope_find(scope *sc, const char *name) {
    if (!sc->hcap) return NULL;
    uint32_t mask = (uint32_t)sc->hcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = sc->hash[h];
        if (!slot) return NULL;
        if (!strcmp(sc->env[slot - 1].name, name)) return &sc->env[slot - 1];
    }
}

/* Indexes env[i]; the table is kept at most half full. */
static bool scope_index(scope *sc, int i) {
    if (2 * (sc->nenv + 1) > sc->hcap) {
        int cap = sc->hcap ? 2 * sc->hcap : 64;
        int *h = calloc((size_t)cap, sizeof *h);
        if (!h) return false;
        free(sc->hash);
        sc->hash = h;
        sc->hcap = cap;
        for (int k = 0; k < sc->nenv; k++)
            if (k != i && !scope_index(sc, k)) return false;
    }
    uint32_t mask = (uint32_t)sc->hcap - 1, h = name_hash(sc->env[i].name) & mask;
    while (sc->hash[h]) h = (h + 1) & mask;
    sc->hash[h] = i + 1;
    return true;
}

static void scope_free(scope *sc) {
    for (int i = 0; i < sc->nenv; i++) sl__val_free(&sc->env[i].v.val);
    free(sc->env);
    free(sc->hash);
    memset(sc, 0, sizeof *sc);
}

/* The running function's names, else the module's. */
static env_entry *env_find(parser *ps, const char *name) {
    env_entry *e = ps->local ? scope_find(ps->local, name) : NULL;
    return e ? e : scope_find(&ps->globals, name);
}

static const sl_pipeline_bind *bind_find(parser *ps, const char *name) {
    const sl_pipeline_bind *found = NULL;
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name && !strcmp(ps->binds[i].name, name)) found = &ps->binds[i];
    return found; /* the last one wins */
}

/* The entry for name in the running scope, its old value freed. */
static env_entry *env_set(parser *ps, const char *name) {
    scope *sc = ps->local ? ps->local : &ps->globals;
    env_entry *e = scope_find(sc, name);
    if (e) {
        sl__val_free(&e->v.val);
        memset(&e->v, 0, sizeof e->v);
        e->unbound = false;
        return e;
    }
    if (sc->nenv == sc->capenv) {
        int cap = sc->capenv ? 2 * sc->capenv : 16;
        env_entry *n = realloc(sc->env, (size_t)cap * sizeof *n);
        if (!n) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        sc->env = n;
        sc->capenv = cap;
    }
    e = &sc->env[sc->nenv];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!scope_index(sc, sc->nenv)) {
        sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return NULL;
    }
    sc->nenv++;
    return e;
}

static func *func_find(parser *ps, const char *name) {
    if (!ps->fhcap) return NULL;
    uint32_t mask = (uint32_t)ps->fhcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = ps->fhash[h];
        if (!slot) return NULL;
        if (!strcmp(ps->funcs[slot - 1]->name, name)) return ps->funcs[slot - 1];
    }
}

/* Indexes the functions once they are all parsed; a name defined twice is an error. */
static sl_status func_index(parser *ps) {
    int cap = 64;
    while (cap < 2 * ps->nfuncs) cap *= 2;
    if (!(ps->fhash = calloc((size_t)cap, sizeof *ps->fhash)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    ps->fhcap = cap;
    for (int i = 0; i < ps->nfuncs; i++) {
        func *f = ps->funcs[i], *twice = func_find(ps, f->name);
        if (twice)
            return perr(ps, SL_EINVAL, f->pos, "function '%s' is defined twice (first on line %d)",
                        f->name, twice->pos.line);
        uint32_t mask = (uint32_t)cap - 1, h = name_hash(f->name) & mask;
        while (ps->fhash[h]) h = (h + 1) & mask;
        ps->fhash[h] = i + 1;
    }
    return SL_OK;
}

static void suggest_in(const char *name, const char *cand, int *bd, const char **best) {
    int d = sl__op_distance(name, cand);
    if (d < *bd) *bd = d, *best = cand;
}

static const char *suggest_name(parser *ps, const char *name) {
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; ps->local && i < ps->local->nenv; i++)
        suggest_in(name, ps->local->env[i].name, &bd, &best);
    for (int i = 0; i < ps->globals.nenv; i++)
        suggest_in(name, ps->globals.env[i].name, &bd, &best);
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name) suggest_in(name, ps->binds[i].name, &bd, &best);
    for (int i = 0; i < ps->nfuncs; i++) suggest_in(name, ps->funcs[i]->name, &bd, &best);
    size_t len = strlen(name);
    return best && bd <= (len < 4 ? 1 : len < 8 ? 2 : 3) ? best : NULL;
}

static void result_free(result *r) {
    sl__val_free(&r->val);
    r->dict = false;
}

static bool is_node(const result *r) {
    return r->val.kind == SL_VAL_NODE;
}

static bool has_node(const sl__val *v) {
    if (v->kind == SL_VAL_NODE) return true;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++)
        if (has_node(&v->items[k])) return true;
    return false;
}

static void set_node(sl__val *v, int node) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_NODE;
    v->node = node;
}

/* What copying v costs in steps: its cells, a string counting one per 16 bytes. */
static int64_t val_cost(const sl__val *v) {
    int64_t c = 1;
    if ((v->kind == SL_VAL_STR || v->kind == SL_VAL_ENUM) && v->s) c += (int64_t)strlen(v->s) / 16;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++) c += val_cost(&v->items[k]);
    return c;
}

static int val_depth(const sl__val *v) {
    int d = 0;
    for (int k = 0; v->kind == SL_VAL_LIST && k < v->n; k++) {
        int x = val_depth(&v->items[k]);
        if (x > d) d = x;
    }
    return d + 1;
}

/* One step of build-time work more (cost of them); an error at pos -- or at the loop that is
 * running -- when the text has done too much. */
static sl_status step(parser *ps, sl__parse_pos pos, int64_t cost) {
    ps->steps += cost;
    if (ps->steps <= ps->step_limit) return SL_OK;
    if (ps->loop) pos = ps->loop->pos;
    return perr(ps, SL_EINVAL, pos,
                "the pipeline takes too long to build: over %lld steps%s (loops and helper "
                "calls run when the pipeline is built)",
                (long long)(ps->step_limit - (ps->nexprs + ps->nstmts)),
                ps->loop ? " in this loop" : "");
}

static sl_status eval(parser *ps, const expr *e, int want, result *r);

/* e as a plain constant (no op output, no dict): what names it in errors */
static sl_status eval_const(parser *ps, const expr *e, sl__val *out, const char *what) {
    result r;
    SL_TRY(eval(ps, e, 1, &r));
    if (has_node(&r.val) || r.dict) {
        result_free(&r);
        return perr(ps, SL_EINVAL, e->pos, "%s must be a constant, not %s", what,
                    r.dict ? "a dict" : "an op output");
    }
    *out = r.val;
    return SL_OK;
}

static sl_status copy_result(parser *ps, result *dst, const result *src, sl__parse_pos pos) {
    SL_TRY(step(ps, pos, val_cost(&src->val)));
    dst->dict = src->dict;
    return sl__val_copy(&dst->val, &src->val, ps->err);
}

static sl_status eval_name(parser *ps, const expr *e, result *r) {
    env_entry *v = env_find(ps, e->s);
    if (v && v->unbound)
        return perr(ps, SL_EINVAL, e->pos, "parameter '%s' is not bound; pass --arg %s=VALUE", e->s,
                    e->s);
    if (v) return copy_result(ps, r, &v->v, e->pos);
    const sl_pipeline_bind *b = bind_find(ps, e->s);
    if (b) return sl__parse_bind_value(b->value ? b->value : "", &r->val, ps->err);
    if (!strcmp(e->s, "fn") || !strcmp(e->s, "types") || !strcmp(e->s, "dali"))
        return perr(ps, SL_EINVAL, e->pos, "'%s' is a module, not a value", e->s);
    if (func_find(ps, e->s))
        return perr(ps, SL_EINVAL, e->pos, "'%s' is a function: call it, %s(...)", e->s, e->s);
    const char *s = suggest_name(ps, e->s);
    if (s)
        return perr(ps, SL_EINVAL, e->pos, "name '%s' is not defined; did you mean '%s'?", e->s, s);
    return perr(ps, SL_EINVAL, e->pos, "name '%s' is not defined; bind it with --arg %s=VALUE",
                e->s, e->s);
}

static bool numeric(const sl__val *v) {
    return v->kind == SL_VAL_INT || v->kind == SL_VAL_FLOAT || v->kind == SL_VAL_BOOL;
}
static double as_f(const sl__val *v) {
    return v->kind == SL_VAL_FLOAT ? v->f : v->kind == SL_VAL_BOOL ? (double)v->b : (double)v->i;
}
static int64_t as_i(const sl__val *v) {
    return v->kind == SL_VAL_BOOL ? v->b : v->i;
}

static const char *kind_name(const result *r) {
    if (r->dict) return "dict";
    switch (r->val.kind) {
    case SL_VAL_NONE:
        return "None";
    case SL_VAL_BOOL:
        return "bool";
    case SL_VAL_INT:
        return "int";
    case SL_VAL_FLOAT:
        return "float";
    case SL_VAL_STR:
        return "str";
    case SL_VAL_ENUM:
        return "constant";
    case SL_VAL_LIST:
        return has_node(&r->val) ? "list of op outputs" : "list";
    case SL_VAL_NODE:
        return "op output";
    }
    return "?";
}

static const char *val_kind_name(const sl__val *v) {
    result r = {*v, false};
    return kind_name(&r);
}

static void set_int(sl__val *v, int64_t i) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_INT;
    v->i = i;
    v->f = (double)i;
}
static void set_float(sl__val *v, double f) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_FLOAT;
    v->f = f;
}
static void set_bool(sl__val *v, bool b) {
    memset(v, 0, sizeof *v);
    v->kind = SL_VAL_BOOL;
    v->b = b;
    v->i = b;
}

static sl_status arith(parser *ps, const expr *e, const sl__val *a, const sl__val *b,
                       sl__val *out) {
    const char *op = e->op;
    if (a->kind == SL_VAL_STR && b->kind == SL_VAL_STR && !strcmp(op, "+")) {
        size_t la = strlen(a->s), lb = strlen(b->s);
        if (la + lb > SL__PARSE_CELLS_MAX)
            return perr(ps, SL_EINVAL, e->pos, "string too long (over %d bytes)",
                        SL__PARSE_CELLS_MAX);
        memset(out, 0, sizeof *out);
        out->kind = SL_VAL_STR;
        out->s = malloc(la + lb + 1);
        if (!out->s) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        memcpy(out->s, a->s, la);
        memcpy(out->s + la, b->s, lb + 1);
        return SL_OK;
    }
    if (!numeric(a) || !numeric(b))
        return perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s", op,
                    val_kind_name(a), val_kind_name(b));
    bool ints = a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT;
    if (!strcmp(op, "/") || !strcmp(op, "//") || !strcmp(op, "%")) {
        if (as_f(b) == 0.0) return perr(ps, SL_EINVAL, e->pos, "division by zero");
    }
    if (ints) {
        int64_t x = as_i(a), y = as_i(b), z = 0;
        bool ovf = false;
        if (!strcmp(op, "+"))
            ovf = __builtin_add_overflow(x, y, &z);
        else if (!strcmp(op, "-"))
            ovf = __builtin_sub_overflow(x, y, &z);
        else if (!strcmp(op, "*"))
            ovf = __builtin_mul_overflow(x, y, &z);
        else if (!strcmp(op, "/")) {
            set_float(out, (double)x / (double)y);
            return SL_OK;
        } else if (!strcmp(op, "//") || !strcmp(op, "%")) {
            if (x == INT64_MIN && y == -1) {
                ovf = !strcmp(op, "//");
                z = 0;
            } else {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) q--, m += y; /* Python floors */
                z = !strcmp(op, "//") ? q : m;
            }
        } else { /* ** */
            if (y < 0) {
                set_float(out, pow((double)x, (double)y));
                return SL_OK;
            }
            z = 1;
            for (int64_t k = 0; k < y && !ovf; k++) {
                ovf = __builtin_mul_overflow(z, x, &z);
                if (z == 0 || z == 1) break; /* 0**n, 1**n */
                if (x == -1) {
                    z = (y % 2) ? -1 : 1;
                    break;
                }
            }
        }
        if (ovf) return perr(ps, SL_EINVAL, e->pos, "integer overflow in '%s'", op);
        set_int(out, z);
        return SL_OK;
    }
    double x = as_f(a), y = as_f(b), z;
    if (!strcmp(op, "+"))
        z = x + y;
    else if (!strcmp(op, "-"))
        z = x - y;
    else if (!strcmp(op, "*"))
        z = x * y;
    else if (!strcmp(op, "/"))
        z = x / y;
    else if (!strcmp(op, "//"))
        z = floor(x / y);
    else if (!strcmp(op, "%")) {
        z = fmod(x, y);
        if (z != 0 && ((z < 0) != (y < 0))) z += y;
    } else
        z = pow(x, y);
    if (!isfinite(z)) return perr(ps, SL_EINVAL, e->pos, "the result of '%s' is not finite", op);
    set_float(out, z);
    return SL_OK;
}

static void stmt_clear(sl__parse_stmt *s) {
    free(s->inputs);
    free(s->input_pos);
    for (int i = 0; i < s->num_args; i++) sl__val_free(&s->args[i].val);
    free(s->args);
    memset(s, 0, sizeof *s);
}

static sl_status add_stmt(parser *ps, sl__parse_stmt *s, int outputs) {
    sl__parse_prog *prog = ps->prog;
    if (prog->num_stmts >= SL__PARSE_OPS_MAX)
        return perr(ps, SL_EINVAL, ps->loop ? ps->loop->pos : s->pos,
                    "too many operators: the pipeline would have over %d%s", SL__PARSE_OPS_MAX,
                    ps->loop ? " (this loop builds them)" : "");
    if (prog->num_stmts == ps->stmt_cap) {
        int cap = ps->stmt_cap ? 2 * ps->stmt_cap : 16;
        sl__parse_stmt *n = realloc(prog->stmts, (size_t)cap * sizeof *n);
        if (!n) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        prog->stmts = n;
        ps->stmt_cap = cap;
    }
    s->first_output = prog->num_nodes;
    s->num_outputs = outputs;
    prog->num_nodes += outputs;
    prog->stmts[prog->num_stmts++] = *s;
    memset(s, 0, sizeof *s);
    return SL_OK;
}

/* The result of a statement with outputs first .. first + want - 1: one node, or a list. */
static sl_status node_result(parser *ps, int first, int want, result *r) {
    memset(r, 0, sizeof *r);
    if (want == 1) {
        set_node(&r->val, first);
        return SL_OK;
    }
    r->val.kind = SL_VAL_LIST;
    if (!(r->val.items = calloc((size_t)want, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    r->val.n = want;
    for (int k = 0; k < want; k++) set_node(&r->val.items[k], first + k);
    return SL_OK;
}

/* Adds s with want outputs and sets r to them; s is cleared either way. */
static sl_status emit(parser *ps, sl__parse_stmt *s, int want, result *r) {
    int first = ps->prog->num_nodes;
    sl_status st = add_stmt(ps, s, want);
    if (st == SL_OK) st = node_result(ps, first, want, r);
    stmt_clear(s);
    return st;
}

/* + - * / with an op output on either side, or unary - of one (b NULL), as DALI's arithmetic
 * expressions: an `arithmetic` op statement, with the constant operand (if any) as its arguments --
 * a Python int as int32, a float as float32, as DALI types them. */
static sl_status arith_op(parser *ps, const expr *e, const result *a, const result *b, result *r) {
    static const struct {
        const char *symbol, *name;
    } ops[] = {{"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "fdiv"}};
    const char *name = NULL;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0] && b; k++)
        if (!strcmp(e->op, ops[k].symbol)) name = ops[k].name;
    if (!b) name = "minus"; /* unary - */
    if (!name)
        return perr(ps, SL_EINVAL, e->pos, "'%s' on op outputs is not supported (+ - * / are)",
                    e->op);
    if (ps->no_ops)
        return perr(ps, SL_EINVAL, e->pos, "arithmetic on op outputs cannot be used here");
    if ((!is_node(a) && has_node(&a->val)) || (b && !is_node(b) && has_node(&b->val)))
        return perr(ps, SL_EINVAL, e->pos,
                    "'%s' on several op outputs: unpack them first (a, b = ...)", b ? e->op : "-");
    const result *cst = !is_node(a) ? a : b && !is_node(b) ? b : NULL;
    if (cst && (cst->dict || cst->val.kind == SL_VAL_BOOL || !numeric(&cst->val)))
        return perr(ps, SL_EINVAL, cst == a ? e->a->pos : e->b->pos,
                    "unsupported operand type for '%s' with an op output: %s (int or float "
                    "wanted)",
                    e->op, kind_name(cst));
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = e->pos;
    snprintf(s.op, sizeof s.op, "arithmetic");
    snprintf(s.written, sizeof s.written, "'%s'", b ? e->op : "-");
    sl_status st = SL_OK;
    s.inputs = malloc(2 * sizeof *s.inputs);
    s.input_pos = malloc(2 * sizeof *s.input_pos);
    s.args = calloc(4, sizeof *s.args);
    if (!s.inputs || !s.input_pos || !s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        const result *x = k ? b : a;
        if (!x || !is_node(x)) continue;
        s.inputs[s.num_inputs] = x->val.node;
        s.input_pos[s.num_inputs++] = k ? e->b->pos : e->a->pos;
    }
    if (st == SL_OK) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "op");
        arg->pos = e->pos;
        arg->val.kind = SL_VAL_STR;
        if (!(arg->val.s = strdup(name))) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    if (st == SL_OK && cst) {
        sl__parse_arg *arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant");
        arg->pos = cst == a ? e->a->pos : e->b->pos;
        arg->val = cst->val; /* a number: nothing to own */
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_type");
        arg->pos = e->pos;
        arg->val.kind = SL_VAL_STR;
        arg->val.s = strdup(cst->val.kind == SL_VAL_FLOAT ? "float32" : "int32");
        if (!arg->val.s) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        arg = &s.args[s.num_args++];
        snprintf(arg->name, sizeof arg->name, "constant_left");
        arg->pos = e->pos;
        set_bool(&arg->val, cst == a);
    }
    if (st != SL_OK) {
        stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, 1, r);
}

/* A call's keyword arguments, **mappings expanded: names (owned by the arena or the values),
 * positions, values. */
typedef struct kwargs {
    int n;
    char **names; /* owned */
    sl__parse_pos *pos;
    result *vals;
} kwargs;

static void kwargs_free(kwargs *kw) {
    for (int k = 0; k < kw->n; k++) {
        result_free(&kw->vals[k]);
        free(kw->names[k]);
    }
    free(kw->names);
    free(kw->pos);
    free(kw->vals);
    memset(kw, 0, sizeof kw[0]);
}

static sl_status kwargs_add(parser *ps, kwargs *kw, const char *name, sl__parse_pos pos,
                            result *v) {
    for (int k = 0; k < kw->n; k++)
        if (!strcmp(kw->names[k], name)) {
            result_free(v);
            return perr(ps, SL_EINVAL, pos, "keyword argument repeated: %s", name);
        }
    if (kw->n >= SL__PARSE_KWARGS_MAX) {
        result_free(v);
        return perr(ps, SL_EINVAL, pos, "too many keyword arguments (over %d)",
                    SL__PARSE_KWARGS_MAX);
    }
    char *owned = strdup(name);
    if (!owned) {
        result_free(v);
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    if ((kw->n & (kw->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        size_t cap = kw->n ? 2 * (size_t)kw->n : 1;
        char **nn = realloc(kw->names, cap * sizeof *nn);
        if (nn) kw->names = nn;
        sl__parse_pos *np = nn ? realloc(kw->pos, cap * sizeof *np) : NULL;
        if (np) kw->pos = np;
        result *nv = np ? realloc(kw->vals, cap * sizeof *nv) : NULL;
        if (!nv) {
            free(owned);
            result_free(v);
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        }
        kw->vals = nv;
    }
    kw->names[kw->n] = owned;
    kw->pos[kw->n] = pos;
    kw->vals[kw->n++] = *v;
    memset(v, 0, sizeof *v);
    return SL_OK;
}

/* Evaluates e's keyword arguments in order into kw (freed on error). */
static sl_status eval_kwargs(parser *ps, const expr *e, kwargs *kw) {
    memset(kw, 0, sizeof *kw);
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        result v;
        st = eval(ps, e->kwvals[k], 1, &v);
        if (st != SL_OK) break;
        if (e->kwnames[k]) {
            st = kwargs_add(ps, kw, e->kwnames[k], e->kwpos[k], &v);
            continue;
        }
        if (!v.dict) { /* **mapping */
            st = perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                      "'**' needs a dict (a dict literal, or a name bound to one), not %s",
                      kind_name(&v));
            result_free(&v);
            break;
        }
        for (int j = 0; j < v.val.n && st == SL_OK; j++) {
            sl__val *pair = &v.val.items[j];
            result item = {pair->items[1], false};
            memset(&pair->items[1], 0, sizeof pair->items[1]);
            st = kwargs_add(ps, kw, pair->items[0].s, e->kwpos[k], &item);
        }
        result_free(&v);
    }
    if (st != SL_OK) kwargs_free(kw);
    return st;
}

/* The callee as a dotted name into name when it is fn.<op>, dali.fn.<op> or nvidia.dali.fn.<op>. */
static bool op_callee(const expr *callee, char *name, size_t size) {
    char local[256];
    if (!name) name = local, size = sizeof local;
    return dotted(callee, name, size) && (has_prefix(name, "fn.") || has_prefix(name, "dali.fn.") ||
                                          has_prefix(name, "nvidia.dali.fn."));
}

static sl_status call_unsupported(parser *ps, const expr *e) {
    char name[256];
    if (dotted(e->a, name, sizeof name))
        return perr(ps, SL_EINVAL, e->pos,
                    "unsupported call '%s(...)': only fn.<operator>(...), .gpu()/.cpu(), "
                    "range(), len() and functions defined in the text can be called",
                    name);
    return perr(ps, SL_EINVAL, e->pos,
                "unsupported call: only fn.<operator>(...), .gpu()/.cpu(), range(), len() and "
                "functions defined in the text can be called");
}

/* fn.<op>(inputs..., kw=...) */
static sl_status eval_op(parser *ps, const expr *e, int want, result *r) {
    if (ps->no_ops) return perr(ps, SL_EINVAL, e->pos, "an operator cannot be called here");
    char name[256];
    if (!op_callee(e->a, name, sizeof name)) return call_unsupported(ps, e);
    sl__parse_stmt s;
    memset(&s, 0, sizeof s);
    s.kind = SL__PARSE_OP;
    s.pos = e->pos;
    const char *bare = name;
    if (has_prefix(bare, "nvidia.dali.")) bare += strlen("nvidia.dali.");
    if (has_prefix(bare, "dali.")) bare += strlen("dali.");
    bare += strlen("fn.");
    if (strlen(name) >= sizeof s.written)
        return perr(ps, SL_EINVAL, e->pos, "operator name too long");
    memcpy(s.written, name, strlen(name) + 1); /* bare is a tail of name: it fits too */
    memcpy(s.op, bare, strlen(bare) + 1);
    sl_status st = SL_OK;
    if (e->n) {
        s.inputs = malloc((size_t)e->n * sizeof *s.inputs);
        s.input_pos = malloc((size_t)e->n * sizeof *s.input_pos);
        if (!s.inputs || !s.input_pos) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        result in;
        st = eval(ps, e->items[k], 1, &in);
        if (st != SL_OK) break;
        if (!is_node(&in)) {
            st = perr(ps, SL_EINVAL, e->items[k]->pos,
                      has_node(&in.val)
                          ? "input %d of %s is several op outputs: unpack them (a, b = ...) and "
                            "pass one"
                          : "input %d of %s must be an op output; constants are not supported as "
                            "inputs",
                      k, name);
            result_free(&in);
            break;
        }
        s.inputs[s.num_inputs] = in.val.node;
        s.input_pos[s.num_inputs++] = e->items[k]->pos;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = eval_kwargs(ps, e, &kw);
    if (st == SL_OK && kw.n) {
        s.args = calloc((size_t)kw.n, sizeof *s.args);
        if (!s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        result *v = &kw.vals[k];
        if (v->dict || (!is_node(v) && has_node(&v->val))) {
            st = perr(ps, SL_EINVAL, kw.pos[k], "argument %s: %s is not supported as an argument",
                      kw.names[k], v->dict ? "a dict" : "a list of op outputs");
            break;
        }
        if (!strcmp(kw.names[k], "device")) {
            sl__parse_pos at = kw.pos[k]; /* the value, when written device=... */
            for (int j = 0; j < e->nkw; j++)
                if (e->kwnames[j] && !strcmp(e->kwnames[j], "device")) at = e->kwvals[j]->pos;
            const char *d = v->val.kind == SL_VAL_STR ? v->val.s : NULL;
            if (!d || (strcmp(d, "cpu") && strcmp(d, "gpu") && strcmp(d, "mixed"))) {
                st = perr(ps, SL_EINVAL, at, "device must be \"cpu\", \"mixed\" or \"gpu\"");
                break;
            }
            snprintf(s.device, sizeof s.device, "%s", d);
            s.device_pos = at;
            continue;
        }
        sl__parse_arg *a = &s.args[s.num_args++];
        snprintf(a->name, sizeof a->name, "%s", kw.names[k]);
        a->pos = kw.pos[k];
        a->val = v->val;
        memset(&v->val, 0, sizeof v->val);
    }
    kwargs_free(&kw);
    if (st != SL_OK) {
        stmt_clear(&s);
        return st;
    }
    return emit(ps, &s, want, r);
}

static sl_status exec_block(parser *ps, const block *b);

/* Runs f's body for a call (e), with a scope of its own; r: its return value (None without). */
static sl_status call_func(parser *ps, func *f, const expr *e, int want, result *r) {
    if (f->active)
        return perr(ps, SL_EINVAL, e->pos,
                    "recursion is not supported in a pipeline: '%s' is called while it runs (line "
                    "%d); the pipeline is unrolled when it is built",
                    f->name, f->pos.line);
    if (ps->calls >= SL__PARSE_CALLS_MAX)
        return perr(ps, SL_EINVAL, e->pos, "helper calls nested too deeply (over %d)",
                    SL__PARSE_CALLS_MAX);
    if (e->n > f->nparams)
        return perr(ps, SL_EINVAL, e->items[f->nparams]->pos,
                    "%s() takes %d positional argument%s but %d were given", f->name, f->nparams,
                    f->nparams == 1 ? "" : "s", e->n);
    result args[SL__PARSE_PARAMS_MAX];
    bool given[SL__PARSE_PARAMS_MAX] = {false};
    memset(args, 0, sizeof args);
    sl_status st = SL_OK;
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        st = eval(ps, e->items[k], 1, &args[k]);
        given[k] = st == SL_OK;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = eval_kwargs(ps, e, &kw);
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        int p = 0;
        while (p < f->nparams && strcmp(f->params[p], kw.names[k])) p++;
        if (p == f->nparams) {
            st = perr(ps, SL_EINVAL, kw.pos[k], "%s() got an unexpected keyword argument '%s'",
                      f->name, kw.names[k]);
        } else if (given[p]) {
            st = perr(ps, SL_EINVAL, kw.pos[k], "%s() got multiple values for argument '%s'",
                      f->name, kw.names[k]);
        } else {
            args[p] = kw.vals[k];
            memset(&kw.vals[k], 0, sizeof kw.vals[k]);
            given[p] = true;
        }
    }
    kwargs_free(&kw);
    /* defaults: constants, evaluated in the module's scope when the call needs them */
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        if (given[p]) continue;
        if (!f->defaults[p]) {
            st = perr(ps, SL_EINVAL, e->pos, "%s() missing argument '%s'", f->name, f->params[p]);
            break;
        }
        scope *saved = ps->local;
        bool no_ops = ps->no_ops;
        ps->local = NULL;
        ps->no_ops = true;
        st = eval_const(ps, f->defaults[p], &args[p].val, "a default");
        ps->local = saved;
        ps->no_ops = no_ops;
        given[p] = st == SL_OK;
    }
    scope sc;
    memset(&sc, 0, sizeof sc);
    scope *saved = ps->local;
    ps->local = &sc;
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        env_entry *v = env_set(ps, f->params[p]);
        if (!v) {
            st = SL_ENOMEM;
            break;
        }
        v->v = args[p];
        memset(&args[p], 0, sizeof args[p]);
    }
    for (int p = 0; p < SL__PARSE_PARAMS_MAX; p++) result_free(&args[p]);
    frame fr, *saved_fr = ps->fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = f;
    fr.want = want;
    const stmt *saved_loop = ps->loop;
    if (st == SL_OK) {
        ps->fr = &fr;
        ps->loop = NULL;
        f->active = true;
        ps->calls++;
        st = exec_block(ps, &f->body);
        ps->calls--;
        f->active = false;
        ps->flow = FLOW_NEXT;
    }
    ps->fr = saved_fr;
    ps->loop = saved_loop;
    ps->local = saved;
    scope_free(&sc);
    if (st != SL_OK) {
        result_free(&fr.ret);
        return st;
    }
    *r = fr.ret; /* None when it did not return */
    return SL_OK;
}

/* range(stop) / range(start, stop[, step]) from e's arguments. */
static sl_status range_args(parser *ps, const expr *e, int64_t *start, int64_t *stop,
                            int64_t *stepv) {
    if (e->nkw || e->n < 1 || e->n > 3)
        return perr(ps, SL_EINVAL, e->pos, "range() takes 1 to 3 positional integers");
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < e->n; k++) {
        sl__val x;
        SL_TRY(eval_const(ps, e->items[k], &x, "a range() argument"));
        bool ok = x.kind == SL_VAL_INT || x.kind == SL_VAL_BOOL;
        int64_t i = as_i(&x);
        sl__val_free(&x);
        if (!ok) return perr(ps, SL_EINVAL, e->items[k]->pos, "range() arguments must be integers");
        v[e->n == 1 ? 1 : k] = i;
    }
    *start = v[0];
    *stop = v[1];
    *stepv = v[2];
    if (*stepv == 0) return perr(ps, SL_EINVAL, e->items[2]->pos, "range() step must not be zero");
    return SL_OK;
}

static uint64_t range_len(int64_t start, int64_t stop, int64_t stepv) {
    if (stepv > 0 && start < stop)
        return ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)stepv + 1;
    if (stepv < 0 && start > stop)
        return ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)stepv) + 1;
    return 0;
}

/* range(...) as a list (outside a for loop), len(x) */
static sl_status eval_builtin(parser *ps, const expr *e, const char *name, result *r) {
    memset(r, 0, sizeof *r);
    if (!strcmp(name, "range")) {
        int64_t a, b, s;
        SL_TRY(range_args(ps, e, &a, &b, &s));
        uint64_t n = range_len(a, b, s);
        if (n > SL__PARSE_CELLS_MAX)
            return perr(ps, SL_EINVAL, e->pos, "range() too long for a list (over %d items)",
                        SL__PARSE_CELLS_MAX);
        SL_TRY(step(ps, e->pos, (int64_t)n));
        r->val.kind = SL_VAL_LIST;
        if (n && !(r->val.items = calloc(n, sizeof *r->val.items)))
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        r->val.n = (int)n;
        for (uint64_t k = 0; k < n; k++) set_int(&r->val.items[k], a + (int64_t)k * s);
        return SL_OK;
    }
    /* len */
    if (e->nkw || e->n != 1) return perr(ps, SL_EINVAL, e->pos, "len() takes one argument");
    result x;
    SL_TRY(eval(ps, e->items[0], 1, &x));
    int64_t n = -1;
    if (x.val.kind == SL_VAL_LIST) n = x.val.n;
    if (x.val.kind == SL_VAL_STR && !x.dict) n = (int64_t)strlen(x.val.s);
    sl_status st = SL_OK;
    if (n < 0)
        st = perr(ps, SL_EINVAL, e->items[0]->pos,
                  "len() of %s is not known when the pipeline "
                  "is built",
                  kind_name(&x));
    else
        set_int(&r->val, n);
    result_free(&x);
    return st;
}

static sl_status eval_call(parser *ps, const expr *e, int want, result *r) {
    const expr *callee = e->a;
    if (op_callee(callee, NULL, 0)) return eval_op(ps, e, want, r);
    if (callee->kind == E_NAME) {
        func *f = func_find(ps, callee->s);
        if (f) return call_func(ps, f, e, want, r);
        if ((!strcmp(callee->s, "range") || !strcmp(callee->s, "len")) && !env_find(ps, callee->s))
            return eval_builtin(ps, e, callee->s, r);
    }
    if (callee->kind == E_ATTR && (!strcmp(callee->s, "gpu") || !strcmp(callee->s, "cpu"))) {
        if (e->n || e->nkw)
            return perr(ps, SL_EINVAL, callee->npos, ".%s() takes no arguments", callee->s);
        if (ps->no_ops)
            return perr(ps, SL_EINVAL, callee->npos, ".%s() cannot be used here", callee->s);
        result base;
        SL_TRY(eval(ps, callee->a, 1, &base));
        if (!is_node(&base)) {
            result_free(&base);
            return perr(ps, SL_EINVAL, callee->npos, ".%s() needs an op output", callee->s);
        }
        if (want != 1)
            return perr(ps, SL_EINVAL, e->pos, ".%s() gives one value, not %d", callee->s, want);
        sl__parse_stmt s;
        memset(&s, 0, sizeof s);
        s.kind = SL__PARSE_TRANSFER;
        s.pos = callee->npos;
        snprintf(s.op, sizeof s.op, "%s", callee->s);
        snprintf(s.written, sizeof s.written, ".%s()", callee->s);
        s.to = !strcmp(callee->s, "gpu") ? SL_DEVICE_CUDA : SL_DEVICE_CPU;
        s.inputs = malloc(sizeof *s.inputs);
        s.input_pos = malloc(sizeof *s.input_pos);
        if (!s.inputs || !s.input_pos) {
            stmt_clear(&s);
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        }
        s.inputs[0] = base.val.node;
        s.input_pos[0] = callee->a->pos;
        s.num_inputs = 1;
        return emit(ps, &s, 1, r);
    }
    return call_unsupported(ps, e);
}

/* Python's truth of a constant; op outputs and dicts are refused (what: "if", "and", ...) */
static sl_status truth(parser *ps, const expr *at, const result *v, const char *what, bool *out) {
    if (has_node(&v->val))
        return perr(ps, SL_EINVAL, at->pos,
                    "'%s' on an op output: conditions on data are not supported (they are "
                    "decided when the pipeline is built, from constants and --arg values; "
                    "DALI's enable_conditionals is not supported)",
                    what);
    const sl__val *x = &v->val;
    switch (x->kind) {
    case SL_VAL_NONE:
        *out = false;
        break;
    case SL_VAL_BOOL:
        *out = x->b;
        break;
    case SL_VAL_INT:
        *out = x->i != 0;
        break;
    case SL_VAL_FLOAT:
        *out = x->f != 0.0;
        break;
    case SL_VAL_STR:
        *out = x->s && x->s[0];
        break;
    case SL_VAL_LIST:
        *out = x->n > 0;
        break;
    default:
        *out = true;
    }
    return SL_OK;
}

static bool val_equal(const sl__val *a, const sl__val *b) {
    if (numeric(a) && numeric(b)) {
        if (a->kind != SL_VAL_FLOAT && b->kind != SL_VAL_FLOAT) return as_i(a) == as_i(b);
        return as_f(a) == as_f(b);
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case SL_VAL_NONE:
        return true;
    case SL_VAL_STR:
    case SL_VAL_ENUM:
        return !strcmp(a->s, b->s);
    case SL_VAL_LIST:
        if (a->n != b->n) return false;
        for (int k = 0; k < a->n; k++)
            if (!val_equal(&a->items[k], &b->items[k])) return false;
        return true;
    default:
        return false;
    }
}

/* a <op> b for constants */
static sl_status compare(parser *ps, const expr *e, int k, const result *a, const result *b,
                         bool *out) {
    static const char *const names[] = {
        "==", "!=", "<", ">", "<=", ">=", "in", "not in", "is", "is not"};
    static const int order[] = {0, 1, 2, 4, 3, 5, 6, 7, 8, 9}; /* C_* -> names */
    int op = e->cops[k];
    const char *sym = names[order[op]];
    if (has_node(&a->val) || has_node(&b->val))
        return perr(ps, SL_EINVAL, e->items[has_node(&a->val) ? k : k + 1]->pos,
                    "'%s' on an op output: comparisons of data are not supported (conditions are "
                    "decided when the pipeline is built, from constants and --arg values)",
                    sym);
    if (a->dict || b->dict)
        return perr(ps, SL_EINVAL, e->items[a->dict ? k : k + 1]->pos,
                    "'%s' on a dict is not supported", sym);
    const sl__val *x = &a->val, *y = &b->val;
    switch (op) {
    case C_EQ:
    case C_NE:
        *out = val_equal(x, y) == (op == C_EQ);
        return SL_OK;
    case C_IS:
    case C_IS_NOT: /* identity is equality for the singletons None, True, False */
        *out = (x->kind == y->kind && val_equal(x, y)) == (op == C_IS);
        if (x->kind == SL_VAL_NONE || y->kind == SL_VAL_NONE || x->kind == SL_VAL_BOOL ||
            y->kind == SL_VAL_BOOL)
            return SL_OK;
        return perr(ps, SL_EINVAL, e->pos, "'%s' is only supported against None, True or False",
                    sym);
    case C_IN:
    case C_NOT_IN:
        if (y->kind == SL_VAL_LIST) {
            bool found = false;
            for (int j = 0; j < y->n && !found; j++) found = val_equal(x, &y->items[j]);
            *out = found == (op == C_IN);
            return SL_OK;
        }
        if (y->kind == SL_VAL_STR && x->kind == SL_VAL_STR) {
            *out = (strstr(y->s, x->s) != NULL) == (op == C_IN);
            return SL_OK;
        }
        return perr(ps, SL_EINVAL, e->items[k + 1]->pos,
                    "'%s' needs a list, a tuple or a string on its right, not %s", sym,
                    kind_name(b));
    default:
        break;
    }
    int c;
    if (numeric(x) && numeric(y)) {
        if (x->kind != SL_VAL_FLOAT && y->kind != SL_VAL_FLOAT)
            c = as_i(x) < as_i(y) ? -1 : as_i(x) > as_i(y);
        else
            c = as_f(x) < as_f(y) ? -1 : as_f(x) > as_f(y);
    } else if (x->kind == SL_VAL_STR && y->kind == SL_VAL_STR) {
        c = strcmp(x->s, y->s);
    } else {
        return perr(ps, SL_EINVAL, e->pos, "'%s' not supported between %s and %s", sym,
                    kind_name(a), kind_name(b));
    }
    *out = op == C_LT ? c < 0 : op == C_LE ? c <= 0 : op == C_GT ? c > 0 : c >= 0;
    return SL_OK;
}

static sl_status eval_logic(parser *ps, const expr *e, result *r) {
    if (e->kind == E_NOT) {
        result a;
        bool t;
        SL_TRY(eval(ps, e->a, 1, &a));
        sl_status st = truth(ps, e->a, &a, "not", &t);
        result_free(&a);
        if (st == SL_OK) set_bool(&r->val, !t);
        return st;
    }
    if (e->kind == E_AND || e->kind == E_OR) { /* the deciding operand, as Python */
        SL_TRY(eval(ps, e->a, 1, r));
        bool t;
        sl_status st = truth(ps, e->a, r, e->kind == E_AND ? "and" : "or", &t);
        if (st != SL_OK || t == (e->kind == E_OR)) {
            if (st != SL_OK) result_free(r);
            return st;
        }
        result_free(r);
        return eval(ps, e->b, 1, r);
    }
    if (e->kind == E_IFEXP) { /* only the branch taken is built */
        result c;
        bool t;
        SL_TRY(eval(ps, e->c, 1, &c));
        sl_status st = truth(ps, e->c, &c, "if", &t);
        result_free(&c);
        if (st != SL_OK) return st;
        return eval(ps, t ? e->a : e->b, 1, r);
    }
    /* E_CMP: a chain, each operand evaluated once, stopping at the first false */
    result a, b;
    SL_TRY(eval(ps, e->items[0], 1, &a));
    bool t = true;
    sl_status st = SL_OK;
    for (int k = 0; k + 1 < e->n && t; k++) {
        st = eval(ps, e->items[k + 1], 1, &b);
        if (st != SL_OK) break;
        st = compare(ps, e, k, &a, &b, &t);
        result_free(&a);
        a = b;
        if (st != SL_OK) break;
    }
    result_free(&a);
    if (st == SL_OK) set_bool(&r->val, t);
    return st;
}

/* [items] / (items) / {k: v}: a constant list of the values, checked for size */
static sl_status eval_items(parser *ps, const expr *e, result *r) {
    bool dict = e->kind == E_DICT;
    r->val.kind = SL_VAL_LIST;
    r->dict = dict;
    if (e->n && !(r->val.items = calloc((size_t)e->n, sizeof *r->val.items)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    sl_status st = SL_OK;
    int64_t cells = 1;
    int depth = 1;
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        result it, v;
        memset(&v, 0, sizeof v);
        st = eval(ps, e->items[k], 1, &it);
        if (st == SL_OK && dict) {
            if (it.dict || it.val.kind != SL_VAL_STR)
                st = perr(ps, SL_EINVAL, e->items[k]->pos,
                          "dict keys must be strings (they become keyword names), not %s",
                          kind_name(&it));
            else if (it.val.s[0] == '\0' || strlen(it.val.s) >= SL__PARSE_NAME_MAX)
                st = perr(ps, SL_EINVAL, e->items[k]->pos, "bad keyword name in the dict");
            for (int j = 0; j < k && st == SL_OK; j++)
                if (!strcmp(r->val.items[j].items[0].s, it.val.s))
                    st = perr(ps, SL_EINVAL, e->items[k]->pos, "dict key repeated: '%s'", it.val.s);
            if (st == SL_OK) st = eval(ps, e->kwvals[k], 1, &v);
            if (st == SL_OK && v.dict)
                st = perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                          "a dict inside a dict is not "
                          "supported");
            if (st != SL_OK) {
                result_free(&it);
                result_free(&v);
                break;
            }
        } else if (st == SL_OK && it.dict) {
            st = perr(ps, SL_EINVAL, e->items[k]->pos,
                      "a dict inside a list is not supported (dicts are for ** arguments)");
            result_free(&it);
        }
        if (st != SL_OK) break;
        sl__val *slot = &r->val.items[r->val.n++];
        if (dict) { /* [key, value] */
            slot->kind = SL_VAL_LIST;
            if (!(slot->items = calloc(2, sizeof *slot->items))) {
                result_free(&it);
                result_free(&v);
                st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
                break;
            }
            slot->n = 2;
            slot->items[0] = it.val;
            slot->items[1] = v.val;
        } else {
            *slot = it.val;
        }
        cells += val_cost(slot);
        int d = val_depth(slot) + 1;
        if (d > depth) depth = d;
        if (cells > SL__PARSE_CELLS_MAX)
            st =
                perr(ps, SL_EINVAL, e->pos, "value too large (over %d items)", SL__PARSE_CELLS_MAX);
        else if (depth > SL__PARSE_DEPTH_MAX)
            st = perr(ps, SL_EINVAL, e->pos, "lists nested too deeply (over %d levels)",
                      SL__PARSE_DEPTH_MAX);
    }
    if (st != SL_OK) result_free(r);
    return st;
}

/* types.X constants; anything else with a dot is an error naming what it is */
static sl_status eval_attr(parser *ps, const expr *e, result *r) {
    char name[256];
    if (dotted(e, name, sizeof name)) {
        if (types_name(name)) {
            r->val.kind = SL_VAL_ENUM;
            if (!(r->val.s = strdup(strrchr(name, '.') + 1)))
                return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return SL_OK;
        }
        if (has_prefix(name, "fn.") || has_prefix(name, "dali.fn."))
            return perr(ps, SL_EINVAL, e->pos, "'%s' is an operator: call it, %s(...)", name, name);
        const expr *root = e;
        while (root->kind == E_ATTR) root = root->a;
        if (!env_find(ps, root->s) && !bind_find(ps, root->s) && strcmp(root->s, "types"))
            return eval_name(ps, root, r); /* names the undefined root */
    }
    if (!strcmp(e->s, "gpu") || !strcmp(e->s, "cpu"))
        return perr(ps, SL_EINVAL, e->npos, "'.%s' is a method: call it, .%s()", e->s, e->s);
    return perr(ps, SL_EINVAL, e->npos,
                "unsupported attribute '.%s': only types.* constants can be used here", e->s);
}

static sl_status eval(parser *ps, const expr *e, int want, result *r) {
    memset(r, 0, sizeof *r);
    SL_TRY(step(ps, e->pos, 1));
    if (e->kind == E_CALL) return eval_call(ps, e, want, r);
    sl_status st = SL_OK;
    switch (e->kind) {
    case E_INT:
        set_int(&r->val, e->i);
        return SL_OK;
    case E_FLOAT:
        set_float(&r->val, e->f);
        return SL_OK;
    case E_TRUE:
    case E_FALSE:
        set_bool(&r->val, e->kind == E_TRUE);
        return SL_OK;
    case E_NONE:
        return SL_OK;
    case E_STR:
        r->val.kind = SL_VAL_STR;
        if (!(r->val.s = strdup(e->s))) return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return SL_OK;
    case E_NAME:
        return eval_name(ps, e, r);
    case E_ATTR:
        return eval_attr(ps, e, r);
    case E_NEG:
    case E_POS: {
        result a;
        SL_TRY(eval(ps, e->a, 1, &a));
        if (is_node(&a) && e->kind == E_POS) { /* +x is x */
            *r = a;
            return SL_OK;
        }
        if (has_node(&a.val)) {
            st = arith_op(ps, e, &a, NULL, r);
            result_free(&a);
            return st;
        }
        if (a.dict || !numeric(&a.val)) {
            st = perr(ps, SL_EINVAL, e->pos, "bad operand type for unary %c: %s",
                      e->kind == E_NEG ? '-' : '+', kind_name(&a));
            result_free(&a);
            return st;
        }
        if (e->kind == E_POS) {
            if (a.val.kind == SL_VAL_BOOL) set_int(&a.val, a.val.b);
        } else if (a.val.kind == SL_VAL_FLOAT) {
            a.val.f = -a.val.f;
        } else {
            int64_t x = as_i(&a.val);
            if (x == INT64_MIN) return perr(ps, SL_EINVAL, e->pos, "integer overflow in '-'");
            set_int(&a.val, -x);
        }
        *r = a;
        return SL_OK;
    }
    case E_BIN: {
        result a, b;
        SL_TRY(eval(ps, e->a, 1, &a));
        st = eval(ps, e->b, 1, &b);
        if (st != SL_OK) {
            result_free(&a);
            return st;
        }
        if (has_node(&a.val) || has_node(&b.val))
            st = arith_op(ps, e, &a, &b, r);
        else if (a.dict || b.dict)
            st = perr(ps, SL_EINVAL, e->pos, "unsupported operand types for %s: %s and %s", e->op,
                      kind_name(&a), kind_name(&b));
        else
            st = arith(ps, e, &a.val, &b.val, &r->val);
        result_free(&a);
        result_free(&b);
        return st;
    }
    case E_LIST:
    case E_TUPLE:
    case E_DICT:
        return eval_items(ps, e, r);
    case E_AND:
    case E_OR:
    case E_NOT:
    case E_CMP:
    case E_IFEXP:
        return eval_logic(ps, e, r);
    case E_CALL:
        break;
    }
    return SL_OK;
}

/* ---- statements: parsing ----------------------------------------------------------------------
 */

static sl_status skip_import(parser *ps) {
    /* import a.b [as c], ... | from a.b import (x, y) | from a import * */
    while (tok(ps)->kind != T_NEWLINE && tok(ps)->kind != T_END) {
        token *t = tok(ps);
        if (!(t->kind == T_NAME || is_op(t, ".") || is_op(t, ",") || is_op(t, "*") ||
              is_op(t, "(") || is_op(t, ")"))) {
            char b[64];
            return perr(ps, SL_ESYNTAX, t->pos, "unexpected %s in an import line",
                        tok_desc(t, b, sizeof b));
        }
        next(ps);
    }
    return expect_newline(ps);
}

static stmt *new_stmt(parser *ps, skind kind, sl__parse_pos pos) {
    stmt *s = arena_alloc(ps, sizeof *s);
    if (s) {
        s->kind = kind;
        s->pos = pos;
    }
    return s;
}

/* Appends s to b; nothing may follow a return, break or continue in the same block (it would
 * never run). */
static sl_status push_stmt(parser *ps, block *b, stmt *s) {
    if (!s) return SL_ENOMEM;
    if (b->n && s->kind != S_DEF) {
        skind last = b->items[b->n - 1]->kind;
        if (last == S_RETURN || last == S_BREAK || last == S_CONTINUE)
            return perr(ps, SL_ESYNTAX, s->pos, "statement after %s",
                        last == S_RETURN  ? "return"
                        : last == S_BREAK ? "break"
                                          : "continue");
    }
    ps->nstmts++;
    return arena_push(ps, (void **)&b->items, &b->n, sizeof s, &s) ? SL_OK : SL_ENOMEM;
}

static sl_status parse_stmt(parser *ps, block *b, bool top, bool inline_suite);

/* The statements of an indented block, after its INDENT, up to and including its DEDENT. */
static sl_status parse_block_body(parser *ps, block *b) {
    for (;;) {
        token *t = tok(ps);
        if (t->kind == T_DEDENT) {
            next(ps);
            return SL_OK;
        }
        if (t->kind == T_END) return SL_OK;
        if (t->kind == T_NEWLINE) {
            next(ps);
            continue;
        }
        if (t->kind == T_INDENT) return perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, b, false, false));
    }
}

/* After the ':' of a compound statement: an indented block, or one simple statement on the same
 * line. */
static sl_status parse_suite(parser *ps, block *b, const char *after) {
    if (tok(ps)->kind != T_NEWLINE) return parse_stmt(ps, b, false, true);
    next(ps);
    if (tok(ps)->kind != T_INDENT)
        return perr(ps, SL_ESYNTAX, tok(ps)->pos, "expected an indented block after %s", after);
    next(ps);
    return parse_block_body(ps, b);
}

static sl_status parse_if(parser *ps, block *b) {
    stmt *s = new_stmt(ps, S_IF, tok(ps)->pos);
    if (!s) return SL_ENOMEM;
    int nb = 0;
    for (;;) { /* if / elif */
        next(ps);
        expr *c;
        SL_TRY(parse_expr(ps, &c));
        SL_TRY(expect_op(ps, ":", "after the condition"));
        block body = {0, NULL};
        SL_TRY(parse_suite(ps, &body, "the condition"));
        int n = s->ncond;
        if (!arena_push(ps, (void **)&s->conds, &s->ncond, sizeof c, &c) ||
            !arena_push(ps, (void **)&s->bodies, &n, sizeof body, &body))
            return SL_ENOMEM;
        nb = n;
        if (!is_name(tok(ps), "elif")) break;
    }
    block other = {0, NULL};
    if (is_name(tok(ps), "else")) {
        next(ps);
        SL_TRY(expect_op(ps, ":", "after 'else'"));
        SL_TRY(parse_suite(ps, &other, "'else'"));
    }
    if (!arena_push(ps, (void **)&s->bodies, &nb, sizeof other, &other)) return SL_ENOMEM;
    return push_stmt(ps, b, s);
}

/* A for loop's or an assignment's targets: a name, or names to unpack (a, b / (a, b) / [a, b]). */
static sl_status check_targets(parser *ps, const expr *lhs, const char *what) {
    const expr *const *targets = &lhs;
    int n = 1;
    if (lhs->kind == E_TUPLE || lhs->kind == E_LIST) {
        targets = (const expr *const *)lhs->items;
        n = lhs->n;
    }
    if (n == 0) return perr(ps, SL_ESYNTAX, lhs->pos, "cannot assign to ()");
    if (n > SL_MAX_OUTPUTS) return perr(ps, SL_EINVAL, lhs->pos, "too many names");
    for (int k = 0; k < n; k++) {
        if (targets[k]->kind != E_NAME)
            return perr(ps, SL_ESYNTAX, targets[k]->pos, "cannot assign to this expression; %s",
                        what);
        for (int j = 0; j < k; j++)
            if (!strcmp(targets[j]->s, targets[k]->s))
                return perr(ps, SL_EINVAL, targets[k]->pos, "'%s' is assigned twice",
                            targets[k]->s);
    }
    return SL_OK;
}

static sl_status parse_for(parser *ps, block *b) {
    stmt *s = new_stmt(ps, S_FOR, tok(ps)->pos);
    if (!s) return SL_ENOMEM;
    next(ps);
    /* targets: primaries separated by commas, up to 'in' (an expression would read 'in') */
    SL_TRY(parse_primary(ps, &s->lhs));
    if (is_op(tok(ps), ",")) {
        expr *t = new_expr(ps, E_TUPLE, s->lhs->pos);
        if (!t || !arena_push(ps, (void **)&t->items, &t->n, sizeof s->lhs, &s->lhs))
            return SL_ENOMEM;
        while (is_op(tok(ps), ",")) {
            next(ps);
            if (is_name(tok(ps), "in")) break;
            expr *v;
            SL_TRY(parse_primary(ps, &v));
            if (!arena_push(ps, (void **)&t->items, &t->n, sizeof v, &v)) return SL_ENOMEM;
        }
        s->lhs = t;
    }
    SL_TRY(
        check_targets(ps, s->lhs, "a for loop assigns to names (for x in ..., for a, b in ...)"));
    if (!is_name(tok(ps), "in")) {
        char d[64];
        return perr(ps, SL_ESYNTAX, tok(ps)->pos, "expected 'in' in the for loop, got %s",
                    tok_desc(tok(ps), d, sizeof d));
    }
    next(ps);
    SL_TRY(parse_exprlist(ps, &s->rhs));
    SL_TRY(expect_op(ps, ":", "at the end of the for line"));
    ps->loops++;
    sl_status st = parse_suite(ps, &s->body, "the for line");
    ps->loops--;
    if (st != SL_OK) return st;
    return push_stmt(ps, b, s);
}

/* def name(params): body -- at the module level only; deco: its decorator or NULL. */
static sl_status parse_def(parser *ps, block *b, expr *deco) {
    stmt *s = new_stmt(ps, S_DEF, tok(ps)->pos);
    func *f = arena_alloc(ps, sizeof *f);
    if (!s || !f) return SL_ENOMEM;
    s->fn = f;
    f->deco = deco;
    next(ps);
    token *n = tok(ps);
    char d[64];
    if (n->kind != T_NAME || is_keyword(n))
        return perr(ps, SL_ESYNTAX, n->pos, "expected the function's name, got %s",
                    tok_desc(n, d, sizeof d));
    if (n->len >= (int)sizeof f->name) return perr(ps, SL_ESYNTAX, n->pos, "name too long");
    snprintf(f->name, sizeof f->name, "%.*s", n->len, n->start);
    f->pos = n->pos;
    next(ps);
    SL_TRY(expect_op(ps, "(", "after the function's name"));
    /* parameters: name [: annotation] [= default], ... */
    while (!is_op(tok(ps), ")")) {
        token *p = tok(ps);
        if (is_op(p, "*") || is_op(p, "**") || is_op(p, "/"))
            return perr(ps, SL_ESYNTAX, p->pos, "'%.*s' parameters are not supported", p->len,
                        p->start);
        if (p->kind != T_NAME || is_keyword(p))
            return perr(ps, SL_ESYNTAX, p->pos, "expected a parameter name, got %s",
                        tok_desc(p, d, sizeof d));
        if (f->nparams == SL__PARSE_PARAMS_MAX)
            return perr(ps, SL_EINVAL, p->pos, "too many parameters (at most %d)",
                        SL__PARSE_PARAMS_MAX);
        if (p->len >= SL__PARSE_NAME_MAX) return perr(ps, SL_ESYNTAX, p->pos, "name too long");
        for (int k = 0; k < f->nparams; k++)
            if ((int)strlen(f->params[k]) == p->len &&
                !strncmp(f->params[k], p->start, (size_t)p->len))
                return perr(ps, SL_ESYNTAX, p->pos, "duplicate parameter '%.*s'", p->len, p->start);
        snprintf(f->params[f->nparams], sizeof f->params[0], "%.*s", p->len, p->start);
        next(ps);
        expr *ann = NULL, *def = NULL;
        if (is_op(tok(ps), ":")) {
            next(ps);
            SL_TRY(parse_expr(ps, &ann)); /* annotations are ignored */
        }
        if (is_op(tok(ps), "=")) {
            next(ps);
            SL_TRY(parse_expr(ps, &def));
        } else if (f->nparams && f->defaults[f->nparams - 1]) {
            return perr(ps, SL_ESYNTAX, p->pos,
                        "parameter without a default follows parameter "
                        "with a default");
        }
        f->defaults[f->nparams++] = def;
        if (is_op(tok(ps), ",")) {
            next(ps);
        } else if (!is_op(tok(ps), ")")) {
            return perr(ps, SL_ESYNTAX, tok(ps)->pos,
                        "expected ',' or ')' in the parameters, got %s",
                        tok_desc(tok(ps), d, sizeof d));
        }
    }
    next(ps);
    if (is_op(tok(ps), "->")) {
        next(ps);
        expr *ann;
        SL_TRY(parse_expr(ps, &ann));
    }
    SL_TRY(expect_op(ps, ":", "at the end of the def line"));
    ps->in_func++;
    sl_status st = parse_suite(ps, &f->body, "the def line");
    ps->in_func--;
    if (st != SL_OK) return st;
    if (!arena_push(ps, (void **)&ps->funcs, &ps->nfuncs, sizeof f, &f)) return SL_ENOMEM;
    return push_stmt(ps, b, s);
}

static sl_status parse_decorator(parser *ps, block *b) {
    token *at = tok(ps);
    next(ps);
    expr *e;
    SL_TRY(parse_primary(ps, &e));
    SL_TRY(expect_newline(ps));
    const expr *callee = e->kind == E_CALL ? e->a : e;
    char name[256];
    if (!dotted(callee, name, sizeof name))
        return perr(ps, SL_ESYNTAX, e->pos, "expected a decorator name");
    const char *last = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
    if (strcmp(last, "data_iterator") && strcmp(last, "pipeline_def"))
        return perr(ps, SL_EINVAL, e->pos,
                    "unknown decorator '@%s'; expected @data_iterator(...) or @pipeline_def(...)",
                    name);
    while (tok(ps)->kind == T_NEWLINE) next(ps);
    token *d = tok(ps);
    if (is_op(d, "@")) return perr(ps, SL_ESYNTAX, d->pos, "only one decorator is supported");
    if (!is_name(d, "def")) {
        char k[64];
        return perr(ps, SL_ESYNTAX, d->pos, "expected 'def' after the decorator, got %s",
                    tok_desc(d, k, sizeof k));
    }
    (void)at;
    return parse_def(ps, b, e);
}

static sl_status unsupported_stmt(parser *ps, token *t) {
    if (is_name(t, "while"))
        return perr(ps, SL_ESYNTAX, t->pos,
                    "'while' loops are not supported in a pipeline: a loop runs when the pipeline "
                    "is built and needs a known bound (for ... in range(...))");
    return perr(ps, SL_ESYNTAX, t->pos,
                "'%.*s' statements are not supported in a pipeline (assignments, op calls, if, "
                "for, def and return are)",
                t->len, t->start);
}

/* One statement into b. top: at the module level; inline_suite: on the line of an if/for/def,
 * after its ':' (a simple statement only). */
static sl_status parse_stmt(parser *ps, block *b, bool top, bool inline_suite) {
    token *t = tok(ps);
    if (inline_suite && (is_name(t, "if") || is_name(t, "for") || is_name(t, "def") ||
                         is_name(t, "while") || is_op(t, "@")))
        return perr(ps, SL_ESYNTAX, t->pos, "'%.*s' must start a line of its own", t->len,
                    t->start);
    if (is_name(t, "import") || is_name(t, "from")) return skip_import(ps);
    if (is_op(t, "@")) {
        if (!top)
            return perr(ps, SL_ESYNTAX, t->pos, "decorators inside a block are not supported");
        return parse_decorator(ps, b);
    }
    if (is_name(t, "def")) {
        if (!top)
            return perr(ps, SL_ESYNTAX, t->pos,
                        "nested functions are not supported in a pipeline: define helpers at the "
                        "top level");
        return parse_def(ps, b, NULL);
    }
    if (is_name(t, "if")) return parse_if(ps, b);
    if (is_name(t, "for")) return parse_for(ps, b);
    if (is_name(t, "return")) {
        stmt *s = new_stmt(ps, S_RETURN, t->pos);
        if (!s) return SL_ENOMEM;
        next(ps);
        if (tok(ps)->kind != T_NEWLINE) SL_TRY(parse_exprlist(ps, &s->rhs));
        SL_TRY(expect_newline(ps));
        if (!ps->in_func) ps->module_returns = true;
        return push_stmt(ps, b, s);
    }
    if (is_name(t, "break") || is_name(t, "continue") || is_name(t, "pass")) {
        skind k = is_name(t, "pass") ? S_PASS : is_name(t, "break") ? S_BREAK : S_CONTINUE;
        if (k != S_PASS && !ps->loops)
            return perr(ps, SL_ESYNTAX, t->pos, "'%.*s' outside a loop", t->len, t->start);
        stmt *s = new_stmt(ps, k, t->pos);
        next(ps);
        SL_TRY(expect_newline(ps));
        return push_stmt(ps, b, s);
    }
    if (is_keyword(t) && !is_name(t, "True") && !is_name(t, "False") && !is_name(t, "None") &&
        !is_name(t, "lambda") && !is_name(t, "not"))
        return unsupported_stmt(ps, t);
    expr *lhs;
    SL_TRY(parse_exprlist(ps, &lhs));
    t = tok(ps);
    if (is_op(t, "=")) {
        next(ps);
        expr *rhs;
        SL_TRY(parse_exprlist(ps, &rhs));
        if (is_op(tok(ps), "="))
            return perr(ps, SL_ESYNTAX, tok(ps)->pos, "chained assignment is not supported");
        SL_TRY(expect_newline(ps));
        SL_TRY(check_targets(ps, lhs, "assign to names (x = ..., a, b = ...)"));
        stmt *s = new_stmt(ps, S_ASSIGN, lhs->pos);
        if (!s) return SL_ENOMEM;
        s->lhs = lhs;
        s->rhs = rhs;
        return push_stmt(ps, b, s);
    }
    if (is_op(t, ":"))
        return perr(ps, SL_ESYNTAX, t->pos, "annotated assignments are not supported");
    if (t->kind == T_NEWLINE && lhs->kind == E_STR) { /* a docstring */
        next(ps);
        return push_stmt(ps, b, new_stmt(ps, S_PASS, lhs->pos));
    }
    if (t->kind == T_NEWLINE)
        return perr(ps, SL_ESYNTAX, lhs->pos,
                    "expected an assignment (name = fn.op(...)); a bare expression's value would "
                    "be lost");
    return expect_newline(ps);
}

static sl_status parse_file(parser *ps) {
    for (;;) {
        token *t = tok(ps);
        if (t->kind == T_END) break;
        if (t->kind == T_NEWLINE || t->kind == T_DEDENT) { /* no DEDENT at the top; be safe */
            next(ps);
            continue;
        }
        if (t->kind == T_INDENT) return perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, &ps->module, true, false));
    }
    return func_index(ps);
}

/* ---- which function is the pipeline ----------------------------------------------------------
 */

static void mark_calls_block(parser *ps, const block *b, const func *in);

static void mark_calls(parser *ps, const expr *e, const func *in) {
    if (!e) return;
    if (e->kind == E_CALL && e->a->kind == E_NAME) {
        func *f = func_find(ps, e->a->s);
        if (f && f != in) f->called = true;
    }
    mark_calls(ps, e->a, in);
    mark_calls(ps, e->b, in);
    mark_calls(ps, e->c, in);
    for (int k = 0; k < e->n; k++) mark_calls(ps, e->items[k], in);
    for (int k = 0; k < e->nkw; k++) mark_calls(ps, e->kwvals[k], in);
}

static void mark_calls_block(parser *ps, const block *b, const func *in) {
    for (int k = 0; k < b->n; k++) {
        const stmt *s = b->items[k];
        mark_calls(ps, s->lhs, in);
        mark_calls(ps, s->rhs, in);
        for (int c = 0; c < s->ncond; c++) mark_calls(ps, s->conds[c], in);
        for (int c = 0; s->kind == S_IF && c <= s->ncond; c++)
            mark_calls_block(ps, &s->bodies[c], in);
        mark_calls_block(ps, &s->body, in);
        if (s->fn) {
            mark_calls_block(ps, &s->fn->body, s->fn);
            for (int p = 0; p < s->fn->nparams; p++) mark_calls(ps, s->fn->defaults[p], in);
        }
    }
}

/* "'a' (line 3), 'b' (line 9)" for the functions with pick(f) */
static void list_funcs(parser *ps, bool (*pick)(const func *), char *buf, size_t size) {
    size_t n = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < ps->nfuncs && n < size; i++) {
        const func *f = ps->funcs[i];
        if (pick && !pick(f)) continue;
        if (shown == 8) {
            snprintf(buf + n, size - n, ", ...");
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s'%s' (line %d)", shown ? ", " : "", f->name,
                              f->pos.line);
        shown++;
    }
}

static bool decorated(const func *f) {
    return f->deco != NULL;
}
static bool uncalled(const func *f) {
    return !f->called;
}

/* Sets ps->pipe: the function asked for; else the decorated one; else the only one nobody calls.
 * NULL: the module's code is the pipeline (it returns, or there is no function). */
static sl_status choose_pipeline(parser *ps) {
    char names[320];
    ps->pipe = NULL;
    if (ps->function) {
        ps->pipe = func_find(ps, ps->function);
        if (ps->pipe) return SL_OK;
        list_funcs(ps, NULL, names, sizeof names);
        return sl_err_set(ps->err, SL_EINVAL,
                          "%s: error: no function '%s' in the pipeline text (%s%s)", ps->filename,
                          ps->function, ps->nfuncs ? "it defines " : "it defines no function",
                          names);
    }
    if (ps->module_returns || !ps->nfuncs) return SL_OK;
    const func *first = NULL;
    int n = 0;
    for (int i = 0; i < ps->nfuncs; i++)
        if (ps->funcs[i]->deco) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n > 1) {
        list_funcs(ps, decorated, names, sizeof names);
        return perr(ps, SL_EINVAL, first->pos,
                    "several functions have a pipeline decorator: %s; pick one with --pipeline "
                    "NAME",
                    names);
    }
    mark_calls_block(ps, &ps->module, NULL);
    ps->pipe = NULL;
    for (int i = 0; i < ps->nfuncs; i++)
        if (!ps->funcs[i]->called) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n == 0)
        return perr(ps, SL_EINVAL, ps->funcs[0]->pos,
                    "no pipeline function: every function here is called by another; add "
                    "@pipeline_def to the pipeline, or pick it with --pipeline NAME");
    list_funcs(ps, uncalled, names, sizeof names);
    ps->pipe = NULL;
    return perr(ps, SL_EINVAL, first->pos,
                "which function is the pipeline? %s are called by no other function; add "
                "@pipeline_def to it, or pick one with --pipeline NAME",
                names);
}

/* ---- statements: running ----------------------------------------------------------------------
 */

/* Binds the targets (a name, or names to unpack) to v, which is consumed. */
static sl_status assign(parser *ps, const expr *lhs, result *v, const expr *rhs) {
    const expr *const *targets = &lhs;
    int n = 1;
    if (lhs->kind == E_TUPLE || lhs->kind == E_LIST) {
        targets = (const expr *const *)lhs->items;
        n = lhs->n;
    }
    sl_status st = SL_OK;
    if (n == 1 && lhs->kind == E_NAME) {
        /* a module-level constant is a default: a bound value of the same name wins */
        if (!ps->local && !has_node(&v->val) && !v->dict && bind_find(ps, lhs->s)) {
            result_free(v);
            return SL_OK;
        }
        env_entry *e = env_set(ps, lhs->s);
        if (!e) {
            result_free(v);
            return SL_ENOMEM;
        }
        e->v = *v;
        memset(v, 0, sizeof *v);
        return SL_OK;
    }
    if (v->dict || v->val.kind != SL_VAL_LIST)
        st = perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos, "cannot unpack %s into %d names",
                  is_node(v) ? "one op output"
                  : v->dict  ? "a dict"
                             : "a constant",
                  n);
    else if (v->val.n != n)
        st = perr(ps, SL_EINVAL, rhs ? rhs->pos : lhs->pos, "cannot unpack %d values into %d names",
                  v->val.n, n);
    for (int k = 0; k < n && st == SL_OK; k++) {
        env_entry *e = env_set(ps, targets[k]->s);
        if (!e) {
            st = SL_ENOMEM;
            break;
        }
        e->v.val = v->val.items[k];
        memset(&v->val.items[k], 0, sizeof v->val.items[k]);
    }
    result_free(v);
    return st;
}

static sl_status exec_stmt(parser *ps, const stmt *s);

static sl_status exec_block(parser *ps, const block *b) {
    for (int k = 0; k < b->n; k++) {
        SL_TRY(exec_stmt(ps, b->items[k]));
        if (ps->flow != FLOW_NEXT) return SL_OK;
    }
    return SL_OK;
}

/* One turn of a for loop with the target bound to v (consumed); false: leave the loop. */
static sl_status loop_turn(parser *ps, const stmt *s, result *v, bool *go_on) {
    SL_TRY(step(ps, s->pos, 1));
    SL_TRY(assign(ps, s->lhs, v, NULL));
    SL_TRY(exec_block(ps, &s->body));
    *go_on = ps->flow == FLOW_NEXT || ps->flow == FLOW_CONTINUE;
    if (ps->flow != FLOW_RETURN) ps->flow = FLOW_NEXT;
    return SL_OK;
}

static sl_status exec_for(parser *ps, const stmt *s) {
    const expr *it = s->rhs;
    sl_status st = SL_OK;
    bool go_on = true;
    const stmt *saved = ps->loop;
    if (it->kind == E_CALL && it->a->kind == E_NAME && !strcmp(it->a->s, "range") &&
        !func_find(ps, "range") && !env_find(ps, "range")) { /* range: not made into a list */
        int64_t a, b, d;
        SL_TRY(range_args(ps, it, &a, &b, &d));
        uint64_t n = range_len(a, b, d);
        ps->loop = s;
        for (uint64_t k = 0; k < n && go_on && st == SL_OK; k++) {
            result v;
            memset(&v, 0, sizeof v);
            set_int(&v.val, (int64_t)((uint64_t)a + k * (uint64_t)d));
            st = loop_turn(ps, s, &v, &go_on);
        }
        ps->loop = saved;
        return st;
    }
    result seq;
    SL_TRY(eval(ps, it, 1, &seq));
    if (seq.dict || seq.val.kind != SL_VAL_LIST) {
        st = perr(ps, SL_EINVAL, it->pos,
                  is_node(&seq) ? "a loop over an op output (data) is not supported: loops run "
                                  "when the pipeline is built, over range(...), lists and tuples"
                                : "a for loop runs over range(...), a list or a tuple, not %s",
                  kind_name(&seq));
        result_free(&seq);
        return st;
    }
    ps->loop = s;
    for (int k = 0; k < seq.val.n && go_on && st == SL_OK; k++) {
        result v = {seq.val.items[k], false};
        memset(&seq.val.items[k], 0, sizeof seq.val.items[k]);
        st = loop_turn(ps, s, &v, &go_on);
    }
    ps->loop = saved;
    result_free(&seq);
    return st;
}

static sl_status deco_apply(parser *ps, const func *f);

static sl_status exec_stmt(parser *ps, const stmt *s) {
    SL_TRY(step(ps, s->pos, 1));
    switch (s->kind) {
    case S_PASS:
        return SL_OK;
    case S_DEF:
        return s->fn == ps->pipe ? deco_apply(ps, s->fn) : SL_OK;
    case S_BREAK:
    case S_CONTINUE:
        ps->flow = s->kind == S_BREAK ? FLOW_BREAK : FLOW_CONTINUE;
        return SL_OK;
    case S_ASSIGN: {
        const expr *lhs = s->lhs;
        int n = lhs->kind == E_TUPLE || lhs->kind == E_LIST ? lhs->n : 1;
        result v;
        SL_TRY(eval(ps, s->rhs, n, &v));
        return assign(ps, lhs, &v, s->rhs);
    }
    case S_RETURN: {
        frame *fr = ps->fr;
        if (!fr->fn && ps->pipe)
            return perr(ps, SL_ESYNTAX, s->pos, "'return' outside the pipeline function");
        result v;
        memset(&v, 0, sizeof v);
        if (s->rhs) SL_TRY(eval(ps, s->rhs, fr->want, &v));
        fr->ret = v;
        fr->returned = true;
        fr->ret_expr = s->rhs;
        fr->ret_pos = s->pos;
        ps->flow = FLOW_RETURN;
        return SL_OK;
    }
    case S_IF:
        for (int k = 0; k < s->ncond; k++) {
            result c;
            bool t;
            SL_TRY(eval(ps, s->conds[k], 1, &c));
            sl_status st = truth(ps, s->conds[k], &c, k ? "elif" : "if", &t);
            result_free(&c);
            if (st != SL_OK) return st;
            if (t) return exec_block(ps, &s->bodies[k]);
        }
        return exec_block(ps, &s->bodies[s->ncond]);
    case S_FOR:
        return exec_for(ps, s);
    }
    return SL_OK;
}

/* The pipeline's outputs from its return (fr). */
static sl_status set_outputs(parser *ps, frame *fr) {
    sl__parse_prog *prog = ps->prog;
    const expr *re = fr->ret_expr;
    if (!re)
        return perr(ps, SL_EINVAL, fr->ret_pos, "return needs the pipeline's outputs: return a, b");
    const sl__val *v = &fr->ret.val;
    const sl__val *items = v;
    int n = 1;
    if (v->kind == SL_VAL_LIST && !fr->ret.dict) {
        items = v->items;
        n = v->n;
    }
    bool literal = (re->kind == E_TUPLE || re->kind == E_LIST) && re->n == n;
    if (n == 0) return perr(ps, SL_EINVAL, re->pos, "the pipeline must return at least one output");
    if (n > SL_MAX_OUTPUTS)
        return perr(ps, SL_EINVAL, re->pos, "at most %d outputs are supported", SL_MAX_OUTPUTS);
    for (int k = 0; k < n; k++) {
        const expr *at = literal ? re->items[k] : re;
        if (items[k].kind != SL_VAL_NODE || fr->ret.dict)
            return perr(ps, SL_EINVAL, at->pos, "a pipeline returns op outputs, not %s",
                        has_node(&items[k]) ? "a list of them" : "constants");
        prog->outputs[k] = items[k].node;
        prog->output_pos[k] = at->pos;
        if (at->kind == E_NAME)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", at->s);
        else
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "out%d", k);
    }
    prog->num_outputs = n;
    const sl_pipeline_decorator *d = &prog->deco;
    if (d->num_outputs) {
        if (d->num_outputs != n)
            return perr(ps, SL_EINVAL, re->pos,
                        "output_map names %d output%s but the pipeline returns %d", d->num_outputs,
                        d->num_outputs == 1 ? "" : "s", n);
        for (int k = 0; k < n; k++)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", d->output_map[k]);
    }
    return SL_OK;
}

/* Runs the pipeline function with its parameters bound: a bound value, else the default, else
 * unbound (an error when used). */
static sl_status run_pipeline(parser *ps, func *f) {
    scope sc;
    memset(&sc, 0, sizeof sc);
    frame fr, *saved = ps->fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = f;
    fr.want = 1;
    sl_status st = SL_OK;
    for (int k = 0; k < f->nparams && st == SL_OK; k++) {
        const sl_pipeline_bind *bd = bind_find(ps, f->params[k]);
        result v;
        memset(&v, 0, sizeof v);
        bool unbound = false;
        if (bd) {
            st = sl__parse_bind_value(bd->value ? bd->value : "", &v.val, ps->err);
        } else if (f->defaults[k]) {
            ps->no_ops = true;
            st = eval_const(ps, f->defaults[k], &v.val, "a default");
            ps->no_ops = false;
        } else {
            unbound = true;
        }
        if (st != SL_OK) break;
        ps->local = &sc;
        env_entry *e = env_set(ps, f->params[k]);
        ps->local = NULL;
        if (!e) {
            result_free(&v);
            st = SL_ENOMEM;
            break;
        }
        e->v = v;
        e->unbound = unbound;
    }
    if (st == SL_OK) {
        ps->local = &sc;
        ps->fr = &fr;
        f->active = true;
        st = exec_block(ps, &f->body);
        f->active = false;
        ps->flow = FLOW_NEXT;
        ps->local = NULL;
        ps->fr = saved;
    }
    if (st == SL_OK && !fr.returned)
        st = perr(ps, SL_EINVAL, f->pos,
                  "pipeline function '%s' does not return its outputs (return a, b)", f->name);
    if (st == SL_OK) st = set_outputs(ps, &fr);
    result_free(&fr.ret);
    scope_free(&sc);
    return st;
}

/* Runs the module's code, then the pipeline function (when there is one). */
static sl_status run_module(parser *ps) {
    frame fr;
    memset(&fr, 0, sizeof fr);
    fr.want = 1;
    ps->fr = &fr;
    ps->step_limit = SL__PARSE_STEPS_MAX + ps->nexprs + ps->nstmts;
    sl_status st = SL_OK;
    for (int k = 0; k < ps->module.n && st == SL_OK && ps->flow == FLOW_NEXT; k++) {
        const stmt *s = ps->module.items[k];
        int before = ps->prog->num_stmts;
        st = exec_stmt(ps, s);
        if (st == SL_OK && ps->pipe && ps->prog->num_stmts > before)
            st = perr(ps, SL_ESYNTAX, s->pos, "op calls must be inside the pipeline function");
    }
    ps->flow = FLOW_NEXT;
    if (st == SL_OK && ps->pipe) st = run_pipeline(ps, ps->pipe);
    if (st == SL_OK && !ps->pipe) {
        if (fr.returned)
            st = set_outputs(ps, &fr);
        else
            st = perr(ps, SL_EINVAL, tok(ps)->pos,
                      ps->prog->num_stmts ? "the pipeline has no return statement"
                                          : "no pipeline here: expected a def or op calls");
    }
    result_free(&fr.ret);
    return st;
}

/* ---- the decorator -------------------------------------------------------------------------- */

static bool decorator_literal_int(const expr *e, int64_t *out) {
    if (e->kind == E_INT) {
        *out = e->i;
        return true;
    }
    if (e->kind == E_NEG && e->a->kind == E_INT) {
        *out = -e->a->i;
        return true;
    }
    return false;
}

static sl_status decorator_bool(parser *ps, const expr *e, const char *key, bool *out,
                                bool yes_no) {
    sl__val v;
    SL_TRY(eval_const(ps, e, &v, key));
    sl_status st = SL_OK;
    if (v.kind == SL_VAL_BOOL)
        *out = v.b;
    else if (yes_no && v.kind == SL_VAL_STR && (!strcmp(v.s, "yes") || !strcmp(v.s, "no")))
        *out = !strcmp(v.s, "yes");
    else
        st = perr(ps, SL_EINVAL, e->pos, "%s must be True or False%s", key,
                  yes_no ? " (or \"yes\"/\"no\")" : "");
    sl__val_free(&v);
    return st;
}

static sl_status decorator_arg(parser *ps, const char *key, sl__parse_pos kpos, const expr *e,
                               bool *sharding, bool *devices) {
    sl_pipeline_decorator *d = &ps->prog->deco;
    sl__val v;
    memset(&v, 0, sizeof v);
    sl_status st = SL_OK;
    if (!strcmp(key, "output_map")) {
        SL_TRY(eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_LIST) {
            st = perr(ps, SL_EINVAL, e->pos, "output_map must be a list of names");
        } else if (v.n > SL_MAX_OUTPUTS) {
            st = perr(ps, SL_EINVAL, e->pos, "output_map: at most %d outputs", SL_MAX_OUTPUTS);
        } else {
            for (int k = 0; k < v.n && st == SL_OK; k++) {
                if (v.items[k].kind != SL_VAL_STR)
                    st = perr(ps, SL_EINVAL, e->items ? e->items[k]->pos : e->pos,
                              "output_map must be a list of strings");
                else if (strlen(v.items[k].s) >= sizeof d->output_map[k])
                    st = perr(ps, SL_EINVAL, e->pos, "output_map: name too long");
                else
                    snprintf(d->output_map[k], sizeof d->output_map[k], "%s", v.items[k].s);
            }
            if (st == SL_OK) d->num_outputs = v.n;
        }
    } else if (!strcmp(key, "reader_name")) {
        SL_TRY(eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_STR || strlen(v.s) >= sizeof d->reader_name)
            st = perr(ps, SL_EINVAL, e->pos, "reader_name must be a string (the reader's name=)");
        else
            snprintf(d->reader_name, sizeof d->reader_name, "%s", v.s);
    } else if (!strcmp(key, "size")) {
        SL_TRY(eval_const(ps, e, &v, key));
        if (v.kind != SL_VAL_INT)
            st = perr(ps, SL_EINVAL, e->pos, "size must be an integer");
        else
            d->size = v.i;
    } else if (!strcmp(key, "last_batch_policy")) {
        char name[256];
        const char *p = NULL;
        if (e->kind == E_STR)
            p = e->s;
        else if (dotted(e, name, sizeof name))
            p = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
        if (p && !strcmp(p, "FILL"))
            d->last_batch_policy = SL_LAST_BATCH_FILL;
        else if (p && !strcmp(p, "DROP"))
            d->last_batch_policy = SL_LAST_BATCH_DROP;
        else if (p && !strcmp(p, "PARTIAL"))
            d->last_batch_policy = SL_LAST_BATCH_PARTIAL;
        else
            st = perr(ps, SL_EINVAL, e->pos,
                      "last_batch_policy must be LastBatchPolicy.FILL, .DROP or .PARTIAL");
    } else if (!strcmp(key, "last_batch_padded")) {
        st = decorator_bool(ps, e, key, &d->last_batch_padded, false);
    } else if (!strcmp(key, "prepare_first_batch")) {
        st = decorator_bool(ps, e, key, &d->prepare_first_batch, false);
    } else if (!strcmp(key, "auto_reset")) {
        st = decorator_bool(ps, e, key, &d->auto_reset, true);
    } else if (!strcmp(key, "sharding") || !strcmp(key, "devices")) {
        /* any expression (sharding, jax.devices()): only its presence matters; None is absence */
        if (e->kind != E_NONE) {
            bool *mine = key[0] == 's' ? sharding : devices,
                 *other = key[0] == 's' ? devices : sharding;
            *mine = true;
            if (*other)
                return perr(ps, SL_EINVAL, kpos,
                            "only one of 'sharding' and 'devices' can be given");
            d->layout = key[0] == 's' ? SL_LAYOUT_SHARDED : SL_LAYOUT_STACKED;
        }
    } else {
        int64_t x;
        if (decorator_literal_int(e, &x)) {
            if (!strcmp(key, "batch_size") && x > 0 && x <= INT32_MAX) d->batch_size = (int)x;
            if (!strcmp(key, "num_threads") && x > 0 && x <= INT32_MAX) d->num_threads = (int)x;
            if (!strcmp(key, "seed")) d->seed = x;
            if (!strcmp(key, "prefetch_queue_depth") && x > 0 && x <= INT32_MAX)
                d->prefetch_queue_depth = (int)x;
            if (!strcmp(key, "device_id") && x >= 0 && x <= INT32_MAX) d->device_id = (int)x;
        } else if (!strcmp(key, "device_id") && e->kind == E_NONE) {
            d->device_id = SL_DECORATOR_DEVICE_NONE; /* DALI: a CPU-only pipeline */
        }
        /* other pipeline settings (exec_async, a {cpu_size, gpu_size} prefetch, ...): not ours */
    }
    sl__val_free(&v);
    return st;
}

/* The pipeline function's def line and decorator into the program's settings. */
static sl_status deco_apply(parser *ps, const func *f) {
    sl_pipeline_decorator *d = &ps->prog->deco;
    snprintf(d->func_name, sizeof d->func_name, "%s", f->name);
    d->num_params = f->nparams;
    for (int k = 0; k < f->nparams; k++)
        snprintf(d->params[k], sizeof d->params[k], "%s", f->params[k]);
    const expr *e = f->deco;
    if (!e) return SL_OK;
    d->present = true;
    if (e->kind != E_CALL) return SL_OK;
    if (e->n)
        return perr(ps, SL_EINVAL, e->items[0]->pos,
                    "decorator arguments must be keyword arguments (name=value)");
    bool sharding = false, devices = false;
    ps->no_ops = true;
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        if (!e->kwnames[k])
            st = perr(ps, SL_EINVAL, e->kwpos[k],
                      "decorator arguments must be keyword arguments (name=value)");
        else
            st = decorator_arg(ps, e->kwnames[k], e->kwpos[k], e->kwvals[k], &sharding, &devices);
    }
    ps->no_ops = false;
    return st;
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
    for (int i = 0; i < prog->num_stmts; i++) stmt_clear(&prog->stmts[i]);
    free(prog->stmts);
    free(prog->text);
    free(prog);
}

static sl_status run_parser(const char *text, const char *filename, const char *function, int nbind,
                            const sl_pipeline_bind *binds, bool header_only, sl__parse_prog *prog,
                            sl_err *err) {
    lexer l;
    memset(&l, 0, sizeof l);
    l.text = text;
    l.filename = filename;
    l.err = err;
    sl_status st = lex_all(&l);
    if (st == SL_OK) {
        parser ps;
        memset(&ps, 0, sizeof ps);
        ps.text = text;
        ps.filename = filename;
        ps.function = function && function[0] ? function : NULL;
        ps.toks = l.toks;
        ps.ntok = l.ntok;
        ps.err = err;
        ps.nbind = nbind;
        ps.binds = binds;
        ps.prog = prog;
        ps.header_only = header_only;
        st = parse_file(&ps);
        ps.step_limit = SL__PARSE_STEPS_MAX + ps.nexprs + ps.nstmts;
        if (st == SL_OK) st = choose_pipeline(&ps);
        if (st == SL_OK && header_only && ps.pipe) st = deco_apply(&ps, ps.pipe);
        if (st == SL_OK && !header_only) st = run_module(&ps);
        scope_free(&ps.globals);
        free(ps.fhash);
        arena_free(&ps);
    }
    lex_free(&l);
    return st;
}

sl_status sl__parse_program_fn(const char *text, const char *filename, const char *function,
                               int nbind, const sl_pipeline_bind *binds, sl__parse_prog **out,
                               sl_err *err) {
    *out = NULL;
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    if (nbind < 0 || (nbind && !binds)) return sl_err_set(err, SL_EINVAL, "bad bind list");
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    snprintf(prog->filename, sizeof prog->filename, "%s", filename);
    if (!(prog->text = strdup(text))) {
        free(prog);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    sl_status st = run_parser(text, filename, function, nbind, binds, false, prog, err);
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

sl_status sl__parse_header(const char *text, const char *filename, const char *function,
                           sl_pipeline_decorator *out, sl_err *err) {
    deco_init(out);
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    sl_status st = run_parser(text, filename, function, 0, NULL, true, prog, err);
    if (st == SL_OK) *out = prog->deco;
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
