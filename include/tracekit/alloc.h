/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Allocation profiling: who allocates and does not free, as a heap profile
 * (alloc_objects, alloc_space, inuse_objects, inuse_space). Run it as a
 * session (tracekit/session.h: tk_session__open_alloc).
 */
#ifndef __TRACEKIT_ALLOC_H
#define __TRACEKIT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TK_ALLOC_DEFAULT_SAMPLE_BYTES (512 * 1024)

enum tk_alloc_mode {
	TK_ALLOC_MODE_SAMPLED = 0,	/* byte-weighted sampling, mean sample_bytes */
	TK_ALLOC_MODE_FULL,		/* every allocation and free */
	TK_ALLOC_MODE_GROWTH,		/* page faults, brk, mmap: no allocator hooks */
};

struct tk_alloc_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_alloc_opts) */
	enum tk_alloc_mode mode;
	uint64_t sample_bytes;		/* mean bytes between samples; 0: the default */
	int pid;			/* -p PID; 0 with argv */
	char *const *argv;		/* -- CMD ARGS (NULL-terminated), or NULL */
	enum tk_backend backend;	/* TK_BACKEND_NONE: choose from the snapshot */
	bool no_preload;		/* -- CMD: use uprobes, not the in-process sampler */
	const char *preload_dir;	/* where libtkalloc.so and libtkagent.so are;
					   NULL: beside the executable, else installed */
	const char *proc_root;		/* default "/proc" */
	enum tk_unwind_mode unwind;	/* user stacks: CFI where possible (auto), fp, cfi */
	size_t unwind_rows;		/* room for unwind rows; 0: the default (16 MiB) */
	uint64_t min_age_ns;		/* sessions: objects younger than this are left out
					   of inuse_* (jemalloc's dumps cannot tell) */
};

struct tk_alloc_stats {
	uint64_t allocs;		/* records (sampled or all) */
	uint64_t frees;			/* of recorded objects */
	uint64_t live;			/* recorded objects still live */
	uint64_t growth_events;
	uint64_t lost;			/* sum of loss counters */
	uint64_t calls;			/* allocator calls seen by BPF, when counted */
};

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_ALLOC_H */
