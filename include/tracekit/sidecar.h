/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The sidecar: a program profiling its own CPU use, one pprof file per
 * period, written into a directory of its own.
 *
 * The contract (docs/design.md, "Embedding"):
 * - Disabled unless opts->enabled: then tk_sidecar__start() does nothing at
 *   all and returns TK_SIDECAR_DISABLED.
 * - Where it cannot run (perf_event_open refused, the directory unusable,
 *   ...) it returns TK_SIDECAR_UNSUPPORTED with the reason in @why: a no-op
 *   status, never an error the host must handle; it never aborts or exits.
 * - It changes nothing of the host: no signals reach the host's threads (its
 *   own thread blocks them all), no affinity, priority, rlimit, signal
 *   disposition or memory setting is touched. Its file descriptors are
 *   close-on-exec and children of the host are not sampled: a fork handler
 *   closes, in the child, the events of every running sidecar (any number).
 * - Output goes only to opts->dir: created with mode 0700 when missing,
 *   refused when it is a symbolic link, not a directory, not owned by the
 *   caller's effective uid or writable by others. Files are
 *   "cpu-YYYYmmddTHHMMSS-N.pb.gz" (the period's start, UTC; N counts the
 *   periods of this sidecar, and is raised past names already taken), each
 *   written whole under a temporary name and renamed into place.
 * - tk_sidecar__stop() writes the last (partial) period, joins the thread,
 *   closes every descriptor and frees everything: nothing is left running.
 *
 * How: perf_event self-sampling (software cpu-clock) of every thread of the
 * process, followed into threads created later; kernel frames when the
 * privileges allow (root, CAP_PERFMON or perf_event_paranoid < 2), user
 * frames otherwise. The sampling thread itself is not sampled.
 *
 * Heap profiles (opts.heap): where the host runs jemalloc with profiling on
 * (MALLOC_CONF=prof:true; opt.prof and prof.active are checked through
 * mallctl, found with dlsym as mallctl, je_mallctl or _rjem_mallctl), each
 * period also asks jemalloc for a dump (mallctl "prof.dump", from the
 * sidecar's thread) into a temporary file in opts.dir, converts it and
 * writes "heap-YYYYmmddTHHMMSS-N.pb.gz" (alloc_objects, alloc_space,
 * inuse_objects, inuse_space; the same naming rules) beside the cpu files,
 * then removes the dump. Without jemalloc or its profiling that part is a
 * no-op status (stats.heap UNSUPPORTED, stats.heap_why) and nothing else
 * changes. The sidecar never switches jemalloc's profiling on itself.
 */
#ifndef __TK_SIDECAR_H
#define __TK_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_sidecar_opts {
	size_t sz;		/* sizeof(struct tk_sidecar_opts); fields past it read as 0 */
	bool enabled;		/* false: do nothing (TK_SIDECAR_DISABLED) */
	const char *dir;	/* the output directory, the sidecar's own */
	int freq_hz;		/* samples per second per thread on CPU; default 99 */
	int period_s;		/* seconds per file; default 60 */
	/* fields added later; a caller built before them has a smaller .sz */
	bool heap;		/* also heap profiles, where jemalloc profiling is active */
};

/* The heap part (opts.heap); whatever it says, the CPU part is not affected. */
enum tk_sidecar_heap {
	TK_SIDECAR_HEAP_DISABLED,	/* not asked for (opts.heap false) */
	TK_SIDECAR_HEAP_UNSUPPORTED,	/* no jemalloc, or its profiling is off: heap_why */
	TK_SIDECAR_HEAP_RUNNING,	/* a heap file per period */
};

enum tk_sidecar_status {
	TK_SIDECAR_DISABLED,	/* not enabled: nothing was done */
	TK_SIDECAR_UNSUPPORTED,	/* cannot run here; @why says why; nothing is left behind */
	TK_SIDECAR_RUNNING,	/* *@out is the handle to stop it with */
};

struct tk_sidecar;

/*
 * Start profiling the calling process. *@out is set only when RUNNING (NULL
 * otherwise); @why (may be NULL) gets the reason when UNSUPPORTED.
 */
enum tk_sidecar_status tk_sidecar__start(const struct tk_sidecar_opts *opts,
					 struct tk_sidecar **out, char *why, size_t why_sz);
/* Flush the last period, join the thread, free everything. NULL is fine. */
void tk_sidecar__stop(struct tk_sidecar *s);

struct tk_sidecar_stats {
	uint64_t periods;	/* periods ended so far */
	uint64_t files;		/* files written */
	uint64_t samples;	/* samples in them */
	uint64_t lost;		/* lost records, truncated stacks, processes without maps */
	int last_error;		/* the last write failure (negative errno), 0 for none */
	/* fields added later */
	enum tk_sidecar_heap heap;	/* the heap part's status */
	char heap_why[160];		/* why it is UNSUPPORTED; "" otherwise */
	uint64_t heap_files;		/* heap files written */
	int heap_last_error;		/* the last heap dump or write failure, 0 for none */
};

/* What it has done so far; safe to call while it runs. */
void tk_sidecar__stats(const struct tk_sidecar *s, struct tk_sidecar_stats *st);
/* "disabled", "unsupported", "running" */
const char *tk_sidecar_status__name(enum tk_sidecar_status st);
/* "disabled", "unsupported", "running" */
const char *tk_sidecar_heap__name(enum tk_sidecar_heap st);

#endif /* __TK_SIDECAR_H */
