/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared by the caps*.c modules: the snapshot in progress and entry helpers. */
#ifndef __TK_CAPS_INT_H
#define __TK_CAPS_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "caps/caps.h"

/* Capability bits (linux/capability.h) */
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SYSLOG_BIT 34
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

struct btf;

struct snap {
	const char *proc;
	const char *sys;
	tk_probe_fn probe;
	char *kallsyms;		/* whole file, or NULL; read only when BTF cannot answer */
	bool kallsyms_read;
	struct btf *btf;	/* the BTF found (caps_btf.c), parsed; NULL when not */
	bool btf_shared;	/* it is kfeat's (tk_kfeat__btf_get): put, not freed */
	char btf_path[4096];	/* where: the kernel's own (sysfs), or a vmlinux on disk */
	bool has_btf;		/* btf_path holds BTF: CO-RE can relocate */
	bool kernel_btf;	/* it is the kernel's own: tp_btf and fentry can attach */
	uint64_t capeff;
	int seccomp;		/* 0 none, 1 strict, 2 filter, -1 unknown */
	long cap_last_cap;
	bool tracefs;
	char tracefs_dir[64];	/* relative to sys root */
	bool cpu_only;		/* TK_CAPS_CPU: only what the CPU backend needs */
	bool alloc_only;	/* TK_CAPS_ALLOC: only what the allocation backend needs */
	const struct tk_caps *caps;	/* the snapshot being taken (for the load probes) */
};

__attribute__((format(printf, 3, 4))) static inline void put(char *dst, size_t size,
							      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}

#define VALUE(c, ...) put((c)->value, sizeof((c)->value), __VA_ARGS__)
#define REASON(c, ...) put((c)->reason, sizeof((c)->reason), __VA_ARGS__)
#define REMEDY(c, ...) put((c)->remedy, sizeof((c)->remedy), __VA_ARGS__)

/* Mark entry @id present with status @st, everything else cleared. */
static inline struct tk_cap *set(struct tk_caps *caps, enum tk_cap_id id, enum tk_status st)
{
	struct tk_cap *c = &caps->caps[id];

	memset(c, 0, sizeof(*c));
	c->present = true;
	c->status = st;
	return c;
}

/* Entry @c fails because entry @cause does: the report lists it with that one. */
static inline void because(struct tk_cap *c, enum tk_cap_id cause)
{
	c->has_cause = true;
	c->cause = cause;
}

static inline bool ok(const struct tk_caps *caps, enum tk_cap_id id)
{
	return caps->caps[id].present && caps->caps[id].status == TK_SUPPORTED;
}

/* caps_btf.c: the kernel's BTF, where libbpf looks for it; the bpf.btf entry */
void snap_btf(struct snap *s, struct tk_caps *caps);

/* caps_access.c: privileges, eBPF and perf — what this process may do */
void snap_privileges(struct snap *s, struct tk_caps *caps);
void snap_bpf(struct snap *s, struct tk_caps *caps);
void snap_perf(struct snap *s, struct tk_caps *caps);

/* caps_system.c: tracepoints and functions, memory, NUMA, the target process */
void snap_tracepoints(struct snap *s, struct tk_caps *caps);
void snap_memory(struct snap *s, struct tk_caps *caps);
void snap_numa(struct snap *s, struct tk_caps *caps);
void snap_process(struct snap *s, struct tk_caps *caps);
void snap_process_unreadable(struct snap *s, struct tk_caps *caps, int err);

/* caps_python.c: the target process's CPython (process.python) */
void snap_python_runtime(struct snap *s, struct tk_caps *caps);
/* caps_runtime.c: the target process's JIT runtime (process.jit) */
void snap_jit_runtime(struct snap *s, struct tk_caps *caps);

#endif /* __TK_CAPS_INT_H */
