// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA report as text within 80 columns. A part that was not observed
 * (`have_*` false) is left out, and every missing[] line is written, so
 * nothing unseen reads as a zero:
 *
 *   NUMA page migrations: 2.0 s, backend bpf, 2 nodes
 *   pages (base pages)         moved      failed   THP moved  THP failed   THP split
 *     all                      16384           0           0           0           0
 *     syscall_or_cpuset        16384           0           0           0           0
 *   ...
 *   not seen: fentry on migrate_misplaced_folio: refused (EPERM): no
 *       per-migration latency
 *
 * Process names are written with control and non-ASCII bytes as '?', so
 * columns are bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "numa/numa_report.h"

#define WIDTH 80
static bool counts_zero(const struct tk_numa_counts *c)
{
	return !(c->succeeded | c->failed | c->thp_succeeded | c->thp_failed | c->thp_split |
		 c->large_folio_split | c->calls);
}

/* @s with control and non-ASCII bytes as '?', at most @width columns, padded when @pad. */
static void put_ascii(FILE *f, const char *s, size_t max, int width, bool pad)
{
	int cols = 0;
	size_t i;

	for (i = 0; i < max && s[i] && cols < width; i++, cols++) {
		unsigned char c = s[i];

		fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
	}
	for (; pad && cols < width; cols++)
		fputc(' ', f);
}

/*
 * "@prefix@text" folded at spaces within WIDTH columns, continuation lines
 * indented by @indent; a word longer than a line is cut.
 */
static void put_wrapped(FILE *f, const char *prefix, const char *text, int indent)
{
	int col = (int)strlen(prefix);
	bool line_start = true;
	const char *p = text;

	fputs(prefix, f);
	while (*p) {
		int w;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		w = (int)strcspn(p, " ");
		if (!line_start && col + 1 + w > WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
			line_start = true;
			continue;
		}
		if (!line_start) {
			fputc(' ', f);
			col++;
		}
		if (w > WIDTH - col)
			w = WIDTH - col;
		put_ascii(f, p, w, w, false);
		col += w;
		p += w;
		line_start = false;
	}
	fputc('\n', f);
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}


static void counts_row(FILE *f, const char *label, const struct tk_numa_counts *c)
{
	fprintf(f, "  %-18s%12" PRIu64 "%12" PRIu64 "%12" PRIu64 "%12" PRIu64 "%12" PRIu64 "\n",
		label, c->succeeded, c->failed, c->thp_succeeded, c->thp_failed, c->thp_split);
}

static void text_pages(const struct tk_numa_report *r, FILE *f)
{
	int i, rows = 0;

	fprintf(f, "%-20s%12s%12s%12s%12s%12s\n", "pages (base pages)", "moved", "failed",
		"THP moved", "THP failed", "THP split");
	counts_row(f, "all", &r->total);
	if (r->have_reasons) {
		for (i = 0; i < TK_MR__COUNT; i++) {
			if (counts_zero(&r->by_reason[i]))
				continue;
			counts_row(f, tk_mig_reason__name(i), &r->by_reason[i]);
			rows++;
		}
		if (!rows && r->total.succeeded + r->total.failed)
			fprintf(f, "  (no reason recorded)\n");
	} else if (r->have_vmstat) {
		/* vmstat attributes pages to two reasons only: balancing and demotion */
		static const enum tk_mig_reason seen[] = { TK_MR_NUMA_MISPLACED, TK_MR_DEMOTION };

		for (i = 0; i < 2; i++)
			fprintf(f, "  %-18s%12" PRIu64 "%12s%12s%12s%12s\n",
				tk_mig_reason__name(seen[i]), r->by_reason[seen[i]].succeeded, "-",
				"-", "-", "-");
	}
	if (r->total.large_folio_split)
		fprintf(f, "  large folio splits: %" PRIu64 "\n", r->total.large_folio_split);
	if (r->total.calls)
		fprintf(f, "  in %" PRIu64 " migration %s (migrate:mm_migrate_pages)\n",
			r->total.calls, plural(r->total.calls, "call", "calls"));
}

static void node_name(char *buf, size_t size, int node)
{
	if (node < 0)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%d", node);
}

static void text_pairs(const struct tk_numa_report *r, FILE *f, int top)
{
	char a[16], b[16];
	int i;

	fprintf(f, "\nnode pairs                pages\n");
	if (!r->nr_pairs)
		fprintf(f, "  (none)\n");
	for (i = 0; i < r->nr_pairs && i < top; i++) {
		char cell[40];

		node_name(a, sizeof(a), r->pairs[i].src);
		node_name(b, sizeof(b), r->pairs[i].dst);
		snprintf(cell, sizeof(cell), "%s -> %s", a, b);
		fprintf(f, "  %-16s%12" PRIu64 "\n", cell, r->pairs[i].pages);
	}
	if (r->nr_pairs > top)
		fprintf(f, "  ... %d more\n", r->nr_pairs - top);
}

static int top_reason(const struct tk_numa_proc *p)
{
	int i, best = -1;

	for (i = 0; i < TK_MR__COUNT; i++)
		if (p->by_reason[i] && (best < 0 || p->by_reason[i] > p->by_reason[best]))
			best = i;
	return best;
}

static void text_procs(const struct tk_numa_report *r, FILE *f, int top)
{
	size_t i;

	fprintf(f, "\ntop processes\n  %8s  %-16s%12s%12s  %s\n", "pid", "comm", "moved", "failed",
		"top reason");
	if (!r->nr_procs)
		fprintf(f, "  (none)\n");
	for (i = 0; i < r->nr_procs && i < (size_t)top; i++) {
		const struct tk_numa_proc *p = &r->procs[i];
		int tr = top_reason(p);

		fprintf(f, "  %8" PRIu32 "  ", p->pid);
		put_ascii(f, p->comm, sizeof(p->comm), 16, true);
		fprintf(f, "%12" PRIu64 "%12" PRIu64 "  %s\n", p->total.succeeded, p->total.failed,
			tr < 0 ? "-" : tk_mig_reason__name(tr));
	}
	if (r->nr_procs > (size_t)top)
		fprintf(f, "  ... %zu more\n", r->nr_procs - top);
}

#define BAR 30

static void text_latency(const struct tk_numa_report *r, FILE *f)
{
	char mean[16], max[16];
	uint64_t peak = 0;
	int i, lo = -1, hi = -1;

	fprintf(f, "\nhow long migrations took (which ones: see 'attached' below):\n");
	fprintf(f, "  count %" PRIu64 ", mean %s, max %s\n", r->latency_count,
		tk_fmt_ns(mean, sizeof(mean),
		       r->latency_count ? (double)r->latency_sum_ns / r->latency_count : 0),
		tk_fmt_ns(max, sizeof(max), (double)r->latency_max_ns));
	for (i = 0; i < TK_NUMA_LAT_BUCKETS; i++) {
		if (!r->latency[i])
			continue;
		if (lo < 0)
			lo = i;
		hi = i;
		if (r->latency[i] > peak)
			peak = r->latency[i];
	}
	if (lo < 0)
		return;
	fprintf(f, "  %16s  %10s  %s\n", "ns", "count", "distribution");
	for (i = lo; i <= hi; i++) {
		uint64_t from = i ? 1ULL << i : 0;
		int n = (int)((r->latency[i] * BAR + peak - 1) / peak), k;
		char range[40];

		if (i == TK_NUMA_LAT_BUCKETS - 1)
			snprintf(range, sizeof(range), "%" PRIu64 "+", from);
		else
			snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, from,
				 (uint64_t)(1ULL << (i + 1)) - 1);
		fprintf(f, "  %16s  %10" PRIu64 "  |", range, r->latency[i]);
		for (k = 0; k < BAR; k++)
			fputc(k < n ? '#' : ' ', f);
		fputs("|\n", f);
	}
}

/* every reason the kernel has, zeros too: a zero here was seen to be zero */
static void text_skip_vma(const struct tk_numa_report *r, FILE *f)
{
	char name[32];
	int i;

	fprintf(f, "\n%-38s%12s\n", "NUMA balancing skipped VMAs: reason", "count");
	for (i = 0; i < r->nr_skip && i < TK_NUMA_MAX_SKIP; i++) {
		if (!r->skip_names[i][0] && !r->skip_vma[i])
			continue;
		if (r->skip_names[i][0])
			snprintf(name, sizeof(name), "%.24s", r->skip_names[i]);
		else
			snprintf(name, sizeof(name), "reason %d", i);
		fprintf(f, "  %-36s%12" PRIu64 "\n", name, r->skip_vma[i]);
	}
}

static void vm_cell(FILE *f, const char *name, uint64_t v, bool end)
{
	fprintf(f, "  %-24s%12" PRIu64 "%s", name, v, end ? "\n" : " ");
}

static void text_vmstat(const struct tk_numa_report *r, FILE *f)
{
	int i;

	fprintf(f, "\n/proc/vmstat (change)\n");
	vm_cell(f, "pgmigrate_success", r->pgmigrate_success, false);
	vm_cell(f, "pgmigrate_fail", r->pgmigrate_fail, true);
	vm_cell(f, "numa_pages_migrated", r->numa_pages_migrated, false);
	vm_cell(f, "numa_pte_updates", r->numa_pte_updates, true);
	vm_cell(f, "numa_hint_faults", r->numa_hint_faults, false);
	vm_cell(f, "numa_hint_faults_local", r->numa_hint_faults_local, true);
	vm_cell(f, "pgpromote_success", r->pgpromote_success, false);
	vm_cell(f, "pgdemote_*", r->pgdemote_total, true);
	vm_cell(f, "thp_migration_success", r->vmstat_thp_migration_success, false);
	vm_cell(f, "thp_migration_fail", r->vmstat_thp_migration_fail, true);
	if (!r->have_numastat || !r->nr_numastat)
		return;
	fprintf(f, "\nper-node numastat (change, pages)\n%-13s%12s%10s%9s%11s%10s%10s\n", "",
		"numa_hit", "numa_miss", "foreign", "interleave", "local", "other");
	for (i = 0; i < r->nr_numastat && i < TK_NUMA_MAX_NODESTAT; i++) {
		const struct tk_numa_nodestat *s = &r->numastat[i];

		fprintf(f, "  node %-6d%12" PRIu64 "%10" PRIu64 "%9" PRIu64 "%11" PRIu64
			"%10" PRIu64 "%10" PRIu64 "\n", s->node, s->numa_hit, s->numa_miss,
			s->numa_foreign, s->interleave_hit, s->local_node, s->other_node);
	}
}

int tk_numa_report__write_text(const struct tk_numa_report *r, FILE *f, int top)
{
	int i;

	if (top <= 0)
		top = 20;
	fprintf(f, "NUMA page migrations: %.1f s, backend %s, %d %s\n", r->duration_ns / 1e9,
		r->backend ? r->backend : "none", r->nr_nodes, r->nr_nodes == 1 ? "node" : "nodes");
	text_pages(r, f);
	if (r->have_pairs)
		text_pairs(r, f, top);
	if (r->have_procs)
		text_procs(r, f, top);
	if (r->have_latency)
		text_latency(r, f);
	if (r->have_sched) {
		fprintf(f, "\n%-38s%12s\n", "scheduler NUMA placement", "tasks");
		fprintf(f, "  %-36s%12" PRIu64 "\n", "moved to their preferred node",
			r->sched[TK_NUMA_SCHED_MOVE]);
		fprintf(f, "  %-36s%12" PRIu64 "\n", "swapped with a task there",
			r->sched[TK_NUMA_SCHED_SWAP]);
		fprintf(f, "  %-36s%12" PRIu64 "\n", "a move considered but not made",
			r->sched[TK_NUMA_SCHED_STICK]);
	}
	if (r->have_skip_vma)
		text_skip_vma(r, f);
	if (r->have_vmstat)
		text_vmstat(r, f);
	if (r->nr_missing || r->attach[0])
		fputc('\n', f);
	for (i = 0; i < r->nr_missing; i++)
		put_wrapped(f, "not seen: ", r->missing[i], 4);
	if (r->attach[0])
		put_wrapped(f, "attached: ", r->attach, 4);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
