// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * NUMA page migrations (tracekit numa, the BPF backend).
 *
 * migrate:mm_migrate_pages ends every migrate_pages() call in the context of
 * the task that caused it: its counts are aggregated per (process, reason) and
 * per reason. Its argument list grew across kernels (6.1: 7 arguments; later
 * ones insert large_folio_split/nr_split before mode), so the programs are
 * raw_tp and user space passes the positions it read from the kernel's BTF in
 * .rodata: one object serves 6.1 to 6.18. The kernel's migrate_reason values
 * are mapped to the report's reasons by name, in user space, likewise.
 *
 * mm_migrate_pages_start → mm_migrate_pages on one thread times a call; the
 * misplaced ones (NUMA balancing) go into a log2 histogram. The
 * sched_{move,swap,stick}_numa tracepoints count task placement decisions;
 * sched_skip_vma_numa (6.7+) counts, by reason, the VMAs the NUMA balancing
 * scan skipped, for the process whose task ran the scan.
 * The misplaced-page function (migrate_misplaced_folio, or _page before
 * 6.7), where fentry or kprobes are allowed, counts attempts and, through the
 * migrate_pages() call it makes, successes and (source, destination) nodes.
 * Where the per-folio migration function (folio_migrate_flags and the like)
 * can be probed, it gives those nodes for every migrated folio, whatever the
 * reason: user space then reads its pairs instead.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "numa_trace.h"
#include "unwind.bpf.h"

const volatile bool filter_pids = false;	/* only tgids in the pids map */
const volatile bool filter_cgroup = false;	/* only tasks under cgroup_map[0] */
const volatile bool want_stacks = false;	/* --stacks */
/* Argument positions, from the kernel's BTF (user/numa/numa_btf.c); NT_NO_ARG: absent */
const volatile __u32 mig_arg[NT_LARGE_SPLIT + 1] = {};
const volatile __u32 mig_reason_arg = 0;
const volatile __u32 start_reason_arg = 0;
const volatile __u32 sched_arg[NT_SCHED__COUNT][NT_SA__COUNT] = {};
const volatile __u32 misplaced_node_arg = 0;
const volatile __u32 skip_reason_arg = 2;	/* sched_skip_vma_numa's enum numa_vmaskip_reason */
/* The per-folio migration function: its folio parameters, its return value (NT_NO_ARG: void) */
const volatile __u32 folio_dst_arg = 0;
const volatile __u32 folio_src_arg = 1;
const volatile __u32 folio_ret_arg = NT_NO_ARG;
/* Node of a page: (page->flags >> nodes_pgshift) & nodes_mask; nodes_mask 0: unknown */
const volatile __u32 nodes_pgshift = 0;
const volatile __u64 nodes_mask = 0;
/* Kernel migrate_reason value → report reason index */
const volatile __u8 reason_map[NT_MAX_KREASONS] = {};
const volatile __u32 unknown_reason = NT_NR_REASONS - 1;
const volatile __u32 misplaced_reason = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nt_reason_key);
	__type(value, struct nt_reason_val);
} reasons SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct nt_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct nt_pair_key);
	__type(value, __u64);
} pairs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nt_folio_pair_key);
	__type(value, __u64);
} folio_pairs SEC(".maps");

/* Per thread: when its migrate_pages() started (ns), for the latency */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} starts SEC(".maps");

/* Per thread inside the misplaced-page function: source, destination, pages moved */
struct misplaced_call {
	__s32 src;
	__s32 dst;
	__u64 pages;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct misplaced_call);
} misplaced_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);			/* set by user space with --stacks */
	__type(key, __u64);
	__type(value, struct nt_stack);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);			/* set by user space with --stacks */
	__type(key, struct nt_stack_key);
	__type(value, __u64);
} stack_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_stack);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

__u64 counters[NT_MAX_CPUS][NT_CNT__COUNT] = {};
struct nt_counts totals[NT_MAX_CPUS][NT_NR_REASONS] = {};
__u64 sched_total[NT_MAX_CPUS][NT_SCHED__COUNT] = {};
struct nt_lat lat[NT_MAX_CPUS] = {};
__u64 skip_total[NT_MAX_CPUS][NT_MAX_SKIP] = {};	/* by kernel reason value */

static __always_inline __u32 cpu_slot(void)
{
	return bpf_get_smp_processor_id() & (NT_MAX_CPUS - 1);
}

static __always_inline void count(enum nt_counter c)
{
	__sync_fetch_and_add(&counters[cpu_slot()][c], 1);
}

/*
 * One load of argument @n from the context, the offset in the instruction: the
 * verifier refuses a context pointer that was moved, and clang otherwise
 * merges the loads of the cases below into one through a moved pointer.
 */
#define CTX_ARG(ctx, n)                                                                   \
	({                                                                                \
		__u64 __v;                                                                \
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(__v) : "r"(ctx), "i"((n) * 8)); \
		__v;                                                                      \
	})

/*
 * Argument @i of the tracepoint or function. The index comes from .rodata,
 * which the verifier knows after load: only the taken case is checked, and a
 * tracing program never reads an argument its target does not have.
 */
static __always_inline __u64 arg(__u64 *ctx, __u32 i)
{
	switch (i) {
	case 0: return CTX_ARG(ctx, 0);
	case 1: return CTX_ARG(ctx, 1);
	case 2: return CTX_ARG(ctx, 2);
	case 3: return CTX_ARG(ctx, 3);
	case 4: return CTX_ARG(ctx, 4);
	case 5: return CTX_ARG(ctx, 5);
	case 6: return CTX_ARG(ctx, 6);
	case 7: return CTX_ARG(ctx, 7);
	case 8: return CTX_ARG(ctx, 8);
	case 9: return CTX_ARG(ctx, 9);
	default: return 0;
	}
}

static __always_inline bool pid_wanted(__u32 tgid)
{
	return !filter_pids || bpf_map_lookup_elem(&pids, &tgid);
}

static __always_inline bool current_wanted(__u32 tgid)
{
	return pid_wanted(tgid) &&
	       (!filter_cgroup || bpf_current_task_under_cgroup(&cgroup_map, 0) == 1);
}

static __always_inline __u32 map_reason(__u64 kval)
{
	if (kval >= NT_MAX_KREASONS) {
		count(NT_CNT_UNKNOWN_REASON);
		return unknown_reason;
	}
	return reason_map[kval & (NT_MAX_KREASONS - 1)];
}

/* The process entry of @tgid; a new one tells user space (its maps, for stacks). */
static __always_inline struct nt_proc *get_proc(__u32 tgid, struct task_struct *task)
{
	struct nt_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	struct nt_proc fresh = {};
	struct nt_event *e;

	if (p)
		return p;
	if (task)
		BPF_CORE_READ_STR_INTO(&fresh.comm, task, comm);
	else
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST)) {
		p = bpf_map_lookup_elem(&procs, &tgid);
		if (!p)
			count(NT_CNT_PROC_MAP_FULL);
		return p;	/* another CPU added it and told user space */
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->type = NT_EV_PROC;
		e->pid = tgid;
		__builtin_memcpy(e->comm, fresh.comm, sizeof(e->comm));
		bpf_ringbuf_submit(e, 0);
	} else {
		count(NT_CNT_RINGBUF_FULL);
	}
	return bpf_map_lookup_elem(&procs, &tgid);
}

/* FNV-1a over the frames, 64 bits; never NT_NO_STACK. */
static __always_inline __u64 hash_stack(const struct nt_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL ^ st->nr;
	__u32 i;

	for (i = 0; i < NT_MAX_FRAMES; i++) {
		if (i >= st->nr)
			break;
		h ^= st->ips[i];
		h *= 0x100000001b3ULL;
	}
	return h == NT_NO_STACK ? 1 : h;
}

/* An address of @tgid in no mapping the unwinder knows: user space captures it again. */
static __always_inline void emit_unwind_miss(__u32 tgid)
{
	struct nt_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(NT_CNT_RINGBUF_FULL);
		return;
	}
	e->type = NT_EV_UNWIND_MISS;
	e->pid = tgid;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

/* Pages succeeded by (process, user stack), the stack stored once under its hash. */
static __always_inline void count_stack(void *ctx, __u32 tgid, __u64 pages)
{
	struct nt_stack_key key = { .tgid = tgid };
	__u32 zero = 0;
	struct nt_stack *st = bpf_map_lookup_elem(&scratch, &zero);
	__u64 *val;
	long n;

	if (!st)
		return;
	if (unw_enabled) {
		__u32 miss;

		/* in the kernel: the migrating task's own user registers */
		n = unw_get_user_stack(NULL, false, 0, 0, st->ips, NT_MAX_FRAMES, &miss);
		if (miss)
			emit_unwind_miss(tgid);
	} else {
		n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK);
	}
	if (n < 0) {
		count(NT_CNT_STACK_ERRORS);
		key.flags |= NT_USTACK_LOST;
	} else {
		st->nr = n / sizeof(__u64);
		st->pad = 0;
		if (st->nr >= NT_MAX_FRAMES) {
			key.flags |= NT_USTACK_TRUNCATED;
			count(NT_CNT_TRUNCATED);
		}
		if (st->nr) {
			key.ustack = hash_stack(st);
			if (!bpf_map_lookup_elem(&ustacks, &key.ustack) &&
			    bpf_map_update_elem(&ustacks, &key.ustack, st, BPF_NOEXIST) &&
			    !bpf_map_lookup_elem(&ustacks, &key.ustack)) {
				count(NT_CNT_STACK_MAP_FULL);
				key.ustack = NT_NO_STACK;
				key.flags |= NT_USTACK_LOST;
			}
		}
	}
	val = bpf_map_lookup_elem(&stack_pages, &key);
	if (val) {
		__sync_fetch_and_add(val, pages);
		return;
	}
	if (bpf_map_update_elem(&stack_pages, &key, &pages, BPF_NOEXIST)) {
		val = bpf_map_lookup_elem(&stack_pages, &key);
		if (val)
			__sync_fetch_and_add(val, pages);
		else
			count(NT_CNT_STACK_MAP_FULL);
	}
}

static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r < NT_LAT_BUCKETS ? r : NT_LAT_BUCKETS - 1;
}

/* ---- migrate:mm_migrate_pages_start, migrate:mm_migrate_pages --------------------- */

SEC("?raw_tp/mm_migrate_pages_start")
int migrate_start(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)id;

	if (!current_wanted(id >> 32))
		return 0;
	bpf_map_update_elem(&starts, &tid, &now, BPF_ANY);
	return 0;
}

static __always_inline void time_call(__u32 tid, __u32 reason)
{
	__u64 *start = bpf_map_lookup_elem(&starts, &tid), ns;
	struct nt_lat *l;

	if (!start) {
		count(NT_CNT_UNPAIRED);
		return;
	}
	ns = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&starts, &tid);
	if (reason != misplaced_reason)
		return;
	l = &lat[cpu_slot()];
	__sync_fetch_and_add(&l->buckets[log2_bucket(ns)], 1);
	__sync_fetch_and_add(&l->count, 1);
	__sync_fetch_and_add(&l->sum_ns, ns);
	if (ns > l->max_ns)
		l->max_ns = ns;	/* per CPU: only an interrupting program could race */
}

/* a new (process, reason) entry's first value */
struct nt_reason_val reason_zero = {};

SEC("?raw_tp/mm_migrate_pages")
int migrate_end(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, i, reason;
	struct nt_reason_key key = { .tgid = tgid };
	struct nt_reason_val *v;
	struct misplaced_call *mc;
	struct nt_counts c = {};
	struct nt_counts *t;
	struct nt_proc *p;

	if (!current_wanted(tgid))
		return 0;
	for (i = 0; i < NT_LARGE_SPLIT + 1; i++)
		if (mig_arg[i] != NT_NO_ARG)
			c.c[i] = arg(ctx, mig_arg[i]);
	c.c[NT_CALLS] = 1;
	reason = map_reason(arg(ctx, mig_reason_arg));
	if (reason >= NT_NR_REASONS)
		reason = NT_NR_REASONS - 1;
	key.reason = reason;

	time_call(tid, reason);
	p = get_proc(tgid, NULL);
	if (p)	/* the latest name: a child migrates before its exec, too */
		bpf_get_current_comm(p->comm, sizeof(p->comm));

	t = &totals[cpu_slot()][reason];
	for (i = 0; i < NT_COUNT__NR; i++)
		__sync_fetch_and_add(&t->c[i], c.c[i]);

	v = bpf_map_lookup_elem(&reasons, &key);
	if (!v) {
		/* from a zeroed global, not the stack: with the unwinder under count_stack,
		 * migrate_end, unw_step and unw_row_index share 512 bytes of stack */
		bpf_map_update_elem(&reasons, &key, &reason_zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&reasons, &key);
		if (v && !v->comm[0])
			bpf_get_current_comm(v->comm, sizeof(v->comm));
	}
	if (v) {
		for (i = 0; i < NT_COUNT__NR; i++)
			__sync_fetch_and_add(&v->counts.c[i], c.c[i]);
	} else {
		count(NT_CNT_REASON_MAP_FULL);
	}

	/* inside the misplaced-page function: what its migrate_pages() moved */
	if (reason == misplaced_reason) {
		mc = bpf_map_lookup_elem(&misplaced_calls, &tid);
		if (mc)
			mc->pages += c.c[NT_SUCCEEDED];
	}
	if (want_stacks && c.c[NT_SUCCEEDED])
		count_stack(ctx, tgid, c.c[NT_SUCCEEDED]);
	return 0;
}

/* ---- sched:sched_{move,swap,stick}_numa ---------------------------------------------- */

static __always_inline int sched_event(__u64 *ctx, enum nt_sched kind)
{
	struct task_struct *task = (struct task_struct *)arg(ctx, sched_arg[kind][NT_SA_TASK]);
	struct nt_proc *p;
	__u32 tgid;

	count(NT_CNT_SCHED);
	tgid = BPF_CORE_READ(task, tgid);
	if (!pid_wanted(tgid) ||
	    (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_map, 0) != 1))
		return 0;
	__sync_fetch_and_add(&sched_total[cpu_slot()][kind], 1);
	p = get_proc(tgid, task);
	if (p)
		__sync_fetch_and_add(&p->sched[kind], 1);
	return 0;
}

SEC("?raw_tp/sched_move_numa")
int sched_move(__u64 *ctx)
{
	return sched_event(ctx, NT_SCHED_MOVE);
}

SEC("?raw_tp/sched_swap_numa")
int sched_swap(__u64 *ctx)
{
	return sched_event(ctx, NT_SCHED_SWAP);
}

SEC("?raw_tp/sched_stick_numa")
int sched_stick(__u64 *ctx)
{
	return sched_event(ctx, NT_SCHED_STICK);
}

/* ---- sched:sched_skip_vma_numa (6.7+) ------------------------------------------------- */

/* task_numa_work() runs as task work of the task being scanned: current is it */
SEC("?raw_tp/sched_skip_vma_numa")
int skip_vma(__u64 *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 reason = (__u32)arg(ctx, skip_reason_arg);
	struct nt_proc *p;

	if (!current_wanted(tgid))
		return 0;
	if (reason >= NT_MAX_SKIP) {
		count(NT_CNT_SKIP_UNKNOWN);
		return 0;
	}
	__sync_fetch_and_add(&skip_total[cpu_slot()][reason], 1);
	p = get_proc(tgid, NULL);
	if (p)
		__sync_fetch_and_add(&p->skip_vma[reason & (NT_MAX_SKIP - 1)], 1);
	return 0;
}

/* ---- nodes and sizes of pages and folios ----------------------------------------------- */

/*
 * The flags of a page or folio: the first word of struct page and struct folio
 * on every kernel (unsigned long, or 6.18's memdesc_flags_t), read by offset
 * so neither type needs to match. 0 when unreadable.
 */
static __always_inline __u64 page_flags(const void *page)
{
	__u64 flags = 0;

	if (bpf_probe_read_kernel(&flags, sizeof(flags), page))
		return 0;
	return flags;
}

/* The node in @flags (page_to_nid), or -1 when NODES_PGSHIFT is unknown. */
static __always_inline __s32 flags_nid(__u64 flags)
{
	return nodes_mask ? (flags >> (nodes_pgshift & 63)) & nodes_mask : -1;
}

/* Where folio_nr_pages() reads a large folio's size (renames: 6.1 to 6.18) */
struct folio___nr_pages {		/* _folio_nr_pages renamed _nr_pages (6.15) */
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

struct folio___folio_nr_pages {		/* 64-bit kernels, 5.19 to 6.14 */
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

struct folio___flags_1 {		/* the order in the low byte (6.6+) */
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

struct folio___folio_order {		/* the order by itself (before 6.6) */
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

struct page___compound_order {		/* a head page's first tail page (before folios) */
	unsigned char compound_order;
} __attribute__((preserve_access_index));

/* folio_nr_pages(): 1 unless PG_head, then the size its second page keeps. */
static __always_inline __u64 folio_pages(const void *folio, __u64 flags)
{
	unsigned long flags_1 = 0;
	unsigned char order = 0;
	unsigned int nr = 0;

	if (!bpf_core_enum_value_exists(enum pageflags, PG_head) ||
	    !(flags & (1ULL << (bpf_core_enum_value(enum pageflags, PG_head) & 63))))
		return 1;
	if (bpf_core_field_exists(struct folio___nr_pages, _nr_pages)) {
		BPF_CORE_READ_INTO(&nr, (struct folio___nr_pages *)folio, _nr_pages);
	} else if (bpf_core_field_exists(struct folio___folio_nr_pages, _folio_nr_pages)) {
		BPF_CORE_READ_INTO(&nr, (struct folio___folio_nr_pages *)folio, _folio_nr_pages);
	} else if (bpf_core_field_exists(struct folio___flags_1, _flags_1)) {
		BPF_CORE_READ_INTO(&flags_1, (struct folio___flags_1 *)folio, _flags_1);
		nr = 1U << (flags_1 & 31);
	} else if (bpf_core_field_exists(struct folio___folio_order, _folio_order)) {
		BPF_CORE_READ_INTO(&order, (struct folio___folio_order *)folio, _folio_order);
		nr = 1U << (order & 31);
	} else if (bpf_core_field_exists(struct page___compound_order, compound_order)) {
		/* 5.10: migrate_page_states() of a head page; the order is in page[1] */
		BPF_CORE_READ_INTO(&order, (struct page___compound_order *)(folio +
			bpf_core_type_size(struct page)), compound_order);
		nr = 1U << (order & 31);
	}
	return nr ? nr : 1;
}

/* ---- the misplaced-page function: fentry/fexit, or kprobe/kretprobe -------------------- */

static __always_inline void misplaced_enter(void *page, __u64 node)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct misplaced_call mc = { .src = -1, .dst = (__s32)node };

	if (!current_wanted(id >> 32))
		return;
	if (nodes_mask)
		mc.src = flags_nid(page_flags(page));
	bpf_map_update_elem(&misplaced_calls, &tid, &mc, BPF_ANY);
}

/*
 * Add @pages to @map's entry @key (a node pair), made when new. Two CPUs may
 * make the same new pair at once: the second one's BPF_NOEXIST insert fails
 * with -EEXIST, and it adds into the entry the first one made. A map with
 * no room for it is counted in @full.
 */
static __always_inline void pair_add(void *map, const void *key, __u64 pages,
				     enum nt_counter full)
{
	__u64 *val = bpf_map_lookup_elem(map, key);

	if (!val && !bpf_map_update_elem(map, key, &pages, BPF_NOEXIST))
		return;
	if (!val)
		val = bpf_map_lookup_elem(map, key);
	if (val)
		__sync_fetch_and_add(val, pages);
	else
		count(full);
}

static __always_inline void misplaced_exit(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct misplaced_call *mc = bpf_map_lookup_elem(&misplaced_calls, &tid);
	struct nt_pair_key key;
	struct nt_proc *p;
	__u64 pages;

	if (!mc)
		return;
	key.src = mc->src;
	key.dst = mc->dst;
	pages = mc->pages;
	bpf_map_delete_elem(&misplaced_calls, &tid);
	p = get_proc(tgid, NULL);
	if (p) {
		__sync_fetch_and_add(&p->misplaced, 1);
		if (pages)
			__sync_fetch_and_add(&p->misplaced_ok, 1);
	}
	if (pages)
		pair_add(&pairs, &key, pages, NT_CNT_MISPLACED_PAIR_FULL);
}

/*
 * Tests only (never loaded otherwise): misplaced_exit's pair_add on the pairs
 * map, run with BPF_PROG_TEST_RUN from several threads at once. Adds 1 to
 * the pairs (ctx[0], 0) ... (ctx[0], ctx[1] - 1), at most 256.
 */
SEC("?raw_tp")
int pair_add_test(__u64 *ctx)
{
	struct nt_pair_key key = { .src = (__s32)ctx[0] };
	__u32 n = (__u32)ctx[1], i;

	for (i = 0; i < 256; i++) {
		if (i >= n)
			break;
		key.dst = i;
		pair_add(&pairs, &key, 1, NT_CNT_MISPLACED_PAIR_FULL);
	}
	return 0;
}

/* attach target set by user space: migrate_misplaced_folio or migrate_misplaced_page */
SEC("?fentry/migrate_misplaced_folio")
int misplaced_fentry(__u64 *ctx)
{
	misplaced_enter((void *)CTX_ARG(ctx, 0), arg(ctx, misplaced_node_arg));
	return 0;
}

SEC("?fexit/migrate_misplaced_folio")
int misplaced_fexit(__u64 *ctx)
{
	misplaced_exit();
	return 0;
}

static __always_inline __u64 kprobe_arg(struct pt_regs *regs, __u32 i)
{
	switch (i) {
	case 0: return PT_REGS_PARM1_CORE(regs);
	case 1: return PT_REGS_PARM2_CORE(regs);
	case 2: return PT_REGS_PARM3_CORE(regs);
	case 3: return PT_REGS_PARM4_CORE(regs);
	case 4: return PT_REGS_PARM5_CORE(regs);
	default: return 0;
	}
}

SEC("?kprobe")
int misplaced_kprobe(struct pt_regs *regs)
{
	misplaced_enter((void *)PT_REGS_PARM1_CORE(regs), kprobe_arg(regs, misplaced_node_arg));
	return 0;
}

SEC("?kretprobe")
int misplaced_kretprobe(struct pt_regs *regs)
{
	misplaced_exit();
	return 0;
}

/* ---- the per-folio migration function: fexit, or kprobe ------------------------------- */

/* One folio moved from @src to @dst (their nodes from their flags). */
static __always_inline void folio_moved(const void *dst, const void *src)
{
	__u64 sflags = page_flags(src);
	struct nt_folio_pair_key key = { .tgid = bpf_get_current_pid_tgid() >> 32 };

	if (!current_wanted(key.tgid))
		return;
	key.src = flags_nid(sflags);
	key.dst = flags_nid(page_flags(dst));
	pair_add(&folio_pairs, &key, folio_pages(src, sflags), NT_CNT_PAIR_MAP_FULL);
}

/* attach target set by user space: folio_migrate_flags or another (user/numa/numa_btf.c) */
SEC("?fexit/folio_migrate_flags")
int folio_fexit(__u64 *ctx)
{
	/* an int function returns 0 (MIGRATEPAGE_SUCCESS) for a folio it moved */
	if (folio_ret_arg != NT_NO_ARG && (int)arg(ctx, folio_ret_arg) != 0)
		return 0;
	folio_moved((void *)arg(ctx, folio_dst_arg), (void *)arg(ctx, folio_src_arg));
	return 0;
}

SEC("?kprobe")
int folio_kprobe(struct pt_regs *regs)
{
	folio_moved((void *)kprobe_arg(regs, folio_dst_arg),
		    (void *)kprobe_arg(regs, folio_src_arg));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
