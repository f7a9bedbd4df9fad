/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lmdb: opening and indexing an LMDB of 1,000,000 small records (Caffe2 records with a
 * 64-byte payload), then one full sequential and one shuffled (initial_fill 1024) pass through the
 * loader, touching every record's bytes. Reports records/s and resident memory per record beyond
 * the map (the index), and appends the figures to bench/RESULTS.md.
 * usage: bench_lmdb [DIR] [RECORDS]  (DIR defaults to /tmp/sluice-bench-lmdb; reused if present) */
#include "io/caffe2.h"
#include "io/lmdb.h"
#include "io/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* anonymous resident memory (RssAnon, bytes): the heap, not the file map */
static long long rss_anon(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %lld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp/sluice-bench-lmdb";
    long long n = argc > 2 ? atoll(argv[2]) : 1000000;
    sl_err e;
    char data[4096];
    struct stat sb;
    snprintf(data, sizeof data, "%s/data.mdb", dir);
    if (stat(data, &sb) != 0) {
        double t0 = now();
        sl__lmdb_writer *w;
        if (sl__lmdb_writer_open(dir, &w, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
        sl__pw_buf rec = {0};
        uint8_t payload[64];
        for (long long i = 0; i < n; i++) {
            char key[16];
            memset(payload, (int)(i & 0xff), sizeof payload);
            rec.len = 0;
            sl__caffe2_encode(&rec, payload, sizeof payload, false, 0, 0, 0, (int32_t)(i % 10));
            snprintf(key, sizeof key, "%08lld", i);
            if (sl__lmdb_writer_put(w, key, 8, rec.data, rec.len, &e))
                return fprintf(stderr, "%s\n", e.msg), 1;
        }
        if (sl__lmdb_writer_close(w, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
        sl__protowire_buf_free(&rec);
        printf("wrote %lld records in %.2f s\n", n, now() - t0);
    }
    long long before = rss_anon();
    double t0 = now();
    sl__lmdb *db;
    if (sl__lmdb_open(1, &dir, &db, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    double t_open = now() - t0;
    long long after = rss_anon();
    n = sl__lmdb_count(db);
    double per_rec = (double)(after - before) / (double)n;
    double idx_bytes = (double)sl__lmdb_index_bytes(db) / (double)n;

    double rates[2];
    unsigned long long sum = 0;
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        sl__loader_cfg c = {.n = n,
                            .num_shards = 1,
                            .random_shuffle = shuffle != 0,
                            .initial_fill = 1024,
                            .seed = 1};
        sl__loader *l;
        if (sl__loader_create(&c, &l, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
        static sl__caffe2_record r;
        double t1 = now();
        for (long long i = 0; i < n; i++) {
            const uint8_t *v;
            size_t sz;
            sl__lmdb_value(db, sl__loader_next(l, (i & 255) == 0, NULL), &v, &sz);
            if (sl__caffe2_parse(v, sz, &r, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
            sum += r.t[0].str0[0] + r.t[0].nstr0; /* touch the bytes */
        }
        rates[shuffle] = (double)n / (now() - t1);
        sl__loader_free(l);
    }
    sl__lmdb_close(db);

    char host[256] = "?", date[64];
    struct utsname u;
    gethostname(host, sizeof host);
    uname(&u);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("records %lld (checksum %llu)\n", n, sum);
    printf("open+index: %.3f s = %.1f M records/s\n", t_open, (double)n / t_open / 1e6);
    printf("memory beyond the map: %.1f bytes/record resident (index %.1f bytes/record)\n", per_rec,
           idx_bytes);
    printf("sequential pass (parse every record): %.1f M records/s\n", rates[0] / 1e6);
    printf("shuffled pass (initial_fill 1024):    %.1f M records/s\n", rates[1] / 1e6);

    /* bench/RESULTS.md next to this source (__FILE__ is absolute in the CMake build) */
    char results[4096];
    snprintf(results, sizeof results, "%s", __FILE__);
    char *slash = strrchr(results, '/');
    snprintf(slash ? slash + 1 : results,
             sizeof results - (size_t)(slash ? slash + 1 - results : 0), "RESULTS.md");
    FILE *f = fopen(results, "a+");
    if (f) {
        fseek(f, 0, SEEK_END);
        if (ftell(f) == 0)
            fprintf(f, "# Benchmark results\n\nFigures appended by the benchmarks in bench/.\n");
        fprintf(
            f,
            "\n## bench_lmdb, %s\n\nMachine: %s (%s %s, %ld CPUs). Command: `make bench && "
            "build/bench_lmdb` (%lld Caffe2 records of a 64-byte payload).\n\n"
            "| measure | value |\n|---|---|\n"
            "| open + index | %.3f s, %.1f M records/s (target >= 5) |\n"
            "| resident memory beyond the map | %.1f bytes/record (index %.1f; target <= 32) |\n"
            "| sequential pass, parse each record | %.1f M records/s |\n"
            "| shuffled pass (initial_fill 1024), parse each record | %.1f M records/s |\n",
            date, host, u.sysname, u.machine, cpus, n, t_open, (double)n / t_open / 1e6, per_rec,
            idx_bytes, rates[0] / 1e6, rates[1] / 1e6);
        fclose(f);
        printf("appended to %s\n", results);
    }
    return 0;
}
