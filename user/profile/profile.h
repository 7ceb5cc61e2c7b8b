/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The profile model: what every collector produces after symbolization and
 * every writer renders. Shaped like pprof's profile.proto (mappings, functions,
 * locations, samples with one or more values) so the pprof writer is a
 * straight encoding, and the other writers walk the same arrays. Writers know
 * nothing of BPF or perf.
 */
#ifndef __TK_PROFILE_H
#define __TK_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tracekit/profile.h"

#define TK_PROFILE_MAX_VALUES 4

struct tk_value_type {
	const char *type;	/* "samples", "cpu" */
	const char *unit;	/* "count", "nanoseconds" */
};

struct tk_mapping {
	uint64_t id;		/* 1-based, as pprof wants */
	uint64_t start;		/* memory_start */
	uint64_t limit;		/* memory_limit */
	uint64_t offset;	/* file_offset */
	const char *file;	/* "/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel.kallsyms]" */
	const char *build_id;	/* hex, or NULL (both the profile's, one copy of each) */
	bool has_functions;	/* every location in it got a function name */
};

struct tk_function {
	uint64_t id;		/* 1-based */
	char *name;		/* "main", "do_syscall_64", or "libc.so.6+0x1234" when unresolved */
	char *filename;		/* source or object file; may be NULL */
	int64_t start_line;	/* the function's first line (Python frames); 0: unknown */
};

struct tk_location {
	uint64_t id;		/* 1-based */
	uint64_t mapping_id;	/* 0: none */
	uint64_t address;	/* the instruction address in the process (or kernel) */
	uint64_t function_id;	/* 0: none */
	bool kernel;		/* a kernel frame */
	int64_t line;		/* the line executing (Python frames); 0: unknown */
};

struct tk_sample {
	const uint32_t *location_ids;	/* leaf first, as pprof; 32 bits hold any id (at
					   most TK_HASHIDX_MAX + 1, core/hashmap.h) */
	uint32_t nr_locations;
	int64_t values[TK_PROFILE_MAX_VALUES];
	uint32_t pid;
	uint32_t tid;
	char comm[16];
	const char *thread_state;	/* off-CPU: how the thread left the CPU ("sleeping"),
					   a literal; NULL: none (pprof label thread_state) */
	bool began_before;		/* off-CPU: a wait that began before the capture
					   (label off_cpu_began "before_capture") */
	int64_t off_before_ns;		/* with began_before: off the CPU this long before the
					   capture (label off_cpu_before_ns); 0: unknown */
};

/* A named count of something lost or degraded; always written, even when 0. */
struct tk_loss {
	const char *name;	/* "ringbuf_reserve_failed", "stack_map_full", "truncated_stacks",
				   "unsymbolized_frames" ... */
	uint64_t count;
};

#define TK_PROFILE_MAX_LOSSES 48

struct tk_profile {
	struct tk_value_type value_types[TK_PROFILE_MAX_VALUES];
	int nr_values;
	struct tk_value_type period_type;	/* "cpu"/"nanoseconds" */
	int64_t period;				/* ns per sample */
	const char *default_sample_type;	/* a value type's type ("inuse_space"); NULL: the
						   one named as period_type, else the last */
	int64_t time_nanos;			/* capture start, unix ns */
	int64_t duration_nanos;
	const char *backend;			/* "bpf", "perf" */
	int freq_hz;

	struct tk_mapping *mappings;
	size_t nr_mappings;
	struct tk_function *functions;
	size_t nr_functions;
	struct tk_location *locations;
	size_t nr_locations;
	struct tk_sample *samples;
	size_t nr_samples;

	struct tk_loss losses[TK_PROFILE_MAX_LOSSES];
	int nr_losses;
	char *comments[24];			/* free-form notes; the writer adds backend etc. */
	int nr_comments;
	char *main_file;			/* the profiled program's file: its mapping goes
						   first (pprof's "File:"); NULL: none */
};

/* The length of the format extension @path ends with (".pb.gz": 6), 0 when none. */
size_t tk_format__ext_len(const char *path);

/* ---- building (profile.c) ------------------------------------------------------ */

/*
 * The profiled program's file, as its mappings name it (the target's
 * /proc/PID/exe): pprof calls the first mapping the main binary, so the
 * writers put this file's first. NULL: a whole-system profile, which has none.
 */
int tk_profile__set_main_file(struct tk_profile *p, const char *file);
/* The same, from process @pid's exe link under @proc_root (NULL: /proc); 0 when unreadable. */
int tk_profile__set_main_pid(struct tk_profile *p, const char *proc_root, int pid);

/* An empty profile with the CPU sample types (samples/count, cpu/nanoseconds). */
struct tk_profile *tk_profile__new_cpu(const char *backend, int freq_hz);
/*
 * An empty profile with the sample types of a Go heap profile: alloc_objects/
 * count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes; period
 * type space/bytes (the caller sets period, the mean bytes between samples);
 * default sample type inuse_space.
 */
struct tk_profile *tk_profile__new_heap(const char *backend);
/*
 * An empty profile with one sample type @type/@unit ("pages"/"count"), also its
 * period type, period 1. @type and @unit must outlive the profile (literals).
 */
struct tk_profile *tk_profile__new_counts(const char *backend, const char *type, const char *unit);

/* Interning: the same mapping/function/location key returns the same id. */
uint64_t tk_profile__mapping(struct tk_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			     const char *file, const char *build_id);
uint64_t tk_profile__function(struct tk_profile *p, const char *name, const char *filename);
uint64_t tk_profile__location(struct tk_profile *p, uint64_t mapping_id, uint64_t address,
			      uint64_t function_id, bool kernel);
/* The same, with a source line: a function's first (@start_line), a location's (@line). */
uint64_t tk_profile__function_at(struct tk_profile *p, const char *name, const char *filename,
				 int64_t start_line);
uint64_t tk_profile__location_at(struct tk_profile *p, uint64_t mapping_id, uint64_t address,
				 uint64_t function_id, int64_t line);
/* Append a sample; @locs leaf first. Returns 0 or -ENOMEM. */
int tk_profile__add_sample(struct tk_profile *p, const uint64_t *locs, uint32_t nr,
			   const int64_t *values, uint32_t pid, uint32_t tid, const char *comm);
/* The same, with the thread_state label @state (a literal, or NULL). */
int tk_profile__add_sample_state(struct tk_profile *p, const uint64_t *locs, uint32_t nr,
				 const int64_t *values, uint32_t pid, uint32_t tid,
				 const char *comm, const char *state);
/*
 * The CPU sample types and, after them, off_cpu/nanoseconds and
 * off_cpu_count/count (a profile made by tk_profile__new_cpu). 0 or -EINVAL.
 */
int tk_profile__add_off_cpu(struct tk_profile *p);
/* Add (or set) a loss counter by name. */
void tk_profile__set_loss(struct tk_profile *p, const char *name, uint64_t count);
/*
 * The SVG flame graph as an <svg> element to place in an HTML page (no XML
 * declaration): its ids, and what its script looks up, are prefixed with
 * "@id-", so several graphs share a page. @id: letters, digits, '-' and '_',
 * at most 64 (-EINVAL otherwise).
 */
int tk_profile__write_svg_inline(const struct tk_profile *p, FILE *f, const char *title,
				 const char *id);

/* the writers: include/tracekit/profile.h */

#endif /* __TK_PROFILE_H */
