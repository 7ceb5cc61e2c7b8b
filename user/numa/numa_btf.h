/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the BPF NUMA backend reads from the kernel's BTF and config before it
 * loads: tracepoint argument positions, the migrate_reason table, the
 * misplaced-page function, and where a page's node sits in its flags. Pure
 * functions over a struct btf or a config text, so unit tests feed fixtures.
 */
#ifndef __TK_NUMA_BTF_H
#define __TK_NUMA_BTF_H

#include <stddef.h>
#include <stdint.h>

struct btf;

/* Argument positions of migrate:mm_migrate_pages, 0 = the first after `void *`; -1 absent */
struct tk_numa_mig_args {
	int nr;				/* the tracepoint's arguments */
	int succeeded, failed, thp_succeeded, thp_failed, thp_split;
	int split;			/* large_folio_split or nr_split */
	int mode, reason;
	char split_name[32];		/* "large_folio_split", "nr_split", "" */
};

/* Returns 0, or -ENOENT when the kernel has no such tracepoint (or an unknown shape). */
int tk_numa_btf__migrate_args(const struct btf *btf, struct tk_numa_mig_args *a);
/* Position of the reason argument of mm_migrate_pages_start, or -ENOENT. */
int tk_numa_btf__start_reason(const struct btf *btf);
/* @tp "sched_move_numa" and the like: positions of the task, source and destination CPU. */
int tk_numa_btf__sched_args(const struct btf *btf, const char *tp, int *task, int *src_cpu,
			    int *dst_cpu);
/*
 * sched:sched_skip_vma_numa (6.7+): the position of its argument typed enum
 * numa_vmaskip_reason (6.7 to 6.18: 2, after mm and vma), or -ENOENT.
 */
int tk_numa_btf__skip_vma_arg(const struct btf *btf);
/*
 * enum numa_vmaskip_reason by value into @names[0..@max): each enumerator's
 * name without "NUMAB_SKIP_", in lowercase ("NUMAB_SKIP_SHARED_RO" is
 * "shared_ro"); "" for a value no enumerator has. Returns how many slots are
 * used (the highest value below @max, plus one), or -ENOENT without the enum.
 */
int tk_numa_btf__skip_reasons(const struct btf *btf, char (*names)[24], int max);
/* enum tk_mig_reason of a kernel enumerator ("MR_SYSCALL"); TK_MR_UNKNOWN for others. */
int tk_numa_btf__reason_of(const char *name);
/*
 * Kernel enum migrate_reason value → enum tk_mig_reason into @map[0..@max);
 * values without a known name become TK_MR_UNKNOWN. Returns how many
 * enumerators were named (MR_TYPES excluded), or -ENOENT without the enum.
 */
int tk_numa_btf__reasons(const struct btf *btf, uint8_t *map, int max);
/*
 * The misplaced-page function the kernel has (migrate_misplaced_folio, or
 * migrate_misplaced_page before 6.7) into @name, and the position of its
 * node parameter (by name: "node" or "nid"). Returns 0 or -ENOENT.
 */
int tk_numa_btf__misplaced_fn(const struct btf *btf, char *name, size_t name_sz, int *node_idx);
/*
 * The function the migration path calls once per migrated folio with both
 * folios, first of: folio_migrate_flags (void: called once the mapping has
 * moved), folio_migrate_mapping, migrate_folio_move, move_to_new_folio (int:
 * 0 is success), where BTF has it as FUNC and both its destination
 * ("newfolio", "dst") and source ("folio", "src") parameters, found by name,
 * are struct folio pointers.
 */
struct tk_numa_folio_fn {
	char name[64];
	int dst, src;			/* parameter positions */
	int ret;			/* position of the return value for fexit; -1: void */
};

/* Returns 0, or -ENOENT when this kernel has none of them. */
int tk_numa_btf__folio_fn(const struct btf *btf, struct tk_numa_folio_fn *f);
/* MAX_NUMNODES: struct zonelist has MAX_NUMNODES * __MAX_NR_ZONES + 1 zonerefs; or -ENOENT. */
int tk_numa_btf__max_numnodes(const struct btf *btf);
/*
 * page->flags of a 64-bit kernel, any architecture (include/linux/mm.h,
 * page-flags-layout.h), from the top: | SECTION | NODE | ZONE | LAST_CPUPID
 * | KASAN_TAG | LRU_GEN ... | FLAGS |. Only SECTION sits above the node, and
 * only with SPARSEMEM without VMEMMAP (its width, MAX_PHYSMEM_BITS -
 * SECTION_SIZE_BITS, is in no BTF); the node is always in the flags on
 * 64 bits (NODE_NOT_IN_PAGE_FLAGS needs more bits than there are). So
 * NODES_PGSHIFT = 64 - NODES_SHIFT where SPARSEMEM_VMEMMAP, as Debian's
 * amd64 and arm64 kernels are (5.10 to 7.2: arm64 NODES_SHIFT 4, 60).
 *
 * From BTF: 0 when the node is the top bits (mm/sparse-vmemmap.c's
 * vmemmap_populate_basepages exists, which is built with SPARSEMEM_VMEMMAP
 * on every architecture); -EOPNOTSUPP when it is not (page_to_nid is a
 * function: NODE_NOT_IN_PAGE_FLAGS); -ENOENT when BTF does not say.
 */
int tk_numa_btf__node_at_top(const struct btf *btf);

/*
 * The same question asked of PROC_ROOT/kallsyms (NULL: /proc), for a BTF that does
 * not encode the functions of init sections (Debian's 5.10: pahole of bullseye):
 * 0 when vmemmap_populate_basepages is a function of the kernel's text, -ENOENT
 * when not, or -errno.
 */
int tk_numa__node_at_top_ksyms(const char *proc_root);
/*
 * NODES_PGSHIFT from a kernel config text: 64 - SECTIONS_WIDTH -
 * NODES_SHIFT, SECTIONS_WIDTH 0 with SPARSEMEM_VMEMMAP. Returns 0 with
 * *shift and *nodes_shift set; -ENOENT without CONFIG_NODES_SHIFT;
 * -EOPNOTSUPP when not SPARSEMEM_VMEMMAP (the section sits in the flags too).
 */
int tk_numa__nodes_pgshift(const char *config, int *shift, int *nodes_shift);
/*
 * The running kernel's config: @proc_root/config.gz, else
 * @boot_root/config-@release. *@text is malloc'd; @from names the file read.
 */
int tk_numa__read_kconfig(const char *proc_root, const char *boot_root, const char *release,
			  char **text, char *from, size_t from_sz);

#endif /* __TK_NUMA_BTF_H */
