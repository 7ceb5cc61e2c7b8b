// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Following children for cpu_sample.bpf.c: when a profiled process forks, the
 * child's tgid joins the pids filter map (shared with cpu_sample through
 * bpf_map__reuse_fd). A separate object because reading the child's tgid from
 * task_struct needs CO-RE, and so kernel BTF at load time, which whole-system
 * sampling does without. tp_btf where the kernel allows it, raw_tp otherwise.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

static __always_inline void on_fork(struct task_struct *child)
{
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32, ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	/* a new process (not a thread) of a profiled one */
	if (ptgid != ctgid && bpf_map_lookup_elem(&pids, &ptgid))
		bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY);
}

SEC("?tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(child);
	return 0;
}

SEC("?raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(child);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
