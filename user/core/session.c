// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The session core: every collector runs through here (core/session.h).
 *
 * Backend choice: the collector's own choice from the snapshot comes first;
 * when it cannot open or attach and the backend was left to us, the next one
 * of the collector's chain is tried, and why the first failed goes into the
 * notes of every result (and to the log as a warning), so an embedder gets
 * the same fallbacks as the command line.
 *
 * Liveness: a pidfd per process asked for (readable once it exits, zombie or
 * not); where pidfd_open(2) is missing (before 5.3), /proc/PID/stat's state.
 * The command is our child: waitpid(WNOHANG) reaps it and keeps its status.
 * One still running when the session ends is stopped as `perf record` stops
 * its workload (SIGTERM, SIGKILL after the grace) and reaped, at finish or
 * free: a library host is left no zombie and no untraced command running on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps/caps.h"
#include "core/fsutil.h"
#include "core/internal.h"
#include "core/opts.h"
#include "core/session.h"
#include "core/spawn_held.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

#define COMMAND_GRACE_MS 10000

static void put_why(char *why, size_t why_sz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put_why(char *why, size_t why_sz, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_sz)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_sz, fmt, ap);
	va_end(ap);
}

static void add_note(struct tk_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_note(struct tk_session *s, const char *fmt, ...)
{
	size_t n = strlen(s->notes);
	va_list ap;

	if (n + 2 >= sizeof(s->notes))
		return;
	if (n)
		s->notes[n++] = '\n';
	va_start(ap, fmt);
	vsnprintf(s->notes + n, sizeof(s->notes) - n, fmt, ap);
	va_end(ap);
}

/* Alive and not a zombie, from /proc/PID/stat (the fallback without pidfds). */
static bool stat_alive(int pid)
{
	char rel[32], buf[512], *p;

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	if (tk_read_file("/proc", rel, buf, sizeof(buf)) <= 0)
		return false;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static bool pid_alive(struct tk_session *s, int i)
{
	struct pollfd pfd = { .fd = s->pidfds[i], .events = POLLIN };

	if (s->pidfds[i] < 0)
		return stat_alive(s->pids[i]);
	return poll(&pfd, 1, 0) == 0;
}

static void open_pidfds(struct tk_session *s)
{
	int i;

	for (i = 0; i < s->nr_pids; i++)
		if (s->pidfds[i] < 0)
			s->pidfds[i] = syscall(__NR_pidfd_open, s->pids[i], 0);
}

/* The command is @pid now (a fallback's collector may have started another). */
static void set_command(struct tk_session *s, int pid)
{
	if (pid == s->cmd_pid)
		return;
	if (s->cmd_pidfd >= 0)
		close(s->cmd_pidfd);
	s->cmd_pid = pid;
	s->cmd_gone = false;
	/* our unreaped child: its pid cannot have been reused yet */
	s->cmd_pidfd = pid > 0 ? syscall(__NR_pidfd_open, pid, 0) : -1;
	if (s->cmd_pidfd >= 0)
		fcntl(s->cmd_pidfd, F_SETFD, FD_CLOEXEC);
}

static void close_coll(struct tk_session *s)
{
	struct tk_log_scope scope;

	if (!s->coll)
		return;
	tk_log__push(&s->log, &scope);
	s->ops->close(s);
	tk_log__pop(&scope);
	s->coll = NULL;
}

/* The chain after @b, for --backend auto. */
static enum tk_backend next_backend(const struct tk_collector_ops *ops, enum tk_backend b)
{
	int i;

	for (i = 0; i + 1 < ops->nr_chain; i++)
		if (ops->chain[i] == b)
			return ops->chain[i + 1];
	return TK_BACKEND_NONE;
}

static const char *collector_name(const struct tk_session *s)
{
	return tk_collector__name(s->ops->id);
}

static void caps_log(void *ctx, enum tk_log_level level, const char *fmt, va_list ap)
{
	const struct tk_log *log = ctx;

	log->fn(log->ctx, TK_LOG_DEBUG, fmt, ap);
}

static enum tk_backend backend_of(const char *name)
{
	return !strcmp(name, "bpf") ? TK_BACKEND_BPF : !strcmp(name, "perf") ? TK_BACKEND_PERF :
	       !strcmp(name, "jemalloc") ? TK_BACKEND_JEMALLOC :
	       !strcmp(name, "vmstat") ? TK_BACKEND_VMSTAT : TK_BACKEND_NONE;
}

/*
 * Open (and with @start, attach) the collector; with the backend ours to
 * choose, walk the chain when that fails. @why: the last failure.
 */
static int open_chain(struct tk_session *s, bool start, char *why, size_t why_sz)
{
	enum tk_backend b = TK_BACKEND_NONE, tried;
	struct tk_log_scope scope;
	char msg[512];
	int err;

	for (;;) {
		msg[0] = '\0';
		tk_log__push(&s->log, &scope);
		err = s->coll ? 0 : s->ops->open(s, b, msg, sizeof(msg));
		if (!err && start)
			err = s->ops->start(s, msg, sizeof(msg));
		tk_log__pop(&scope);
		if (!err) {
			if (s->ops->spawns_command && s->sopts.argv)
				set_command(s, s->ops->command_pid(s));	/* this backend's */
			return 0;
		}
		if (s->coll)
			tried = backend_of(s->ops->backend(s));
		else
			tried = b != TK_BACKEND_NONE ? b : tk_caps__backend(s->caps, s->ops->id, NULL);
		close_coll(s);
		if (!s->why_backend[0])
			put_why(why, why_sz, "%s", msg[0] ? msg : strerror(-err));
		else	/* the first failure says most; the fallback's after it */
			put_why(why, why_sz, "%s; %s backend: %s", s->why_backend,
				tk_backend__name(tried), msg[0] ? msg : strerror(-err));
		/*
		 * A collector's own command may be running by now (released before
		 * its allocator could be hooked): another backend would start a
		 * second one.
		 */
		if (!s->auto_backend || s->sopts.no_fallback || err == -ENOMEM ||
		    (start && s->ops->spawns_command && s->sopts.argv))
			return err;
		b = next_backend(s->ops, tried);
		if (b == TK_BACKEND_NONE)
			return err;
		add_note(s, "%s backend: %s; %s used instead", tk_backend__name(tried),
			 msg[0] ? msg : strerror(-err), tk_backend__name(b));
		if (!s->why_backend[0])
			snprintf(s->why_backend, sizeof(s->why_backend), "%s backend: %s",
				 tk_backend__name(tried), msg[0] ? msg : strerror(-err));
		tk_log__msg(&s->log, TK_LOG_WARN, "tracekit: %s: %s backend: %s; trying %s "
			    "instead\n", collector_name(s), tk_backend__name(tried),
			    msg[0] ? msg : strerror(-err), tk_backend__name(b));
	}
}

void *tk_session__copy_opts(const void *opts, size_t sz, char *why, size_t why_sz)
{
	void *o = malloc(sz);

	if (!o)
		return tk_session__refuse(NULL, ENOMEM, why, why_sz, "%s", strerror(ENOMEM));
	if (tk_opts__copy(o, sz, opts))
		return tk_session__refuse(o, EINVAL, why, why_sz, "options unknown to this "
					  "libtracekit (a newer caller's fields are set)");
	return o;
}

void *tk_session__refuse(void *copts, int err, char *why, size_t why_sz, const char *fmt, ...)
{
	va_list ap;

	free(copts);
	if (fmt && why && why_sz) {
		va_start(ap, fmt);
		vsnprintf(why, why_sz, fmt, ap);
		va_end(ap);
	}
	errno = err;
	return NULL;
}

int tk_session__check_cgroup(const char *dir, char *why, size_t why_sz)
{
	struct statfs sfs;

	if (statfs(dir, &sfs)) {
		put_why(why, why_sz, "--cgroup '%s': %s", dir, strerror(errno));
		return -errno;
	}
	if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
		put_why(why, why_sz, "--cgroup '%s' is not a cgroup v2 directory (see "
			"/proc/self/mountinfo for cgroup2 mounts)", dir);
		return -ENOTDIR;
	}
	return 0;
}

struct tk_session *tk_session__new(const struct tk_collector_ops *ops, void *copts,
				   bool auto_backend, const struct tk_session_opts *sopts,
				   const int *pids, int nr_pids, char *why, size_t why_sz)
{
	struct tk_caps_opts co = { .sz = sizeof(co) };
	struct tk_session *s;
	const char *reason;
	int err, i;

	put_why(why, why_sz, "%s", "");
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(copts);
		errno = ENOMEM;
		return NULL;
	}
	s->ops = ops;
	s->copts = copts;
	s->auto_backend = auto_backend;
	s->release_fd = s->exec_err_fd = -1;
	s->cmd_pidfd = -1;
	s->exit_status = -1;
	for (i = 0; i < TK_SESSION_MAX_PIDS; i++)
		s->pidfds[i] = -1;
	err = TK_OPTS_COPY(&s->sopts, sopts);
	if (err || nr_pids < 0 || nr_pids > TK_SESSION_MAX_PIDS ||
	    (s->sopts.argv && (!ops->takes_command || nr_pids || !s->sopts.argv[0]))) {
		put_why(why, why_sz, "%s", err ? "session options unknown to this libtracekit" :
			s->sopts.argv && !ops->takes_command ? "this collector takes no command" :
			s->sopts.argv && nr_pids ? "processes and a command exclude each other" :
			"bad options");
		err = -EINVAL;
		goto fail;
	}
	s->log = (struct tk_log){ s->sopts.log, s->sopts.log_ctx };
	if (nr_pids)
		memcpy(s->pids, pids, nr_pids * sizeof(*pids));
	s->nr_pids = nr_pids;
	for (i = 0; i < nr_pids; i++) {
		if (kill(pids[i], 0) && errno == ESRCH) {
			put_why(why, why_sz, "no process with PID %d", pids[i]);
			err = -ESRCH;
			goto fail;
		}
	}

	s->caps = s->sopts.caps;
	if (!s->caps) {
		/* refused probes are expected (and in the report): debug-level words */
		if (s->log.fn) {
			co.log = caps_log;
			co.log_ctx = &s->log;
		}
		/* cpu and alloc sessions need only what their backend choice needs: a faster start */
		co.scope = ops->id == TK_COLLECT_CPU	 ? TK_CAPS_CPU
			   : ops->id == TK_COLLECT_ALLOC ? TK_CAPS_ALLOC
							 : TK_CAPS_ALL;
		co.pid = ops->id == TK_COLLECT_ALLOC && nr_pids ? pids[0] : 0;
		err = tk_caps__take(&co, &s->own_caps);
		if (err) {
			put_why(why, why_sz, "cannot take the capability snapshot: %s",
				strerror(-err));
			goto fail;
		}
		s->caps = s->own_caps;
	}

	/* a command the core holds: started now, released once attached */
	if (s->sopts.argv && !ops->spawns_command) {
		int pid = tk_spawn_held(s->sopts.argv, NULL, -1, &s->release_fd, &s->exec_err_fd);

		if (pid < 0) {
			err = pid;
			put_why(why, why_sz, "cannot start '%s': %s", s->sopts.argv[0],
				strerror(-err));
			goto fail;
		}
		set_command(s, pid);
	}
	err = open_chain(s, false, why, why_sz);
	if (err)
		goto fail;
	if (!s->why_backend[0] && s->auto_backend) {
		tk_caps__backend(s->caps, ops->id, &reason);
		snprintf(s->why_backend, sizeof(s->why_backend), "%s", reason);
		if (backend_of(ops->backend(s)) != ops->chain[0])
			tk_log__msg(&s->log, TK_LOG_INFO, "tracekit: %s: backend %s: %s\n",
				    collector_name(s), ops->backend(s), reason);
	}
	return s;
fail:
	tk_session__free(s);
	errno = -err;
	return NULL;
}

int tk_session__start(struct tk_session *s, char *why, size_t why_sz)
{
	int err;

	put_why(why, why_sz, "%s", "");
	if (!s)
		return -EINVAL;
	if (s->started)
		return -EALREADY;
	err = open_chain(s, true, why, why_sz);
	if (err)
		return err;
	s->started = true;
	s->start_mono_ns = tk_now_ns(CLOCK_MONOTONIC);
	if (s->release_fd >= 0) {
		err = tk_spawn_release(&s->release_fd, &s->exec_err_fd);
		if (err) {
			int status = -1;

			put_why(why, why_sz, "cannot run '%s': %s", s->sopts.argv[0],
				strerror(err > 0 ? err : -err));
			if (err > 0)
				waitpid(s->cmd_pid, &status, 0);	/* it exited: nothing ran */
			else	/* gone, or it cannot be let go: it must not run untraced */
				tk_spawn_stop(s->cmd_pid, s->cmd_pidfd, -1, &status);
			s->exit_status = status;
			s->cmd_gone = true;
			s->cmd_pid = 0;
			return err > 0 ? -err : err;
		}
	}
	open_pidfds(s);
	return 0;
}

int tk_session__poll(struct tk_session *s, int timeout_ms)
{
	struct tk_log_scope scope;
	int err;

	if (!s || !s->coll || !s->started)
		return -EINVAL;
	tk_log__push(&s->log, &scope);
	err = s->ops->poll(s, timeout_ms);
	tk_log__pop(&scope);
	return err == -EINTR ? 0 : err;
}

static bool command_exited(struct tk_session *s)
{
	int status;
	pid_t r;

	if (s->cmd_pid <= 0 || s->cmd_gone)
		return s->cmd_gone;
	r = waitpid(s->cmd_pid, &status, WNOHANG);
	if (r == s->cmd_pid)
		s->exit_status = status;
	/* ECHILD: a waiter of the host's reaped it (its status is lost) */
	s->cmd_gone = r == s->cmd_pid || (r < 0 && errno == ECHILD);
	return s->cmd_gone;
}

static const char *signal_name(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : sig == SIGKILL ? "SIGKILL" : "a signal";
}

/*
 * The session ends: a command still running is stopped and reaped (one never
 * released is killed at once: it must not run untraced), and the result says
 * so. perf record does the same with its workload (SIGTERM, then wait).
 */
static void end_command(struct tk_session *s)
{
	int grace = s->sopts.command_grace_ms, status, sig;

	if (s->cmd_pid <= 0 || command_exited(s))
		return;
	if (!grace)
		grace = COMMAND_GRACE_MS;
	if (s->release_fd >= 0)
		grace = -1;
	sig = tk_spawn_stop(s->cmd_pid, s->cmd_pidfd, grace, &status);
	s->exit_status = status;
	s->cmd_gone = true;
	if (!sig || s->release_fd >= 0)
		return;	/* it exited meanwhile; or it never ran */
	s->cmd_stop_sig = sig;
	add_note(s, "'%s' (pid %d) was still running when the capture ended%s%s%s: tracekit "
		 "stopped it with %s%s", s->sopts.argv ? s->sopts.argv[0] : "the command",
		 s->cmd_pid, s->end ? " (" : "", s->end ? tk_session_end__name(s->end) : "",
		 s->end ? ")" : "", signal_name(sig),
		 sig == SIGKILL && grace > 0 ? ", as it had not exited after SIGTERM" : "");
}

enum tk_session_end tk_session__ended(struct tk_session *s)
{
	int i;

	if (s->end)
		return s->end;
	if (s->stop)
		return s->end = TK_END_STOPPED;
	if (s->cmd_pid > 0) {
		if (command_exited(s))
			return s->end = TK_END_COMMAND_EXITED;
	} else if (s->nr_pids) {
		for (i = 0; i < s->nr_pids; i++)
			if (pid_alive(s, i))
				break;
		if (i == s->nr_pids)
			return s->end = TK_END_PROCESSES_GONE;
	}
	return TK_END_RUNNING;
}

const char *tk_session_end__name(enum tk_session_end e)
{
	switch (e) {
	case TK_END_RUNNING: return "running";
	case TK_END_STOPPED: return "stopped";
	case TK_END_DURATION: return "duration";
	case TK_END_COMMAND_EXITED: return "command exited";
	case TK_END_PROCESSES_GONE: return "processes gone";
	}
	return "unknown";
}

void tk_session__stop(struct tk_session *s)
{
	if (s)
		s->stop = 1;
}

static struct tk_result *result_new(struct tk_session *s)
{
	struct tk_result *r = calloc(1, sizeof(*r));

	if (r)
		r->collector = s->ops->id;
	return r;
}

static int rotate(struct tk_session *s, bool final, struct tk_result **out)
{
	struct tk_log_scope scope;
	struct tk_result *r;
	char *line, *save, notes[sizeof(s->notes)];
	int err;

	*out = NULL;
	if (!s->coll || !s->started)
		return -EINVAL;
	r = result_new(s);
	if (!r)
		return -ENOMEM;
	tk_log__push(&s->log, &scope);
	err = s->ops->rotate(s, final, r);
	tk_log__pop(&scope);
	/* collection has stopped: a command still running goes now, and its result says so */
	if (final)
		end_command(s);
	if (err) {
		tk_result__free(r);
		return err;
	}
	snprintf(notes, sizeof(notes), "%s", s->notes);
	for (line = strtok_r(notes, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (r->profile)
			tk_profile__add_comment(r->profile, "%s", line);
		if (r->report && r->note_report)
			r->note_report(r->report, line);
	}
	*out = r;
	return 0;
}

int tk_session__rotate(struct tk_session *s, struct tk_result **out)
{
	if (!s || !out)
		return -EINVAL;
	return rotate(s, false, out);
}

int tk_session__finish(struct tk_session *s, struct tk_result **out)
{
	if (!s || !out)
		return -EINVAL;
	return rotate(s, true, out);
}

int tk_session__run(struct tk_session *s, const struct tk_run_opts *opts)
{
	int64_t now, last_tick = 0, last_iv, deadline = 0;
	struct tk_run_opts o;
	struct tk_result *r;
	double elapsed;
	int err;

	if (!s || TK_OPTS_COPY(&o, opts))
		return -EINVAL;
	if (!s->started && (err = tk_session__start(s, NULL, 0)))
		return err;
	if (!o.poll_ms)
		o.poll_ms = 100;
	last_iv = s->start_mono_ns;
	if (o.duration_ms)
		deadline = s->start_mono_ns + (int64_t)o.duration_ms * 1000000;
	while (tk_session__ended(s) == TK_END_RUNNING) {
		err = tk_session__poll(s, o.poll_ms);
		if (err)
			return err;
		now = tk_now_ns(CLOCK_MONOTONIC);
		elapsed = (now - s->start_mono_ns) / 1e9;
		if (deadline && now >= deadline) {
			s->end = TK_END_DURATION;
			break;
		}
		if (o.interval_ms && now - last_iv >= (int64_t)o.interval_ms * 1000000) {
			last_iv = now;
			err = tk_session__rotate(s, &r);
			if (err)
				tk_log__msg(&s->log, TK_LOG_WARN, "tracekit: %s: no interval "
					    "report: %s\n", collector_name(s), strerror(-err));
			else if (o.on_interval && (err = o.on_interval(s, r, elapsed, o.ctx)) < 0)
				return err;
			else if (!o.on_interval)
				tk_result__free(r);
		}
		if (o.on_tick && now - last_tick >= 500000000) {
			last_tick = now;
			o.on_tick(s, elapsed, o.ctx);
		}
	}
	return 0;
}

void tk_session__free(struct tk_session *s)
{
	int i;

	if (!s)
		return;
	close_coll(s);
	/* not finished, or finished before it was released: stopped and reaped all the same */
	end_command(s);
	if (s->cmd_pidfd >= 0)
		close(s->cmd_pidfd);
	if (s->release_fd >= 0)
		close(s->release_fd);
	if (s->exec_err_fd >= 0)
		close(s->exec_err_fd);
	for (i = 0; i < TK_SESSION_MAX_PIDS; i++)
		if (s->pidfds[i] >= 0)
			close(s->pidfds[i]);
	tk_caps__free(s->own_caps);
	free(s->copts);
	free(s);
}

void tk_session__stats(const struct tk_session *s, struct tk_session_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (s && s->coll && s->ops->stats)
		s->ops->stats(s, st);
}

uint64_t tk_session__traps(const struct tk_session *s)
{
	return s && s->coll && s->ops->traps ? s->ops->traps(s) : 0;
}

enum tk_collector tk_session__collector(const struct tk_session *s)
{
	return s->ops->id;
}

const char *tk_session__backend(const struct tk_session *s)
{
	return s && s->coll ? s->ops->backend(s) : "none";
}

const char *tk_session__describe(const struct tk_session *s)
{
	return s && s->coll && s->ops->describe ? s->ops->describe(s) : "";
}

const char *tk_session__why_backend(const struct tk_session *s)
{
	return s ? s->why_backend : "";
}

int tk_session__command_pid(const struct tk_session *s)
{
	return s && s->cmd_pid > 0 ? s->cmd_pid : 0;
}

int tk_session__exit_status(const struct tk_session *s)
{
	return s ? s->exit_status : -1;
}

int tk_session__command_stopped(const struct tk_session *s)
{
	return s ? s->cmd_stop_sig : 0;
}

void tk_session__note(void *ctx, bool warn, const char *msg)
{
	struct tk_session *s = ctx;

	tk_log__msg(&s->log, warn ? TK_LOG_WARN : TK_LOG_INFO, "%s\n", msg);
}
