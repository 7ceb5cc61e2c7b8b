// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CO-RE self-test: a raw_tp program that is never attached, only run once with
 * BPF_PROG_TEST_RUN. It reads current->tgid and current->pid through CO-RE
 * relocations against the running kernel's BTF, and asks BTF which fields of
 * the migration tracepoint this kernel has. If it loads and reports the
 * caller's own pid, CO-RE works here end to end.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "core_probe.h"

/*
 * A flavor of the migrate:mm_migrate_pages record with a field nr_split, which
 * the project's kernel notes list for some kernels. Seen in the guests' own
 * tracefs format files: 6.1 has neither nr_split nor large_folio_split; 6.12 and
 * 6.18 have large_folio_split. CO-RE answers for whatever kernel this runs on.
 */
struct trace_event_raw_mm_migrate_pages___nr_split {
	unsigned long nr_split;
} __attribute__((preserve_access_index));

struct core_probe_facts facts = {};

SEC("raw_tp")
int core_probe(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	facts.tgid = BPF_CORE_READ(task, tgid);
	facts.pid = BPF_CORE_READ(task, pid);
	facts.mm_migrate_has_nr_split =
		bpf_core_field_exists(struct trace_event_raw_mm_migrate_pages___nr_split, nr_split);
	facts.mm_migrate_has_large_folio_split =
		bpf_core_field_exists(struct trace_event_raw_mm_migrate_pages, large_folio_split);
	facts.has_migrate_reason_numa_misplaced =
		bpf_core_enum_value_exists(enum migrate_reason, MR_NUMA_MISPLACED);
	facts.ran = 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
