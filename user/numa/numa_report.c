// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA migration report: the helpers backends fill it with, and the
 * interval arithmetic of sessions (total minus the previous total). The
 * writers are numa_report_text.c and numa_report_json.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numa/numa_int.h"
#include "numa/numa_report.h"

#define PROCS_MIN_CAP 16

static const char *const reason_names[TK_MR__COUNT] = {
	[TK_MR_COMPACTION] = "compaction",
	[TK_MR_MEMORY_FAILURE] = "memory_failure",
	[TK_MR_MEMORY_HOTPLUG] = "memory_hotplug",
	[TK_MR_SYSCALL] = "syscall_or_cpuset",
	[TK_MR_MEMPOLICY_MBIND] = "mempolicy_mbind",
	[TK_MR_NUMA_MISPLACED] = "numa_misplaced",
	[TK_MR_CONTIG_RANGE] = "contig_range",
	[TK_MR_LONGTERM_PIN] = "longterm_pin",
	[TK_MR_DEMOTION] = "demotion",
	[TK_MR_DAMON] = "damon",
	[TK_MR_UNKNOWN] = "unknown",
};

const char *tk_mig_reason__name(enum tk_mig_reason r)
{
	return (unsigned int)r < TK_MR__COUNT ? reason_names[r] : "unknown";
}

/* ---- the model ---------------------------------------------------------------------- */

void tk_numa_report__init(struct tk_numa_report *r, const char *backend, int nr_nodes)
{
	memset(r, 0, sizeof(*r));
	r->backend = backend;
	r->nr_nodes = nr_nodes;
}

void tk_numa_report__free(struct tk_numa_report *r)
{
	if (!r)
		return;
	free(r->procs);
	r->procs = NULL;
	r->nr_procs = 0;
}

void tk_numa_report__missing(struct tk_numa_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nr_missing >= TK_NUMA_MAX_MISSING)
		return;
	va_start(ap, fmt);
	vsnprintf(r->missing[r->nr_missing++], sizeof(r->missing[0]), fmt, ap);
	va_end(ap);
}

int tk_numa_report__add_pair(struct tk_numa_report *r, int src, int dst, uint64_t pages)
{
	int i;

	for (i = 0; i < r->nr_pairs; i++) {
		if (r->pairs[i].src == src && r->pairs[i].dst == dst) {
			r->pairs[i].pages += pages;
			return 0;
		}
	}
	if (r->nr_pairs >= TK_NUMA_MAX_PAIRS)
		return -E2BIG;
	r->pairs[r->nr_pairs++] = (struct tk_numa_pair){ .src = src, .dst = dst, .pages = pages };
	return 0;
}

/* procs grow by doubling from PROCS_MIN_CAP: the capacity follows from the count */
static size_t procs_cap(size_t n)
{
	size_t cap = PROCS_MIN_CAP;

	while (cap < n)
		cap *= 2;
	return cap;
}

struct tk_numa_proc *tk_numa_report__proc(struct tk_numa_report *r, uint32_t pid,
					  const char *comm)
{
	struct tk_numa_proc *p;
	size_t i;

	for (i = 0; i < r->nr_procs; i++) {
		p = &r->procs[i];
		if (p->pid == pid) {
			if (!p->comm[0] && comm)
				snprintf(p->comm, sizeof(p->comm), "%s", comm);
			return p;
		}
	}
	if (r->nr_procs >= TK_NUMA_MAX_PROCS) {
		errno = E2BIG;
		return NULL;
	}
	if (!r->procs || r->nr_procs == procs_cap(r->nr_procs)) {
		size_t cap = r->procs ? procs_cap(r->nr_procs) * 2 : PROCS_MIN_CAP;

		p = realloc(r->procs, cap * sizeof(*p));
		if (!p) {
			errno = ENOMEM;
			return NULL;
		}
		r->procs = p;
	}
	p = &r->procs[r->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	return p;
}

static int lat_bucket(uint64_t ns)
{
	int b = ns ? 63 - __builtin_clzll(ns) : 0;

	return b < TK_NUMA_LAT_BUCKETS ? b : TK_NUMA_LAT_BUCKETS - 1;
}

void tk_numa_report__latency(struct tk_numa_report *r, uint64_t ns)
{
	r->latency[lat_bucket(ns)]++;
	r->latency_count++;
	r->latency_sum_ns += ns;
	if (ns > r->latency_max_ns)
		r->latency_max_ns = ns;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct tk_numa_proc *x = a, *y = b;

	if (x->total.succeeded != y->total.succeeded)
		return x->total.succeeded > y->total.succeeded ? -1 : 1;
	if (x->total.failed != y->total.failed)
		return x->total.failed > y->total.failed ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct tk_numa_pair *x = a, *y = b;

	if (x->pages != y->pages)
		return x->pages > y->pages ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

void tk_numa_report__sort(struct tk_numa_report *r)
{
	if (r->nr_procs > 1)
		qsort(r->procs, r->nr_procs, sizeof(r->procs[0]), proc_cmp);
	if (r->nr_pairs > 1)
		qsort(r->pairs, r->nr_pairs, sizeof(r->pairs[0]), pair_cmp);
}

/* ---- intervals (numa_int.h) ------------------------------------------------------------ */

int tk_numa_report__copy(struct tk_numa_report *dst, const struct tk_numa_report *src)
{
	*dst = *src;
	dst->procs = NULL;
	if (!src->nr_procs)
		return 0;
	dst->procs = malloc(procs_cap(src->nr_procs) * sizeof(*dst->procs));
	if (!dst->procs) {
		dst->nr_procs = 0;
		return -ENOMEM;
	}
	memcpy(dst->procs, src->procs, src->nr_procs * sizeof(*dst->procs));
	return 0;
}

static uint64_t sub(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

static void counts_sub(struct tk_numa_counts *o, const struct tk_numa_counts *t,
		       const struct tk_numa_counts *p)
{
	o->succeeded = sub(t->succeeded, p->succeeded);
	o->failed = sub(t->failed, p->failed);
	o->thp_succeeded = sub(t->thp_succeeded, p->thp_succeeded);
	o->thp_failed = sub(t->thp_failed, p->thp_failed);
	o->thp_split = sub(t->thp_split, p->thp_split);
	o->large_folio_split = sub(t->large_folio_split, p->large_folio_split);
	o->calls = sub(t->calls, p->calls);
}

static bool counts_zero(const struct tk_numa_counts *c)
{
	return !(c->succeeded | c->failed | c->thp_succeeded | c->thp_failed | c->thp_split |
		 c->large_folio_split | c->calls);
}

static const struct tk_numa_proc *find_proc(const struct tk_numa_report *r, uint32_t pid)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

static void proc_sub(struct tk_numa_proc *o, const struct tk_numa_proc *t,
		     const struct tk_numa_proc *p)
{
	int i;

	counts_sub(&o->total, &t->total, &p->total);
	for (i = 0; i < TK_MR__COUNT; i++)
		o->by_reason[i] = sub(t->by_reason[i], p->by_reason[i]);
	o->misplaced = sub(t->misplaced, p->misplaced);
	o->misplaced_ok = sub(t->misplaced_ok, p->misplaced_ok);
	o->sched_move = sub(t->sched_move, p->sched_move);
	o->sched_swap = sub(t->sched_swap, p->sched_swap);
	o->sched_stick = sub(t->sched_stick, p->sched_stick);
	o->hint_faults = sub(t->hint_faults, p->hint_faults);
	for (i = 0; i < TK_NUMA_MAX_SKIP; i++)
		o->skip_vma[i] = sub(t->skip_vma[i], p->skip_vma[i]);
}

static bool proc_zero(const struct tk_numa_proc *p)
{
	int i;

	for (i = 0; i < TK_MR__COUNT; i++)
		if (p->by_reason[i])
			return false;
	for (i = 0; i < TK_NUMA_MAX_SKIP; i++)
		if (p->skip_vma[i])
			return false;
	return counts_zero(&p->total) && !(p->misplaced | p->misplaced_ok | p->sched_move |
					  p->sched_swap | p->sched_stick | p->hint_faults);
}

int tk_numa_report__diff(struct tk_numa_report *out, const struct tk_numa_report *t,
			 const struct tk_numa_report *p)
{
	static const struct tk_numa_proc none;
	int i, j, top = -1;
	size_t k;

	tk_numa_report__init(out, t->backend, t->nr_nodes);
	out->start_ns = t->start_ns;
	out->duration_ns = t->duration_ns;
	out->have_reasons = t->have_reasons;
	out->have_pairs = t->have_pairs;
	out->have_procs = t->have_procs;
	out->have_latency = t->have_latency;
	out->have_sched = t->have_sched;
	out->have_vmstat = t->have_vmstat;
	out->have_numastat = t->have_numastat;
	out->have_skip_vma = t->have_skip_vma;
	memcpy(out->skip_names, t->skip_names, sizeof(out->skip_names));
	out->nr_skip = t->nr_skip;
	memcpy(out->missing, t->missing, sizeof(out->missing));
	out->nr_missing = t->nr_missing;
	memcpy(out->attach, t->attach, sizeof(out->attach));

	counts_sub(&out->total, &t->total, &p->total);
	for (i = 0; i < TK_MR__COUNT; i++)
		counts_sub(&out->by_reason[i], &t->by_reason[i], &p->by_reason[i]);

	out->pairs_lost = sub(t->pairs_lost, p->pairs_lost);
	for (i = 0; i < t->nr_pairs; i++) {
		uint64_t before = 0;

		for (j = 0; j < p->nr_pairs; j++)
			if (p->pairs[j].src == t->pairs[i].src && p->pairs[j].dst == t->pairs[i].dst)
				before = p->pairs[j].pages;
		if (sub(t->pairs[i].pages, before))
			tk_numa_report__add_pair(out, t->pairs[i].src, t->pairs[i].dst,
						 sub(t->pairs[i].pages, before));
	}

	for (k = 0; k < t->nr_procs; k++) {
		const struct tk_numa_proc *before = find_proc(p, t->procs[k].pid);
		struct tk_numa_proc d = {}, *o;

		proc_sub(&d, &t->procs[k], before ? before : &none);
		if (proc_zero(&d))
			continue;
		o = tk_numa_report__proc(out, t->procs[k].pid, NULL);
		if (!o) {
			if (errno == ENOMEM) {
				tk_numa_report__free(out);
				return -ENOMEM;
			}
			break;
		}
		d.pid = t->procs[k].pid;
		memcpy(d.comm, t->procs[k].comm, sizeof(d.comm));
		*o = d;
	}

	for (i = 0; i < TK_NUMA_LAT_BUCKETS; i++) {
		out->latency[i] = sub(t->latency[i], p->latency[i]);
		if (out->latency[i])
			top = i;
	}
	out->latency_count = sub(t->latency_count, p->latency_count);
	out->latency_sum_ns = sub(t->latency_sum_ns, p->latency_sum_ns);
	/*
	 * A maximum does not subtract: a new one was reached in this interval;
	 * otherwise the interval's highest bucket bounds it.
	 */
	if (t->latency_max_ns > p->latency_max_ns) {
		out->latency_max_ns = t->latency_max_ns;
	} else if (top >= 0) {
		uint64_t bound = top + 1 < 64 ? (1ULL << (top + 1)) - 1 : UINT64_MAX;

		out->latency_max_ns = bound < t->latency_max_ns ? bound : t->latency_max_ns;
	}

	for (i = 0; i < TK_NUMA_SCHED__COUNT; i++)
		out->sched[i] = sub(t->sched[i], p->sched[i]);
	/* one session, one kernel: the same reason in the same slot of both */
	for (i = 0; i < TK_NUMA_MAX_SKIP; i++)
		out->skip_vma[i] = sub(t->skip_vma[i], p->skip_vma[i]);

	out->numa_pages_migrated = sub(t->numa_pages_migrated, p->numa_pages_migrated);
	out->pgmigrate_success = sub(t->pgmigrate_success, p->pgmigrate_success);
	out->pgmigrate_fail = sub(t->pgmigrate_fail, p->pgmigrate_fail);
	out->numa_hint_faults = sub(t->numa_hint_faults, p->numa_hint_faults);
	out->numa_hint_faults_local = sub(t->numa_hint_faults_local, p->numa_hint_faults_local);
	out->pgpromote_success = sub(t->pgpromote_success, p->pgpromote_success);
	out->pgdemote_total = sub(t->pgdemote_total, p->pgdemote_total);
	out->numa_pte_updates = sub(t->numa_pte_updates, p->numa_pte_updates);
	out->vmstat_thp_migration_success =
		sub(t->vmstat_thp_migration_success, p->vmstat_thp_migration_success);
	out->vmstat_thp_migration_fail =
		sub(t->vmstat_thp_migration_fail, p->vmstat_thp_migration_fail);

	out->nr_numastat = t->nr_numastat;
	for (i = 0; i < t->nr_numastat && i < TK_NUMA_MAX_NODESTAT; i++) {
		const struct tk_numa_nodestat *a = &t->numastat[i], *b = NULL;
		struct tk_numa_nodestat *o = &out->numastat[i];

		for (j = 0; j < p->nr_numastat; j++)
			if (p->numastat[j].node == a->node)
				b = &p->numastat[j];
		o->node = a->node;
		if (!b) {
			*o = *a;
			continue;
		}
		o->numa_hit = sub(a->numa_hit, b->numa_hit);
		o->numa_miss = sub(a->numa_miss, b->numa_miss);
		o->numa_foreign = sub(a->numa_foreign, b->numa_foreign);
		o->interleave_hit = sub(a->interleave_hit, b->interleave_hit);
		o->local_node = sub(a->local_node, b->local_node);
		o->other_node = sub(a->other_node, b->other_node);
	}
	tk_numa_report__sort(out);
	return 0;
}
