/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside a session (include/tracekit/session.h): what the core keeps, and
 * what each collector provides — its backends behind one set of operations,
 * and the building of its part of the result. The core does the rest: the
 * snapshot and the backend choice, the fallback chain, the held command,
 * liveness, stop, intervals, notes.
 */
#ifndef __TK_CORE_SESSION_H
#define __TK_CORE_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/log.h"
#include "tracekit/session.h"

#define TK_SESSION_MAX_PIDS 64

struct tk_session;

struct tk_collector_ops {
	enum tk_collector id;
	/* --backend auto: after the snapshot's choice fails, the next of these is tried */
	enum tk_backend chain[3];
	int nr_chain;
	bool takes_command;		/* a command may be given (sopts->argv) */
	bool spawns_command;		/* the collector starts it (its environment) */
	/*
	 * Open with backend @b (TK_BACKEND_NONE: the collector's choice from
	 * s->caps) into s->coll. On failure @why says why and s->coll is NULL.
	 */
	int (*open)(struct tk_session *s, enum tk_backend b, char *why, size_t why_sz);
	/* Attach; a command the collector spawned is released here too. */
	int (*start)(struct tk_session *s, char *why, size_t why_sz);
	int (*poll)(struct tk_session *s, int timeout_ms);
	/* The interval's result (@final: the whole run, collection stopped) into @r. */
	int (*rotate)(struct tk_session *s, bool final, struct tk_result *r);
	void (*stats)(const struct tk_session *s, struct tk_session_stats *st);
	/* Calls the session's probes trapped so far (tk_session__traps); NULL: none counted. */
	uint64_t (*traps)(const struct tk_session *s);
	const char *(*backend)(const struct tk_session *s);
	const char *(*describe)(const struct tk_session *s);
	/* The pid of the command the collector spawned (spawns_command). */
	int (*command_pid)(const struct tk_session *s);
	void (*close)(struct tk_session *s);
};

struct tk_session {
	const struct tk_collector_ops *ops;
	struct tk_session_opts sopts;
	struct tk_log log;
	const struct tk_caps *caps;
	struct tk_caps *own_caps;
	void *copts;			/* the collector's options (a copy) */
	void *coll;			/* the collector's session */
	bool auto_backend;
	char why_backend[512];
	char notes[1024];		/* what every result carries: fallbacks */
	/* the processes whose end ends the session */
	int pids[TK_SESSION_MAX_PIDS];
	int pidfds[TK_SESSION_MAX_PIDS];
	int nr_pids;
	/* the command: held by the core (release_fd), or by the collector */
	int cmd_pid;
	int cmd_pidfd;			/* -1: none (before 5.3) */
	int release_fd, exec_err_fd;
	int exit_status;		/* -1 while it runs */
	bool cmd_gone;			/* exited and reaped (by us, or by a host's waiter) */
	int cmd_stop_sig;		/* the signal that ended it at the session's end, or 0 */
	bool started;
	volatile sig_atomic_t stop;
	enum tk_session_end end;
	int64_t start_mono_ns;
};

/* What a collector's rotate fills. */
struct tk_result {
	enum tk_collector collector;
	struct tk_profile *profile;	/* or NULL */
	void *report;			/* the collector's own model (numa), or NULL */
	int (*write_report)(const void *report, enum tk_format fmt, FILE *f, int top);
	void (*free_report)(void *report);
	/* a note for the result (fallbacks): into the profile's comments, the report's */
	void (*note_report)(void *report, const char *note);
};

/* The collectors' operations (cpu/cpu_session.c, alloc/alloc_session.c, numa/numa_ops.c). */
extern const struct tk_collector_ops tk_cpu_session_ops;
extern const struct tk_collector_ops tk_alloc_session_ops;
extern const struct tk_collector_ops tk_numa_session_ops;

/*
 * The core's opener: @copts (the collector's options, already checked and
 * copied, malloc'ed: the session owns it), the processes @pids whose end
 * ends the session. Returns the session or NULL with errno (and @why).
 */
struct tk_session *tk_session__new(const struct tk_collector_ops *ops, void *copts,
				   bool auto_backend, const struct tk_session_opts *sopts,
				   const int *pids, int nr_pids, char *why, size_t why_sz);
/*
 * For the openers: a malloc'ed copy of the caller's collector options (@sz
 * bytes known here, core/opts.h's rules), or NULL with errno and @why.
 */
void *tk_session__copy_opts(const void *opts, size_t sz, char *why, size_t why_sz);
/* An opener's refusal: frees @copts, sets errno to @err and, with @fmt, @why. NULL. */
void *tk_session__refuse(void *copts, int err, char *why, size_t why_sz, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* 0 when @dir is a cgroup v2 directory; else a negative errno and @why. */
int tk_session__check_cgroup(const char *dir, char *why, size_t why_sz);
/*
 * What a collector did on the user's behalf, for people: @ctx is the session;
 * said through its log (tk_session_opts.log) as information, or as a
 * warning when @warn. The symbolizer's tk_sym_note_fn.
 */
void tk_session__note(void *ctx, bool warn, const char *msg);

#endif /* __TK_CORE_SESSION_H */
