/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The symbolizer's state, shared by its parts; not part of the API:
 * symbolize.c (the session, its processes, lookups), symbolize_files.c (the
 * cache of ELF indexes by file and build-id, the vdso) and symbolize_maps.c
 * (a process's mappings: captured from /proc, or added one by one).
 */
#ifndef __TK_SYMBOLIZE_STATE_H
#define __TK_SYMBOLIZE_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hashmap.h"
#include "proc/mapfile.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"

#define MAX_VDSO 4		/* distinct vdso images (64-bit, 32-bit, x32) */

struct sym_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	const char *module;		/* interned */
	struct tk_elf_index *idx;	/* NULL: nothing to read names from */
	bool jit;			/* executable and of no file: JIT code ("[jit]") */
};

struct sym_jit;

struct sym_proc {
	uint32_t pid;
	uint32_t gen;
	bool captured;
	const char *exe;		/* PID/exe when captured (interned); NULL: unknown */
	bool exe_tried;
	struct sym_map *maps;		/* sorted by start, disjoint */
	size_t nr;
	int64_t recapture_due_ns;	/* no re-capture at a lookup before (CLOCK_MONOTONIC) */
	/* what its perf map file needs, learnt while it lives (symbolize_jit.c) */
	bool ns_known;
	bool own_root;			/* PID/root is our "/": the file outlives it in /tmp */
	uint32_t nspid;			/* its pid in its own namespace */
	uint32_t uid[2];		/* real and effective: who may own the file (and root) */
	struct sym_jit *jit;		/* its perf map, once looked for; NULL: not yet */
	/* JIT code: what names it, learnt from its mappings (symbolize_jit.c) */
	uint32_t jit_maps;		/* executable mappings of no file */
	const char *jitdump;		/* a jit-N.dump it maps (interned), or NULL */
	struct tk_file_id jitdump_id;	/* that file's identity, as its maps line gave it */
	bool jvm;			/* it maps libjvm.so: its perf map can be asked for */
	struct sym_jvm *jvm_ask;	/* asking it (symbolize_jvm.c); NULL: not yet */
};

struct file_key {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;		/* with size: an inode reused by another file is not it */
};

/* Records of the tables (core/hashmap.h): each starts with a pointer, never NULL. */
struct proc_ent {
	struct sym_proc *p;
};

struct file_ent {
	struct tk_elf_index *idx;
	struct file_key key;
};

struct build_id_ent {
	struct tk_elf_index *idx;	/* the best one for its build-id */
};

struct vdso_ent {
	uint64_t size;
	struct tk_elf_index *idx;
};

struct tk_symbolizer {
	char proc_root[PATH_MAX];
	char debug_root[PATH_MAX];
	struct tk_hashmap procs;	/* struct proc_ent, by (pid, gen) */
	struct tk_hashmap files;	/* struct file_ent, by struct file_key */
	struct tk_hashmap build_ids;	/* struct build_id_ent, by build-id */
	struct tk_strset strings;	/* module names */
	struct tk_elf_index **indexes;	/* all of them, owned here */
	size_t nr_indexes;
	size_t cap_indexes;
	struct vdso_ent vdso[MAX_VDSO];
	size_t nr_vdso;
	struct sym_proc *last;		/* the process of the previous lookup */
	struct tk_ksyms *ksyms;
	int ksyms_err;
	bool ksyms_tried;
	struct tk_ksyms_resolved *kres;	/* tk_symbolizer__kernel_prepare's, or NULL */
	bool kres_done;			/* it ran once: the next time, the whole table */
	bool unwind;			/* build unwind rows with each index */
	int64_t tick_due_ns;		/* tk_symbolizer__tick's next look (CLOCK_MONOTONIC) */
	bool jit_ask;			/* ask JVMs for their perf maps (symbolize_jvm.c) */
	tk_sym_note_fn note;		/* where what is done to a JVM is said; NULL: nowhere */
	void *note_ctx;
	char jvm_failure[256];		/* the last JVM not asked, or that failed, and why */
	struct tk_symbolizer_stats st;
	/* ended processes, dropped by tk_symbolizer__prune: queue[i] is retirement base + i */
	struct proc_key_q { uint32_t pid, gen; } *retired;
	size_t nr_retired, cap_retired;
	uint64_t retired_base;
	struct tk_py *py;		/* Python frames' names (runtime/py.h); made on first use */
};

/* symbolize.c: the process (@pid, @gen), made empty when missing; NULL: no memory. */
struct sym_proc *tk_symbolizer__get_proc(struct tk_symbolizer *s, uint32_t pid, uint32_t gen);

/* symbolize_files.c: set up and free the file and build-id tables (and the indexes). */
void tk_symbolizer__init_files(struct tk_symbolizer *s);
void tk_symbolizer__free_files(struct tk_symbolizer *s);
/*
 * The index of the file mapped at [@start, @end) by @pid from @path (of
 * identity @id when known, else NULL), reached as tk_mapfile__find() finds
 * it; NULL when none opens.
 */
struct tk_elf_index *tk_symbolizer__index_mapping(struct tk_symbolizer *s, uint32_t pid,
						  uint64_t start, uint64_t end, const char *path,
						  const struct tk_file_id *id);
/* The index of @pid's [vdso] at [@start, @end), shared by every vdso of its size; or NULL. */
struct tk_elf_index *tk_symbolizer__index_vdso(struct tk_symbolizer *s, uint32_t pid,
					       uint64_t start, uint64_t end);

/*
 * symbolize_maps.c: read @p's maps again for an address in none of them (a
 * library loaded since), at most once a second, adding the mappings that
 * overlap none it has; only while it lives and is still the image captured.
 * 0 when the address may now be found, else a negative errno.
 */
int tk_symbolizer__recapture(struct tk_symbolizer *s, struct sym_proc *p);

/* symbolize_jit.c: what @p's perf map file needs, while it lives (at its capture). */
void tk_symbolizer__learn_ns(struct tk_symbolizer *s, struct sym_proc *p);
/*
 * @addr from @p's perf map file (PID/root/tmp/perf-NSPID.map), read at the
 * first lookup and again when it grew, at most once a second: 0 with
 * function and module ("[perf-NSPID.map]") filled, or -ESRCH.
 */
int tk_symbolizer__jit(struct tk_symbolizer *s, struct sym_proc *p, uint64_t addr,
		       struct tk_sym_frame *out);
/* What a mapped file is to JIT code: a jitdump (names, no code), a JVM's library, neither (0). */
enum { TK_JIT_FILE_JITDUMP = 1, TK_JIT_FILE_JVM };
int tk_symbolizer__jit_file(const char *path);
/*
 * Read @p's perf map and jitdump again if they grew, at most once a second
 * unless @force; nothing for a process with no JIT code.
 */
void tk_symbolizer__jit_refresh(struct tk_symbolizer *s, struct sym_proc *p, bool force);
/* Add @p's perf map counters to @st. */
void tk_symbolizer__jit_stats(const struct sym_proc *p, struct tk_symbolizer_stats *st);
void tk_symbolizer__free_jit(struct sym_proc *p);
/* Read @p's perf map from its start now: the JVM just wrote it anew. */
void tk_symbolizer__jit_reread(struct tk_symbolizer *s, struct sym_proc *p);

/*
 * symbolize_jvm.c: asking a JVM for its perf map (proc/jvm.h). The tick asks
 * each JVM a second after it is first seen, then after 2, 4, 8, 16 and every
 * 30 seconds, without waiting (the child's answer is taken at a later tick);
 * a lookup that finds a JVM's code unnamed asks at once and waits (at most
 * once a second). A JVM that must not be signalled, or refused, is not asked
 * again. Each is said once through the symbolizer's note function.
 */
void tk_symbolizer__jvm_tick(struct tk_symbolizer *s, struct sym_proc *p);
/* True when @p's JVM was asked now and wrote its perf map (read it again). */
bool tk_symbolizer__jvm_ask_now(struct tk_symbolizer *s, struct sym_proc *p);
/* Wait for an ask in flight to end (its deadline at most), and take its answer. */
void tk_symbolizer__jvm_settle(struct tk_symbolizer *s, struct sym_proc *p);
void tk_symbolizer__free_jvm(struct sym_proc *p);

#endif /* __TK_SYMBOLIZE_STATE_H */
