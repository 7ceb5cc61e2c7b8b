// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA backend without eBPF: /proc/vmstat and each node's numastat,
 * sampled at the start and at every collect; the report is the difference.
 *
 * What the counters can say: pages migrated and failed (pgmigrate_*), pages
 * NUMA balancing moved (numa_pages_migrated: reason numa_misplaced, which
 * includes promotions, pgpromote_success), pages demoted (pgdemote_*: reason
 * demotion), THP migrations, hint faults, and each node's allocation
 * hits and misses. What they cannot: who, from which node to which, the
 * other reasons, and how long a migration took — said in missing[].
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "numa/numa_int.h"

enum vm_field {
	VM_NUMA_PAGES_MIGRATED,
	VM_PGMIGRATE_SUCCESS,
	VM_PGMIGRATE_FAIL,
	VM_NUMA_HINT_FAULTS,
	VM_NUMA_HINT_FAULTS_LOCAL,
	VM_NUMA_PTE_UPDATES,
	VM_PGPROMOTE_SUCCESS,
	VM_PGDEMOTE,			/* the sum of every pgdemote_* */
	VM_THP_MIGRATION_SUCCESS,
	VM_THP_MIGRATION_FAIL,
	VM_THP_MIGRATION_SPLIT,
	VM__COUNT,
};

static const char *const vm_names[VM__COUNT] = {
	[VM_NUMA_PAGES_MIGRATED] = "numa_pages_migrated",
	[VM_PGMIGRATE_SUCCESS] = "pgmigrate_success",
	[VM_PGMIGRATE_FAIL] = "pgmigrate_fail",
	[VM_NUMA_HINT_FAULTS] = "numa_hint_faults",
	[VM_NUMA_HINT_FAULTS_LOCAL] = "numa_hint_faults_local",
	[VM_NUMA_PTE_UPDATES] = "numa_pte_updates",
	[VM_PGPROMOTE_SUCCESS] = "pgpromote_success",
	[VM_PGDEMOTE] = "pgdemote_",	/* a prefix: kswapd, direct, khugepaged, proactive */
	[VM_THP_MIGRATION_SUCCESS] = "thp_migration_success",
	[VM_THP_MIGRATION_FAIL] = "thp_migration_fail",
	[VM_THP_MIGRATION_SPLIT] = "thp_migration_split",
};

struct vm_sample {
	uint64_t v[VM__COUNT];
	bool has[VM__COUNT];
	int nr_nodes;
	struct tk_numa_nodestat nodes[TK_NUMA_MAX_NODESTAT];
	bool node_ok[TK_NUMA_MAX_NODESTAT];
};

struct vm_priv {
	const char *proc_root;
	const char *sys_root;
	int nodes[TK_NUMA_MAX_NODESTAT];	/* node ids */
	int nr_nodes;
	struct vm_sample first;
};

static int parse_vmstat(const char *text, struct vm_sample *s)
{
	const char *line = text;

	while (*line) {
		const char *nl = strchr(line, '\n'), *sp = strchr(line, ' ');
		size_t len;
		int i;

		if (!nl)
			nl = line + strlen(line);
		if (sp && sp < nl) {
			len = sp - line;
			for (i = 0; i < VM__COUNT; i++) {
				bool prefix = i == VM_PGDEMOTE;
				size_t nlen = strlen(vm_names[i]);

				if (prefix ? len > nlen && !strncmp(line, vm_names[i], nlen)
					   : len == nlen && !strncmp(line, vm_names[i], nlen)) {
					s->v[i] += strtoull(sp + 1, NULL, 10);
					s->has[i] = true;
					break;
				}
			}
		}
		line = *nl ? nl + 1 : nl;
	}
	return 0;
}

/* "numa_hit 123\nnuma_miss 0\n..." */
static void parse_numastat(const char *text, struct tk_numa_nodestat *n)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "numa_hit", offsetof(struct tk_numa_nodestat, numa_hit) },
		{ "numa_miss", offsetof(struct tk_numa_nodestat, numa_miss) },
		{ "numa_foreign", offsetof(struct tk_numa_nodestat, numa_foreign) },
		{ "interleave_hit", offsetof(struct tk_numa_nodestat, interleave_hit) },
		{ "local_node", offsetof(struct tk_numa_nodestat, local_node) },
		{ "other_node", offsetof(struct tk_numa_nodestat, other_node) },
	};
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *p = text;
		size_t len = strlen(fields[i].name);

		while ((p = strstr(p, fields[i].name))) {
			if ((p == text || p[-1] == '\n') && p[len] == ' ') {
				*(uint64_t *)((char *)n + fields[i].off) = strtoull(p + len + 1, NULL, 10);
				break;
			}
			p += len;
		}
	}
}

static int sample(struct vm_priv *vp, struct vm_sample *s)
{
	char *text = NULL, rel[96], buf[1024];
	size_t len;
	int err, i;

	memset(s, 0, sizeof(*s));
	err = tk_read_file_alloc(vp->proc_root, "vmstat", 1 << 20, &text, &len);
	if (err)
		return err;
	parse_vmstat(text, s);
	free(text);
	s->nr_nodes = vp->nr_nodes;
	for (i = 0; i < vp->nr_nodes; i++) {
		s->nodes[i].node = vp->nodes[i];
		snprintf(rel, sizeof(rel), "devices/system/node/node%d/numastat", vp->nodes[i]);
		if (tk_read_file(vp->sys_root, rel, buf, sizeof(buf)) > 0) {
			parse_numastat(buf, &s->nodes[i]);
			s->node_ok[i] = true;
		}
	}
	return 0;
}

static int vm_open(struct tk_numa *n, char *why, size_t why_sz)
{
	struct vm_priv *vp = calloc(1, sizeof(*vp));
	int i;

	if (!vp) {
		snprintf(why, why_sz, "out of memory");
		return -ENOMEM;
	}
	vp->proc_root = n->opts.proc_root ? n->opts.proc_root : "/proc";
	vp->sys_root = n->opts.sys_root ? n->opts.sys_root : "/sys";
	if (n->caps)
		for (i = 0; i < n->caps->numa.nr_nodes && vp->nr_nodes < TK_NUMA_MAX_NODESTAT; i++)
			vp->nodes[vp->nr_nodes++] = n->caps->numa.nodes[i].id;
	n->priv = vp;
	if (!tk_path_exists(vp->proc_root, "vmstat")) {
		snprintf(why, why_sz, "%s/vmstat: %s", vp->proc_root, strerror(ENOENT));
		return -ENOENT;
	}
	return 0;
}

static int vm_start(struct tk_numa *n, char *why, size_t why_sz)
{
	struct vm_priv *vp = n->priv;
	int err = sample(vp, &vp->first);

	if (err)
		snprintf(why, why_sz, "cannot read %s/vmstat: %s", vp->proc_root, strerror(-err));
	return err;
}

static int vm_poll(struct tk_numa *n, int timeout_ms)
{
	/* nothing arrives: wait; a signal ends the wait early, which is no error */
	if (timeout_ms > 0 && poll(NULL, 0, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static uint64_t delta(const struct vm_sample *now, const struct vm_sample *first, int i)
{
	return now->v[i] > first->v[i] ? now->v[i] - first->v[i] : 0;
}

static int vm_collect(struct tk_numa *n, struct tk_numa_report *r)
{
	struct vm_priv *vp = n->priv;
	struct vm_sample now;
	char list[160] = "";
	const char *blocker;
	int err, i;
	size_t off;

	err = sample(vp, &now);
	if (err)
		return err;
	r->have_vmstat = true;
	r->numa_pages_migrated = delta(&now, &vp->first, VM_NUMA_PAGES_MIGRATED);
	r->pgmigrate_success = delta(&now, &vp->first, VM_PGMIGRATE_SUCCESS);
	r->pgmigrate_fail = delta(&now, &vp->first, VM_PGMIGRATE_FAIL);
	r->numa_hint_faults = delta(&now, &vp->first, VM_NUMA_HINT_FAULTS);
	r->numa_hint_faults_local = delta(&now, &vp->first, VM_NUMA_HINT_FAULTS_LOCAL);
	r->numa_pte_updates = delta(&now, &vp->first, VM_NUMA_PTE_UPDATES);
	r->pgpromote_success = delta(&now, &vp->first, VM_PGPROMOTE_SUCCESS);
	r->pgdemote_total = delta(&now, &vp->first, VM_PGDEMOTE);
	r->vmstat_thp_migration_success = delta(&now, &vp->first, VM_THP_MIGRATION_SUCCESS);
	r->vmstat_thp_migration_fail = delta(&now, &vp->first, VM_THP_MIGRATION_FAIL);

	r->total.succeeded = r->pgmigrate_success;
	r->total.failed = r->pgmigrate_fail;
	r->total.thp_succeeded = r->vmstat_thp_migration_success;
	r->total.thp_failed = r->vmstat_thp_migration_fail;
	r->total.thp_split = delta(&now, &vp->first, VM_THP_MIGRATION_SPLIT);
	/* the two reasons vmstat counts on their own (have_reasons stays false: not all) */
	r->by_reason[TK_MR_NUMA_MISPLACED].succeeded = r->numa_pages_migrated;
	r->by_reason[TK_MR_DEMOTION].succeeded = r->pgdemote_total;

	r->nr_numastat = 0;
	for (i = 0; i < now.nr_nodes; i++) {
		const struct tk_numa_nodestat *a = &now.nodes[i], *b = &vp->first.nodes[i];
		struct tk_numa_nodestat *o;

		if (!now.node_ok[i] || !vp->first.node_ok[i])
			continue;
		o = &r->numastat[r->nr_numastat++];
		o->node = a->node;
		o->numa_hit = a->numa_hit > b->numa_hit ? a->numa_hit - b->numa_hit : 0;
		o->numa_miss = a->numa_miss > b->numa_miss ? a->numa_miss - b->numa_miss : 0;
		o->numa_foreign = a->numa_foreign > b->numa_foreign ?
				  a->numa_foreign - b->numa_foreign : 0;
		o->interleave_hit = a->interleave_hit > b->interleave_hit ?
				    a->interleave_hit - b->interleave_hit : 0;
		o->local_node = a->local_node > b->local_node ? a->local_node - b->local_node : 0;
		o->other_node = a->other_node > b->other_node ? a->other_node - b->other_node : 0;
	}
	r->have_numastat = r->nr_numastat > 0;

	tk_numa_report__missing(r, "per process, per reason (other than NUMA balancing and "
				"tiering), node pairs, latencies: need eBPF (see 'tracekit caps')");
	/* and why eBPF is not used, when the capability report says */
	blocker = n->caps ? n->caps->backends[TK_COLLECT_NUMA].blocker : "";
	if (blocker[0])
		tk_numa_report__missing(r, "no eBPF here: %s", blocker);
	for (i = 0, off = 0; i < VM__COUNT; i++) {
		if (now.has[i] || i == VM_THP_MIGRATION_SPLIT || off >= sizeof(list))
			continue;
		off += snprintf(list + off, sizeof(list) - off, "%s%s%s", off ? ", " : "",
				vm_names[i], i == VM_PGDEMOTE ? "*" : "");
	}
	if (list[0])
		tk_numa_report__missing(r, "/proc/vmstat has no %s (counted as 0)", list);
	if (now.nr_nodes && !r->nr_numastat)
		tk_numa_report__missing(r, "per-node numastat: unreadable under %s",
					vp->sys_root);
	if (n->opts.nr_pids || n->opts.cgroup)
		tk_numa_report__missing(r, "only these processes (%s): the counters are the whole "
					"machine's", n->opts.cgroup ? "--cgroup" : "-p");
	snprintf(r->attach, sizeof(r->attach), "%s/vmstat%s%s%s", vp->proc_root,
		 r->nr_numastat ? ", " : "", r->nr_numastat ? vp->sys_root : "",
		 r->nr_numastat ? "/devices/system/node/node*/numastat" : "");
	return 0;
}

int tk_numa_vmstat__parse(const char *vmstat, const char *numastat, uint64_t *vals, size_t nr,
			  struct tk_numa_nodestat *node)
{
	struct vm_sample s;
	int i, found = 0;

	memset(&s, 0, sizeof(s));
	if (vmstat)
		parse_vmstat(vmstat, &s);
	for (i = 0; i < VM__COUNT; i++) {
		if ((size_t)i < nr)
			vals[i] = s.v[i];
		found += s.has[i];
	}
	if (numastat && node)
		parse_numastat(numastat, node);
	return found;
}

static void vm_free(struct tk_numa *n)
{
	free(n->priv);
	n->priv = NULL;
}

const struct tk_numa_backend tk_numa_backend_vmstat = {
	.name = "vmstat",
	.open = vm_open,
	.start = vm_start,
	.poll = vm_poll,
	.collect = vm_collect,
	.stacks = NULL,
	.free = vm_free,
};
