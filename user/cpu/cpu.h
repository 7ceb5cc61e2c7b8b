/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * CPU profiling sessions: open (choose a backend from the capability
 * snapshot) → start → poll until done → finish (symbolize, build the profile).
 */
#ifndef __TK_CPU_H
#define __TK_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "cpu/stacks.h"
#include "cpu/cpu_seed.h"
#include "sym/symbolize.h"
#include "caps/caps.h"
#include "tracekit/cpu.h"
#include "unwind/unwind.h"

struct tk_cpu;

/*
 * Choose the backend (opts->backend, or the snapshot's choice) and prepare
 * it. On failure, @why (if given) says what stood in the way.
 */
int tk_cpu__open(const struct tk_cpu_opts *opts, const struct tk_caps *caps, struct tk_cpu **out,
		 char *why, size_t why_sz);
int tk_cpu__start(struct tk_cpu *c);
/* Process what has arrived; waits at most @timeout_ms. Returns 0 or -errno (-EINTR is 0). */
int tk_cpu__poll(struct tk_cpu *c, int timeout_ms);
void tk_cpu__stats(const struct tk_cpu *c, struct tk_cpu_stats *st);
const char *tk_cpu__backend(const struct tk_cpu *c);
/* Stop sampling, collect, symbolize, and build the profile. */
int tk_cpu__finish(struct tk_cpu *c, struct tk_profile **out);
/*
 * Symbolize what c->stacks holds into a profile that started at the given
 * times, with every loss counter and note (kptr_restrict, perf's exclusions).
 * tk_cpu__finish after the drain; the sidecar once per period.
 */
int tk_cpu__build_profile(struct tk_cpu *c, int64_t start_real_ns, int64_t start_mono_ns,
			  struct tk_profile **out);
/*
 * The profile of the interval since the previous rotation (or the start), and
 * a new interval begins. @final: sampling stops first (as in tk_cpu__finish).
 * The session keeps the whole run unless c->periods_only (the sidecar).
 */
int tk_cpu__rotate(struct tk_cpu *c, bool final, struct tk_profile **out);
void tk_cpu__free(struct tk_cpu *c);

/* ---- for the backends (cpu.c, cpu_sample.c, cpu_perf.c) ------------------------------ */

/* Loss counters every CPU profile carries, by index. */
enum tk_cpu_loss {
	TK_LOSS_RINGBUF = 0,		/* "ringbuf_reserve_failed" */
	TK_LOSS_STACK_MAP_FULL,		/* "stack_map_full" */
	TK_LOSS_COUNT_MAP_FULL,		/* "count_map_full" */
	TK_LOSS_TRUNCATED,		/* "truncated_stacks" */
	TK_LOSS_STACK_ERRORS,		/* "stack_errors": bpf_get_stack failed */
	TK_LOSS_PERF_LOST,		/* "perf_lost_records": PERF_RECORD_LOST */
	TK_LOSS_UNSYMBOLIZED,		/* "unsymbolized_frames" */
	TK_LOSS_MAPS_MISSED,		/* "processes_without_maps": gone before capture */
	TK_LOSS_FOLLOW_MAP_FULL,	/* "follow_map_full": children the pids map had no
					   room for, never sampled */
	TK_LOSS_DRAIN_MISSING,		/* "stacks_missing_at_drain": a count's stack was
					   not in its epoch's map when drained */
	TK_LOSS_OFF_START_FULL,		/* "off_cpu_start_full": switch-outs with no room
					   to be remembered: their waits are not counted */
	TK_LOSS_OFF_COUNT_FULL,		/* "off_cpu_count_map_full": waits with no room */
	TK_LOSS_OFF_SEED_RACED,		/* "off_cpu_seed_raced": threads off the CPU at the
					   start that ran while their entry was made: their
					   wait until then is not counted */
	TK_LOSS_OFF_SEED_UNREAD,	/* "off_cpu_seed_stack_unread": waits from before
					   the start counted without their user stack */
	TK_LOSS_OFF_UNPAIRED,		/* "off_cpu_unpaired": perf switch-outs whose
					   switch-in was not seen in time order (a record
					   lost or late): their waits are not counted */
	TK_LOSS__COUNT,
};
const char *tk_cpu_loss__name(enum tk_cpu_loss l);

struct tk_cpu_backend {
	const char *name;			/* "bpf", "perf" */
	int (*start)(struct tk_cpu *c);
	int (*poll)(struct tk_cpu *c, int timeout_ms);
	/* stop sampling and move everything into c->stacks */
	int (*drain)(struct tk_cpu *c);
	/*
	 * Without stopping, make c->stacks hold everything so far (a backend
	 * that aggregates elsewhere: the kernel's maps); NULL when c->stacks
	 * is always up to date.
	 */
	int (*collect)(struct tk_cpu *c);
	/*
	 * periods_only: without stopping, make c->stacks hold exactly what came
	 * since the previous cut (or the start), and begin the next period
	 * empty; NULL when c->stacks is always up to date (the caller replaces it).
	 */
	int (*cut)(struct tk_cpu *c);
	void (*free)(struct tk_cpu *c);
};

extern const struct tk_cpu_backend tk_cpu_backend_bpf;
extern const struct tk_cpu_backend tk_cpu_backend_perf;

struct tk_cpu {
	struct tk_cpu_opts opts;
	const struct tk_cpu_backend *be;
	void *priv;				/* the backend's state */
	struct tk_stacks *stacks;
	struct tk_symbolizer *sym;
	uint64_t losses[TK_LOSS__COUNT];
	uint64_t samples;
	uint64_t processes;
	int64_t start_ns;			/* CLOCK_REALTIME at start */
	int64_t start_mono_ns;			/* CLOCK_MONOTONIC at start */
	int nr_cpus;
	uint64_t maps_missed;			/* bpf: captures that failed */
	uint64_t drain_missing;			/* bpf: stacks not found when drained */
	uint64_t drain_entries, drain_calls;	/* bpf: counts drained; bpf(2) calls for it */
	bool drain_batched;			/* bpf: ... with the batch commands */
	uint64_t maps_from_records;		/* bpf: gone processes named by MMAP2 records */
	char mmaps_note[200];			/* bpf: why there are no MMAP2 records */
	char off_cpu_note[200];			/* how off-CPU time was taken */
	uint64_t off_switches, off_thinned;	/* bpf: switch-outs seen; not taken (thinning) */
	uint64_t unwind[UNW_CNT__COUNT];	/* the unwinder's counters (enum unw_counter) */
	struct tk_unw_info unw_info;		/* filled by the backend that unwinds */
	bool unwinding;				/* user stacks are walked with CFI rows */
	char unwind_note[256];			/* why not, when CFI was wanted */
	char kernel_note[256];			/* what this kernel made the loader change */
	char start_why[256];			/* why start failed, when errno says too little */
	/* bpf --off-cpu: waits from before the start (cpu_seed.c) */
	char seed_why[160];			/* why they are not seen; "": they are */
	char seed_note[160];			/* what of them is not known */
	struct tk_cpu_seed_thread *seeds;	/* the threads seeded, by tid */
	size_t nr_seeds;
	uint32_t *seed_tids;			/* --cgroup: its threads, listed at start */
	size_t nr_seed_tids, cap_seed_tids;
	uint64_t seed_unread;			/* seeds whose user stack was not read */
	uint64_t seeded;			/* seeds made (the BPF counter) */
	int64_t seed_ms;			/* how long seeding took */
	/* rotation (tk_cpu__rotate): where the current interval started */
	bool rotated;
	bool periods_only;			/* forget each interval once built */
	struct tk_stacks *rot_prev;		/* c->stacks then (NULL: empty) */
	uint64_t rot_losses[TK_LOSS__COUNT];
	uint64_t rot_unwind[UNW_CNT__COUNT];
	int64_t rot_real_ns, rot_mono_ns;
	uint64_t rot_records;			/* maps_from_records then */
	uint64_t rot_off_switches, rot_off_thinned;	/* off_switches, off_thinned then */
	uint64_t rot_mark;			/* periods_only: the symbolizer's mark at the
						   previous cut (tk_symbolizer__retired) */
};

/*
 * The backends: (@pid, @gen) has ended (exit, or exec into a new generation),
 * every sample of it is read or on its way. With periods_only its symbolizer
 * state goes after the next period but one is built (tk_cpu__rotate).
 */
void tk_cpu__ended(struct tk_cpu *c, uint32_t pid, uint32_t gen);

/* Online CPUs from /sys/devices/system/cpu/online into @cpus; the count or -errno. */
int tk_online_cpus(int *cpus, int max);

/*
 * Symbolize every entry of @t into @p (locations leaf first, kernel frames
 * before user frames) and count frames left as module+offset or unknown in
 * *@unsymbolized. Returns 0 or a negative errno.
 */
int tk_cpu_profile__build(const struct tk_stacks *t, struct tk_symbolizer *s, struct tk_profile *p,
			  uint64_t *unsymbolized, uint64_t *jit_unnamed);
/*
 * The number of distinct frames of @t's stacks as the build keys them
 * ((pid, gen, address, leaf or not) for user frames, (address, leaf or not)
 * for kernel ones), estimated within a few percent; 0 without memory.
 */
size_t tk_cpu_profile__frames(const struct tk_stacks *t);
/* The thread_state label of an off-CPU kind ("sleeping"), or NULL for samples. */
const char *tk_cpu_profile__state(enum tk_stack_kind kind);
/*
 * A C++ symbol demangled ("cxx_leak_site(std::vector<char*>&, unsigned long)"),
 * malloc'ed; NULL when @name is not a mangled name or cannot be demangled.
 */
char *tk_demangle(const char *name);
/*
 * Intern into @p the location of user address @addr, which was resolved at
 * @look (@addr, or @addr - 1 for a return address) into @f with the result
 * @err of tk_symbolizer__user(): its function (demangled); or "module+0xOFFSET" (the
 * offset of @addr) in its mapping; or "[unknown]". Also used by jeprof.c.
 * Returns 0 or -ENOMEM.
 */
int tk_cpu_profile__user_location(struct tk_profile *p, const struct tk_sym_frame *f, int err,
				  uint64_t addr, uint64_t look, uint64_t *loc);

#endif /* __TK_CPU_H */
