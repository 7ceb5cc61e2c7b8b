// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Allocation tracing (tracekit alloc, the BPF backend).
 *
 * Sampled: uprobes on the allocator's functions run a byte-weighted sampler
 * (a countdown of bytes per CPU, intervals drawn from a table of exponential
 * quantiles that user space fills with mean sample_bytes, as jemalloc's prof
 * sampling does). Only a sampled call needs its result: with uprobe sessions
 * (Linux 6.13+) the entry returns 0 for it alone and its return runs; other
 * calls cost one trap. Without sessions a uretprobe runs on every call.
 * Full: every call is recorded. Sampled objects are remembered by (tgid, ptr)
 * so that their free, and only theirs, reaches user space.
 *
 * Markers: libtkalloc.so samples in-process and calls two marker functions
 * for sampled allocations and their frees; uprobes sit on those only.
 *
 * Growth: page faults (the raw tracepoint page_fault_user, else the software
 * perf event page-faults), brk and mmap of the target processes, counted per
 * stack in kernel maps (no allocator hook at all).
 */
/*
 * Exec and exit: every record carries its process's exec generation (procs),
 * which an exec moves on, so user space names stacks from the image that took
 * them and drops what the old image held; a process's last exit ends its
 * generation the same way, and its state here goes.
 */
/*
 * No CO-RE: the programs read pt_regs (the architecture's ABI: bpf/arch.bpf.h,
 * bpf_tracing.h's PT_REGS_*) and, for brk and for a process's end, offsets user
 * space found in the kernel's BTF (0: brk is not followed, exits are not seen),
 * so the object loads where libbpf finds no kernel BTF.
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "alloc_trace.h"
#include "unwind.bpf.h"
#include "proc_end.bpf.h"

#define MAP_PRIVATE 0x02
#define MAP_ANONYMOUS 0x20
#define PROT_WRITE 0x2
#define EEXIST 17

const volatile bool sample_all = false;		/* full mode */
const volatile bool track_live = true;		/* free only what BPF remembers */
const volatile __u64 page_size = 4096;
const volatile __u64 wake_bytes = 0;		/* wake the reader past this much; 0: always */
const volatile __u64 intervals[AT_RAND_ENTRIES] = {};
const volatile __u32 task_mm_off = 0;		/* offsetof(struct task_struct, mm) */
const volatile __u32 mm_brk_off = 0;		/* offsetof(struct mm_struct, brk) */

/* Written by user space once the allocator is known (possibly after load) */
struct at_range ranges[AT_MAX_RANGES] = {};
__u32 nr_ranges = 0;
__s64 countdown[AT_MAX_CPUS] = {};
__u64 counters[AT_MAX_CPUS][AT_CNT__COUNT] = {};
/* Generations handed out, per CPU (see new_gen) */
__u32 gen_seq[AT_MAX_CPUS] = {};

/*
 * Uprobe sessions need the kfunc bpf_session_is_return(): bool (void) up to
 * 6.18, bool (void *ctx) since. A kfunc makes libbpf need the kernel's BTF
 * and, declared otherwise than the kernel does, fails the whole object. So
 * the build makes this object three times: without sessions (this file), with
 * the (void) kfunc (alloc_trace_sess.bpf.c) and with the (void *ctx) one
 * (alloc_trace_kctx.bpf.c); the loader takes the one the running kernel's
 * BTF calls for.
 */
#if defined(AT_SESSION_KFUNC_CTX)
extern bool bpf_session_is_return(void *ctx) __ksym __weak;
#define session_is_return(ctx) bpf_session_is_return(ctx)
#elif defined(AT_SESSION_KFUNC_VOID)
extern bool bpf_session_is_return(void) __ksym __weak;
#define session_is_return(ctx) bpf_session_is_return()
#endif

/*
 * Kernels without bpf_get_attach_cookie (before 5.15): the cookie of the
 * function behind slot program alloc_enter_sN, written by user space.
 */
__u64 slot_cookies[AT_MAX_SLOTS] = {};

/* An object: after an exec the heap is new, and an address the new image reuses is not ours */
struct live_key {
	__u32 pid;
	__u32 gen;
	__u64 ptr;
};

struct pending {
	__u64 size;
	__u64 outp;			/* posix_memalign's void ** */
	__u64 sp;			/* at entry: the return sees sp + 8 */
};

/*
 * The last realloc-family entry on this CPU: its tail call into malloc (or
 * reallocarray's into realloc) is not a new call. A tail call enters another
 * function with the same thread, stack pointer, size and return address; a
 * new call from the same frame (a = realloc(a, n); b = realloc(b, n)) enters
 * the same function, or returns elsewhere.
 */
struct last_entry {
	__u64 id;
	__u64 sp;
	__u64 size;
	__u64 ret;
	__u32 kind;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);		/* set by user space */
	__type(key, struct live_key);
	__type(value, __u64);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_entry);
} last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_alloc);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);	/* set by user space */
} events SEC(".maps");

/* tgids traced by the raw tracepoints (growth, exec, exit) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* The generation of each process that has had a record; it leaves at the process's end */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct at_proc);
} procs SEC(".maps");

static __always_inline void count(enum at_counter c)
{
	__u32 cpu = bpf_get_smp_processor_id() & (AT_MAX_CPUS - 1);

	__sync_fetch_and_add(&counters[cpu][c], 1);
}

/*
 * A generation no (pid, gen) has had: the procs entry of an exited process
 * goes, and a later process with its pid must not take up the old one's
 * objects and mappings under a generation counted again from 0. Each CPU
 * counts its own (no fetching atomics on 5.10); the low bits say which.
 * Never 0 (the -p process's first, set by user space) nor AT_GEN_NONE.
 */
static __always_inline __u32 new_gen(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & (AT_MAX_CPUS - 1);

	return ++gen_seq[cpu] * AT_MAX_CPUS + cpu;
}

/*
 * @tgid's entry, made with a new generation at its first record when
 * @create. NULL when it has none, or no room (counted: its records then keep
 * generation 0).
 */
static __always_inline struct at_proc *proc_of(__u32 tgid, bool create)
{
	struct at_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	struct at_proc fresh = {};

	if (p || !create)
		return p;
	fresh.gen = new_gen();
	if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&procs, &tgid)) {
		count(AT_CNT_PROC_MAP_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&procs, &tgid);
}

/* a * b, saturating (in 32-bit halves: clang turns a division check into __multi3) */
static __always_inline __u64 sat_mul(__u64 a, __u64 b)
{
	__u64 ah = a >> 32, al = a & 0xffffffff, bh = b >> 32, bl = b & 0xffffffff;
	__u64 cross, lo, r;

	if (ah && bh)
		return ~0ULL;
	cross = ah * bl + al * bh;
	if (cross >> 32)
		return ~0ULL;
	lo = al * bl;
	r = (cross << 32) + lo;
	return r < lo ? ~0ULL : r;
}

/* ---- allocations: uprobes on the allocator -------------------------------------------- */

/*
 * A call made from inside a hooked function (glibc's realloc calls malloc and
 * free) is part of the outer call: its return address, in the file's
 * addresses, lies in a hooked function's body.
 */
static __always_inline bool nested(struct pt_regs *ctx, __u64 fvaddr, __u64 ret)
{
	__u64 rv;
	__u32 i, n = nr_ranges;

	if (!n || !ret)
		return false;
	rv = ret - (PT_REGS_IP(ctx) - fvaddr);
	for (i = 0; i < AT_MAX_RANGES; i++) {
		if (i >= n)
			break;
		if (rv >= ranges[i].lo && rv < ranges[i].hi)
			return true;
	}
	return false;
}

/*
 * Wake the reader only once a quarter of the ring waits: a wake-up per
 * record costs an interrupt to the reader's CPU, microseconds per sample.
 * The reader also wakes by itself every poll interval (100 ms).
 */
static __always_inline __u64 rb_flags(void)
{
	if (!wake_bytes)
		return 0;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
}

static __always_inline void emit_free(__u32 type, __u32 pid, __u32 gen, __u64 ptr)
{
	struct at_free *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(AT_CNT_RINGBUF_FULL);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->gen = gen;
	e->pad = 0;
	e->ptr = ptr;
	bpf_ringbuf_submit(e, rb_flags());
}

/* An exec or a process's end: woken at once, since user space must read the maps now */
static __always_inline void emit_proc(__u32 type, __u32 pid, __u32 gen, __u32 next_gen)
{
	struct at_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(AT_CNT_RINGBUF_FULL);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->gen = gen;
	e->next_gen = next_gen;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* A free of @ptr: reported when it is an object BPF remembers (or, for markers, always). */
static __always_inline void on_free(__u32 tgid, __u64 ptr)
{
	struct live_key k = { .pid = tgid, .ptr = ptr };
	struct at_proc *p;

	if (!ptr)
		return;
	/* no generation yet: nothing of this process was ever recorded */
	p = proc_of(tgid, false);
	if (!p) {
		if (sample_all || !track_live)
			count(AT_CNT_UNKNOWN_FREE);
		return;
	}
	k.gen = p->gen;
	/* most frees are of objects never sampled: look before taking the bucket lock */
	if (track_live && (!bpf_map_lookup_elem(&live, &k) || bpf_map_delete_elem(&live, &k))) {
		/*
		 * Full mode sees every allocation, so this object came before the
		 * attach, or was lost (live map full, pending map full, a call from
		 * inside the allocator)
		 */
		if (sample_all)
			count(AT_CNT_UNKNOWN_FREE);
		return;
	}
	emit_free(AT_REC_FREE, tgid, k.gen, ptr);
}

/*
 * Send one allocation with the user stack; @skip frames are dropped from its
 * top, and one more when the next is @also (non-zero): see marker_alloc.
 */
static __always_inline void emit_alloc(void *ctx, __u64 ptr, __u64 size, __u64 skip, __u64 also)
{
	__u64 id = bpf_get_current_pid_tgid(), len, flags;
	struct live_key k = { .pid = id >> 32, .ptr = ptr };
	struct at_proc *p = proc_of(id >> 32, true);
	__u32 zero = 0, nr;
	struct at_alloc *r = bpf_map_lookup_elem(&scratch, &zero);
	bool first = false;
	long n;

	if (!r)
		return;
	r->flags = 0;
	if (p) {
		k.gen = p->gen;
		/* the first record of a generation: its maps are to be read while it lives */
		first = !p->announced;
		p->announced = 1;
	}
	r->gen = k.gen;
	r->pad = 0;
	if (track_live) {
		n = bpf_map_update_elem(&live, &k, &size, BPF_NOEXIST);
		if (n == -EEXIST) {
			/* the same address again: its free was not seen; the new object replaces it */
			count(AT_CNT_LIVE_REPLACED);
			n = bpf_map_update_elem(&live, &k, &size, BPF_ANY);
		}
		if (n) {
			/* sent as allocated, but never in use: its free would not be seen */
			count(AT_CNT_LIVE_MAP_FULL);
			r->flags |= AT_F_UNTRACKED;
		}
	}
	r->type = AT_REC_ALLOC;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->ptr = ptr;
	r->size = size;
	r->ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	if (unw_enabled) {
		__u32 miss;

		/*
		 * By the rows the marker's caller, the slow path, is a frame of its
		 * own ([marker, slow path, caller]); by the frame pointer (no table
		 * yet) it is not: it goes when it is there, as below.
		 */
		n = unw_get_user_stack(ctx, true, skip, also, r->ips, AT_MAX_FRAMES, &miss);
		if (miss)
			emit_free(AT_REC_UNWIND_MISS, id >> 32, k.gen, 0);
	} else {
		n = bpf_get_stack(ctx, r->ips, sizeof(r->ips), BPF_F_USER_STACK | (skip & 0xff));
		if (also && n >= (long)sizeof(__u64) && r->ips[0] == also) {
			skip++;
			n = bpf_get_stack(ctx, r->ips, sizeof(r->ips),
					  BPF_F_USER_STACK | (skip & 0xff));
		}
	}
	if (n < 0) {
		count(AT_CNT_STACK_ERRORS);
		r->flags |= AT_F_STACK_LOST;
		n = 0;
	}
	nr = n / sizeof(__u64);
	if (nr >= AT_MAX_FRAMES - skip) {
		r->flags |= AT_F_TRUNCATED;
		count(AT_CNT_TRUNCATED);
	}
	if (nr > AT_MAX_FRAMES)
		nr = AT_MAX_FRAMES;
	r->nr_ips = nr;
	len = offsetof(struct at_alloc, ips) + nr * sizeof(__u64);
	if (len > sizeof(*r))
		len = sizeof(*r);
	flags = first ? BPF_RB_FORCE_WAKEUP : rb_flags();
	if (bpf_ringbuf_output(&events, r, len, flags)) {
		count(AT_CNT_RINGBUF_FULL);
		/*
		 * User space will not know the object: its free is then one of an
		 * unknown object here, and no stale entry outlives its process
		 * (user space drops the live entries of a generation it knows).
		 */
		if (track_live && !(r->flags & AT_F_UNTRACKED))
			bpf_map_delete_elem(&live, &k);
		if (p && first)
			p->announced = 0;
	} else {
		count(AT_CNT_SAMPLED);
	}
}

/*
 * The entry of an allocating function: count it, free the old object of a
 * realloc, and decide whether this call is recorded. True: its return must
 * run (pending[tid] holds what it needs).
 */
static __always_inline bool alloc_entry(struct pt_regs *ctx, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 kind = cookie & 0xff, tid = (__u32)id, zero = 0, cpu;
	__u64 sp = PT_REGS_SP(ctx), size, old = 0, outp = 0, ret;
	struct last_entry *le;
	struct pending p;
	__s64 *cd;

	/* the return address: where a call goes back to (0 when unreadable) */
	if (tk_entry_ret(ctx, &ret))
		ret = 0;
	if (nested(ctx, cookie >> 8, ret)) {
		count(AT_CNT_NESTED);
		return false;
	}
	switch (kind) {
	case AT_CALLOC:
		size = sat_mul(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
		break;
	case AT_REALLOC:
		old = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM2(ctx);
		break;
	case AT_REALLOCARRAY:
		old = PT_REGS_PARM1(ctx);
		size = sat_mul(PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx));
		break;
	case AT_POSIX_MEMALIGN:
		outp = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM3(ctx);
		break;
	case AT_MEMALIGN:
		size = PT_REGS_PARM2(ctx);
		break;
	case AT_PVALLOC:
		size = (PT_REGS_PARM1(ctx) + page_size - 1) & ~(page_size - 1);
		break;
	default:
		size = PT_REGS_PARM1(ctx);
		break;
	}
	/*
	 * realloc(NULL, n) jumps to malloc(n) and reallocarray to realloc (tail
	 * calls: same thread, same stack pointer, same size): one call, not two.
	 */
	le = bpf_map_lookup_elem(&last, &zero);
	if (le) {
		if (le->id == id && le->sp == sp && le->size == size && le->ret == ret &&
		    le->kind != kind) {
			le->kind = kind;	/* reallocarray → realloc → malloc: each link */
			count(AT_CNT_NESTED);
			return false;
		}
		le->id = kind == AT_REALLOC || kind == AT_REALLOCARRAY ? id : 0;
		le->sp = sp;
		le->size = size;
		le->ret = ret;
		le->kind = kind;
	}
	count(AT_CNT_ALLOC_CALLS);
	if (old)
		on_free(id >> 32, old);
	if (old && !size)
		return false;		/* realloc(p, 0) frees */

	if (!sample_all) {
		cpu = bpf_get_smp_processor_id() & (AT_MAX_CPUS - 1);
		cd = &countdown[cpu];
		*cd -= size;
		if (*cd > 0)
			return false;
		/* memoryless: a fresh interval after each sample */
		*cd = intervals[bpf_get_prandom_u32() & (AT_RAND_ENTRIES - 1)];
	}
	p.size = size;
	p.outp = outp;
	p.sp = sp;
	if (bpf_map_update_elem(&pending, &tid, &p, BPF_ANY)) {
		count(AT_CNT_PENDING_MAP_FULL);
		return false;
	}
	return true;
}

/*
 * The return of a recorded call: at a return probe ip is the return address
 * into the caller and rbp the caller's frame, so the user stack is whole.
 */
static __always_inline void alloc_return(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);
	__u64 ptr = 0, size;

	if (!p)
		return;
	/* the return of a nested call (uretprobes without sessions) is not ours */
	if (PT_REGS_SP(ctx) != p->sp + TK_RET_SP_DELTA)
		return;
	size = p->size;
	if (p->outp) {
		if (PT_REGS_RC(ctx) == 0)
			bpf_probe_read_user(&ptr, sizeof(ptr), (void *)p->outp);
	} else {
		ptr = PT_REGS_RC(ctx);
	}
	bpf_map_delete_elem(&pending, &tid);
	if (ptr)
		emit_alloc(ctx, ptr, size, 0, 0);
}

#ifdef session_is_return
/* uprobe session (BPF_TRACE_UPROBE_SESSION): 0 from the entry asks for the return */
SEC("?uprobe")
int alloc_session(struct pt_regs *ctx)
{
	if (session_is_return(ctx)) {
		alloc_return(ctx);
		return 0;
	}
	return alloc_entry(ctx, bpf_get_attach_cookie(ctx)) ? 0 : 1;
}
#endif

SEC("?uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	alloc_entry(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/* The entry without attach cookies: one program per hooked function, its cookie by slot. */
static __noinline int alloc_enter_slot(struct pt_regs *ctx, __u32 slot)
{
	alloc_entry(ctx, slot_cookies[slot & (AT_MAX_SLOTS - 1)]);
	return 0;
}

#define AT_SLOT(n)                                                                    \
	SEC("?uprobe")                                                                \
	int alloc_enter_s##n(struct pt_regs *ctx)                                     \
	{                                                                             \
		return alloc_enter_slot(ctx, n);                                      \
	}
/* AT_NR_SLOTS of them */
AT_SLOT(0) AT_SLOT(1) AT_SLOT(2) AT_SLOT(3) AT_SLOT(4) AT_SLOT(5) AT_SLOT(6) AT_SLOT(7)
AT_SLOT(8) AT_SLOT(9) AT_SLOT(10) AT_SLOT(11) AT_SLOT(12) AT_SLOT(13) AT_SLOT(14) AT_SLOT(15)
AT_SLOT(16) AT_SLOT(17) AT_SLOT(18) AT_SLOT(19) AT_SLOT(20) AT_SLOT(21) AT_SLOT(22) AT_SLOT(23)
AT_SLOT(24) AT_SLOT(25) AT_SLOT(26) AT_SLOT(27) AT_SLOT(28) AT_SLOT(29) AT_SLOT(30) AT_SLOT(31)
AT_SLOT(32) AT_SLOT(33) AT_SLOT(34) AT_SLOT(35) AT_SLOT(36) AT_SLOT(37) AT_SLOT(38) AT_SLOT(39)
AT_SLOT(40) AT_SLOT(41) AT_SLOT(42) AT_SLOT(43) AT_SLOT(44) AT_SLOT(45) AT_SLOT(46) AT_SLOT(47)

SEC("?uretprobe")
int alloc_exit(struct pt_regs *ctx)
{
	alloc_return(ctx);
	return 0;
}

SEC("?uprobe")
int free_enter(struct pt_regs *ctx)
{
	__u64 ptr = PT_REGS_PARM1(ctx);

	if (!ptr)
		return 0;
	count(AT_CNT_FREE_CALLS);
	on_free(bpf_get_current_pid_tgid() >> 32, ptr);
	return 0;
}

/* ---- libtkalloc.so's markers --------------------------------------------------------- */

/*
 * tk_alloc_marker_alloc(ptr, size), called by libtkalloc.so's slow path with
 * a frame pointer that stands where the interposed function's frame was: a
 * walk from the marker's entry gives [marker, allocation's caller, ...], so
 * frame 0 goes. Kernels since 6.16 add the return address at the stack
 * pointer after frame 0 at the entry of a function that pushes %rbp
 * ([marker, slow path, caller, ...]): then that one goes too.
 */
SEC("?uprobe")
int marker_alloc(struct pt_regs *ctx)
{
	__u64 ptr = PT_REGS_PARM1(ctx), ret = 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 one = 1;

	count(AT_CNT_ALLOC_CALLS);
	/*
	 * Its exec is then seen (fork+exec children of the command). Another
	 * thread may have added it meanwhile (-EEXIST: no loss); a full map is
	 * counted, at each sample of a process it cannot take.
	 */
	if (!bpf_map_lookup_elem(&pids, &tgid) &&
	    bpf_map_update_elem(&pids, &tgid, &one, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&pids, &tgid))
		count(AT_CNT_FOLLOW_MAP_FULL);
	if (!ptr)
		return 0;
	tk_entry_ret(ctx, &ret);
	emit_alloc(ctx, ptr, PT_REGS_PARM2(ctx), 1, ret);
	return 0;
}

SEC("?uprobe")
int marker_free(struct pt_regs *ctx)
{
	count(AT_CNT_FREE_CALLS);
	on_free(bpf_get_current_pid_tgid() >> 32, PT_REGS_PARM1(ctx));
	return 0;
}

/*
 * Counting only (tk_alloc__measure_rate): one trap per call, nothing else.
 * count_calls tells frees by the cookie (uprobe_multi links); without
 * cookies one program per kind.
 */
SEC("?uprobe")
int count_calls(struct pt_regs *ctx)
{
	count((bpf_get_attach_cookie(ctx) & 0xff) == AT_FREE ? AT_CNT_FREE_CALLS
							      : AT_CNT_ALLOC_CALLS);
	return 0;
}

SEC("?uprobe")
int count_alloc(struct pt_regs *ctx)
{
	count(AT_CNT_ALLOC_CALLS);
	return 0;
}

SEC("?uprobe")
int count_free(struct pt_regs *ctx)
{
	count(AT_CNT_FREE_CALLS);
	return 0;
}

/* ---- growth: page faults, brk, mmap --------------------------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct at_growth_key);
	__type(value, struct at_growth_val);
} growth SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, struct at_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_stack);
} gscratch SEC(".maps");

/* brk in flight: the break before it, by thread */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} brk_old SEC(".maps");
/* brk calls of traced tasks between sys_enter and sys_exit (entries of brk_old) */
__u64 brk_pending = 0;

/* FNV-1a over the frames, 64 bits; never 0 */
static __always_inline __u64 hash_stack(const struct at_stack *st)
{
	__u64 h = 0xcbf29ce484222325ULL ^ st->nr;
	__u32 i;

	for (i = 0; i < AT_MAX_FRAMES; i++) {
		if (i >= st->nr)
			break;
		h ^= st->ips[i];
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

/* @uregs: the user registers in the program's context (a perf_event's), or NULL to find them */
static __always_inline void add_growth(void *ctx, const void *uregs, __u32 kind, __u64 bytes)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct at_growth_key key = { .pid = id >> 32, .tid = (__u32)id, .kind = kind };
	struct at_growth_val one = { .count = 1, .bytes = bytes }, *v;
	struct at_proc *p = proc_of(id >> 32, true);
	__u32 zero = 0;
	struct at_stack *st = bpf_map_lookup_elem(&gscratch, &zero);
	long n;

	if (!st)
		return;
	if (p)
		key.gen = p->gen;
	count(AT_CNT_GROWTH);
	if (unw_enabled) {
		__u32 miss;

		/* a fault or a syscall: the task's own user registers */
		n = unw_get_user_stack(uregs, uregs != NULL, 0, 0, st->ips, AT_MAX_FRAMES, &miss);
		if (miss)
			emit_free(AT_REC_UNWIND_MISS, id >> 32, key.gen, 0);
	} else {
		n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), BPF_F_USER_STACK);
	}
	if (n < 0) {
		count(AT_CNT_STACK_ERRORS);
		key.flags |= AT_F_STACK_LOST;
		n = 0;
	}
	st->nr = n / sizeof(__u64);
	st->pad = 0;
	if (st->nr >= AT_MAX_FRAMES) {
		key.flags |= AT_F_TRUNCATED;
		count(AT_CNT_TRUNCATED);
	}
	if (st->nr) {
		key.stack = hash_stack(st);
		if (!bpf_map_lookup_elem(&stacks, &key.stack) &&
		    bpf_map_update_elem(&stacks, &key.stack, st, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&stacks, &key.stack)) {
			count(AT_CNT_STACK_MAP_FULL);
			key.flags |= AT_F_STACK_LOST;
			key.stack = 0;
		}
	}
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	v = bpf_map_lookup_elem(&growth, &key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->bytes, bytes);
		return;
	}
	if (bpf_map_update_elem(&growth, &key, &one, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&growth, &key);
		if (v) {
			__sync_fetch_and_add(&v->count, 1);
			__sync_fetch_and_add(&v->bytes, bytes);
		} else {
			count(AT_CNT_STACK_MAP_FULL);
		}
	}
}

static __always_inline bool traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&pids, &tgid) != NULL;
}

/* exceptions:page_fault_user(address, regs, error_code): a page made present */
SEC("?raw_tp/page_fault_user")
int fault_user(void *ctx)
{
	if (traced())
		add_growth(ctx, NULL, AT_GROWTH_FAULT, page_size);
	return 0;
}

/*
 * The same faults where the kernel has no exceptions:page_fault_user (arm64
 * has none, 5.10 to 7.x): the software event page-faults
 * (PERF_COUNT_SW_PAGE_FAULTS, sample_period 1, one event per CPU), which the
 * architecture's fault handler raises once per fault with the faulting
 * registers, as the tracepoint fires. The tracepoint reports faults taken
 * in user mode only; so does this (exclude_kernel on the event, and the mode
 * of the registers here, should an event be opened without it).
 */
SEC("?perf_event")
int fault_event(struct bpf_perf_event_data *ctx)
{
	const __u64 *r = (const __u64 *)&ctx->regs;

	if (UNW_REGS_USER(r[UNW_REG_MODE]) && traced())
		add_growth(ctx, &ctx->regs, AT_GROWTH_FAULT, page_size);
	return 0;
}

/* raw_syscalls:sys_enter(regs, id) */
SEC("?raw_tp/sys_enter")
int sys_enter(__u64 *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx[0];
	__u64 nr = ctx[1], len, flags, prot, old;
	__u32 tid;

	if ((nr != TK_NR_MMAP && nr != TK_NR_BRK) || !traced())
		return 0;
	if (nr == TK_NR_BRK) {
		__u64 task = bpf_get_current_task(), mm = 0;

		old = 0;
		if (!task_mm_off || !mm_brk_off ||
		    bpf_probe_read_kernel(&mm, sizeof(mm), (void *)(task + task_mm_off)) || !mm ||
		    bpf_probe_read_kernel(&old, sizeof(old), (void *)(mm + mm_brk_off)))
			return 0;
		tid = (__u32)bpf_get_current_pid_tgid();
		if (!bpf_map_update_elem(&brk_old, &tid, &old, BPF_ANY))
			__sync_fetch_and_add(&brk_pending, 1);
		else	/* more threads in brk at once than it holds: this growth is lost */
			count(AT_CNT_BRK_MAP_FULL);
		return 0;
	}
	len = prot = flags = 0;
	/* mmap(addr, len, prot, flags, fd, off): the system call's own argument registers */
	bpf_probe_read_kernel(&len, sizeof(len), &PT_REGS_PARM2_SYSCALL(regs));
	bpf_probe_read_kernel(&prot, sizeof(prot), &PT_REGS_PARM3_SYSCALL(regs));
	bpf_probe_read_kernel(&flags, sizeof(flags), &PT_REGS_PARM4_SYSCALL(regs));
	if (!(flags & MAP_ANONYMOUS) && !((flags & MAP_PRIVATE) && (prot & PROT_WRITE)))
		return 0;
	add_growth(ctx, NULL, AT_GROWTH_MMAP, (len + page_size - 1) & ~(page_size - 1));
	return 0;
}

/*
 * raw_syscalls:sys_exit(regs, ret): brk returns the new break. It runs at the
 * exit of every system call of the machine: while no traced brk is under way
 * (brk_pending 0, nearly always) it reads one global and returns, instead of
 * looking its task up in a hash map (which cost a syscall-heavy server ~10 %).
 */
SEC("?raw_tp/sys_exit")
int sys_exit(__u64 *ctx)
{
	__u32 tid;
	__u64 *old, brk = ctx[1], was;

	if (!brk_pending)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	old = bpf_map_lookup_elem(&brk_old, &tid);
	if (!old)
		return 0;
	was = *old;
	if (!bpf_map_delete_elem(&brk_old, &tid))
		__sync_fetch_and_add(&brk_pending, (__u64)-1);
	if (was && brk > was)
		add_growth(ctx, NULL, AT_GROWTH_BRK, brk - was);
	return 0;
}

/* ---- exec and exit: a generation ends ------------------------------------------------- */

/*
 * A tracked process exec'd: its mappings and its heap are new. The new
 * generation's records name the new image; user space drops the objects of
 * the old one (nobody holds them any more) and, since they were its, their
 * live entries here.
 */
SEC("?raw_tp/sched_process_exec")
int exec_raw(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, old = AT_GEN_NONE;
	struct at_proc *p = bpf_map_lookup_elem(&procs, &tgid), fresh = {};

	if (!p && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	fresh.gen = new_gen();
	if (p) {
		old = p->gen;
		*p = fresh;
	} else if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST)) {
		count(AT_CNT_PROC_MAP_FULL);
	}
	emit_proc(AT_REC_EXEC, tgid, old, fresh.gen);
	/* the new image's frames go by rbp until user space describes it */
	if (unw_enabled)
		bpf_map_delete_elem(&unw_procs, &tgid);
	return 0;
}

/*
 * A thread of a tracked process exits: a call it never returned from leaves
 * pending; the last one ends the process, whose state here goes (no uprobe
 * or fault of it can come after its last thread's exit, so nothing makes
 * the entries again) and user space is told, to drop what it held.
 */
SEC("?raw_tp/sched_process_exit")
int exit_raw(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct at_proc *p = bpf_map_lookup_elem(&procs, &tgid);

	if (!p && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	bpf_map_delete_elem(&pending, &tid);
	if (!group_dead())
		return 0;
	emit_proc(AT_REC_GONE, tgid, p ? p->gen : AT_GEN_NONE, 0);
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&pids, &tgid);
	if (unw_enabled)
		bpf_map_delete_elem(&unw_procs, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
