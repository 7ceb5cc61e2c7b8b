// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The "no BTF" fixture tree (fixture.h): the baseline with its BTF taken away. */
#include <stddef.h>
#include <stdio.h>

#include "fixture.h"

/* what the snapshot looks for, by tracefs category */
static const char *const events[] = {
	"sched/sched_process_exec", "sched/sched_process_exit", "migrate/mm_migrate_pages",
	"sched/sched_move_numa",    "sched/sched_swap_numa",	"sched/sched_stick_numa",
	"kmem/mm_page_alloc",	    "kmem/kmalloc",		"exceptions/page_fault_user",
};

/*
 * As the development machine's /proc/kallsyms has them: a tracepoint's
 * __traceiter_ and __probestub_ functions; __bpf_trace_ named after the
 * event's class (sched_swap_numa and sched_stick_numa share one).
 */
static const char nobtf_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81346200 T __traceiter_page_fault_user\n"
	"ffffffff81346270 T __probestub_page_fault_user\n"
	"ffffffff813a53e0 T __traceiter_sched_process_exit\n"
	"ffffffff813a5440 T __probestub_sched_process_exit\n"
	"ffffffff813a5560 T __traceiter_sched_process_exec\n"
	"ffffffff813a55d0 T __probestub_sched_process_exec\n"
	"ffffffff813a5780 T __traceiter_sched_move_numa\n"
	"ffffffff813a5810 T __traceiter_sched_stick_numa\n"
	"ffffffff813a58b0 T __traceiter_sched_swap_numa\n"
	"ffffffff813a9d60 t __bpf_trace_sched_process_exec\n"
	"ffffffff813a9d80 t __bpf_trace_sched_move_numa\n"
	"ffffffff813a9da0 t __bpf_trace_sched_numa_pair_template\n"
	"ffffffff815dfbd0 T __traceiter_kmalloc\n"
	"ffffffff815dfe90 T __traceiter_mm_page_alloc\n"
	"ffffffff81618f50 T __traceiter_mm_migrate_pages\n"
	"ffffffff8166e050 T migrate_misplaced_folio\n"
	"ffffffff82400000 D __start_rodata\n";

int fx_no_btf_host(struct fx *fx)
{
	char rel[128];
	size_t i;
	int err;

	err = fx_base_host(fx);
	if (!err)
		err = fx_remove(fx, "sys/kernel/btf");
	if (!err)
		err = fx_write(fx, "proc/kallsyms", nobtf_kallsyms);
	if (!err)
		err = fx_append(fx, "proc/self/mountinfo",
				"42 24 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime "
				"- tracefs tracefs rw\n");
	for (i = 0; i < sizeof(events) / sizeof(events[0]) && !err; i++) {
		snprintf(rel, sizeof(rel), "sys/kernel/tracing/events/%s/id", events[i]);
		err = fx_writef(fx, rel, "%zu\n", 300 + i);
	}
	return err;
}
