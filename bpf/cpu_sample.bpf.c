// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CPU sampling: a perf_event program on every CPU's cpu-clock event takes the
 * kernel and user stacks with bpf_get_stack, stores each distinct stack once
 * under a 64-bit hash of its frames, and counts samples per (process, thread,
 * exec generation, kernel stack, user stack). Unlike bpf_get_stackid, whose
 * bucket index collides and silently drops the colliding (often the hottest)
 * stacks, a 64-bit hash of the whole stack does not collide in practice
 * (p ≈ n²/2⁶⁵: 1e-11 for 16k stacks), and a full map is counted, not hidden.
 *
 * The first sample of a (process, generation) and every exec and exit reach
 * user space through a ring buffer, so the process's mappings are captured
 * while it lives and names survive its exit.
 *
 * Counts and stacks are keyed by the epoch user space sets: it moves the
 * epoch on every drain interval and takes (and deletes) what the epochs
 * before the previous one hold, so a long capture needs maps for a few
 * intervals' samples, not for all of them.
 */
/*
 * No CO-RE: the program reads only its context (bpf_perf_event_data, pt_regs:
 * the x86-64 ABI, the same on every kernel) and the task pointer the helpers
 * return, so plain offsets from vmlinux.h are right everywhere and the object
 * loads where libbpf finds no kernel BTF.
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "cpu_sample.h"
#include "unwind.bpf.h"
#include "proc_end.bpf.h"

#define EFAULT 14

const volatile bool filter_pids = false;	/* only tgids in the pids map */
const volatile bool filter_cgroup = false;	/* only tasks under cgroup_map[0] */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
const volatile __u32 self_tgid = 0;		/* tracekit itself, never sampled */
/* off-CPU time (off_switch, loaded only when asked): offsets from the kernel's BTF */
const volatile __u64 off_cpu_min_ns = 0;	/* shorter waits: counted without stacks */
const volatile __u32 off_budget = 0;		/* stacks a CPU takes a window; 0: all */
const volatile __u32 task_state_off = 0;	/* __state (5.14+) or state */
const volatile __u32 task_pid_off = 0;		/* task_struct.pid (off_switch_btf) */
const volatile bool switch_has_state = false;	/* sched_switch passes prev_state (5.18+) */
/* off_seed (waits that span the capture): task_struct offsets from the kernel's BTF */
const volatile bool seed_key_tid = false;	/* offstart keyed by tid (off_switch_btf) */
const volatile bool seed_by_tids = false;	/* scope: the tids in seed_tids (a cgroup's) */
const volatile __u32 seed_task_regs = 0;	/* 1: bpf_task_pt_regs; 2: task->stack; 0: none */
const volatile __u32 seed_stack_off = 0;	/* task_struct.stack */
const volatile __u32 seed_thread_size = 0;	/* THREAD_SIZE */
const volatile __u32 seed_state_off = 0;	/* __state (5.14+) or state */
const volatile __u32 task_tgid_off = 0;
const volatile __u32 task_on_cpu_off = 0;
const volatile __u32 task_flags_off = 0;
const volatile __u32 task_mm_off = 0;
const volatile __u32 task_comm_off = 0;
const volatile __u32 task_arrival_off = 0;	/* sched_info.last_arrival; 0: none */
const volatile __u32 task_sum_exec_off = 0;	/* se.sum_exec_runtime */
const volatile __u32 task_prev_sum_off = 0;	/* se.prev_sum_exec_runtime */

/*
 * pids and procs take kernel memory as entries come where the kernel allows
 * it (6.1+); elsewhere tk_kfeat__fit_maps preallocates them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CPU_PIDS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* off_seed's scope under --cgroup: the cgroup's threads, listed by user space */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} seed_tids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct cpu_proc);
} procs SEC(".maps");

/*
 * Kernel and user stacks in two maps: a map that is not preallocated keeps one
 * spare element per CPU for inserts, so a sample that adds a new kernel stack
 * and a new user stack to one map would fail its second insert with -ENOMEM.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 32768);
	__type(key, struct cpu_stack_key);
	__type(value, struct cpu_stack);
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct cpu_stack_key);
	__type(value, struct cpu_stack);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, struct cpu_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_stack);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/*
 * Threads switched out, by their task_struct's address (what sched_switch
 * gives as prev and next: no read of the task to know who comes back): what
 * their wait is counted under, and since when.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct cpu_off_start);
} offstart SEC(".maps");

/*
 * How many of offstart's tasks hash to each slot: a switch-in whose slot is
 * 0 has nothing to look up, which is every switch-in of a thread whose
 * switch-out was not taken (thinning). Changed with atomics, only where an
 * entry is made or taken; read plainly (a switch-in follows its switch-out
 * through the scheduler's locks).
 */
#define OFF_SLOTS 16384
__u32 off_pending[OFF_SLOTS] = {};

static __always_inline __u32 off_slot(__u64 task)
{
	return (__u32)(task ^ (task >> 8) ^ (task >> 22)) & (OFF_SLOTS - 1);
}

/* Off-CPU time per (pid, tid, gen, stacks, epoch, state) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct cpu_key);
	__type(value, struct cpu_off_val);
} offcounts SEC(".maps");

__u64 counters[CPU_MAX_CPUS][CPU_CNT__COUNT] = {};
/* Written by user space (the mmap'ed .bss) at every drain interval */
__u32 epoch = 0;
/* Generations handed out, per CPU (see new_gen) */
__u32 gen_seq[CPU_MAX_CPUS] = {};

static __always_inline void count(enum cpu_counter c)
{
	__u32 cpu = bpf_get_smp_processor_id() & (CPU_MAX_CPUS - 1);

	__sync_fetch_and_add(&counters[cpu][c], 1);
}

/* Tell user space; false (and counted) when the ring buffer is full. */
static __always_inline bool emit_ev(__u32 type, __u32 pid, __u32 gen, __u32 prev_gen)
{
	struct cpu_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(CPU_CNT_RINGBUF_FULL);
		return false;
	}
	e->type = type;
	e->pid = pid;
	e->gen = gen;
	e->prev_gen = prev_gen;
	e->time = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return true;
}

static __always_inline bool emit(__u32 type, __u32 pid, __u32 gen)
{
	return emit_ev(type, pid, gen, 0);
}

/* FNV-1a over the frames, 64 bits; never CPU_NO_STACK. */
static __always_inline __u64 hash_stack(const struct cpu_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL ^ st->nr;
	__u32 i;

	for (i = 0; i < CPU_MAX_FRAMES; i++) {
		if (i >= st->nr)
			break;
		h ^= st->ips[i];
		h *= 0x100000001b3ULL;
	}
	return h == CPU_NO_STACK ? 1 : h;
}

/* Take one stack into the stacks map; its hash, or CPU_NO_STACK with *flags set. */
static __always_inline __u64 take_stack(void *ctx, const void *uregs, void *stacks,
					__u64 get_flags, __u32 lost_flag, __u32 trunc_flag,
					__u32 *flags, __u32 gen, __u32 ep)
{
	__u32 zero = 0;
	struct cpu_stack *st = bpf_map_lookup_elem(&scratch, &zero);
	struct cpu_stack_key k = { .epoch = ep };
	long n;

	if (!st)
		return CPU_NO_STACK;
	if (unw_enabled && (get_flags & BPF_F_USER_STACK)) {
		__u32 miss;

		/* @uregs: the sample's registers; NULL: the task's own user registers */
		n = unw_get_user_stack(uregs, uregs != NULL, 0, 0, st->ips, CPU_MAX_FRAMES, &miss);
		if (miss)
			emit(CPU_EV_UNWIND_MISS, bpf_get_current_pid_tgid() >> 32, gen);
	} else {
		n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), get_flags);
	}
	if (n < 0) {
		/* (a kernel thread's user stack is 0 frames, not an error) */
		count(CPU_CNT_STACK_ERRORS);
		*flags |= lost_flag;
		return CPU_NO_STACK;
	}
	st->nr = n / sizeof(__u64);
	if (st->nr == 0)
		return CPU_NO_STACK;
	if (st->nr >= CPU_MAX_FRAMES) {
		*flags |= trunc_flag;
		count(CPU_CNT_TRUNCATED);
	}
	st->pad = 0;
	k.hash = hash_stack(st);
	/* most samples repeat a known stack: look before taking the bucket lock */
	if (!bpf_map_lookup_elem(stacks, &k) && bpf_map_update_elem(stacks, &k, st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(stacks, &k)) {
		count(CPU_CNT_STACK_MAP_FULL);
		*flags |= lost_flag;
		return CPU_NO_STACK;
	}
	return k.hash;
}

/*
 * A generation no (pid, gen) has had: a procs entry leaves when its process
 * ends, and a later process with the same pid must not take up the old
 * one's counts and mappings under a generation counted again from 0. Each
 * CPU counts its own (no fetching atomics on 5.10); the low bits say which.
 * Never 0: that is the -p processes' first generation, set by user space, and
 * the generation of samples whose process found no room in procs.
 */
static __always_inline __u32 new_gen(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & (CPU_MAX_CPUS - 1);

	return ++gen_seq[cpu] * CPU_MAX_CPUS + cpu;
}

/*
 * The (pid, gen) of this sample; tells user space the first time it is seen.
 * A sample of the main thread (tid == tgid) of a pid whose main thread has
 * exited is a new process that reused the pid: a new generation, so it never
 * inherits the old process's mappings (the old one's other threads, still
 * running after their leader, keep theirs).
 */
static __always_inline __u32 proc_gen(__u32 tgid, __u32 tid)
{
	struct cpu_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	struct cpu_proc fresh = {};

	if (!p) {
		fresh.gen = new_gen();
		if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&procs, &tgid)) {
			count(CPU_CNT_PROC_MAP_FULL);
			return 0;
		}
		p = bpf_map_lookup_elem(&procs, &tgid);
		if (!p)
			return 0;
	}
	if (p->leader_exited && tid == tgid) {
		p->gen = new_gen();
		p->leader_exited = 0;
		p->announced = 0;
	}
	/* announced only once the ring buffer took it, so a full ring is retried */
	if (!p->announced && emit(CPU_EV_SAMPLED, tgid, p->gen))
		p->announced = 1;
	return p->gen;
}
SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct cpu_key key = {};
	__u64 one = 1, *val;

	if (tid == 0) {
		count(CPU_CNT_IDLE);
		return 0;
	}
	if (tgid == self_tgid || (filter_pids && !bpf_map_lookup_elem(&pids, &tgid)) ||
	    (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_map, 0) != 1)) {
		count(CPU_CNT_FILTERED);
		return 0;
	}
	count(CPU_CNT_SAMPLES);

	key.pid = tgid;
	key.tid = tid;
	key.gen = proc_gen(tgid, tid);
	/* read once: this sample's count and stacks go under one epoch */
	key.epoch = *(volatile __u32 *)&epoch;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (kernel_stacks)
		key.kstack = take_stack(ctx, &ctx->regs, &kstacks, 0, CPU_KSTACK_LOST,
					CPU_KSTACK_TRUNCATED, &key.flags, key.gen, key.epoch);
	if (user_stacks)
		key.ustack = take_stack(ctx, &ctx->regs, &ustacks, BPF_F_USER_STACK,
					CPU_USTACK_LOST, CPU_USTACK_TRUNCATED, &key.flags, key.gen,
					key.epoch);

	val = bpf_map_lookup_elem(&counts, &key);
	if (val) {
		__sync_fetch_and_add(val, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		/* another CPU inserted it first, or the map is full */
		val = bpf_map_lookup_elem(&counts, &key);
		if (val)
			__sync_fetch_and_add(val, 1);
		else
			count(CPU_CNT_COUNT_MAP_FULL);
	}
	return 0;
}

/* ---- process lifecycle: exec starts a generation, exit ends one -------------------- */

static __always_inline bool tracked(__u32 tgid)
{
	return tgid != self_tgid && (!filter_pids || bpf_map_lookup_elem(&pids, &tgid));
}

static __always_inline void next_gen(__u32 tgid)
{
	struct cpu_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	__u32 prev;

	/* a process never sampled has nothing to move on from */
	if (!p)
		return;
	prev = p->gen;
	p->gen = new_gen();
	p->announced = 0;
	p->leader_exited = 0;
	emit_ev(CPU_EV_EXEC, tgid, p->gen, prev);
}
/*
 * Both run in the context of the process concerned, so the ids come from
 * bpf_get_current_pid_tgid(): no task_struct read, no CO-RE relocation, and
 * so no kernel BTF to load at start-up (it costs ~20 ms). Following children
 * needs the child's tgid from task_struct: that lives in cpu_follow.bpf.c,
 * loaded only when asked.
 */
SEC("raw_tp/sched_process_exec")
int exec_raw(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tracked(tgid)) {
		next_gen(tgid);
		/* the new image's frames go by rbp until user space describes it */
		if (unw_enabled)
			bpf_map_delete_elem(&unw_procs, &tgid);
	}
	return 0;
}

SEC("raw_tp/sched_process_exit")
int exit_raw(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct cpu_proc *p;

	if (!tracked(tgid))
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	/*
	 * The main thread: its other threads may run on with the same mappings,
	 * so the generation stays; the next main-thread sample of this pid is a
	 * new process (see proc_gen).
	 */
	if (tid == tgid) {
		if (p)
			p->leader_exited = 1;
		emit(CPU_EV_EXIT, tgid, p ? p->gen : 0);
	} else if (filter_pids) {
		/* fork_tp follows a new thread's tid too (cpu_follow.bpf.c): it goes with it */
		bpf_map_delete_elem(&pids, &tid);
	}
	if (!group_dead())
		return 0;
	/*
	 * The process is over: the pid may name another process from now on,
	 * which must be neither filtered in as this one's child nor unwound
	 * with its rows. Its procs entry goes once user space has the event
	 * (cpu_sample.c): a sample of the rest of this exit would make it again.
	 */
	if (filter_pids)
		bpf_map_delete_elem(&pids, &tgid);
	if (unw_enabled)
		bpf_map_delete_elem(&unw_procs, &tgid);
	if (p)
		emit(CPU_EV_GONE, tgid, p->gen);
	return 0;
}
/* ---- off-CPU time: where threads wait ----------------------------------------------- */

/*
 * prev's state as it left: sched_switch's prev_state (5.18+), else read from
 * @prev (the task's address)
 */
static __always_inline __u32 prev_state(__u64 *ctx, __u64 prev)
{
	__u32 state = 0;

	if (switch_has_state)
		return (__u32)ctx[3];
	bpf_probe_read_kernel(&state, sizeof(state),
			      (const void *)(prev + (task_state_off & 0xffff)));
	return state;
}

/* How the switched-out task left, from sched_switch's preempt and its state. */
static __always_inline __u32 off_state(bool preempt, __u32 state)
{
	if (preempt || state == 0)
		return CPU_OFF_RUNNABLE;	/* preempted, or a yield: still runnable */
	if ((state & 0x0002) && !(state & 0x0400))	/* TASK_UNINTERRUPTIBLE, not TASK_IDLE */
		return CPU_OFF_UNINTERRUPTIBLE;
	if (state & 0x0401)				/* TASK_INTERRUPTIBLE, TASK_IDLE */
		return CPU_OFF_SLEEPING;
	return CPU_OFF_OTHER;
}

/*
 * Thinning: a CPU takes about off_budget stacks a window (OFF_WINDOW_NS).
 * Each window's weight w is the power of 2 that would have kept the window
 * before it within the budget (doubled during the window if its rate
 * doubles): one switch-out in w is taken and its wait counted w times, the
 * others cost only this count. Which one is taken does not depend on how
 * long it waits, so the weighed sums estimate the totals. The weight to give
 * this switch-out, or 0: not taken.
 */
#define OFF_WINDOW_NS 10000000ULL
#define OFF_WEIGHT_MAX (1u << 20)

struct cpu_off_rate off_rates[CPU_MAX_CPUS] __attribute__((aligned(64))) = {};

/*
 * The clock is read only at every 64th switch-out of a window, and at every
 * one while nothing is thinned (each is taken then, and costs far more): a
 * thinned switch-out costs these counts alone. A window so ends at the first
 * check past OFF_WINDOW_NS, and its count is scaled to OFF_WINDOW_NS.
 */
#define OFF_CHECK_MASK 63

static __always_inline __u32 off_weight(struct cpu_off_rate *r)
{
	__u64 now, len, n;
	__u32 w, i;

	/* sched_switch runs with interrupts off: this CPU's slot is its own, no atomics */
	r->switches++;
	if (!off_budget)
		return 1;
	r->n++;
	if (r->w <= 1 || !(r->n & OFF_CHECK_MASK)) {
		now = bpf_ktime_get_ns();
		len = now - r->start;
		if (len >= OFF_WINDOW_NS) {
			n = len < 2 * OFF_WINDOW_NS ? r->n : r->n * OFF_WINDOW_NS / len;
			for (w = 1, i = 0; i < 20 && n > (__u64)off_budget * w; i++)
				w <<= 1;
			r->w = w;
			r->start = now;
			r->n = 1;
		}
	}
	w = r->w ? r->w : 1;
	if (r->n > 2 * off_budget * w && w < OFF_WEIGHT_MAX)
		r->w = w <<= 1;
	if (w > 1 && (r->n & (w - 1))) {
		r->thinned++;
		return 0;
	}
	return w;
}

/*
 * The current task (@prev, its address) leaves the CPU: its stacks now, its
 * wait counted when it comes back, under @task in offstart (the program's key
 * for a task: see off_switch and off_switch_btf).
 */
static __always_inline void switch_out(__u64 *ctx, __u32 tgid, __u32 tid, __u64 task, __u64 prev)
{
	struct cpu_off_start v = {};
	bool preempt = ctx[0];
	__u32 state, w;

	w = off_weight(&off_rates[bpf_get_smp_processor_id() & (CPU_MAX_CPUS - 1)]);
	if (!w)
		return;
	/*
	 * TASK_DEAD: its last switch, no wait follows. Its state is read after
	 * the thinning (a thinned switch-out reads nothing of the task): a dead
	 * task's switch-out counts among those a taken one stands for, as one
	 * with no wait, so the weighed sums stay unbiased.
	 */
	state = preempt ? 0 : prev_state(ctx, prev);
	if (state & 0x0080)
		return;
	v.weight = w;
	v.key.pid = tgid;
	v.key.tid = tid;
	v.key.gen = proc_gen(tgid, tid);
	v.key.epoch = *(volatile __u32 *)&epoch;
	v.key.state = off_state(preempt, state);
	bpf_get_current_comm(v.key.comm, sizeof(v.key.comm));
	if (kernel_stacks)
		v.key.kstack = take_stack(ctx, NULL, &kstacks, 0, CPU_KSTACK_LOST,
					  CPU_KSTACK_TRUNCATED, &v.key.flags, v.key.gen,
					  v.key.epoch);
	if (user_stacks)
		v.key.ustack = take_stack(ctx, NULL, &ustacks, BPF_F_USER_STACK, CPU_USTACK_LOST,
					  CPU_USTACK_TRUNCATED, &v.key.flags, v.key.gen,
					  v.key.epoch);
	/*
	 * The wait starts once the stacks are taken: their cost (microseconds) is
	 * the tracer's, not the thread's, and a thinned switch-out, weighed many
	 * times, would carry it many times
	 */
	v.ts = bpf_ktime_get_ns();
	/* NOEXIST: a task has one wait at a time, and its slot counts it once */
	if (bpf_map_update_elem(&offstart, &task, &v, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&off_pending[off_slot(task)], 1);
	else if (!bpf_map_lookup_elem(&offstart, &task))
		count(CPU_CNT_OFF_START_FULL);
}

/* The task keyed @task comes back: the wait since its switch-out, under the key taken then. */
static __always_inline void switch_in(__u64 task)
{
	__u32 slot = off_slot(task);
	struct cpu_off_start *s;
	struct cpu_off_val one, *val;
	struct cpu_key key;
	__u64 ns, w, now;

	if (!off_pending[slot])
		return;
	s = bpf_map_lookup_elem(&offstart, &task);
	if (!s)
		return;
	now = bpf_ktime_get_ns();
	ns = now > s->ts ? now - s->ts : 0;
	w = s->weight ? s->weight : 1;
	key = s->key;
	if (bpf_map_delete_elem(&offstart, &task) == 0)
		__sync_fetch_and_add(&off_pending[slot], -1);
	if (ns < off_cpu_min_ns) {
		/* counted, not hidden: under the thread, without stacks */
		count(CPU_CNT_OFF_SHORT);
		key.kstack = CPU_NO_STACK;
		key.ustack = CPU_NO_STACK;
		key.flags = 0;
		key.state |= CPU_OFF_SHORT;
	}
	one.ns = ns * w;
	one.n = w;
	val = bpf_map_lookup_elem(&offcounts, &key);
	if (!val && bpf_map_update_elem(&offcounts, &key, &one, BPF_NOEXIST) == 0)
		return;
	if (!val)
		val = bpf_map_lookup_elem(&offcounts, &key);
	if (!val) {
		count(CPU_CNT_OFF_COUNT_FULL);
		return;
	}
	__sync_fetch_and_add(&val->ns, one.ns);
	__sync_fetch_and_add(&val->n, one.n);
}

/*
 * sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next
 * [, unsigned int prev_state]): the current task is prev. The scope filters
 * apply at switch-out; a thread comes back only if it was let out.
 */
static __always_inline bool off_scope(__u32 tgid, __u32 tid)
{
	return tid && tgid != self_tgid && (!filter_pids || bpf_map_lookup_elem(&pids, &tgid)) &&
	       (!filter_cgroup || bpf_current_task_under_cgroup(&cgroup_map, 0) == 1);
}

/*
 * tp_btf (5.5+; the kernel's BTF types the arguments): a task is keyed by
 * its tid, next's read straight from its task_struct (task_pid_off, from the
 * kernel's BTF; the verifier checks the access against that BTF). A tid names
 * one live task, and a switched-out task always runs again before it exits,
 * so its entry goes before the tid can be another task's.
 */
SEC("?tp_btf/sched_switch")
int off_switch_btf(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	const char *next = (const char *)ctx[2];

	if (off_scope(tgid, tid))
		switch_out(ctx, tgid, tid, tid, bpf_get_current_task());
	switch_in(*(const int *)(next + task_pid_off));
	return 0;
}

/* raw_tp, where tp_btf is refused: a task is keyed by its address (untyped, but free) */
SEC("?raw_tp/sched_switch")
int off_switch(__u64 *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;

	if (off_scope(tgid, tid))
		switch_out(ctx, tgid, tid, ctx[1], ctx[1]);
	switch_in(ctx[2]);
	return 0;
}

/* ---- waits that span the capture ----------------------------------------------------- */

/* off_seed's own scratch: sched_switch may preempt it on its CPU and use scratch */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_stack);
} seed_scratch SEC(".maps");

#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

static __always_inline __u64 task_u64(__u64 task, __u32 off)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (const void *)(task + off));
	return v;
}

static __always_inline __u32 task_u32(__u64 task, __u32 off)
{
	__u32 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (const void *)(task + off));
	return v;
}

/* task_struct.on_cpu: an int before 7.x, a u8 since; 0 or 1, so its first byte says (x86: LE) */
static __always_inline bool task_on_cpu(__u64 task)
{
	__u8 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (const void *)(task + task_on_cpu_off));
	return v;
}

/* Has @task run since (@arrival, @sum) were read: on a CPU, or run since? */
static __always_inline bool seed_moved(__u64 task, __u64 arrival, __u64 sum)
{
	return task_on_cpu(task) ||
	       (task_arrival_off && task_u64(task, task_arrival_off) != arrival) ||
	       task_u64(task, task_sum_exec_off) != sum;
}

/* The user registers of @t, a task in the kernel (its entry's pt_regs) */
static __always_inline bool seed_regs(struct task_struct *t, __u64 task, struct cpu_seed *r)
{
	__u64 regs = 0;

	if (seed_task_regs == 1) {
		regs = (__u64)bpf_task_pt_regs(t);
	} else if (seed_task_regs == 2) {
		__u64 stack = task_u64(task, seed_stack_off);

		if (stack)
			regs = stack + seed_thread_size - UNW_REGS_SIZE;
	}
	if (!regs || bpf_probe_read_kernel(&r->ip, 8, (const void *)(regs + 8 * UNW_REG_IP)) ||
	    bpf_probe_read_kernel(&r->sp, 8, (const void *)(regs + 8 * UNW_REG_SP)) ||
	    bpf_probe_read_kernel(&r->bp, 8, (const void *)(regs + 8 * UNW_REG_BP)))
		return false;
#if TK_ARCH_ARM64
	/* a thread blocked in a libc system call wrapper, a leaf: its caller is in LR only */
	if (bpf_probe_read_kernel(&r->lr, 8, (const void *)(regs + 8 * UNW_REG_LR)))
		return false;
#endif
	return true;
}

/*
 * Run once, by user space, right after sched_switch is attached: every
 * in-scope thread that is off the CPU then and has no offstart entry yet
 * (one that switched out since the attach has its own) gets one as if it
 * had switched out now, under the stack it is blocked in. Its switch-in
 * counts from now on; if it never runs, the end counts it until then. What
 * it needs of the task is read at offsets from the kernel's BTF, like the
 * rest of this object. The record each seed writes tells user space where
 * its user stack is (user space walks it: another process's memory is not
 * this program's to read before bpf_copy_from_user_task, 5.18).
 */
SEC("?iter/task")
int off_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct seq_file *seq = ctx->meta->seq;
	__u32 zero = 0, tgid, tid, state, slot;
	struct cpu_off_start v = {};
	struct cpu_seed r = {};
	struct cpu_stack *st;
	__u64 task, key, arrival, sum;
	long n;

	if (!t)
		return 0;
	/* its address as a number (a map key, a record field), not a pointer the verifier guards */
	if (bpf_probe_read_kernel(&task, sizeof(task), &ctx->task) || !task)
		return 0;
	tid = task_u32(task, task_pid_off);
	tgid = task_u32(task, task_tgid_off);
	if (!tid || tgid == self_tgid || (filter_pids && !bpf_map_lookup_elem(&pids, &tgid)) ||
	    (seed_by_tids && !bpf_map_lookup_elem(&seed_tids, &tid)))
		return 0;
	/* kernel threads have no user stack to wait in; exiting ones wait for nothing */
	if ((task_u32(task, task_flags_off) & (PF_KTHREAD | PF_EXITING)) ||
	    !task_u64(task, task_mm_off))
		return 0;
	arrival = task_arrival_off ? task_u64(task, task_arrival_off) : 0;
	sum = task_u64(task, task_sum_exec_off);
	if (task_on_cpu(task))
		return 0;
	state = task_u32(task, seed_state_off);
	if (state & 0x0080)	/* TASK_DEAD */
		return 0;
	key = seed_key_tid ? tid : task;
	v.weight = 1;
	v.key.pid = tgid;
	v.key.tid = tid;
	v.key.gen = proc_gen(tgid, tid);
	v.key.epoch = *(volatile __u32 *)&epoch;
	v.key.state = off_state(state == 0, state) | CPU_OFF_BEFORE;
	bpf_probe_read_kernel(v.key.comm, sizeof(v.key.comm), (const void *)(task + task_comm_off));
	if (kernel_stacks) {
		st = bpf_map_lookup_elem(&seed_scratch, &zero);
		if (!st)
			return 0;
		n = bpf_get_task_stack(t, st->ips, sizeof(st->ips), 0);
		if (n < 0) {
			count(CPU_CNT_OFF_SEED_STACK);
			v.key.flags |= CPU_KSTACK_LOST;
		} else if (n > 0) {
			struct cpu_stack_key k = { .epoch = v.key.epoch };

			st->nr = n / sizeof(__u64);
			st->pad = 0;
			if (st->nr >= CPU_MAX_FRAMES)
				v.key.flags |= CPU_KSTACK_TRUNCATED;
			k.hash = hash_stack(st);
			if (!bpf_map_lookup_elem(&kstacks, &k) &&
			    bpf_map_update_elem(&kstacks, &k, st, BPF_NOEXIST) &&
			    !bpf_map_lookup_elem(&kstacks, &k)) {
				count(CPU_CNT_STACK_MAP_FULL);
				v.key.flags |= CPU_KSTACK_LOST;
			} else {
				v.key.kstack = k.hash;
			}
		}
	}
	if (user_stacks && seed_regs(t, task, &r)) {
		r.flags |= CPU_SEED_REGS;
		v.key.ustack = CPU_SEED_USTACK(tid);
	}
	v.ts = bpf_ktime_get_ns();
	slot = off_slot(key);
	if (bpf_map_update_elem(&offstart, &key, &v, BPF_NOEXIST)) {
		struct cpu_off_start *e = bpf_map_lookup_elem(&offstart, &key);

		/* no room */
		if (!e) {
			count(CPU_CNT_OFF_START_FULL);
			return 0;
		}
		/* it switched out since the attach: its own entry is better */
		if (!(e->key.state & CPU_OFF_BEFORE) || e->key.tid != tid)
			return 0;
		/*
		 * This task's seed, made by a run whose record did not fit the
		 * seq buffer: the iterator runs the program again for it at the
		 * next read. The record again, the entry as it is.
		 */
		v.ts = e->ts;
		v.key.gen = e->key.gen;
		v.key.epoch = e->key.epoch;
		v.key.state = e->key.state;
		v.key.ustack = e->key.ustack;
		goto record;
	}
	__sync_fetch_and_add(&off_pending[slot], 1);
	/*
	 * It may have come back between the look above and the insert: its
	 * switch-in found nothing then, and this entry would count a wait it
	 * is not in. sched_switch runs before the switch-in's last_arrival and
	 * on_cpu are written, so one that saw the entry counted and took it.
	 */
	if (seed_moved(task, arrival, sum)) {
		struct cpu_off_start *e = bpf_map_lookup_elem(&offstart, &key);

		if (e && e->ts == v.ts && (e->key.state & CPU_OFF_BEFORE) &&
		    bpf_map_delete_elem(&offstart, &key) == 0)
			__sync_fetch_and_add(&off_pending[slot], -1);
		count(CPU_CNT_OFF_SEED_RACED);
		return 0;
	}
	count(CPU_CNT_OFF_SEEDED);
record:
	r.key = key;
	r.ts = v.ts;
	r.last_arrival = arrival;
	r.sum_exec = sum;
	r.prev_sum_exec = task_u64(task, task_prev_sum_off);
	r.ustack = v.key.ustack;
	r.pid = tgid;
	r.tid = tid;
	r.gen = v.key.gen;
	r.epoch = v.key.epoch;
	r.state = v.key.state;
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
