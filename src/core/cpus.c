/* SPDX-License-Identifier: Apache-2.0 */
/* How many CPUs this process may use: the CPUs of its affinity mask (taskset, mpirun's binding,
 * a container's cpuset), lowered to its cgroup's CPU quota (a container's --cpus: cgroup v2
 * cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us) where one is set. Read afresh on every
 * call, so a process moved to another CPU set or cgroup gets the new count; the cost is a system
 * call and a few small file reads. */
#define _GNU_SOURCE /* CPU_ALLOC, CPU_COUNT_S */
#include "core/cpus.h"

#include "sluice/tensor.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sl__cpus_affinity(void) {
#ifdef __linux__
    /* a mask wider than cpu_set_t (over 1024 CPUs) needs a larger set: EINVAL says so */
    for (int ncpu = CPU_SETSIZE; ncpu <= (1 << 20); ncpu *= 2) {
        cpu_set_t *set = CPU_ALLOC((size_t)ncpu);
        if (!set) break;
        size_t size = CPU_ALLOC_SIZE((size_t)ncpu);
        if (sched_getaffinity(0, size, set) == 0) {
            int n = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return n > 0 ? n : 1;
        }
        int e = errno;
        CPU_FREE(set);
        if (e != EINVAL) break;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

int sl__cpus_parse_max(const char *text) {
    char *end;
    errno = 0;
    long long quota = strtoll(text, &end, 10);
    if (end == text || errno || quota <= 0 || (*end != ' ' && *end != '\t')) return 0;
    const char *rest = end;
    long long period = strtoll(rest, &end, 10);
    if (end == rest || errno || period <= 0) return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    if (*end) return 0;
    long long n = quota / period + (quota % period != 0);
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* A small file's text (NUL-terminated, at most size - 1 bytes); false when it cannot be read. */
static bool read_text(const char *path, char *text, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(text, 1, size - 1, f);
    fclose(f);
    text[n] = '\0';
    return true;
}

/* The quota of the cgroup at dir (under the hierarchy mounted at mnt), whole CPUs; 0: none. v2:
 * cpu.max; v1: cpu.cfs_quota_us (-1 for none) over cpu.cfs_period_us. */
static int quota_at(const char *mnt, const char *dir, bool v1) {
    char path[4400], text[128];
    if (!v1) {
        snprintf(path, sizeof path, "%s%s/cpu.max", mnt, dir);
        return read_text(path, text, sizeof text) ? sl__cpus_parse_max(text) : 0;
    }
    char period[64];
    snprintf(path, sizeof path, "%s%s/cpu.cfs_quota_us", mnt, dir);
    if (!read_text(path, text, 64)) return 0;
    snprintf(path, sizeof path, "%s%s/cpu.cfs_period_us", mnt, dir);
    if (!read_text(path, period, sizeof period)) return 0;
    text[strcspn(text, "\n")] = '\0';
    size_t len = strlen(text);
    snprintf(text + len, sizeof text - len, " %s", period);
    return sl__cpus_parse_max(text);
}

/* The lowest quota of the cgroup at dir and of those above it, up to the mount's top (which a
 * container with its own cgroup namespace sees as its cgroup: "/"; a container without one sees
 * the host's path, which its mount lacks, and so its own cgroup's quota at the top); 0: none. */
static int quota_up(const char *mnt, const char *path, bool v1) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    int best = 0;
    for (;;) {
        size_t len = strlen(dir);
        while (len > 0 && dir[len - 1] == '/') dir[--len] = '\0';
        int q = quota_at(mnt, dir, v1);
        if (q > 0 && (best == 0 || q < best)) best = q;
        char *slash = strrchr(dir, '/');
        if (len == 0 || !slash) return best;
        *slash = '\0';
    }
}

/* Whether a v1 line's controller list ("cpu,cpuacct") names the cpu controller. */
static bool names_cpu(const char *list, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        while (i + n < len && list[i + n] != ',') n++;
        if (n == 3 && !strncmp(list + i, "cpu", 3)) return true;
        i += n + 1;
    }
    return false;
}

int sl__cpus_quota_of(const char *cgroups, const char *root) {
    /* the process's cgroups: "0::/path" (v2), "N:cpu,cpuacct:/path" (v1's cpu controller) */
    char v2[4096] = "", v1[4096] = "";
    bool have_v1 = false;
    for (const char *line = cgroups; *line;) {
        size_t n = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        size_t len = c2 ? n - (size_t)(c2 + 1 - line) : 0;
        if (c2 && len < sizeof v2) {
            if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) {
                memcpy(v2, c2 + 1, len);
                v2[len] = '\0';
            } else if (names_cpu(c1 + 1, (size_t)(c2 - c1 - 1))) {
                memcpy(v1, c2 + 1, len);
                v1[len] = '\0';
                have_v1 = true;
            }
        }
        line += n + (line[n] == '\n');
    }
    char mnt[4096];
    snprintf(mnt, sizeof mnt, "%s", root);
    int best = quota_up(mnt, v2, false);
    if (have_v1) { /* v1's cpu hierarchy is mounted at cpu (often a link to cpu,cpuacct) */
        snprintf(mnt, sizeof mnt, "%s/cpu", root);
        int q = quota_up(mnt, v1, true);
        if (q > 0 && (best == 0 || q < best)) best = q;
    }
    return best;
}

int sl__cpus_quota(void) {
#ifdef __linux__
    /* "" (the cgroups at the mounts' tops) when /proc/self/cgroup cannot be read */
    char text[16384] = "";
    read_text("/proc/self/cgroup", text, sizeof text);
    return sl__cpus_quota_of(text, "/sys/fs/cgroup");
#else
    return 0;
#endif
}

int sl_cpu_count(void) {
    int n = sl__cpus_affinity(), q = sl__cpus_quota();
    return q > 0 && q < n ? q : n;
}
