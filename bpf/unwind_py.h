/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames in the unwinder (bpf/unwind_py.bpf.h, user/runtime/): what
 * user space tells the kernel of a CPython process, and what a Python frame
 * is in a walked stack.
 *
 * A native frame of the interpreter loop (_PyEval_EvalFrameDefault, and the
 * parts of it a compiler split off) is an interpreter activation: its Python
 * frames are read from the thread's frame chain and written just before it
 * (leaf-ward), so a Python function called back from C lies below the C
 * frames that called it. The thread state comes from glibc's thread-specific
 * data of the interpreter's pthread key (found through the task's thread
 * pointer: x86's fsbase is the pthread_t, arm64's TPIDR_EL0 lies tp_off above
 * it), which holds for every thread, with or without the GIL.
 *
 * A Python frame is one u64 of the stack, told apart from any user address
 * (< 2^47) and any kernel address or context marker (top bits 111):
 *
 *   bits 63..61  101
 *   bits 59..32  instruction index in code units (UNW_PY_IDX_UNKNOWN: none,
 *                UNW_PY_IDX_START: not started, its line is the first)
 *   bits 31..0   the code object's id (0: the kernel had no id for it)
 *
 * Ids are given in the kernel per (process, code object address, stamp of
 * fields that never change), so a code object freed and another made at
 * the same address gets a new id; each new id reaches user space by the
 * ring buffer unw_py_events while the process lives, and user space reads
 * its names and line table then.
 */
#ifndef __UNWIND_PY_H
#define __UNWIND_PY_H

#define UNW_PY_RANGES 4			/* interpreter-loop address ranges of a process */
#define UNW_PY_FRAME_BUF 128		/* a frame's bytes read at once (at most 112 used) */
#define UNW_PY_CODE_WIN 96		/* a code object's bytes read for its stamp */

#define UNW_PY_TAG 0xa000000000000000ULL
#define UNW_PY_TAG_MASK 0xe000000000000000ULL
#define UNW_PY_IDX_SHIFT 32
#define UNW_PY_IDX_MASK 0x0fffffffULL
#define UNW_PY_IDX_UNKNOWN UNW_PY_IDX_MASK
#define UNW_PY_IDX_START (UNW_PY_IDX_MASK - 1)	/* the frame has run no instruction yet */

#define UNW_PY_REC(id, idx)                                                                      \
	(UNW_PY_TAG | ((__u64)((idx) & UNW_PY_IDX_MASK) << UNW_PY_IDX_SHIFT) | (__u32)(id))
#define UNW_PY_IS_REC(v) (((v) & UNW_PY_TAG_MASK) == UNW_PY_TAG)
#define UNW_PY_REC_ID(v) ((__u32)(v))
#define UNW_PY_REC_IDX(v) ((__u32)(((v) >> UNW_PY_IDX_SHIFT) & UNW_PY_IDX_MASK))

enum unw_py_kind {
	UNW_PY_FRAMEOBJ = 1,	/* <= 3.10: PyFrameObject chain, one frame per eval call */
	UNW_PY_ENTRYFLAG,	/* 3.11: _PyInterpreterFrame, is_entry ends an activation */
	UNW_PY_SHIM,		/* 3.12+: a C-stack shim frame (owner) ends an activation */
};

enum unw_py_lasti {
	UNW_PY_LASTI_BYTES = 1,	/* 3.9: int f_lasti, in bytes */
	UNW_PY_LASTI_UNITS,	/* 3.10: int f_lasti, in code units (-1: not started) */
	UNW_PY_LASTI_PTR,	/* 3.11+: a pointer into co_code_adaptive */
};

enum unw_py_tramp {
	UNW_PY_TRAMP_NONE = 0,
	UNW_PY_TRAMP_SUB,	/* 3.12/3.13: sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
	UNW_PY_TRAMP_PUSH,	/* Debian 3.14: push %rbp; mov %rsp,%rbp; call *%rcx; pop; ret */
};

/* A CPython process, as user space found it (user/runtime/py_detect.c); ~112 bytes. */
struct unw_py {
	__u8 minor;		/* 9..14 */
	__u8 kind;		/* enum unw_py_kind */
	__u8 lasti;		/* enum unw_py_lasti */
	__u8 via_cframe;	/* the top frame is tstate->cframe->current_frame (3.11, 3.12) */
	__u8 cstack_owner;	/* the shim's owner value (3.12+: 3) */
	__u8 nranges;
	__u8 exec_tag;		/* low bits of f_executable to clear (3.14: 3) */
	__u8 tramp;		/* enum unw_py_tramp: -X perf trampolines' shape */
	__u32 tss_key;		/* the interpreter's pthread key (< 32) */
	__u16 tsd_off;		/* the key's data at pthread_t + tsd_off + tsd_stride * key */
	__u16 tsd_stride;
	__u16 ts_thread_id;	/* PyThreadState.thread_id (== the thread's pthread_t) */
	__u16 ts_frame;		/* PyThreadState.frame / .cframe / .current_frame */
	__u16 cf_current;	/* _PyCFrame.current_frame */
	__u16 fr_code;		/* f_code / f_executable */
	__u16 fr_prev;		/* f_back / previous */
	__u16 fr_instr;		/* f_lasti / prev_instr / instr_ptr */
	__u16 fr_owner;		/* owner (3.12+) */
	__u16 fr_entry;		/* is_entry (3.11) */
	__u16 fr_size;		/* bytes of a frame to read (<= UNW_PY_FRAME_BUF) */
	__u16 co_code;		/* co_code_adaptive (3.11+) */
	__u16 co_win;		/* where the stamp window starts in a code object */
	__u16 co_first;		/* co_firstlineno, in the window */
	__u16 co_lines;		/* the line table pointer, in the window */
	__u16 co_name;		/* co_qualname (co_name before 3.11), in the window */
	__u16 tp_off;		/* arm64: pthread_t = thread pointer - tp_off (x86: 0, unused) */
	__u64 lo[UNW_PY_RANGES];	/* interpreter-loop ranges, absolute, [lo, hi) */
	__u64 hi[UNW_PY_RANGES];
};

/* The key of a code object's id: its process, address and stamp. */
struct unw_py_code_key {
	__u32 tgid;
	__u32 stamp;
	__u64 code;
};

/* A new id (ring buffer unw_py_events): user space reads its names now. */
struct unw_py_event {
	__u32 id;
	__u32 tgid;
	__u64 code;
	__u32 stamp;
	__u32 pad;
};

/* Why a stack's Python frames are not whole: each is counted once per stack. */
enum unw_py_cause {
	UNW_PY_C_TSTATE = 1 << 0,	/* no thread state (of this thread) through the key */
	UNW_PY_C_READ_FAULT = 1 << 1,	/* a frame or code object could not be read */
	UNW_PY_C_DEPTH = 1 << 2,	/* frames cut at the depth limit */
	UNW_PY_C_MISALIGNED = 1 << 3,	/* an interpreter frame without its Python frames */
	UNW_PY_C_NO_ID = 1 << 4,	/* a code object got no id (id map or ring buffer full) */
	UNW_PY_C_FRAMES = 1 << 5,	/* the stack has Python frames (not a loss) */
};
#define UNW_PY_NR_CAUSES 6


/*
 * The walk's rules over a frame's (or a code object window's) bytes as read,
 * UNW_PY_FRAME_BUF of them: shared by the kernel's walk (unwind_py.bpf.h) and
 * user space's (user/runtime/py_walk.c, tracekit stacks), so both read a frame
 * the same way. Offsets are masked into the buffer (the verifier needs it;
 * every offset of the tables is aligned to its field's size).
 */
#ifndef __bpf__
#include <stdbool.h>
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

static __always_inline __u64 unw_py_u64(const __u8 *buf, __u32 off)
{
#ifdef __bpf__
	return *(const __u64 *)(buf + (off & (UNW_PY_FRAME_BUF - 8)));
#else
	__u64 v;

	__builtin_memcpy(&v, buf + (off & (UNW_PY_FRAME_BUF - 8)), sizeof(v));
	return v;
#endif
}

static __always_inline __u32 unw_py_u32(const __u8 *buf, __u32 off)
{
#ifdef __bpf__
	return *(const __u32 *)(buf + (off & (UNW_PY_FRAME_BUF - 4)));
#else
	__u32 v;

	__builtin_memcpy(&v, buf + (off & (UNW_PY_FRAME_BUF - 4)), sizeof(v));
	return v;
#endif
}

static __always_inline __u8 unw_py_u8(const __u8 *buf, __u32 off)
{
	return buf[off & (UNW_PY_FRAME_BUF - 1)];
}

/* The code object a frame runs (3.14's f_executable is a tagged reference: tag cleared). */
static __always_inline __u64 unw_py_frame_code(const struct unw_py *py, const __u8 *f)
{
	return unw_py_u64(f, py->fr_code) & ~(__u64)py->exec_tag;
}

/* 3.12+: a C-stack shim frame, the first of an activation; no Python frame of its own. */
static __always_inline bool unw_py_frame_shim(const struct unw_py *py, const __u8 *f)
{
	return py->kind == UNW_PY_SHIM && unw_py_u8(f, py->fr_owner) == py->cstack_owner;
}

/* The frame ends its activation (<= 3.10: every frame; 3.11: is_entry; 3.12+: the shim). */
static __always_inline bool unw_py_frame_last(const struct unw_py *py, const __u8 *f)
{
	if (py->kind == UNW_PY_FRAMEOBJ)
		return true;
	if (py->kind == UNW_PY_ENTRYFLAG)
		return unw_py_u8(f, py->fr_entry) != 0;
	return false;
}

/* The instruction index of a frame running @code: units, or UNW_PY_IDX_START/_UNKNOWN. */
static __always_inline __u32 unw_py_frame_idx(const struct unw_py *py, const __u8 *f, __u64 code)
{
	__u64 ptr, d;
	__s32 lasti;

	if (py->lasti == UNW_PY_LASTI_PTR) {
		ptr = unw_py_u64(f, py->fr_instr);
		d = ptr - code - py->co_code;
		/* 3.11/3.12 start a frame at the unit before its first */
		if (ptr < code + py->co_code)
			return UNW_PY_IDX_START;
		if (d < ((UNW_PY_IDX_MASK - 1) << 1))
			return d >> 1;
		return UNW_PY_IDX_UNKNOWN;
	}
	lasti = (__s32)unw_py_u32(f, py->fr_instr);
	if (lasti < 0)
		return UNW_PY_IDX_START;
	if ((__u64)lasti < (UNW_PY_IDX_MASK - 1) << 1)
		return py->lasti == UNW_PY_LASTI_BYTES ? (__u32)lasti >> 1 : (__u32)lasti;
	return UNW_PY_IDX_UNKNOWN;
}

/*
 * A code object's stamp, from its window (UNW_PY_CODE_WIN bytes from co_win):
 * fields set when it is made and never changed, so a code object freed and
 * another made at its address gets another id.
 */
static __always_inline __u32 unw_py_stamp(const struct unw_py *py, const __u8 *win)
{
	__u64 lines = unw_py_u64(win, py->co_lines), name = unw_py_u64(win, py->co_name);

	return unw_py_u32(win, py->co_first) ^ (__u32)(lines >> 4) ^
	       (__u32)(name >> 4) * 0x9e3779b1u;
}

#endif /* __UNWIND_PY_H */
