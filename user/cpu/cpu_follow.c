// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Loader of bpf/cpu_follow.bpf.c: children of profiled processes join the pids filter. */
#include <errno.h>
#include <stdbool.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cpu_follow.skel.h"
#include "core/internal.h"

/* The fork follower, sharing @pids_fd (cpu_sample's filter map); NULL and errno on failure. */
struct cpu_follow_bpf *tk_cpu_follow__attach(int pids_fd, bool tp_btf)
{
	struct cpu_follow_bpf *skel;
	int err;

	skel = cpu_follow_bpf__open();
	if (!skel)
		return NULL;
	bpf_program__set_autoload(skel->progs.fork_btf, tp_btf);
	bpf_program__set_autoload(skel->progs.fork_raw, !tp_btf);
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
