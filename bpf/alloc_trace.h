/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records and keys shared by bpf/alloc_trace.bpf.c and user/alloc/alloc_trace*.c. */
#ifndef __ALLOC_TRACE_H
#define __ALLOC_TRACE_H

#define AT_MAX_FRAMES 127
#define AT_MAX_RANGES 48		/* hooked functions' bodies, see nested() */
/*
 * Kernels without attach cookies: programs alloc_enter_s0 … s47, one per
 * hooked allocating function, their cookies in slot_cookies[] (a power of two
 * long, for the verifier's bound).
 */
#define AT_NR_SLOTS 48
#define AT_MAX_SLOTS 64
#define AT_RAND_BITS 12
#define AT_RAND_ENTRIES (1 << AT_RAND_BITS)	/* geometric intervals table */

/* Function kinds: the low byte of a uprobe's cookie (user/alloc/alloc_syms.h's order) */
enum at_kind {
	AT_MALLOC = 0,			/* size */
	AT_CALLOC,			/* nmemb, size */
	AT_REALLOC,			/* ptr, size */
	AT_REALLOCARRAY,		/* ptr, nmemb, size */
	AT_POSIX_MEMALIGN,		/* void **out, alignment, size */
	AT_MEMALIGN,			/* alignment, size */
	AT_PVALLOC,			/* size, rounded up to a page */
	AT_FREE,			/* ptr */
	AT_MARKER_ALLOC,		/* libtkalloc.so: ptr, size */
	AT_MARKER_FREE,			/* ptr */
};
/* cookie = vaddr of the function in its file << 8 | kind */
#define AT_COOKIE(vaddr, kind) ((__u64)(vaddr) << 8 | (kind))

enum at_rec_type {
	AT_REC_ALLOC = 1,		/* struct at_alloc */
	AT_REC_FREE,			/* struct at_free */
	AT_REC_EXEC,			/* struct at_proc_event: a tracked process exec'd */
	AT_REC_UNWIND_MISS,		/* struct at_free with ptr 0: an address in no mapping the
					   unwinder knows (dlopen since the capture): capture again */
	AT_REC_GONE,			/* struct at_proc_event: the last thread of a tracked
					   process exited */
};

/*
 * Exec generations: every record names the generation of its process, so a
 * stack taken before an exec is named from the old image and an address the
 * new image reuses is not the old image's object. BPF hands them out (never
 * 0, never counted again from 0: a later process with the pid is new);
 * user space sets 0 for the -p process, whose maps it captured at start.
 */
#define AT_GEN_NONE 0xffffffffu		/* at_proc_event.gen: no generation had begun */

/* A tracked process (tgid): its current generation. */
struct at_proc {
	__u32 gen;
	__u32 announced;		/* a record of gen woke the reader: its maps are read */
};

enum at_flags {
	AT_F_TRUNCATED = 1 << 0,
	AT_F_STACK_LOST = 1 << 1,
	AT_F_UNTRACKED = 1 << 2,	/* the live map was full: its free will not be seen, so
					   user space counts it as allocated, never as in use */
};

/* An allocation; sent with only nr_ips frames (the record is cut after them). */
struct at_alloc {
	__u32 type;			/* AT_REC_ALLOC */
	__u32 pid;
	__u32 tid;
	__u32 gen;			/* of pid */
	__u16 nr_ips;
	__u16 flags;			/* enum at_flags */
	__u32 pad;
	__u64 ptr;
	__u64 size;
	__u64 ts_ns;
	char comm[16];
	__u64 ips[AT_MAX_FRAMES];	/* leaf first: the return address into the caller */
};

struct at_free {
	__u32 type;			/* AT_REC_FREE, AT_REC_UNWIND_MISS */
	__u32 pid;
	__u32 gen;			/* the object's generation (that of pid at the free) */
	__u32 pad;
	__u64 ptr;
};

/* AT_REC_EXEC: generation gen ended and next_gen began; AT_REC_GONE: gen ended. */
struct at_proc_event {
	__u32 type;
	__u32 pid;
	__u32 gen;			/* AT_GEN_NONE: the process had no generation yet */
	__u32 next_gen;			/* AT_REC_EXEC only */
};

/* Growth mode: counts per (process, thread, kind, stack) */
enum at_growth_kind {
	AT_GROWTH_FAULT = 0,		/* = TK_GROWTH_FAULT ... */
	AT_GROWTH_BRK,
	AT_GROWTH_MMAP,
};

struct at_growth_key {
	__u32 pid;
	__u32 tid;
	__u32 kind;
	__u32 flags;			/* enum at_flags */
	__u32 gen;			/* of pid */
	__u32 pad;
	__u64 stack;			/* hash into the stacks map, 0: none */
	char comm[16];
};

struct at_growth_val {
	__u64 count;
	__u64 bytes;
};

struct at_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[AT_MAX_FRAMES];
};

/* A hooked function's body in its file's addresses: calls from it are nested */
struct at_range {
	__u64 lo;
	__u64 hi;
};

/* Counters in .bss, one slot per CPU (index & (AT_MAX_CPUS - 1)). */
#define AT_MAX_CPUS 256

/* Processes tracked at once (procs); an exited one leaves. */
#define AT_PROCS_MAX 8192

enum at_counter {
	AT_CNT_ALLOC_CALLS = 0,		/* allocating calls from outside the allocator */
	AT_CNT_FREE_CALLS,
	AT_CNT_NESTED,			/* calls from inside a hooked function: skipped */
	AT_CNT_SAMPLED,			/* records sent */
	AT_CNT_RINGBUF_FULL,
	AT_CNT_STACK_MAP_FULL,		/* growth: stacks or counts map full */
	AT_CNT_LIVE_MAP_FULL,
	AT_CNT_PENDING_MAP_FULL,
	AT_CNT_TRUNCATED,
	AT_CNT_STACK_ERRORS,
	AT_CNT_GROWTH,			/* growth events counted */
	AT_CNT_UNKNOWN_FREE,		/* full mode: a free of an object BPF does not remember */
	AT_CNT_LIVE_REPLACED,		/* an address allocated again before its free was seen */
	AT_CNT_PROC_MAP_FULL,		/* no room in procs: the process's records keep gen 0,
					   and its exec and exit release nothing */
	AT_CNT_FOLLOW_MAP_FULL,		/* a sample of a process pids had no room for: its
					   exec and exit are seen only through procs */
	AT_CNT_BRK_MAP_FULL,		/* a brk brk_old had no room for: growth not counted */
	AT_CNT__COUNT,
};

#endif /* __ALLOC_TRACE_H */
