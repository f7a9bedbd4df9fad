/* SPDX-License-Identifier: Apache-2.0 */
/* The CPUs this process may use (sl_cpu_count, sluice/tensor.h) and the pieces it is made of:
 * the affinity mask's count and the cgroup CPU quota. */
#ifndef SLUICE_CORE_CPUS_H
#define SLUICE_CORE_CPUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* CPUs in this process's affinity mask (sched_getaffinity; the online CPUs where it cannot be
 * read); at least 1. */
int sl__cpus_affinity(void);
/* The CPU quota of the process's cgroup and of every cgroup above it (cgroup v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us), the lowest one, in whole CPUs rounded up; 0 when none
 * is set or none can be read. */
int sl__cpus_quota(void);
/* The same for a process whose /proc/self/cgroup reads `cgroups`, with the cgroup hierarchies
 * mounted under root (v2 at root, v1's cpu controller at root/cpu); sl__cpus_quota reads the
 * file and passes "/sys/fs/cgroup". */
int sl__cpus_quota_of(const char *cgroups, const char *root);
/* One cpu.max text ("QUOTA PERIOD" in microseconds, or "max PERIOD") as whole CPUs rounded up;
 * 0 for "max" or a text that is not that. */
int sl__cpus_parse_max(const char *text);

#ifdef __cplusplus
}
#endif
#endif
