// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CPU profiling sessions: the backend comes from the capability snapshot (or
 * the caller), both backends fill one table of raw stacks, and finishing
 * symbolizes it into the profile model with every loss counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "core/internal.h"
#include "core/opts.h"
#include "cpu/perf_ring.h"
#include "profile/profile_locs.h"

static const char *const loss_names[TK_LOSS__COUNT] = {
	[TK_LOSS_RINGBUF] = "ringbuf_reserve_failed",
	[TK_LOSS_STACK_MAP_FULL] = "stack_map_full",
	[TK_LOSS_COUNT_MAP_FULL] = "count_map_full",
	[TK_LOSS_TRUNCATED] = "truncated_stacks",
	[TK_LOSS_STACK_ERRORS] = "stack_errors",
	[TK_LOSS_PERF_LOST] = "perf_lost_records",
	[TK_LOSS_UNSYMBOLIZED] = "unsymbolized_frames",
	[TK_LOSS_MAPS_MISSED] = "processes_without_maps",
	[TK_LOSS_FOLLOW_MAP_FULL] = "follow_map_full",
	[TK_LOSS_DRAIN_MISSING] = "stacks_missing_at_drain",
	[TK_LOSS_OFF_START_FULL] = "off_cpu_start_full",
	[TK_LOSS_OFF_COUNT_FULL] = "off_cpu_count_map_full",
	[TK_LOSS_OFF_SEED_RACED] = "off_cpu_seed_raced",
	[TK_LOSS_OFF_SEED_UNREAD] = "off_cpu_seed_stack_unread",
	[TK_LOSS_OFF_UNPAIRED] = "off_cpu_unpaired",
};

const char *tk_cpu_loss__name(enum tk_cpu_loss l)
{
	return l < TK_LOSS__COUNT ? loss_names[l] : "unknown";
}

int tk_cpu__open(const struct tk_cpu_opts *opts, const struct tk_caps *caps, struct tk_cpu **out,
		 char *why, size_t why_sz)
{
	struct tk_symbolizer_opts sopts = { .sz = sizeof(sopts) };
	struct tk_cpu_opts o;
	enum tk_backend backend;
	struct tk_cpu *c;
	int err;

	*out = NULL;
	if (why && why_sz)
		why[0] = '\0';
	if (!opts || !caps || TK_OPTS_COPY(&o, opts))
		return -EINVAL;
	opts = &o;
	if (opts->freq_hz < 0 || opts->freq_hz > 100000 || opts->nr_pids < 0 ||
	    opts->nr_pids > TK_CPU_MAX_PIDS || (opts->user_only && opts->kernel_only))
		return -EINVAL;

	backend = opts->backend;
	if (backend == TK_BACKEND_NONE) {
		/*
		 * following children needs the child's tgid: from kernel BTF, or from
		 * tracefs without it; when neither is there, bpf fails to start and
		 * the session takes perf, saying why (cpu_sample.c)
		 */
		backend = caps->backends[TK_COLLECT_CPU].backend;
		if (backend == TK_BACKEND_NONE) {
			if (why)
				snprintf(why, why_sz, "no CPU backend works here: %s",
					 caps->backends[TK_COLLECT_CPU].reason);
			return -EOPNOTSUPP;
		}
	} else if (backend == TK_BACKEND_BPF &&
		   caps->backends[TK_COLLECT_CPU].backend != TK_BACKEND_BPF) {
		if (why)
			snprintf(why, why_sz, "the bpf backend is not available: %s",
				 caps->backends[TK_COLLECT_CPU].reason);
		return -EOPNOTSUPP;
	} else if (backend != TK_BACKEND_BPF && backend != TK_BACKEND_PERF) {
		return -EINVAL;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = o;
	if (!c->opts.freq_hz)
		c->opts.freq_hz = 99;
	c->be = backend == TK_BACKEND_BPF ? &tk_cpu_backend_bpf : &tk_cpu_backend_perf;
	c->periods_only = c->opts.periods_only;
	c->stacks = tk_stacks__new();
	sopts.proc_root = c->opts.proc_root;
	sopts.unwind_tables = c->opts.unwind != TK_UNWIND_FP && !c->opts.kernel_only;
	err = c->stacks ? tk_symbolizer__new(&sopts, &c->sym) : -ENOMEM;
	if (err) {
		tk_cpu__free(c);
		return err;
	}
	*out = c;
	return 0;
}

int tk_cpu__start(struct tk_cpu *c)
{
	c->start_ns = tk_now_ns(CLOCK_REALTIME);
	c->start_mono_ns = tk_now_ns(CLOCK_MONOTONIC);
	return c->be->start(c);
}

int tk_cpu__poll(struct tk_cpu *c, int timeout_ms)
{
	int err = c->be->poll(c, timeout_ms);

	/* JIT code named while its process lives */
	if (!c->opts.kernel_only)
		tk_symbolizer__tick(c->sym);
	return err == -EINTR ? 0 : err;
}

void tk_cpu__stats(const struct tk_cpu *c, struct tk_cpu_stats *st)
{
	int i;

	st->samples = c->samples;
	st->processes = c->processes;
	st->lost = 0;
	for (i = 0; i < TK_LOSS__COUNT; i++)
		if (i != TK_LOSS_UNSYMBOLIZED)
			st->lost += c->losses[i];
}

const char *tk_cpu__backend(const struct tk_cpu *c)
{
	return c->be->name;
}

/* Off-CPU time: what the profile holds of the waits that began before the capture. */
static void seed_notes(const struct tk_cpu *c, struct tk_profile *p)
{
	if (c->be == &tk_cpu_backend_perf) {
		tk_profile__add_comment(p, "off-CPU time: perf sees a wait only when its thread "
					"switches out during the capture: a thread blocked since "
					"before it and not woken in it is not seen (the bpf backend "
					"sees it)");
		return;
	}
	if (c->seed_why[0]) {
		tk_profile__add_comment(p, "off-CPU time: waits that began before the capture and "
					"did not end in it are not seen: %s", c->seed_why);
		return;
	}
	tk_profile__add_comment(p, "off-CPU time: %" PRIu64 " threads in scope were off the CPU "
				"when the capture began (found by a task iterator in %" PRId64
				" ms): their waits count from then, labelled off_cpu_began="
				"before_capture, with off_cpu_before_ns how long they had been off "
				"the CPU before it (the scheduler's clock, within milliseconds)%s%s",
				c->seeded, c->seed_ms, c->seed_note[0] ? "; " : "", c->seed_note);
}

/* The profile of table @t with the loss and unwinder counters @losses and @unw. */
static int build(struct tk_cpu *c, const struct tk_stacks *t, uint64_t *losses, const uint64_t *unw,
		 int64_t start_real_ns, int64_t start_mono_ns, int64_t end_mono_ns, bool whole,
		 struct tk_profile **out)
{
	uint64_t unsymbolized = 0, jit_unnamed = 0;
	/* the counts this profile's span began with: 0 for the whole run */
	uint64_t from_records = whole ? 0 : c->rot_records;
	uint64_t from_switches = whole ? 0 : c->rot_off_switches;
	uint64_t from_thinned = whole ? 0 : c->rot_off_thinned;
	struct tk_profile *p;
	int err, i;

	*out = NULL;
	p = tk_profile__new_cpu(c->be->name, c->opts.freq_hz);
	if (!p)
		return -ENOMEM;
	if (c->opts.off_cpu && tk_profile__add_off_cpu(p)) {
		tk_profile__free(p);
		return -EINVAL;
	}
	if (c->opts.off_cpu && c->opts.view_off_cpu)
		p->default_sample_type = "off_cpu";
	p->time_nanos = start_real_ns;
	p->duration_nanos = (end_mono_ns ? end_mono_ns : tk_now_ns(CLOCK_MONOTONIC)) - start_mono_ns;
	/* the profiled program's file first in pprof ("File:"), as it was when captured */
	if (c->opts.nr_pids && tk_symbolizer__exe(c->sym, c->opts.pids[0]))
		err = tk_profile__set_main_file(p, tk_symbolizer__exe(c->sym, c->opts.pids[0]));
	else if (c->opts.nr_pids)
		err = tk_profile__set_main_pid(p, c->opts.proc_root, c->opts.pids[0]);
	else
		err = tk_profile__add_comment(p, "a whole-system profile: no one main program "
					      "(pprof's \"File:\" names the first mapping)");
	err = err == -ENOSPC ? 0 : err;
	if (!err)
		err = tk_cpu_profile__build(t, c->sym, p, &unsymbolized, &jit_unnamed);
	if (err) {
		tk_profile__free(p);
		return err;
	}
	for (i = 0; i < (int)p->nr_samples && c->nr_seeds; i++) {
		struct tk_sample *smp = &p->samples[i];
		const struct tk_cpu_seed_thread *sd;

		sd = smp->began_before ? tk_cpu_seed__find(c, smp->pid, smp->tid) : NULL;
		if (sd && sd->before_ns > 0)
			smp->off_before_ns = sd->before_ns;
	}
	losses[TK_LOSS_UNSYMBOLIZED] = unsymbolized;
	if (!c->opts.user_only && tk_symbolizer__kernel_status(c->sym) == -EPERM)
		tk_profile__add_comment(p, "kernel frames unnamed: /proc/kallsyms shows zero "
				       "addresses (kernel.kptr_restrict); run as root with "
				       "kptr_restrict at most 1");
	if (c->be == &tk_cpu_backend_perf && tk_cpu_perf__note(c)[0])
		tk_profile__add_comment(p, "%s", tk_cpu_perf__note(c));
	for (i = 0; i < TK_LOSS__COUNT; i++)
		tk_profile__set_loss(p, tk_cpu_loss__name(i), losses[i]);
	if (!c->opts.kernel_only)
		tk_locs__report_jit(p, c->sym, jit_unnamed);
	if (!c->opts.kernel_only) {
		tk_unw__report(p, unw, c->unwinding ? &c->unw_info : NULL);
		tk_unw_table__report(p, tk_symbolizer__unwind_over_limit(c->sym));
	}
	if (c->unwind_note[0])
		tk_profile__add_comment(p, "%s", c->unwind_note);
	if (c->kernel_note[0])
		tk_profile__add_comment(p, "%s", c->kernel_note);
	if (c->mmaps_note[0])
		tk_profile__add_comment(p, "%s", c->mmaps_note);
	if (c->drain_calls)
		tk_profile__add_comment(p, "maps drained: %" PRIu64 " counts in %" PRIu64
					" bpf(2) calls (%s)", c->drain_entries, c->drain_calls,
					c->drain_batched ? "batched" : "one by one");
	if (c->off_cpu_note[0])
		tk_profile__add_comment(p, "%s", c->off_cpu_note);
	if (c->opts.off_cpu)
		seed_notes(c, p);
	/* of this profile's span: an interval's or period's counts since the previous one */
	if (c->off_thinned > from_thinned)
		tk_profile__add_comment(p, "off-CPU time estimated: %" PRIu64 " of %" PRIu64
					" switch-outs were taken with stacks, each weighed for the "
					"ones after it that were not (past %u stacks a second on a "
					"CPU; --off-cpu-stacks)",
					(c->off_switches - from_switches) -
					(c->off_thinned - from_thinned),
					c->off_switches - from_switches, c->opts.off_cpu_stacks ?
					c->opts.off_cpu_stacks : TK_CPU_OFF_CPU_STACKS_DEFAULT);
	if (c->maps_from_records > from_records)
		tk_profile__add_comment(p, "%" PRIu64 " processes were gone before their maps could "
					"be read: named from the kernel's MMAP2 records",
					c->maps_from_records - from_records);
	if (c->periods_only) {
		struct tk_symbolizer_stats ss;

		tk_symbolizer__stats(c->sym, &ss);
		tk_profile__add_comment(p, "a period of a rotating capture: names held for %" PRIu64
					" processes, %" PRIu64 " ended ones forgotten so far",
					ss.procs_held, ss.procs_pruned);
	}
	*out = p;
	return 0;
}

int tk_cpu__build_profile(struct tk_cpu *c, int64_t start_real_ns, int64_t start_mono_ns,
			  struct tk_profile **out)
{
	return build(c, c->stacks, c->losses, c->unwind, start_real_ns, start_mono_ns, 0, true, out);
}

static uint64_t grew(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

void tk_cpu__ended(struct tk_cpu *c, uint32_t pid, uint32_t gen)
{
	/* a run that keeps everything symbolizes everything at the end */
	if (c->periods_only)
		tk_symbolizer__retire(c->sym, pid, gen);
}

/*
 * periods_only: the period is what c->stacks holds after the cut, built and
 * then forgotten. The processes that ended before the previous cut go from
 * the symbolizer now: a whole period later, no sample of theirs can still
 * be on its way (a perf ring read behind another, a BPF program writing
 * as the epoch moved). So what the session holds is two periods' processes
 * and the live ones, however long it runs.
 */
static int rotate_period(struct tk_cpu *c, bool final, int64_t from_real, int64_t from_mono,
			 int64_t end_mono, struct tk_profile **out)
{
	uint64_t losses[TK_LOSS__COUNT], unw[UNW_CNT__COUNT], mark;
	struct tk_stacks *fresh = tk_stacks__new();
	int err, i;

	/* no memory: nothing is cut, and the next period also holds this one's samples */
	if (!fresh)
		return -ENOMEM;
	err = final ? c->be->drain(c) : c->be->cut ? c->be->cut(c) : 0;
	if (err) {
		tk_stacks__free(fresh);
		return err;
	}
	mark = tk_symbolizer__retired(c->sym);
	for (i = 0; i < TK_LOSS__COUNT; i++)
		losses[i] = grew(c->losses[i], c->rot_losses[i]);
	for (i = 0; i < UNW_CNT__COUNT; i++)
		unw[i] = grew(c->unwind[i], c->rot_unwind[i]);
	err = build(c, c->stacks, losses, unw, from_real, from_mono, end_mono, false, out);
	if (err) {
		tk_stacks__free(fresh);
		return err;
	}
	tk_symbolizer__prune(c->sym, c->rot_mark);
	c->rot_mark = mark;
	tk_stacks__free(c->stacks);
	c->stacks = fresh;
	return 1;
}

int tk_cpu__rotate(struct tk_cpu *c, bool final, struct tk_profile **out)
{
	uint64_t losses[TK_LOSS__COUNT], unw[UNW_CNT__COUNT];
	int64_t now_real, now_mono, from_real, from_mono;
	struct tk_stacks *iv, *copy = NULL;
	int err, i;

	*out = NULL;
	from_real = c->rotated ? c->rot_real_ns : c->start_ns;
	from_mono = c->rotated ? c->rot_mono_ns : c->start_mono_ns;
	if (c->periods_only) {
		/* the cut is where this period ends and the next one starts */
		now_real = tk_now_ns(CLOCK_REALTIME);
		now_mono = tk_now_ns(CLOCK_MONOTONIC);
		err = rotate_period(c, final, from_real, from_mono, now_mono, out);
		if (err <= 0)
			return err;
		goto next;
	}
	err = final ? c->be->drain(c) : c->be->collect ? c->be->collect(c) : 0;
	if (err)
		return err;
	now_real = tk_now_ns(CLOCK_REALTIME);
	now_mono = tk_now_ns(CLOCK_MONOTONIC);
	iv = tk_stacks__new();
	if (!iv)
		return -ENOMEM;
	err = tk_stacks__add_diff(iv, c->stacks, c->rot_prev);
	for (i = 0; i < TK_LOSS__COUNT; i++)
		losses[i] = grew(c->losses[i], c->rot_losses[i]);
	for (i = 0; i < UNW_CNT__COUNT; i++)
		unw[i] = grew(c->unwind[i], c->rot_unwind[i]);
	if (!err)
		err = build(c, iv, losses, unw, from_real, from_mono, 0, false, out);
	tk_stacks__free(iv);
	if (err)
		return err;

	/* where the next interval starts */
	copy = tk_stacks__new();
	if (copy && tk_stacks__add_diff(copy, c->stacks, NULL)) {
		tk_stacks__free(copy);
		copy = NULL;
	}
	if (!copy)
		return 0;	/* the next interval will also hold this one's samples */
	tk_stacks__free(c->rot_prev);
	c->rot_prev = copy;
next:
	memcpy(c->rot_losses, c->losses, sizeof(c->rot_losses));
	memcpy(c->rot_unwind, c->unwind, sizeof(c->rot_unwind));
	c->rot_records = c->maps_from_records;
	c->rot_off_switches = c->off_switches;
	c->rot_off_thinned = c->off_thinned;
	c->rot_real_ns = now_real;
	c->rot_mono_ns = now_mono;
	c->rotated = true;
	return 0;
}

int tk_cpu__finish(struct tk_cpu *c, struct tk_profile **out)
{
	struct tk_stacks *empty;
	int err = c->be->drain(c);

	*out = NULL;
	if (!err)
		err = tk_cpu__build_profile(c, c->start_ns, c->start_mono_ns, out);
	/* the raw stacks are in the profile now: their memory goes before the outputs are written */
	empty = err ? NULL : tk_stacks__new();
	if (empty) {
		tk_stacks__free(c->stacks);
		c->stacks = empty;
	}
	return err;
}

void tk_cpu__free(struct tk_cpu *c)
{
	if (!c)
		return;
	if (c->be && c->priv)
		c->be->free(c);
	tk_symbolizer__free(c->sym);
	tk_stacks__free(c->stacks);
	tk_stacks__free(c->rot_prev);
	free(c);
}
