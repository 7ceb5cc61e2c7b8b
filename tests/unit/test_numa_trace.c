// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the BPF NUMA backend reads from a kernel before it loads
 * (user/numa/numa_btf.c): tracepoint argument positions from BTF shaped like 6.1's,
 * 6.12/6.18's and a kernel with nr_split; the migrate_reason table by name
 * when values move; the misplaced-page function of either name and its node
 * parameter; the per-folio migration function and its folio parameters;
 * NODES_SHIFT from struct zonelist; NODES_PGSHIFT from config texts
 * and the config files where the kernel keeps them. Then the same against
 * this machine's own BTF, checked against what BTF says independently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <cmocka.h>

#include "../lib/fixture.h"
#include "numa/numa_btf.h"
#include "numa/numa_report.h"

/* ---- a kernel's BTF, built here -------------------------------------------------- */

struct kbtf {
	struct btf *btf;
	int t_int, t_ul, t_voidp, t_mode, t_task_ptr, t_entry, t_page_ptr;
};

static void kbtf_base(struct kbtf *k)
{
	int task, page;

	k->btf = btf__new_empty();
	assert_non_null(k->btf);
	k->t_int = btf__add_int(k->btf, "int", 4, BTF_INT_SIGNED);
	k->t_ul = btf__add_int(k->btf, "long unsigned int", 8, 0);
	k->t_voidp = btf__add_ptr(k->btf, 0);
	k->t_mode = btf__add_enum(k->btf, "migrate_mode", 4);
	assert_int_equal(btf__add_enum_value(k->btf, "MIGRATE_ASYNC", 0), 0);
	assert_int_equal(btf__add_enum_value(k->btf, "MIGRATE_SYNC", 1), 0);
	task = btf__add_struct(k->btf, "task_struct", 8);
	k->t_task_ptr = btf__add_ptr(k->btf, task);
	page = btf__add_struct(k->btf, "folio", 8);
	k->t_page_ptr = btf__add_ptr(k->btf, page);
	k->t_entry = btf__add_struct(k->btf, "trace_entry", 8);
	assert_true(k->t_int > 0 && k->t_ul > 0 && k->t_voidp > 0 && k->t_mode > 0 &&
		    k->t_task_ptr > 0 && k->t_page_ptr > 0 && k->t_entry > 0);
}

/* typedef void (*btf_trace_@tp)(void *, @types...) */
static void add_tp(struct kbtf *k, const char *tp, const int *types, int n)
{
	char name[128];
	int proto, i;

	proto = btf__add_func_proto(k->btf, 0);
	assert_true(proto > 0);
	assert_int_equal(btf__add_func_param(k->btf, "", k->t_voidp), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(btf__add_func_param(k->btf, "", types[i]), 0);
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	assert_true(btf__add_typedef(k->btf, name, btf__add_ptr(k->btf, proto)) > 0);
}

/* struct trace_event_raw_@tp { ent; @fields (unsigned long, then mode, reason); __data } */
static void add_record(struct kbtf *k, const char *tp, const char *const *counts)
{
	char name[128];
	int n = 0, off = 64;

	while (counts[n])
		n++;
	snprintf(name, sizeof(name), "trace_event_raw_%s", tp);
	assert_true(btf__add_struct(k->btf, name, 8 + 8 * n + 8) > 0);
	assert_int_equal(btf__add_field(k->btf, "ent", k->t_entry, 0, 0), 0);
	for (n = 0; counts[n]; n++, off += 64)
		assert_int_equal(btf__add_field(k->btf, counts[n], k->t_ul, off, 0), 0);
	assert_int_equal(btf__add_field(k->btf, "mode", k->t_mode, off, 0), 0);
	assert_int_equal(btf__add_field(k->btf, "reason", k->t_int, off + 32, 0), 0);
}

static const char *const counts_61[] = {
	"succeeded", "failed", "thp_succeeded", "thp_failed", "thp_split", NULL,
};
static const char *const counts_618[] = {
	"succeeded", "failed", "thp_succeeded", "thp_failed", "thp_split",
	"large_folio_split", NULL,
};
static const char *const counts_nr_split[] = {
	"succeeded", "failed", "thp_succeeded", "thp_failed", "thp_split", "nr_split", NULL,
};

static void add_migrate(struct kbtf *k, const char *const *counts)
{
	int types[12], n = 0;

	while (counts[n])
		types[n++] = k->t_ul;
	types[n++] = k->t_mode;
	types[n++] = k->t_int;
	add_tp(k, "mm_migrate_pages", types, n);
	add_record(k, "mm_migrate_pages", counts);
}

static void test_migrate_args_61(void **state)
{
	struct tk_numa_mig_args a;
	struct kbtf k;

	kbtf_base(&k);
	add_migrate(&k, counts_61);
	assert_int_equal(tk_numa_btf__migrate_args(k.btf, &a), 0);
	assert_int_equal(a.nr, 7);
	assert_int_equal(a.succeeded, 0);
	assert_int_equal(a.thp_split, 4);
	assert_int_equal(a.split, -1);
	assert_string_equal(a.split_name, "");
	assert_int_equal(a.mode, 5);
	assert_int_equal(a.reason, 6);
	btf__free(k.btf);
}

static void test_migrate_args_618(void **state)
{
	struct tk_numa_mig_args a;
	struct kbtf k;

	kbtf_base(&k);
	add_migrate(&k, counts_618);
	assert_int_equal(tk_numa_btf__migrate_args(k.btf, &a), 0);
	assert_int_equal(a.nr, 8);
	assert_int_equal(a.split, 5);
	assert_string_equal(a.split_name, "large_folio_split");
	assert_int_equal(a.mode, 6);
	assert_int_equal(a.reason, 7);
	btf__free(k.btf);
}

static void test_migrate_args_nr_split(void **state)
{
	struct tk_numa_mig_args a;
	struct kbtf k;

	kbtf_base(&k);
	add_migrate(&k, counts_nr_split);
	assert_int_equal(tk_numa_btf__migrate_args(k.btf, &a), 0);
	assert_int_equal(a.split, 5);
	assert_string_equal(a.split_name, "nr_split");
	assert_int_equal(a.reason, 7);
	btf__free(k.btf);
}

/* No tracepoint, or one whose mode is not where a migration count list ends. */
static void test_migrate_args_absent_or_odd(void **state)
{
	int odd[] = { 0, 0, 0 };
	struct tk_numa_mig_args a;
	struct kbtf k;

	kbtf_base(&k);
	assert_int_equal(tk_numa_btf__migrate_args(k.btf, &a), -ENOENT);
	odd[0] = k.t_ul;
	odd[1] = k.t_mode;
	odd[2] = k.t_int;
	add_tp(&k, "mm_migrate_pages", odd, 3);
	assert_int_equal(tk_numa_btf__migrate_args(k.btf, &a), -ENOENT);
	btf__free(k.btf);
}

static void test_start_and_sched_args(void **state)
{
	struct kbtf k;
	int start[2], move[3], swap[4], t, s, d;

	kbtf_base(&k);
	start[0] = k.t_mode;
	start[1] = k.t_int;
	add_tp(&k, "mm_migrate_pages_start", start, 2);
	move[0] = k.t_task_ptr;
	move[1] = move[2] = k.t_int;
	add_tp(&k, "sched_move_numa", move, 3);
	/* swap and stick since 5.6: (src_tsk, src_cpu, dst_tsk, dst_cpu) */
	swap[0] = swap[2] = k.t_task_ptr;
	swap[1] = swap[3] = k.t_int;
	add_tp(&k, "sched_swap_numa", swap, 4);
	/* stick before 5.6: (tsk, src_cpu, dst_cpu) */
	add_tp(&k, "sched_stick_numa", move, 3);

	assert_int_equal(tk_numa_btf__start_reason(k.btf), 1);
	assert_int_equal(tk_numa_btf__sched_args(k.btf, "sched_move_numa", &t, &s, &d), 0);
	assert_int_equal(t, 0);
	assert_int_equal(s, 1);
	assert_int_equal(d, 2);
	assert_int_equal(tk_numa_btf__sched_args(k.btf, "sched_swap_numa", &t, &s, &d), 0);
	assert_int_equal(t, 0);
	assert_int_equal(s, 1);
	assert_int_equal(d, 3);
	assert_int_equal(tk_numa_btf__sched_args(k.btf, "sched_stick_numa", &t, &s, &d), 0);
	assert_int_equal(d, 2);
	assert_int_equal(tk_numa_btf__sched_args(k.btf, "sched_nope_numa", &t, &s, &d), -ENOENT);
	btf__free(k.btf);
}

/*
 * sched_skip_vma_numa (6.7+): (mm, vma, enum numa_vmaskip_reason); the
 * reason found by its type, its names from the enum by value, whatever order
 * the values come in.
 */
static void test_skip_vma(void **state)
{
	static const struct {
		const char *name;
		int val;
	} reasons[] = {
		{ "NUMAB_SKIP_UNSUITABLE", 0 },	{ "NUMAB_SKIP_SHARED_RO", 1 },
		{ "NUMAB_SKIP_INACCESSIBLE", 2 },	{ "NUMAB_SKIP_SCAN_DELAY", 3 },
		{ "NUMAB_SKIP_PID_INACTIVE", 4 },	{ "NUMAB_SKIP_IGNORE_PID", 5 },
		/* a kernel that numbers one out of order, with a gap before it */
		{ "NUMAB_SKIP_SEQ_COMPLETED", 7 },	{ "NUMAB_SKIP_SOMETHING_NEW", 6 },
		{ "NUMAB_SKIP_TOO_FAR", 40 },
	};
	char names[16][24];
	int args[3], mm, vma, reason;
	struct kbtf k;
	size_t i;

	kbtf_base(&k);
	/* 6.1: neither the tracepoint nor the enum */
	assert_int_equal(tk_numa_btf__skip_vma_arg(k.btf), -ENOENT);
	assert_int_equal(tk_numa_btf__skip_reasons(k.btf, names, 16), -ENOENT);
	assert_string_equal(names[0], "");

	mm = btf__add_ptr(k.btf, btf__add_struct(k.btf, "mm_struct", 8));
	vma = btf__add_ptr(k.btf, btf__add_struct(k.btf, "vm_area_struct", 8));
	reason = btf__add_enum(k.btf, "numa_vmaskip_reason", 4);
	assert_true(mm > 0 && vma > 0 && reason > 0);
	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		assert_int_equal(btf__add_enum_value(k.btf, reasons[i].name, reasons[i].val), 0);
	/* the enum alone is not the tracepoint */
	assert_int_equal(tk_numa_btf__skip_vma_arg(k.btf), -ENOENT);
	args[0] = mm;
	args[1] = vma;
	args[2] = reason;
	add_tp(&k, "sched_skip_vma_numa", args, 3);
	assert_int_equal(tk_numa_btf__skip_vma_arg(k.btf), 2);

	assert_int_equal(tk_numa_btf__skip_reasons(k.btf, names, 16), 8);
	assert_string_equal(names[0], "unsuitable");
	assert_string_equal(names[1], "shared_ro");
	assert_string_equal(names[2], "inaccessible");
	assert_string_equal(names[3], "scan_delay");
	assert_string_equal(names[4], "pid_inactive");
	assert_string_equal(names[5], "ignore_pid");
	assert_string_equal(names[6], "something_new");
	assert_string_equal(names[7], "seq_completed");
	assert_string_equal(names[8], "");	/* past the table: not named */
	btf__free(k.btf);

	/* an int reason is not the enum: an unknown shape */
	kbtf_base(&k);
	args[0] = k.t_voidp;
	args[1] = k.t_voidp;
	args[2] = k.t_int;
	add_tp(&k, "sched_skip_vma_numa", args, 3);
	assert_int_equal(tk_numa_btf__skip_vma_arg(k.btf), -ENOENT);
	btf__free(k.btf);
}

/* Values are the kernel's, names decide: a kernel with an enumerator inserted early. */
static void test_reasons_by_name(void **state)
{
	static const char *const names[] = {
		"MR_COMPACTION", "MR_MEMORY_FAILURE", "MR_SOMETHING_NEW", "MR_MEMORY_HOTPLUG",
		"MR_SYSCALL", "MR_MEMPOLICY_MBIND", "MR_NUMA_MISPLACED", "MR_CONTIG_RANGE",
		"MR_LONGTERM_PIN", "MR_DEMOTION", "MR_TYPES",
	};
	uint8_t map[32];
	struct kbtf k;
	size_t i;

	kbtf_base(&k);
	assert_int_equal(tk_numa_btf__reasons(k.btf, map, 32), -ENOENT);
	assert_int_equal(map[0], TK_MR_UNKNOWN);
	assert_true(btf__add_enum(k.btf, "migrate_reason", 4) > 0);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(btf__add_enum_value(k.btf, names[i], i), 0);
	assert_int_equal(tk_numa_btf__reasons(k.btf, map, 32), 10);
	assert_int_equal(map[0], TK_MR_COMPACTION);
	assert_int_equal(map[2], TK_MR_UNKNOWN);
	assert_int_equal(map[3], TK_MR_MEMORY_HOTPLUG);
	assert_int_equal(map[4], TK_MR_SYSCALL);
	assert_int_equal(map[6], TK_MR_NUMA_MISPLACED);
	assert_int_equal(map[9], TK_MR_DEMOTION);
	assert_int_equal(map[10], TK_MR_UNKNOWN);	/* MR_TYPES */
	assert_int_equal(map[31], TK_MR_UNKNOWN);
	assert_int_equal(tk_numa_btf__reason_of("MR_DAMON"), TK_MR_DAMON);
	assert_int_equal(tk_numa_btf__reason_of("MR_TYPES"), TK_MR_UNKNOWN);
	btf__free(k.btf);
}

static void add_func(struct kbtf *k, const char *name, const char *const *params, int n)
{
	int proto = btf__add_func_proto(k->btf, k->t_int), i;

	assert_true(proto > 0);
	for (i = 0; i < n; i++)
		assert_int_equal(btf__add_func_param(k->btf, params[i],
						     i == n - 1 ? k->t_int : k->t_page_ptr), 0);
	assert_true(btf__add_func(k->btf, name, BTF_FUNC_STATIC, proto) > 0);
}

static void test_misplaced_fn(void **state)
{
	static const char *const page_params[] = { "page", "vma", "node" };
	static const char *const folio_params[] = { "folio", "nid" };
	char name[64];
	struct kbtf k;
	int idx = -1;

	kbtf_base(&k);
	assert_int_equal(tk_numa_btf__misplaced_fn(k.btf, name, sizeof(name), &idx), -ENOENT);
	add_func(&k, "migrate_misplaced_page", page_params, 3);
	assert_int_equal(tk_numa_btf__misplaced_fn(k.btf, name, sizeof(name), &idx), 0);
	assert_string_equal(name, "migrate_misplaced_page");
	assert_int_equal(idx, 2);
	btf__free(k.btf);

	kbtf_base(&k);
	add_func(&k, "migrate_misplaced_folio", folio_params, 2);
	assert_int_equal(tk_numa_btf__misplaced_fn(k.btf, name, sizeof(name), &idx), 0);
	assert_string_equal(name, "migrate_misplaced_folio");
	assert_int_equal(idx, 1);
	btf__free(k.btf);
}

/* @name(@params...) returning int or void; @folio[i]: struct folio * or int */
static void add_func_of(struct kbtf *k, const char *name, bool is_void, const char *const *params,
			const bool *folio, int n)
{
	int proto = btf__add_func_proto(k->btf, is_void ? 0 : k->t_int), i;

	assert_true(proto > 0);
	for (i = 0; i < n; i++)
		assert_int_equal(btf__add_func_param(k->btf, params[i],
						     folio[i] ? k->t_page_ptr : k->t_int), 0);
	assert_true(btf__add_func(k->btf, name, BTF_FUNC_STATIC, proto) > 0);
}

static void test_folio_fn(void **state)
{
	static const char *const flags_p[] = { "newfolio", "folio" };
	static const char *const mapping_p[] = { "mapping", "newfolio", "folio", "extra_count" };
	static const char *const move_p[] = { "put_new_folio", "private", "src", "dst", "mode",
					      "reason", "ret" };
	static const char *const odd_p[] = { "a", "b" };
	static const bool both[] = { true, true }, mapping_f[] = { false, true, true, false },
			  move_f[] = { false, false, true, true, false, false, false },
			  ints[] = { false, false };
	struct tk_numa_folio_fn f;
	struct kbtf k;

	/* none, or one with folio parameters of other names or types: none */
	kbtf_base(&k);
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), -ENOENT);
	add_func_of(&k, "move_to_new_folio", false, odd_p, both, 2);
	add_func_of(&k, "folio_migrate_mapping", false, flags_p, ints, 2);
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), -ENOENT);
	btf__free(k.btf);

	/* the batched path's function (6.3+) when the others are inlined; fexit's ret */
	kbtf_base(&k);
	add_func_of(&k, "migrate_folio_move", false, move_p, move_f, 7);
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), 0);
	assert_string_equal(f.name, "migrate_folio_move");
	assert_int_equal(f.src, 2);
	assert_int_equal(f.dst, 3);
	assert_int_equal(f.ret, 7);
	/* folio_migrate_mapping before it */
	add_func_of(&k, "folio_migrate_mapping", false, mapping_p, mapping_f, 4);
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), 0);
	assert_string_equal(f.name, "folio_migrate_mapping");
	assert_int_equal(f.dst, 1);
	assert_int_equal(f.src, 2);
	assert_int_equal(f.ret, 4);
	/* folio_migrate_flags first of all, void */
	add_func_of(&k, "folio_migrate_flags", true, flags_p, both, 2);
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), 0);
	assert_string_equal(f.name, "folio_migrate_flags");
	assert_int_equal(f.dst, 0);
	assert_int_equal(f.src, 1);
	assert_int_equal(f.ret, -1);
	btf__free(k.btf);

	/* 5.10, before folios: void migrate_page_states(struct page *newpage, struct page *page) */
	kbtf_base(&k);
	{
		static const char *const states_p[] = { "newpage", "page" };
		int page = btf__add_struct(k.btf, "page", 64), ptr = btf__add_ptr(k.btf, page);
		int proto = btf__add_func_proto(k.btf, 0);

		assert_true(page > 0 && ptr > 0 && proto > 0);
		assert_int_equal(btf__add_func_param(k.btf, states_p[0], ptr), 0);
		assert_int_equal(btf__add_func_param(k.btf, states_p[1], ptr), 0);
		assert_true(btf__add_func(k.btf, "migrate_page_states", BTF_FUNC_STATIC, proto) > 0);
	}
	assert_int_equal(tk_numa_btf__folio_fn(k.btf, &f), 0);
	assert_string_equal(f.name, "migrate_page_states");
	assert_int_equal(f.dst, 0);
	assert_int_equal(f.src, 1);
	assert_int_equal(f.ret, -1);
	btf__free(k.btf);
}

static void test_max_numnodes(void **state)
{
	struct kbtf k;
	int zoneref, arr;

	kbtf_base(&k);
	assert_int_equal(tk_numa_btf__max_numnodes(k.btf), -ENOENT);
	assert_true(btf__add_enum(k.btf, "zone_type", 4) > 0);
	assert_int_equal(btf__add_enum_value(k.btf, "ZONE_DMA", 0), 0);
	assert_int_equal(btf__add_enum_value(k.btf, "__MAX_NR_ZONES", 5), 0);
	zoneref = btf__add_struct(k.btf, "zoneref", 16);
	arr = btf__add_array(k.btf, k.t_int, zoneref, 1024 * 5 + 1);
	assert_true(btf__add_struct(k.btf, "zonelist", 16 * (1024 * 5 + 1)) > 0);
	assert_int_equal(btf__add_field(k.btf, "_zonerefs", arr, 0, 0), 0);
	assert_int_equal(tk_numa_btf__max_numnodes(k.btf), 1024);
	btf__free(k.btf);
}

static void test_nodes_pgshift(void **state)
{
	int shift = -1, ns = -1;

	assert_int_equal(tk_numa__nodes_pgshift("CONFIG_NUMA=y\nCONFIG_NODES_SHIFT=10\n"
						"CONFIG_SPARSEMEM_VMEMMAP=y\n", &shift, &ns), 0);
	assert_int_equal(shift, 54);
	assert_int_equal(ns, 10);
	assert_int_equal(tk_numa__nodes_pgshift("CONFIG_SPARSEMEM_VMEMMAP=y\nCONFIG_NODES_SHIFT=6",
						&shift, &ns), 0);
	assert_int_equal(shift, 58);
	/* CONFIG_NODES_SHIFT_X is another option */
	assert_int_equal(tk_numa__nodes_pgshift("CONFIG_NODES_SHIFT_X=3\n"
						"CONFIG_SPARSEMEM_VMEMMAP=y\n", &shift, &ns),
			 -ENOENT);
	assert_int_equal(tk_numa__nodes_pgshift("# CONFIG_NUMA is not set\n", &shift, &ns),
			 -ENOENT);
	assert_int_equal(tk_numa__nodes_pgshift("CONFIG_NODES_SHIFT=10\n"
						"# CONFIG_SPARSEMEM_VMEMMAP is not set\n", &shift,
						&ns),
			 -EOPNOTSUPP);
}

/*
 * Where the node sits, by BTF: vmemmap_populate_basepages (mm/sparse-vmemmap.c,
 * SPARSEMEM_VMEMMAP on every architecture) puts it at the top; page_to_nid as a
 * function (NODE_NOT_IN_PAGE_FLAGS) means it is not in the flags at all.
 */
static void test_node_at_top(void **state)
{
	struct kbtf k;
	int proto;

	kbtf_base(&k);
	/* neither: cannot tell (a section may sit above the node) */
	assert_int_equal(tk_numa_btf__node_at_top(k.btf), -ENOENT);
	proto = btf__add_func_proto(k.btf, k.t_int);
	assert_true(proto > 0);
	/* vmemmap_populate alone is not the generic file's (the architecture's own) */
	assert_true(btf__add_func(k.btf, "vmemmap_populate", BTF_FUNC_STATIC, proto) > 0);
	assert_int_equal(tk_numa_btf__node_at_top(k.btf), -ENOENT);
	assert_true(btf__add_func(k.btf, "vmemmap_populate_basepages", BTF_FUNC_STATIC, proto) > 0);
	assert_int_equal(tk_numa_btf__node_at_top(k.btf), 0);
	assert_true(btf__add_func(k.btf, "page_to_nid", BTF_FUNC_GLOBAL, proto) > 0);
	assert_int_equal(tk_numa_btf__node_at_top(k.btf), -EOPNOTSUPP);
	btf__free(k.btf);
}

/*
 * Debian's arm64 cloud kernels (the lines of /boot/config-5.10.0-32-cloud-arm64,
 * -6.1.0-57-, -6.12.118+deb12-: all three alike): SPARSEMEM_VMEMMAP, NODES_SHIFT 4,
 * so the node is bits 60-63 (the 6.12 guest's pairs of numa_move: 16384 pages 0 -> 1).
 */
static void test_nodes_pgshift_debian_arm64(void **state)
{
	static const char config[] = "CONFIG_ARM64=y\n"
				     "CONFIG_ARM64_4K_PAGES=y\n"
				     "CONFIG_ARM64_PA_BITS=48\n"
				     "CONFIG_NUMA=y\n"
				     "CONFIG_NODES_SHIFT=4\n"
				     "CONFIG_SPARSEMEM_MANUAL=y\n"
				     "CONFIG_SPARSEMEM=y\n"
				     "CONFIG_SPARSEMEM_EXTREME=y\n"
				     "CONFIG_SPARSEMEM_VMEMMAP_ENABLE=y\n"
				     "CONFIG_SPARSEMEM_VMEMMAP=y\n"
				     "CONFIG_NUMA_BALANCING=y\n";
	int shift = -1, ns = -1;

	assert_int_equal(tk_numa__nodes_pgshift(config, &shift, &ns), 0);
	assert_int_equal(ns, 4);
	assert_int_equal(shift, 60);
}

static void test_read_kconfig(void **state)
{
	struct fx *fx = fx_new();
	char boot[4096], from[4096], *text = NULL;

	assert_non_null(fx);
	assert_int_equal(fx_path(fx, "boot", boot, sizeof(boot)), 0);
	assert_int_equal(tk_numa__read_kconfig(fx->proc, boot, "6.12.0-test", &text, from,
					       sizeof(from)),
			 -ENOENT);
	/* /boot/config-RELEASE, plain text */
	assert_int_equal(fx_write(fx, "boot/config-6.12.0-test", "CONFIG_NODES_SHIFT=10\n"), 0);
	assert_int_equal(tk_numa__read_kconfig(fx->proc, boot, "6.12.0-test", &text, from,
					       sizeof(from)),
			 0);
	assert_non_null(strstr(from, "boot/config-6.12.0-test"));
	assert_non_null(strstr(text, "CONFIG_NODES_SHIFT=10"));
	free(text);
	/* /proc/config.gz first */
	assert_int_equal(fx_write_gz(fx, "proc/config.gz", "CONFIG_NODES_SHIFT=6\n"), 0);
	assert_int_equal(tk_numa__read_kconfig(fx->proc, boot, "6.12.0-test", &text, from,
					       sizeof(from)),
			 0);
	assert_non_null(strstr(from, "config.gz"));
	assert_string_equal(text, "CONFIG_NODES_SHIFT=6\n");
	free(text);
	fx_free(fx);
}

/*
 * Debian's x86 5.10 encodes no function of an init section in BTF (its pahole), so
 * vmemmap_populate_basepages is asked of kallsyms (the 5.10 guest's lines): only a text
 * symbol of that exact name counts, not a module's, a data symbol or a longer name.
 */
static void test_node_at_top_ksyms(void **state)
{
	struct fx *fx = fx_new();

	assert_non_null(fx);
	assert_int_equal(tk_numa__node_at_top_ksyms(fx->proc), -ENOENT);	/* no file */
	assert_int_equal(fx_write(fx, "proc/kallsyms",
				  "ffffffff8f4b5b46 T vmemmap_populate\n"
				  "ffffffff8f4b5b50 T vmemmap_populate_basepages_x\n"
				  "ffffffff8f4b5b60 D vmemmap_populate_basepages\n"
				  "ffffffffc0001000 t vmemmap_populate_basepages\t[mod]\n"),
			 0);
	assert_int_equal(tk_numa__node_at_top_ksyms(fx->proc), -ENOENT);
	assert_int_equal(fx_append(fx, "proc/kallsyms",
				   "ffffffff8f4b87fa T vmemmap_populate_basepages\n"),
			 0);
	assert_int_equal(tk_numa__node_at_top_ksyms(fx->proc), 0);
	fx_free(fx);
}

/* ---- this machine's kernel ------------------------------------------------------------ */

static bool has_member(const struct btf *btf, const char *st, const char *member)
{
	int id = btf__find_by_name_kind(btf, st, BTF_KIND_STRUCT), i;
	const struct btf_type *t;

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, btf_members(t)[i].name_off), member))
			return true;
	return false;
}

static void test_host_btf(void **state)
{
	struct btf *btf = btf__load_vmlinux_btf();
	struct tk_numa_mig_args a;
	uint8_t map[32];
	char name[64], *config = NULL, from[4096];
	struct tk_numa_folio_fn ff;
	int idx, t, s, d, i, kval = -1, shift, ns;

	if (!btf) {
		print_message("skip: this kernel has no BTF\n");
		skip();
	}
	if (btf__find_by_name_kind(btf, "btf_trace_mm_migrate_pages", BTF_KIND_TYPEDEF) <= 0) {
		btf__free(btf);
		print_message("skip: this kernel has no migrate:mm_migrate_pages\n");
		skip();
	}
	assert_int_equal(tk_numa_btf__migrate_args(btf, &a), 0);
	assert_int_equal(a.reason, a.mode + 1);
	assert_int_equal(a.nr, a.reason + 1);
	if (has_member(btf, "trace_event_raw_mm_migrate_pages", "large_folio_split"))
		assert_string_equal(a.split_name, "large_folio_split");
	else if (has_member(btf, "trace_event_raw_mm_migrate_pages", "nr_split"))
		assert_string_equal(a.split_name, "nr_split");
	else
		assert_int_equal(a.split, -1);

	/* MR_NUMA_MISPLACED's value, whatever it is here, maps to numa_misplaced */
	assert_true(tk_numa_btf__reasons(btf, map, 32) >= 8);
	{
		int id = btf__find_by_name_kind(btf, "migrate_reason", BTF_KIND_ENUM);
		const struct btf_type *e = btf__type_by_id(btf, id);

		for (i = 0; i < btf_vlen(e); i++)
			if (!strcmp(btf__name_by_offset(btf, btf_enum(e)[i].name_off),
				    "MR_NUMA_MISPLACED"))
				kval = btf_enum(e)[i].val;
	}
	assert_true(kval >= 0 && kval < 32);
	assert_int_equal(map[kval], TK_MR_NUMA_MISPLACED);

	if (btf__find_by_name_kind(btf, "btf_trace_sched_move_numa", BTF_KIND_TYPEDEF) > 0) {
		assert_int_equal(tk_numa_btf__sched_args(btf, "sched_move_numa", &t, &s, &d), 0);
		assert_int_equal(t, 0);
		assert_true(s > 0 && d > s);
	}
	/* sched_skip_vma_numa where BTF has it: the reason third, and named */
	if (btf__find_by_name_kind(btf, "btf_trace_sched_skip_vma_numa", BTF_KIND_TYPEDEF) > 0) {
		char skip[16][24];

		assert_int_equal(tk_numa_btf__skip_vma_arg(btf), 2);
		assert_true(tk_numa_btf__skip_reasons(btf, skip, 16) >= 7);
		assert_string_equal(skip[0], "unsuitable");
		for (i = 0; i < 7; i++)
			assert_true(skip[i][0]);
	} else {
		assert_int_equal(tk_numa_btf__skip_vma_arg(btf), -ENOENT);
	}
	if (!tk_numa_btf__misplaced_fn(btf, name, sizeof(name), &idx))
		assert_true(idx >= 1);
	if (!tk_numa_btf__folio_fn(btf, &ff))
		assert_true(ff.src >= 0 && ff.dst >= 0 && ff.src != ff.dst);

	/* NODES_SHIFT (and SPARSEMEM_VMEMMAP) by BTF agree with the config, where it can be read */
	if (!tk_numa__read_kconfig("/proc", "/boot", NULL, &config, from, sizeof(from))) {
		if (!tk_numa__nodes_pgshift(config, &shift, &ns)) {
			if (tk_numa_btf__max_numnodes(btf) > 0)
				assert_int_equal(tk_numa_btf__max_numnodes(btf), 1 << ns);
			assert_int_equal(tk_numa_btf__node_at_top(btf), 0);
		}
		free(config);
	}
	btf__free(btf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_args_61),
		cmocka_unit_test(test_migrate_args_618),
		cmocka_unit_test(test_migrate_args_nr_split),
		cmocka_unit_test(test_migrate_args_absent_or_odd),
		cmocka_unit_test(test_start_and_sched_args),
		cmocka_unit_test(test_skip_vma),
		cmocka_unit_test(test_reasons_by_name),
		cmocka_unit_test(test_misplaced_fn),
		cmocka_unit_test(test_folio_fn),
		cmocka_unit_test(test_max_numnodes),
		cmocka_unit_test(test_nodes_pgshift),
		cmocka_unit_test(test_node_at_top),
		cmocka_unit_test(test_node_at_top_ksyms),
		cmocka_unit_test(test_nodes_pgshift_debian_arm64),
		cmocka_unit_test(test_read_kconfig),
		cmocka_unit_test(test_host_btf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
