/* SPDX-License-Identifier: Apache-2.0 */
/* WebDataset tar shards (tar.h). A tar file is a run of 512-byte blocks: a header (name at 0, size
 * in octal at 124 -- or base-256 when its first byte has the high bit --, checksum at 148, type at
 * 156, ustar magic at 257, name prefix at 345), then the member's data rounded up to whole blocks;
 * two zero blocks end it. GNU 'L' members hold the next member's long name, PAX 'x' members may
 * give it as a path record; other non-regular members are skipped. */
#include "io/wds.h"

#include "core/alloc.h"
#include "core/log.h"
#include "io/mapfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct member {
    int32_t file;
    uint32_t name; /* offset of its path in names */
    uint32_t ext;  /* offset of its extension in names (after the key's '.') */
    uint32_t keylen;
    size_t off, len; /* its data in the file's map */
} member;

typedef struct sample {
    int64_t first; /* members [first, first + count) */
    int32_t count;
    char *key;
} sample;

typedef struct tarfile {
    char *path;
    const uint8_t *map;
    size_t size;
} tarfile;

struct sl__wds {
    int nfiles;
    tarfile *files;
    member *m;
    int64_t nm, mcap;
    sample *s;
    int64_t ns, scap;
    char *names;
    size_t nlen, ncap;
};

void sl__wds_close(sl__wds *w) {
    if (!w) return;
    for (int f = 0; f < w->nfiles; f++) {
        sl__mapfile_unmap(w->files[f].map, w->files[f].size);
        free(w->files[f].path);
    }
    for (int64_t i = 0; i < w->ns; i++) free(w->s[i].key);
    free(w->files);
    free(w->m);
    free(w->s);
    free(w->names);
    free(w);
}

/* A numeric header field: octal digits (leading spaces, ended by NUL or space), or base-256 when
 * the first byte has the high bit (GNU, for sizes of 8 GiB and more). *ok is false for anything
 * else, a negative base-256 value or one of 2^62 and more. */
static int64_t octal(const uint8_t *p, int n, bool *ok) {
    *ok = false;
    if (p[0] & 0x80) {
        if (p[0] & 0x40) return 0; /* negative */
        uint64_t v = p[0] & 0x3f;
        for (int i = 1; i < n; i++) {
            if (v >> 54) return 0; /* the next shift would pass 2^62 */
            v = v << 8 | p[i];
        }
        *ok = v < ((uint64_t)1 << 62);
        return *ok ? (int64_t)v : 0;
    }
    int64_t v = 0; /* n <= 12 octal digits: below 2^36 */
    int i = 0;
    while (i < n && p[i] == ' ') i++;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) v = v * 8 + (p[i] - '0');
    *ok = i == n || p[i] == 0 || p[i] == ' ';
    return v;
}

static sl_status add_name(sl__wds *w, const char *s, size_t n, uint32_t *at, sl_err *err) {
    if (w->nlen + n + 1 > w->ncap) {
        size_t cap = w->ncap ? w->ncap * 2 : 4096;
        while (cap < w->nlen + n + 1) cap *= 2;
        char *g = realloc(w->names, cap);
        if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory");
        w->names = g, w->ncap = cap;
    }
    if (w->nlen + n + 1 > UINT32_MAX) return sl_err_set(err, SL_ENOMEM, "too many member names");
    memcpy(w->names + w->nlen, s, n);
    w->names[w->nlen + n] = 0;
    *at = (uint32_t)w->nlen;
    w->nlen += n + 1;
    return SL_OK;
}

/* a regular member: indexed when its file name has a key and an extension */
static sl_status add_member(sl__wds *w, int f, const char *name, size_t off, size_t len,
                            sl_err *err) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strchr(base, '.');
    if (!dot || dot == base || !dot[1]) return SL_OK; /* no key or no extension: not a part */
    if (w->nm == w->mcap) {
        int64_t cap = w->mcap ? w->mcap * 2 : 1024;
        member *g = realloc(w->m, (size_t)cap * sizeof *g);
        if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory");
        w->m = g, w->mcap = cap;
    }
    member *m = &w->m[w->nm];
    SL_TRY(add_name(w, name, strlen(name), &m->name, err));
    m->file = f;
    m->keylen = (uint32_t)(dot - name);
    m->ext = m->name + m->keylen + 1;
    m->off = off, m->len = len;
    w->nm++;
    return SL_OK;
}

/* The path record of a PAX header's data, if any, into name. The data is records "LEN key=value\n"
 * where LEN, in decimal, counts the whole record: each LEN is checked for overflow and against
 * the bytes left, so every step moves on by at least one record or returns false (malformed). */
static bool pax_path(const uint8_t *p, size_t n, char *name, size_t cap) {
    size_t i = 0;
    while (i < n) {
        size_t len = 0, j = i, left = n - i;
        while (j < n && p[j] >= '0' && p[j] <= '9') {
            size_t d = (size_t)(p[j++] - '0');
            if (d > left || len > (left - d) / 10) return false; /* more than is left */
            len = len * 10 + d;
        }
        /* "LEN " then at least "k=\n" */
        if (j == i || j >= n || p[j] != ' ' || len < (j - i) + 4) return false;
        const uint8_t *kv = p + j + 1, *end = p + i + len; /* "key=value\n" */
        if (end[-1] != '\n') return false;
        if (end - kv > 5 && !memcmp(kv, "path=", 5)) {
            size_t vl = (size_t)(end - 1 - (kv + 5));
            if (vl < cap) memcpy(name, kv + 5, vl), name[vl] = 0;
        }
        i += len;
    }
    return true;
}

static sl_status index_file(sl__wds *w, int f, sl_err *err) {
    const tarfile *t = &w->files[f];
    char longname[4096] = "";
    size_t off = 0;
    while (off + 512 <= t->size) {
        const uint8_t *h = t->map + off;
        bool zero = true;
        for (int i = 0; i < 512 && zero; i++) zero = h[i] == 0;
        if (zero) return SL_OK; /* the end */
        unsigned sum = 0;
        for (int i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : h[i];
        bool ok1, ok2;
        int64_t want = octal(h + 148, 8, &ok1), size = octal(h + 124, 12, &ok2);
        if (!ok1 || (unsigned)want != sum)
            return sl_err_set(err, SL_EFORMAT, "%s: bad tar header at offset %zu (checksum)",
                              t->path, off);
        if (!ok2)
            return sl_err_set(err, SL_EFORMAT, "%s: bad tar header at offset %zu (size field)",
                              t->path, off);
        if (size < 0 || (uint64_t)size > t->size - off - 512)
            return sl_err_set(err, SL_EFORMAT,
                              "%s: tar member at offset %zu runs past the end of the file", t->path,
                              off);
        size_t data = off + 512, next = data + (((size_t)size + 511) & ~(size_t)511);
        char type = (char)h[156];
        char name[4096];
        if (longname[0]) {
            snprintf(name, sizeof name, "%s", longname);
            longname[0] = 0;
        } else {
            char nm[101], prefix[156];
            memcpy(nm, h, 100), nm[100] = 0;
            memcpy(prefix, h + 345, 155), prefix[155] = 0;
            bool ustar = !memcmp(h + 257, "ustar", 5);
            if (ustar && prefix[0])
                snprintf(name, sizeof name, "%s/%s", prefix, nm);
            else
                snprintf(name, sizeof name, "%s", nm);
        }
        if (type == 'L') { /* GNU: the next member's name */
            size_t n = (size_t)size < sizeof longname ? (size_t)size : sizeof longname - 1;
            memcpy(longname, t->map + data, n);
            longname[n] = 0;
        } else if (type == 'x') { /* PAX: may carry the next member's path */
            if (!pax_path(t->map + data, (size_t)size, longname, sizeof longname))
                return sl_err_set(err, SL_EFORMAT,
                                  "%s: malformed PAX extended header at offset %zu (a record "
                                  "length that overflows or runs past its %lld bytes)",
                                  t->path, off, (long long)size);
        } else if (type == '0' || type == '\0' || type == '7') {
            SL_TRY(add_member(w, f, name, data, (size_t)size, err));
        }
        off = next;
    }
    if (off < t->size)
        return sl_err_set(err, SL_EFORMAT, "%s: truncated tar header at offset %zu", t->path, off);
    return SL_OK; /* ended without the zero blocks: accepted (some writers omit them) */
}

sl_status sl__wds_open(int npaths, const char *const *paths, sl__wds **out, sl_err *err) {
    *out = NULL;
    if (npaths < 1) return sl_err_set(err, SL_EINVAL, "no tar files given");
    sl__wds *w = sl__calloc(1, sizeof *w, err);
    if (!w) return SL_ENOMEM;
    w->files = sl__calloc((size_t)npaths, sizeof *w->files, err);
    sl_status st = w->files ? SL_OK : SL_ENOMEM;
    for (int f = 0; f < npaths && st == SL_OK; f++) {
        w->nfiles = f + 1;
        w->files[f].path = strdup(paths[f]);
        st = w->files[f].path
                 ? sl__mapfile_map(w->files[f].path, &w->files[f].map, &w->files[f].size, err)
                 : sl_err_set(err, SL_ENOMEM, "out of memory");
        if (st == SL_OK) st = index_file(w, f, err);
    }
    /* samples: runs of members of one file with one key */
    for (int64_t i = 0; i < w->nm && st == SL_OK; i++) {
        const member *m = &w->m[i];
        const sample *last = w->ns ? &w->s[w->ns - 1] : NULL;
        const member *lm = last ? &w->m[last->first] : NULL;
        if (lm && lm->file == m->file && lm->keylen == m->keylen &&
            !memcmp(w->names + lm->name, w->names + m->name, m->keylen)) {
            w->s[w->ns - 1].count++;
            continue;
        }
        if (w->ns == w->scap) {
            int64_t cap = w->scap ? w->scap * 2 : 1024;
            sample *g = realloc(w->s, (size_t)cap * sizeof *g);
            if (!g) {
                st = sl_err_set(err, SL_ENOMEM, "out of memory");
                break;
            }
            w->s = g, w->scap = cap;
        }
        sample *s = &w->s[w->ns];
        s->first = i, s->count = 1;
        s->key = strndup(w->names + m->name, m->keylen);
        if (!s->key)
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
        else
            w->ns++;
    }
    if (st == SL_OK && w->ns == 0)
        st = sl_err_set(err, SL_EINVAL, "%s%s: no samples (members named key.extension)", paths[0],
                        npaths > 1 ? " and the other tar files" : "");
    if (st != SL_OK) {
        sl__wds_close(w);
        return st;
    }
    *out = w;
    return SL_OK;
}

int64_t sl__wds_count(const sl__wds *w) {
    return w->ns;
}
const char *sl__wds_key(const sl__wds *w, int64_t i) {
    return w->s[i].key;
}
const char *sl__wds_path(const sl__wds *w, int64_t i) {
    return w->files[w->m[w->s[i].first].file].path;
}

bool sl__wds_find(const sl__wds *w, int64_t i, const char *exts, bool case_sensitive,
                  const uint8_t **data, size_t *len) {
    const sample *s = &w->s[i];
    for (const char *e = exts; *e;) {
        const char *semi = strchr(e, ';');
        size_t n = semi ? (size_t)(semi - e) : strlen(e);
        for (int32_t k = 0; k < s->count; k++) {
            const member *m = &w->m[s->first + k];
            const char *x = w->names + m->ext;
            if (strlen(x) == n && (case_sensitive ? !strncmp(x, e, n) : !strncasecmp(x, e, n))) {
                *data = w->files[m->file].map + m->off;
                *len = m->len;
                return true;
            }
        }
        e += n + (semi ? 1 : 0);
    }
    return false;
}

void sl__wds_filter(sl__wds *w, bool (*keep)(const sl__wds *w, int64_t i, void *user), void *user) {
    int64_t n = 0;
    for (int64_t i = 0; i < w->ns; i++) {
        if (keep(w, i, user))
            w->s[n++] = w->s[i];
        else
            free(w->s[i].key);
    }
    w->ns = n;
}
