/* SPDX-License-Identifier: Apache-2.0 */
/* The thread count chosen when none is given: the rule (the CPUs over the pipelines sharing them,
 * less one, 1..64) on a table of machines; sl_cpu_count against this process's affinity mask,
 * also narrowed to one CPU; the cgroup CPU quota read from cpu.max and v1's cfs files in a
 * made-up hierarchy (nested groups, the lowest winning; a container's path its mount lacks);
 * and what sl_pipeline_create and sl_iter_create take for SL_NUM_THREADS_AUTO (the pipeline
 * alone, or the iterator's devices sharing the CPUs), while explicit counts stay as given and
 * counts out of range are refused as before. */
#define _GNU_SOURCE /* CPU_SET, sched_setaffinity */
#include "check.h"
#include "core/cpus.h"
#include "graph/pipeline.h"

#include "sluice/iterator.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>

static int clamp_rule(int cpus, int pipelines) {
    int share = cpus / (pipelines > 1 ? pipelines : 1) - 1;
    return share < 1 ? 1 : share > 64 ? 64 : share;
}

static void test_rule_table(void) {
    const struct {
        int cpus, pipelines, want;
    } t[] = {
        {16, 1, 15}, /* one GPU of the 16-core machine: ~15 decode threads */
        {16, 2, 7},  {32, 2, 15},  {128, 8, 15},     {2, 1, 1},   {1, 1, 1},
        {3, 2, 1},   {2, 4, 1},    {256, 1, 64},     {65, 1, 64}, {64, 1, 63},
        {16, 0, 15}, {16, -3, 15}, {16, INT_MAX, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECK_MSG(sl__pipeline_threads_for(t[i].cpus, t[i].pipelines) == t[i].want,
                  "%d CPUs, %d pipelines: %d threads, want %d", t[i].cpus, t[i].pipelines,
                  sl__pipeline_threads_for(t[i].cpus, t[i].pipelines), t[i].want);
}

static void test_this_machine(void) {
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    int mask = CPU_COUNT(&all), quota = sl__cpus_quota();
    int cpus = quota > 0 && quota < mask ? quota : mask;
    CHECK_EQ_INT(sl__cpus_affinity(), mask);
    CHECK_EQ_INT(sl_cpu_count(), cpus);
    CHECK(sl_cpu_count() >= 1 && sl_cpu_count() <= mask);
    if (quota == 0) CHECK_EQ_INT(sl_cpu_count(), mask); /* no quota: the mask alone */
    for (int n = -1; n <= 9; n++) {
        int got = sl_pipeline_default_threads(n);
        CHECK_MSG(got >= 1 && got <= 64, "%d pipelines: %d threads", n, got);
        CHECK_EQ_INT(got, clamp_rule(cpus, n));
        if (n > 1) CHECK(got <= sl_pipeline_default_threads(n - 1)); /* more share: no more */
    }
    /* one pipeline: every CPU but one (1 on a 2-core machine) */
    CHECK_EQ_INT(sl_pipeline_default_threads(1), cpus > 65 ? 64 : cpus > 1 ? cpus - 1 : 1);
    /* narrowed to one CPU (as taskset -c 0 would): one thread, however few pipelines */
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK_EQ_INT(sl__cpus_affinity(), 1);
    CHECK_EQ_INT(sl_cpu_count(), 1);
    CHECK_EQ_INT(sl_pipeline_default_threads(1), 1);
    CHECK_EQ_INT(sl_pipeline_default_threads(4), 1);
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
    CHECK_EQ_INT(sl_cpu_count(), cpus);
}

static void test_parse_max(void) {
    CHECK_EQ_INT(sl__cpus_parse_max("max 100000\n"), 0);
    CHECK_EQ_INT(sl__cpus_parse_max("100000 100000\n"), 1);
    CHECK_EQ_INT(sl__cpus_parse_max("150000 100000\n"), 2); /* 1.5 CPUs: rounded up */
    CHECK_EQ_INT(sl__cpus_parse_max("50000 100000"), 1);
    CHECK_EQ_INT(sl__cpus_parse_max("800000 100000"), 8);
    CHECK_EQ_INT(sl__cpus_parse_max("9223372036854775807 1"), INT_MAX);
    const char *bad[] = {"",       "\n",       "max",       "-1 100000",       "0 100000",
                         "100000", "100000 0", "100000 -5", "100000 100000 7", "1e5 100000",
                         "abc def"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(sl__cpus_parse_max(bad[i]) == 0, "\"%s\": %d", bad[i],
                  sl__cpus_parse_max(bad[i]));
}

static void put(const char *root, const char *rel, const char *text) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_cgroup_tree(void) {
    /* v2: the lowest quota of the process's group and those above it */
    const char *v2 = scratch_dir("num_threads_v2");
    put(v2, "cpu.max", "max 100000\n");
    put(v2, "a/cpu.max", "250000 100000\n");
    put(v2, "a/b/cpu.max", "max 100000\n");
    put(v2, "a/b/c/cpu.max", "600000 100000\n");
    CHECK_EQ_INT(sl__cpus_quota_of("0::/a/b\n", v2), 3);
    CHECK_EQ_INT(sl__cpus_quota_of("0::/a/b/c\n", v2), 3);
    CHECK_EQ_INT(sl__cpus_quota_of("0::/\n", v2), 0); /* the top, with none set */
    CHECK_EQ_INT(sl__cpus_quota_of("", v2), 0);
    put(v2, "a/b/c/d/cpu.max", "100000 100000\n");
    CHECK_EQ_INT(sl__cpus_quota_of("0::/a/b/c/d\n", v2), 1);
    /* a container without its own cgroup namespace: the host's path, which its mount lacks; its
     * own group is the mount's top */
    const char *box = scratch_dir("num_threads_box");
    put(box, "cpu.max", "200000 100000\n");
    CHECK_EQ_INT(sl__cpus_quota_of("0::/system.slice/docker-1f2e.scope\n", box), 2);
    /* v1: the cpu controller's line (not cpuacct's, not cpuset's), at root/cpu */
    const char *v1 = scratch_dir("num_threads_v1");
    put(v1, "cpu/cpu.cfs_quota_us", "-1\n");
    put(v1, "cpu/cpu.cfs_period_us", "100000\n");
    put(v1, "cpu/job/cpu.cfs_quota_us", "350000\n");
    put(v1, "cpu/job/cpu.cfs_period_us", "100000\n");
    put(v1, "cpu/other/cpu.cfs_quota_us", "100000\n");
    put(v1, "cpu/other/cpu.cfs_period_us", "100000\n");
    CHECK_EQ_INT(sl__cpus_quota_of("4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n", v1), 4);
    CHECK_EQ_INT(sl__cpus_quota_of("2:cpuacct:/other\n1:cpuset:/other\n0::/\n", v1), 0);
    CHECK_EQ_INT(sl__cpus_quota_of("3:cpuacct,cpu:/other\n", v1), 1);
    CHECK_EQ_INT(sl__cpus_quota_of("3:cpu,cpuacct:/\n", v1), 0); /* -1: none */
    /* both: the lower */
    put(v1, "cpu.max", "200000 100000\n");
    CHECK_EQ_INT(sl__cpus_quota_of("3:cpu,cpuacct:/job\n0::/\n", v1), 2);
}

static const char *text = "def p(path):\n"
                          "    jpegs, labels = fn.readers.caffe2(path=path, name=\"r\")\n"
                          "    return fn.decoders.image(jpegs, output_type=types.GRAY), labels\n";

static void test_pipeline(void) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    CHECK_EQ_INT(c.num_threads, SL_NUM_THREADS_AUTO);
    c.batch_size = 8;
    sl_pipeline_bind bind = {"path", fixture("caffe2-fmnist-256")};
    sl_err e;
    /* no count: the library's for one pipeline on the CPU; it runs */
    sl_pipeline *p = check_pipeline(&c, text, "p.py", 1, &bind, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    CHECK_EQ_INT(sl_pipeline_num_threads(p), sl_pipeline_default_threads(1));
    sl_batch *b;
    CHECK_OK(sl_pipeline_next(p, &b), NULL);
    CHECK_EQ_INT(sl_batch_size(b), 8);
    sl_pipeline_release(p, b);
    sl_pipeline_free(p);
    /* explicit counts as given, even past the CPUs */
    for (int n = 1; n <= 5; n += 2) {
        c.num_threads = n;
        CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
        CHECK_EQ_INT(sl_pipeline_num_threads(p), n);
        sl_pipeline_free(p);
    }
    c.num_threads = 1024;
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    CHECK_EQ_INT(sl_pipeline_num_threads(p), 1024);
    sl_pipeline_free(p);
    c.num_threads = -1;
    CHECK_FAILS(sl_pipeline_create(&c, &p, &e), SL_EINVAL, &e, "pipeline num_threads -1 (1..1024");
    c.num_threads = 1025;
    CHECK_FAILS(sl_pipeline_create(&c, &p, &e), SL_EINVAL, &e, "pipeline num_threads 1025");
}

static void test_iterator(void) {
    char path[1100];
    snprintf(path, sizeof path, "\"%s\"", fixture("caffe2-fmnist-256"));
    sl_pipeline_bind bind = {"path", path};
    const char *itext = "def p(path, num_shards, shard_id):\n"
                        "    jpegs, labels = fn.readers.caffe2(path=path, name=\"r\",\n"
                        "        num_shards=num_shards, shard_id=shard_id)\n"
                        "    return fn.decoders.image(jpegs, output_type=types.GRAY), labels\n";
    for (int ndev = 1; ndev <= 3; ndev++)
        for (int given = 0; given <= 3; given += 3) {
            sl_iter_config c;
            sl_iter_config_init(&c);
            if (ndev == 1) CHECK_EQ_INT(c.num_threads, SL_NUM_THREADS_AUTO);
            c.text = itext;
            c.binds = &bind;
            c.nbinds = 1;
            c.batch_size = 4 * ndev;
            c.ndevices = ndev;
            for (int d = 0; d < ndev; d++) c.devices[d] = sl_cpu();
            c.num_threads = given;
            sl_iter *it;
            sl_err e;
            CHECK_OK(sl_iter_create(&c, &it, &e), &e);
            if (check_failures) return;
            /* the devices' pipelines run at once: they share the CPUs */
            int want = given ? given : sl_pipeline_default_threads(ndev);
            for (int d = 0; d < ndev; d++)
                CHECK_MSG(sl_pipeline_num_threads(sl_iter_pipeline(it, d)) == want,
                          "%d devices, num_threads %d: pipeline %d has %d, want %d", ndev, given, d,
                          sl_pipeline_num_threads(sl_iter_pipeline(it, d)), want);
            const sl_iter_batch *b;
            CHECK_OK(sl_iter_next(it, &b), NULL);
            sl_iter_free(it);
        }
}

int main(void) {
    test_rule_table();
    test_this_machine();
    test_parse_max();
    test_cgroup_tree();
    test_pipeline();
    test_iterator();
    return check_done();
}
