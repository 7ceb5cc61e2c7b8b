// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA collector in the session core (core/session.h): bpf, then the
 * vmstat counters. Intervals come from the collector's cumulative totals.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/opts.h"
#include "core/session.h"
#include "numa/numa_report.h"

static int numa_open(struct tk_session *s, enum tk_backend b, char *why, size_t why_sz)
{
	struct tk_numa_opts o = *(const struct tk_numa_opts *)s->copts;
	struct tk_numa *n;
	int err;

	if (b != TK_BACKEND_NONE)
		o.backend = b;
	err = tk_numa__open(&o, s->caps, &n, why, why_sz);
	if (err)
		return err;
	if (o.stacks && strcmp(tk_numa__backend(n), "bpf")) {
		snprintf(why, why_sz, "--stacks needs the bpf backend; the %s backend has no stacks",
			 tk_numa__backend(n));
		tk_numa__free(n);
		return -ENOTSUP;
	}
	s->coll = n;
	return 0;
}

static int numa_start(struct tk_session *s, char *why, size_t why_sz)
{
	int err = tk_numa__start(s->coll, why, why_sz);

	if (err && (err == -EPERM || err == -EACCES) && why[0] && strlen(why) + 24 < why_sz)
		strcat(why, " (see 'tracekit caps')");
	return err;
}

static int numa_poll(struct tk_session *s, int timeout_ms)
{
	return tk_numa__poll(s->coll, timeout_ms);
}

static int write_report(const void *report, enum tk_format fmt, FILE *f, int top)
{
	return fmt == TK_FORMAT_JSON ? tk_numa_report__write_json(report, f) :
				       tk_numa_report__write_text(report, f, top);
}

static void free_report(void *report)
{
	tk_numa_report__free(report);
	free(report);
}

static void note_report(void *report, const char *note)
{
	tk_numa_report__missing(report, "%s", note);
}

static int numa_rotate(struct tk_session *s, bool final, struct tk_result *r)
{
	const struct tk_numa_opts *o = s->copts;
	struct tk_numa_report *rep = calloc(1, sizeof(*rep));
	int err;

	if (!rep)
		return -ENOMEM;
	err = final ? tk_numa__collect(s->coll, NULL, rep) : tk_numa__collect(s->coll, rep, NULL);
	if (err) {
		free(rep);
		return err;
	}
	r->report = rep;
	r->write_report = write_report;
	r->free_report = free_report;
	r->note_report = note_report;
	if (final && o->stacks)
		return tk_numa__stacks(s->coll, &r->profile);
	return 0;
}

static const char *numa_backend(const struct tk_session *s)
{
	return tk_numa__backend(s->coll);
}

static void numa_close(struct tk_session *s)
{
	tk_numa__free(s->coll);
}

const struct tk_collector_ops tk_numa_session_ops = {
	.id = TK_COLLECT_NUMA,
	.chain = { TK_BACKEND_BPF, TK_BACKEND_VMSTAT },
	.nr_chain = 2,
	.open = numa_open,
	.start = numa_start,
	.poll = numa_poll,
	.rotate = numa_rotate,
	.backend = numa_backend,
	.close = numa_close,
};

struct tk_session *tk_session__open_numa(const struct tk_numa_opts *opts,
					 const struct tk_session_opts *sopts, char *why,
					 size_t why_sz)
{
	struct tk_numa_opts *o = tk_session__copy_opts(opts, sizeof(*o), why, why_sz);
	int err;

	if (!o)
		return NULL;
	if (o->nr_pids < 0 || o->nr_pids > TK_NUMA_MAX_PIDS)
		return tk_session__refuse(o, EINVAL, why, why_sz, "bad number of processes (%d)",
					  o->nr_pids);
	if (o->stacks && o->backend == TK_BACKEND_VMSTAT)
		return tk_session__refuse(o, EINVAL, why, why_sz, "--stacks needs the bpf backend: "
					  "vmstat has no stacks");
	if (o->cgroup && (err = tk_session__check_cgroup(o->cgroup, why, why_sz)))
		return tk_session__refuse(o, -err, why, why_sz, NULL);
	return tk_session__new(&tk_numa_session_ops, o, o->backend == TK_BACKEND_NONE, sopts,
			       o->pids, o->nr_pids, why, why_sz);
}
