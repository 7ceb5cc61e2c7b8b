/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * jemalloc's own heap profile dumps ("heap_v2/PERIOD", what prof.dump,
 * prof_final and prof_gdump write; read by jeprof) into the profile model:
 * the fallback of `tracekit alloc` where BPF is not available.
 *
 * A dump is outside input: every field is checked, sizes are bounded, and a
 * malformed dump is an error, never a crash. The counts in a dump are those
 * of the sampled allocations; tk_jeprof__unsample() scales them as jeprof's
 * AdjustSamples() does (jemalloc 5.3's prof_unbias writes them so that this
 * scaling gives its own unbiased estimate).
 */
#ifndef __TK_JEPROF_H
#define __TK_JEPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sym/symbolize.h"

#define TK_JEPROF_MAX_LEN (1ULL << 30)	/* bytes of dump text */
#define TK_JEPROF_MAX_FRAMES 256	/* per stack; jemalloc's PROF_BT_MAX is 128 */
#define TK_JEPROF_MAX_MAPPINGS 4096	/* executable mappings in MAPPED_LIBRARIES */
#define TK_JEPROF_MAX_NAME 64		/* bytes of a thread name kept */
/* The exec generation under which tk_jeprof__to_profile() registers a dump's mappings. */
#define TK_JEPROF_GEN 0x6a650000u

/* One "N: BYTES [N: BYTES]" pair of pairs, as written (sampled); each <= INT64_MAX. */
struct tk_jeprof_counts {
	uint64_t cur_objs;	/* in use at the dump */
	uint64_t cur_bytes;
	uint64_t accum_objs;	/* allocated since start: 0 unless prof_accum:true */
	uint64_t accum_bytes;
};

struct tk_jeprof_stack {
	const uint64_t *addrs;		/* return addresses as written, innermost (jemalloc)
					   first; NULL when the dump has no address at all */
	uint32_t nr_addrs;
	uint32_t nr_threads;		/* per-thread lines that followed its "t*" line */
	struct tk_jeprof_counts counts;	/* its "t*" line */
};

/* A thread summary of the header: "tUID: ... [NAME]". */
struct tk_jeprof_thread {
	uint64_t uid;			/* jemalloc's thread uid, not a kernel tid */
	struct tk_jeprof_counts counts;
	const char *name;		/* "" when none; at most TK_JEPROF_MAX_NAME - 1 bytes */
};

/* An executable mapping of MAPPED_LIBRARIES (a file, [vdso] or [vsyscall]). */
struct tk_jeprof_mapping {
	uint64_t start;
	uint64_t end;			/* exclusive */
	uint64_t offset;
	unsigned int dev_major, dev_minor;	/* the file's identity, as the dump says */
	uint64_t inode;
	const char *path;
};

/* Unsampled (estimated) values; see tk_jeprof__unsample(). */
struct tk_jeprof_estimate {
	int64_t inuse_objs;
	int64_t inuse_bytes;
	int64_t alloc_objs;
	int64_t alloc_bytes;
};

struct tk_jeprof;

/*
 * Parse @len bytes of a heap_v2 dump (no NUL needed). Returns 0; -EINVAL at a
 * malformed line (truncated, bad hex, a missing "t*" line, an inconsistent
 * count pair), -ERANGE at a count above INT64_MAX or an address above 64 bits,
 * -E2BIG past TK_JEPROF_MAX_FRAMES or TK_JEPROF_MAX_MAPPINGS, -EFBIG past
 * TK_JEPROF_MAX_LEN, -ENOMEM.
 */
int tk_jeprof__parse(const char *text, size_t len, struct tk_jeprof **out);
void tk_jeprof__free(struct tk_jeprof *d);

/* Mean bytes between samples (2^lg_prof_sample), from the header. */
uint64_t tk_jeprof__sample_period(const struct tk_jeprof *d);
/* The header's "t*" line: all threads, all stacks. */
const struct tk_jeprof_counts *tk_jeprof__total(const struct tk_jeprof *d);
/* True when some count of allocations since start is not 0 (jemalloc ran with prof_accum). */
bool tk_jeprof__has_accum(const struct tk_jeprof *d);
size_t tk_jeprof__nr_stacks(const struct tk_jeprof *d);
/* Stack @i (< nr_stacks), valid until tk_jeprof__free(); NULL past the end. */
const struct tk_jeprof_stack *tk_jeprof__stack(const struct tk_jeprof *d, size_t i);
size_t tk_jeprof__nr_threads(const struct tk_jeprof *d);
const struct tk_jeprof_thread *tk_jeprof__thread(const struct tk_jeprof *d, size_t i);
size_t tk_jeprof__nr_mappings(const struct tk_jeprof *d);
const struct tk_jeprof_mapping *tk_jeprof__mapping(const struct tk_jeprof *d, size_t i);
/* The file of the lowest file mapping (usually the program), or NULL. */
const char *tk_jeprof__program(const struct tk_jeprof *d);

/*
 * jeprof's sampling adjustment of one (objects, bytes) pair sampled with mean
 * period @period bytes: both are multiplied by 1 / (1 - exp(-(bytes / objs) /
 * period)) and rounded to the nearest integer. A pair with no objects, or a
 * period of 0, stays as it is. Returns 0, -EINVAL when @objs is not 0 but
 * @bytes is (jeprof would divide by zero) or either is above INT64_MAX,
 * -ERANGE when a result would not fit an int64_t.
 */
int tk_jeprof__unsample(uint64_t period, uint64_t objs, uint64_t bytes, int64_t *est_objs,
			int64_t *est_bytes);
/* Both pairs of @c; the same returns. */
int tk_jeprof__estimate(const struct tk_jeprof *d, const struct tk_jeprof_counts *c,
			struct tk_jeprof_estimate *out);

/*
 * Add the dump's stacks to @p, a profile from tk_profile__new_heap(), as
 * samples of @pid with values (alloc_objects, alloc_space, inuse_objects,
 * inuse_space), unsampled; alloc_* are 0 when the dump has no accumulated
 * counts (a comment says so). The dump's MAPPED_LIBRARIES are given to @s
 * under (@pid, TK_JEPROF_GEN), so a dump of a process that has exited is
 * symbolized from the files it names; when @pid still runs its
 * /proc/PID/map_files and root are used first (so @pid must be the dump's
 * process, or one that does not run). Every address is a return
 * address (looked up one byte back). The allocator's own frames are removed
 * as jeprof removes them: everything up to the outermost malloc, calloc,
 * operator new... frame; when no such frame is named (Debian's libjemalloc
 * has no symbols for its internal frames), the leading frames without a
 * symbol in the shared object holding the innermost frame. A stack whose
 * frames would all go is kept whole; one with all four values 0 is left out.
 * Samples carry @pid, tid 0 (jemalloc's thread uids are no kernel tids) and
 * the base name of tk_jeprof__program() as comm. Sets p->period to the sample
 * period, the "unsymbolized_frames" loss and a comment naming the period.
 * Returns 0, -EINVAL when @p is not a heap profile, -ERANGE when an estimate
 * does not fit an int64_t, or -ENOMEM.
 */
int tk_jeprof__to_profile(const struct tk_jeprof *d, struct tk_symbolizer *s, uint32_t pid,
			  struct tk_profile *p);

#endif /* __TK_JEPROF_H */
