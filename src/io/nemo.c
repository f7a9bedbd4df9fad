/* SPDX-License-Identifier: Apache-2.0 */
/* NeMo ASR manifests (io/nemo.h): the files read whole, split into lines, each line parsed by the
 * small JSON reader below. */
#include "io/nemo.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_MANIFEST ((int64_t)1 << 32) /* bytes */
#define MAX_DEPTH    64

struct sl__nemo {
    int nman;
    char **manifests;
    sl__nemo_entry *e;
    int64_t n, cap, skipped;
};

/* ---- one line of JSON ---- */

typedef struct cur {
    const char *p, *end;
    sl_err *err;
} cur;

static void ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static sl_status fail(cur *c, const char *what, const char *start) {
    return sl_err_set(c->err, SL_EFORMAT, "%s at column %lld", what, (long long)(c->p - start) + 1);
}

static int hex4(const char *p, const char *end) {
    if (end - p < 4) return -1;
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = p[k];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t utf8(unsigned cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 63)),
               o[2] = (char)(0x80 | (cp & 63)), 3;
    return o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 63)),
           o[2] = (char)(0x80 | ((cp >> 6) & 63)), o[3] = (char)(0x80 | (cp & 63)), 4;
}

/* a string at c->p ('"'); *out malloc'd (NULL: skipped), *len its bytes */
static sl_status string(cur *c, const char *start, char **out, size_t *len) {
    c->p++;
    const char *s = c->p;
    size_t cap = 0;
    while (c->p < c->end && *c->p != '"') {
        if ((unsigned char)*c->p < 0x20) return fail(c, "a control character in a string", start);
        if (*c->p == '\\') c->p++;
        if (c->p < c->end) c->p++;
        cap++;
    }
    if (c->p >= c->end) return fail(c, "a string without its closing quote", start);
    const char *e = c->p;
    c->p++;
    if (!out) return SL_OK;
    char *o = malloc(cap * 3 + 1), *w = o;
    if (!o) return sl_err_set(c->err, SL_ENOMEM, "out of memory");
    for (const char *q = s; q < e;) {
        if (*q != '\\') {
            *w++ = *q++;
            continue;
        }
        q++;
        char ch = *q++;
        switch (ch) {
        case '"':
            *w++ = '"';
            break;
        case '\\':
            *w++ = '\\';
            break;
        case '/':
            *w++ = '/';
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 't':
            *w++ = '\t';
            break;
        case 'u': {
            int v = hex4(q, e);
            if (v < 0) {
                free(o);
                c->p = q;
                return fail(c, "a bad \\u escape", start);
            }
            q += 4;
            unsigned cp = (unsigned)v;
            if (cp >= 0xD800 && cp < 0xDC00 && e - q >= 6 && q[0] == '\\' && q[1] == 'u') {
                int lo = hex4(q + 2, e);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (unsigned)(lo - 0xDC00);
                    q += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* a lone surrogate */
            w += utf8(cp, w);
            break;
        }
        default:
            free(o);
            c->p = q - 1;
            return fail(c, "an unknown escape in a string", start);
        }
    }
    *w = 0;
    *out = o;
    *len = (size_t)(w - o);
    return SL_OK;
}

static sl_status number(cur *c, const char *start, double *out) {
    const char *s = c->p;
    if (c->p < c->end && *c->p == '-') c->p++;
    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' ||
                             *c->p == 'E' || *c->p == '+' || *c->p == '-'))
        c->p++;
    char buf[64];
    size_t n = (size_t)(c->p - s);
    if (n == 0 || n >= sizeof buf) return fail(c, "a bad number", start);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *endp;
    errno = 0;
    double v = strtod(buf, &endp);
    if (*endp || endp == buf) return fail(c, "a bad number", start);
    *out = v;
    return SL_OK;
}

/* skips any value (nested ones too) */
static sl_status skip(cur *c, const char *start, int depth) {
    ws(c);
    if (c->p >= c->end) return fail(c, "a value missing", start);
    if (depth > MAX_DEPTH) return fail(c, "values nested too deep", start);
    char ch = *c->p;
    if (ch == '"') return string(c, start, NULL, NULL);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        c->p++;
        ws(c);
        if (c->p < c->end && *c->p == close) return c->p++, SL_OK;
        for (;;) {
            if (ch == '{') {
                ws(c);
                if (c->p >= c->end || *c->p != '"') return fail(c, "a key expected", start);
                SL_TRY(string(c, start, NULL, NULL));
                ws(c);
                if (c->p >= c->end || *c->p != ':') return fail(c, "':' expected", start);
                c->p++;
            }
            SL_TRY(skip(c, start, depth + 1));
            ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            if (c->p < c->end && *c->p == close) return c->p++, SL_OK;
            return fail(c, "',' or a closing bracket expected", start);
        }
    }
    if (c->end - c->p >= 4 && (!memcmp(c->p, "true", 4) || !memcmp(c->p, "null", 4)))
        return c->p += 4, SL_OK;
    if (c->end - c->p >= 5 && !memcmp(c->p, "false", 5)) return c->p += 5, SL_OK;
    double d;
    return number(c, start, &d);
}

void sl__nemo_entry_clear(sl__nemo_entry *e) {
    free(e->name), free(e->path), free(e->text);
    memset(e, 0, sizeof *e);
}

static sl_status seconds(cur *c, const char *start, const char *key, double *out) {
    ws(c);
    if (c->p < c->end && *c->p == '"') return fail(c, "a number expected (a string given)", start);
    if (c->end - c->p >= 4 && !memcmp(c->p, "null", 4)) return c->p += 4, SL_OK;
    double v;
    SL_TRY(number(c, start, &v));
    if (!isfinite(v) || v < 0 || v > 1e7)
        return sl_err_set(c->err, SL_EFORMAT, "\"%s\": %g seconds (0 to 1e7)", key, v);
    *out = v;
    return SL_OK;
}

sl_status sl__nemo_parse_line(const char *line, size_t len, sl__nemo_entry *e, sl_err *err) {
    memset(e, 0, sizeof *e);
    e->duration = e->offset = -1;
    cur c = {line, line + len, err};
    ws(&c);
    if (c.p >= c.end) return SL_EOF;
    sl_status st = SL_OK;
    if (*c.p != '{') return fail(&c, "not a JSON object ('{' expected)", line);
    c.p++;
    ws(&c);
    bool first = true;
    while (st == SL_OK) {
        ws(&c);
        if (c.p < c.end && *c.p == '}' && first) {
            c.p++;
            break;
        }
        if (c.p >= c.end || *c.p != '"') {
            st = fail(&c, "a key expected", line);
            break;
        }
        char *key = NULL;
        size_t klen;
        st = string(&c, line, &key, &klen);
        if (st) break;
        ws(&c);
        if (c.p >= c.end || *c.p != ':')
            st = fail(&c, "':' expected", line);
        else
            c.p++;
        ws(&c);
        bool is_path = !strcmp(key, "audio_filepath"), is_text = !strcmp(key, "text");
        if (st) {
        } else if (is_path || is_text) {
            char **dst = is_path ? &e->name : &e->text;
            if (*dst)
                st = sl_err_set(err, SL_EFORMAT, "\"%s\" given twice", key);
            else if (c.p >= c.end || *c.p != '"')
                st = fail(&c,
                          is_path ? "\"audio_filepath\" must be a string"
                                  : "\"text\" must be a string",
                          line);
            else {
                size_t n;
                st = string(&c, line, dst, &n);
                if (!st && is_text) e->text_len = n;
                if (!st && is_path && (n == 0 || strlen(*dst) != n))
                    st = sl_err_set(err, SL_EFORMAT, "\"audio_filepath\" is empty or holds a NUL");
            }
        } else if (!strcmp(key, "duration")) {
            st = seconds(&c, line, key, &e->duration);
        } else if (!strcmp(key, "offset")) {
            st = seconds(&c, line, key, &e->offset);
        } else {
            st = skip(&c, line, 1);
        }
        free(key);
        if (st) break;
        first = false;
        ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        st = fail(&c, "',' or '}' expected", line);
    }
    if (!st) {
        ws(&c);
        if (c.p < c.end) st = fail(&c, "text after the object", line);
    }
    if (!st && !e->name) st = sl_err_set(err, SL_EFORMAT, "no \"audio_filepath\"");
    if (!st && !e->text) {
        e->text = calloc(1, 1);
        if (!e->text) st = sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    if (st) sl__nemo_entry_clear(e);
    return st;
}

/* ---- manifests ---- */

static sl_status add_text(sl__nemo *m, int man, const char *name, const char *text, size_t len,
                          double min_d, double max_d, sl_err *err) {
    const char *slash = strrchr(name, '/');
    size_t dirlen = slash ? (size_t)(slash - name) + 1 : 0;
    int64_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        line++;
        sl__nemo_entry e;
        sl_status st = sl__nemo_parse_line(text + at, n, &e, err);
        at += n + (nl ? 1 : 0);
        if (st == SL_EOF) continue;
        if (st) return sl_err_prefix(err, "%s:%lld: ", name, (long long)line);
        e.line = line;
        e.manifest = man;
        bool filtered = min_d > 0 || max_d > 0;
        if (filtered && e.duration < 0) {
            sl__nemo_entry_clear(&e);
            return sl_err_set(err, SL_EFORMAT,
                              "%s:%lld: no \"duration\", which min_duration / max_duration need",
                              name, (long long)line);
        }
        if (filtered && (e.duration < min_d || (max_d > 0 && e.duration > max_d))) {
            m->skipped++;
            sl__nemo_entry_clear(&e);
            continue;
        }
        if (e.name[0] == '/' || dirlen == 0) {
            e.path = strdup(e.name);
        } else {
            e.path = malloc(dirlen + strlen(e.name) + 1);
            if (e.path) memcpy(e.path, name, dirlen), strcpy(e.path + dirlen, e.name);
        }
        if (!e.path) {
            sl__nemo_entry_clear(&e);
            return sl_err_set(err, SL_ENOMEM, "out of memory");
        }
        if (m->n == m->cap) {
            int64_t nc = m->cap ? 2 * m->cap : 256;
            sl__nemo_entry *ne = realloc(m->e, (size_t)nc * sizeof *ne);
            if (!ne) {
                sl__nemo_entry_clear(&e);
                return sl_err_set(err, SL_ENOMEM, "out of memory");
            }
            m->e = ne, m->cap = nc;
        }
        m->e[m->n++] = e;
    }
    return SL_OK;
}

static sl_status check_filters(double min_d, double max_d, sl_err *err) {
    if (!isfinite(min_d) || min_d < 0)
        return sl_err_set(err, SL_EINVAL, "min_duration %g (>= 0)", min_d);
    if (!isfinite(max_d) || max_d < 0)
        return sl_err_set(err, SL_EINVAL, "max_duration %g (>= 0; 0: no limit)", max_d);
    if (max_d > 0 && max_d < min_d)
        return sl_err_set(err, SL_EINVAL, "max_duration %g is under min_duration %g", max_d, min_d);
    return SL_OK;
}

sl_status sl__nemo_open_text(const char *name, const char *text, size_t len, double min_duration,
                             double max_duration, sl__nemo **out, sl_err *err) {
    SL_TRY(check_filters(min_duration, max_duration, err));
    sl__nemo *m = sl__calloc(1, sizeof *m, err);
    if (!m) return SL_ENOMEM;
    m->manifests = sl__calloc(1, sizeof(char *), err);
    sl_status st = m->manifests ? SL_OK : SL_ENOMEM;
    if (!st) {
        m->nman = 1;
        m->manifests[0] = strdup(name);
        if (!m->manifests[0]) st = sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    if (!st) st = add_text(m, 0, name, text, len, min_duration, max_duration, err);
    if (st) {
        sl__nemo_close(m);
        return st;
    }
    *out = m;
    return SL_OK;
}

sl_status sl__nemo_open(int n, const char *const *manifests, double min_duration,
                        double max_duration, sl__nemo **out, sl_err *err) {
    if (n < 1) return sl_err_set(err, SL_EINVAL, "no manifest given");
    SL_TRY(check_filters(min_duration, max_duration, err));
    sl__nemo *m = sl__calloc(1, sizeof *m, err);
    if (!m) return SL_ENOMEM;
    m->manifests = sl__calloc((size_t)n, sizeof(char *), err);
    sl_status st = m->manifests ? SL_OK : SL_ENOMEM;
    for (int k = 0; k < n && !st; k++) {
        m->nman = k + 1;
        m->manifests[k] = strdup(manifests[k]);
        if (!m->manifests[k]) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            break;
        }
        FILE *f = fopen(manifests[k], "rb");
        struct stat sb;
        if (!f) {
            st = sl_err_set(err, SL_EIO, "%s: %s", manifests[k], strerror(errno));
            break;
        }
        if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
            fclose(f);
            st = sl_err_set(err, SL_EIO, "%s: not a regular file", manifests[k]);
            break;
        }
        if ((int64_t)sb.st_size > MAX_MANIFEST) {
            fclose(f);
            st = sl_err_set(err, SL_EINVAL, "%s: %lld bytes (at most 4 GiB)", manifests[k],
                            (long long)sb.st_size);
            break;
        }
        size_t sz = (size_t)sb.st_size;
        char *text = malloc(sz + 1);
        if (!text) {
            fclose(f);
            st = sl_err_set(err, SL_ENOMEM, "%s: out of memory (%zu bytes)", manifests[k], sz);
            break;
        }
        size_t got = fread(text, 1, sz, f);
        int bad = ferror(f);
        fclose(f);
        if (bad || got != sz) {
            free(text);
            st = sl_err_set(err, SL_EIO, "%s: read %zu of %zu bytes", manifests[k], got, sz);
            break;
        }
        st = add_text(m, k, manifests[k], text, sz, min_duration, max_duration, err);
        free(text);
    }
    if (st) {
        sl__nemo_close(m);
        return st;
    }
    *out = m;
    return SL_OK;
}

int64_t sl__nemo_count(const sl__nemo *m) {
    return m->n;
}
int64_t sl__nemo_skipped(const sl__nemo *m) {
    return m->skipped;
}
const sl__nemo_entry *sl__nemo_get(const sl__nemo *m, int64_t i) {
    return &m->e[i];
}
const char *sl__nemo_manifest(const sl__nemo *m, int64_t i) {
    return m->manifests[m->e[i].manifest];
}

void sl__nemo_close(sl__nemo *m) {
    if (!m) return;
    for (int64_t i = 0; i < m->n; i++) sl__nemo_entry_clear(&m->e[i]);
    free(m->e);
    for (int k = 0; k < m->nman; k++) free(m->manifests[k]);
    free(m->manifests);
    free(m);
}
