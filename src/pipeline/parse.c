/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser, layer one, reading: a hand-written lexer (Python tokens,
 * INDENT/DEDENT, implicit line joining inside brackets) and recursive-descent parsers for the
 * subset of Python that DALI pipeline functions use -- functions with an optional
 * @data_iterator/@pipeline_def decorator, assignments, op calls, .gpu()/.cpu(), if/elif/else, for,
 * return, literals, arithmetic, comparisons, and/or/not, conditional expressions, dicts -- into
 * statement and expression trees kept in an arena (parse_int.h), which parse_run.c runs into an
 * sl__parse_prog (parse.h). Also the error messages with a caret, and bound values. Anything
 * outside the subset is an error with line, column and a caret under the spot; nothing here aborts
 * on bad input. */
#include "pipeline/parse_int.h"

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

/* ---- lexer -------------------------------------------------------------------------------------
 */

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

sl_status sl__parse_perr(parser *ps, sl_status st, sl__parse_pos pos, const char *fmt, ...) {
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
    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected '%s'%s%s, got %s", op, what ? " " : "",
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
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "augmented assignment is not supported in a pipeline");
    if (is_op(t, ";"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "';' is not supported: one statement per line");
    if (t->kind == T_NAME && is_keyword(t))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unsupported syntax: '%.*s' here", t->len,
                              t->start);
    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected end of line, got %s",
                          tok_desc(t, b, sizeof b));
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
        return sl__parse_perr(ps, SL_ESYNTAX, e->pos,
                              "expression nested too deeply (over %d levels)", SL__PARSE_DEPTH_MAX);
    return SL_OK;
}

/* Entering parse_expr or parse_unary, which recurse into each other: bounded like the trees. */
static sl_status nest_enter(parser *ps) {
    if (ps->nest >= SL__PARSE_DEPTH_MAX)
        return sl__parse_perr(ps, SL_ESYNTAX, tok(ps)->pos,
                              "expression nested too deeply (over %d levels)", SL__PARSE_DEPTH_MAX);
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "'*' unpacking is not supported in a pipeline");
        if (is_op(t, "**") || (t->kind == T_NAME && is_op(tok_ahead(ps, 1), "="))) {
            bool splat = is_op(t, "**"); /* **mapping: its keys are keywords */
            if (!splat && t->len >= SL__PARSE_NAME_MAX)
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "name too long");
            const char *name = splat ? NULL : arena_strndup(ps, t->start, (size_t)t->len);
            if (!splat && !name) return SL_ENOMEM;
            if (call->nkw >= SL__PARSE_KWARGS_MAX) /* the check below scans them */
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                      "too many keyword arguments (over %d)", SL__PARSE_KWARGS_MAX);
            for (int k = 0; name && k < call->nkw; k++)
                if (call->kwnames[k] && !strcmp(call->kwnames[k], name))
                    return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "keyword argument repeated: %s",
                                          name);
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
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or ')' in the call, got %s",
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
                return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                      "comprehensions are not supported in a pipeline");
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '%s', got %s", close,
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
            return sl__parse_perr(ps, SL_ESYNTAX, e->pos, "sets are not supported in a pipeline");
        if (is_name(t, "for"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "comprehensions are not supported in a pipeline");
        if (!is_op(t, ":"))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ':' in the dict, got %s",
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected ',' or '}' in the dict, got %s",
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "lambda is not supported in a pipeline");
        if (is_keyword(t))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "unsupported syntax: '%.*s' in an expression", t->len, t->start);
        if (t->len >= SL__PARSE_NAME_MAX)
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "name too long");
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
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                              tok_desc(t, b, sizeof b));
    default:
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "expected an expression, got %s",
                              tok_desc(t, b, sizeof b));
    }
    /* trailers: .name, (call), [subscript] */
    for (;;) {
        t = tok(ps);
        if (is_op(t, ".")) {
            next(ps);
            token *n = tok(ps);
            if (n->kind != T_NAME || is_keyword(n))
                return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "expected a name after '.', got %s",
                                      tok_desc(n, b, sizeof b));
            if (n->len >= SL__PARSE_NAME_MAX)
                return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "name too long");
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "subscripts are not supported in a pipeline");
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
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '~' in a pipeline");
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '%s' in a pipeline",
                                  bad_ops[i]);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_words); i++)
        if (is_name(t, bad_words[i]))
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "unsupported syntax: '%s' in an expression", bad_words[i]);
    if (is_name(t, "for"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                              "comprehensions are not supported in a pipeline");
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
bool sl__parse_dotted(const expr *e, char *buf, size_t size) {
    if (e->kind == E_NAME) return (size_t)snprintf(buf, size, "%s", e->s) < size;
    if (e->kind != E_ATTR || !sl__parse_dotted(e->a, buf, size)) return false;
    size_t n = strlen(buf);
    return (size_t)snprintf(buf + n, size - n, ".%s", e->s) < size - n;
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected %s in an import line",
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
            return sl__parse_perr(ps, SL_ESYNTAX, s->pos, "statement after %s",
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
        if (t->kind == T_INDENT) return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, b, false, false));
    }
}

/* After the ':' of a compound statement: an indented block, or one simple statement on the same
 * line. */
static sl_status parse_suite(parser *ps, block *b, const char *after) {
    if (tok(ps)->kind != T_NEWLINE) return parse_stmt(ps, b, false, true);
    next(ps);
    if (tok(ps)->kind != T_INDENT)
        return sl__parse_perr(ps, SL_ESYNTAX, tok(ps)->pos, "expected an indented block after %s",
                              after);
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
    if (n == 0) return sl__parse_perr(ps, SL_ESYNTAX, lhs->pos, "cannot assign to ()");
    if (n > SL_MAX_OUTPUTS) return sl__parse_perr(ps, SL_EINVAL, lhs->pos, "too many names");
    for (int k = 0; k < n; k++) {
        if (targets[k]->kind != E_NAME)
            return sl__parse_perr(ps, SL_ESYNTAX, targets[k]->pos,
                                  "cannot assign to this expression; %s", what);
        for (int j = 0; j < k; j++)
            if (!strcmp(targets[j]->s, targets[k]->s))
                return sl__parse_perr(ps, SL_EINVAL, targets[k]->pos, "'%s' is assigned twice",
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
        return sl__parse_perr(ps, SL_ESYNTAX, tok(ps)->pos, "expected 'in' in the for loop, got %s",
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
        return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "expected the function's name, got %s",
                              tok_desc(n, d, sizeof d));
    if (n->len >= (int)sizeof f->name)
        return sl__parse_perr(ps, SL_ESYNTAX, n->pos, "name too long");
    snprintf(f->name, sizeof f->name, "%.*s", n->len, n->start);
    f->pos = n->pos;
    next(ps);
    SL_TRY(expect_op(ps, "(", "after the function's name"));
    /* parameters: name [: annotation] [= default], ... */
    while (!is_op(tok(ps), ")")) {
        token *p = tok(ps);
        if (is_op(p, "*") || is_op(p, "**") || is_op(p, "/"))
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "'%.*s' parameters are not supported",
                                  p->len, p->start);
        if (p->kind != T_NAME || is_keyword(p))
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "expected a parameter name, got %s",
                                  tok_desc(p, d, sizeof d));
        if (f->nparams == SL__PARSE_PARAMS_MAX)
            return sl__parse_perr(ps, SL_EINVAL, p->pos, "too many parameters (at most %d)",
                                  SL__PARSE_PARAMS_MAX);
        if (p->len >= SL__PARSE_NAME_MAX)
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "name too long");
        for (int k = 0; k < f->nparams; k++)
            if ((int)strlen(f->params[k]) == p->len &&
                !strncmp(f->params[k], p->start, (size_t)p->len))
                return sl__parse_perr(ps, SL_ESYNTAX, p->pos, "duplicate parameter '%.*s'", p->len,
                                      p->start);
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
            return sl__parse_perr(ps, SL_ESYNTAX, p->pos,
                                  "parameter without a default follows parameter "
                                  "with a default");
        }
        f->defaults[f->nparams++] = def;
        if (is_op(tok(ps), ",")) {
            next(ps);
        } else if (!is_op(tok(ps), ")")) {
            return sl__parse_perr(ps, SL_ESYNTAX, tok(ps)->pos,
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
    next(ps);
    expr *e;
    SL_TRY(parse_primary(ps, &e));
    SL_TRY(expect_newline(ps));
    const expr *callee = e->kind == E_CALL ? e->a : e;
    char name[256];
    if (!sl__parse_dotted(callee, name, sizeof name))
        return sl__parse_perr(ps, SL_ESYNTAX, e->pos, "expected a decorator name");
    const char *last = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
    if (strcmp(last, "data_iterator") && strcmp(last, "pipeline_def"))
        return sl__parse_perr(
            ps, SL_EINVAL, e->pos,
            "unknown decorator '@%s'; expected @data_iterator(...) or @pipeline_def(...)", name);
    while (tok(ps)->kind == T_NEWLINE) next(ps);
    token *d = tok(ps);
    if (is_op(d, "@"))
        return sl__parse_perr(ps, SL_ESYNTAX, d->pos, "only one decorator is supported");
    if (!is_name(d, "def")) {
        char k[64];
        return sl__parse_perr(ps, SL_ESYNTAX, d->pos, "expected 'def' after the decorator, got %s",
                              tok_desc(d, k, sizeof k));
    }
    return parse_def(ps, b, e);
}

static sl_status unsupported_stmt(parser *ps, token *t) {
    if (is_name(t, "while"))
        return sl__parse_perr(
            ps, SL_ESYNTAX, t->pos,
            "'while' loops are not supported in a pipeline: a loop runs when the pipeline "
            "is built and needs a known bound (for ... in range(...))");
    return sl__parse_perr(
        ps, SL_ESYNTAX, t->pos,
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
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "'%.*s' must start a line of its own", t->len,
                              t->start);
    if (is_name(t, "import") || is_name(t, "from")) return skip_import(ps);
    if (is_op(t, "@")) {
        if (!top)
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos,
                                  "decorators inside a block are not supported");
        return parse_decorator(ps, b);
    }
    if (is_name(t, "def")) {
        if (!top)
            return sl__parse_perr(
                ps, SL_ESYNTAX, t->pos,
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
            return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "'%.*s' outside a loop", t->len,
                                  t->start);
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
            return sl__parse_perr(ps, SL_ESYNTAX, tok(ps)->pos,
                                  "chained assignment is not supported");
        SL_TRY(expect_newline(ps));
        SL_TRY(check_targets(ps, lhs, "assign to names (x = ..., a, b = ...)"));
        stmt *s = new_stmt(ps, S_ASSIGN, lhs->pos);
        if (!s) return SL_ENOMEM;
        s->lhs = lhs;
        s->rhs = rhs;
        return push_stmt(ps, b, s);
    }
    if (is_op(t, ":"))
        return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "annotated assignments are not supported");
    if (t->kind == T_NEWLINE && lhs->kind == E_STR) { /* a docstring */
        next(ps);
        return push_stmt(ps, b, new_stmt(ps, S_PASS, lhs->pos));
    }
    if (t->kind == T_NEWLINE)
        return sl__parse_perr(
            ps, SL_ESYNTAX, lhs->pos,
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
        if (t->kind == T_INDENT) return sl__parse_perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        SL_TRY(parse_stmt(ps, &ps->module, true, false));
    }
    return SL_OK;
}

sl_status sl__parse_read(parser *ps) {
    lexer l;
    memset(&l, 0, sizeof l);
    l.text = ps->text;
    l.filename = ps->filename;
    l.err = ps->err;
    sl_status st = lex_all(&l);
    ps->toks = l.toks; /* freed by sl__parse_release, with the strings */
    ps->ntok = l.ntok;
    return st == SL_OK ? parse_file(ps) : st;
}

void sl__parse_release(parser *ps) {
    for (int i = 0; i < ps->ntok; i++) free(ps->toks[i].s);
    free(ps->toks);
    ps->toks = NULL;
    ps->ntok = 0;
    arena_free(ps);
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
