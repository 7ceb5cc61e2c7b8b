// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Following children for cpu_sample.bpf.c: when a profiled process forks, the
 * child's tgid joins the pids filter map (shared with cpu_sample through
 * bpf_map__reuse_fd). No CO-RE, so that it loads wherever the sampler does:
 *  - fork_raw (raw_tp): the child's tgid from its task_struct, at the offset
 *    user space read from the kernel's BTF;
 *  - fork_tp (tracepoint): without kernel BTF, the record's child_pid, at the
 *    offset tracefs gives. A new thread's tid joins too (the record does not
 *    tell threads from processes); it names no process of its own.
 * cpu_sample's exit_raw takes them out again when they end; a child that
 * finds the map full is counted (pids_full), since it is never sampled.
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cpu_sample.h"

const volatile __u32 task_tgid_off = 0;		/* offsetof(struct task_struct, tgid) */
const volatile __u32 child_pid_off = 0;		/* sched_process_fork's child_pid in the record */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CPU_PIDS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* Children that found the pids map full, one slot per CPU: never sampled, so counted */
__u64 pids_full[CPU_MAX_CPUS] = {};

static __always_inline void on_fork(__u32 ctgid)
{
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32;
	__u8 one = 1;

	/* a new process (not a thread) of a profiled one */
	if (ctgid && ptgid != ctgid && bpf_map_lookup_elem(&pids, &ptgid) &&
	    bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY))
		__sync_fetch_and_add(&pids_full[bpf_get_smp_processor_id() & (CPU_MAX_CPUS - 1)],
				     1);
}

/* sched_process_fork(parent, child) */
SEC("?raw_tp/sched_process_fork")
int fork_raw(__u64 *ctx)
{
	__u32 tgid = 0;

	bpf_probe_read_kernel(&tgid, sizeof(tgid), (void *)(ctx[1] + task_tgid_off));
	on_fork(tgid);
	return 0;
}

SEC("?tracepoint/sched/sched_process_fork")
int fork_tp(void *ctx)
{
	__u32 pid = 0;

	bpf_probe_read_kernel(&pid, sizeof(pid), ctx + (child_pid_off & 0xfff));
	on_fork(pid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
