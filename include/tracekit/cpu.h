/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * CPU profiling: where the CPU goes, by kernel and user stack, at a frequency.
 * Run it as a session (tracekit/session.h: tk_session__open_cpu).
 */
#ifndef __TRACEKIT_CPU_H
#define __TRACEKIT_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TK_CPU_MAX_PIDS 64

struct tk_cpu_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_cpu_opts) */
	int freq_hz;			/* default 99 */
	int pids[TK_CPU_MAX_PIDS];	/* processes to profile; none: whole system */
	int nr_pids;
	bool follow_children;		/* also profile processes the pids fork later */
	const char *cgroup;		/* cgroup v2 directory to narrow to, or NULL */
	bool user_only;
	bool kernel_only;
	enum tk_backend backend;	/* TK_BACKEND_NONE: choose from the snapshot */
	const char *proc_root;		/* default "/proc" */
	enum tk_unwind_mode unwind;	/* user stacks: CFI where possible (auto), fp, cfi */
	size_t unwind_mem;		/* bytes for unwind tables; 0: the default (16 MiB) */
	/*
	 * Each interval's result (tk_run_opts.interval_ms, tk_session__rotate)
	 * holds only that interval, nothing of it is kept after it, and the
	 * processes that ended are forgotten a period later: memory stays flat
	 * over any duration. The final result is then the last interval, not
	 * the whole run.
	 */
	bool periods_only;
	/*
	 * Off-CPU time beside the samples: each thread's time switched out, under
	 * its stacks when it left and how it left (preempted, sleeping,
	 * uninterruptible), as the sample types off_cpu/nanoseconds and
	 * off_cpu_count/count. Waits under off_cpu_min_ns are counted per
	 * thread without stacks. bpf: sched_switch (kernel BTF needed); perf:
	 * the context-switches event and its switch records.
	 */
	bool off_cpu;
	uint64_t off_cpu_min_ns;
	bool view_off_cpu;		/* the profile's default sample type is off_cpu */
	/*
	 * Stacks a CPU takes a second at switch-outs before thinning: past it,
	 * one switch-out in 2^k is taken and its wait counted 2^k times (an
	 * estimate of the same totals at a fraction of the cost). 0: the
	 * default (2000); TK_CPU_OFF_CPU_ALL: every switch-out.
	 */
	uint32_t off_cpu_stacks;
	/*
	 * Do not ask JVMs for their perf maps. By default (false) every JVM the
	 * session samples is asked for /tmp/perf-PID.map as `jcmd PID
	 * Compiler.perfmap` asks (HotSpot's attach mechanism, by a child acting
	 * as the JVM's user in its root; never a JVM that does not catch SIGQUIT
	 * or has attach disabled), a second after it is seen and again as it
	 * compiles: without it every compiled Java frame is unnamed. Each JVM
	 * asked is said through tk_session_opts.log.
	 */
	bool no_jit_ask;
};
#define TK_CPU_OFF_CPU_ALL UINT32_MAX
#define TK_CPU_OFF_CPU_STACKS_DEFAULT 2000

struct tk_cpu_stats {
	uint64_t samples;
	uint64_t processes;		/* distinct processes seen */
	uint64_t lost;			/* sum of all loss counters so far */
};

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_CPU_H */
