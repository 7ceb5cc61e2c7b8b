// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A NUMA migration session: the backend the capability snapshot chose (or
 * the one asked for), the topology from the snapshot, and intervals derived
 * from the backend's cumulative totals (this total minus the previous one),
 * so a backend only ever counts since its start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/opts.h"
#include "numa/numa_int.h"
#include "numa/numa_report.h"

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Mark the CPUs of cpulist @list ("0-3,8") as on @node in @map (@nr entries).
 * Returns 0 or -EINVAL on a malformed list; CPUs past @nr are ignored.
 */
static int cpulist_apply(const char *list, int node, int *map, int nr)
{
	const char *p = list;

	while (*p && *p != '\n') {
		char *end;
		long a, b, c;

		a = strtol(p, &end, 10);
		if (end == p || a < 0)
			return -EINVAL;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -EINVAL;
			p = end;
		}
		for (c = a; c <= b && c < nr; c++)
			map[c] = node;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return 0;
}

/*
 * Call one of the vmstat backend's open/start with its own state in priv
 * (the bpf backend's is put back after).
 */
static int companion(struct tk_numa *n, int (*fn)(struct tk_numa *, char *, size_t), char *why,
		     size_t why_sz)
{
	void *mine = n->priv;
	int err;

	n->priv = n->vmstat_priv;
	err = fn(n, why, why_sz);
	n->vmstat_priv = n->priv;
	n->priv = mine;
	return err;
}

/* The vmstat companion's counters, into @r's vmstat and numastat parts. */
static void companion_collect(struct tk_numa *n, struct tk_numa_report *r)
{
	struct tk_numa_report v;
	void *mine = n->priv;
	int err;

	tk_numa_report__init(&v, tk_numa_backend_vmstat.name, n->nr_nodes);
	n->priv = n->vmstat_priv;
	err = tk_numa_backend_vmstat.collect(n, &v);
	n->vmstat_priv = n->priv;
	n->priv = mine;
	if (!err && v.have_vmstat) {
		r->have_vmstat = true;
		r->numa_pages_migrated = v.numa_pages_migrated;
		r->pgmigrate_success = v.pgmigrate_success;
		r->pgmigrate_fail = v.pgmigrate_fail;
		r->numa_hint_faults = v.numa_hint_faults;
		r->numa_hint_faults_local = v.numa_hint_faults_local;
		r->pgpromote_success = v.pgpromote_success;
		r->pgdemote_total = v.pgdemote_total;
		r->numa_pte_updates = v.numa_pte_updates;
		r->vmstat_thp_migration_success = v.vmstat_thp_migration_success;
		r->vmstat_thp_migration_fail = v.vmstat_thp_migration_fail;
	}
	if (!err && v.have_numastat) {
		r->have_numastat = true;
		memcpy(r->numastat, v.numastat, sizeof(r->numastat));
		r->nr_numastat = v.nr_numastat;
	}
	tk_numa_report__free(&v);
}

int tk_numa__open(const struct tk_numa_opts *opts, const struct tk_caps *caps,
		  struct tk_numa **out, char *why, size_t why_sz)
{
	const struct tk_numa_backend *be;
	struct tk_numa_opts o;
	enum tk_backend b;
	struct tk_numa *n;
	int err, i;

	*out = NULL;
	if (why_sz)
		why[0] = '\0';
	if (!opts || !caps || TK_OPTS_COPY(&o, opts) || o.nr_pids < 0 ||
	    o.nr_pids > TK_NUMA_MAX_PIDS) {
		snprintf(why, why_sz, "invalid options");
		return -EINVAL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(why, why_sz, "out of memory");
		return -ENOMEM;
	}
	n->opts = o;
	opts = &n->opts;
	n->caps = caps;

	b = opts->backend != TK_BACKEND_NONE ? opts->backend : caps->backends[TK_COLLECT_NUMA].backend;
	if (b == TK_BACKEND_BPF) {
		be = &tk_numa_backend_bpf;
	} else if (b == TK_BACKEND_VMSTAT) {
		be = &tk_numa_backend_vmstat;
	} else if (b == TK_BACKEND_NONE) {
		snprintf(why, why_sz, "no backend: %s", caps->backends[TK_COLLECT_NUMA].reason);
		err = -ENOTSUP;
		goto fail;
	} else {
		snprintf(why, why_sz, "backend %s does not trace NUMA migrations",
			 tk_backend__name(b));
		err = -EINVAL;
		goto fail;
	}

	for (i = 0; i < (int)(sizeof(n->cpu_node) / sizeof(n->cpu_node[0])); i++)
		n->cpu_node[i] = -1;
	n->nr_nodes = caps->numa.nr_nodes;
	for (i = 0; i < caps->numa.nr_nodes; i++)
		cpulist_apply(caps->numa.nodes[i].cpus, caps->numa.nodes[i].id, n->cpu_node,
			      sizeof(n->cpu_node) / sizeof(n->cpu_node[0]));
	if (n->nr_nodes < 1)
		n->nr_nodes = 1;	/* a kernel without NUMA has its one node */

	if (opts->stacks) {
		struct tk_symbolizer_opts so = {
			.sz = sizeof(so),
			.proc_root = opts->proc_root,
			.unwind_tables = opts->unwind != TK_UNWIND_FP,
		};

		err = tk_symbolizer__new(&so, &n->sym);
		if (err) {
			snprintf(why, why_sz, "cannot set up symbolization: %s", strerror(-err));
			goto fail;
		}
	}
	n->be = be;	/* from here on, its free() cleans up after it */
	err = be->open(n, why, why_sz);
	if (err)
		goto fail;
	if (be != &tk_numa_backend_vmstat) {
		char vwhy[64];

		/* best effort: without them the report says what it lacks */
		n->with_vmstat = !companion(n, tk_numa_backend_vmstat.open, vwhy, sizeof(vwhy));
	}
	*out = n;
	return 0;
fail:
	tk_numa__free(n);
	return err;
}

int tk_numa__start(struct tk_numa *n, char *why, size_t why_sz)
{
	int err;

	if (why_sz)
		why[0] = '\0';
	n->start_ns = clock_ns(CLOCK_REALTIME);
	n->start_mono_ns = n->last_mono_ns = clock_ns(CLOCK_MONOTONIC);
	err = n->be->start(n, why, why_sz);
	if (err)
		return err;
	if (n->with_vmstat) {
		char vwhy[64];

		n->with_vmstat = !companion(n, tk_numa_backend_vmstat.start, vwhy, sizeof(vwhy));
	}
	/* the start of the counting, not of the attaching */
	n->start_ns = clock_ns(CLOCK_REALTIME);
	n->start_mono_ns = n->last_mono_ns = clock_ns(CLOCK_MONOTONIC);
	return 0;
}

int tk_numa__poll(struct tk_numa *n, int timeout_ms)
{
	int err = n->be->poll(n, timeout_ms);

	/* JIT code named while its process lives */
	if (n->sym)
		tk_symbolizer__tick(n->sym);
	return err;
}

int tk_numa__collect(struct tk_numa *n, struct tk_numa_report *interval,
		     struct tk_numa_report *total)
{
	struct tk_numa_report t, empty;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	int err;

	if (interval)
		tk_numa_report__init(interval, n->be->name, n->nr_nodes);
	if (total)
		tk_numa_report__init(total, n->be->name, n->nr_nodes);
	tk_numa_report__init(&t, n->be->name, n->nr_nodes);
	err = n->be->collect(n, &t);
	if (err) {
		tk_numa_report__free(&t);
		return err;
	}
	if (n->with_vmstat)
		companion_collect(n, &t);
	t.backend = n->be->name;
	t.nr_nodes = n->nr_nodes;
	t.start_ns = n->start_ns;
	t.duration_ns = now - n->start_mono_ns;
	tk_numa_report__sort(&t);

	if (interval) {
		tk_numa_report__init(&empty, t.backend, t.nr_nodes);
		err = tk_numa_report__diff(interval, &t, n->have_last ? &n->last : &empty);
		if (err) {
			tk_numa_report__free(&t);
			return err;
		}
		interval->start_ns = n->start_ns + (n->last_mono_ns - n->start_mono_ns);
		interval->duration_ns = now - n->last_mono_ns;
	}

	tk_numa_report__free(&n->last);
	err = tk_numa_report__copy(&n->last, &t);
	if (err) {
		n->have_last = false;
		tk_numa_report__free(&t);
		if (interval)
			tk_numa_report__free(interval);
		return err;
	}
	n->have_last = true;
	n->last_mono_ns = now;

	if (total)
		*total = t;
	else
		tk_numa_report__free(&t);
	return 0;
}

int tk_numa__stacks(struct tk_numa *n, struct tk_profile **out)
{
	*out = NULL;
	if (!n->opts.stacks || !n->be->stacks)
		return -ENOTSUP;
	return n->be->stacks(n, out);
}

const char *tk_numa__backend(const struct tk_numa *n)
{
	return n->be ? n->be->name : "none";
}

void tk_numa__free(struct tk_numa *n)
{
	if (!n)
		return;
	if (n->be && n->be->free)
		n->be->free(n);
	if (n->vmstat_priv) {
		n->priv = n->vmstat_priv;
		tk_numa_backend_vmstat.free(n);
		n->vmstat_priv = NULL;
	}
	tk_symbolizer__free(n->sym);
	tk_numa_report__free(&n->last);
	free(n);
}
