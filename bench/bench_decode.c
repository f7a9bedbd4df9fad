/* SPDX-License-Identifier: Apache-2.0 */
/* Decode + normalise throughput of sluice's decoders.image -> crop_mirror_normalize against PIL
 * and torchvision.io.decode_jpeg on the same bytes in the same run: the Fashion-MNIST JPEGs of the
 * caffe2 fixture (28x28 gray, the seed's chain: GRAY, FLOAT, std 255, CHW) and the dali_extra/jpeg
 * photos (RGB, ImageNet mean/std). sluice runs its ops as the executor would (setup on the caller,
 * run_cpu per sample on a pool of 1 or 2 threads); the peers run in one Python process
 * (bench/peer_decode.py, torch limited to one thread). Prints a Markdown table.
 * usage (from the repository root, or with SL_SOURCE_DIR set):
 *   build/bench_decode [seconds per measurement (default 2)] [python (default /usr/bin/python3)] */
#include "operator/op.h"
#include "ops/registry.h"

#include "core/pool.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the repository root: $SL_SOURCE_DIR, else the current directory */
static const char *root(void) {
    const char *r = getenv("SL_SOURCE_DIR");
    return r && *r ? r : ".";
}

#define MAXREC 512

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const sl__op_def *def;
    sl__args args;
    void *state;
} inst;

static int make(inst *o, const char *name, int n, const char *const *kv, int threads, int batch) {
    sl_err e;
    const char *names[8];
    sl__val vals[8];
    memset(vals, 0, sizeof vals);
    o->def = sl__registry_find(name);
    for (int i = 0; i < n; i++) {
        names[i] = kv[2 * i];
        if (sl__val_parse(kv[2 * i + 1], &vals[i], &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    }
    if (sl__args_build(o->def, n, names, vals, &o->args, &e))
        return fprintf(stderr, "%s\n", e.msg), 1;
    for (int i = 0; i < n; i++) sl__val_free(&vals[i]);
    sl__op_init init;
    memset(&init, 0, sizeof init);
    init.name = name, init.device = sl_cpu(), init.batch_size = batch, init.threads = threads;
    if (o->def->create(&o->args, &init, &o->state, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    return 0;
}

typedef struct {
    inst *op;
    sl__op_io *io;
} job;

static sl_status one(void *ctx, int64_t i, int worker, sl_err *err) {
    job *j = ctx;
    return j->op->def->run_cpu(j->op->state, j->io, (int)i, worker, err);
}

static int step(inst *op, sl__pool *pool, sl_tlist *in, sl_tlist *out, int batch) {
    sl_err e;
    sl_tlist *ins[1] = {in}, *outs[1] = {out};
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = batch, io.num_inputs = 1, io.in = ins, io.num_outputs = 1, io.out = outs;
    io.device = sl_cpu();
    if (op->def->setup(op->state, &io, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    job j = {op, &io};
    if (sl__pool_parallel_for(pool, batch, one, &j, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    return 0;
}

/* images/s of decode+normalise over the records, for `secs` seconds */
static double measure(const void *const *rec, const size_t *len, int n, int gray, int threads,
                      double secs) {
    sl_err e;
    sl__pool *pool;
    if (sl__pool_create(threads, &pool, &e)) return 0;
    inst dec, cmn;
    const char *dk[] = {"output_type", gray ? "types.GRAY" : "types.RGB"};
    const char *ck_gray[] = {"dtype", "types.FLOAT", "std", "[255.0]", "output_layout", "\"CHW\""};
    const char *ck_rgb[] = {"dtype",         "types.FLOAT",
                            "mean",          "[123.675, 116.28, 103.53]",
                            "std",           "[58.395, 57.12, 57.375]",
                            "output_layout", "\"CHW\""};
    if (make(&dec, "decoders.image", 1, dk, threads, n) ||
        make(&cmn, "crop_mirror_normalize", gray ? 3 : 4, gray ? ck_gray : ck_rgb, threads, n))
        return 0;
    sl_tlist in, img, out;
    memset(&in, 0, sizeof in), memset(&img, 0, sizeof img), memset(&out, 0, sizeof out);
    sl_tlist_reset(&in, n, SL_DTYPE_U8, 1, sl_cpu(), &e);
    for (int i = 0; i < n; i++) {
        int64_t l = (int64_t)len[i];
        sl_tlist_set_external(&in, i, (void *)rec[i], &l);
    }
    step(&dec, pool, &in, &img, n); /* warm-up */
    step(&cmn, pool, &img, &out, n);
    long done = 0;
    double t0 = now(), t;
    do {
        if (step(&dec, pool, &in, &img, n) || step(&cmn, pool, &img, &out, n)) return 0;
        done += n;
    } while ((t = now() - t0) < secs);
    dec.def->destroy(dec.state), cmn.def->destroy(cmn.state);
    sl__args_free(&dec.args), sl__args_free(&cmn.args);
    sl_tlist_free(&in), sl_tlist_free(&img), sl_tlist_free(&out);
    sl__pool_free(pool);
    return (double)done / t;
}

/* Caffe2 TensorProtos: the first string_data (field 6) of the first proto */
static int jpeg_of(const uint8_t *p, size_t n, const uint8_t **out, size_t *len) {
    const uint8_t *end = p + n;
    for (int depth = 0; p < end;) {
        uint64_t tag = 0, v = 0;
        for (int s = 0; p < end; s += 7) {
            tag |= (uint64_t)(*p & 0x7f) << s;
            if (!(*p++ & 0x80)) break;
        }
        if ((tag & 7) == 0) {
            while (p < end && (*p++ & 0x80)) {
            }
            continue;
        }
        if ((tag & 7) == 5) {
            p += 4;
            continue;
        }
        if ((tag & 7) == 1) {
            p += 8;
            continue;
        }
        for (int s = 0; p < end; s += 7) {
            v |= (uint64_t)(*p & 0x7f) << s;
            if (!(*p++ & 0x80)) break;
        }
        if (depth == 0 && (tag >> 3) == 1) {
            depth = 1;
            end = p + v;
            continue;
        }
        if ((tag >> 3) == 6) {
            *out = p, *len = (size_t)v;
            return 0;
        }
        p += v;
    }
    return 1;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    const char *py = argc > 2 ? argv[2] : "/usr/bin/python3";
    static const void *rec[MAXREC];
    static size_t len[MAXREC];
    int n = 0;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    mdb_env_create(&env);
    char dbpath[512];
    snprintf(dbpath, sizeof dbpath, "%s/tests/fixtures/caffe2-fmnist-256", root());
    if (mdb_env_open(env, dbpath, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0444))
        return fprintf(stderr, "cannot open the caffe2 fixture\n"), 1;
    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    mdb_dbi_open(txn, NULL, 0, &dbi);
    mdb_cursor_open(txn, dbi, &cur);
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc && n < MAXREC;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const uint8_t *j;
        if (!jpeg_of(v.mv_data, v.mv_size, &j, &len[n])) rec[n++] = j;
    }
    static const char *const photos[] = {"padlock-406986_640.jpg", "site-1534685_1280.jpg",
                                         "snail-4291306_1280.jpg", "swan-3584559_640.jpg"};
    const void *prec[4];
    size_t plen[4];
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/fixtures/dali_extra/jpeg/%s", root(), photos[i]);
        FILE *f = fopen(path, "rb");
        if (!f) return fprintf(stderr, "cannot open %s\n", path), 1;
        fseek(f, 0, SEEK_END);
        plen[i] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        void *b = malloc(plen[i]);
        if (fread(b, 1, plen[i], f) != plen[i]) return 1;
        fclose(f);
        prec[i] = b;
    }
    /* the same bytes for the peers */
    const char *blob = "/tmp/sluice_bench_decode.bin";
    FILE *f = fopen(blob, "wb");
    for (int i = 0; i < n + 4; i++) {
        uint32_t l = (uint32_t)(i < n ? len[i] : plen[i - n]);
        uint32_t kind = i < n ? 0 : 1;
        fwrite(&kind, 4, 1, f), fwrite(&l, 4, 1, f);
        fwrite(i < n ? rec[i] : prec[i - n], 1, l, f);
    }
    fclose(f);

    double s1 = measure(rec, len, n, 1, 1, secs), s2 = measure(rec, len, n, 1, 2, secs);
    double p1 = measure(prec, plen, 4, 0, 1, secs), p2 = measure(prec, plen, 4, 0, 2, secs);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/bench/peer_decode.py %s %g", py, root(), blob, secs);
    FILE *pp = popen(cmd, "r");
    double pil_m = 0, tv_m = 0, pil_p = 0, tv_p = 0;
    char line[256];
    while (pp && fgets(line, sizeof line, pp)) {
        char who[32], set[32];
        double r;
        if (sscanf(line, "%31s %31s %lf", who, set, &r) != 3) continue;
        double *dst = !strcmp(who, "pil") ? (!strcmp(set, "mnist") ? &pil_m : &pil_p)
                                          : (!strcmp(set, "mnist") ? &tv_m : &tv_p);
        *dst = r;
    }
    if (pp) pclose(pp);
    printf("| workload | sluice 1 thread | sluice 2 threads | scaling | PIL 1 thread | "
           "torchvision 1 thread | sluice/torchvision per core | sluice/PIL per core |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    printf(
        "| Fashion-MNIST 28x28 JPEG, GRAY -> float CHW /255 (%d images) | %.0f img/s | %.0f img/s "
        "| %.2fx | %.0f img/s | %.0f img/s | %.2fx | %.2fx |\n",
        n, s1, s2, s2 / s1, pil_m, tv_m, tv_m > 0 ? s1 / tv_m : 0, pil_m > 0 ? s1 / pil_m : 0);
    printf("| dali_extra/jpeg photos (4, 408x640..871x1280), RGB -> float CHW normalised | %.1f "
           "img/s | %.1f img/s | %.2fx | %.1f img/s | %.1f img/s | %.2fx | %.2fx |\n",
           s1 > 0 ? p1 : 0, p2, p2 / p1, pil_p, tv_p, tv_p > 0 ? p1 / tv_p : 0,
           pil_p > 0 ? p1 / pil_p : 0);
    for (int i = 0; i < 4; i++) free((void *)prec[i]);
    mdb_cursor_close(cur), mdb_txn_abort(txn), mdb_env_close(env);
    return 0;
}
