/* LMDB stores (see lmdb.h): read-only mapped environments with a one-pass cursor index, and an
 * appending writer. The read transaction of each environment stays open while the store is open,
 * so the index's pointers into the maps stay valid. */
#include "io/lmdb.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    int64_t first; /* index of its first record */
} sl__lmdb_env;

struct sl__lmdb {
    int nenv;
    sl__lmdb_env *envs;
    int64_t count;
    sl__lmdb_rec *recs;
};

static sl_status open_env(sl__lmdb_env *e, const char *path, MDB_stat *st, sl_err *err) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sl_err_set(err, errno == ENOENT ? SL_ENOENT : SL_EIO, "%s: %s", path,
                          strerror(errno));
    unsigned flags = MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK;
    if (S_ISDIR(sb.st_mode)) {
        char data[4096];
        snprintf(data, sizeof data, "%s/data.mdb", path);
        if (stat(data, &sb) != 0)
            return sl_err_set(err, SL_EFORMAT, "%s: not an LMDB (no data.mdb in the folder)", path);
    } else {
        flags |= MDB_NOSUBDIR;
    }
    int rc = mdb_env_create(&e->env);
    if (rc) return sl_err_set(err, SL_ENOMEM, "%s: mdb_env_create: %s", path, mdb_strerror(rc));
    mdb_env_set_maxdbs(e->env, 0);
    rc = mdb_env_open(e->env, path, flags, 0664);
    if (rc)
        return sl_err_set(err,
                          rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ? SL_EFORMAT : SL_EIO,
                          "%s: not a readable LMDB: %s", path, mdb_strerror(rc));
    rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &e->txn);
    if (rc) return sl_err_set(err, SL_EIO, "%s: mdb_txn_begin: %s", path, mdb_strerror(rc));
    rc = mdb_env_stat(e->env, st);
    if (rc) return sl_err_set(err, SL_EFORMAT, "%s: mdb_env_stat: %s", path, mdb_strerror(rc));
    return SL_OK;
}

static sl_status index_env(sl__lmdb *db, sl__lmdb_env *e, int64_t expect, sl_err *err) {
    MDB_dbi dbi;
    MDB_cursor *cur;
    int rc = mdb_dbi_open(e->txn, NULL, 0, &dbi);
    if (rc) return sl_err_set(err, SL_EFORMAT, "%s: mdb_dbi_open: %s", e->path, mdb_strerror(rc));
    rc = mdb_cursor_open(e->txn, dbi, &cur);
    if (rc) return sl_err_set(err, SL_EIO, "%s: mdb_cursor_open: %s", e->path, mdb_strerror(rc));
    MDB_val k, v;
    int64_t n = 0;
    sl__lmdb_rec *r = db->recs + e->first;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (n == expect) break;
        if (v.mv_size > UINT32_MAX) {
            mdb_cursor_close(cur);
            return sl_err_set(err, SL_ENOTSUP, "%s: record %lld is larger than 4 GiB", e->path,
                              (long long)n);
        }
        r[n].val = v.mv_data;
        r[n].key = k.mv_data;
        r[n].val_size = (uint32_t)v.mv_size;
        r[n].key_size = (uint32_t)k.mv_size;
        n++;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return sl_err_set(err, SL_EFORMAT, "%s: reading record %lld: %s", e->path, (long long)n,
                          mdb_strerror(rc));
    if (n != expect)
        return sl_err_set(err, SL_EFORMAT, "%s: %lld records found, the header says %lld", e->path,
                          (long long)n, (long long)expect);
    return SL_OK;
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
    int64_t *counts = sl__calloc((size_t)npaths, sizeof *counts, err);
    if (!counts) st = SL_ENOMEM;
    for (int i = 0; st == SL_OK && i < npaths; i++) {
        MDB_stat ms;
        db->envs[i].path = strdup(paths[i]);
        if (!db->envs[i].path) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            break;
        }
        st = open_env(&db->envs[i], paths[i], &ms, err);
        if (st) break;
        db->envs[i].first = db->count;
        counts[i] = (int64_t)ms.ms_entries;
        db->count += counts[i];
    }
    if (st == SL_OK && db->count > 0) {
        db->recs = sl__malloc((size_t)db->count * sizeof *db->recs, err);
        if (!db->recs) st = SL_ENOMEM;
    }
    for (int i = 0; st == SL_OK && i < npaths; i++)
        st = index_env(db, &db->envs[i], counts[i], err);
    free(counts);
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

static sl_status mdb_fail(sl__lmdb_writer *w, sl_err *err, const char *what, int rc) {
    return sl_err_set(err, SL_EIO, "%s: %s: %s", w->dir, what, mdb_strerror(rc));
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
    if (!rc) rc = mdb_env_open(w->env, dir, MDB_NOSYNC | MDB_NOMETASYNC, 0664);
    if (!rc) rc = mdb_txn_begin(w->env, NULL, 0, &w->txn);
    if (!rc) rc = mdb_dbi_open(w->txn, NULL, 0, &w->dbi);
    if (rc) {
        sl_status st = mdb_fail(w, err, "creating the LMDB", rc);
        sl__lmdb_writer_close(w, NULL);
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
