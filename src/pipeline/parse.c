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
    E_NAME, /* s */
    E_ATTR, /* a.s */
    E_CALL, /* a(items..., kw...) */
    E_BIN,  /* a op b */
    E_NEG,  /* -a */
    E_POS,  /* +a */
    E_LIST, /* [items] */
    E_TUPLE /* (items) or a, b */
} ekind;

typedef struct expr expr;
struct expr {
    ekind kind;
    sl__parse_pos pos;  /* start of the expression; E_BIN: the operator */
    sl__parse_pos npos; /* E_ATTR: the attribute's name */
    int64_t i;
    double f;
    const char *s;
    char op[3];
    expr *a, *b;
    int n;
    expr **items;
    int nkw;
    const char **kwnames;
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

/* ---- parser state ---------------------------------------------------------------------------- */

typedef enum env_kind { ENV_NODE, ENV_CONST, ENV_UNBOUND } env_kind;

typedef struct env_entry {
    char name[SL__PARSE_NAME_MAX];
    env_kind kind;
    int node;
    sl__val val;
} env_entry;

typedef struct parser {
    const char *text, *filename;
    token *toks;
    int ntok, at;
    sl_err *err;
    arena_block *arena;
    int nbind;
    const sl_pipeline_bind *binds;
    env_entry *env;
    int nenv, capenv;
    int *env_hash; /* open addressing over env: index + 1, 0 empty; env_hcap slots (a power of 2) */
    int env_hcap;
    int nest; /* current recursion depth of parse_expr/parse_unary */
    sl__parse_prog *prog;
    int stmt_cap;
    bool header_only; /* stop after the def line */
    bool header_done;
    bool no_ops; /* evaluating a decorator argument: no op calls */
    bool seen_decorator, seen_def, in_def, returned;
    sl__parse_pos def_pos;
    bool top_ops; /* op statements at the top level */
    sl__parse_pos top_ops_pos;
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
        if (is_op(t, "*") || is_op(t, "**"))
            return perr(ps, SL_ESYNTAX, t->pos, "'%.*s' unpacking is not supported in a pipeline",
                        t->len, t->start);
        if (t->kind == T_NAME && is_op(tok_ahead(ps, 1), "=")) {
            if (t->len >= SL__PARSE_NAME_MAX) return perr(ps, SL_ESYNTAX, t->pos, "name too long");
            const char *name = arena_strndup(ps, t->start, (size_t)t->len);
            if (!name) return SL_ENOMEM;
            if (call->nkw >= SL__PARSE_KWARGS_MAX) /* the check below scans them */
                return perr(ps, SL_ESYNTAX, t->pos, "too many keyword arguments (over %d)",
                            SL__PARSE_KWARGS_MAX);
            for (int k = 0; k < call->nkw; k++)
                if (!strcmp(call->kwnames[k], name))
                    return perr(ps, SL_ESYNTAX, t->pos, "keyword argument repeated: %s", name);
            sl__parse_pos pos = t->pos;
            next(ps);
            next(ps);
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
                return perr(ps, SL_ESYNTAX, t->pos, "positional argument follows keyword argument");
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
        if (is_op(t, "{"))
            return perr(ps, SL_ESYNTAX, t->pos, "dicts and sets are not supported in a pipeline");
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
    if (is_op(t, "~") || is_name(t, "not"))
        return perr(ps, SL_ESYNTAX, t->pos, "unsupported operator '%.*s' in a pipeline", t->len,
                    t->start);
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

static sl_status parse_expr_in(parser *ps, expr **out) {
    SL_TRY(parse_binary(ps, out, 0));
    token *t = tok(ps);
    static const char *const bad_ops[] = {"==", "!=", "<",  ">",  "<=", ">=", "&",
                                          "|",  "^",  "<<", ">>", "@",  ":=", "..."};
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

typedef struct result {
    bool is_node;
    sl__val val;      /* a constant */
    int first, count; /* program nodes */
} result;

/* Names are found through a hash index (a scan per lookup made 100,000 assignments quadratic). */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static env_entry *env_find(parser *ps, const char *name) {
    if (!ps->env_hcap) return NULL;
    uint32_t mask = (uint32_t)ps->env_hcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = ps->env_hash[h];
        if (!slot) return NULL;
        if (!strcmp(ps->env[slot - 1].name, name)) return &ps->env[slot - 1];
    }
}

/* Indexes env[i]; the table is kept at most half full. */
static bool env_index(parser *ps, int i) {
    if (2 * (ps->nenv + 1) > ps->env_hcap) {
        int cap = ps->env_hcap ? 2 * ps->env_hcap : 64;
        int *h = calloc((size_t)cap, sizeof *h);
        if (!h) return false;
        free(ps->env_hash);
        ps->env_hash = h;
        ps->env_hcap = cap;
        for (int k = 0; k < ps->nenv; k++)
            if (k != i && !env_index(ps, k)) return false;
    }
    uint32_t mask = (uint32_t)ps->env_hcap - 1, h = name_hash(ps->env[i].name) & mask;
    while (ps->env_hash[h]) h = (h + 1) & mask;
    ps->env_hash[h] = i + 1;
    return true;
}

static const sl_pipeline_bind *bind_find(parser *ps, const char *name) {
    const sl_pipeline_bind *found = NULL;
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name && !strcmp(ps->binds[i].name, name)) found = &ps->binds[i];
    return found; /* the last one wins */
}

static env_entry *env_set(parser *ps, const char *name) {
    env_entry *e = env_find(ps, name);
    if (e) {
        sl__val_free(&e->val);
        return e;
    }
    if (ps->nenv == ps->capenv) {
        int cap = ps->capenv ? 2 * ps->capenv : 16;
        env_entry *n = realloc(ps->env, (size_t)cap * sizeof *n);
        if (!n) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        ps->env = n;
        ps->capenv = cap;
    }
    e = &ps->env[ps->nenv];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!env_index(ps, ps->nenv)) {
        sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return NULL;
    }
    ps->nenv++;
    return e;
}

static const char *suggest_name(parser *ps, const char *name) {
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; i < ps->nenv; i++) {
        int d = sl__op_distance(name, ps->env[i].name);
        if (d < bd) bd = d, best = ps->env[i].name;
    }
    for (int i = 0; i < ps->nbind; i++) {
        if (!ps->binds[i].name) continue;
        int d = sl__op_distance(name, ps->binds[i].name);
        if (d < bd) bd = d, best = ps->binds[i].name;
    }
    size_t len = strlen(name);
    return best && bd <= (len < 4 ? 1 : len < 8 ? 2 : 3) ? best : NULL;
}

static void result_free(result *r) {
    sl__val_free(&r->val);
}

static sl_status eval(parser *ps, const expr *e, int want, result *r);

static sl_status eval_const(parser *ps, const expr *e, sl__val *out, const char *what) {
    result r;
    SL_TRY(eval(ps, e, 1, &r));
    if (r.is_node)
        return perr(ps, SL_EINVAL, e->pos, "%s must be a constant, not an op output", what);
    *out = r.val;
    return SL_OK;
}

static sl_status eval_name(parser *ps, const expr *e, result *r) {
    env_entry *v = env_find(ps, e->s);
    if (v && v->kind == ENV_NODE) {
        r->is_node = true;
        r->first = v->node;
        r->count = 1;
        return SL_OK;
    }
    if (v && v->kind == ENV_CONST) return sl__val_copy(&r->val, &v->val, ps->err);
    if (v && v->kind == ENV_UNBOUND)
        return perr(ps, SL_EINVAL, e->pos, "parameter '%s' is not bound; pass --arg %s=VALUE", e->s,
                    e->s);
    const sl_pipeline_bind *b = bind_find(ps, e->s);
    if (b) return sl__parse_bind_value(b->value ? b->value : "", &r->val, ps->err);
    if (!strcmp(e->s, "fn") || !strcmp(e->s, "types") || !strcmp(e->s, "dali"))
        return perr(ps, SL_EINVAL, e->pos, "'%s' is a module, not a value", e->s);
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

static const char *kind_name(const sl__val *v) {
    switch (v->kind) {
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
        return "list";
    case SL_VAL_NODE:
        return "op output";
    }
    return "?";
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

static sl_status arith(parser *ps, const expr *e, const sl__val *a, const sl__val *b,
                       sl__val *out) {
    const char *op = e->op;
    if (a->kind == SL_VAL_STR && b->kind == SL_VAL_STR && !strcmp(op, "+")) {
        size_t la = strlen(a->s), lb = strlen(b->s);
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
                    kind_name(a), kind_name(b));
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
    if ((a->is_node && a->count != 1) || (b && b->is_node && b->count != 1))
        return perr(ps, SL_EINVAL, e->pos,
                    "'%s' on an op with several outputs: unpack them first (a, b = fn...)",
                    b ? e->op : "-");
    const result *cst = !a->is_node ? a : b && !b->is_node ? b : NULL;
    if (cst && (cst->val.kind == SL_VAL_BOOL || !numeric(&cst->val)))
        return perr(ps, SL_EINVAL, cst == a ? e->a->pos : e->b->pos,
                    "unsupported operand type for '%s' with an op output: %s (int or float "
                    "wanted)",
                    e->op, kind_name(&cst->val));
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
        if (!x || !x->is_node) continue;
        s.inputs[s.num_inputs] = x->first;
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
        arg->val.kind = SL_VAL_BOOL;
        arg->val.b = cst == a;
        arg->val.i = arg->val.b;
    }
    if (st == SL_OK) {
        r->is_node = true;
        r->first = ps->prog->num_nodes;
        r->count = 1;
        st = add_stmt(ps, &s, 1);
    }
    if (st != SL_OK) stmt_clear(&s);
    return st;
}

/* fn.<op>(inputs..., kw=...) */
static sl_status eval_op(parser *ps, const expr *e, const char *name, int want, result *r) {
    if (ps->no_ops) return perr(ps, SL_EINVAL, e->pos, "an operator cannot be called here");
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
    snprintf(s.written, sizeof s.written, "%s", name);
    snprintf(s.op, sizeof s.op, "%s", bare);
    sl_status st = SL_OK;
    if (e->n) {
        s.inputs = malloc((size_t)e->n * sizeof *s.inputs);
        s.input_pos = malloc((size_t)e->n * sizeof *s.input_pos);
        if (!s.inputs || !s.input_pos) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        result in;
        memset(&in, 0, sizeof in);
        st = eval(ps, e->items[k], 1, &in);
        if (st != SL_OK) break;
        if (!in.is_node) {
            result_free(&in);
            st = perr(ps, SL_EINVAL, e->items[k]->pos,
                      "input %d of %s must be an op output; constants are not supported as inputs",
                      k, name);
            break;
        }
        s.inputs[s.num_inputs] = in.first;
        s.input_pos[s.num_inputs++] = e->items[k]->pos;
    }
    if (st == SL_OK && e->nkw) {
        s.args = calloc((size_t)e->nkw, sizeof *s.args);
        if (!s.args) st = sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    }
    for (int k = 0; k < e->nkw && st == SL_OK; k++) {
        result v;
        memset(&v, 0, sizeof v);
        st = eval(ps, e->kwvals[k], 1, &v);
        if (st != SL_OK) break;
        if (!strcmp(e->kwnames[k], "device")) {
            const char *d = !v.is_node && v.val.kind == SL_VAL_STR ? v.val.s : NULL;
            if (!d || (strcmp(d, "cpu") && strcmp(d, "gpu") && strcmp(d, "mixed"))) {
                result_free(&v);
                st = perr(ps, SL_EINVAL, e->kwvals[k]->pos,
                          "device must be \"cpu\", \"mixed\" or \"gpu\"");
                break;
            }
            snprintf(s.device, sizeof s.device, "%s", d);
            s.device_pos = e->kwvals[k]->pos;
            result_free(&v);
            continue;
        }
        sl__parse_arg *a = &s.args[s.num_args++];
        snprintf(a->name, sizeof a->name, "%s", e->kwnames[k]);
        a->pos = e->kwpos[k];
        if (v.is_node) {
            a->val.kind = SL_VAL_NODE;
            a->val.node = v.first;
        } else {
            a->val = v.val;
        }
    }
    if (st == SL_OK) {
        r->is_node = true;
        r->first = ps->prog->num_nodes;
        r->count = want;
        st = add_stmt(ps, &s, want);
    }
    if (st != SL_OK) stmt_clear(&s);
    return st;
}

static sl_status eval_call(parser *ps, const expr *e, int want, result *r) {
    char name[256];
    const expr *callee = e->a;
    if (dotted(callee, name, sizeof name) &&
        (has_prefix(name, "fn.") || has_prefix(name, "dali.fn.") ||
         has_prefix(name, "nvidia.dali.fn.")))
        return eval_op(ps, e, name, want, r);
    if (callee->kind == E_ATTR && (!strcmp(callee->s, "gpu") || !strcmp(callee->s, "cpu"))) {
        if (e->n || e->nkw)
            return perr(ps, SL_EINVAL, callee->npos, ".%s() takes no arguments", callee->s);
        if (ps->no_ops)
            return perr(ps, SL_EINVAL, callee->npos, ".%s() cannot be used here", callee->s);
        result base;
        memset(&base, 0, sizeof base);
        SL_TRY(eval(ps, callee->a, 1, &base));
        if (!base.is_node) {
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
        s.inputs[0] = base.first;
        s.input_pos[0] = callee->a->pos;
        s.num_inputs = 1;
        r->is_node = true;
        r->first = ps->prog->num_nodes;
        r->count = 1;
        sl_status st = add_stmt(ps, &s, 1);
        if (st != SL_OK) stmt_clear(&s);
        return st;
    }
    if (dotted(callee, name, sizeof name))
        return perr(ps, SL_EINVAL, e->pos,
                    "unsupported call '%s(...)': only fn.<operator>(...) and .gpu()/.cpu() can be "
                    "called in a pipeline",
                    name);
    return perr(ps, SL_EINVAL, e->pos,
                "unsupported call: only fn.<operator>(...) and .gpu()/.cpu() can be called");
}

static sl_status eval(parser *ps, const expr *e, int want, result *r) {
    memset(r, 0, sizeof *r);
    if (e->kind == E_CALL) return eval_call(ps, e, want, r);
    if (want != 1 && e->kind != E_TUPLE)
        return perr(ps, SL_EINVAL, e->pos, "cannot unpack one value into %d names", want);
    char name[256];
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
        r->val.kind = SL_VAL_BOOL;
        r->val.b = e->kind == E_TRUE;
        r->val.i = r->val.b;
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
        if (dotted(e, name, sizeof name)) {
            if (types_name(name)) {
                r->val.kind = SL_VAL_ENUM;
                if (!(r->val.s = strdup(strrchr(name, '.') + 1)))
                    return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
                return SL_OK;
            }
            if (has_prefix(name, "fn.") || has_prefix(name, "dali.fn."))
                return perr(ps, SL_EINVAL, e->pos, "'%s' is an operator: call it, %s(...)", name,
                            name);
            const expr *root = e;
            while (root->kind == E_ATTR) root = root->a;
            if (!env_find(ps, root->s) && !bind_find(ps, root->s) && strcmp(root->s, "types"))
                return eval_name(ps, root, r); /* names the undefined root */
        }
        if (!strcmp(e->s, "gpu") || !strcmp(e->s, "cpu"))
            return perr(ps, SL_EINVAL, e->npos, "'.%s' is a method: call it, .%s()", e->s, e->s);
        return perr(ps, SL_EINVAL, e->npos,
                    "unsupported attribute '.%s': only types.* constants can be used here", e->s);
    case E_NEG:
    case E_POS: {
        result a;
        SL_TRY(eval(ps, e->a, 1, &a));
        if (a.is_node && e->kind == E_POS) { /* +x is x */
            *r = a;
            return SL_OK;
        }
        if (a.is_node) return arith_op(ps, e, &a, NULL, r);
        if (!numeric(&a.val)) {
            st = perr(ps, SL_EINVAL, e->pos, "bad operand type for unary %c: %s",
                      e->kind == E_NEG ? '-' : '+', kind_name(&a.val));
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
        if (a.is_node || b.is_node)
            st = arith_op(ps, e, &a, &b, r);
        else
            st = arith(ps, e, &a.val, &b.val, &r->val);
        result_free(&a);
        result_free(&b);
        return st;
    }
    case E_LIST:
    case E_TUPLE: {
        if (want != 1) { /* a, b = x, y */
            if (e->n != want)
                return perr(ps, SL_EINVAL, e->pos, "cannot unpack %d values into %d names", e->n,
                            want);
            return perr(ps, SL_EINVAL, e->pos, "internal: unpacking a tuple here");
        }
        r->val.kind = SL_VAL_LIST;
        if (e->n && !(r->val.items = calloc((size_t)e->n, sizeof *r->val.items)))
            return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        for (int k = 0; k < e->n; k++) {
            result it;
            st = eval(ps, e->items[k], 1, &it);
            if (st != SL_OK) break;
            if (it.is_node) {
                st = perr(ps, SL_EINVAL, e->items[k]->pos,
                          "a list of op outputs is not supported here");
                break;
            }
            r->val.items[r->val.n++] = it.val;
        }
        if (st != SL_OK) sl__val_free(&r->val);
        return st;
    }
    case E_CALL:
        break;
    }
    return SL_OK;
}

/* ---- statements --------------------------------------------------------------------------------
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

/* targets = value */
static sl_status do_assign(parser *ps, const expr *lhs, const expr *rhs) {
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
            return perr(ps, SL_ESYNTAX, targets[k]->pos,
                        "cannot assign to this expression; assign to names (x = ..., a, b = ...)");
        for (int j = 0; j < k; j++)
            if (!strcmp(targets[j]->s, targets[k]->s))
                return perr(ps, SL_EINVAL, targets[k]->pos, "'%s' is assigned twice",
                            targets[k]->s);
    }
    /* a, b = x, y: item by item (all evaluated first, as Python does) */
    if (n > 1 && (rhs->kind == E_TUPLE || rhs->kind == E_LIST)) {
        if (rhs->n != n)
            return perr(ps, SL_EINVAL, rhs->pos, "cannot unpack %d values into %d names", rhs->n,
                        n);
        result rs[SL_MAX_OUTPUTS];
        sl_status st = SL_OK;
        int done = 0;
        for (; done < n && st == SL_OK; done++) st = eval(ps, rhs->items[done], 1, &rs[done]);
        if (st != SL_OK) done--;
        for (int k = 0; k < n && st == SL_OK; k++) {
            env_entry *v = env_set(ps, targets[k]->s);
            if (!v) {
                st = SL_ENOMEM;
                break;
            }
            if (rs[k].is_node) {
                v->kind = ENV_NODE;
                v->node = rs[k].first;
            } else {
                v->kind = ENV_CONST;
                v->val = rs[k].val;
                memset(&rs[k].val, 0, sizeof rs[k].val);
            }
        }
        for (int k = 0; k < done; k++) result_free(&rs[k]);
        return st;
    }
    result r;
    SL_TRY(eval(ps, rhs, n, &r));
    if (!r.is_node) {
        if (n > 1) {
            result_free(&r);
            return perr(ps, SL_EINVAL, rhs->pos, "cannot unpack a constant into %d names", n);
        }
        /* a module-level constant is a default: a bound value of the same name wins */
        if (!ps->in_def && bind_find(ps, targets[0]->s)) {
            result_free(&r);
            return SL_OK;
        }
        env_entry *v = env_set(ps, targets[0]->s);
        if (!v) {
            result_free(&r);
            return SL_ENOMEM;
        }
        v->kind = ENV_CONST;
        v->val = r.val;
        return SL_OK;
    }
    for (int k = 0; k < n; k++) {
        env_entry *v = env_set(ps, targets[k]->s);
        if (!v) return SL_ENOMEM;
        v->kind = ENV_NODE;
        v->node = r.first + k;
    }
    return SL_OK;
}

static sl_status parse_return(parser *ps) {
    token *kw = tok(ps);
    sl__parse_pos pos = kw->pos;
    next(ps);
    if (!ps->in_def && ps->seen_def)
        return perr(ps, SL_ESYNTAX, pos, "'return' outside the pipeline function");
    if (tok(ps)->kind == T_NEWLINE)
        return perr(ps, SL_EINVAL, pos, "return needs the pipeline's outputs: return a, b");
    expr *e;
    SL_TRY(parse_exprlist(ps, &e));
    SL_TRY(expect_newline(ps));
    const expr *const *items = (const expr *const *)&e;
    int n = 1;
    if (e->kind == E_TUPLE || e->kind == E_LIST) {
        items = (const expr *const *)e->items;
        n = e->n;
    }
    if (n == 0) return perr(ps, SL_EINVAL, e->pos, "the pipeline must return at least one output");
    if (n > SL_MAX_OUTPUTS)
        return perr(ps, SL_EINVAL, e->pos, "at most %d outputs are supported", SL_MAX_OUTPUTS);
    sl__parse_prog *prog = ps->prog;
    for (int k = 0; k < n; k++) {
        result r;
        SL_TRY(eval(ps, items[k], 1, &r));
        if (!r.is_node) {
            result_free(&r);
            return perr(ps, SL_EINVAL, items[k]->pos,
                        "a pipeline returns op outputs, not constants");
        }
        prog->outputs[k] = r.first;
        prog->output_pos[k] = items[k]->pos;
        if (items[k]->kind == E_NAME)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", items[k]->s);
        else
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "out%d", k);
    }
    prog->num_outputs = n;
    const sl_pipeline_decorator *d = &prog->deco;
    if (d->num_outputs) {
        if (d->num_outputs != n)
            return perr(ps, SL_EINVAL, e->pos,
                        "output_map names %d output%s but the pipeline returns %d", d->num_outputs,
                        d->num_outputs == 1 ? "" : "s", n);
        for (int k = 0; k < n; k++)
            snprintf(prog->output_names[k], sizeof prog->output_names[k], "%s", d->output_map[k]);
    }
    ps->returned = true;
    return SL_OK;
}

static sl_status unsupported_stmt(parser *ps, token *t) {
    return perr(ps, SL_ESYNTAX, t->pos,
                "'%.*s' statements are not supported in a pipeline (only assignments of op calls, "
                ".gpu()/.cpu() and return)",
                t->len, t->start);
}

/* One simple statement: assignment, return, pass, a docstring, or an import. */
static sl_status parse_simple(parser *ps) {
    token *t = tok(ps);
    if (is_name(t, "import") || is_name(t, "from")) return skip_import(ps);
    if (ps->returned && (ps->in_def || !ps->seen_def))
        return perr(ps, SL_ESYNTAX, t->pos, "statement after return");
    if (is_name(t, "return")) return parse_return(ps);
    if (is_name(t, "pass")) {
        next(ps);
        return expect_newline(ps);
    }
    if (is_name(t, "def"))
        return perr(ps, SL_ESYNTAX, t->pos,
                    ps->in_def ? "nested functions are not supported in a pipeline"
                               : "only one pipeline function per text");
    if (is_keyword(t) && !is_name(t, "True") && !is_name(t, "False") && !is_name(t, "None") &&
        !is_name(t, "lambda") && !is_name(t, "not"))
        return unsupported_stmt(ps, t);
    size_t nstmts = (size_t)ps->prog->num_stmts;
    sl__parse_pos start = t->pos;
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
        SL_TRY(do_assign(ps, lhs, rhs));
    } else if (is_op(t, ":")) {
        return perr(ps, SL_ESYNTAX, t->pos, "annotated assignments are not supported");
    } else if (t->kind == T_NEWLINE && lhs->kind == E_STR) {
        next(ps); /* a docstring */
    } else if (t->kind == T_NEWLINE) {
        return perr(ps, SL_ESYNTAX, lhs->pos,
                    "expected an assignment (name = fn.op(...)); a bare expression's value would "
                    "be lost");
    } else {
        SL_TRY(expect_newline(ps));
    }
    if (!ps->in_def && (size_t)ps->prog->num_stmts > nstmts) {
        if (ps->seen_def)
            return perr(ps, SL_ESYNTAX, start, "op calls must be inside the pipeline function");
        if (!ps->top_ops) ps->top_ops_pos = start;
        ps->top_ops = true;
    }
    return SL_OK;
}

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

static sl_status parse_decorator(parser *ps) {
    token *at = tok(ps);
    if (ps->seen_decorator) return perr(ps, SL_ESYNTAX, at->pos, "only one decorator is supported");
    if (ps->seen_def) return perr(ps, SL_ESYNTAX, at->pos, "only one pipeline function per text");
    ps->seen_decorator = true;
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
    sl_pipeline_decorator *d = &ps->prog->deco;
    d->present = true;
    if (e->kind != E_CALL) return SL_OK;
    if (e->n)
        return perr(ps, SL_EINVAL, e->items[0]->pos,
                    "decorator arguments must be keyword arguments (name=value)");
    bool sharding = false, devices = false;
    ps->no_ops = true;
    sl_status st = SL_OK;
    for (int k = 0; k < e->nkw && st == SL_OK; k++)
        st = decorator_arg(ps, e->kwnames[k], e->kwpos[k], e->kwvals[k], &sharding, &devices);
    ps->no_ops = false;
    return st;
}

static sl_status parse_def(parser *ps) {
    token *t = tok(ps);
    if (ps->seen_def) return perr(ps, SL_ESYNTAX, t->pos, "only one pipeline function per text");
    if (ps->top_ops)
        return perr(ps, SL_ESYNTAX, ps->top_ops_pos,
                    "op calls must be inside the pipeline function");
    ps->seen_def = true;
    sl_pipeline_decorator *d = &ps->prog->deco;
    next(ps);
    token *n = tok(ps);
    char b[64];
    if (n->kind != T_NAME || is_keyword(n))
        return perr(ps, SL_ESYNTAX, n->pos, "expected the function's name, got %s",
                    tok_desc(n, b, sizeof b));
    if (n->len >= (int)sizeof d->func_name) return perr(ps, SL_ESYNTAX, n->pos, "name too long");
    snprintf(d->func_name, sizeof d->func_name, "%.*s", n->len, n->start);
    ps->def_pos = n->pos;
    next(ps);
    SL_TRY(expect_op(ps, "(", "after the function's name"));
    /* parameters: name [: annotation] [= default], ... */
    expr *defaults[16];
    while (!is_op(tok(ps), ")")) {
        token *p = tok(ps);
        if (is_op(p, "*") || is_op(p, "**") || is_op(p, "/"))
            return perr(ps, SL_ESYNTAX, p->pos, "'%.*s' parameters are not supported", p->len,
                        p->start);
        if (p->kind != T_NAME || is_keyword(p))
            return perr(ps, SL_ESYNTAX, p->pos, "expected a parameter name, got %s",
                        tok_desc(p, b, sizeof b));
        if (d->num_params == (int)SL_ARRAY_LEN(d->params))
            return perr(ps, SL_EINVAL, p->pos, "too many parameters (at most %d)",
                        (int)SL_ARRAY_LEN(d->params));
        if (p->len >= (int)sizeof d->params[0])
            return perr(ps, SL_ESYNTAX, p->pos, "name too long");
        for (int k = 0; k < d->num_params; k++)
            if ((int)strlen(d->params[k]) == p->len &&
                !strncmp(d->params[k], p->start, (size_t)p->len))
                return perr(ps, SL_ESYNTAX, p->pos, "duplicate parameter '%.*s'", p->len, p->start);
        snprintf(d->params[d->num_params], sizeof d->params[0], "%.*s", p->len, p->start);
        next(ps);
        expr *ann = NULL, *def = NULL;
        if (is_op(tok(ps), ":")) {
            next(ps);
            SL_TRY(parse_expr(ps, &ann)); /* annotations are ignored */
        }
        if (is_op(tok(ps), "=")) {
            next(ps);
            SL_TRY(parse_expr(ps, &def));
        }
        defaults[d->num_params++] = def;
        if (is_op(tok(ps), ",")) {
            next(ps);
        } else if (!is_op(tok(ps), ")")) {
            return perr(ps, SL_ESYNTAX, tok(ps)->pos,
                        "expected ',' or ')' in the parameters, got %s",
                        tok_desc(tok(ps), b, sizeof b));
        }
    }
    next(ps);
    if (is_op(tok(ps), "->")) {
        next(ps);
        expr *ann;
        SL_TRY(parse_expr(ps, &ann));
    }
    SL_TRY(expect_op(ps, ":", "at the end of the def line"));
    if (ps->header_only) {
        ps->header_done = true;
        return SL_OK;
    }
    if (tok(ps)->kind != T_NEWLINE)
        return perr(ps, SL_ESYNTAX, tok(ps)->pos, "the function body must start on the next line");
    next(ps);
    if (tok(ps)->kind != T_INDENT)
        return perr(ps, SL_ESYNTAX, tok(ps)->pos, "expected an indented block after the def line");
    next(ps);
    /* bind the parameters: a bound value, else the default, else unbound (an error when used) */
    for (int k = 0; k < d->num_params; k++) {
        env_entry *v;
        const sl_pipeline_bind *bd = bind_find(ps, d->params[k]);
        sl__val val;
        memset(&val, 0, sizeof val);
        env_kind kind = ENV_CONST;
        if (bd)
            SL_TRY(sl__parse_bind_value(bd->value ? bd->value : "", &val, ps->err));
        else if (defaults[k])
            SL_TRY(eval_const(ps, defaults[k], &val, "a default"));
        else
            kind = ENV_UNBOUND;
        if (!(v = env_set(ps, d->params[k]))) {
            sl__val_free(&val);
            return SL_ENOMEM;
        }
        v->kind = kind;
        v->val = val;
    }
    ps->in_def = true;
    ps->returned = false;
    for (;;) {
        token *s = tok(ps);
        if (s->kind == T_DEDENT) {
            next(ps);
            break;
        }
        if (s->kind == T_END) break;
        if (s->kind == T_NEWLINE) {
            next(ps);
            continue;
        }
        if (s->kind == T_INDENT) return perr(ps, SL_ESYNTAX, s->pos, "unexpected indent");
        if (is_op(s, "@"))
            return perr(ps, SL_ESYNTAX, s->pos, "decorators inside the function are not supported");
        SL_TRY(parse_simple(ps));
    }
    ps->in_def = false;
    if (!ps->returned)
        return perr(ps, SL_EINVAL, ps->def_pos,
                    "pipeline function '%s' does not return its outputs (return a, b)",
                    d->func_name);
    return SL_OK;
}

static sl_status parse_file(parser *ps) {
    for (;;) {
        token *t = tok(ps);
        if (t->kind == T_END) break;
        if (ps->header_done) break;
        if (t->kind == T_NEWLINE) {
            next(ps);
            continue;
        }
        if (t->kind == T_INDENT) return perr(ps, SL_ESYNTAX, t->pos, "unexpected indent");
        if (t->kind == T_DEDENT) { /* cannot happen at the top level; be safe */
            next(ps);
            continue;
        }
        if (is_op(t, "@")) {
            SL_TRY(parse_decorator(ps));
            token *d = tok(ps);
            if (!is_name(d, "def")) {
                char b[64];
                return perr(ps, SL_ESYNTAX, d->pos, "expected 'def' after the decorator, got %s",
                            tok_desc(d, b, sizeof b));
            }
            continue;
        }
        if (is_name(t, "def")) {
            SL_TRY(parse_def(ps));
            continue;
        }
        if (ps->header_only) { /* skip anything else (blocks too) up to the end of its line */
            while (tok(ps)->kind != T_NEWLINE && tok(ps)->kind != T_END) next(ps);
            while (tok(ps)->kind == T_NEWLINE || tok(ps)->kind == T_INDENT ||
                   tok(ps)->kind == T_DEDENT)
                next(ps);
            continue;
        }
        SL_TRY(parse_simple(ps));
    }
    if (ps->header_only) return SL_OK;
    if (!ps->seen_def && !ps->returned) {
        token *e = tok(ps);
        return perr(ps, SL_EINVAL, e->pos,
                    ps->prog->num_stmts ? "the pipeline has no return statement"
                                        : "no pipeline here: expected a def or op calls");
    }
    return SL_OK;
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

static sl_status run_parser(const char *text, const char *filename, int nbind,
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
        ps.toks = l.toks;
        ps.ntok = l.ntok;
        ps.err = err;
        ps.nbind = nbind;
        ps.binds = binds;
        ps.prog = prog;
        ps.header_only = header_only;
        st = parse_file(&ps);
        for (int i = 0; i < ps.nenv; i++) sl__val_free(&ps.env[i].val);
        free(ps.env);
        free(ps.env_hash);
        arena_free(&ps);
    }
    lex_free(&l);
    return st;
}

sl_status sl__parse_program(const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl__parse_prog **out, sl_err *err) {
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
    sl_status st = run_parser(text, filename, nbind, binds, false, prog, err);
    if (st != SL_OK) {
        sl__parse_prog_free(prog);
        return st;
    }
    *out = prog;
    return SL_OK;
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

sl_status sl__parse_header(const char *text, const char *filename, sl_pipeline_decorator *out,
                           sl_err *err) {
    deco_init(out);
    if (!filename) filename = "<text>";
    if (!text) return sl_err_set(err, SL_EINVAL, "%s: no pipeline text", filename);
    sl__parse_prog *prog = sl__calloc(1, sizeof *prog, err);
    if (!prog) return SL_ENOMEM;
    deco_init(&prog->deco);
    sl_status st = run_parser(text, filename, 0, NULL, true, prog, err);
    if (st == SL_OK) *out = prog->deco;
    sl__parse_prog_free(prog);
    return st;
}

sl_status sl_pipeline_text_decorator(const char *text, const char *filename,
                                     sl_pipeline_decorator *out, sl_err *err) {
    return sl__parse_header(text, filename, out, err);
}
