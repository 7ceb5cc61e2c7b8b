// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The kernel facts the BPF NUMA backend configures itself with, read from
 * BTF by name, never from a version number:
 * - a tracepoint's arguments are the parameters of the FUNC_PROTO that the
 *   typedef btf_trace_NAME points to, after its first `void *`. They have no
 *   names there; trace_event_raw_NAME lists the record's fields, which for
 *   mm_migrate_pages are the arguments in order, so they name them;
 * - enum migrate_reason by enumerator name (its values moved when
 *   MR_DEMOTION and MR_DAMON came); enum numa_vmaskip_reason likewise;
 * - the misplaced-page function and its node parameter by name;
 * - the per-folio migration function and its folio parameters by name.
 * And NODES_PGSHIFT, which no BTF has, from the kernel config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <bpf/btf.h>

#include "core/fsutil.h"
#include "numa/numa_btf.h"
#include "numa/numa_report.h"

#define MAX_TP_ARGS 12

/* The tracepoint's prototype: its arguments' type ids (after `void *`), or -ENOENT. */
static int tp_args(const struct btf *btf, const char *tp, __u32 *types, int max)
{
	char name[128];
	const struct btf_type *t;
	const struct btf_param *p;
	int id, i, n;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	if (!t || !btf_is_ptr(t))
		return -ENOENT;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -ENOENT;
	p = btf_params(t);
	n = btf_vlen(t) - 1;
	for (i = 0; i < n && i < max; i++)
		types[i] = p[i + 1].type;
	return n;
}

/* The type under typedefs and qualifiers. */
static const struct btf_type *resolved(const struct btf *btf, __u32 id)
{
	int rid = btf__resolve_type(btf, id);

	return rid < 0 ? NULL : btf__type_by_id(btf, rid);
}

static bool is_enum_named(const struct btf *btf, __u32 id, const char *name)
{
	const struct btf_type *t = resolved(btf, id);

	return t && (btf_is_enum(t) || btf_is_enum64(t)) &&
	       !strcmp(btf__name_by_offset(btf, t->name_off), name);
}

static bool is_int(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = resolved(btf, id);

	return t && (btf_is_int(t) || btf_is_enum(t));
}

static bool is_task_ptr(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = resolved(btf, id);

	if (!t || !btf_is_ptr(t))
		return false;
	t = resolved(btf, t->type);
	return t && btf_is_struct(t) &&
	       !strcmp(btf__name_by_offset(btf, t->name_off), "task_struct");
}

int tk_numa_btf__migrate_args(const struct btf *btf, struct tk_numa_mig_args *a)
{
	__u32 types[MAX_TP_ARGS];
	const char *fields[MAX_TP_ARGS];
	const struct btf_member *m;
	const struct btf_type *t;
	int n, nf = 0, id, i;

	memset(a, 0xff, sizeof(*a));	/* every position -1 */
	a->split_name[0] = '\0';
	n = tp_args(btf, "mm_migrate_pages", types, MAX_TP_ARGS);
	if (n < 0 || n > MAX_TP_ARGS)
		return -ENOENT;
	a->nr = n;

	/* the record's fields, without the common header and the dynamic area */
	id = btf__find_by_name_kind(btf, "trace_event_raw_mm_migrate_pages", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++) {
		const char *f = btf__name_by_offset(btf, m->name_off);

		if (!strcmp(f, "ent") || !strncmp(f, "__data", 6))
			continue;
		if (nf < MAX_TP_ARGS)
			fields[nf] = f;
		nf++;
	}

	/* mode: the argument typed enum migrate_mode; reason the int after it */
	for (i = 0; i < n; i++)
		if (is_enum_named(btf, types[i], "migrate_mode"))
			a->mode = i;
	if (a->mode < 5 || a->mode + 1 >= n || !is_int(btf, types[a->mode + 1]))
		return -ENOENT;
	a->reason = a->mode + 1;
	a->succeeded = 0;
	a->failed = 1;
	a->thp_succeeded = 2;
	a->thp_failed = 3;
	a->thp_split = 4;
	/* counts past thp_split: named by the record when it matches the arguments */
	if (a->mode >= 6) {
		a->split = 5;
		if (nf == n && (!strcmp(fields[5], "large_folio_split") ||
				!strcmp(fields[5], "nr_split")))
			snprintf(a->split_name, sizeof(a->split_name), "%s", fields[5]);
		else if (nf == n)
			a->split = -1;	/* a count this build does not know */
		else
			snprintf(a->split_name, sizeof(a->split_name), "arg5");
	}
	/* a record with the arguments' names must agree on the fixed ones */
	if (nf == n && (strcmp(fields[0], "succeeded") || strcmp(fields[a->mode], "mode") ||
			strcmp(fields[a->reason], "reason")))
		return -ENOENT;
	return 0;
}

int tk_numa_btf__start_reason(const struct btf *btf)
{
	__u32 types[MAX_TP_ARGS];
	int n = tp_args(btf, "mm_migrate_pages_start", types, MAX_TP_ARGS), i;

	for (i = 0; i + 1 < n && i + 1 < MAX_TP_ARGS; i++)
		if (is_enum_named(btf, types[i], "migrate_mode") && is_int(btf, types[i + 1]))
			return i + 1;
	return -ENOENT;
}

/*
 * move: (task, src_cpu, dst_cpu). swap and stick: (src_task, src_cpu,
 * dst_task, dst_cpu); stick before 5.6: (task, src_cpu, dst_cpu). The task is
 * the first argument, src_cpu the first int after it, dst_cpu the last int.
 */
int tk_numa_btf__sched_args(const struct btf *btf, const char *tp, int *task, int *src_cpu,
			    int *dst_cpu)
{
	__u32 types[MAX_TP_ARGS];
	int n = tp_args(btf, tp, types, MAX_TP_ARGS), i;

	*task = *src_cpu = *dst_cpu = -1;
	if (n < 3 || n > MAX_TP_ARGS || !is_task_ptr(btf, types[0]))
		return -ENOENT;
	*task = 0;
	for (i = 1; i < n; i++) {
		if (!is_int(btf, types[i]))
			continue;
		if (*src_cpu < 0)
			*src_cpu = i;
		else
			*dst_cpu = i;
	}
	return *src_cpu > 0 && *dst_cpu > 0 ? 0 : -ENOENT;
}

int tk_numa_btf__skip_vma_arg(const struct btf *btf)
{
	__u32 types[MAX_TP_ARGS];
	int n = tp_args(btf, "sched_skip_vma_numa", types, MAX_TP_ARGS), i;

	for (i = 0; i < n && i < MAX_TP_ARGS; i++)
		if (is_enum_named(btf, types[i], "numa_vmaskip_reason"))
			return i;
	return -ENOENT;
}

int tk_numa_btf__skip_reasons(const struct btf *btf, char (*names)[24], int max)
{
	static const char prefix[] = "NUMAB_SKIP_";
	const struct btf_type *t;
	const struct btf_enum *e;
	int id, i, k, used = 0;

	for (i = 0; i < max; i++)
		names[i][0] = '\0';
	id = btf__find_by_name_kind(btf, "numa_vmaskip_reason", BTF_KIND_ENUM);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++) {
		const char *name = btf__name_by_offset(btf, e->name_off);

		if (e->val < 0 || e->val >= max || !name)
			continue;
		if (!strncmp(name, prefix, sizeof(prefix) - 1))
			name += sizeof(prefix) - 1;
		for (k = 0; name[k] && k < 23; k++)
			names[e->val][k] = name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' :
									     name[k];
		names[e->val][k] = '\0';
		if (e->val + 1 > used)
			used = e->val + 1;
	}
	return used;
}

static const struct {
	const char *kname;
	enum tk_mig_reason r;
} reason_names[] = {
	{ "MR_COMPACTION", TK_MR_COMPACTION },
	{ "MR_MEMORY_FAILURE", TK_MR_MEMORY_FAILURE },
	{ "MR_MEMORY_HOTPLUG", TK_MR_MEMORY_HOTPLUG },
	{ "MR_SYSCALL", TK_MR_SYSCALL },
	{ "MR_MEMPOLICY_MBIND", TK_MR_MEMPOLICY_MBIND },
	{ "MR_NUMA_MISPLACED", TK_MR_NUMA_MISPLACED },
	{ "MR_CONTIG_RANGE", TK_MR_CONTIG_RANGE },
	{ "MR_LONGTERM_PIN", TK_MR_LONGTERM_PIN },
	{ "MR_DEMOTION", TK_MR_DEMOTION },
	{ "MR_DAMON", TK_MR_DAMON },
};

int tk_numa_btf__reason_of(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(reason_names) / sizeof(reason_names[0]); i++)
		if (!strcmp(name, reason_names[i].kname))
			return reason_names[i].r;
	return TK_MR_UNKNOWN;
}

int tk_numa_btf__reasons(const struct btf *btf, uint8_t *map, int max)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	int id, i, named = 0;

	for (i = 0; i < max; i++)
		map[i] = TK_MR_UNKNOWN;
	id = btf__find_by_name_kind(btf, "migrate_reason", BTF_KIND_ENUM);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++) {
		const char *name = btf__name_by_offset(btf, e->name_off);

		if (!strcmp(name, "MR_TYPES"))
			continue;
		named++;
		if (e->val >= 0 && e->val < max)
			map[e->val] = tk_numa_btf__reason_of(name);
	}
	return named;
}

int tk_numa_btf__misplaced_fn(const struct btf *btf, char *name, size_t name_sz, int *node_idx)
{
	static const char *const fns[] = { "migrate_misplaced_folio", "migrate_misplaced_page" };
	const struct btf_type *t;
	const struct btf_param *p;
	size_t f;
	int id, i;

	for (f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		id = btf__find_by_name_kind(btf, fns[f], BTF_KIND_FUNC);
		if (id <= 0)
			continue;
		t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
		if (!t || !btf_is_func_proto(t))
			continue;
		p = btf_params(t);
		for (i = 0; i < btf_vlen(t); i++) {
			const char *pn = btf__name_by_offset(btf, p[i].name_off);

			if (pn && (!strcmp(pn, "node") || !strcmp(pn, "nid"))) {
				snprintf(name, name_sz, "%s", fns[f]);
				*node_idx = i;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* A pointer to struct folio, or (kernels before folios) to struct page. */
static bool is_folio_ptr(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = resolved(btf, id);
	const char *name;

	if (!t || !btf_is_ptr(t))
		return false;
	t = resolved(btf, t->type);
	if (!t || !btf_is_struct(t))
		return false;
	name = btf__name_by_offset(btf, t->name_off);
	return !strcmp(name, "folio") || !strcmp(name, "page");
}

int tk_numa_btf__folio_fn(const struct btf *btf, struct tk_numa_folio_fn *f)
{
	/* 5.10 copies a migrated page's state in migrate_page_states(newpage, page) */
	static const char *const fns[] = { "folio_migrate_flags", "folio_migrate_mapping",
					   "migrate_folio_move", "move_to_new_folio",
					   "migrate_page_states" };
	const struct btf_type *t;
	const struct btf_param *p;
	size_t i;
	int id, k;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		id = btf__find_by_name_kind(btf, fns[i], BTF_KIND_FUNC);
		if (id <= 0)
			continue;
		t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
		if (!t || !btf_is_func_proto(t))
			continue;
		f->dst = f->src = -1;
		p = btf_params(t);
		for (k = 0; k < btf_vlen(t); k++) {
			const char *pn = btf__name_by_offset(btf, p[k].name_off);

			if (!pn || !is_folio_ptr(btf, p[k].type))
				continue;
			if (!strcmp(pn, "newfolio") || !strcmp(pn, "dst") || !strcmp(pn, "newpage"))
				f->dst = k;
			else if (!strcmp(pn, "folio") || !strcmp(pn, "src") || !strcmp(pn, "page"))
				f->src = k;
		}
		if (f->dst < 0 || f->src < 0)
			continue;
		f->ret = t->type ? btf_vlen(t) : -1;
		snprintf(f->name, sizeof(f->name), "%s", fns[i]);
		return 0;
	}
	return -ENOENT;
}

int tk_numa_btf__max_numnodes(const struct btf *btf)
{
	const struct btf_type *t, *e;
	const struct btf_member *m;
	int id, zones = -1, i;

	id = btf__find_by_name_kind(btf, "zone_type", BTF_KIND_ENUM);
	if (id <= 0)
		return -ENOENT;
	e = btf__type_by_id(btf, id);
	for (i = 0; i < btf_vlen(e); i++)
		if (!strcmp(btf__name_by_offset(btf, btf_enum(e)[i].name_off), "__MAX_NR_ZONES"))
			zones = btf_enum(e)[i].val;
	id = btf__find_by_name_kind(btf, "zonelist", BTF_KIND_STRUCT);
	if (id <= 0 || zones <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const struct btf_type *a = btf__type_by_id(btf, m->type);
		__u32 nelems;

		if (strcmp(btf__name_by_offset(btf, m->name_off), "_zonerefs") || !btf_is_array(a))
			continue;
		nelems = btf_array(a)->nelems;
		if (nelems < 1 || (nelems - 1) % zones)
			return -ENOENT;
		return (nelems - 1) / zones;
	}
	return -ENOENT;
}

int tk_numa_btf__node_at_top(const struct btf *btf)
{
	if (btf__find_by_name_kind(btf, "page_to_nid", BTF_KIND_FUNC) > 0)
		return -EOPNOTSUPP;	/* NODE_NOT_IN_PAGE_FLAGS: a table by section */
	if (btf__find_by_name_kind(btf, "vmemmap_populate_basepages", BTF_KIND_FUNC) > 0)
		return 0;		/* mm/sparse-vmemmap.c: SPARSEMEM_VMEMMAP */
	return -ENOENT;
}

/* The value of CONFIG_@name in @config: 1 and *@val, 0 "is not set", -ENOENT absent. */
static int config_value(const char *config, const char *name, long *val)
{
	size_t len = strlen(name);
	const char *p = config;

	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == '=') {
			const char *v = p + len + 1;

			*val = (*v == 'y' || *v == 'm') ? 1 : strtol(v, NULL, 0);
			return 1;
		}
		if (!strncmp(p, "# ", 2) && !strncmp(p + 2, name, len) &&
		    !strncmp(p + 2 + len, " is not set", 11))
			return 0;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

int tk_numa__nodes_pgshift(const char *config, int *shift, int *nodes_shift)
{
	long vmemmap = 0, ns = 0;

	if (config_value(config, "CONFIG_NODES_SHIFT", &ns) != 1 || ns < 0 || ns > 16)
		return -ENOENT;
	/* without vmemmap the section number sits above the node: its width is not in BTF */
	if (config_value(config, "CONFIG_SPARSEMEM_VMEMMAP", &vmemmap) != 1 || !vmemmap)
		return -EOPNOTSUPP;
	*nodes_shift = ns;
	*shift = 64 - 0 /* SECTIONS_WIDTH */ - ns;
	return 0;
}

static int read_gz(const char *path, char **text)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap), *nb;
	gzFile gz;
	int n;

	if (!buf)
		return -ENOMEM;
	gz = gzopen(path, "rb");	/* reads a plain file as it is */
	if (!gz) {
		free(buf);
		return -ENOENT;
	}
	while ((n = gzread(gz, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len - 1 == 0) {
			if (cap >= (64u << 20) || !(nb = realloc(buf, cap * 2))) {
				gzclose(gz);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	gzclose(gz);
	if (n < 0 || !len) {
		free(buf);
		return -EIO;
	}
	buf[len] = '\0';
	*text = buf;
	return 0;
}

int tk_numa__node_at_top_ksyms(const char *proc_root)
{
	char path[4096], line[512];
	int ret = -ENOENT;
	FILE *f;

	if (tk_path_join(path, sizeof(path), proc_root ? proc_root : "/proc", "kallsyms"))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* "ADDR TYPE NAME[\t[MODULE]]": the generic file's function, in the kernel's text */
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ' ');

		if (!p || (p[1] != 'T' && p[1] != 't') || p[2] != ' ')
			continue;
		if (!strcmp(p + 3, "vmemmap_populate_basepages\n")) {
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int tk_numa__read_kconfig(const char *proc_root, const char *boot_root, const char *release,
			  char **text, char *from, size_t from_sz)
{
	char path[4096], rel[256];
	int err;

	if (!tk_path_join(path, sizeof(path), proc_root ? proc_root : "/proc", "config.gz") &&
	    !read_gz(path, text)) {
		snprintf(from, from_sz, "%s", path);
		return 0;
	}
	snprintf(rel, sizeof(rel), "config-%s", release ? release : "");
	err = tk_path_join(path, sizeof(path), boot_root ? boot_root : "/boot", rel);
	if (!err && release && !(err = read_gz(path, text))) {
		snprintf(from, from_sz, "%s", path);
		return 0;
	}
	return -ENOENT;
}
