/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * NUMA migration: which pages the kernel moves between nodes, for whom, and
 * why. Run it as a session (tracekit/session.h: tk_session__open_numa).
 */
#ifndef __TRACEKIT_NUMA_H
#define __TRACEKIT_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TK_NUMA_MAX_PIDS 64

struct tk_numa_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_numa_opts) */
	int pids[TK_NUMA_MAX_PIDS];	/* only these processes; none: all */
	int nr_pids;
	const char *cgroup;		/* cgroup v2 directory, or NULL */
	bool stacks;			/* --stacks: user stacks of the tasks that migrate */
	enum tk_backend backend;	/* TK_BACKEND_NONE: the snapshot's choice (bpf, vmstat) */
	const char *proc_root;		/* default "/proc" */
	const char *sys_root;		/* default "/sys" */
	enum tk_unwind_mode unwind;	/* --stacks: CFI where possible (auto), fp, cfi */
	size_t unwind_mem;		/* bytes for unwind tables; 0: the default (16 MiB) */
};

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_NUMA_H */
