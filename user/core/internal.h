/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Declarations shared between libtracekit's modules; not part of the API. */
#ifndef __TK_INTERNAL_H
#define __TK_INTERNAL_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "caps/caps.h"

/* perf_event_open(2), always close-on-exec: the fd, or a negative errno. */
static inline int tk_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
				     unsigned long flags)
{
	int fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Clock @clk in nanoseconds. */
static inline int64_t tk_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Nanoseconds in at most 9 columns: 850ns, 12.3us, 1.50ms, 2.00s. Returns @buf. */
static inline const char *tk_fmt_ns(char *buf, size_t size, double ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.2fms", ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", ns / 1e9);
	return buf;
}

/* core_probe.c: load the CO-RE self-test and run it once (TK_PROBE_CORE). */
int tk_core_probe__run(struct tk_probe_ctx *ctx);

/*
 * cgroup.c: where the memory accounting of a process lives, from the texts of
 * its /proc/PID/cgroup and /proc/PID/mountinfo. Directories are relative to
 * the sys root ("/fs/cgroup/memory/x"), empty when that hierarchy has none.
 */
struct tk_cgroup_loc {
	char v2_path[512];	/* the cgroup, as /proc/PID/cgroup names it */
	char v2_dir[1024];
	char v1_path[512];	/* the v1 memory controller's cgroup */
	char v1_dir[1024];
};

int tk_cgroup__locate(const char *cgroup_text, const char *mountinfo_text,
		      struct tk_cgroup_loc *loc);

/*
 * cgroup.c: memory accounting of the cgroup of proc_root/@pid_dir ("self" or a
 * pid): v2, or v1's memory controller. No accounting is not an error.
 */
int tk_memcg__read(const char *proc_root, const char *sys_root, const char *pid_dir,
		   struct tk_memory *mem);

/* numa.c: nodes, their CPUs and memory from sys_root/devices/system/node. */
int tk_numa__read(const char *sys_root, struct tk_numa_topology *numa);

/* kconfig.c: look up CONFIG_NAME in proc_root/config.gz: 1 =y/=m, 0 not set, <0 unknown. */
int tk_kconfig__lookup(const char *proc_root, const char *name);

/* cpu_follow.c: children of profiled processes join cpu_sample's pids map */
struct cpu_follow_bpf;
struct cpu_follow_bpf *tk_cpu_follow__attach(int pids_fd);
void tk_cpu_follow__destroy(struct cpu_follow_bpf *skel);
/* Children that found the pids map full (never sampled); 0 for NULL. */
uint64_t tk_cpu_follow__pids_full(const struct cpu_follow_bpf *skel);

/*
 * The collectors' objects, loaded as `tracekit cpu/alloc/numa` would load
 * them here and closed at once (the snapshot's bpf.load.*): 0 and what was
 * chosen in @msg, or a negative errno and why.
 */
int tk_cpu_bpf__probe_load(char *msg, size_t msg_sz);
int tk_alloc_bpf__probe_load(char *msg, size_t msg_sz);
int tk_numa_bpf__probe_load(const struct tk_caps *caps, char *msg, size_t msg_sz);
int tk_stacks_bpf__probe_load(char *msg, size_t msg_sz);

#endif /* __TK_INTERNAL_H */
