/* SPDX-License-Identifier: Apache-2.0 */
/* WebDataset tar shards (tar.h). A tar file is a run of 512-byte blocks: a header (name at 0, size
 * in octal at 124 -- or base-256 when its first byte has the high bit --, checksum at 148, type at
 * 156, ustar magic at 257, name prefix at 345), then the member's data rounded up to whole blocks;
 * two zero blocks end it. GNU 'L' members hold the next member's long name, PAX 'x' members may
 * give it as a path record; other non-regular members are skipped.
 * An index file (DALI's wds2idx format, below) may say how a file's members form samples: it is
 * read and checked, line by line, against the walk of the tar file, which is made either way. */
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
    bool first;      /* a sample starts here */
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
    m->first = false;
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

/* Marks where file f's members [a, w->nm) start samples when no index says: at every change of key
 * (consecutive members of one key form a sample, as WebDataset writes them). */
static void runs_of_keys(sl__wds *w, int64_t a) {
    for (int64_t i = a; i < w->nm; i++) {
        const member *m = &w->m[i], *p = i > a ? &w->m[i - 1] : NULL;
        w->m[i].first = !p || p->keylen != m->keylen ||
                        memcmp(w->names + p->name, w->names + m->name, m->keylen) != 0;
    }
}

/* One token of an index line: [*i, end of token) of the line [*i, n), blanks skipped first; false
 * at the line's end. */
static bool token(const uint8_t *p, size_t n, size_t *i, const char **tok, size_t *len) {
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\r')) (*i)++;
    if (*i >= n) return false;
    size_t j = *i;
    while (j < n && p[j] != ' ' && p[j] != '\t' && p[j] != '\r') j++;
    *tok = (const char *)p + *i;
    *len = j - *i;
    *i = j;
    return true;
}

static bool decimal(const char *t, size_t n, uint64_t *v) {
    *v = 0;
    if (!n || n > 19) return false; /* below 10^19: no overflow */
    for (size_t k = 0; k < n; k++) {
        if (t[k] < '0' || t[k] > '9') return false;
        *v = *v * 10 + (uint64_t)(t[k] - '0');
    }
    return true;
}

/* The member of walk[0, n) (in offset order) whose data starts at off, or NULL. */
static const member *member_at(const member *walk, int64_t n, uint64_t off) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (walk[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && walk[lo].off == off ? &walk[lo] : NULL;
}

/* One sample line of an index (the line [0, n) of ipath, line number ln): "ext offset size" per
 * member, "ext offset size name" in version 1.2, each checked against file f's walk[0, nwalk). */
static sl_status index_line(sl__wds *w, int f, const member *walk, int64_t nwalk, const uint8_t *p,
                            size_t n, bool named, const char *ipath, long ln, sl_err *err) {
    const char *tar = w->files[f].path;
    size_t i = 0;
    int64_t before = w->nm;
    const char *t[4];
    size_t tl[4];
    while (token(p, n, &i, &t[0], &tl[0])) {
        int want = named ? 4 : 3;
        for (int k = 1; k < want; k++)
            if (!token(p, n, &i, &t[k], &tl[k]))
                return sl_err_set(err, SL_EFORMAT,
                                  "%s:%ld: a member is \"%s\" (%d fields; this one has %d)", ipath,
                                  ln, named ? "ext offset size name" : "ext offset size", want, k);
        uint64_t off, size;
        if (!decimal(t[1], tl[1], &off) || !decimal(t[2], tl[2], &size))
            return sl_err_set(err, SL_EFORMAT,
                              "%s:%ld: member \"%.*s\": offset and size are decimal numbers, not "
                              "\"%.*s\" \"%.*s\"",
                              ipath, ln, (int)tl[0], t[0], (int)(tl[1] > 40 ? 40 : tl[1]), t[1],
                              (int)(tl[2] > 40 ? 40 : tl[2]), t[2]);
        const member *m = member_at(walk, nwalk, off);
        if (!m)
            return sl_err_set(
                err, SL_EFORMAT,
                "%s:%ld: no member of %s (named key.extension) has its data at offset "
                "%llu: the index does not match the tar file",
                ipath, ln, tar, (unsigned long long)off);
        const char *name = w->names + m->name, *ext = w->names + m->ext;
        if (m->len != size)
            return sl_err_set(err, SL_EFORMAT,
                              "%s:%ld: the member at offset %llu of %s (%s) has %zu bytes, the "
                              "index says %llu",
                              ipath, ln, (unsigned long long)off, tar, name, m->len,
                              (unsigned long long)size);
        if (strlen(ext) != tl[0] || memcmp(ext, t[0], tl[0]))
            return sl_err_set(err, SL_EFORMAT,
                              "%s:%ld: the member at offset %llu of %s is %s, not of extension "
                              "\"%.*s\"",
                              ipath, ln, (unsigned long long)off, tar, name,
                              (int)(tl[0] > 200 ? 200 : tl[0]), t[0]);
        if (named && (strlen(name) != tl[3] || memcmp(name, t[3], tl[3])))
            return sl_err_set(err, SL_EFORMAT,
                              "%s:%ld: the member at offset %llu of %s is %s, the index says "
                              "\"%.*s\"",
                              ipath, ln, (unsigned long long)off, tar, name,
                              (int)(tl[3] > 200 ? 200 : tl[3]), t[3]);
        if (w->nm == w->mcap) { /* (an index may name a member twice) */
            int64_t cap = w->mcap ? w->mcap * 2 : 1024;
            member *g = realloc(w->m, (size_t)cap * sizeof *g);
            if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory");
            w->m = g, w->mcap = cap;
        }
        w->m[w->nm] = *m;
        w->m[w->nm].first = w->nm == before;
        w->nm++;
    }
    if (w->nm == before)
        return sl_err_set(err, SL_EFORMAT, "%s:%ld: a sample with no members", ipath, ln);
    return SL_OK;
}

/* File f's samples as the index file ipath gives them (DALI's wds2idx format: a first line
 * "v1.2 COUNT" -- or v1.1, without the names --, then COUNT lines, one per sample), in place of
 * its walked members [a, w->nm). */
static sl_status apply_index(sl__wds *w, int f, int64_t a, const char *ipath, sl_err *err) {
    const uint8_t *map;
    size_t size;
    SL_TRY(sl__mapfile_map(ipath, &map, &size, err));
    int64_t nwalk = w->nm - a;
    member *walk = malloc((size_t)(nwalk ? nwalk : 1) * sizeof *walk);
    sl_status st = walk ? SL_OK : sl_err_set(err, SL_ENOMEM, "out of memory");
    if (walk) memcpy(walk, w->m + a, (size_t)nwalk * sizeof *walk);
    w->nm = a;
    size_t i = 0;
    long ln = 0;
    uint64_t count = 0, done = 0;
    bool named = false;
    while (!st && i < size) {
        size_t e = i;
        while (e < size && map[e] != '\n') e++;
        ln++;
        const uint8_t *p = map + i;
        size_t n = e - i, k = 0;
        const char *t;
        size_t tl;
        i = e + 1;
        if (ln == 1) {
            bool v = token(p, n, &k, &t, &tl) && tl == 4 &&
                     (!memcmp(t, "v1.1", 4) || !memcmp(t, "v1.2", 4));
            named = v && t[3] == '2';
            if (!v)
                st = sl_err_set(err, SL_EFORMAT,
                                "%s:1: not a WebDataset index (its first line is \"v1.2 COUNT\" or "
                                "\"v1.1 COUNT\", as DALI's wds2idx writes)",
                                ipath);
            else if (!token(p, n, &k, &t, &tl) || !decimal(t, tl, &count) || count == 0 ||
                     token(p, n, &k, &t, &tl))
                st = sl_err_set(err, SL_EFORMAT,
                                "%s:1: the first line is \"VERSION COUNT\", the sample count a "
                                "positive number",
                                ipath);
        } else if (done < count) {
            st = index_line(w, f, walk, nwalk, p, n, named, ipath, ln, err);
            done++;
        } else if (token(p, n, &k, &t, &tl)) {
            st =
                sl_err_set(err, SL_EFORMAT, "%s:%ld: more lines than the %llu samples line 1 gives",
                           ipath, ln, (unsigned long long)count);
        }
    }
    if (!st && ln == 0)
        st = sl_err_set(err, SL_EFORMAT, "%s: an empty index file", ipath);
    else if (!st && done < count)
        st = sl_err_set(err, SL_EFORMAT,
                        "%s:%ld: the index ends after %llu samples, but line 1 gives %llu", ipath,
                        ln, (unsigned long long)done, (unsigned long long)count);
    free(walk);
    sl__mapfile_unmap(map, size);
    return st;
}

sl_status sl__wds_open(int npaths, const char *const *paths, const char *const *index_paths,
                       sl__wds **out, sl_err *err) {
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
        int64_t a = w->nm;
        if (st == SL_OK) st = index_file(w, f, err);
        if (st == SL_OK && index_paths && index_paths[f])
            st = apply_index(w, f, a, index_paths[f], err);
        else if (st == SL_OK)
            runs_of_keys(w, a);
    }
    /* samples: from each member that starts one */
    for (int64_t i = 0; i < w->nm && st == SL_OK; i++) {
        const member *m = &w->m[i];
        if (!m->first) {
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

void sl__wds_source_info(const sl__wds *w, int64_t i, const char *exts, bool case_sensitive,
                         char *buf, size_t n) {
    const uint8_t *d;
    size_t len;
    buf[0] = '\0';
    if (!sl__wds_find(w, i, exts, case_sensitive, &d, &len)) return;
    const sample *s = &w->s[i];
    for (int32_t k = 0; k < s->count; k++) {
        const member *m = &w->m[s->first + k];
        if (w->files[m->file].map + m->off == d) {
            snprintf(buf, n, "%s:%zu:%s", w->files[m->file].path, m->off, w->names + m->name);
            return;
        }
    }
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

int32_t sl__wds_members(const sl__wds *w, int64_t i) {
    return w->s[i].count;
}

void sl__wds_member(const sl__wds *w, int64_t i, int32_t k, const char **name, const char **ext,
                    size_t *off, size_t *len) {
    const member *m = &w->m[w->s[i].first + k];
    *name = w->names + m->name;
    *ext = w->names + m->ext;
    *off = m->off;
    *len = m->len;
}
