/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records and keys shared by bpf/numa_trace.bpf.c and user/numa/numa_trace*.c. */
#ifndef __NUMA_TRACE_H
#define __NUMA_TRACE_H

#define NT_MAX_CPUS 256			/* .bss slots, index cpu & (NT_MAX_CPUS - 1) */
#define NT_MAX_KREASONS 32		/* kernel enum migrate_reason values mapped */
#define NT_NR_REASONS 11		/* report reasons (TK_MR__COUNT; checked in user space) */
#define NT_LAT_BUCKETS 40		/* log2 ns; TK_NUMA_LAT_BUCKETS */
#define NT_MAX_FRAMES 127
#define NT_MAX_SKIP 16			/* enum numa_vmaskip_reason values; TK_NUMA_MAX_SKIP */
#define NT_NO_ARG 0xff			/* a tracepoint argument this kernel does not have */
#define NT_NO_STACK 0

/* mm_migrate_pages arguments, in the order of mig_arg[] and struct nt_counts.c[] */
enum nt_mig_arg {
	NT_SUCCEEDED = 0,
	NT_FAILED,
	NT_THP_SUCCEEDED,
	NT_THP_FAILED,
	NT_THP_SPLIT,
	NT_LARGE_SPLIT,			/* large_folio_split or nr_split, where there */
	NT_CALLS,			/* not an argument: mm_migrate_pages events */
	NT_COUNT__NR,
};

struct nt_counts {
	__u64 c[NT_COUNT__NR];
};

/* Per (process, reason): what migrate_pages() calls it caused did. */
struct nt_reason_key {
	__u32 tgid;
	__u32 reason;			/* report reason index */
};

struct nt_reason_val {
	struct nt_counts counts;
	char comm[16];
};

enum nt_sched {
	NT_SCHED_MOVE = 0,
	NT_SCHED_SWAP,
	NT_SCHED_STICK,
	NT_SCHED__COUNT,
};

/* Arguments of the sched_*_numa tracepoints, per kind: task, src_cpu, dst_cpu. */
enum nt_sched_arg {
	NT_SA_TASK = 0,
	NT_SA_SRC_CPU,
	NT_SA_DST_CPU,
	NT_SA__COUNT,
};

struct nt_proc {
	char comm[16];
	__u64 sched[NT_SCHED__COUNT];
	__u64 misplaced;		/* misplaced-page function calls */
	__u64 misplaced_ok;		/* ... whose migrate_pages() moved pages */
	__u64 skip_vma[NT_MAX_SKIP];	/* sched_skip_vma_numa by kernel reason value */
};

/* Pages the misplaced-page function moved, by (source node, destination node). */
struct nt_pair_key {
	__s32 src;			/* -1: unknown (NODES_PGSHIFT unknown) */
	__s32 dst;
};

/* Pages of migrated folios by (process that migrated them, source node, destination node). */
struct nt_folio_pair_key {
	__u32 tgid;
	__s32 src;
	__s32 dst;
};

struct nt_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[NT_MAX_FRAMES];	/* leaf first */
};

enum nt_stack_flags {
	NT_USTACK_TRUNCATED = 1 << 0,
	NT_USTACK_LOST = 1 << 1,
};

struct nt_stack_key {
	__u32 tgid;
	__u32 flags;			/* enum nt_stack_flags */
	__u64 ustack;			/* hash into the ustacks map, or NT_NO_STACK */
};

/* Latency of migrate_pages() calls for misplaced pages (start → end), per CPU. */
struct nt_lat {
	__u64 buckets[NT_LAT_BUCKETS];
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
};

enum nt_event_type {
	NT_EV_PROC = 1,			/* first event of a process: capture its maps now */
	NT_EV_UNWIND_MISS,		/* an address in no mapping the unwinder knows: again */
};

struct nt_event {
	__u32 type;
	__u32 pid;
	char comm[16];
};

enum nt_counter {
	NT_CNT_RINGBUF_FULL = 0,
	NT_CNT_REASON_MAP_FULL,		/* a (process, reason) entry could not be added */
	NT_CNT_PROC_MAP_FULL,
	NT_CNT_PAIR_MAP_FULL,
	NT_CNT_STACK_MAP_FULL,
	NT_CNT_STACK_ERRORS,
	NT_CNT_TRUNCATED,
	NT_CNT_UNPAIRED,		/* mm_migrate_pages without its _start on the thread */
	NT_CNT_UNKNOWN_REASON,		/* a reason value past the table */
	NT_CNT_SCHED,			/* sched_*_numa events, before filtering */
	NT_CNT_SKIP_UNKNOWN,		/* sched_skip_vma_numa reason past NT_MAX_SKIP */
	NT_CNT_MISPLACED_PAIR_FULL,	/* a misplaced-page migration's node pair: no room */
	NT_CNT__COUNT,
};

#endif /* __NUMA_TRACE_H */
