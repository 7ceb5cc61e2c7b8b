// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of tracekit numa: reading what bpf/numa_trace.bpf.c records
 * (its loader, and what it attaches: numa_trace.c). The ring buffer's events
 * come at every poll. Everything else is aggregated in kernel maps and .bss,
 * read whole at every collect (cumulative; the session takes differences),
 * and, with --stacks, the pages by user stack into a profile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "core/percpu.h"
#include "numa/numa_int.h"
#include "numa/numa_trace_int.h"
#include "bpf/numa_trace.h"
#include "numa_trace.skel.h"
#include "unwind/unwind_bpf.h"
#include "profile/profile_locs.h"

_Static_assert(NT_NR_REASONS == TK_MR__COUNT, "bpf/numa_trace.h and the report disagree");
_Static_assert(NT_LAT_BUCKETS == TK_NUMA_LAT_BUCKETS, "latency buckets disagree");
_Static_assert(NT_MAX_SKIP == TK_NUMA_MAX_SKIP, "skip_vma reasons disagree");

/* ---- events ---------------------------------------------------------------------------- */

int tk_numa_bpf__handle_event(void *ctx, void *data, size_t size)
{
	struct tk_numa *n = ctx;
	struct nt_state *st = n->priv;
	const struct nt_event *e = data;

	if (size < sizeof(*e))
		return 0;
	if (e->type == NT_EV_UNWIND_MISS) {
		tk_unw_bpf__miss(st->unw, e->pid, 0);
		return 0;
	}
	if (e->type != NT_EV_PROC)
		return 0;
	/* the process may be gone by the end: its maps now, for --stacks */
	if (n->opts.stacks && n->sym && !tk_symbolizer__has(n->sym, e->pid, 0)) {
		if (tk_symbolizer__capture(n->sym, e->pid, 0))
			st->maps_missed++;
		else
			tk_unw_bpf__update(st->unw, n->sym, e->pid, 0);
	}
	return 0;
}

int tk_numa_bpf__poll(struct tk_numa *n, int timeout_ms)
{
	struct nt_state *st = n->priv;
	int err = ring_buffer__poll(st->rb, timeout_ms);

	tk_unw_bpf__retry(st->unw, n->sym);
	return err < 0 && err != -EINTR ? err : 0;
}

/* ---- collect ------------------------------------------------------------------------------ */

static void add_counts(struct tk_numa_counts *o, const struct nt_counts *c)
{
	o->succeeded += c->c[NT_SUCCEEDED];
	o->failed += c->c[NT_FAILED];
	o->thp_succeeded += c->c[NT_THP_SUCCEEDED];
	o->thp_failed += c->c[NT_THP_FAILED];
	o->thp_split += c->c[NT_THP_SPLIT];
	o->large_folio_split += c->c[NT_LARGE_SPLIT];
	o->calls += c->c[NT_CALLS];
}

static struct tk_numa_proc *proc_of(struct tk_numa_report *r, uint32_t pid, const char *comm)
{
	char c[17];

	memcpy(c, comm, 16);
	c[16] = '\0';
	return tk_numa_report__proc(r, pid, c);
}

/* Processes: names and placement counts first (the latest name), then their pages. */
static int collect_procs(struct nt_state *st, struct tk_numa_report *r)
{
	int fd = bpf_map__fd(st->skel->maps.procs);
	struct nt_reason_key key, next;
	struct nt_reason_val v;
	struct tk_numa_proc *p;
	__u32 pk, pnext;
	struct nt_proc np;
	bool first = true;

	while (!bpf_map_get_next_key(fd, first ? NULL : &pk, &pnext)) {
		first = false;
		pk = pnext;
		if (bpf_map_lookup_elem(fd, &pk, &np))
			continue;
		p = proc_of(r, pk, np.comm);
		if (!p) {
			if (errno == E2BIG)
				continue;	/* past TK_NUMA_MAX_PROCS: the totals have it */
			return -ENOMEM;
		}
		p->sched_move = np.sched[NT_SCHED_MOVE];
		p->sched_swap = np.sched[NT_SCHED_SWAP];
		p->sched_stick = np.sched[NT_SCHED_STICK];
		p->misplaced = np.misplaced;
		p->misplaced_ok = np.misplaced_ok;
		if (st->att_skip)
			memcpy(p->skip_vma, np.skip_vma, sizeof(p->skip_vma));
	}
	fd = bpf_map__fd(st->skel->maps.reasons);
	first = true;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		p = proc_of(r, key.tgid, v.comm);
		if (!p) {
			if (errno == E2BIG)
				continue;
			return -ENOMEM;
		}
		add_counts(&p->total, &v.counts);
		if (key.reason < TK_MR__COUNT)
			p->by_reason[key.reason] += v.counts.c[NT_SUCCEEDED];
	}
	return 0;
}

int tk_numa_bpf__collect(struct tk_numa *n, struct tk_numa_report *r)
{
	struct nt_state *st = n->priv;
	struct numa_trace_bpf *s = st->skel;
	uint64_t cnt[NT_CNT__COUNT] = {};
	int cpu, i, err, fd;

	ring_buffer__consume(st->rb);
	tk_percpu__sum(s->bss->counters, NT_MAX_CPUS, NT_CNT__COUNT, cnt);
	for (cpu = 0; cpu < NT_MAX_CPUS; cpu++) {
		for (i = 0; i < NT_NR_REASONS; i++) {
			add_counts(&r->by_reason[i], &s->bss->totals[cpu][i]);
			add_counts(&r->total, &s->bss->totals[cpu][i]);
		}
		for (i = 0; i < NT_SCHED__COUNT; i++)
			r->sched[i] += s->bss->sched_total[cpu][i];
		for (i = 0; i < NT_MAX_SKIP && st->att_skip; i++)
			r->skip_vma[i] += s->bss->skip_total[cpu][i];
		if (st->att_start) {
			const struct nt_lat *l = &s->bss->lat[cpu];

			for (i = 0; i < NT_LAT_BUCKETS; i++)
				r->latency[i] += l->buckets[i];
			r->latency_count += l->count;
			r->latency_sum_ns += l->sum_ns;
			if (l->max_ns > r->latency_max_ns)
				r->latency_max_ns = l->max_ns;
		}
	}
	r->have_reasons = st->att_migrate;
	r->have_latency = st->att_start;
	r->have_sched = st->att_sched[0] || st->att_sched[1] || st->att_sched[2];
	r->have_skip_vma = st->att_skip;
	if (st->att_skip) {
		memcpy(r->skip_names, st->skip_names, sizeof(r->skip_names));
		r->nr_skip = st->nr_skip;
	}
	r->have_procs = true;
	err = collect_procs(st, r);
	if (err)
		return err;

	/* one source of pairs: every migrated folio where seen, else misplaced pages */
	if (st->ff_attached) {
		struct nt_folio_pair_key key, next;
		bool first = true;
		__u64 pages;

		r->have_pairs = true;
		fd = bpf_map__fd(s->maps.folio_pairs);
		while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
			first = false;
			key = next;
			if (!bpf_map_lookup_elem(fd, &key, &pages))
				tk_numa_report__add_pair(r, key.src, key.dst, pages);
		}
	} else if (st->mp_attached) {
		struct nt_pair_key key, next;
		bool first = true;
		__u64 pages;

		r->have_pairs = true;
		fd = bpf_map__fd(s->maps.pairs);
		while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
			first = false;
			key = next;
			if (!bpf_map_lookup_elem(fd, &key, &pages))
				tk_numa_report__add_pair(r, key.src, key.dst, pages);
		}
	}

	snprintf(r->attach, sizeof(r->attach), "%s", st->attach);
	for (i = 0; i < st->nr_missing; i++)
		tk_numa_report__missing(r, "%s", st->missing[i]);
	if (cnt[NT_CNT_REASON_MAP_FULL] || cnt[NT_CNT_PROC_MAP_FULL])
		tk_numa_report__missing(r, "%llu events not kept per process (maps full): the "
					   "totals have them",
					(unsigned long long)(cnt[NT_CNT_REASON_MAP_FULL] +
							     cnt[NT_CNT_PROC_MAP_FULL]));
	/* the losses of the one source of pairs the report has */
	if (st->ff_attached)
		r->pairs_lost = cnt[NT_CNT_PAIR_MAP_FULL];
	else if (st->mp_attached)
		r->pairs_lost = cnt[NT_CNT_MISPLACED_PAIR_FULL];
	if (st->ff_attached && r->pairs_lost)
		tk_numa_report__missing(r, "%llu migrated folios not counted by node pair (map "
					   "full)", (unsigned long long)r->pairs_lost);
	else if (r->pairs_lost)
		tk_numa_report__missing(r, "%llu misplaced-page migrations not counted by node "
					   "pair (map full)", (unsigned long long)r->pairs_lost);
	if (cnt[NT_CNT_RINGBUF_FULL])
		tk_numa_report__missing(r, "%llu new processes not announced (ring buffer full)",
					(unsigned long long)cnt[NT_CNT_RINGBUF_FULL]);
	if (cnt[NT_CNT_SKIP_UNKNOWN])
		tk_numa_report__missing(r, "%llu skipped VMAs with a reason value past %d",
					(unsigned long long)cnt[NT_CNT_SKIP_UNKNOWN], NT_MAX_SKIP);
	if (cnt[NT_CNT_UNKNOWN_REASON])
		tk_numa_report__missing(r, "%llu migrations with a reason value past the table",
					(unsigned long long)cnt[NT_CNT_UNKNOWN_REASON]);
	return 0;
}

/* ---- --stacks ---------------------------------------------------------------------------- */

int tk_numa_bpf__stacks(struct tk_numa *n, struct tk_profile **out)
{
	struct nt_state *st = n->priv;
	struct numa_trace_bpf *s = st->skel;
	int fd = bpf_map__fd(s->maps.stack_pages), ufd = bpf_map__fd(s->maps.ustacks);
	uint64_t cnt[NT_CNT__COUNT] = {}, locs[NT_MAX_FRAMES];
	struct nt_stack_key key, next;
	struct tk_profile *p;
	struct tk_locs *fr = NULL;
	struct nt_stack *us;
	struct nt_proc np;
	bool first = true;
	int i, err;

	*out = NULL;
	if (!n->opts.stacks || !n->sym)
		return -ENOTSUP;
	ring_buffer__consume(st->rb);
	p = tk_profile__new_counts("bpf", "pages", "count");
	us = malloc(sizeof(*us));
	if (!p || !us) {
		err = -ENOMEM;
		goto out;
	}
	fr = tk_locs__new(n->sym, p);
	if (!fr) {
		err = -ENOMEM;
		goto out;
	}
	p->time_nanos = n->start_ns;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		__u64 pages;
		int64_t v;
		uint32_t nr = 0;

		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &pages) || !pages)
			continue;
		if (key.ustack != NT_NO_STACK && !bpf_map_lookup_elem(ufd, &key.ustack, us))
			nr = us->nr > NT_MAX_FRAMES ? NT_MAX_FRAMES : us->nr;
		for (i = 0; i < (int)nr; i++) {
			err = tk_locs__user(fr, key.tgid, 0, us->ips[i], i > 0, &locs[i]);
			if (err)
				goto out;
		}
		if (bpf_map_lookup_elem(bpf_map__fd(s->maps.procs), &key.tgid, &np))
			snprintf(np.comm, sizeof(np.comm), "?");
		np.comm[sizeof(np.comm) - 1] = '\0';
		v = pages;
		err = tk_profile__add_sample(p, locs, nr, &v, key.tgid, key.tgid, np.comm);
		if (err)
			goto out;
	}
	tk_percpu__sum(s->bss->counters, NT_MAX_CPUS, NT_CNT__COUNT, cnt);
	tk_profile__set_loss(p, "stack_map_full", cnt[NT_CNT_STACK_MAP_FULL]);
	tk_profile__set_loss(p, "stack_errors", cnt[NT_CNT_STACK_ERRORS]);
	tk_profile__set_loss(p, "truncated_stacks", cnt[NT_CNT_TRUNCATED]);
	tk_profile__set_loss(p, "maps_missed", st->maps_missed);
	{
		uint64_t unw[UNW_CNT__COUNT];
		struct tk_unw_info info;

		tk_unw_bpf__sum(s->bss->unw_counters, UNW_MAX_CPUS, unw);
		tk_unw_bpf__stats(st->unw, &info);
		tk_unw__report(p, unw, st->unw ? &info : NULL);
		tk_unw_table__report(p, tk_symbolizer__unwind_over_limit(n->sym));
		if (st->unwind_note[0])
			tk_profile__add_comment(p, "%s", st->unwind_note);
		if (st->kernel_note[0])
			tk_profile__add_comment(p, "%s", st->kernel_note);
	}
	tk_profile__set_loss(p, "unsymbolized_frames", tk_locs__unsymbolized(fr));
	tk_locs__report_jit(p, n->sym, tk_locs__jit_unnamed(fr));
	tk_profile__add_comment(p, "tracekit numa: pages migrated (mm_migrate_pages succeeded) "
				   "by the user stack of the task that caused it");
	*out = p;
	p = NULL;
	err = 0;
out:
	tk_locs__free(fr);
	free(us);
	tk_profile__free(p);
	return err;
}
