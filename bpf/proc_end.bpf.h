/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Has a process ended? For the sched_process_exit programs of the objects
 * that follow processes (cpu_sample, alloc_trace), which use no CO-RE: the
 * two offsets come from the running kernel's BTF (core/kfeat.h), set by
 * user space before load; 0 when there is none.
 */
#ifndef __PROC_END_BPF_H
#define __PROC_END_BPF_H

const volatile __u32 task_signal_off = 0;	/* offsetof(struct task_struct, signal) */
const volatile __u32 signal_live_off = 0;	/* offsetof(struct signal_struct, live) */

/*
 * Is the exiting task its process's last? do_exit() has counted it out of
 * signal->live before the tracepoint (5.10 to 7.x). Without the offsets it
 * cannot be told: false.
 */
static __always_inline bool group_dead(void)
{
	void *task = (void *)bpf_get_current_task(), *sig = NULL;
	int live = 1;

	if (!task_signal_off || !signal_live_off)
		return false;
	if (bpf_probe_read_kernel(&sig, sizeof(sig), task + task_signal_off) || !sig ||
	    bpf_probe_read_kernel(&live, sizeof(live), sig + signal_live_off))
		return false;
	return live == 0;
}

#endif /* __PROC_END_BPF_H */
