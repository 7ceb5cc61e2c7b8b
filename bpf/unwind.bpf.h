/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The BPF evaluator of unwind rows (bpf/unwind.h): walks a user stack in the
 * kernel with the tables user space built from each object's CFI, so stacks
 * of code without frame pointers stay whole and stay in kernel maps. Every
 * collector that takes user stacks includes this header once and calls
 * unw_user_stack() where it called bpf_get_stack(..., BPF_F_USER_STACK).
 *
 * One frame is one call of the global function unw_step(): the verifier
 * checks a global function once, on its own, whatever the number of calls,
 * so 127 frames of two binary searches each stay far inside the verifier's
 * limits on every kernel from 5.10 on (no tail calls, no bpf_loop). The
 * walk's state lives in a per-CPU array; the same algorithm, step for step,
 * is user/unwind/unwind_eval.c's.
 *
 * Until user space has written a process's entry (its first sample or exec
 * reaches user space through the collector's ring buffer; tables are built
 * then), frames are taken by the frame pointer and counted as such. A frame
 * at an address in no known mapping (a library dlopen'ed since the capture,
 * JIT code) is taken by the frame pointer too, and asks user space to capture
 * the process again (unw_state.miss): once, and once more every
 * UNW_MISS_RESEND_NS while no capture follows (the ring buffer refused the
 * event, or user space had no room for it). An entry that could not hold
 * every mapping (UNW_PROC_OVERFLOW) asks nothing: another capture would not
 * make room.
 */
#ifndef __UNWIND_BPF_H
#define __UNWIND_BPF_H

#include "arch.bpf.h"
#include "unwind.h"
#include "unwind_py.h"

/*
 * arm64 rows (bpf/unwind.h) in the walk: always in arm64 objects; in an x86
 * object only where UNW_A64_ROWS is defined before this header (unwind_check,
 * so the tests can run arm64 images through this evaluator on an x86 kernel),
 * and there only in a walk marked arm64 (unw_a64_walk). Every other x86
 * object compiles without them.
 */
#if defined(__TARGET_ARCH_arm64) && !defined(UNW_A64_ROWS)
#define UNW_A64_ROWS 1
#endif
#if defined(__TARGET_ARCH_arm64)
#define UNW_A64_WALK(s) 1
#elif defined(UNW_A64_ROWS)
/* set by the program before unw_walk: the walk is an arm64 stack's */
volatile __u32 unw_a64_walk = 0;
#define UNW_A64_WALK(s) ((s)->a64)
#endif

#if defined(__TARGET_ARCH_arm64)
/*
 * What strips a PAC from a user return address: the kernel's mask (NT_ARM_PAC_MASK), set
 * by user space (tk_unw_bpf__prepare); x86's unwind_check keeps the constant.
 */
const volatile __u64 unw_ra_mask = UNW_A64_RA_MASK;
#define UNW_RA_STRIP unw_ra_mask
#elif defined(UNW_A64_ROWS)
#define UNW_RA_STRIP UNW_A64_RA_MASK
#endif

/* 0: rows unused, bpf_get_stack's frame-pointer walk; 1: unwind with the rows */
const volatile bool unw_enabled = false;
/*
 * How to find a task's user registers when the program runs in the kernel:
 * 1: bpf_task_pt_regs() (5.15+); 2: task->stack + unw_thread_size, at the
 * task_struct offset unw_task_stack_off user space found in BTF (older).
 */
const volatile __u32 unw_task_regs = 1;
const volatile __u32 unw_task_stack_off = 0;
const volatile __u32 unw_thread_size = 16384;

/*
 * The rows: chunks of UNW_CHUNK_ROWS rows, each an mmapable array user space
 * makes (and maps into one flat view of its own) when its store needs room,
 * so kernel memory follows the tables laid out; the ceiling (--unwind-mem) is
 * the number of slots. Every chunk has the template's size and flags, and the
 * template has no BPF_F_INNER_MAP: the verifier then inlines both lookups (a
 * bounds check and an add each) instead of calling a helper.
 */
struct unw_rows_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, UNW_CHUNK_ROWS);
	/* sizes, not types: BTF would only hold a declaration of struct unw_row here */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct unw_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);		/* sized by user space: the ceiling's chunks */
	__type(key, __u32);
	__array(values, struct unw_rows_chunk);
} unw_chunks SEC(".maps");

/*
 * Written by user space only: kernel memory as entries are written where the
 * kernel allows it (6.1+ for perf_event programs), else tk_kfeat__fit_maps
 * preallocates it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);		/* sized by user space */
	__type(key, __u32);		/* tgid */
	__type(value, struct unw_proc);
} unw_procs SEC(".maps");

struct unw_state {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 tgid;
	__u32 nr;
	__u32 causes;			/* enum unw_cause */
	__u32 miss;			/* ask user space to capture tgid again */
	__u32 cfi_frames;
	__u32 fp_frames;
	__u32 interrupted;		/* ip is where a signal interrupted the code */
	__u32 limit;			/* frames this walk may hold (<= UNW_WALK_FRAMES) */
	__u32 resent;			/* the miss is sent again (UNW_CNT_MISS_RESENT) */
	__u32 pad;
#ifdef UNW_A64_ROWS
	__u64 lr;			/* x30: the leaf's, or the interrupted frame's */
	__u32 sp_lost;			/* sp came from a frame record: a lower bound only */
	__u32 a64;			/* the walk is an arm64 stack's (UNW_A64_WALK) */
#endif
	__u64 ips[UNW_WALK_FRAMES];
	/* Python frames (unwind_py.bpf.h) */
	__u32 py_on;			/* the process runs CPython: py holds its entry */
	__u32 py_state;			/* 0: not begun, 1: a frame chain to walk, 2: none */
	__u32 py_pending;		/* the last frame written is an interpreter frame whose
					   Python frames are due */
	__u32 py_causes;		/* enum unw_py_cause */
	__u32 py_frames;
	__u32 py_tramp;			/* frames of -X perf trampolines */
	__u32 py_interrupted;		/* the parked caller's interrupted */
	__u32 py_pad;
	__u64 py_cur;			/* the next Python frame of the chain */
	__u64 py_eval_sp;		/* the interpreter frame's stack, [sp, cfa) */
	__u64 py_eval_cfa;
	__u64 py_next_ip;		/* its caller's registers, parked */
	__u64 py_next_sp;
	__u64 py_next_bp;
	struct unw_py_code_key py_key;	/* the id map's key, here rather than on the stack */
	__u32 py_id;
	__u32 py_here;			/* the frame being stepped is an interpreter frame */
	__u64 py_tmp[4];		/* reads of unw_py_begin */
	struct unw_py py;
	__u8 py_frame[UNW_PY_FRAME_BUF];
	__u8 py_code[UNW_PY_FRAME_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_state);
} unw_scratch SEC(".maps");

__u64 unw_counters[UNW_MAX_CPUS][UNW_CNT__COUNT] = {};

static __always_inline void unw_count(__u32 c, __u64 n)
{
	__u32 cpu = bpf_get_smp_processor_id() & (UNW_MAX_CPUS - 1);

	if (c < UNW_CNT__COUNT)
		__sync_fetch_and_add(&unw_counters[cpu][c], n);
}

static __always_inline int unw_read(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

#include "unwind_py.bpf.h"

/*
 * The caller's registers found: move to them, or, after an interpreter
 * frame (@py_here) whose thread has Python frames, park them until those
 * frames are written (unw_py_step).
 */
static __always_inline int unw_next(struct unw_state *s, __u64 sp, __u64 ra, __u64 cfa,
				    __u64 nbp)
{
	if (s->py_here) {
		if (!s->py_state)
			unw_py_begin();
		if (s->py_state == 1) {
			s->py_next_ip = ra;
			s->py_next_sp = cfa;
			s->py_next_bp = nbp;
			s->py_interrupted = s->interrupted;
			s->py_eval_sp = sp;
			s->py_eval_cfa = cfa;
			s->py_pending = 1;
			return 0;
		}
	}
	s->ip = ra;
	s->sp = cfa;
	s->bp = nbp;
	return ra == 0;
}

/*
 * The two searches are global functions too: each is verified once, and
 * returns a plain index, so the step that calls them is one straight path
 * for the verifier instead of one path per way out of each loop.
 */

/* The index of the mapping of @tgid's entry holding @addr, or -1. */
__noinline int unw_map_index(__u32 tgid, __u64 addr)
{
	struct unw_proc *p = bpf_map_lookup_elem(&unw_procs, &tgid);
	__u32 lo = 0, hi, i, mid;
	struct unw_map *m;

	if (!p)
		return -1;
	hi = p->nr;
	if (hi > UNW_MAX_MAPS)
		hi = UNW_MAX_MAPS;
	for (i = 0; i < UNW_MAP_SEARCH && lo < hi; i++) {
		mid = (lo + hi) / 2;
		m = &p->maps[mid & (UNW_MAX_MAPS - 1)];
		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return mid & (UNW_MAX_MAPS - 1);
	}
	return -1;
}

/* Row @idx of the store, or NULL (its chunk not made). */
static __always_inline struct unw_row *unw_row_at(__u32 idx)
{
	__u32 key = idx >> UNW_CHUNK_SHIFT, slot = idx & (UNW_CHUNK_ROWS - 1);
	void *chunk = bpf_map_lookup_elem(&unw_chunks, &key);

	if (!chunk)
		return NULL;
	return bpf_map_lookup_elem(chunk, &slot);
}

/*
 * The index of the last row in [@start, @start + @count) with pc <= @rel, or
 * -1. In two searches: which chunk (the last whose first row of the table is
 * at or below @rel; none to search for a table inside one chunk, which is how
 * user space places every table that fits in one), then in that chunk alone,
 * looked up once. Each loop is bounded by its own steps (UNW_CHUNK_SEARCH,
 * UNW_SLOT_SEARCH), together the UNW_ROW_SEARCH of one search over 2^32 rows.
 */
__noinline int unw_row_index(__u32 start, __u32 count, __u32 rel)
{
	__u32 end = start + count, i, mid, c, lo, hi;
	struct unw_row *r;
	void *chunk;
	int found = -1;

	if (end <= start)
		return -1;
	lo = (start >> UNW_CHUNK_SHIFT) + 1;
	hi = ((end - 1) >> UNW_CHUNK_SHIFT) + 1;
	for (i = 0; i < UNW_CHUNK_SEARCH && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		r = unw_row_at(mid << UNW_CHUNK_SHIFT);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	c = lo - 1;
	chunk = bpf_map_lookup_elem(&unw_chunks, &c);
	if (!chunk)
		return -1;
	lo = c == start >> UNW_CHUNK_SHIFT ? start & (UNW_CHUNK_ROWS - 1) : 0;
	hi = c == (end - 1) >> UNW_CHUNK_SHIFT ? ((end - 1) & (UNW_CHUNK_ROWS - 1)) + 1 :
						 UNW_CHUNK_ROWS;
	for (i = 0; i < UNW_SLOT_SEARCH && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(chunk, &mid);
		if (!r)
			return -1;
		if (r->pc <= rel) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return found < 0 ? -1 : (int)((c << UNW_CHUNK_SHIFT) + found);
}

#ifdef UNW_A64_ROWS
/*
 * One frame by the arm64 row @r (bpf/unwind.h; user/unwind/unwind_eval.c's
 * a64_row_step, the same rules): 0 found (*ra, *cfa, *nbp), 1 the walk ends,
 * 2 take it by the frame record, 3 a read fault. @exact: the frame is the leaf
 * or a signal's, so LR is its own.
 */
static __always_inline int unw_a64_row(struct unw_state *s, struct unw_row *r, __u64 sp,
				       __u64 bp, bool exact, __u64 *ra, __u64 *cfa, __u64 *nbp)
{
	__u8 kind = r->kind;
	__u64 base, slot = 0;

	if (kind == UNW_ROW_A64_SIGNAL) {
		if (unw_read(ra, sp + UNW_A64_SC_PC) || unw_read(cfa, sp + UNW_A64_SC_SP) ||
		    unw_read(nbp, sp + UNW_A64_SC_X29) || unw_read(&s->lr, sp + UNW_A64_SC_LR))
			return 3;
		*ra &= UNW_RA_STRIP;
		s->interrupted = 1;
		s->sp_lost = 0;
		return 0;
	}
	if ((kind & UNW_A64_SIGNAL) || (!(kind & UNW_A64_FP) && s->sp_lost) ||
	    ((kind & UNW_A64_RA_LR) && !exact)) {
		s->causes |= UNW_C_UNSUPPORTED;
		return 2;
	}
	base = kind & UNW_A64_FP ? bp : sp;
	*cfa = base + r->cfa_off;
	if (*cfa < sp || (*cfa == sp && !(kind & UNW_A64_RA_LR))) {
		s->causes |= UNW_C_BAD_FRAME;
		return 1;
	}
	if (kind & UNW_A64_RA_LR) {
		*ra = s->lr;
	} else {
		slot = r->ra_off < 0 ? *cfa + 8 * (__s64)r->ra_off : base + 8 * (__s64)r->ra_off;
		if (unw_read(ra, slot))
			return 3;
	}
	*nbp = bp;
	if (kind & UNW_A64_X29_LOST)
		*nbp = 0;
	else if ((kind & UNW_A64_X29_PAIR) && !(kind & UNW_A64_RA_LR) && unw_read(nbp, slot - 8))
		return 3;
	*ra &= UNW_RA_STRIP;
	s->sp_lost = 0;
	return 0;
}
#endif

/*
 * One frame: record the current ip, find the caller's registers. Returns 0
 * to go on, 1 when the walk ends. A global function: verified once.
 */
__noinline int unw_step(void)
{
	__u64 ip, sp, bp, look, cfa, ra, nbp, now, sent;
	struct unw_state *s;
	struct unw_proc *p;
	struct unw_map *m;
	struct unw_row *r;
	__u32 zero = 0, nr;
	int idx;

	s = bpf_map_lookup_elem(&unw_scratch, &zero);
	if (!s)
		return 1;
	if (s->py_pending)
		return unw_py_step();
	nr = s->nr;
	if (nr >= s->limit || nr >= UNW_WALK_FRAMES) {
		s->causes |= UNW_C_DEPTH;
		return 1;
	}
	ip = s->ip;
	sp = s->sp;
	bp = s->bp;
	s->ips[nr] = ip;
	s->nr = nr + 1;
	/* a return address is looked up one byte before; the leaf and an interrupted ip not */
	look = nr && !s->interrupted ? ip - 1 : ip;
	s->interrupted = 0;
	/* in the state, not a register kept across the calls below: the stack stays small */
	s->py_here = s->py_on && unw_py_in_loop(s, look);

	p = bpf_map_lookup_elem(&unw_procs, &s->tgid);
	if (!p)
		goto fp;
	idx = unw_map_index(s->tgid, look);
	if (idx < 0 && s->nr > 1 && s->py_on && s->py.tramp &&
	    unw_py_tramp(s, &ra, &cfa, &nbp)) {
		s->py_tramp++;
		s->cfi_frames++;
		s->py_here = 0;
		return unw_next(s, sp, ra, cfa, nbp);
	}
	if (idx < 0) {
		/* JIT code keeps frame pointers more often than not; garbage ends below */
		if (p->flags & UNW_PROC_OVERFLOW) {
			s->causes |= UNW_C_LEFT_OUT;
			goto fp;
		}
		s->causes |= UNW_C_NO_MAPPING;
		now = bpf_ktime_get_ns();
		sent = p->miss_ns;
		if (!sent || now - sent > UNW_MISS_RESEND_NS) {
			p->miss_ns = now;
			s->miss = 1;
			s->resent = sent != 0;
		}
		goto fp;
	}
	m = &p->maps[idx & (UNW_MAX_MAPS - 1)];
	if (m->flags & UNW_MAP_PENDING) {
		s->causes |= UNW_C_NOT_LOADED;
		goto fp;
	}
	if ((m->flags & UNW_MAP_NO_CFI) || !m->row_count) {
		s->causes |= UNW_C_FP;
		goto fp;
	}
	r = NULL;
	if (look >= m->bias && look - m->bias <= 0xffffffffULL) {
		idx = unw_row_index(m->row_start, m->row_count, look - m->bias);
		if (idx >= 0)
			r = unw_row_at(idx);
	}
	if (!r || r->kind == UNW_ROW_INVALID) {
		s->causes |= UNW_C_NO_ROW;
		goto fp;
	}
#ifdef UNW_A64_ROWS
	if ((r->kind & UNW_ROW_A64) && UNW_A64_WALK(s)) {
		switch (unw_a64_row(s, r, sp, bp, look == ip, &ra, &cfa, &nbp)) {
		case 0:
			goto cfi_done;
		case 1:
			return 1;
		case 2:
			goto fp;
		default:
			goto fault;
		}
	}
#endif
	switch (r->kind) {
	case UNW_ROW_END:
		s->causes |= UNW_C_END;
		return 1;
	case UNW_ROW_SIGNAL:
		if (unw_read(&ra, sp + UNW_SC_RIP) || unw_read(&cfa, sp + UNW_SC_RSP) ||
		    unw_read(&nbp, sp + UNW_SC_RBP))
			goto fault;
		s->interrupted = 1;
		goto cfi_done;
	case UNW_ROW_SP:
		cfa = sp + r->cfa_off;
		break;
	case UNW_ROW_FP:
		cfa = bp + r->cfa_off;
		break;
	case UNW_ROW_DEREF_FP:
	case UNW_ROW_DRAP:
		if (unw_read(&cfa, bp + r->cfa_off))
			goto fault;
		break;
	case UNW_ROW_PLT:
		cfa = sp + 8 + ((__s64)(ip & 15) >= r->cfa_off ? 8 : 0);
		break;
	default:
		s->causes |= UNW_C_UNSUPPORTED;
		goto fp;
	}
	if (cfa <= sp) {
		s->causes |= UNW_C_BAD_FRAME;
		return 1;
	}
	if (unw_read(&ra, cfa - 8))
		goto fault;
	/* rbp saved below the stack pointer: an epilogue popped it already */
	if (r->kind == UNW_ROW_DRAP) {
		if (unw_read(&nbp, bp + 8 * (__s64)r->rbp_off))
			goto fault;
	} else if (r->rbp_off == UNW_RBP_LOST)
		nbp = 0;
	else if (r->rbp_off == 0 || cfa + 8 * (__s64)r->rbp_off < sp)
		nbp = bp;
	else if (unw_read(&nbp, cfa + 8 * (__s64)r->rbp_off))
		goto fault;
cfi_done:
	s->cfi_frames++;
	return unw_next(s, sp, ra, cfa, nbp);

fp:
	/* -X perf's trampolines: code of no file, or of no CFI, of a layout of their own */
	if (s->nr > 1 && s->py_on && s->py.tramp && unw_py_tramp(s, &ra, &cfa, &nbp)) {
		s->py_tramp++;
		s->cfi_frames++;
		s->py_here = 0;
		return unw_next(s, sp, ra, cfa, nbp);
	}
	if (!bp)
		return 1;
	if (bp < sp || (bp & 7)) {
		s->causes |= UNW_C_BAD_FRAME;
		return 1;
	}
	if (unw_read(&ra, bp + 8) || unw_read(&nbp, bp))
		goto fault;
	s->fp_frames++;
#ifdef UNW_A64_ROWS
	/* a frame record: PAC-signed, at the bottom of its frame (x29 + 16 is not its sp) */
	if (UNW_A64_WALK(s)) {
		ra &= UNW_RA_STRIP;
		s->sp_lost = 1;
	}
#endif
	return unw_next(s, sp, ra, bp + 16, nbp);

fault:
	s->causes |= UNW_C_READ_FAULT;
	return 1;
}

/*
 * The user registers of the current task when the program runs in the
 * kernel (a syscall, a fault, an interrupt of user code): 0 or -1.
 */
static __always_inline int unw_task_user_regs(__u64 *ip, __u64 *sp, __u64 *bp, __u64 *lr)
{
	__u64 regs = 0, v[3];

	if (unw_task_regs == 1) {
		regs = bpf_task_pt_regs(bpf_get_current_task_btf());
	} else {
		__u64 task = bpf_get_current_task(), stack = 0;

		if (bpf_probe_read_kernel(&stack, sizeof(stack),
					  (const void *)(task + unw_task_stack_off)) || !stack)
			return -1;
		regs = stack + unw_thread_size - UNW_REGS_SIZE;
	}
	if (!regs || bpf_probe_read_kernel(&v[0], 8, (const void *)(regs + 8 * UNW_REG_IP)) ||
	    bpf_probe_read_kernel(&v[1], 8, (const void *)(regs + 8 * UNW_REG_SP)) ||
	    bpf_probe_read_kernel(&v[2], 8, (const void *)(regs + 8 * UNW_REG_BP)))
		return -1;
	*ip = v[0];
	*sp = v[1];
	*bp = v[2];
#ifdef UNW_REG_LR
	if (bpf_probe_read_kernel(lr, 8, (const void *)(regs + 8 * UNW_REG_LR)))
		return -1;
#endif
	return 0;
}

/*
 * Copy the frames of the last walk from the @skip-th on into @ips (at most
 * @max <= UNW_MAX_FRAMES): the count copied, all of them written.
 */
static __always_inline __u32 unw_copy(struct unw_state *s, __u32 skip, __u64 *ips, __u32 max)
{
	__u32 n = 0, nr = s->nr, at, sz;

	if (nr > skip && skip < UNW_WALK_FRAMES) {
		n = nr - skip;
		if (n > max)
			n = max;
		at = skip & 0xff;
		if (at + n > UNW_WALK_FRAMES)
			n = 0;
		/* one copy, bounded for the verifier: no loop, no path per frame count */
		sz = n * sizeof(__u64);
		barrier_var(sz);
		sz &= 1023;
		if (sz && sz <= (UNW_WALK_FRAMES - at) * sizeof(__u64) &&
		    bpf_probe_read_kernel(ips, sz, &s->ips[at]))
			n = 0;
	}
	return n;
}

/* The same, for the caller of unw_user_stack: the walk of this CPU's last call. */
static __always_inline __u32 unw_recopy(__u32 skip, __u64 *ips, __u32 max)
{
	__u32 zero = 0;
	struct unw_state *s = bpf_map_lookup_elem(&unw_scratch, &zero);

	return s ? unw_copy(s, skip, ips, max) : 0;
}

/*
 * Walk the user stack of the current task from (@ip, @sp, @bp; arm64: @lr) into @ips (up
 * to @max frames, the first @skip left out; the walk goes @more frames deeper
 * still, for a caller that may leave one more out). Returns the frame count;
 * *causes gets the walk's enum unw_cause bits, *miss whether user space
 * should capture the process's mappings again.
 */
static __always_inline int unw_walk(__u64 ip, __u64 sp, __u64 bp, __u64 lr, __u32 skip,
				    __u32 more, __u64 *ips, __u32 max, __u32 *causes, __u32 *miss)
{
	__u32 zero = 0, i, n, c;
	struct unw_state *s = bpf_map_lookup_elem(&unw_scratch, &zero);
	struct unw_proc *p;
	struct unw_py *py;

	*causes = 0;
	*miss = 0;
	if (!s)
		return 0;
	s->ip = ip;
	s->sp = sp;
	s->bp = bp;
#ifdef UNW_A64_ROWS
#ifndef __TARGET_ARCH_arm64
	s->a64 = unw_a64_walk;
#endif
	s->lr = lr & UNW_RA_STRIP;
	s->sp_lost = 0;
#endif
	s->tgid = bpf_get_current_pid_tgid() >> 32;
	s->nr = 0;
	p = bpf_map_lookup_elem(&unw_procs, &s->tgid);
	s->causes = p ? 0 : UNW_C_NO_PROC;
	s->py_on = 0;
	s->py_state = 0;
	s->py_pending = 0;
	s->py_causes = 0;
	s->py_frames = 0;
	s->py_tramp = 0;
	s->py_cur = 0;
	if (p && (p->flags & UNW_PROC_PY)) {
		py = bpf_map_lookup_elem(&unw_py_procs, &s->tgid);
		if (py) {
			s->py = *py;
			s->py_on = 1;
		}
	}
	s->miss = 0;
	s->cfi_frames = 0;
	s->fp_frames = 0;
	s->interrupted = 0;
	s->resent = 0;
	/* deep enough that @max frames remain after those left out: none is stale */
	if (max > UNW_MAX_FRAMES)
		max = UNW_MAX_FRAMES;
	s->limit = max + skip + more;
	if (s->limit > UNW_WALK_FRAMES)
		s->limit = UNW_WALK_FRAMES;
	for (i = 0; i < UNW_WALK_FRAMES + 1; i++) {
		if (unw_step())
			break;
	}
	n = unw_copy(s, skip, ips, max);
	c = s->causes;
	unw_count(UNW_CNT_STACKS, 1);
	unw_count(UNW_CNT_CFI_FRAMES, s->cfi_frames);
	unw_count(UNW_CNT_FP_FRAMES, s->fp_frames);
	for (i = 0; i < UNW_NR_CAUSES; i++) {
		if (c & (1u << i))
			unw_count(UNW_CNT_FP + i, 1);
	}
	if (s->resent)
		unw_count(UNW_CNT_MISS_RESENT, 1);
	if (s->py_on) {
		/* frames of the chain left over: a thread between pushing a frame and its eval */
		if (s->py_state == 1 && s->py_cur && !(s->py_causes & UNW_PY_C_DEPTH) &&
		    (c & UNW_C_END))
			s->py_causes |= UNW_PY_C_MISALIGNED;
		if (s->py_frames)
			s->py_causes |= UNW_PY_C_FRAMES;
		for (i = 0; i < UNW_PY_NR_CAUSES; i++) {
			if (s->py_causes & (1u << i))
				unw_count(UNW_CNT_PY_TSTATE + i, 1);
		}
		unw_count(UNW_CNT_PY_FRAMES, s->py_frames);
		if (s->py_tramp)
			unw_count(UNW_CNT_PY_TRAMP, s->py_tramp);
	}
	*causes = c;
	*miss = s->miss;
	return n;
}

/*
 * The user stack of the current task: from @regs (a pointer to its user
 * pt_regs, or NULL to find them), like bpf_get_stack(BPF_F_USER_STACK) but
 * through the rows. @in_ctx: @regs is the program's context (a uprobe's, a
 * perf_event's), read directly; else a kernel pointer. @skip: frames left
 * out at the top (a probe's own function); @more: see unw_walk. Returns the
 * frame count, or a negative value when no registers could be had.
 */
static __always_inline int unw_user_stack(const void *regs, bool in_ctx, __u32 skip, __u32 more,
					  __u64 *ips, __u32 max, __u32 *causes, __u32 *miss)
{
	__u64 ip = 0, sp = 0, bp = 0, mode = 0, lr = 0;

	if (regs && in_ctx) {
		const __u64 *r = regs;

		ip = r[UNW_REG_IP];
		sp = r[UNW_REG_SP];
		bp = r[UNW_REG_BP];
		mode = r[UNW_REG_MODE];
#ifdef UNW_REG_LR
		lr = r[UNW_REG_LR];
#endif
	} else if (regs) {
		if (bpf_probe_read_kernel(&ip, 8, (const char *)regs + 8 * UNW_REG_IP) ||
		    bpf_probe_read_kernel(&sp, 8, (const char *)regs + 8 * UNW_REG_SP) ||
		    bpf_probe_read_kernel(&bp, 8, (const char *)regs + 8 * UNW_REG_BP) ||
		    bpf_probe_read_kernel(&mode, 8, (const char *)regs + 8 * UNW_REG_MODE))
			return -1;
#ifdef UNW_REG_LR
		if (bpf_probe_read_kernel(&lr, 8, (const char *)regs + 8 * UNW_REG_LR))
			return -1;
#endif
	}
	/* interrupted in the kernel (or no regs given): the task's own user registers */
	if (!regs || !UNW_REGS_USER(mode)) {
		if (unw_task_user_regs(&ip, &sp, &bp, &lr))
			return -1;
	}
	if (!ip) {
		*causes = 0;
		*miss = 0;
		return 0;	/* a kernel thread: no user stack */
	}
	return unw_walk(ip, sp, bp, lr, skip, more, ips, max, causes, miss);
}

/*
 * bpf_get_stack(BPF_F_USER_STACK)'s contract through the rows: the bytes
 * written to @ips (room for @max <= UNW_MAX_FRAMES frames), or a negative
 * value. A stack cut at the depth limit fills @ips whole, as bpf_get_stack
 * fills its buffer: the walk goes as deep as the frames left out (@skip,
 * and @also) need, and only frames of this walk are ever counted in.
 * @also: when the first frame kept is this address, it goes too (a frame the
 * rows see and a frame-pointer walk does not). *miss as unw_user_stack's.
 */
static __always_inline long unw_get_user_stack(const void *regs, bool in_ctx, __u32 skip,
					       __u64 also, __u64 *ips, __u32 max, __u32 *miss)
{
	__u32 causes;
	int n = unw_user_stack(regs, in_ctx, skip, also ? 1 : 0, ips, max, &causes, miss);

	if (n < 0)
		return n;
	if (also && n > 0 && ips[0] == also)
		n = unw_recopy(skip + 1, ips, max);
	return n * sizeof(__u64);
}

#endif /* __UNWIND_BPF_H */
