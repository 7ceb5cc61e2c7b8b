/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Sessions: one way to run every collector (cpu, alloc, numa).
 *
 *   open  — take the capability snapshot (or use the caller's), choose the
 *           backend from it, and with --backend auto walk the fallback chain
 *           when a backend cannot load or attach (cpu: bpf → perf; alloc:
 *           bpf → jemalloc; numa: bpf → vmstat), saying why in the result's
 *           notes; start a command held before exec when one is given;
 *   start — attach, then let the command run;
 *   run   — poll until the duration ends, tk_session__stop() is called (from
 *           any thread or a signal handler), the command exits, or every
 *           process asked for is gone (pidfds), handing each interval's
 *           result to a callback;
 *   finish — the result of the whole run; a command still running then is
 *           stopped (SIGTERM, SIGKILL after a grace) and reaped, and the
 *           result says so; tk_session__free does the same before a finish.
 *
 * A result is a profile (cpu, alloc, numa --stacks) and/or a NUMA report,
 * with every loss counter and note, written by tk_result__write*.
 */
#ifndef __TRACEKIT_SESSION_H
#define __TRACEKIT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracekit/alloc.h"
#include "tracekit/caps.h"
#include "tracekit/common.h"
#include "tracekit/cpu.h"
#include "tracekit/numa.h"
#include "tracekit/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tk_session;
struct tk_result;

struct tk_session_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_session_opts) */
	/*
	 * Start this command (NULL-terminated) held before exec, profile it
	 * (and, for cpu, its children) and end when it exits. cpu and alloc;
	 * it excludes the collector's pids.
	 */
	char *const *argv;
	const struct tk_caps *caps;	/* the snapshot to choose from; NULL: take one */
	tk_log_fn log;			/* libbpf's and the session's messages; NULL: none */
	void *log_ctx;
	bool no_fallback;		/* auto backend: fail rather than try the next one */
	/*
	 * The command still running when the session ends (tk_session__finish,
	 * or tk_session__free before it) is stopped as `perf record` stops its
	 * workload: SIGTERM, then SIGKILL if it has not exited after this many
	 * milliseconds (0: 10000; negative: SIGKILL at once), and reaped. Only
	 * the command itself is signalled, not what it started.
	 */
	int command_grace_ms;
};

/*
 * Open a session; NULL with errno set on failure, and @why (if given) saying
 * what stood in the way in words a person can act on.
 */
struct tk_session *tk_session__open_cpu(const struct tk_cpu_opts *opts,
					const struct tk_session_opts *sopts, char *why,
					size_t why_sz);
struct tk_session *tk_session__open_alloc(const struct tk_alloc_opts *opts,
					  const struct tk_session_opts *sopts, char *why,
					  size_t why_sz);
struct tk_session *tk_session__open_numa(const struct tk_numa_opts *opts,
					 const struct tk_session_opts *sopts, char *why,
					 size_t why_sz);

/* Attach, then release the command. 0 or a negative errno (and @why). */
int tk_session__start(struct tk_session *s, char *why, size_t why_sz);
/* Take in what arrived, waiting at most @timeout_ms. 0 or a negative errno. */
int tk_session__poll(struct tk_session *s, int timeout_ms);

enum tk_session_end {
	TK_END_RUNNING = 0,	/* not ended */
	TK_END_STOPPED,		/* tk_session__stop() */
	TK_END_DURATION,	/* the run's duration passed */
	TK_END_COMMAND_EXITED,	/* the command exited (tk_session__exit_status) */
	TK_END_PROCESSES_GONE,	/* every process asked for has exited */
};
/* Whether the session should end now, and why (also checks liveness). */
enum tk_session_end tk_session__ended(struct tk_session *s);
/* "stopped", "duration", "command exited", "processes gone", "running" */
const char *tk_session_end__name(enum tk_session_end e);

struct tk_run_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_run_opts) */
	uint64_t duration_ms;		/* 0: until stopped or the processes end */
	uint64_t interval_ms;		/* 0: no intervals */
	/*
	 * Each interval's result (cpu: the samples of the interval; alloc: the
	 * heap so far; numa: the migrations of the interval). The result is
	 * the callback's to free. A negative return ends the run with it.
	 */
	int (*on_interval)(struct tk_session *s, struct tk_result *r, double elapsed_s,
			   void *ctx);
	/* About twice a second, for a status line. */
	void (*on_tick)(struct tk_session *s, double elapsed_s, void *ctx);
	void *ctx;
	int poll_ms;			/* 0: 100 */
};

/*
 * Start (when not started yet) and poll until the session ends. Returns 0
 * (tk_session__ended says why it ended) or a negative errno.
 */
int tk_session__run(struct tk_session *s, const struct tk_run_opts *opts);
/* Ask a running session to end. Async-signal-safe, and safe from any thread. */
void tk_session__stop(struct tk_session *s);

/* The interval since the previous rotation (or the start), as in on_interval. */
int tk_session__rotate(struct tk_session *s, struct tk_result **out);
/* Stop collecting; the result of the whole run. */
int tk_session__finish(struct tk_session *s, struct tk_result **out);
void tk_session__free(struct tk_session *s);

struct tk_session_stats {
	uint64_t events;		/* cpu: samples; alloc: records; numa: 0 */
	uint64_t processes;		/* cpu: distinct processes seen */
	uint64_t live;			/* alloc: recorded objects still live */
	uint64_t lost;			/* the sum of every loss counter so far */
};
void tk_session__stats(const struct tk_session *s, struct tk_session_stats *st);
/*
 * The calls the session's probes have trapped so far: an allocation session
 * hooked by uprobes counts each allocator call it traps (what its cost is
 * made of); 0 for sessions that trap nothing per call. Call it on the thread
 * that runs the session (an on_tick callback, say).
 */
uint64_t tk_session__traps(const struct tk_session *s);
enum tk_collector tk_session__collector(const struct tk_session *s);
/* The backend in use: "bpf", "perf", "jemalloc", "vmstat". */
const char *tk_session__backend(const struct tk_session *s);
/* How it collects, in words ("uprobes on glibc malloc … in /usr/lib/…"); "" if nothing more. */
const char *tk_session__describe(const struct tk_session *s);
/* Why the backend was chosen, or why the ones before it failed ("" when asked for). */
const char *tk_session__why_backend(const struct tk_session *s);
/* The command's pid (sopts->argv), 0 without one. */
int tk_session__command_pid(const struct tk_session *s);
/*
 * The command's wait status once it exited (waitpid's), -1 while it runs (or
 * when another waiter of the host reaped it).
 */
int tk_session__exit_status(const struct tk_session *s);
/*
 * The signal the session sent to end its command, still running when the
 * session ended (SIGTERM, or SIGKILL when it outlived the grace), or 0: it
 * exited by itself, or is not ended yet. The result says so in its notes.
 */
int tk_session__command_stopped(const struct tk_session *s);

/* ---- results ---------------------------------------------------------------------- */

/* The profile (cpu, alloc, numa --stacks), or NULL. */
const struct tk_profile *tk_result__profile(const struct tk_result *r);
/* Whether @fmt can be written from @r (numa: pprof, folded, svg need --stacks). */
bool tk_result__has_format(const struct tk_result *r, enum tk_format fmt);
/*
 * Write @r as @fmt to @f; @top: functions (or processes) in the text summary.
 * -ENOTSUP when tk_result__has_format is false.
 */
int tk_result__write(const struct tk_result *r, enum tk_format fmt, FILE *f, int top);
/*
 * The same into the file @path ("-": stdout), whole or not at all: written
 * beside it and renamed into place, mode 0600; a symlink is refused (-ELOOP);
 * a FIFO or device is written as it is, and a FIFO nobody reads is -ENXIO at
 * once. Temporary files of @path that a killed process left are removed.
 */
int tk_result__write_file(const struct tk_result *r, const char *path, enum tk_format fmt,
			  int top);
void tk_result__free(struct tk_result *r);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_SESSION_H */
