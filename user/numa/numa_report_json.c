// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA report as one compact JSON object, documented in
 * docs/numa-json.md: field names are stable, a part that was not observed is
 * null (never zeros), and "have" says which parts were.
 */
#include <errno.h>
#include <stdio.h>

#include "core/json.h"
#include "numa/numa_report.h"

static void json_counts(struct tk_json *j, const char *key, const struct tk_numa_counts *c)
{
	tk_json__begin_object(j, key);
	tk_json__uint(j, "succeeded", c->succeeded);
	tk_json__uint(j, "failed", c->failed);
	tk_json__uint(j, "thp_succeeded", c->thp_succeeded);
	tk_json__uint(j, "thp_failed", c->thp_failed);
	tk_json__uint(j, "thp_split", c->thp_split);
	tk_json__uint(j, "large_folio_split", c->large_folio_split);
	tk_json__uint(j, "calls", c->calls);
	tk_json__end_object(j);
}

/* comm as text: not NUL-terminated when 16 long; control bytes as '?' */
static void json_comm(struct tk_json *j, const char *comm)
{
	char buf[17];
	size_t i;

	for (i = 0; i < 16 && comm[i]; i++)
		buf[i] = (unsigned char)comm[i] < 0x20 ? '?' : comm[i];
	buf[i] = '\0';
	tk_json__string(j, "comm", buf);
}

/* "skip_vma": { reason: count, ... } of @counts, by the report's names */
static void json_skip_vma(struct tk_json *j, const struct tk_numa_report *r,
			  const uint64_t *counts)
{
	char name[32];
	int i;

	tk_json__begin_object(j, "skip_vma");
	for (i = 0; i < r->nr_skip && i < TK_NUMA_MAX_SKIP; i++) {
		if (!r->skip_names[i][0] && !counts[i])
			continue;
		if (r->skip_names[i][0])
			snprintf(name, sizeof(name), "%.24s", r->skip_names[i]);
		else
			snprintf(name, sizeof(name), "reason_%d", i);
		tk_json__uint(j, name, counts[i]);
	}
	tk_json__end_object(j);
}

static void json_procs(struct tk_json *j, const struct tk_numa_report *r)
{
	size_t i;
	int k;

	tk_json__begin_array(j, "processes");
	for (i = 0; i < r->nr_procs; i++) {
		const struct tk_numa_proc *p = &r->procs[i];

		tk_json__begin_object(j, NULL);
		tk_json__uint(j, "pid", p->pid);
		json_comm(j, p->comm);
		tk_json__uint(j, "pages", p->total.succeeded);
		tk_json__uint(j, "failed", p->total.failed);
		tk_json__uint(j, "thp_succeeded", p->total.thp_succeeded);
		tk_json__uint(j, "thp_failed", p->total.thp_failed);
		tk_json__uint(j, "calls", p->total.calls);
		tk_json__begin_object(j, "by_reason");
		for (k = 0; k < TK_MR__COUNT; k++)
			tk_json__uint(j, tk_mig_reason__name(k), p->by_reason[k]);
		tk_json__end_object(j);
		tk_json__uint(j, "misplaced", p->misplaced);
		tk_json__uint(j, "misplaced_ok", p->misplaced_ok);
		tk_json__uint(j, "sched_move", p->sched_move);
		tk_json__uint(j, "sched_swap", p->sched_swap);
		tk_json__uint(j, "sched_stick", p->sched_stick);
		tk_json__uint(j, "hint_faults", p->hint_faults);
		if (r->have_skip_vma)
			json_skip_vma(j, r, p->skip_vma);
		else
			tk_json__null(j, "skip_vma");
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
}

static void json_latency(struct tk_json *j, const struct tk_numa_report *r)
{
	int i;

	tk_json__begin_object(j, "latency");
	tk_json__begin_array(j, "buckets");
	for (i = 0; i < TK_NUMA_LAT_BUCKETS; i++) {
		if (!r->latency[i])
			continue;
		tk_json__begin_object(j, NULL);
		if (i == TK_NUMA_LAT_BUCKETS - 1)
			tk_json__null(j, "le_ns");
		else
			tk_json__uint(j, "le_ns", (1ULL << (i + 1)) - 1);
		tk_json__uint(j, "count", r->latency[i]);
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
	tk_json__uint(j, "count", r->latency_count);
	tk_json__uint(j, "sum_ns", r->latency_sum_ns);
	tk_json__uint(j, "max_ns", r->latency_max_ns);
	tk_json__end_object(j);
}

static void json_vmstat(struct tk_json *j, const struct tk_numa_report *r)
{
	tk_json__begin_object(j, "vmstat");
	tk_json__uint(j, "pgmigrate_success", r->pgmigrate_success);
	tk_json__uint(j, "pgmigrate_fail", r->pgmigrate_fail);
	tk_json__uint(j, "numa_pages_migrated", r->numa_pages_migrated);
	tk_json__uint(j, "numa_pte_updates", r->numa_pte_updates);
	tk_json__uint(j, "numa_hint_faults", r->numa_hint_faults);
	tk_json__uint(j, "numa_hint_faults_local", r->numa_hint_faults_local);
	tk_json__uint(j, "pgpromote_success", r->pgpromote_success);
	tk_json__uint(j, "pgdemote_total", r->pgdemote_total);
	tk_json__uint(j, "thp_migration_success", r->vmstat_thp_migration_success);
	tk_json__uint(j, "thp_migration_fail", r->vmstat_thp_migration_fail);
	tk_json__end_object(j);
}

static void json_numastat(struct tk_json *j, const struct tk_numa_report *r)
{
	int i;

	tk_json__begin_array(j, "numastat");
	for (i = 0; i < r->nr_numastat && i < TK_NUMA_MAX_NODESTAT; i++) {
		const struct tk_numa_nodestat *s = &r->numastat[i];

		tk_json__begin_object(j, NULL);
		tk_json__int(j, "node", s->node);
		tk_json__uint(j, "numa_hit", s->numa_hit);
		tk_json__uint(j, "numa_miss", s->numa_miss);
		tk_json__uint(j, "numa_foreign", s->numa_foreign);
		tk_json__uint(j, "interleave_hit", s->interleave_hit);
		tk_json__uint(j, "local_node", s->local_node);
		tk_json__uint(j, "other_node", s->other_node);
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
}

int tk_numa_report__write_json(const struct tk_numa_report *r, FILE *f)
{
	struct tk_json j;
	int i, err;

	tk_json__init(&j, f, false);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "backend", r->backend);
	tk_json__int(&j, "start_ns", r->start_ns);
	tk_json__int(&j, "duration_ns", r->duration_ns);
	tk_json__int(&j, "nr_nodes", r->nr_nodes);

	tk_json__begin_object(&j, "have");
	tk_json__bool(&j, "reasons", r->have_reasons);
	tk_json__bool(&j, "pairs", r->have_pairs);
	tk_json__bool(&j, "processes", r->have_procs);
	tk_json__bool(&j, "latency", r->have_latency);
	tk_json__bool(&j, "sched", r->have_sched);
	tk_json__bool(&j, "vmstat", r->have_vmstat);
	tk_json__bool(&j, "numastat", r->have_numastat);
	tk_json__bool(&j, "skip_vma", r->have_skip_vma);
	tk_json__end_object(&j);

	json_counts(&j, "pages", &r->total);
	tk_json__begin_object(&j, "reasons");
	for (i = 0; i < TK_MR__COUNT; i++)
		json_counts(&j, tk_mig_reason__name(i), &r->by_reason[i]);
	tk_json__end_object(&j);

	if (r->have_pairs) {
		tk_json__begin_array(&j, "pairs");
		for (i = 0; i < r->nr_pairs; i++) {
			tk_json__begin_object(&j, NULL);
			tk_json__int(&j, "src", r->pairs[i].src);
			tk_json__int(&j, "dst", r->pairs[i].dst);
			tk_json__uint(&j, "pages", r->pairs[i].pages);
			tk_json__end_object(&j);
		}
		tk_json__end_array(&j);
	} else {
		tk_json__null(&j, "pairs");
	}
	if (r->have_procs)
		json_procs(&j, r);
	else
		tk_json__null(&j, "processes");
	if (r->have_latency)
		json_latency(&j, r);
	else
		tk_json__null(&j, "latency");
	if (r->have_sched) {
		tk_json__begin_object(&j, "sched");
		tk_json__uint(&j, "move", r->sched[TK_NUMA_SCHED_MOVE]);
		tk_json__uint(&j, "swap", r->sched[TK_NUMA_SCHED_SWAP]);
		tk_json__uint(&j, "stick", r->sched[TK_NUMA_SCHED_STICK]);
		tk_json__end_object(&j);
	} else {
		tk_json__null(&j, "sched");
	}
	if (r->have_skip_vma)
		json_skip_vma(&j, r, r->skip_vma);
	else
		tk_json__null(&j, "skip_vma");
	if (r->have_vmstat)
		json_vmstat(&j, r);
	else
		tk_json__null(&j, "vmstat");
	if (r->have_numastat)
		json_numastat(&j, r);
	else
		tk_json__null(&j, "numastat");

	tk_json__begin_array(&j, "missing");
	for (i = 0; i < r->nr_missing; i++)
		tk_json__string(&j, NULL, r->missing[i]);
	tk_json__end_array(&j);
	tk_json__string(&j, "attach", r->attach);
	tk_json__end_object(&j);
	err = tk_json__finish(&j);
	if (!err)
		fflush(f);
	return err ? err : ferror(f) ? -EIO : 0;
}
