/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The capability snapshot: what this kernel, these privileges and this
 * process allow, and why not — the report `tracekit caps` prints, and the
 * source of every collector's backend choice. Read-only: it changes nothing
 * on the machine. The snapshot is opaque; read it through the functions here.
 */
#ifndef __TRACEKIT_CAPS_H
#define __TRACEKIT_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tk_status {
	TK_SUPPORTED = 0,	/* works, or does not stand in the way */
	TK_UNSUPPORTED,		/* this kernel / machine cannot do it */
	TK_DISABLED,		/* present but switched off or forbidden */
};

/* Every entry of the report, in report order. Ids are stable (see docs/caps-json.md). */
enum tk_cap_id {
	/* privileges of the caller */
	TK_CAP_CAP_BPF,
	TK_CAP_CAP_PERFMON,
	TK_CAP_CAP_SYS_ADMIN,
	TK_CAP_PERF_EVENT_PARANOID,
	TK_CAP_KPTR_RESTRICT,
	TK_CAP_UNPRIV_BPF_DISABLED,
	TK_CAP_LOCKDOWN,
	/* eBPF */
	TK_CAP_BPF_SYSCALL,
	TK_CAP_BTF,
	TK_CAP_RINGBUF,
	TK_CAP_CORE,
	TK_CAP_PROG_PERF_EVENT,
	TK_CAP_PROG_TRACEPOINT,
	TK_CAP_PROG_RAW_TP,
	TK_CAP_PROG_TP_BTF,
	TK_CAP_PROG_FENTRY,
	TK_CAP_PROG_UPROBE,
	TK_CAP_PROG_KPROBE,
	TK_CAP_BPF_UNWIND,
	TK_CAP_MAP_RUNTIME_ALLOC,
	TK_CAP_ATTACH_COOKIE,
	TK_CAP_UPROBE_SESSION,
	/* each collector's own BPF objects, loaded as it would load them */
	TK_CAP_LOAD_CPU,
	TK_CAP_LOAD_ALLOC,
	TK_CAP_LOAD_NUMA,
	TK_CAP_LOAD_STACKS,
	/* perf_event_open */
	TK_CAP_PERF_CPU_CLOCK,
	TK_CAP_PERF_HARDWARE,
	/* kernel tracepoints and functions the collectors use */
	TK_CAP_TRACEFS,
	TK_CAP_TP_SCHED_PROCESS_EXEC,
	TK_CAP_TP_SCHED_PROCESS_EXIT,
	TK_CAP_TP_MM_MIGRATE_PAGES,
	TK_CAP_TP_SCHED_MOVE_NUMA,
	TK_CAP_TP_SCHED_SWAP_NUMA,
	TK_CAP_TP_SCHED_STICK_NUMA,
	TK_CAP_TP_KMEM_MM_PAGE_ALLOC,
	TK_CAP_TP_KMEM_KMALLOC,
	TK_CAP_TP_PAGE_FAULT_USER,
	TK_CAP_FN_MIGRATE_MISPLACED,
	/* memory */
	TK_CAP_MEM_CGROUP,
	/* NUMA */
	TK_CAP_NUMA,
	TK_CAP_NUMA_BALANCING,
	/* the target process (-p PID) */
	TK_CAP_PROC_ALLOCATOR,
	TK_CAP_PROC_JEMALLOC_PROF,
	TK_CAP_PROC_BUILD_ID,
	TK_CAP_PROC_FRAME_POINTERS,
	TK_CAP_PROC_PYTHON,		/* its CPython: version, offsets, Python frames walked */
	TK_CAP_PROC_JIT,		/* its JIT runtime (JVM, node): what whole stacks need */
	TK_CAP__COUNT,
};

struct tk_caps_opts {
	size_t sz;		/* TK_OPTS_SZ(tk_caps_opts) */
	const char *proc_root;	/* default "/proc" */
	/*
	 * default "/sys"; the vmlinux files libbpf looks for kernel BTF in when
	 * sys_root has none (/boot/vmlinux-KVER ...) are looked for under its
	 * parent directory ("/" for "/sys")
	 */
	const char *sys_root;
	int pid;		/* 0: the caller; else the target process */
	const char *release;	/* default: proc_root/sys/kernel/osrelease */
	/*
	 * Where messages go while the probes run (libbpf's among them); NULL:
	 * nowhere — refused probes are expected and their words are already in
	 * the report.
	 */
	tk_log_fn log;
	void *log_ctx;
	/*
	 * TK_CAPS_ALL: the whole report. TK_CAPS_CPU: only what the CPU backend
	 * choice needs (privileges, bpf(2), perf_event programs, cpu-clock, BTF
	 * presence, and without BTF what cannot work then: CO-RE, tp_btf,
	 * fentry), for a fast start; other entries are absent and the other
	 * collectors' backends are "none", not assessed. TK_CAPS_ALLOC: only
	 * what the allocation backend choice needs (privileges, bpf(2), ring
	 * buffers, uprobe programs, BTF, cpu-clock, and with a pid the process's
	 * allocator), without loading the collector's object: the session that
	 * asked loads it next.
	 */
	unsigned int scope;
};

enum tk_caps_scope {
	TK_CAPS_ALL = 0,
	TK_CAPS_CPU = 1,
	TK_CAPS_ALLOC = 2,
};

struct tk_caps;

/*
 * Take a snapshot into *@out (free it with tk_caps__free). Returns 0 or a
 * negative errno: -ESRCH when opts->pid does not exist, -EINVAL on bad opts,
 * -ENOMEM. Whatever the report says, 0 means it is complete.
 */
int tk_caps__take(const struct tk_caps_opts *opts, struct tk_caps **out);
void tk_caps__free(struct tk_caps *caps);

/* One entry: false for entries that do not apply (no pid, or outside the scope). */
bool tk_caps__present(const struct tk_caps *caps, enum tk_cap_id id);
enum tk_status tk_caps__status(const struct tk_caps *caps, enum tk_cap_id id);
/* What was found ("2", "v1"), why not supported, what a person can do; "" when none. */
const char *tk_caps__value(const struct tk_caps *caps, enum tk_cap_id id);
const char *tk_caps__reason(const struct tk_caps *caps, enum tk_cap_id id);
const char *tk_caps__remedy(const struct tk_caps *caps, enum tk_cap_id id);
/* The backend collector @c would use, and why (*@reason may be NULL). */
enum tk_backend tk_caps__backend(const struct tk_caps *caps, enum tk_collector c,
				 const char **reason);
const char *tk_caps__kernel_release(const struct tk_caps *caps);
/* How long the snapshot took, in milliseconds. */
double tk_caps__elapsed_ms(const struct tk_caps *caps);

/* Stable names: "bpf.syscall", "supported" ... */
const char *tk_cap__id_name(enum tk_cap_id id);
const char *tk_cap__title(enum tk_cap_id id);
const char *tk_status__name(enum tk_status s);

/* The report as JSON (schema tracekit.caps/1, docs/caps-json.md) or as text. */
int tk_caps__write_json(const struct tk_caps *caps, FILE *f);
int tk_caps__write_text(const struct tk_caps *caps, FILE *f);
/*
 * The same into the file @path ("-": stdout), JSON when @json, whole or not
 * at all (written beside it, renamed into place; a symlink is refused: -ELOOP).
 */
int tk_caps__write_file(const struct tk_caps *caps, const char *path, bool json);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_CAPS_H */
