/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the capability snapshot: the whole report as a struct, for the
 * collectors and the report writers; the kernel probes as one replaceable
 * function, for the tests' fixture trees. Not part of the API
 * (include/tracekit/caps.h is).
 */
#ifndef __TK_CAPS_CAPS_H
#define __TK_CAPS_CAPS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracekit/caps.h"
#include "proc/procinfo.h"

struct tk_cap {
	bool present;		/* false for entries that do not apply (no -p) */
	bool not_needed;	/* not supported, but tracekit does not need it here */
	enum tk_status status;
	char value[128];	/* what was found, short: "2", "v1", "migrate_misplaced_folio" */
	char reason[768];	/* why not supported (or a note when supported) */
	char remedy[256];	/* what a person can do about it; empty if nothing */
	/* it fails because entry @cause does (no kernel BTF, no bpf(2)): one problem, not two */
	bool has_cause;
	enum tk_cap_id cause;
};

/* The kernel probes, as one function the unit tests can replace. */
enum tk_probe {
	TK_PROBE_BPF_SYSCALL,
	TK_PROBE_RINGBUF,
	TK_PROBE_CORE,
	TK_PROBE_PROG_PERF_EVENT,
	TK_PROBE_PROG_TRACEPOINT,
	TK_PROBE_PROG_RAW_TP,
	TK_PROBE_PROG_TP_BTF,
	TK_PROBE_PROG_FENTRY,
	TK_PROBE_PROG_UPROBE,
	TK_PROBE_PROG_KPROBE,
	TK_PROBE_PERF_CPU_CLOCK,
	TK_PROBE_PERF_HARDWARE,
	TK_PROBE_UNWIND,	/* the CFI unwinder loads into a perf_event program */
	TK_PROBE_MAP_RUNTIME_ALLOC,	/* core/kfeat.h */
	TK_PROBE_ATTACH_COOKIE,
	TK_PROBE_UPROBE_SESSION,
	TK_PROBE_LOAD_CPU,	/* the collectors' objects, as they would load them */
	TK_PROBE_LOAD_ALLOC,
	TK_PROBE_LOAD_NUMA,
	TK_PROBE_LOAD_STACKS,
	TK_PROBE__COUNT,
};

/* What the CO-RE self-test read from the kernel (TK_PROBE_CORE). */
struct tk_core_facts {
	uint32_t tgid;
	bool mm_migrate_has_nr_split;
	bool mm_migrate_has_large_folio_split;
	bool has_mr_numa_misplaced;
};

struct btf;

struct tk_probe_ctx {
	const char *sys_root;	/* where tracefs, event_source devices live */
	const char *btf_path;	/* the BTF CO-RE relocates against (sysfs or a vmlinux on
				   disk, as libbpf finds it), NULL when there is none */
	const struct btf *btf;	/* the kernel's own BTF (sysfs), parsed once; NULL when
				   there is none or it was not parsed (CPU-only scope) */
	char msg[256];		/* out: what happened, for people */
	const char *tracefs_dir;	/* mounted tracefs under sys_root, or NULL */
	bool own_only;		/* out: perf events only for the caller's own processes */
	bool user_only;		/* out: ... and only with exclude_kernel */
	struct tk_core_facts core;	/* out: TK_PROBE_CORE only */
	const struct tk_caps *caps;	/* the snapshot so far (TK_PROBE_LOAD_NUMA) */
};

/* Returns 0 when the kernel allowed it, or the negative errno it answered. */
typedef int (*tk_probe_fn)(enum tk_probe which, struct tk_probe_ctx *ctx);

/* The real probes: throw-away BPF objects and perf events, closed at once. */
int tk_probe_kernel(enum tk_probe which, struct tk_probe_ctx *ctx);

struct tk_backend_choice {
	enum tk_backend backend;
	char reason[256];
	/* what kept the collector from its bpf backend, in the reason's words; "" with it */
	char blocker[256];
};

#define TK_MAX_NUMA_NODES 64

struct tk_numa_node {
	int id;
	char cpus[128];		/* cpulist, e.g. "0-3,8" */
	uint64_t mem_total_kb;
	uint64_t mem_free_kb;
};

enum tk_cgroup_version { TK_CGROUP_NONE = 0, TK_CGROUP_V1, TK_CGROUP_V2 };

struct tk_memory {
	uint64_t mem_total_kb;		/* /proc/meminfo */
	uint64_t mem_available_kb;
	uint64_t swap_total_kb;
	uint64_t swap_free_kb;
	int rss_pid;			/* whose resident figure this is */
	uint64_t rss_kb;		/* VmRSS */
	uint64_t hwm_kb;		/* VmHWM */
	enum tk_cgroup_version cgroup;
	char cgroup_path[512];		/* the cgroup, as in /proc/PID/cgroup */
	char cgroup_dir[1024];		/* where its files are, under sys_root */
	/* figures, or UINT64_MAX when the file is missing; limit "max" → UINT64_MAX */
	bool has_current, has_limit, has_peak;
	uint64_t current_bytes;		/* memory.current / memory.usage_in_bytes */
	uint64_t limit_bytes;		/* memory.max / memory.limit_in_bytes */
	uint64_t peak_bytes;		/* memory.peak / memory.max_usage_in_bytes */
	bool limit_unlimited;
	char cgroup_files[256];		/* the accounting files found, space separated */
};

struct tk_numa_topology {	/* the machine's nodes (struct tk_numa is a NUMA session) */
	int nr_nodes;
	struct tk_numa_node nodes[TK_MAX_NUMA_NODES];
	long balancing;			/* kernel.numa_balancing, -1 when absent */
};

struct tk_caps {
	char kernel_release[128];
	char machine[32];
	int pid;			/* -p PID, 0 for none */
	struct tk_cap caps[TK_CAP__COUNT];
	struct tk_memory memory;
	struct tk_numa_topology numa;
	struct tk_proc_info proc;	/* valid when pid != 0 */
	struct tk_core_facts core;
	struct tk_backend_choice backends[TK_COLLECT__COUNT];
	double elapsed_ms;		/* time the snapshot took */
};

/*
 * Take a snapshot into @caps (the caller's). Returns 0 or a negative errno:
 * -ESRCH when opts->pid does not exist, -EINVAL on bad opts. Whatever the
 * report says, a returned 0 means it is complete.
 */
int tk_caps__snapshot(const struct tk_caps_opts *opts, struct tk_caps *caps);
/* The same with the kernel probes answered by @probe (NULL: tk_probe_kernel). */
int tk_caps__snapshot_probe(const struct tk_caps_opts *opts, tk_probe_fn probe,
			    struct tk_caps *caps);

#endif /* __TK_CAPS_CAPS_H */
