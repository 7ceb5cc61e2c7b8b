/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * NUMA page migration: the report every backend fills (bpf: tracepoints and
 * function probes; vmstat: /proc/vmstat and per-node numastat deltas) and the
 * writers render (text within 80 columns, JSON, pprof of --stacks).
 *
 * What a backend could not see is said, never guessed: each part carries
 * whether it was observed (`have_*`), and `missing[]` has a line per thing the
 * kernel lacks or refuses ("fentry on migrate_misplaced_folio: refused (EPERM):
 * no per-migration latency").
 */
#ifndef __TK_NUMA_REPORT_H
#define __TK_NUMA_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* Why pages moved: the kernel's enum migrate_reason, by name (values differ by kernel). */
enum tk_mig_reason {
	TK_MR_COMPACTION = 0,		/* "compaction" */
	TK_MR_MEMORY_FAILURE,		/* "memory_failure" */
	TK_MR_MEMORY_HOTPLUG,		/* "memory_hotplug" */
	TK_MR_SYSCALL,			/* "syscall_or_cpuset": move_pages, migrate_pages, cpusets */
	TK_MR_MEMPOLICY_MBIND,		/* "mempolicy_mbind" */
	TK_MR_NUMA_MISPLACED,		/* "numa_misplaced": NUMA balancing */
	TK_MR_CONTIG_RANGE,		/* "contig_range" */
	TK_MR_LONGTERM_PIN,		/* "longterm_pin" */
	TK_MR_DEMOTION,			/* "demotion": memory tiering */
	TK_MR_DAMON,			/* "damon" (6.12+) */
	TK_MR_UNKNOWN,			/* a value this build does not know */
	TK_MR__COUNT,
};
const char *tk_mig_reason__name(enum tk_mig_reason r);

#define TK_NUMA_MAX_SKIP 16		/* sched_skip_vma_numa reasons: enum numa_vmaskip_reason */
#define TK_NUMA_LAT_BUCKETS 40		/* log2 ns: [2^i, 2^(i+1)) ns; bucket 0 is [0, 2) */

struct tk_numa_counts {
	uint64_t succeeded;		/* pages (base pages; a THP counts its pages) */
	uint64_t failed;
	uint64_t thp_succeeded;		/* huge pages, as counted by mm_migrate_pages */
	uint64_t thp_failed;
	uint64_t thp_split;
	uint64_t large_folio_split;	/* where the kernel reports it */
	uint64_t calls;			/* mm_migrate_pages events */
};

/* Pages moved from one node to another, by what saw it. */
struct tk_numa_pair {
	int src;			/* node; -1 unknown */
	int dst;
	uint64_t pages;
};

struct tk_numa_proc {
	uint32_t pid;			/* tgid of the task that caused it */
	char comm[16];
	struct tk_numa_counts total;
	uint64_t by_reason[TK_MR__COUNT];	/* pages succeeded */
	uint64_t misplaced;		/* misplaced-page migrations attempted (function probe) */
	uint64_t misplaced_ok;		/* ... that moved the page */
	uint64_t sched_move, sched_swap, sched_stick;
	uint64_t hint_faults;		/* where seen per process */
	uint64_t skip_vma[TK_NUMA_MAX_SKIP];	/* VMAs its NUMA scan skipped, by skip_names[] */
};

enum tk_numa_sched {
	TK_NUMA_SCHED_MOVE = 0,		/* sched_move_numa: a task moved to its preferred node */
	TK_NUMA_SCHED_SWAP,		/* sched_swap_numa: two tasks swapped CPUs */
	TK_NUMA_SCHED_STICK,		/* sched_stick_numa: a move that did not happen */
	TK_NUMA_SCHED__COUNT,
};

/* One node's /sys/devices/system/node/nodeN/numastat (pages, as the kernel counts them). */
struct tk_numa_nodestat {
	int node;
	uint64_t numa_hit;		/* allocated here as intended */
	uint64_t numa_miss;		/* allocated here though another node was preferred */
	uint64_t numa_foreign;		/* intended here, allocated elsewhere */
	uint64_t interleave_hit;
	uint64_t local_node;		/* allocated here by a task running here */
	uint64_t other_node;		/* allocated here by a task running elsewhere */
};

#define TK_NUMA_MAX_NODESTAT 64
#define TK_NUMA_MAX_PAIRS 256
#define TK_NUMA_MAX_PROCS 1024
#define TK_NUMA_MAX_MISSING 16

/* One interval, or the total. */
struct tk_numa_report {
	int64_t start_ns;		/* CLOCK_REALTIME */
	int64_t duration_ns;
	const char *backend;		/* "bpf", "vmstat" */
	int nr_nodes;

	bool have_reasons;		/* mm_migrate_pages seen by reason */
	struct tk_numa_counts total;
	struct tk_numa_counts by_reason[TK_MR__COUNT];

	bool have_pairs;
	struct tk_numa_pair pairs[TK_NUMA_MAX_PAIRS];
	int nr_pairs;
	/* migrations (misplaced pages, or folios) whose node pair found no room: not in pairs */
	uint64_t pairs_lost;

	bool have_procs;
	struct tk_numa_proc *procs;	/* nr_procs of them, most pages first once sorted */
	size_t nr_procs;

	bool have_latency;		/* misplaced-page migrations timed */
	uint64_t latency[TK_NUMA_LAT_BUCKETS];
	uint64_t latency_count, latency_sum_ns, latency_max_ns;

	bool have_sched;
	uint64_t sched[TK_NUMA_SCHED__COUNT];

	/* sched_skip_vma_numa (6.7+): why NUMA balancing skipped VMAs, by reason */
	bool have_skip_vma;
	char skip_names[TK_NUMA_MAX_SKIP][24];	/* by kernel value: "shared_ro"; "" unused */
	uint64_t skip_vma[TK_NUMA_MAX_SKIP];
	int nr_skip;			/* slots of skip_names[] used */

	bool have_vmstat;		/* /proc/vmstat deltas below are filled */
	uint64_t numa_pages_migrated, pgmigrate_success, pgmigrate_fail, numa_hint_faults,
		numa_hint_faults_local, pgpromote_success, pgdemote_total, numa_pte_updates;
	uint64_t vmstat_thp_migration_success, vmstat_thp_migration_fail;

	bool have_numastat;		/* per-node numastat deltas below are filled */
	struct tk_numa_nodestat numastat[TK_NUMA_MAX_NODESTAT];
	int nr_numastat;

	char missing[TK_NUMA_MAX_MISSING][160];	/* what could not be seen, and why */
	int nr_missing;
	char attach[256];		/* which attach points the backend used */
};

void tk_numa_report__init(struct tk_numa_report *r, const char *backend, int nr_nodes);
void tk_numa_report__free(struct tk_numa_report *r);	/* its procs; not @r itself */
/* A line for missing[]; printf style; silently dropped past TK_NUMA_MAX_MISSING. */
void tk_numa_report__missing(struct tk_numa_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Add @pages to the (@src, @dst) pair. Returns 0 or -E2BIG past TK_NUMA_MAX_PAIRS. */
int tk_numa_report__add_pair(struct tk_numa_report *r, int src, int dst, uint64_t pages);
/* The process entry of @pid (added, with @comm, when new); NULL on -ENOMEM/-E2BIG. */
struct tk_numa_proc *tk_numa_report__proc(struct tk_numa_report *r, uint32_t pid,
					  const char *comm);
/* One latency sample. */
void tk_numa_report__latency(struct tk_numa_report *r, uint64_t ns);
/* Sort processes by pages succeeded, then pid; pairs by pages. */
void tk_numa_report__sort(struct tk_numa_report *r);

/* Writers: text fits 80 columns; JSON is documented in docs/numa-json.md. */
int tk_numa_report__write_text(const struct tk_numa_report *r, FILE *f, int top);
int tk_numa_report__write_json(const struct tk_numa_report *r, FILE *f);

/* ---- sessions (numa_session.c) ------------------------------------------------------ */

#include "caps/caps.h"
#include "tracekit/numa.h"
#include "unwind/unwind.h"



struct tk_numa;

int tk_numa__open(const struct tk_numa_opts *opts, const struct tk_caps *caps,
		  struct tk_numa **out, char *why, size_t why_sz);
int tk_numa__start(struct tk_numa *n, char *why, size_t why_sz);
/* Take in what arrived; waits at most @timeout_ms. Returns 0 or -errno. */
int tk_numa__poll(struct tk_numa *n, int timeout_ms);
/*
 * What happened since the previous call into @interval (may be NULL), and
 * since the start into @total (may be NULL); both initialized here (free with
 * tk_numa_report__free).
 */
int tk_numa__collect(struct tk_numa *n, struct tk_numa_report *interval,
		     struct tk_numa_report *total);
/* --stacks: pages migrated by user stack, as a profile (sample type pages/count). */
int tk_numa__stacks(struct tk_numa *n, struct tk_profile **out);
const char *tk_numa__backend(const struct tk_numa *n);
void tk_numa__free(struct tk_numa *n);

#endif /* __TK_NUMA_REPORT_H */
