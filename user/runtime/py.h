/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * CPython 3.9-3.14 (x86-64 and arm64, glibc): what the unwinder needs to walk Python
 * frames in the kernel (bpf/unwind_py.h), and what symbolization needs to
 * name them. One struct tk_py per symbolizer (tk_symbolizer__py):
 *
 *  - offsets (py_offsets.c): a table per minor version, _Py_DebugOffsets
 *    (3.13+, the interpreter's own, in _PyRuntime), and the check of the
 *    table against the type objects' tp_members of the running binary;
 *  - line tables (py_linetab.c): the three formats (3.9 co_lnotab, 3.10
 *    co_linetable, 3.11+ the location table), read from a process's memory
 *    and so outside input;
 *  - detection (py_detect.c): the object defining _PyRuntime among a
 *    captured process's mappings, its version, the interpreter loop's
 *    ranges (the symbol and the parts gcc split off it), -X perf's
 *    trampoline shape, the pthread key, and the check that every thread
 *    state of the interpreter is found back through its thread's key slot;
 *  - names (py_names.c): a code object's id (given in the kernel) to its
 *    qualified name, file, first line and line table, read from the
 *    process's memory when the id is first told, and checked to be the
 *    same code object the kernel saw.
 */
#ifndef __TK_RUNTIME_PY_H
#define __TK_RUNTIME_PY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind_py.h"

#define TK_PY_MIN_MINOR 9
#define TK_PY_MAX_MINOR 14

/* ---- offsets (py_offsets.c) ----------------------------------------------------------- */

struct tk_py_offsets {
	int minor;
	uint32_t rt_tss;		/* _PyRuntime: autoTSSkey (Py_tss_t {int init; key}) */
	uint32_t rt_interp_head;	/* _PyRuntime: interpreters.head */
	uint32_t interp_threads;	/* PyInterpreterState: threads.head */
	uint32_t ts_next;		/* PyThreadState */
	uint32_t ts_thread_id;
	uint32_t ts_frame;		/* frame (<= 3.10), cframe (3.11, 3.12), current_frame */
	uint32_t cf_current;		/* _PyCFrame.current_frame (via_cframe) */
	bool via_cframe;
	uint32_t fr_prev;		/* f_back / previous */
	uint32_t fr_code;		/* f_code / f_executable */
	uint32_t fr_instr;		/* f_lasti / prev_instr / instr_ptr */
	uint32_t fr_owner;		/* 3.12+ */
	uint32_t fr_entry;		/* 3.11: is_entry */
	uint32_t fr_size;		/* bytes to read: past every field used */
	uint32_t co_filename;
	uint32_t co_name;
	uint32_t co_qualname;		/* 0: none (<= 3.10) */
	uint32_t co_linetable;		/* co_lnotab (3.9) */
	uint32_t co_firstlineno;
	uint32_t co_code;		/* co_code_adaptive (3.11+) */
	uint32_t str_state;		/* PyASCIIObject.state */
	uint32_t str_length;
	uint32_t str_ascii;		/* sizeof(PyASCIIObject): a compact ASCII str's data */
	uint32_t str_compact;		/* sizeof(PyCompactUnicodeObject) */
	uint32_t bytes_size;		/* PyBytesObject.ob_size */
	uint32_t bytes_data;		/* .ob_sval */
	uint8_t cstack_owner;		/* 3.12+: FRAME_OWNED_BY_CSTACK */
	uint8_t exec_tag;		/* 3.14: f_executable is a tagged _PyStackRef */
};

/* The built-in table of minor version @minor (9..14): 0, -ENOENT for another. */
int tk_py_offsets__table(int minor, struct tk_py_offsets *o);

/*
 * The offsets from _Py_DebugOffsets, the first @len bytes of _PyRuntime
 * (3.13+): the cookie "xdebugpy", a version whose major.minor is 3.@minor
 * (*@version gets it), a GIL build; every offset bounded. The fields it
 * does not carry (the key, the string sizes of older versions) come from
 * the table. 0, -ENOENT (no cookie: not 3.13+), -ENOTSUP (free-threaded,
 * another minor, an unknown layout) or -ERANGE (an offset out of bounds),
 * with @why said.
 */
int tk_py_offsets__from_debug(const void *buf, size_t len, int minor, uint64_t *version,
			      struct tk_py_offsets *o, char *why, size_t why_sz);

/* A type's member (PyMemberDef) as the binary states it. */
struct tk_py_member {
	const char *name;
	uint64_t offset;
};

/*
 * Check @o against PyCode_Type's (and, <= 3.9, PyFrame_Type's) members: 0
 * when every member the table names and the binary has agrees, -EINVAL
 * with @why naming the first that does not. @frame may be NULL.
 */
int tk_py_offsets__check_members(const struct tk_py_offsets *o, const struct tk_py_member *code,
				 size_t nr_code, const struct tk_py_member *frame, size_t nr_frame,
				 char *why, size_t why_sz);

/* Fill the kernel's entry (offsets part) from @o. */
void tk_py_offsets__to_bpf(const struct tk_py_offsets *o, struct unw_py *out);

/* ---- line tables (py_linetab.c) ------------------------------------------------------ */

/*
 * The line of code unit @idx of a code object of minor version @minor
 * whose first line is @first and line table is @tab (@len bytes). Returns
 * 0 with *@line (0 when the instruction has no line), -ENOENT when the
 * table ends before @idx, -EINVAL for a minor version it does not know.
 * Any bytes are safe: a table is read from a process's memory.
 */
int tk_py_line(int minor, const uint8_t *tab, size_t len, int first, uint32_t idx, int *line);

/* ---- a process (py_detect.c, py_names.c) --------------------------------------------- */

struct tk_py;
struct tk_symbolizer;

/* What was found of a process: for caps -p, notes and tests. */
struct tk_py_info {
	bool found;			/* an object defines _PyRuntime */
	bool ready;			/* the kernel entry is written: frames are walked */
	int minor;
	uint32_t version;		/* PY_VERSION_HEX; minor only (0x030X0000) for 3.9/3.10 */
	char module[256];		/* the object defining _PyRuntime */
	bool shared;			/* it is a shared library (libpython) */
	bool debug_offsets;		/* offsets from _Py_DebugOffsets (else the table) */
	bool members_checked;		/* the table agreed with the binary's tp_members */
	int ranges;			/* interpreter-loop ranges */
	bool split;			/* some are parts gcc split off the loop */
	int tramp;			/* enum unw_py_tramp */
	uint32_t key;			/* the pthread key */
	int threads;			/* thread states in the interpreter's list */
	int threads_found;		/* of them, found back through their thread's key slot */
	char why[200];			/* when not ready: why */
};

struct tk_py *tk_py__new(void);
void tk_py__free(struct tk_py *py);

/*
 * Find CPython in (@pid, @gen) as @sym captured it, check it, and fill
 * @out for the kernel. Returns 0 (ready), -ENOENT (no CPython), -EAGAIN
 * (CPython not initialised yet: try again later), -ENOTSUP (a version or
 * layout it does not know, or a check failed: counted as
 * python_unknown_version), another negative errno. @info (may be NULL)
 * says what was found in any case.
 */
int tk_py__detect(struct tk_py *py, struct tk_symbolizer *sym, uint32_t pid, uint32_t gen,
		  struct unw_py *out, struct tk_py_info *info);

/* A new code object's id from the kernel: read its names now, while the process lives. */
void tk_py__on_event(struct tk_py *py, const struct unw_py_event *e);

/* A Python frame (UNW_PY_IS_REC) named. */
struct tk_py_frame {
	const char *name;		/* qualified name; NULL: unreadable */
	const char *file;
	int first_line;
	int line;			/* 0: unknown */
};

/*
 * Name @rec of process @pid: 0, or -ENOENT when its names could not be
 * read (the name is then a placeholder, counted as python_name_unreadable).
 * Strings live as long as @py.
 */
int tk_py__frame(struct tk_py *py, uint32_t pid, uint64_t rec, struct tk_py_frame *out);

/* The process ended: its names and interpreter ranges stay (its samples are still to name). */
void tk_py__forget(struct tk_py *py, uint32_t pid);

struct tk_py_stats {
	uint64_t processes;		/* processes found running CPython */
	uint64_t unknown_version;	/* processes with CPython tracekit cannot walk */
	uint64_t ids;			/* code objects told by the kernel */
	uint64_t names;			/* of them, named */
	uint64_t name_unreadable;	/* frames named "[python: ...]" for lack of names */
	uint64_t line_unknown;		/* frames whose line could not be decoded */
	uint64_t names_dropped;		/* ids past the memory bound, not kept */
	uint64_t bytes;			/* memory the names take */
	uint64_t perf_frames_unavailable;	/* perf backend: samples in the loop */
	char last_unknown[200];		/* why the last unknown version was refused */
};
void tk_py__stats(const struct tk_py *py, struct tk_py_stats *st);
/* The perf backend saw @n samples running Python code it cannot name. */
void tk_py__count_unavailable(struct tk_py *py, uint64_t n);

/*
 * Whether user address @addr of (@pid, @gen) lies in its interpreter loop
 * (the symbol or a part gcc split off it, which no symbol names).
 */
bool tk_py__in_loop(struct tk_py *py, uint32_t pid, uint32_t gen, uint64_t addr);

/* The -X perf trampolines' shape of (@pid, @gen)'s interpreter (enum unw_py_tramp; 0: none). */
int tk_py__tramp(struct tk_py *py, uint32_t pid, uint32_t gen);
/*
 * Read @len (<= 8) bytes of @pid's code at @addr, from a small cache of what
 * was read before (code does not change under a trampoline): 0 or -errno.
 */
int tk_py__read_code(struct tk_py *py, uint32_t pid, uint64_t addr, void *buf, size_t len);

/* ---- a thread's frames read from user space (py_walk.c): tracekit stacks --------------- */

/* Reads @len bytes at @addr of the process: 0 or a negative errno. */
typedef int (*tk_py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct tk_py_walk {
	const struct unw_py *py;
	tk_py_read_fn read;
	void *ctx;
	uint64_t cur;			/* the next frame of the chain */
	int state;			/* 1: a chain to walk; 2: none left; 3: cut */
	uint32_t causes;		/* enum unw_py_cause */
	uint32_t frames, max;
};

/* A Python frame as walked: its code object and instruction index (UNW_PY_IDX_*). */
struct tk_py_wframe {
	uint64_t code;
	uint32_t idx;
};

/*
 * Begin a walk of the thread whose PyThreadState is at @tstate (0: none, a
 * cause), in a process of entry @py (tk_py__detect's), through @read; at
 * most @max Python frames in all.
 */
void tk_py_walk__begin(struct tk_py_walk *w, const struct unw_py *py, tk_py_read_fn read,
		       void *ctx, uint64_t tstate, uint32_t max);
/*
 * The Python frames (newest first, at most @max) of the activation of the
 * next interpreter-loop native frame, leaf-ward from the last one asked,
 * whose stack is [@sp, @cfa): their count (0: none, a cause may be set).
 */
int tk_py_walk__activation(struct tk_py_walk *w, uint64_t sp, uint64_t cfa,
			   struct tk_py_wframe *out, int max);
/* The native walk ended (@whole: at its outermost frame): the walk's causes. */
uint32_t tk_py_walk__end(struct tk_py_walk *w, bool whole);

/* A thread state of the interpreter's list, and its thread as glibc's pthread says. */
struct tk_py_tstate {
	uint64_t tstate;
	uint64_t thread_id;		/* its thread's pthread_t (== fsbase); 0 unreadable */
	int32_t tid;			/* struct pthread.tid, as the process sees it; 0 unknown
					   (exiting), another value unchecked: the caller checks */
};
/*
 * The thread states of @pid's interpreter (tk_py__detect found it ready):
 * their count (<= @max), -ENOENT (not ready), -EFAULT (the list unreadable),
 * -E2BIG (longer than @max).
 */
int tk_py__thread_states(struct tk_py *py, uint32_t pid, struct tk_py_tstate *out, size_t max);

/*
 * The record (bpf/unwind_py.h) of code object @code at index @idx in @pid: an
 * id user space gives (per process, address and stamp, as the kernel would),
 * its names read at once. 0, or a negative errno with *@rec of id 0 (then
 * named "[python: ...]" and counted). Ids of user space and of the kernel are
 * not mixed in one struct tk_py: tracekit stacks has its own.
 */
int tk_py__code_rec(struct tk_py *py, uint32_t pid, const struct unw_py *u, uint64_t code,
		    uint32_t idx, uint64_t *rec);

#endif /* __TK_RUNTIME_PY_H */
