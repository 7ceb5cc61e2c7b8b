/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the BPF backend of allocation sessions: what its four files share.
 *  - alloc_trace.c: the loader: which programs load for the mode, the
 *    geometric intervals, the unwinder and its fallback, whether uprobe
 *    sessions work here, open, free and the backend's ops;
 *  - alloc_trace_attach.c: placing the probes: uprobe_multi links, uprobes,
 *    raw tracepoints, the preload markers, and start;
 *  - alloc_trace_read.c: what the programs record: the ring buffer's
 *    records, the counters, exec'd processes' maps, growth deltas, poll and
 *    drain;
 *  - alloc_trace_cost.c: the cost before hooking: a uprobe hit's cost,
 *    calibrated on functions of our own, and the allocator call rate.
 * (alloc_int.h is what the session shares with every backend.)
 */
#ifndef __TK_ALLOC_TRACE_INT_H
#define __TK_ALLOC_TRACE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "alloc/alloc_int.h"
#include "alloc/alloc_syms.h"
#include "core/hashmap.h"
#include "bpf/alloc_trace.h"

struct alloc_trace_bpf;
struct bpf_link;
struct bpf_program;
struct ring_buffer;
struct tk_unw_bpf;

/* Not in the 6.1 uapi headers this builds against (include/uapi/linux/bpf.h) */
#define AT_TRACE_UPROBE_MULTI 48
#define AT_TRACE_UPROBE_SESSION 57

#define MAX_LINKS (2 * TK_ALLOC_MAX_FNS + 8)
#define MAX_STALE 64

struct growth_seen {
	uint64_t used;			/* 1: empty slots start with 0, and a key might */
	struct at_growth_key key;
	struct at_growth_val val;	/* delivered so far */
};

/* The backend's state (struct tk_alloc's priv); a hit-cost or rate measurement makes one too. */
struct at_state {
	struct alloc_trace_bpf *skel;
	bool sessions;			/* uprobe_multi sessions work here */
	struct tk_alloc_syms *syms;
	int multi_fds[2];		/* uprobe_multi links: allocating, freeing */
	struct bpf_link *links[MAX_LINKS];
	int nr_links;
	struct bpf_link **cpu_links;	/* growth's page-faults event, one per online CPU */
	int nr_cpu_links;
	struct ring_buffer *rb;
	uint64_t seen[AT_CNT__COUNT];	/* counters delivered so far */
	struct tk_hashmap growth;	/* struct growth_seen by key; set up at first use */
	struct {
		uint32_t pid;
		uint32_t gen;		/* the generation the exec began */
		int64_t exec_ns;
	} stale[MAX_STALE];		/* exec'd: capture their maps again soon */
	int nr_stale;
	int err;			/* from a ring callback */
	struct tk_unw_bpf *unw;		/* NULL: user stacks by frame pointer */
};

/* Which programs load (tk_alloc_bpf__load). */
enum load_kind {
	LOAD_SESSION,			/* alloc_session + free_enter on uprobe_multi */
	LOAD_CLASSIC,			/* alloc_enter + alloc_exit + free_enter */
	LOAD_MARKERS,
	LOAD_GROWTH,
	LOAD_COUNT,			/* count_alloc + count_free (no cookies needed) */
	LOAD_COUNT_MULTI,		/* count_calls on uprobe_multi: one link for all */
};

/* ---- loading (alloc_trace.c) ----------------------------------------------------------- */

/*
 * Open, configure and load the programs of @k, with the unwinder @a asks for
 * (@a NULL: frame pointers). NULL with *@errp set when that fails.
 */
struct alloc_trace_bpf *tk_alloc_bpf__load(struct tk_alloc *a, enum load_kind k, int *errp);
/*
 * What growth's page faults come by here, for people: the raw tracepoint
 * page_fault_user where the kernel has it (tk_kfeat__page_fault_user), else
 * the software perf event page-faults.
 */
const char *tk_alloc_bpf__fault_source(void);
/* Slot program alloc_enter_s@slot (kernels without attach cookies). */
struct bpf_program *tk_alloc_bpf__slot_prog(struct alloc_trace_bpf *s, int slot);
/* alloc_session (in the objects loaded for uprobe sessions only). */
struct bpf_program *tk_alloc_bpf__session_prog(struct alloc_trace_bpf *s);
/* Can a uprobe session link be made here? @s: loaded with LOAD_SESSION. */
bool tk_alloc_bpf__sessions_work(struct alloc_trace_bpf *s);
/* The allocator of process @pid into @syms; @a may be NULL; @why gets the reason. */
int tk_alloc_bpf__find_in_process(struct tk_alloc *a, int pid, const struct tk_caps *caps,
				  struct tk_alloc_syms *syms, char *why, size_t why_sz);

/* ---- attaching (alloc_trace_attach.c) -------------------------------------------------- */

/* A uprobe_multi link of @cnt @offsets in @path (pid 0: all); its fd or a negative errno. */
int tk_alloc_bpf__uprobe_multi_link(int prog_fd, int type, const char *path,
				    const uint64_t *offsets, const uint64_t *cookies, int cnt,
				    int pid);
/* The file and offset of @addr in our own mappings. */
int tk_alloc_bpf__self_offset(const void *addr, char *path, size_t path_sz, uint64_t *off);
/* A uprobe (@ret: uretprobe) of @prog on @fn in @path, kept in @st's links. */
int tk_alloc_bpf__attach_uprobe(struct at_state *st, struct bpf_program *prog, int pid,
				const char *path, const struct tk_alloc_fn *fn, bool ret);
/* Destroy @st's links and close its uprobe_multi links. */
void tk_alloc_bpf__detach(struct at_state *st);
/* The backend's start. */
int tk_alloc_bpf__start(struct tk_alloc *a, char *why, size_t why_sz);

/* ---- reading (alloc_trace_read.c) ------------------------------------------------------ */

/* The ring buffer's callback; @ctx is the struct tk_alloc. */
int tk_alloc_bpf__handle_event(void *ctx, void *data, size_t size);
/* The backend's poll and drain. */
int tk_alloc_bpf__poll(struct tk_alloc *a, int timeout_ms);
int tk_alloc_bpf__drain(struct tk_alloc *a);

/* ---- the cost (alloc_trace_cost.c) ----------------------------------------------------- */

/* Functions of our own to probe: the first begins with a push, the second with a test. */
void tk_alloc__calib_push(void);
void tk_alloc__calib_step(void);

#endif /* __TK_ALLOC_TRACE_INT_H */
