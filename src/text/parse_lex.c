/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's lexer: Python tokens from the text -- names, numbers, strings
 * (r and u prefixes, triple quotes, escapes), operators -- with INDENT/DEDENT from the
 * indentation, implicit line joining inside brackets and backslash continuations, into the token
 * array of parse_lex.h; and the questions the grammar (parse_expr.c, parse_tree.c) asks of a token.
 * Bad text is an error with line, column and a caret under the spot; nothing here aborts on bad
 * input. */
#include "text/parse_lex.h"

#include "core/alloc.h"
#include "core/log.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lexer ----------------------------------------------------------------------------------- */

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
    va_list ap;
    va_start(ap, fmt);
    st = sl__parse_errorv(l->err, st, l->text, l->filename, pos, fmt, ap);
    va_end(ap);
    return st;
}

static sl_status lex_push(lexer *l, tkind kind, sl__parse_pos pos, const char *start, int len,
                          token **out) {
    token *grown = sl__grow(l->toks, &l->cap, l->ntok + 1, sizeof *grown, 256, l->err);
    if (!grown) return SL_ENOMEM;
    l->toks = grown;
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

sl_status sl__parse_lex(const char *text, const char *filename, sl_err *err, token **toks,
                        int *ntok) {
    lexer l;
    memset(&l, 0, sizeof l);
    l.text = text;
    l.filename = filename;
    l.err = err;
    sl_status st = lex_all(&l);
    *toks = l.toks;
    *ntok = l.ntok;
    return st;
}

/* ---- tokens ---------------------------------------------------------------------------------- */

bool sl__parse_is_op(const token *t, const char *op) {
    return t->kind == T_OP && t->len == (int)strlen(op) && !strncmp(t->start, op, (size_t)t->len);
}
bool sl__parse_is_name(const token *t, const char *name) {
    return t->kind == T_NAME && t->len == (int)strlen(name) &&
           !strncmp(t->start, name, (size_t)t->len);
}

static const char *const keywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

bool sl__parse_is_keyword(const token *t) {
    for (size_t i = 0; i < SL_ARRAY_LEN(keywords); i++)
        if (sl__parse_is_name(t, keywords[i])) return true;
    return false;
}

/* How a token reads in a message. */
const char *sl__parse_tok_desc(const token *t, char *buf, size_t size) {
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
