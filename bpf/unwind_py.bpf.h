/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames in the BPF unwinder (bpf/unwind_py.h says what they are).
 * Included by bpf/unwind.bpf.h only, after struct unw_state.
 *
 * unw_step() sees that a native frame is the interpreter loop (its address
 * in one of the process's unw_py ranges), writes that frame's address and
 * steps it as any other, but parks the caller's registers instead of moving
 * to them: the next calls of unw_step() go to unw_py_step(), each writing
 * one Python frame of that activation just before the loop's frame, until
 * the activation's last frame (<= 3.10: every frame is one; 3.11: is_entry;
 * 3.12+: the C-stack shim, a local of that very native frame, so its
 * address must lie in the frame's [sp, cfa)). Then the parked registers are
 * taken up and the native walk goes on. One frame per call, as for native
 * frames: the verifier checks each global function once (no bpf_loop, no
 * tail calls: 5.10 on).
 *
 * The thread state is glibc's thread-specific data of the interpreter's
 * pthread key: *(pthread_t + tsd_off + tsd_stride * key). The thread's
 * pthread_t comes from its thread pointer, at the offset user space found in
 * the kernel's BTF: x86's fsbase (task_struct.thread.fsbase) is the pthread_t
 * itself; arm64's TPIDR_EL0 (thread.uw.tp_value, saved at each switch) points
 * past struct pthread (glibc's TLS variant I: pthread_t = tp - tp_off, the
 * size user space read from the process's libc). The thread state holds the
 * pthread_t as thread_id: a stale key or a wrong layout cannot pass that check.
 */
#ifndef __UNWIND_PY_BPF_H
#define __UNWIND_PY_BPF_H

#include "unwind_py.h"

/* task_struct.thread.fsbase (arm64: thread.uw.tp_value); 0: none known (no BTF): no Python frames */
const volatile __u32 unw_fsbase_off = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* sized by user space */
	__type(key, __u32);		/* tgid */
	__type(value, struct unw_py);
} unw_py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);		/* sized by user space */
	__type(key, struct unw_py_code_key);
	__type(value, __u32);
} unw_py_codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* sized by user space */
} unw_py_events SEC(".maps");

/* ids handed out, per CPU (no fetching atomics on 5.10): id = seq << 8 | cpu */
__u32 unw_py_seq[UNW_MAX_CPUS] = {};

static __always_inline bool unw_py_in_loop(const struct unw_state *s, __u64 look)
{
	__u32 i;

	for (i = 0; i < UNW_PY_RANGES; i++) {
		if (i < s->py.nranges && look >= s->py.lo[i] && look < s->py.hi[i])
			return true;
	}
	return false;
}

/*
 * -X perf's trampolines (3.12+): anonymous code of a fixed shape, called
 * with the Python function's eval in %rcx. Seen from the return address
 * after its "call *%rcx", the caller's frame is at sp + 16 and the return
 * address at sp + 8; %rbp is unchanged (sub/add form) or at sp (push form).
 * A frame-pointer step there would take the interpreter's %rbp, which is
 * no frame pointer. True when @ip is such a return address (*ra, *cfa, *nbp
 * set).
 */
static __always_inline bool unw_py_tramp(struct unw_state *s, __u64 *ra, __u64 *cfa, __u64 *nbp)
{
	__u64 w, sp = s->sp;

	/* the step's registers from the state, the code read into it: unw_step's stack stays
	   as it was (the collectors' programs leave it little room on 5.10-6.1) */
	if (unw_read(&s->py_tmp[0], s->ip - 2))
		return false;
	w = s->py_tmp[0];
	if (s->py.tramp == UNW_PY_TRAMP_SUB) {
		/* ff d1 48 83 c4 08 c3: call *%rcx; add $8,%rsp; ret */
		if ((w & 0x00ffffffffffffffULL) != 0x00c308c48348d1ffULL)
			return false;
		*nbp = s->bp;
	} else if (s->py.tramp == UNW_PY_TRAMP_PUSH) {
		/* ff d1 5d c3: call *%rcx; pop %rbp; ret */
		if ((w & 0xffffffffULL) != 0xc35dd1ffULL || unw_read(nbp, sp))
			return false;
	} else {
		return false;
	}
	if (unw_read(ra, sp + 8))
		return false;
	*cfa = sp + 16;
	return true;
}

/*
 * Find the thread state and its newest frame: py_state 1 with py_cur set,
 * or 2 (no Python frames in this stack; counted). Once per walk, at its
 * first interpreter frame.
 */
__noinline int unw_py_begin(void)
{
	struct unw_state *s;
	__u32 zero = 0;
	__u64 *v;

	s = bpf_map_lookup_elem(&unw_scratch, &zero);
	if (!s)
		return 0;
	/* read into the state, not the stack: see unw_py_code_id */
	v = s->py_tmp;
	s->py_state = 2;
	if (!unw_fsbase_off ||
	    bpf_probe_read_kernel(&v[0], 8,
				  (const void *)(bpf_get_current_task() + unw_fsbase_off)) ||
#if defined(__TARGET_ARCH_arm64)
	    /* struct pthread lies below the thread pointer (v[0] > tp_off: not 0 after) */
	    v[0] <= s->py.tp_off || !(v[0] -= s->py.tp_off) ||
#endif
	    !v[0] || unw_read(&v[1], v[0] + s->py.tsd_off + (__u64)s->py.tsd_stride *
			      (s->py.tss_key & 31)) ||
	    !v[1] || unw_read(&v[2], v[1] + s->py.ts_thread_id) || v[2] != v[0]) {
		s->py_causes |= UNW_PY_C_TSTATE;
		return 0;
	}
	if (unw_read(&v[3], v[1] + s->py.ts_frame) ||
	    (s->py.via_cframe && v[3] && unw_read(&v[3], v[3] + s->py.cf_current))) {
		s->py_causes |= UNW_PY_C_READ_FAULT;
		return 0;
	}
	s->py_cur = v[3];
	s->py_state = v[3] ? 1 : 2;
	return 0;
}

/*
 * The id of the code object at @code in this process: from the id map, or
 * new (and told to user space). 0 when none could be had (counted). Inlined
 * in unw_py_step, and its key in the walk's state, not on the stack: the
 * programs that walk stacks keep big stacks of their own, and 5.10-6.1 count
 * every frame of a call chain against 512 bytes.
 */
static __always_inline __u32 unw_py_code_id(struct unw_state *s, __u64 code)
{
	struct unw_py_code_key *k = &s->py_key;
	struct unw_py_event *e;
	__u32 cpu, seq, id, *v;

	if (bpf_probe_read_user(s->py_code, UNW_PY_CODE_WIN, (const void *)(code + s->py.co_win))) {
		s->py_causes |= UNW_PY_C_READ_FAULT;
		return 0;
	}
	k->tgid = s->tgid;
	k->code = code;
	k->stamp = unw_py_stamp(&s->py, s->py_code);
	v = bpf_map_lookup_elem(&unw_py_codes, k);
	if (v)
		return *v;
	cpu = bpf_get_smp_processor_id() & (UNW_MAX_CPUS - 1);
	seq = unw_py_seq[cpu] + 1;
	if (seq > 0xffffff)
		seq = 1;
	unw_py_seq[cpu] = seq;
	id = seq << 8 | cpu;
	e = bpf_ringbuf_reserve(&unw_py_events, sizeof(*e), 0);
	if (!e) {
		s->py_causes |= UNW_PY_C_NO_ID;
		return 0;
	}
	e->id = id;
	e->tgid = k->tgid;
	e->code = k->code;
	e->stamp = k->stamp;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	s->py_id = id;
	if (bpf_map_update_elem(&unw_py_codes, k, &s->py_id, BPF_NOEXIST)) {
		/* another CPU gave it one meanwhile: that one (user space knows both) */
		v = bpf_map_lookup_elem(&unw_py_codes, k);
		if (v)
			return *v;
	}
	return id;
}

/* The activation's frames are written: take up the parked caller. */
static __always_inline int unw_py_done(struct unw_state *s)
{
	s->py_pending = 0;
	s->ip = s->py_next_ip;
	s->sp = s->py_next_sp;
	s->bp = s->py_next_bp;
	s->interrupted = s->py_interrupted;
	return s->ip == 0;
}

/*
 * One step of an activation's Python frames: write one frame before the
 * interpreter frame (the last one written), or end the activation. Returns
 * 0 to go on, 1 when the walk ends.
 */
__noinline int unw_py_step(void)
{
	__u64 cur, prev, code;
	__u32 zero = 0, nr, idx, id;
	struct unw_state *s;
	bool last;

	s = bpf_map_lookup_elem(&unw_scratch, &zero);
	if (!s)
		return 1;
	cur = s->py_cur;
	if (!cur) {
		/* the chain ended before this interpreter frame's activation */
		s->py_causes |= UNW_PY_C_MISALIGNED;
		s->py_state = 2;
		return unw_py_done(s);
	}
	if (bpf_probe_read_user(s->py_frame, s->py.fr_size & (UNW_PY_FRAME_BUF - 1),
				(const void *)cur)) {
		s->py_causes |= UNW_PY_C_READ_FAULT;
		s->py_state = 2;
		return unw_py_done(s);
	}
	if (unw_py_frame_shim(&s->py, s->py_frame)) {
		/* the shim is a local of its interpreter frame: this one's, or an outer one's */
		if (cur >= s->py_eval_sp && cur < s->py_eval_cfa)
			s->py_cur = unw_py_u64(s->py_frame, s->py.fr_prev);
		else
			s->py_causes |= UNW_PY_C_MISALIGNED;
		return unw_py_done(s);
	}
	/*
	 * The id first: few values live across its calls, so the stack stays small
	 * (see unw_py_code_id); the rest is read from the frame's copy after. The
	 * rules (unw_py_frame_*) are bpf/unwind_py.h's, user space's walk's too.
	 */
	id = unw_py_code_id(s, unw_py_frame_code(&s->py, s->py_frame));
	code = unw_py_frame_code(&s->py, s->py_frame);
	prev = unw_py_u64(s->py_frame, s->py.fr_prev);
	idx = unw_py_frame_idx(&s->py, s->py_frame, code);
	last = unw_py_frame_last(&s->py, s->py_frame);
	nr = s->nr;
	if (nr >= s->limit || nr >= UNW_WALK_FRAMES || nr == 0) {
		s->causes |= UNW_C_DEPTH;
		s->py_causes |= UNW_PY_C_DEPTH;
		return 1;
	}
	/* before the interpreter frame, which was written last (nr - 1 < 128: masked so that
	   5.10's verifier, which loses a 32-bit subtraction's bounds, sees it) */
	s->ips[nr] = s->ips[(nr - 1) & (UNW_MAX_FRAMES)];
	s->ips[(nr - 1) & (UNW_MAX_FRAMES)] = UNW_PY_REC(id, idx);
	s->nr = nr + 1;
	s->py_frames++;
	s->py_cur = prev;
	if (!prev)
		s->py_state = 2;
	if (last || !prev)
		return unw_py_done(s);
	return 0;
}

#endif /* __UNWIND_PY_BPF_H */
