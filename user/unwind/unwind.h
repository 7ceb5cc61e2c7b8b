/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Unwinding user stacks without frame pointers: the row tables built from an
 * object's CFI (unwind_table.c, its CFI pre-scan unwind_cfi_scan.c and its
 * row builder unwind_rows.c), the user-space evaluator of those rows
 * (unwind_eval.c, the perf_event fallback's), and the store that lays tables
 * out in one array of rows and describes a process's mappings for either
 * evaluator (unwind_store.c). The format is bpf/unwind.h.
 */
#ifndef __TK_UNWIND_H
#define __TK_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind.h"
#include "tracekit/common.h"	/* the rows and the process entries */

/* ---- tables (unwind_table.c) ------------------------------------------------------------ */

enum tk_unw_source {
	TK_UNW_SRC_NONE = 0,		/* the object has no CFI */
	TK_UNW_SRC_EH_FRAME,		/* its own .eh_frame */
	TK_UNW_SRC_DEBUG_FRAME,		/* .debug_frame (its own, or its debug file's) */
	TK_UNW_SRC_VDSO,		/* none: arm64's vDSO, rows of its own (unwind_table.c) */
};

struct tk_unw_table_stats {
	uint64_t fdes;			/* FDEs read */
	uint64_t rows;			/* rows kept (after merging equal neighbours) */
	uint64_t unsupported;		/* rows of kind UNW_ROW_UNSUPPORTED */
	uint64_t signal;		/* signal-trampoline rows */
	uint64_t plt;			/* PLT rows */
	uint64_t deref;			/* realigned-stack (DRAP) rows */
	uint64_t build_ns;		/* time to build */
};

struct tk_unw_table {
	uint64_t base;			/* row pc + base = ELF virtual address */
	struct unw_row *rows;		/* sorted by pc */
	size_t nr;
	enum tk_unw_source source;
	struct tk_unw_table_stats st;
};

struct tk_elf;

/*
 * The absolute ceiling of one object's build, whatever its size: a CFI
 * section larger than this is not read; a build stops past this many bytes
 * of CFI program run (libdw runs an FDE's program from its start at every
 * row: 18-30 times the section for compiled code) or past this time. Such
 * an object gets no table: its frames go by the frame pointer.
 */
#define TK_UNW_MAX_CFI_BYTES (64ULL << 20)
#define TK_UNW_MAX_WORK (2ULL << 30)
#define TK_UNW_MAX_BUILD_NS 2000000000ULL

struct tk_unw_limits {
	uint64_t cfi_bytes;		/* of one CFI section */
	uint64_t work;			/* bytes of CFI program run */
	uint64_t build_ns;		/* time */
};
/* Lower (or restore, with NULL) the ceiling, for the whole process: tests only. */
void tk_unw_table__set_limits(const struct tk_unw_limits *l);
/* How often table builds have read the clock in this process (tests). */
uint64_t tk_unw_table__clock_reads(void);

/*
 * Build the rows of the object @elf from its .eh_frame, or from .debug_frame
 * (its own, or that of @debug: its separate debug file, NULL when none) when
 * it has no .eh_frame. An object without CFI gets a table with no rows and
 * source TK_UNW_SRC_NONE (not an error). Returns 0 or a negative errno:
 * -E2BIG when the build passed the ceiling above (no table: counted by the
 * caller as unwind_cfi_over_limit).
 */
int tk_unw_table__build(struct tk_elf *elf, struct tk_elf *debug, struct tk_unw_table **out);
void tk_unw_table__free(struct tk_unw_table *t);
/* The row covering ELF virtual address @vaddr, or NULL. */
/* NULL too when the table's rows were let go (tk_unw_store__release_rows). */
const struct unw_row *tk_unw_table__find(const struct tk_unw_table *t, uint64_t vaddr);

/* ---- the user-space evaluator (unwind_eval.c) ------------------------------------------- */

struct tk_unw_regs {
	uint64_t ip;
	uint64_t sp;
	uint64_t bp;			/* rbp; arm64: x29 */
	uint64_t lr;			/* arm64: x30 (the leaf's return address until saved) */
	/*
	 * arm64: the mask that strips a return address's pointer authentication
	 * code (UNW_A64_RA_MASK); 0: none, the stack is x86-64's. Nonzero also
	 * says the walk is arm64's: arm64 rows apply (an x86 walk takes them as
	 * UNSUPPORTED) and a frame record does not give the caller's sp.
	 */
	uint64_t ra_mask;
};

/*
 * This machine's ra_mask (unwind_pac.c): x86-64 0; arm64 the bits below the PAC the kernel
 * reports (NT_ARM_PAC_MASK, read once from a child of our own under PTRACE_TRACEME), else
 * 48 bits. *@how (may be NULL): the profile's comment saying which; NULL on x86-64.
 */
uint64_t tk_unw_ra_mask(const char **how);
/* The strip mask of NT_ARM_PAC_MASK's insn_mask (GENMASK(54, b), 32 <= b): 0 when not one. */
uint64_t tk_unw_ra_mask_of(uint64_t insn_mask);

/*
 * Reads @len bytes of the stack image at user address @addr into @buf;
 * returns 0, or a negative errno when the image does not hold them.
 */
typedef int (*tk_unw_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Walk the stack of a process described by @proc (NULL: no entry: frame
 * pointers only, UNW_C_NO_PROC) over the rows array @rows of @nr_rows, from
 * @regs, exactly as the BPF evaluator does. Writes up to @max addresses (the
 * leaf first, then return addresses, as bpf_get_stack) to @ips and returns
 * their count; *causes gets the enum unw_cause bits of the walk, and
 * @frames (may be NULL) [0] the frames found by a row, [1] those by rbp.
 */
int tk_unw__walk(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		 const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx, uint64_t *ips,
		 int max, uint32_t *causes, uint32_t frames[2]);

/*
 * CPython's -X perf trampolines (3.12+), which have no CFI and keep no frame
 * pointer: a frame whose return address follows their "call *%rcx" and
 * whose code matches @shape (enum unw_py_tramp, bpf/unwind_py.h) is taken
 * by their layout (the caller's frame at sp + 16), as the BPF evaluator
 * does. @read_code reads the process's code (not the stack image).
 */
struct tk_unw_tramp {
	int shape;
	tk_unw_read_fn read_code;
	void *ctx;
	uint32_t frames;		/* out: frames taken so */
};

/* tk_unw__walk, with the trampolines of @t (NULL: none). */
int tk_unw__walk_tramp(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		       const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx,
		       uint64_t *ips, int max, uint32_t *causes, uint32_t frames[2],
		       struct tk_unw_tramp *t);

/*
 * tk_unw__walk_tramp, with each frame's stack pointer in @sps too (@max of
 * them): frame i spans [sps[i], sps[i + 1]), its CFA being the next frame's
 * sp. tracekit stacks tells a CPython activation's shim frame by it, as the
 * BPF evaluator does (bpf/unwind_py.bpf.h).
 */
int tk_unw__walk_sps(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		     const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx, uint64_t *ips,
		     uint64_t *sps, int max, uint32_t *causes, struct tk_unw_tramp *t);

/* ---- the store (unwind_store.c) --------------------------------------------------------- */

struct tk_unw_store;
struct tk_symbolizer;

/*
 * A store of @cap rows. @mem: where rows go (the BPF rows array mapped into
 * memory), or NULL for memory of its own. Returns 0 or a negative errno.
 */
/* Rows that fit in @bytes of unwind memory (the options' unwind_mem); 0 stays 0 (the default). */
static inline size_t tk_unw__rows_for(size_t bytes)
{
	return bytes / sizeof(struct unw_row);
}
int tk_unw_store__new(struct unw_row *mem, size_t cap, struct tk_unw_store **out);
void tk_unw_store__free(struct tk_unw_store *s);
/*
 * Make rows [0, @rows) of @mem usable (the BPF backend makes and maps chunks):
 * 0 and *@mapped the rows usable now (>= @rows), or a negative errno.
 */
typedef int (*tk_unw_grow_fn)(void *ctx, size_t rows, size_t *mapped);
/*
 * The store's memory is made in chunks of @chunk rows by @grow, as tables
 * arrive; @mapped rows are usable already. A table of at most @chunk rows is
 * then laid out inside one chunk (the first with room at its end, else a
 * fresh one), a larger one over consecutive chunks after the last. A table
 * @grow cannot make room for is counted as not fitting.
 */
void tk_unw_store__set_grow(struct tk_unw_store *s, size_t chunk, size_t mapped,
			    tk_unw_grow_fn grow, void *ctx);
/*
 * Tables laid out in @s let their own copy of the rows go (t->rows freed,
 * NULL; nr, base and stats stay): for a store that is the only reader of its
 * symbolizer's tables (the BPF backends': one symbolizer, one store each).
 */
void tk_unw_store__release_rows(struct tk_unw_store *s, bool on);
/*
 * Where @t's rows start in the store (*@start), laid out the first time it
 * is asked: 0, or -ENOSPC when it did not fit (counted once, as full).
 */
int tk_unw_store__place(struct tk_unw_store *s, const struct tk_unw_table *t, uint32_t *start);
/* The rows array (to give tk_unw__walk) and the rows in use. */
const struct unw_row *tk_unw_store__rows(const struct tk_unw_store *s, size_t *nr);

struct tk_unw_store_stats {
	uint64_t tables;		/* distinct tables laid out */
	uint64_t rows;			/* the end of the rows laid out (free rows included) */
	uint64_t skipped;		/* rows below it free (at chunks' ends) */
	uint64_t mapped;		/* rows of memory made so far */
	uint64_t cap;			/* rows the store can hold (the ceiling) */
	uint64_t full;			/* tables that did not fit (their mappings: by rbp) */
	uint64_t build_ns;		/* time spent building tables */
	uint64_t overflowed;		/* entries of processes past UNW_MAX_MAPS mappings */
	uint64_t left_out;		/* the most mappings one of them left out */
};
void tk_unw_store__stats(const struct tk_unw_store *s, struct tk_unw_store_stats *st);

/*
 * Describe (@pid, @gen), as the symbolizer captured it, in @p: its executable
 * file mappings (and the vdso) with their tables laid out in the store.
 * Returns 0, -ESRCH when the symbolizer has no capture of it.
 */
int tk_unw_store__proc(struct tk_unw_store *s, struct tk_symbolizer *sym, uint32_t pid,
		       uint32_t gen, struct unw_proc *p);

struct tk_sym_map_info;

/*
 * Which of a process's @nr executable mappings (@maps, in address order) its
 * entry keeps: all of them up to UNW_MAX_MAPS; past that, the executable,
 * libc, ld.so and the vdso, then language runtimes (libpython, libjvm, ...)
 * and C++'s, then the largest. Sets @keep[i]; returns the count kept, or
 * -ENOMEM. The entry of a process past UNW_MAX_MAPS is marked
 * UNW_PROC_OVERFLOW.
 */
int tk_unw__pick_maps(const struct tk_sym_map_info *maps, size_t nr, bool *keep);

/* ---- what a profile says of its unwinding (unwind_store.c) ------------------------------ */

struct tk_profile;
struct tk_py;

struct tk_unw_info {
	bool in_kernel;			/* the BPF evaluator; else the user-space one */
	struct tk_unw_store_stats store;
	uint64_t procs;			/* process entries written */
	uint64_t procs_full;		/* entries that found no room */
	uint64_t procs_cap;
	uint64_t recaptures;		/* processes captured again after a miss */
	uint64_t misses_dropped;	/* miss events with no room to wait (BPF sends again) */
	uint64_t memory;		/* bytes of kernel memory the entries may take at most */
	uint64_t chunks;		/* rows chunks made (of chunks_max, the ceiling) */
	uint64_t chunks_max;
	uint64_t chunk_bytes;
	bool procs_prealloc;		/* the entries' map is preallocated whole */
	bool python;			/* Python frames are walked (the kernel knows fsbase) */
	const char *python_off;		/* else why not; NULL: not asked */
	struct tk_py *py;		/* their names and counters (read when reported); NULL */
};

/*
 * Write the walk counters @cnt (enum unw_counter) into @p: each cause as a
 * loss counter ("unwind_..."), and a note with frames, whole stacks, tables
 * and memory. @info may be NULL (frame pointers only).
 */
void tk_unw__report(struct tk_profile *p, const uint64_t cnt[UNW_CNT__COUNT],
		    const struct tk_unw_info *info);
/*
 * Write into @p the objects whose table build passed the absolute ceiling
 * (tk_unw_table__build's -E2BIG; the symbolizer's unwind_over_limit), as
 * the loss counter "unwind_cfi_over_limit" (unwind_table.c).
 */
void tk_unw_table__report(struct tk_profile *p, uint64_t over_limit);
/* The loss-counter name of counter @c (UNW_CNT_FP and after), or NULL. */
const char *tk_unw__loss_name(enum unw_counter c);

/* ---- what a user asks for -------------------------------------------------------------- */

/* enum tk_unwind_mode: include/tracekit/common.h */

/* tk_unwind_mode__parse, __name: include/tracekit/common.h */

#endif /* __TK_UNWIND_H */
