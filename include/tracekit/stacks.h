/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtracekit: every thread's current stack, kernel and user, without stopping
 * anything (`tracekit stacks`). Nothing is signalled, ptrace-attached or
 * paused: a BPF task iterator reads each thread's state, saved user registers,
 * kernel stack and a copy of its user stack (bpf backend); without it, the
 * thread's /proc files and /proc/PID/mem do (proc backend). User stacks are
 * walked in user space with each object's CFI rows, as the perf backend's.
 * A thread on a CPU at that moment has no saved registers: it gets one perf
 * sample of its own (task clock, after 1 ms of its CPU time, 50 ms at most), as
 * a profiler's; one that does not run meanwhile, or where perf_event_open is
 * refused, has no user stack, said (running_no_stack).
 */
#ifndef __TRACEKIT_STACKS_H
#define __TRACEKIT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which threads (tk_stacks_opts.states): a mask of these; 0 is every state. */
enum tk_stacks_state {
	TK_STACKS_RUNNING = 1 << 0,	/* R: on a CPU or runnable */
	TK_STACKS_SLEEPING = 1 << 1,	/* S: interruptible sleep */
	TK_STACKS_DISK = 1 << 2,	/* D: uninterruptible (or killable) sleep */
	TK_STACKS_STOPPED = 1 << 3,	/* T, t: stopped, traced */
	TK_STACKS_IDLE = 1 << 4,	/* I: an idle kernel thread */
	TK_STACKS_ZOMBIE = 1 << 5,	/* Z, X */
};

struct tk_stacks_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_stacks_opts) */
	enum tk_backend backend;	/* NONE: bpf where its iterator loads, else proc;
					   TK_BACKEND_BPF or TK_BACKEND_PROC: that one */
	uint32_t states;		/* enum tk_stacks_state mask; 0: all */
	const char *cgroup;		/* a cgroup v2 directory: its threads and its
					   descendants'; NULL: the pids, or every process */
	uint32_t repeat;		/* snapshots to take (0 and 1: one) */
	uint64_t interval_ms;		/* between them (0: 1000) */
	bool no_kernel;			/* leave kernel stacks out */
	bool no_user;			/* leave user stacks out */
	tk_log_fn log;			/* libbpf's messages; NULL: nowhere */
	void *log_ctx;
	bool no_sample;			/* no perf sample of the threads on a CPU (their
					   user stacks are then left out) */
	const volatile int *stop;	/* with repeat: set non-zero (a signal handler may)
					   to take no more snapshots; those taken are kept */
};

struct tk_stacks_frame {
	uint64_t addr;			/* the instruction (leaf) or return address */
	const char *function;		/* NULL: not resolved */
	const char *module;		/* the file, "[kernel.kallsyms]"; NULL: unknown */
	uint64_t offset;		/* of the address in module (unresolved frames) */
	bool kernel;
	bool python;			/* a Python frame: function is its qualified name,
					   file and line where it is; addr an opaque id */
	const char *file;		/* Python: the code's file; NULL otherwise */
	int line;			/* Python: the line executing; 0 unknown */
	int first_line;			/* Python: the function's first line */
};

struct tk_stacks_thread {
	uint32_t pid, tid;		/* as tracekit sees them */
	uint32_t ns_tid;		/* as the process sees it (its pid namespace) */
	char comm[16];
	char state;			/* /proc's letter: R S D T t Z X I */
	bool on_cpu;			/* on a CPU when read: no saved user registers */
	int64_t syscall;		/* the number it waits in; -1 none; -2 unknown */
	const char *syscall_name;	/* "read"; NULL unknown */
	uint64_t args[6];
	const char *wchan;		/* the kernel's wait channel; NULL none */
	const char *wait;		/* what it waits for, said for people: "fd 3 pipe:[123]",
					   "mutex 0x55... held by tid 4242"; NULL none */
	uint32_t holder_tid;		/* a mutex's holder (host tid); 0 unknown */
	int64_t off_cpu_ns;		/* off the CPU for this long; -1 unknown */
	uint64_t switches;		/* context switches so far */
	bool moved;			/* with repeat: ran or changed stack since the first */
	bool torn;			/* ran while it was read: the stack may be mixed */
	uint32_t unwind_causes;		/* enum unw_cause bits of the user walk */
	bool user_whole;		/* the user walk reached the outermost frame */
	const char *user_note;		/* why there is no user stack (or, arm64's proc
					   backend, why it stops at its leaf); NULL */
	const char *python_note;	/* why a Python thread's Python frames are not
					   shown (interleaved in uframes when they are) */
	const struct tk_stacks_frame *kframes;	/* leaf first */
	uint32_t nr_kframes;
	const struct tk_stacks_frame *uframes;	/* leaf first */
	uint32_t nr_uframes;
};

struct tk_stacks_snapshot {
	int64_t time_nanos;		/* unix ns when it was taken */
	uint64_t took_ns;		/* how long it took */
	const struct tk_stacks_thread *threads;	/* by pid, then tid */
	size_t nr_threads;
};

struct tk_stacks_loss {
	const char *name;
	uint64_t count;
};

struct tk_stacks_result {
	enum tk_backend backend;
	const char *backend_reason;	/* why this backend ("the sleepable task iterator
					   loaded", "bpf: ...refused: ...") */
	const struct tk_stacks_snapshot *snapshots;
	size_t nr_snapshots;
	const struct tk_stacks_loss *losses;	/* every counter, even at 0 */
	size_t nr_losses;
	const char *const *notes;	/* things a reader should know */
	size_t nr_notes;
};

/*
 * Take the snapshots of @nr_pids processes @pids (or, with none, of
 * opts->cgroup's threads, or of every process) into *@out (free with
 * tk_stacks_result__free). Returns 0 or a negative errno, with @why said: -ESRCH no
 * such process, -ENOENT no such cgroup, -EPERM not allowed to read them,
 * -EOPNOTSUPP the backend asked for cannot be had, -EINVAL bad options.
 * A process that exits meanwhile is left out (counted: process_gone).
 */
int tk_stacks__take(const struct tk_stacks_opts *opts, const int *pids, size_t nr_pids,
		    struct tk_stacks_result **out, char *why, size_t why_sz);
void tk_stacks_result__free(struct tk_stacks_result *s);

/*
 * Snapshots at moments of the caller's choosing (`tracekit record`: the start
 * and the end of its window). tk_stacks__begin takes the first, as
 * tk_stacks__take does (the same scope, backend and errors; opts->repeat and
 * interval_ms are not used), and keeps the backend loaded for the next ones.
 * tk_stacks__again adds one snapshot of the same scope to @s, whose threads'
 * `moved` say whether they ran or changed stack since the first snapshot; 0,
 * or a negative errno with @why said (-ESRCH: every process of the scope has
 * exited), and @s keeps the snapshots it had. Free @s with
 * tk_stacks_result__free.
 */
int tk_stacks__begin(const struct tk_stacks_opts *opts, const int *pids, size_t nr_pids,
		     struct tk_stacks_result **out, char *why, size_t why_sz);
int tk_stacks__again(struct tk_stacks_result *s, char *why, size_t why_sz);

/* "R" → "running", "S" → "sleeping", "D" → "uninterruptible" ...; "unknown". */
const char *tk_stacks__state_name(char state);
/* "R,S,D,T,Z,I" letters or names ("D", "S,D", "running") → mask; -EINVAL otherwise. */
int tk_stacks__parse_states(const char *s, uint32_t *mask);

/*
 * Writers. Text: the threads grouped by identical stacks and state, the
 * largest group first ("37 threads: ..."), with several snapshots the
 * threads that did not move first. JSON: schema tracekit.stacks/1
 * (docs/stacks-json.md). pprof: one sample per thread (the last snapshot),
 * values threads/count and off_cpu/nanoseconds, labels pid, tid, comm,
 * thread_state. Return 0 or a negative errno (of the stream).
 */
int tk_stacks_result__write_text(const struct tk_stacks_result *s, FILE *f);
int tk_stacks_result__write_json(const struct tk_stacks_result *s, FILE *f);
int tk_stacks_result__write_pprof(const struct tk_stacks_result *s, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_STACKS_H */
