/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile record stores through the real readers (pipeline API): none may crash, hang or be
 * accepted wrongly.
 * - LMDB: copies of the caffe2-fmnist-256 fixture truncated (half, one page, 0 bytes), with a
 *   lying entry count, bit-flipped in the meta pages and in every data page, random bytes; an
 *   empty LMDB made with liblmdb. Each is a clear error naming the file when the pipeline is
 *   built, or -- for damage only the records' contents show -- a clean error (or data) at run time.
 * - Tar (readers.webdataset): a PAX header whose record length has 20 digits (it looped forever),
 *   a size field of garbage, a base-256 size of 2^88, a member cut short: errors naming the file.
 * - A loader checkpoint with a forged position or ring is refused.
 * An alarm() watchdog fails the test if anything hangs. */
#include "check.h"

#include "io/lmdb.h"
#include "io/loader.h"
#include "sluice/pipeline.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir;

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    if (n) CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}

/* a store folder name with a data.mdb of n bytes of p */
static const char *store(const char *name, const void *p, size_t n) {
    static char paths[4][1024];
    static int k;
    char *s = paths[k++ & 3];
    snprintf(s, 1024, "%s/%s", dir, name);
    mkdir(s, 0775);
    char f[1100];
    snprintf(f, sizeof f, "%s/data.mdb", s);
    write_bytes(f, p, n);
    return s;
}

static sl_pipeline *caffe2(const char *path, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 64;
    c.num_threads = 2;
    char text[2048];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    img, lab = fn.readers.caffe2(path=\"%s\")\n"
             "    return img, lab\n",
             path);
    return check_pipeline(&c, text, "hostile.py", 0, NULL, e);
}

/* the store must be refused when the pipeline is built, with a message naming it (and want) */
static void refused(const char *path, const char *want) {
    sl_err e = {0};
    sl_pipeline *p = caffe2(path, &e);
    CHECK_MSG(p == NULL, "%s was accepted", path);
    if (p) {
        sl_pipeline_free(p);
        return;
    }
    CHECK_MSG(strstr(e.msg, path) != NULL, "message does not name %s: %s", path, e.msg);
    if (want) CHECK_MSG(strstr(e.msg, want) != NULL, "message lacks \"%s\": %s", want, e.msg);
}

/* the store is refused (naming it), or runs two epochs with errors that name it, or gives data;
 * returns 1 when it was refused at build time */
static int survives(const char *path) {
    sl_err e = {0};
    sl_pipeline *p = caffe2(path, &e);
    if (!p) {
        CHECK_MSG(strstr(e.msg, path) != NULL, "message does not name %s: %s", path, e.msg);
        return 1;
    }
    for (int i = 0; i < 10; i++) {
        sl_batch *b;
        sl_status st = sl_pipeline_next(p, &b);
        if (st) {
            CHECK_MSG(strstr(sl_pipeline_errmsg(p), path) != NULL,
                      "run-time error does not name %s: %s", path, sl_pipeline_errmsg(p));
            break;
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    return 0;
}

static void put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}

static void lmdb_cases(void) {
    size_t n;
    char src[1100];
    snprintf(src, sizeof src, "%s/data.mdb", fixture("caffe2-fmnist-256"));
    uint8_t *orig = check_read_file(src, &n);
    CHECK(orig != NULL && n == 89 * 4096);
    if (!orig) return;
    uint8_t *b = malloc(n);

    /* the copy as it is reads */
    CHECK(survives(store("whole", orig, n)) == 0);

    /* truncated: half, one page, one byte short, 0 bytes */
    refused(store("half", orig, n / 2), "truncated");
    refused(store("one_page", orig, 4096), "truncated");
    refused(store("short", orig, n - 1), "truncated");
    refused(store("zero", orig, 0), "not a readable LMDB");

    /* random bytes */
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(check_frand(&r) * 256);
    refused(store("random", b, n), "not a readable LMDB");

    /* meta page 1 (the newer) lies: entry count (huge, and one more), last page, root, depth */
    const size_t m1 = 4096 + 16, mainrec = m1 + 24 + 48;
    memcpy(b, orig, n), put64(b + mainrec + 32, (uint64_t)1 << 40);
    refused(store("count_huge", b, n), "the header says");
    memcpy(b, orig, n), put64(b + mainrec + 32, 257);
    refused(store("count_one_more", b, n), "the header says");
    memcpy(b, orig, n), put64(b + mainrec + 48, 1000);
    refused(store("last_page", b, n), "truncated or damaged");
    memcpy(b, orig, n), put64(b + mainrec + 40, 88 + 1000);
    refused(store("root_far", b, n), "damaged");
    memcpy(b, orig, n), put64(b + mainrec + 40, 0);
    refused(store("root_meta", b, n), "damaged");
    memcpy(b, orig, n), b[mainrec + 6] = 9; /* depth */
    refused(store("depth", b, n), "damaged");
    memcpy(b, orig, n), b[m1] ^= 0x10; /* magic */
    refused(store("magic", b, n), "not a readable LMDB");
    memcpy(b, orig, n), b[m1 + 24] ^= 0x01; /* page size 4097 */
    refused(store("psize", b, n), "page size");
    /* every single bit of meta page 1's records flipped: never a crash */
    for (size_t off = m1; off < m1 + 136; off++)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(b, orig, n);
            b[off] ^= (uint8_t)(1u << bit);
            survives(store("meta_flip", b, n));
        }

    /* data pages: each page's header, node offsets and node headers damaged */
    int refused_n = 0, cases = 0;
    for (size_t pg = 2; pg < 89; pg++) {
        static const int offs[] = {0, 10, 12, 14, 16, 17, 18, 19};
        for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
            memcpy(b, orig, n);
            b[pg * 4096 + (size_t)offs[k]] ^= 0x81;
            refused_n += survives(store("page_flip", b, n));
            cases++;
        }
        /* the first node's header (at the offset its pointer gives) */
        uint16_t at;
        memcpy(&at, orig + pg * 4096 + 16, 2);
        for (int k = 0; k < 8 && at >= 16 && at + 8 <= 4096; k++) {
            memcpy(b, orig, n);
            b[pg * 4096 + at + (size_t)k] ^= 0x40;
            refused_n += survives(store("node_flip", b, n));
            cases++;
        }
    }
    CHECK_MSG(refused_n > cases / 2, "only %d of %d damaged pages refused", refused_n, cases);
    /* a branch page pointing back at itself (a cycle) */
    memcpy(b, orig, n);
    {
        uint16_t at;
        memcpy(&at, orig + 4 * 4096 + 16, 2);
        b[4 * 4096 + at] = 4, b[4 * 4096 + at + 1] = 0, b[4 * 4096 + at + 2] = 0;
        b[4 * 4096 + at + 3] = 0, b[4 * 4096 + at + 4] = 0, b[4 * 4096 + at + 5] = 0;
        refused(store("cycle", b, n), "damaged");
    }
    free(b);
    free(orig);

    /* an empty LMDB written by liblmdb: the store opens with 0 records, the reader refuses it */
    char edir[1100];
    snprintf(edir, sizeof edir, "%s/empty", dir);
    mkdir(edir, 0775);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_open(env, edir, 0, 0664) == 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn) == 0);
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi) == 0);
    CHECK(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
    sl__lmdb *db;
    sl_err e = {0};
    const char *ep = edir;
    CHECK_OK(sl__lmdb_open(1, &ep, &db, &e), &e);
    if (db) {
        CHECK(sl__lmdb_count(db) == 0);
        sl__lmdb_close(db);
    }
    refused(edir, "holds no records");
}

/* ---- tar ---- */

static void tar_header(uint8_t *h, const char *name, const char *size12, char type) {
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    memcpy(h + 124, size12, 12);
    memcpy(h + 136, "00000000000", 12);
    h[156] = (uint8_t)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static sl_pipeline *wds(const char *path, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 2;
    c.num_threads = 1;
    char text[2048];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    img = fn.readers.webdataset(paths=[\"%s\"], ext=[\"jpg\"])\n"
             "    return img\n",
             path);
    return check_pipeline(&c, text, "wds.py", 0, NULL, e);
}

static void tar_refused(const char *name, const uint8_t *t, size_t n, const char *want) {
    char path[1100];
    snprintf(path, sizeof path, "%s/%s.tar", dir, name);
    write_bytes(path, t, n);
    sl_err e = {0};
    sl_pipeline *p = wds(path, &e);
    CHECK_MSG(p == NULL, "%s was accepted", path);
    if (p) {
        sl_pipeline_free(p);
        return;
    }
    CHECK_MSG(strstr(e.msg, path) != NULL, "message does not name %s: %s", path, e.msg);
    CHECK_MSG(strstr(e.msg, want) != NULL, "message lacks \"%s\": %s", want, e.msg);
}

static void tar_cases(void) {
    uint8_t t[512 * 8];
    char sz[12];
    /* a good tar: one member a.jpg of 3 bytes */
    memset(t, 0, sizeof t);
    snprintf(sz, sizeof sz, "%011o", 3);
    tar_header(t, "a.jpg", sz, '0');
    memcpy(t + 512, "abc", 3);
    char good[1100];
    snprintf(good, sizeof good, "%s/good.tar", dir);
    write_bytes(good, t, 512 * 4);
    sl_err e = {0};
    sl_pipeline *p = wds(good, &e);
    CHECK_MSG(p != NULL, "good tar: %s", e.msg);
    sl_pipeline_free(p);

    /* PAX header with a 20-digit record length, then a.jpg */
    static const char *pax[] = {/* 2^64 - 12: wraps the position back to the first record */
                                "12 path=b.j\n18446744073709551604 path=b.jpg\n",
                                "99999999999999999999 path=b.jpg\n",
                                "18446744073709551617 path=b.jpg\n",
                                "0 path=b.jpg\n",
                                "5 path=b.jpg\n",
                                "400 path=b.jpg\n",
                                "15 path=b.jpg\n"};
    for (size_t k = 0; k < sizeof pax / sizeof *pax; k++) {
        memset(t, 0, sizeof t);
        size_t pl = strlen(pax[k]);
        snprintf(sz, sizeof sz, "%011o", (unsigned)pl);
        tar_header(t, "PaxHeaders/a.jpg", sz, 'x');
        memcpy(t + 512, pax[k], pl);
        snprintf(sz, sizeof sz, "%011o", 3);
        tar_header(t + 1024, "a.jpg", sz, '0');
        memcpy(t + 1536, "abc", 3);
        tar_refused("pax", t, 512 * 6, "PAX");
    }
    /* a size field of garbage */
    memset(t, 0, sizeof t);
    tar_header(t, "a.jpg", "12x4567\0\0\0\0", '0');
    tar_refused("size_garbage", t, 512 * 4, "size field");
    /* a base-256 size of 2^88 (wrapped to a small number before) */
    memset(t, 0, sizeof t);
    {
        char b256[12] = {(char)0x80, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
        tar_header(t, "a.jpg", b256, '0');
    }
    tar_refused("size_b256", t, 512 * 4, "size field");
    /* a member cut short, and a cut header */
    memset(t, 0, sizeof t);
    snprintf(sz, sizeof sz, "%011o", 1000);
    tar_header(t, "a.jpg", sz, '0');
    tar_refused("cut_member", t, 512 + 100, "runs past the end");
    memset(t, 0, sizeof t);
    snprintf(sz, sizeof sz, "%011o", 3);
    tar_header(t, "a.jpg", sz, '0');
    tar_header(t + 1024, "b.jpg", sz, '0');
    tar_refused("cut_header", t, 1024 + 300, "truncated tar header");
}

/* ---- loader checkpoints ---- */

static void loader_cases(void) {
    sl__loader_cfg c = {.n = 100,
                        .num_shards = 2,
                        .shard_id = 1,
                        .random_shuffle = true,
                        .initial_fill = 8,
                        .shuffle_after_epoch = true,
                        .seed = 1,
                        .perm_seed = 2};
    sl__loader *l;
    sl_err e = {0};
    CHECK_OK(sl__loader_create(&c, &l, &e), &e);
    if (!l) return;
    for (int i = 0; i < 77; i++) sl__loader_next(l, i % 10 == 0, NULL);
    void *blob;
    size_t n;
    CHECK_OK(sl__loader_save(l, &blob, &n, &e), &e);
    CHECK_OK(sl__loader_restore(l, blob, n, &e), &e);
    uint8_t *b = malloc(n);
    /* the ring's records, then each position field (after the 56-byte header), made wild */
    size_t ring = n - 8 * sizeof(int64_t);
    static const int64_t wild[] = {-1, 100, INT64_MAX, INT64_MIN, 1 << 20};
    for (size_t f = 56; f < n; f += 8) {
        if (f >= 56 + 9 * 8 && f < ring) continue; /* the RNG state may hold anything */
        for (size_t k = 0; k < sizeof wild / sizeof *wild; k++) {
            memcpy(b, blob, n);
            int64_t v;
            memcpy(&v, b + f, 8);
            if (v == wild[k]) continue;
            memcpy(b + f, &wild[k], 8);
            sl_status st = sl__loader_restore(l, b, n, &e);
            if (f != 56 + 8 * 8 && !(f == 56 + 7 * 8 && wild[k] > 0)) /* last -1, returned >= 0 */
                CHECK_MSG(st != SL_OK, "forged field at %zu = %lld restored", f,
                          (long long)wild[k]);
            CHECK_OK(sl__loader_restore(l, blob, n, &e), &e);
        }
    }
    for (int i = 0; i < 300; i++) {
        int64_t r = sl__loader_next(l, i % 10 == 0, NULL);
        CHECK(r >= 0 && r < 100);
    }
    free(b);
    free(blob);
    sl__loader_free(l);
}

int main(void) {
    alarm(240); /* a hang is a failure (SIGALRM ends the test) */
    dir = scratch_dir("hostile_stores");
    lmdb_cases();
    tar_cases();
    loader_cases();
    return check_done();
}
