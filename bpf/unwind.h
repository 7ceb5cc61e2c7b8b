/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Unwind rows: the one table format that both evaluators read — the BPF one
 * (bpf/unwind.bpf.h, in every collector that takes user stacks) and the
 * user-space one (user/unwind/unwind_eval.c, for the perf_event fallback).
 *
 * User space turns each ELF object's CFI (.eh_frame, or .debug_frame of its
 * debug file) into rows sorted by address (user/unwind/unwind_table.c). A row says,
 * from its address up to the next row's, how to find the caller on x86-64:
 *
 *   CFA  = rsp + cfa_off | rbp + cfa_off | *(rbp + cfa_off) | the PLT rule
 *   return address at CFA - 8 (the only rule x86-64 compilers emit)
 *   caller's rbp  = *(CFA + 8 * rbp_off), or unchanged when rbp_off is 0 (for
 *                   UNW_ROW_DRAP: *(rbp + 8 * rbp_off), where gcc keeps it)
 *   caller's rsp  = CFA
 *
 * plus the signal trampoline (registers from the ucontext at rsp), the
 * outermost frame (return address undefined: _start, a thread's start), and
 * rows that say "no CFI here" or "CFI the rows cannot express": the walk then
 * takes that one frame by the frame pointer, and counts it.
 *
 * arm64 objects get rows of their own kinds (UNW_ROW_A64 and its bits; the
 * x86 kinds and fields are unchanged, and END/INVALID/UNSUPPORTED are shared):
 *
 *   CFA  = sp + cfa_off | x29 + cfa_off
 *   return address in x30 (LR: the leaf, before it is saved; a PLT stub), or
 *                  at CFA + 8 * ra_off (ra_off < 0: clang saves it near the CFA)
 *                  or at base + 8 * ra_off (ra_off >= 0, base = sp or x29: gcc
 *                  saves it at the bottom of the frame, CFA - 8208 in a function
 *                  with 8 KiB of locals but sp + 16), n from the CFI;
 *   caller's x29  = unchanged, or in the slot below the return address (the
 *                   frame record, stp x29, x30), or lost (set to 0)
 *   caller's sp   = CFA
 *
 * A return address read from the stack or from LR may carry a pointer
 * authentication code (paciasp; DW_CFA_AARCH64_negate_ra_state, which libdw
 * does not report): it is stripped with the walk's address mask before use.
 * A frame taken by the frame record ([x29] = caller's x29, [x29 + 8] = its
 * return address) does not give the caller's sp on arm64 (the record is at
 * the bottom of the frame): an sp-based row after it is not trusted.
 */
#ifndef __UNWIND_H
#define __UNWIND_H

#define UNW_MAX_FRAMES 127	/* frames of one stack, the leaf first */
#define UNW_MAX_SKIP 2		/* frames a caller may leave out at the top (skip, "also") */
#define UNW_WALK_FRAMES (UNW_MAX_FRAMES + UNW_MAX_SKIP)	/* frames one walk may hold */
#define UNW_MAX_MAPS 128	/* executable mappings of one process */
#define UNW_MAP_SEARCH 8	/* log2(UNW_MAX_MAPS) + 1 steps of binary search */
/*
 * Steps of binary search in one table: a table of up to 2^32 - 1 rows, more
 * than the largest store (tk_unw_bpf__prepare admits UINT32_MAX / 2 rows;
 * --unwind-mem 4096 is 2^29).
 */
#define UNW_ROW_SEARCH 32
/*
 * Rows live in chunks of UNW_CHUNK_ROWS (512 KiB), made by user space as tables
 * arrive (bpf/unwind.bpf.h's unw_chunks): row i is row i & (UNW_CHUNK_ROWS - 1)
 * of chunk i >> UNW_CHUNK_SHIFT.
 */
#define UNW_CHUNK_SHIFT 16
#define UNW_CHUNK_ROWS (1u << UNW_CHUNK_SHIFT)
#define UNW_SLOT_SEARCH (UNW_CHUNK_SHIFT + 1)			/* in one chunk */
#define UNW_CHUNK_SEARCH (UNW_ROW_SEARCH - UNW_CHUNK_SHIFT + 1)	/* which chunk */
#define UNW_MISS_RESEND_NS 2000000000ULL	/* a miss no capture followed is sent again */
#define UNW_MAX_CPUS 256	/* slots of the per-CPU counters (cpu & (UNW_MAX_CPUS - 1)) */

enum unw_row_kind {
	UNW_ROW_SP = 1,		/* CFA = rsp + cfa_off */
	UNW_ROW_FP,		/* CFA = rbp + cfa_off */
	UNW_ROW_DEREF_FP,	/* CFA = *(rbp + cfa_off): gcc's stack realignment (DRAP) */
	UNW_ROW_PLT,		/* CFA = rsp + 8 + ((rip & 15) >= cfa_off ? 8 : 0): PLT stubs */
	UNW_ROW_SIGNAL,		/* a signal trampoline: rip, rsp, rbp from the ucontext at rsp */
	UNW_ROW_END,		/* the outermost frame: return address undefined */
	UNW_ROW_INVALID,	/* no CFI covers this address (a gap between FDEs) */
	UNW_ROW_UNSUPPORTED,	/* CFI the rows cannot express: take this frame by rbp */
	UNW_ROW_DRAP,		/* CFA = *(rbp + cfa_off), caller's rbp at rbp + 8 * rbp_off:
				   gcc's realigned stack, rbp saved by an expression */
	/* arm64: UNW_ROW_A64 | the UNW_A64_* bits below; ra_off in place of rbp_off */
	UNW_ROW_A64 = 0x40,
	UNW_ROW_A64_SIGNAL = 0x70,	/* arm64 signal trampoline: x29, x30, sp, pc from the
					   rt_sigframe at sp */
};

/* Bits of an arm64 row's kind (with UNW_ROW_A64; UNW_ROW_A64_SIGNAL has no other bit). */
enum unw_a64_bits {
	UNW_A64_FP = 1 << 0,		/* CFA = x29 + cfa_off; else sp + cfa_off */
	UNW_A64_RA_LR = 1 << 1,		/* the return address is in x30 (ra_off unused) */
	UNW_A64_X29_PAIR = 1 << 2,	/* caller's x29 at the return address's slot - 8 */
	UNW_A64_X29_LOST = 1 << 3,	/* caller's x29 lost (set to 0); neither bit: same */
	UNW_A64_SIGNAL = 1 << 4 | 1 << 5,	/* (UNW_ROW_A64_SIGNAL) */
};

/* rbp_off: 0 = rbp unchanged; UNW_RBP_LOST = rbp is not recoverable (set to 0) */
#define UNW_RBP_LOST (-128)

/* 8 bytes; rows of one table are sorted by pc, one row per pc. */
struct unw_row {
	__u32 pc;		/* ELF virtual address - the table's base */
	__s16 cfa_off;		/* bytes (for UNW_ROW_PLT: the threshold of rip & 15) */
	union {
		__s8 rbp_off;	/* x86: caller's rbp at CFA + 8 * rbp_off; see UNW_RBP_LOST */
		__s8 ra_off;	/* arm64: the return address's slot (see above) */
	};
	__u8 kind;		/* enum unw_row_kind */
};

enum unw_map_flags {
	UNW_MAP_PENDING = 1 << 0,	/* the table is not loaded yet: by frame pointer */
	UNW_MAP_NO_CFI = 1 << 1,	/* the object has no CFI at all: by frame pointer */
};

/* One executable mapping of a process; maps of a unw_proc are sorted by start. */
struct unw_map {
	__u64 start;
	__u64 end;		/* exclusive */
	__u64 bias;		/* address - bias = row pc */
	__u32 row_start;	/* index of the table's first row in the rows array */
	__u32 row_count;	/* 0 with UNW_MAP_PENDING or UNW_MAP_NO_CFI */
	__u32 flags;		/* enum unw_map_flags */
	__u32 pad;
};

enum unw_proc_flags {
	/*
	 * The process has more than UNW_MAX_MAPS executable mappings: the entry
	 * holds those that matter most (user/unwind/unwind_store.c), a frame in
	 * any other goes by the frame pointer (UNW_C_LEFT_OUT), and no miss is
	 * sent: capturing the process again would not make room.
	 */
	UNW_PROC_OVERFLOW = 1 << 0,
	/* The process runs CPython: its unw_py_procs entry says how (bpf/unwind_py.h). */
	UNW_PROC_PY = 1 << 1,
};

/* A process's executable mappings, as user space last captured them. */
struct unw_proc {
	__u32 nr;		/* maps in use */
	__u32 gen;		/* the capture's exec generation */
	__u32 flags;		/* enum unw_proc_flags */
	__u32 left_out;		/* with UNW_PROC_OVERFLOW: executable mappings not in maps */
	__u64 miss_ns;		/* bpf_ktime_get_ns() of the last miss sent since user space
				   wrote this entry; 0: none */
	struct unw_map maps[UNW_MAX_MAPS];
};

/*
 * Why a stack is not whole, or how it was walked: each is counted once per
 * stack (UNW_CNT_*_FRAMES count frames).
 */
enum unw_cause {
	UNW_C_FP = 1 << 0,		/* a frame of an object without CFI, by rbp */
	UNW_C_NOT_LOADED = 1 << 1,	/* a frame whose table was not loaded yet, by rbp */
	UNW_C_NO_ROW = 1 << 2,		/* CFI does not cover the address, by rbp */
	UNW_C_UNSUPPORTED = 1 << 3,	/* a row the evaluator cannot express, by rbp */
	UNW_C_NO_MAPPING = 1 << 4,	/* address in no known mapping (JIT, a new library): by rbp */
	UNW_C_NO_PROC = 1 << 5,		/* the process has no unwind entry: rbp all the way */
	UNW_C_READ_FAULT = 1 << 6,	/* a stack read failed: stopped */
	UNW_C_DEPTH = 1 << 7,		/* UNW_MAX_FRAMES reached: truncated */
	UNW_C_END = 1 << 8,		/* reached the outermost frame: the stack is whole */
	UNW_C_BAD_FRAME = 1 << 9,	/* the frame pointer or CFA went nowhere: stopped */
	UNW_C_LEFT_OUT = 1 << 10,	/* a mapping an overflowed entry left out: by rbp */
};
#define UNW_NR_CAUSES 11

enum unw_counter {
	UNW_CNT_STACKS = 0,		/* stacks walked */
	UNW_CNT_CFI_FRAMES,		/* frames found by a row */
	UNW_CNT_FP_FRAMES,		/* frames found by rbp (any cause) */
	UNW_CNT_FP,			/* stacks with UNW_C_FP; and so on, in enum unw_cause order */
	UNW_CNT_NOT_LOADED,
	UNW_CNT_NO_ROW,
	UNW_CNT_UNSUPPORTED,
	UNW_CNT_NO_MAPPING,
	UNW_CNT_NO_PROC,
	UNW_CNT_READ_FAULT,
	UNW_CNT_DEPTH,
	UNW_CNT_END,
	UNW_CNT_BAD_FRAME,
	UNW_CNT_LEFT_OUT,		/* the last of the causes' counters */
	UNW_CNT_MISS_RESENT,		/* misses sent again: no capture followed the first */
	UNW_CNT_PY_TSTATE,		/* stacks with enum unw_py_cause's bits, in its order */
	UNW_CNT_PY_READ_FAULT,
	UNW_CNT_PY_DEPTH,
	UNW_CNT_PY_MISALIGNED,
	UNW_CNT_PY_NO_ID,
	UNW_CNT_PY_STACKS,		/* stacks with Python frames */
	UNW_CNT_PY_FRAMES,		/* Python frames written */
	UNW_CNT_PY_TRAMP,		/* frames of Python's perf trampolines (-X perf) */
	UNW_CNT__COUNT,
};

/* Byte offsets in the signal frame at rsp when __restore_rt runs (struct ucontext). */
#define UNW_UC_MCONTEXT 40		/* uc_flags, uc_link, uc_stack */
#define UNW_SC_RBP (UNW_UC_MCONTEXT + 10 * 8)
#define UNW_SC_RSP (UNW_UC_MCONTEXT + 15 * 8)
#define UNW_SC_RIP (UNW_UC_MCONTEXT + 16 * 8)

/*
 * arm64: offsets in the rt_sigframe at sp when __kernel_rt_sigreturn runs:
 * siginfo (128), then the ucontext, whose uc_mcontext (struct sigcontext:
 * fault_address, regs[31], sp, pc) is at 176 (aarch64 headers, offsetof).
 */
#define UNW_A64_SC (128 + 176 + 8)	/* regs[0] */
#define UNW_A64_SC_X29 (UNW_A64_SC + 29 * 8)
#define UNW_A64_SC_LR (UNW_A64_SC + 30 * 8)
#define UNW_A64_SC_SP (UNW_A64_SC + 31 * 8)
#define UNW_A64_SC_PC (UNW_A64_SC + 32 * 8)
/*
 * The mask that strips a pointer authentication code from a user return address
 * when the kernel's is unknown: a 48-bit user VA (a PAC in bits 54..48; bit 55 is 0
 * for user addresses, the top byte ignored). The kernel's own (NT_ARM_PAC_MASK;
 * 52 bits on Debian's 6.12 on a CPU with LVA) replaces it: user/unwind/unwind_pac.c,
 * and unw_ra_mask in arm64 BPF objects.
 */
#define UNW_A64_RA_MASK ((1ULL << 48) - 1)

#endif /* __UNWIND_H */
