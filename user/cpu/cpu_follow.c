// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Loader of bpf/cpu_follow.bpf.c: children of profiled processes join the pids filter. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "bpf/cpu_sample.h"
#include "cpu_follow.skel.h"
#include "core/internal.h"
#include "core/kfeat.h"
#include "core/percpu.h"

/*
 * The fork follower, sharing @pids_fd (cpu_sample's filter map): raw_tp with
 * task_struct.tgid's offset from the kernel's BTF, or, without BTF, the
 * classic tracepoint's child_pid. NULL and errno on failure.
 */
struct cpu_follow_bpf *tk_cpu_follow__attach(int pids_fd)
{
	int tgid_off = tk_kfeat__member_offset("task_struct", "tgid"), child_off = -ENOENT;
	struct cpu_follow_bpf *skel;
	int err;

	if (tgid_off <= 0) {
		child_off = tk_kfeat__tracepoint_field("sched", "sched_process_fork", "child_pid");
		if (child_off <= 0) {
			errno = -child_off;
			return NULL;
		}
	}
	skel = cpu_follow_bpf__open();
	if (!skel)
		return NULL;
	bpf_program__set_autoload(skel->progs.fork_raw, tgid_off > 0);
	bpf_program__set_autoload(skel->progs.fork_tp, tgid_off <= 0);
	skel->rodata->task_tgid_off = tgid_off > 0 ? tgid_off : 0;
	skel->rodata->child_pid_off = child_off > 0 ? child_off : 0;
	err = bpf_map__reuse_fd(skel->maps.pids, pids_fd);
	if (!err)
		err = cpu_follow_bpf__load(skel);
	if (!err)
		err = cpu_follow_bpf__attach(skel);
	if (err) {
		cpu_follow_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

void tk_cpu_follow__destroy(struct cpu_follow_bpf *skel)
{
	cpu_follow_bpf__destroy(skel);
}

/* Children that found the pids map full (never sampled); 0 without a follower. */
uint64_t tk_cpu_follow__pids_full(const struct cpu_follow_bpf *skel)
{
	uint64_t sum;

	if (!skel)
		return 0;
	tk_percpu__sum(skel->bss->pids_full, CPU_MAX_CPUS, 1, &sum);
	return sum;
}
