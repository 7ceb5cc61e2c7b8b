/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the BPF backend of tracekit numa: what its loader (numa_trace.c:
 * what the kernel has, which probes load, what attaches) shares with its
 * reader (numa_trace_read.c: the ring buffer's events, the maps and counters
 * into the report, the stacks).
 */
#ifndef __TK_NUMA_TRACE_INT_H
#define __TK_NUMA_TRACE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/numa_trace.h"
#include "numa/numa_btf.h"
#include "numa/numa_int.h"

struct bpf_link;
struct ring_buffer;
struct numa_trace_bpf;
struct tk_unw_bpf;

/* How a function probe is loaded: not, fentry (fexit), kprobe (kretprobe). */
enum mp_mode { MP_NONE = 0, MP_FENTRY, MP_KPROBE };

/* The backend's state (struct tk_numa's priv). */
struct nt_state {
	struct numa_trace_bpf *skel;
	struct bpf_link *links[12];
	int nr_links;
	struct ring_buffer *rb;
	int cgroup_fd;

	/* what open found in the kernel */
	struct tk_numa_mig_args mig;
	bool have_migrate, have_start, have_sched[NT_SCHED__COUNT];
	int start_reason;
	int sched_args[NT_SCHED__COUNT][NT_SA__COUNT];
	int skip_arg;			/* sched_skip_vma_numa's reason; -1: no such tracepoint */
	char skip_names[NT_MAX_SKIP][24];
	int nr_skip;
	uint8_t reason_map[NT_MAX_KREASONS];
	char mp_fn[64];			/* misplaced-page function, "" when none */
	int mp_node_arg;
	int nodes_pgshift, nodes_shift;	/* nodes_shift -1: unknown */
	char nodes_from[96];		/* where NODES_SHIFT came from */
	enum mp_mode mp;		/* what loaded */
	bool mp_attached;
	int fentry_err;			/* fentry's load error, 0 none tried or fine */
	struct tk_numa_folio_fn ff;	/* per-folio migration function; ff.name "" when none */
	enum mp_mode fm;		/* what loaded for it: MP_FENTRY means fexit */
	bool ff_attached;
	int ff_err;			/* its first load error */

	/* what start attached, for every report */
	bool att_migrate, att_start, att_sched[NT_SCHED__COUNT], att_skip;
	char missing[TK_NUMA_MAX_MISSING][160];
	int nr_missing;
	char attach[256];
	uint64_t maps_missed;
	struct tk_unw_bpf *unw;		/* --stacks by CFI; NULL: by frame pointer */
	char unwind_note[256];
	char kernel_note[256];
};

/* ---- reading (numa_trace_read.c) ------------------------------------------------------- */

/* The ring buffer's callback; @ctx is the struct tk_numa. */
int tk_numa_bpf__handle_event(void *ctx, void *data, size_t size);
/* The backend's poll, collect and stacks. */
int tk_numa_bpf__poll(struct tk_numa *n, int timeout_ms);
int tk_numa_bpf__collect(struct tk_numa *n, struct tk_numa_report *r);
int tk_numa_bpf__stacks(struct tk_numa *n, struct tk_profile **out);

#endif /* __TK_NUMA_TRACE_INT_H */
