// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The CPU collector in the session core (core/session.h): bpf, then perf. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/opts.h"
#include "core/session.h"
#include "cpu/cpu.h"

static int cpu_open(struct tk_session *s, enum tk_backend b, char *why, size_t why_sz)
{
	struct tk_cpu_opts o = *(const struct tk_cpu_opts *)s->copts;
	struct tk_cpu *c;
	int err;

	if (b != TK_BACKEND_NONE)
		o.backend = b;
	if (s->cmd_pid > 0) {
		/* the command and every process it starts */
		o.pids[o.nr_pids++] = s->cmd_pid;
		o.follow_children = true;
	}
	err = tk_cpu__open(&o, s->caps, &c, why, why_sz);
	if (err)
		return err;
	/* a JVM's compiled code is named once it is asked for its perf map */
	tk_symbolizer__set_jit_ask(c->sym, !o.no_jit_ask && !o.kernel_only, tk_session__note, s);
	s->coll = c;
	return 0;
}

static int cpu_start(struct tk_session *s, char *why, size_t why_sz)
{
	struct tk_cpu *c = s->coll;
	int err = tk_cpu__start(c);

	if (err)
		snprintf(why, why_sz, "cannot start %s sampling: %s%s", tk_cpu__backend(c),
			 c->start_why[0] ? c->start_why : strerror(-err),
			 err == -EPERM || err == -EACCES ? " (see 'tracekit caps')" : "");
	return err;
}

static int cpu_poll(struct tk_session *s, int timeout_ms)
{
	return tk_cpu__poll(s->coll, timeout_ms);
}

static int cpu_rotate(struct tk_session *s, bool final, struct tk_result *r)
{
	struct tk_cpu *c = s->coll;

	/* the whole run at the end, whatever intervals were taken; or its last period */
	if (final && !c->periods_only)
		return tk_cpu__finish(c, &r->profile);
	if (final)
		return tk_cpu__rotate(c, true, &r->profile);
	return tk_cpu__rotate(c, false, &r->profile);
}

static void cpu_stats(const struct tk_session *s, struct tk_session_stats *st)
{
	struct tk_cpu_stats cs;

	tk_cpu__stats(s->coll, &cs);
	st->events = cs.samples;
	st->processes = cs.processes;
	st->lost = cs.lost;
}

static const char *cpu_backend(const struct tk_session *s)
{
	return tk_cpu__backend(s->coll);
}

static void cpu_close(struct tk_session *s)
{
	tk_cpu__free(s->coll);
}

const struct tk_collector_ops tk_cpu_session_ops = {
	.id = TK_COLLECT_CPU,
	.chain = { TK_BACKEND_BPF, TK_BACKEND_PERF },
	.nr_chain = 2,
	.takes_command = true,
	.open = cpu_open,
	.start = cpu_start,
	.poll = cpu_poll,
	.rotate = cpu_rotate,
	.stats = cpu_stats,
	.backend = cpu_backend,
	.close = cpu_close,
};

struct tk_session *tk_session__open_cpu(const struct tk_cpu_opts *opts,
					const struct tk_session_opts *sopts, char *why,
					size_t why_sz)
{
	struct tk_cpu_opts *o = tk_session__copy_opts(opts, sizeof(*o), why, why_sz);
	int err, room = TK_CPU_MAX_PIDS - (sopts && sopts->argv ? 1 : 0);

	if (!o)
		return NULL;
	if (o->nr_pids < 0 || o->nr_pids > room)
		return tk_session__refuse(o, EINVAL, why, why_sz, "bad number of processes (%d)",
					  o->nr_pids);
	if (o->cgroup && (err = tk_session__check_cgroup(o->cgroup, why, why_sz)))
		return tk_session__refuse(o, -err, why, why_sz, NULL);
	return tk_session__new(&tk_cpu_session_ops, o, o->backend == TK_BACKEND_NONE, sopts,
			       o->pids, o->nr_pids, why, why_sz);
}
