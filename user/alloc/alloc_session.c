// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The allocation collector in the session core (core/session.h): bpf, then
 * jemalloc's own profiler. It starts its command itself: the command's
 * environment depends on the backend and hook (LD_PRELOAD, MALLOC_CONF).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "alloc/alloc_je.h"
#include "alloc/alloc_rate.h"
#include "core/opts.h"
#include "core/session.h"

static int alloc_open(struct tk_session *s, enum tk_backend b, char *why, size_t why_sz)
{
	struct tk_alloc_opts o = *(const struct tk_alloc_opts *)s->copts;
	struct tk_alloc *a;
	int err;

	if (b != TK_BACKEND_NONE)
		o.backend = b;
	o.argv = s->sopts.argv;
	err = tk_alloc__open(&o, s->caps, &a, why, why_sz);
	if (err)
		return err;
	/* a JVM's compiled code is named once it is asked for its perf map */
	tk_alloc__set_jit_ask(a, !o.no_jit_ask, tk_session__note, s);
	s->coll = a;
	return 0;
}

static int alloc_start(struct tk_session *s, char *why, size_t why_sz)
{
	int err = tk_alloc__start(s->coll, why, why_sz);

	if (err && (err == -EPERM || err == -EACCES) && why[0] && strlen(why) + 24 < why_sz)
		strcat(why, " (see 'tracekit caps')");
	return err;
}

static int alloc_poll(struct tk_session *s, int timeout_ms)
{
	return tk_alloc__poll(s->coll, timeout_ms);
}

static int alloc_rotate(struct tk_session *s, bool final, struct tk_result *r)
{
	const struct tk_alloc_opts *o = s->copts;
	int err;

	if (!final)
		return tk_alloc__snapshot(s->coll, o->min_age_ns, &r->profile);
	err = tk_alloc__finish(s->coll, o->min_age_ns, &r->profile);
	if (err && !strcmp(tk_alloc__backend(s->coll), "jemalloc") &&
	    tk_alloc_je__error(s->coll))
		tk_log__msg(&s->log, TK_LOG_WARN, "tracekit: alloc: %s\n",
			    tk_alloc_je__error(s->coll));
	return err;
}

static void alloc_stats(const struct tk_session *s, struct tk_session_stats *st)
{
	struct tk_alloc_stats as;

	tk_alloc__stats(s->coll, &as);
	st->events = as.allocs + as.growth_events;
	st->live = as.live;
	st->lost = as.lost;
}

static uint64_t alloc_traps(const struct tk_session *s)
{
	struct tk_alloc_stats as;

	tk_alloc__stats(s->coll, &as);
	return as.calls;
}

static const char *alloc_backend(const struct tk_session *s)
{
	return tk_alloc__backend(s->coll);
}

static const char *alloc_describe(const struct tk_session *s)
{
	return tk_alloc__describe(s->coll);
}

static int alloc_command_pid(const struct tk_session *s)
{
	return tk_alloc__pid(s->coll);
}

static void alloc_close(struct tk_session *s)
{
	tk_alloc__free(s->coll);
}

const struct tk_collector_ops tk_alloc_session_ops = {
	.id = TK_COLLECT_ALLOC,
	.chain = { TK_BACKEND_BPF, TK_BACKEND_JEMALLOC },
	.nr_chain = 2,
	.takes_command = true,
	.spawns_command = true,
	.open = alloc_open,
	.start = alloc_start,
	.poll = alloc_poll,
	.rotate = alloc_rotate,
	.stats = alloc_stats,
	.backend = alloc_backend,
	.describe = alloc_describe,
	.command_pid = alloc_command_pid,
	.traps = alloc_traps,
	.close = alloc_close,
};

struct tk_session *tk_session__open_alloc(const struct tk_alloc_opts *opts,
					  const struct tk_session_opts *sopts, char *why,
					  size_t why_sz)
{
	struct tk_alloc_opts *o = tk_session__copy_opts(opts, sizeof(*o), why, why_sz);
	bool cmd = sopts && sopts->argv;

	if (!o)
		return NULL;
	if (o->argv || (!o->pid) == !cmd)
		return tk_session__refuse(o, EINVAL, why, why_sz, "give a process (opts->pid) or a "
					  "command (sopts->argv)");
	return tk_session__new(&tk_alloc_session_ops, o, o->backend == TK_BACKEND_NONE, sopts,
			       &o->pid, o->pid ? 1 : 0, why, why_sz);
}

int tk_alloc__measure(int pid, const struct tk_caps *caps, int ms, struct tk_alloc_rate *out,
		      char *why, size_t why_sz)
{
	struct tk_alloc_rate r;
	size_t sz;
	int err;

	if (!out || out->sz < sizeof(size_t) || pid <= 0 || ms < 0)
		return -EINVAL;
	sz = out->sz;
	err = tk_alloc__measure_rate(pid, caps, ms ? ms : 300, &r, why, why_sz);
	if (err)
		return err;
	/* a caller built against an older header gets what its struct holds */
	memcpy(out, &r, sz < sizeof(r) ? sz : sizeof(r));
	out->sz = sz;
	return 0;
}
