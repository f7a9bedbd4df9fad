/* SPDX-License-Identifier: Apache-2.0 */
/* LMDB stores (see lmdb.h): read-only mapped environments with a one-pass cursor index, and an
 * appending writer. The read transaction of each environment stays open while the store is open,
 * so the index's pointers into the maps stay valid. */
#include "io/lmdb.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

typedef struct sl__lmdb_rec {
    const uint8_t *val;
    const uint8_t *key;
    uint32_t val_size;
    uint32_t key_size;
} sl__lmdb_rec;

typedef struct sl__lmdb_env {
    char *path;
    MDB_env *env;
    MDB_txn *txn;
    const uint8_t *map; /* the file, mapped read-only: the records are views into it */
    size_t map_size;
    int64_t first; /* index of its first record */
} sl__lmdb_env;

struct sl__lmdb {
    int nenv;
    sl__lmdb_env *envs;
    int64_t count, cap;
    sl__lmdb_rec *recs;
};

/* ---- the on-disk layout that opening checks (LMDB 0.9, 64-bit, little-endian) ----
 * A page starts with a 16-byte header: pgno (u64), pad (u16), flags (u16), lower (u16), upper
 * (u16; an overflow page's page count is the u32 at 12); then lower-16 bytes of u16 node offsets.
 * Pages 0 and 1 are meta pages: at 16 magic (u32), version (u32), address, map size (u64), the
 * free and main database records (48 bytes each: pad (u32, the page size in the free one), flags
 * (u16), depth (u16), branch, leaf and overflow page counts, entries, root (u64 each)), the last
 * page number and the transaction id (u64). A node is lo, hi, flags, key size (u16 each), the key,
 * then the data (leaf: lo | hi << 16 bytes, or the u64 number of the overflow page holding them
 * with F_BIGDATA; branch: the child page lo | hi << 16 | flags << 32). */
enum {
    PAGEHDR = 16,
    META_AT = 16,
    P_BRANCH = 0x01,
    P_LEAF = 0x02,
    P_OVERFLOW = 0x04,
    P_META = 0x08,
    P_LEAF2 = 0x20,
    F_BIGDATA = 0x01,
    F_SUBDATA = 0x02,
    F_DUPDATA = 0x04,
    MAX_DEPTH = 32,
};
#define META_MAGIC 0xBEEFC0DEu
#define P_INVALID  UINT64_MAX

static uint16_t rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

typedef struct meta {
    uint32_t psize;
    uint16_t flags, depth;
    uint64_t mapsize, entries, root, last_pg, txnid;
} meta;

/* meta page k's fields from its first bytes; an error naming the file when it is not one */
static sl_status read_meta(const char *path, const uint8_t *b, int k, meta *m, sl_err *err) {
    if (!(rd16(b + 10) & P_META) || rd32(b + META_AT) != META_MAGIC)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: not a readable LMDB (meta page %d has no LMDB magic)", path, k);
    if (rd32(b + META_AT + 4) != 1)
        return sl_err_set(err, SL_EFORMAT, "%s: not a readable LMDB (format version %u, 1 wanted)",
                          path, rd32(b + META_AT + 4));
    const uint8_t *fr = b + META_AT + 24, *mn = fr + 48;
    m->psize = rd32(fr);
    m->mapsize = rd64(b + META_AT + 16);
    m->flags = rd16(mn + 4);
    m->depth = rd16(mn + 6);
    m->entries = rd64(mn + 32);
    m->root = rd64(mn + 40);
    m->last_pg = rd64(mn + 48);
    m->txnid = rd64(mn + 56);
    return SL_OK;
}

/* Reads both meta pages with pread (nothing is mapped yet) and checks the newer one -- the one
 * liblmdb reads -- against the file: a store cut short (its last page past the end of the file,
 * which would be a SIGBUS once mapped) is an error naming the file. */
static sl_status check_file(const char *file, const char *path, meta *m, off_t *fsize,
                            sl_err *err) {
    int fd =
        open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: refused below, not waited on */
    if (fd < 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", path,
                          strerror(errno));
    struct stat sb;
    uint8_t b[2][META_AT + 136];
    sl_status st = SL_OK;
    if (fstat(fd, &sb) != 0) {
        st = sl_err_set(err, SL_EIO, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = sl_err_set(err, SL_EFORMAT, "%s: not an LMDB (data.mdb is not a regular file)", path);
    } else if (pread(fd, b[0], sizeof b[0], 0) != (ssize_t)sizeof b[0]) {
        st = sl_err_set(err, SL_EFORMAT,
                        "%s: not a readable LMDB (%lld bytes, shorter than a meta page)", path,
                        (long long)sb.st_size);
    }
    meta mm[2];
    if (!st) st = read_meta(path, b[0], 0, &mm[0], err);
    uint32_t ps = st ? 0 : mm[0].psize;
    if (!st && (ps < 512 || ps > 65536 || (ps & (ps - 1))))
        st = sl_err_set(err, SL_EFORMAT, "%s: damaged LMDB (page size %u)", path, ps);
    if (!st && pread(fd, b[1], sizeof b[1], ps) != (ssize_t)sizeof b[1])
        st = sl_err_set(err, SL_EFORMAT, "%s: truncated LMDB (%lld bytes, no second meta page)",
                        path, (long long)sb.st_size);
    if (!st) st = read_meta(path, b[1], 1, &mm[1], err);
    close(fd);
    if (st) return st;
    *m = mm[1].txnid > mm[0].txnid ? mm[1] : mm[0];
    uint64_t pages = (uint64_t)sb.st_size / ps;
    if (m->psize != ps)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: damaged LMDB (meta pages disagree on the page size)", path);
    if (m->last_pg < 1 || m->last_pg >= pages)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: truncated or damaged LMDB: its last page is %llu, the file holds "
                          "%llu pages of %u bytes (%lld bytes)",
                          path, (unsigned long long)m->last_pg, (unsigned long long)pages, ps,
                          (long long)sb.st_size);
    if (m->mapsize / ps <= m->last_pg)
        return sl_err_set(err, SL_EFORMAT, "%s: damaged LMDB (map size %llu below its last page)",
                          path, (unsigned long long)m->mapsize);
    if (m->flags & (MDB_DUPSORT | MDB_DUPFIXED))
        return sl_err_set(err, SL_ENOTSUP,
                          "%s: LMDB with duplicate keys (flags 0x%x) is not supported", path,
                          m->flags);
    if (m->root == P_INVALID ? m->entries != 0 || m->depth != 0
                             : m->root < 2 || m->root > m->last_pg || m->depth < 1 ||
                                   m->depth > MAX_DEPTH || m->entries == 0)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: damaged LMDB meta page (root page %llu, depth %u, %llu entries, "
                          "last page %llu)",
                          path, (unsigned long long)m->root, m->depth,
                          (unsigned long long)m->entries, (unsigned long long)m->last_pg);
    *fsize = sb.st_size;
    return SL_OK;
}

static sl_status open_env(sl__lmdb_env *e, const char *path, meta *m, off_t *fsize, sl_err *err) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", path,
                          strerror(errno));
    unsigned flags = MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK;
    char data[4096];
    if (S_ISDIR(sb.st_mode)) {
        snprintf(data, sizeof data, "%s/data.mdb", path);
        if (stat(data, &sb) != 0)
            return sl_err_set(err, SL_EFORMAT, "%s: not an LMDB (no data.mdb in the folder)", path);
    } else {
        snprintf(data, sizeof data, "%s", path);
        flags |= MDB_NOSUBDIR;
    }
    SL_TRY(check_file(data, path, m, fsize, err));
    int rc = mdb_env_create(&e->env);
    if (rc) return sl_err_set(err, SL_ENOMEM, "%s: mdb_env_create: %s", path, mdb_strerror(rc));
    mdb_env_set_maxdbs(e->env, 0);
    /* the map no larger than the file (liblmdb would map the writer's map size, and a page read
     * past the end of the file would be a SIGBUS) */
    rc = mdb_env_set_mapsize(e->env, (size_t)*fsize);
    if (rc) return sl_err_set(err, SL_EIO, "%s: mdb_env_set_mapsize: %s", path, mdb_strerror(rc));
    rc = mdb_env_open(e->env, path, flags, 0664);
    if (rc)
        return sl_err_set(err,
                          rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ? SL_EFORMAT : SL_EIO,
                          "%s: not a readable LMDB: %s", path, mdb_strerror(rc));
    rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &e->txn);
    if (rc) return sl_err_set(err, SL_EIO, "%s: mdb_txn_begin: %s", path, mdb_strerror(rc));
    /* liblmdb has read the meta pages and agrees; the pages themselves are read from a map of our
     * own of exactly the file (liblmdb's map address is not public) */
    int fd = open(data, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sl_err_set(err, SL_EIO, "%s: %s", path, strerror(errno));
    void *p = mmap(NULL, (size_t)*fsize, PROT_READ, MAP_SHARED, fd, 0);
    int merr = errno;
    close(fd);
    if (p == MAP_FAILED) return sl_err_set(err, SL_EIO, "%s: cannot map: %s", path, strerror(merr));
    e->map = p;
    e->map_size = (size_t)*fsize;
    return SL_OK;
}

/* The index walk: the main B-tree read from the map page by page, in key order (as a cursor
 * would), every page number, node offset, size and overflow run checked against the file, each
 * page visited at most once, the index grown as records are found. */
typedef struct walk {
    sl__lmdb *db;
    const char *path;
    const uint8_t *map;
    uint64_t pages; /* whole pages in the file */
    uint32_t psize;
    uint8_t *seen; /* one bit per page */
    int64_t n;     /* records of this environment so far */
} walk;

static sl_status damaged(const walk *w, uint64_t pg, const char *what, sl_err *err) {
    return sl_err_set(err, SL_EFORMAT, "%s: damaged LMDB: page %llu: %s (after record %lld)",
                      w->path, (unsigned long long)pg, what, (long long)w->n);
}

static sl_status add_rec(walk *w, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                         sl_err *err) {
    sl__lmdb *db = w->db;
    if (vlen > UINT32_MAX)
        return sl_err_set(err, SL_ENOTSUP, "%s: record %lld is larger than 4 GiB", w->path,
                          (long long)w->n);
    if (db->count == db->cap) {
        int64_t cap = db->cap ? db->cap * 2 : 1024;
        sl__lmdb_rec *g = realloc(db->recs, (size_t)cap * sizeof *g);
        if (!g)
            return sl_err_set(err, SL_ENOMEM, "%s: out of memory (index of %lld records)", w->path,
                              (long long)cap);
        db->recs = g, db->cap = cap;
    }
    sl__lmdb_rec *r = &db->recs[db->count++];
    r->key = key, r->key_size = (uint32_t)klen;
    r->val = val, r->val_size = (uint32_t)vlen;
    w->n++;
    return SL_OK;
}

/* a page number that may be read: a data page inside the file, not seen before */
static sl_status take_page(walk *w, uint64_t from, uint64_t pg, uint64_t count, sl_err *err) {
    if (pg < 2 || pg >= w->pages || count > w->pages - pg)
        return damaged(w, from, "points past the end of the file", err);
    for (uint64_t k = pg; k < pg + count; k++) {
        if (w->seen[k >> 3] & (1u << (k & 7)))
            return damaged(w, from, "points to a page already read (a cycle)", err);
        w->seen[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    return SL_OK;
}

static sl_status walk_page(walk *w, uint64_t pg, int depth, sl_err *err) {
    const uint32_t ps = w->psize;
    const uint8_t *p = w->map + pg * ps;
    uint16_t flags = rd16(p + 10), lower = rd16(p + 12), upper = rd16(p + 14);
    if (rd64(p) != pg) return damaged(w, pg, "its header names another page", err);
    bool leaf = (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2)) == P_LEAF;
    bool branch = (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2)) == P_BRANCH;
    if (depth == 1 ? !leaf : !branch)
        return damaged(w, pg,
                       depth == 1 ? "not a leaf page where the tree has its leaves"
                                  : "not a branch page above the leaves",
                       err);
    if (lower < PAGEHDR || lower > upper || upper > ps || (lower & 1))
        return damaged(w, pg, "bad free-space bounds", err);
    int nkeys = (lower - PAGEHDR) / 2;
    if (nkeys == 0) return damaged(w, pg, "an empty page in the tree", err);
    for (int i = 0; i < nkeys; i++) {
        uint32_t at = rd16(p + PAGEHDR + 2 * i);
        if (at < upper || at + 8 > ps) return damaged(w, pg, "a node offset out of the page", err);
        const uint8_t *nd = p + at;
        uint32_t lo = rd16(nd), hi = rd16(nd + 2), nf = rd16(nd + 4), ks = rd16(nd + 6);
        if (at + 8 + ks > ps) return damaged(w, pg, "a key runs past the page", err);
        const uint8_t *key = nd + 8;
        if (branch) {
            uint64_t child = lo | (uint64_t)hi << 16 | (uint64_t)nf << 32;
            SL_TRY(take_page(w, pg, child, 1, err));
            SL_TRY(walk_page(w, child, depth - 1, err));
            continue;
        }
        size_t dsize = lo | (size_t)hi << 16;
        if (nf & (F_SUBDATA | F_DUPDATA))
            return sl_err_set(err, SL_ENOTSUP,
                              "%s: LMDB with duplicate keys or sub-databases (page %llu) is not "
                              "supported",
                              w->path, (unsigned long long)pg);
        if (nf & F_BIGDATA) {
            if (at + 8 + ks + 8 > ps) return damaged(w, pg, "a node runs past the page", err);
            uint64_t ov = rd64(key + ks);
            uint64_t need = (PAGEHDR + (uint64_t)dsize + ps - 1) / ps;
            if (ov < 2 || ov >= w->pages)
                return damaged(w, pg, "an overflow page past the end of the file", err);
            const uint8_t *o = w->map + ov * ps;
            if (rd64(o) != ov || !(rd16(o + 10) & P_OVERFLOW) || rd32(o + 12) < need)
                return damaged(w, ov, "not the overflow pages a record points to", err);
            SL_TRY(take_page(w, pg, ov, need, err));
            SL_TRY(add_rec(w, key, ks, o + PAGEHDR, dsize, err));
        } else {
            if (at + 8 + ks + dsize > ps) return damaged(w, pg, "a value runs past the page", err);
            SL_TRY(add_rec(w, key, ks, key + ks, dsize, err));
        }
    }
    return SL_OK;
}

static sl_status index_env(sl__lmdb *db, sl__lmdb_env *e, const meta *m, off_t fsize, sl_err *err) {
    if (m->root == P_INVALID) return SL_OK; /* an empty store */
    walk w = {.db = db, .path = e->path, .map = e->map, .psize = m->psize};
    w.pages = (uint64_t)fsize / m->psize;
    w.seen = sl__calloc((size_t)(w.pages + 7) / 8, 1, err);
    if (!w.seen) return SL_ENOMEM;
    sl_status st = take_page(&w, 0, m->root, 1, err);
    if (!st) st = walk_page(&w, m->root, m->depth, err);
    free(w.seen);
    if (!st && (uint64_t)w.n != m->entries)
        st = sl_err_set(err, SL_EFORMAT, "%s: %lld records found, the header says %llu", e->path,
                        (long long)w.n, (unsigned long long)m->entries);
    return st;
}

sl_status sl__lmdb_open(int npaths, const char *const *paths, sl__lmdb **out, sl_err *err) {
    *out = NULL;
    if (npaths < 1) return sl_err_set(err, SL_EINVAL, "no LMDB path given");
    sl__lmdb *db = sl__calloc(1, sizeof *db, err);
    if (!db) return SL_ENOMEM;
    db->envs = sl__calloc((size_t)npaths, sizeof *db->envs, err);
    if (!db->envs) {
        free(db);
        return SL_ENOMEM;
    }
    db->nenv = npaths;
    sl_status st = SL_OK;
    for (int i = 0; st == SL_OK && i < npaths; i++) {
        meta m;
        off_t fsize = 0;
        db->envs[i].path = strdup(paths[i]);
        if (!db->envs[i].path) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            break;
        }
        st = open_env(&db->envs[i], paths[i], &m, &fsize, err);
        db->envs[i].first = db->count;
        if (!st) st = index_env(db, &db->envs[i], &m, fsize, err);
    }
    if (st) {
        sl__lmdb_close(db);
        return st;
    }
    *out = db;
    return SL_OK;
}

int64_t sl__lmdb_count(const sl__lmdb *db) {
    return db->count;
}

void sl__lmdb_value(const sl__lmdb *db, int64_t i, const uint8_t **data, size_t *size) {
    *data = db->recs[i].val;
    *size = db->recs[i].val_size;
}

const char *sl__lmdb_escape(const void *bytes, size_t n, char *buf, size_t size) {
    static const char hex[] = "0123456789abcdef";
    const uint8_t *b = bytes;
    size_t o = 0;
    if (size == 0) return buf;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            if (o + 1 >= size) break;
            buf[o++] = (char)c;
        } else {
            if (o + 4 >= size) break;
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = 0;
    return buf;
}

const char *sl__lmdb_key(const sl__lmdb *db, int64_t i, char *buf, size_t size) {
    return sl__lmdb_escape(db->recs[i].key, db->recs[i].key_size, buf, size);
}

void sl__lmdb_prefetch(const sl__lmdb *db, const int64_t *recs, int n, int stage) {
    for (int k = 0; k < n; k++) {
        const sl__lmdb_rec *r = &db->recs[recs[k]];
        if (stage == 0) {
            __builtin_prefetch(r);
            continue;
        }
        __builtin_prefetch(r->key);
        __builtin_prefetch(r->val);
        if (r->val_size > 64) __builtin_prefetch(r->val + r->val_size - 1);
    }
}

const char *sl__lmdb_path(const sl__lmdb *db, int64_t i) {
    int lo = 0, hi = db->nenv - 1;
    while (lo < hi) { /* last env with first <= i */
        int mid = (lo + hi + 1) / 2;
        if (db->envs[mid].first <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return db->envs[lo].path;
}

size_t sl__lmdb_index_bytes(const sl__lmdb *db) {
    return (size_t)db->count * sizeof *db->recs + (size_t)db->nenv * sizeof *db->envs;
}

void sl__lmdb_close(sl__lmdb *db) {
    if (!db) return;
    for (int i = 0; i < db->nenv; i++) {
        if (db->envs[i].txn) mdb_txn_abort(db->envs[i].txn);
        if (db->envs[i].env) mdb_env_close(db->envs[i].env);
        if (db->envs[i].map) munmap((void *)db->envs[i].map, db->envs[i].map_size);
        free(db->envs[i].path);
    }
    free(db->envs);
    free(db->recs);
    free(db);
}

/* ---- writer ---- */

struct sl__lmdb_writer {
    char *dir;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    size_t mapsize;
    size_t committed; /* bytes of the file so far */
    size_t txn_bytes; /* written in the open txn (estimate) */
    int64_t in_txn;
};

/* Whether a failed write is the file system filling up: ENOSPC itself, or the EIO LMDB gives for
 * a short write, when the free space left is under what the transaction had to write. */
static bool out_of_space(const char *dir, int rc, size_t wanted) {
    if (rc == ENOSPC || rc == EDQUOT) return true;
    struct statvfs vs;
    if (rc != EIO || statvfs(dir, &vs) != 0) return false;
    unsigned long long avail = (unsigned long long)(geteuid() == 0 ? vs.f_bfree : vs.f_bavail);
    return avail * vs.f_frsize < 2 * (unsigned long long)wanted + ((unsigned long long)1 << 20);
}

static sl_status mdb_fail(sl__lmdb_writer *w, sl_err *err, const char *what, int rc) {
    if (out_of_space(w->dir, rc, w->txn_bytes))
        return sl_err_set(err, SL_EIO, "%s/data.mdb: %s: no space left on device", w->dir, what);
    return sl_err_set(err, SL_EIO, "%s/data.mdb: %s: %s", w->dir, what, mdb_strerror(rc));
}

static int mkdirs(const char *dir) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0775) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, 0775) != 0 && errno != EEXIST ? -1 : 0;
}

sl_status sl__lmdb_writer_open(const char *dir, sl__lmdb_writer **out, sl_err *err) {
    *out = NULL;
    char data[4096];
    struct stat sb;
    snprintf(data, sizeof data, "%s/data.mdb", dir);
    if (stat(data, &sb) == 0)
        return sl_err_set(err, SL_EINVAL, "%s already holds an LMDB (data.mdb)", dir);
    if (mkdirs(dir) != 0) return sl_err_set(err, SL_EIO, "%s: mkdir: %s", dir, strerror(errno));
    sl__lmdb_writer *w = sl__calloc(1, sizeof *w, err);
    if (!w) return SL_ENOMEM;
    w->dir = strdup(dir);
    w->mapsize = (size_t)1 << 26;
    int rc = mdb_env_create(&w->env);
    if (!rc) rc = mdb_env_set_mapsize(w->env, w->mapsize);
    /* no lock file: a store being written has one writer and no readers, and LMDB maps its lock
     * file, so on a full disk the first touch of that map would be a SIGBUS, not an error */
    if (!rc) rc = mdb_env_open(w->env, dir, MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOLOCK, 0664);
    if (!rc) rc = mdb_txn_begin(w->env, NULL, 0, &w->txn);
    if (!rc) rc = mdb_dbi_open(w->txn, NULL, 0, &w->dbi);
    if (rc) {
        sl_status st = mdb_fail(w, err, "creating the LMDB", rc);
        sl__lmdb_writer_abort(w);
        return st;
    }
    *out = w;
    return SL_OK;
}

static sl_status writer_commit(sl__lmdb_writer *w, sl_err *err) {
    int rc = mdb_txn_commit(w->txn);
    w->txn = NULL;
    if (rc) return mdb_fail(w, err, "mdb_txn_commit", rc);
    w->in_txn = 0;
    w->txn_bytes = 0;
    MDB_envinfo info;
    MDB_stat ms;
    mdb_env_info(w->env, &info);
    mdb_env_stat(w->env, &ms);
    w->committed = ((size_t)info.me_last_pgno + 1) * ms.ms_psize;
    return SL_OK;
}

sl_status sl__lmdb_writer_put(sl__lmdb_writer *w, const void *key, size_t klen, const void *val,
                              size_t vlen, sl_err *err) {
    if (!w->txn) return sl_err_set(err, SL_ESTATE, "%s: writer failed earlier", w->dir);
    /* keep the map at least twice what is written (an LMDB map cannot grow inside a txn) */
    size_t need = w->committed + 2 * (w->txn_bytes + klen + vlen + 64) + 4096 * 16;
    if (need > w->mapsize || w->in_txn >= 4096) {
        SL_TRY(writer_commit(w, err));
        need = w->committed + 2 * (klen + vlen + 64) + 4096 * 16;
        if (need * 2 > w->mapsize) {
            while (need * 2 > w->mapsize) w->mapsize *= 2;
            int rc = mdb_env_set_mapsize(w->env, w->mapsize);
            if (rc) return mdb_fail(w, err, "mdb_env_set_mapsize", rc);
        }
        int rc = mdb_txn_begin(w->env, NULL, 0, &w->txn);
        if (rc) return mdb_fail(w, err, "mdb_txn_begin", rc);
    }
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int rc = mdb_put(w->txn, w->dbi, &k, &v, MDB_APPEND);
    if (rc == MDB_KEYEXIST) {
        char kb[128];
        return sl_err_set(err, SL_EINVAL, "%s: key %s does not sort after the previous key", w->dir,
                          sl__lmdb_escape(key, klen, kb, sizeof kb));
    }
    if (rc) return mdb_fail(w, err, "mdb_put", rc);
    w->in_txn++;
    w->txn_bytes += klen + vlen + 64;
    return SL_OK;
}

void sl__lmdb_writer_abort(sl__lmdb_writer *w) {
    if (!w) return;
    if (w->txn) mdb_txn_abort(w->txn);
    if (w->env) mdb_env_close(w->env);
    free(w->dir);
    free(w);
}

sl_status sl__lmdb_writer_close(sl__lmdb_writer *w, sl_err *err) {
    if (!w) return SL_OK;
    sl_status st = SL_OK;
    if (w->txn) {
        int rc = mdb_txn_commit(w->txn);
        if (rc) st = mdb_fail(w, err, "mdb_txn_commit", rc);
    }
    if (w->env) {
        if (st == SL_OK) {
            int rc = mdb_env_sync(w->env, 1);
            if (rc) st = mdb_fail(w, err, "mdb_env_sync", rc);
        }
        mdb_env_close(w->env);
    }
    free(w->dir);
    free(w);
    return st;
}
