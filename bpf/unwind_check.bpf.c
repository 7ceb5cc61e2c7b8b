// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF evaluator of unwind rows on its own, for BPF_PROG_TEST_RUN: a
 * raw_tp program that is never attached, run by user space with the start
 * registers as its context, walks a stack image in the caller's own memory
 * exactly as the collectors' programs walk a sampled task's stack. The
 * capability snapshot runs it on a stack whose frames it knows (does
 * in-kernel unwinding work here?), and the tests feed it the same images as
 * the user-space evaluator.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
/* arm64 rows on x86 too: the tests feed this evaluator arm64 images (bpf/unwind.bpf.h) */
#define UNW_A64_ROWS 1
#include "unwind.bpf.h"
#include "unwind_check.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_check_out);
} check_out SEC(".maps");

/* ctx: ip, sp, bp, skip, lr, a64 (the last two: an arm64 image's LR, and that it is one) */
SEC("raw_tp/sys_enter")
int unwind_check(__u64 *ctx)
{
	__u32 zero = 0, causes = 0, miss = 0;
	struct unw_check_out *o = bpf_map_lookup_elem(&check_out, &zero);
	struct unw_state *s;
	int n;

	if (!o)
		return 0;
#ifndef __TARGET_ARCH_arm64
	unw_a64_walk = ctx[5] != 0;
#endif
	n = unw_walk(ctx[0], ctx[1], ctx[2], ctx[4], ctx[3] & 0xff, 0, o->ips, UNW_MAX_FRAMES,
		     &causes, &miss);
	o->nr = n < 0 ? 0 : n;
	o->causes = causes;
	o->miss = miss;
	s = bpf_map_lookup_elem(&unw_scratch, &zero);
	if (s) {
		o->cfi_frames = s->cfi_frames;
		o->fp_frames = s->fp_frames;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
