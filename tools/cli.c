// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Helpers shared by the tracekit subcommands. */
#include <errno.h>
#include <time.h>
#include <signal.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "core/json.h"
#include "core/kfeat.h"
#include "core/outfile.h"
#include "profile/profile.h"

struct cli_env env;

/* One error, once, with context: plain on stderr, or JSON on stdout with --json. */
int fail(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (env.json) {
		struct tk_json j;

		tk_json__init(&j, stdout, false);
		tk_json__begin_object(&j, NULL);
		tk_json__string(&j, "error", msg);
		tk_json__int(&j, "exit_code", code);
		tk_json__end_object(&j);
		tk_json__finish(&j);
	} else {
		fprintf(stderr, "tracekit: %s\n", msg);
	}
	return code;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail(EXIT_USAGE, "%s%s%s (try 'tracekit %s%s--help')", cmd ? cmd : "",
		    cmd ? ": " : "", msg, cmd ? cmd : "", cmd ? " " : "");
}

int parse_pid(const char *s, int *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*pid = v;
	return 0;
}

void cli_log(void *ctx, enum tk_log_level level, const char *fmt, va_list ap)
{
	/* what libbpf's own printer shows (warnings and information), all with -v */
	if (level <= TK_LOG_INFO || env.verbose)
		vfprintf(stderr, fmt, ap);
}

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

bool has_option(int argc, char **argv, const char *opt)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], opt))
			return true;
	return false;
}

int outputs_add(struct outputs *o, const char *cmd, const char *path)
{
	if (o->n >= OUTPUTS_MAX)
		return usage_error(cmd, "at most %d -o", OUTPUTS_MAX);
	o->path[o->n++] = path;
	return 0;
}

static const char *const format_names[] = {
	[TK_FORMAT_PPROF] = "pprof", [TK_FORMAT_FOLDED] = "folded", [TK_FORMAT_SVG] = "svg",
	[TK_FORMAT_JSON] = "json",   [TK_FORMAT_TEXT] = "text",
};
static const char *const format_exts[] = {
	[TK_FORMAT_PPROF] = ".pb.gz", [TK_FORMAT_FOLDED] = ".folded", [TK_FORMAT_SVG] = ".svg",
	[TK_FORMAT_JSON] = ".json",   [TK_FORMAT_TEXT] = ".txt",
};

/* "pprof, folded, ..." or ".pb.gz, .folded, ..." of the formats in @allowed, into @buf. */
static const char *format_list(unsigned int allowed, const char *const *names, char *buf,
			       size_t sz)
{
	static const enum tk_format order[] = { TK_FORMAT_PPROF, TK_FORMAT_FOLDED, TK_FORMAT_SVG,
						TK_FORMAT_JSON, TK_FORMAT_TEXT };
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
		if ((allowed & TK_FORMAT_BIT(order[i])) && n < sz)
			n += snprintf(buf + n, sz - n, "%s%s", n ? ", " : "", names[order[i]]);
	return buf;
}

int outputs_resolve_in(struct outputs *o, const char *cmd, unsigned int allowed)
{
	char list[80];
	int i;

	if (o->format && o->n > 1)
		return usage_error(cmd, "--format goes with one -o at most");
	if (!o->n) {
		o->path[o->n] = "-";
		o->fmt[o->n++] = TK_FORMAT_TEXT;
	} else if (!o->format) {
		for (i = 0; i < o->n; i++)
			if (!strcmp(o->path[i], "-"))
				o->fmt[i] = TK_FORMAT_TEXT;
			else if (tk_format__from_path(o->path[i], &o->fmt[i]))
				return usage_error(cmd, "cannot tell the format of '%s' (use %s or "
						   "--format)", o->path[i],
						   format_list(allowed, format_exts, list,
							       sizeof(list)));
			else if (!(allowed & TK_FORMAT_BIT(o->fmt[i])))
				return usage_error(cmd, "'%s': %s writes no %s (use %s or --format)",
						   o->path[i], cmd, format_names[o->fmt[i]],
						   format_list(allowed, format_exts, list,
							       sizeof(list)));
	}
	if (o->format && (tk_format__parse(o->format, &o->fmt[0]) ||
			  !(allowed & TK_FORMAT_BIT(o->fmt[0]))))
		return usage_error(cmd, "unknown format '%s' for %s (%s)", o->format, cmd,
				   format_list(allowed, format_names, list, sizeof(list)));
	return 0;
}

int outputs_resolve(struct outputs *o, const char *cmd)
{
	return outputs_resolve_in(o, cmd, TK_FORMATS_ALL);
}

/* Whether stdout is a pipe or FIFO whose reader has gone: a write there fails with EPIPE. */
static bool stdout_reader_gone(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

int output_error(const char *cmd, const char *path, int err)
{
	struct stat st;

	if (err == -ELOOP)
		return fail(EXIT_FAILURE, "%s: cannot write '%s': it is a symlink (refused: "
			    "never followed nor replaced)", cmd, path);
	if (err == -ENXIO && !lstat(path, &st) && S_ISFIFO(st.st_mode))
		return fail(EXIT_FAILURE, "%s: cannot write '%s': it is a FIFO nobody reads "
			    "(start its reader first)", cmd, path);
	if (err == -EISDIR)
		return fail(EXIT_FAILURE, "%s: cannot write '%s': it is a directory", cmd, path);
	if (err == -EPERM && !lstat(path, &st) && !S_ISREG(st.st_mode))
		return fail(EXIT_FAILURE, "%s: cannot write '%s': it is a %s of uid %u, not ours "
			    "(refused: its owner would read what is written; remove it or name "
			    "another file)", cmd, path, S_ISFIFO(st.st_mode) ? "FIFO" :
			    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" : "special file",
			    (unsigned int)st.st_uid);
	return fail(EXIT_FAILURE, "%s: cannot write '%s': %s", cmd, path, strerror(-err));
}

int outputs_open(struct outputs *o, const char *cmd)
{
	int i, err;

	for (i = 0; i < o->n; i++) {
		if (!strcmp(o->path[i], "-"))
			continue;
		/*
		 * Held from now to the end: a file's temporary file in its
		 * directory (renamed over whatever is at the name then: a FIFO
		 * another user put there meanwhile gets nothing), our own FIFO
		 * or device open (closing a FIFO would end its reader).
		 */
		err = tk_outfile__open(&o->held[i], o->path[i]);
		if (err) {
			outputs_abort(o);
			return output_error(cmd, o->path[i], err);
		}
	}
	return 0;
}

void outputs_abort(struct outputs *o)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (o->held[i].f)
			tk_outfile__abort(&o->held[i]);
}

int outputs_write(struct outputs *o, const char *cmd, const struct tk_result *r, int top)
{
	int i, err, ret = 0;

	for (i = 0; i < o->n; i++) {
		if (o->held[i].f) {
			err = tk_result__write(r, o->fmt[i], o->held[i].f, top);
			if (err)
				tk_outfile__abort(&o->held[i]);
			else
				err = tk_outfile__commit(&o->held[i]);
		} else {
			err = tk_result__write_file(r, o->path[i], o->fmt[i], top);
		}
		if (!err)
			continue;
		if (!strcmp(o->path[i], "-") && (err == -EPIPE || stdout_reader_gone())) {
			fprintf(stderr, "tracekit: %s: stdout was closed before the %s was written "
				"to it (its reader has gone)\n", cmd,
				o->fmt[i] == TK_FORMAT_TEXT ? "summary" : "output");
			if (!ret)
				ret = EXIT_STDOUT_CLOSED;
			continue;
		}
		if (err == -ELOOP || err == -ENXIO || err == -EISDIR)
			output_error(cmd, o->path[i], err);
		else
			fail(EXIT_FAILURE, "%s: writing '%s' failed: %s", cmd, o->path[i],
			     strerror(-err));
		ret = EXIT_FAILURE;
	}
	return ret;
}

int outputs_rotating(const struct outputs *o, const char *cmd)
{
	struct stat st;
	int i;

	for (i = 0; i < o->n; i++) {
		if (!strcmp(o->path[i], "-"))
			return usage_error(cmd, "--rotate writes a file per period: give each -o "
					   "a file name (not -)");
		if (!lstat(o->path[i], &st) && !S_ISREG(st.st_mode))
			return usage_error(cmd, "--rotate writes a file per period: '%s' is not "
					   "a regular file", o->path[i]);
	}
	return 0;
}

void outputs_period(const struct outputs *o, unsigned int k, struct outputs *out,
		    char (*names)[PATH_MAX])
{
	size_t n, e;
	int i;

	*out = (struct outputs){ .n = o->n, .format = o->format };
	for (i = 0; i < o->n; i++) {
		n = strlen(o->path[i]);
		e = tk_format__ext_len(o->path[i]);
		if (snprintf(names[i], PATH_MAX, "%.*s.%04u%s", (int)(n - e), o->path[i], k,
			     o->path[i] + n - e) >= PATH_MAX)
			names[i][0] = '\0';	/* too long: its write fails and says so */
		out->path[i] = names[i];
		out->fmt[i] = o->fmt[i];
	}
}

int common_option(const char *cmd, int c, char **argv, const char *usage, struct outputs *o,
		  long *top)
{
	long v;
	int err;

	switch (c) {
	case 'o':
		return (err = outputs_add(o, cmd, optarg)) ? err : CLI_CONTINUE;
	case CLI_OPT_FORMAT:
		o->format = optarg;
		return CLI_CONTINUE;
	case CLI_OPT_JSON:
		o->format = "json";
		return CLI_CONTINUE;
	case CLI_OPT_TOP:
		if (parse_long(optarg, 1, 10000, top))
			return usage_error(cmd, "invalid --top '%s' (1 to 10000)", optarg);
		return CLI_CONTINUE;
	case CLI_OPT_UNWIND:
		if (tk_unwind_mode__parse(optarg, &env.unwind))
			return usage_error(cmd, "invalid --unwind '%s' (auto, cfi, fp)", optarg);
		return CLI_CONTINUE;
	case CLI_OPT_NO_JIT_ASK:
		env.no_jit_ask = true;
		return CLI_CONTINUE;
	case CLI_OPT_UNWIND_MEM:
		if (parse_long(optarg, 1, 4096, &v))
			return usage_error(cmd, "invalid --unwind-mem '%s' (1 to 4096 MiB)", optarg);
		env.unwind_mem = (size_t)v * 1048576;
		return CLI_CONTINUE;
	case 'v':
		env.verbose = true;
		return CLI_CONTINUE;
	case 'h':
		fputs(usage, stdout);
		return EXIT_SUCCESS;
	case ':':
		if (optopt && optopt < 256)
			return usage_error(cmd, "option '-%c' needs an argument", optopt);
		return usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
	default:
		if (optopt && optopt < 256)
			return usage_error(cmd, "unknown option '-%c'", optopt);
		return usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	}
}

/* The session a SIGINT, SIGTERM or SIGHUP ends (tk_session__stop is async-signal-safe). */
static struct tk_session *volatile stop_session;

static void on_stop_signal(int sig)
{
	tk_session__stop(stop_session);
}

/*
 * Without SA_RESTART: a signal ends a wait at once. SIGHUP (the terminal
 * closed) ends a capture like Ctrl-C, so the files are still written whole,
 * unless it was ignored when we started (nohup), which is left as it is.
 * SIGPIPE is ignored: a write to a closed pipe (`| head`) fails with EPIPE
 * instead of killing us before the -o files are written. Commands started
 * get the default dispositions back (tk_spawn_held), handlers reset at exec.
 */
static void catch_stop_signals(struct tk_session *s)
{
	struct sigaction sa = { .sa_handler = on_stop_signal }, old;

	stop_session = s;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!sigaction(SIGHUP, NULL, &old) && old.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

struct run_ctx {
	const struct cli_run *run;
	bool tty;
	bool stdout_closed;	/* an interval report met stdout's reader gone */
	unsigned int period;	/* --rotate: periods written */
	int period_ret;		/* --rotate: the first failed write's exit code */
};

/* --rotate: period @rc->period + 1's files from @r; its exit code (0 when written). */
static int write_period(struct run_ctx *rc, const struct tk_result *r, double elapsed)
{
	char names[OUTPUTS_MAX][PATH_MAX];
	const struct tk_profile *p = tk_result__profile(r);
	struct outputs po;
	int ret, i;

	outputs_period(rc->run->outs, ++rc->period, &po, names);
	ret = outputs_write(&po, rc->run->cmd, r, rc->run->top);
	if (rc->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "tracekit: %s: period %u (to %.1f s, %.1f s long): %s", rc->run->cmd,
		rc->period, elapsed, p ? p->duration_nanos / 1e9 : 0.0,
		ret ? "not all written:" : "wrote");
	for (i = 0; i < po.n; i++)
		fprintf(stderr, " %s", po.path[i]);
	fputc('\n', stderr);
	if (ret && !rc->period_ret)
		rc->period_ret = ret;
	return ret;
}

static void status_line(struct tk_session *s, const struct cli_run *run, double elapsed,
			bool final)
{
	struct tk_session_stats st;

	tk_session__stats(s, &st);
	fprintf(stderr, "\r\033[K%.1f s  ", elapsed);
	switch (tk_session__collector(s)) {
	case TK_COLLECT_CPU:
		fprintf(stderr, "%llu samples  %llu processes  %llu lost",
			(unsigned long long)st.events, (unsigned long long)st.processes,
			(unsigned long long)st.lost);
		break;
	case TK_COLLECT_ALLOC:
		fprintf(stderr, "%llu recorded  %llu live  %llu lost",
			(unsigned long long)st.events, (unsigned long long)st.live,
			(unsigned long long)st.lost);
		break;
	default:
		fprintf(stderr, "backend %s", tk_session__backend(s));
		break;
	}
	if (final)
		fputc('\n', stderr);
}

static void on_tick(struct tk_session *s, double elapsed, void *arg)
{
	struct run_ctx *rc = arg;

	if (rc->run->tick)
		rc->run->tick(s, elapsed, rc->run->tick_arg);
	if (rc->tty)
		status_line(s, rc->run, elapsed, false);
}

static int on_interval(struct tk_session *s, struct tk_result *r, double elapsed, void *arg)
{
	struct run_ctx *rc = arg;
	const struct outputs *o = rc->run->outs;
	bool files = false;
	int err, i;

	if (rc->run->rotate) {
		write_period(rc, r, elapsed);
		tk_result__free(r);
		return 0;
	}
	if (rc->stdout_closed) {
		tk_result__free(r);
		return 0;
	}
	if (rc->tty)
		fputs("\r\033[K", stderr);
	printf("--- %.1f s\n", elapsed);
	err = tk_result__write(r, TK_FORMAT_TEXT, stdout, rc->run->top);
	errno = 0;
	if ((fflush(stdout) || ferror(stdout)) && (errno == EPIPE || stdout_reader_gone())) {
		/* nobody reads the reports any more; the -o files still get the whole run */
		rc->stdout_closed = true;
		for (i = 0; i < o->n; i++)
			files |= strcmp(o->path[i], "-") != 0;
		fprintf(stderr, "tracekit: %s: stdout was closed (its reader has gone): %s\n",
			rc->run->cmd, files ? "no more interval reports; the -o files are "
			"written at the end" : "nothing more can be written, the capture ends");
		if (!files)
			tk_session__stop(s);
		tk_result__free(r);
		return 0;
	}
	tk_result__free(r);
	if (err)
		fprintf(stderr, "tracekit: %s: no interval report: %s\n", rc->run->cmd,
			strerror(-err));
	return 0;
}

void cli_startup_over(void)
{
	/* the kernel's BTF, parsed once for the start-up, is not needed again */
	tk_kfeat__btf_release();
	malloc_trim(0);
}

int cli_session(struct tk_session *s, const struct cli_run *run)
{
	struct tk_run_opts ro = { .sz = sizeof(ro) };
	struct run_ctx rc = { .run = run, .tty = isatty(2) };
	struct tk_result *r = NULL;
	int err, ret = EXIT_FAILURE, status;
	int64_t t0;
	char why[512];
	struct timespec ts;

	/* --rotate: -o names each period's files; what outputs_open held was the check */
	if (run->rotate)
		outputs_abort(run->outs);
	catch_stop_signals(s);
	err = tk_session__start(s, why, sizeof(why));
	cli_startup_over();
	if (err) {
		ret = fail(EXIT_FAILURE, "%s: %s", run->cmd, why[0] ? why : strerror(-err));
		goto out;
	}
	if (env.verbose && tk_session__describe(s)[0])
		fprintf(stderr, "tracekit: %s: backend %s: %s\n", run->cmd, tk_session__backend(s),
			tk_session__describe(s));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	ro.duration_ms = (uint64_t)(run->duration * 1000);
	ro.interval_ms = (uint64_t)(run->interval * 1000);
	ro.on_interval = on_interval;
	ro.on_tick = on_tick;
	ro.ctx = &rc;
	err = tk_session__run(s, &ro);
	if (err) {
		ret = fail(EXIT_FAILURE, "%s: collection failed: %s", run->cmd, strerror(-err));
		goto out;
	}
	if (rc.tty) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		status_line(s, run, (ts.tv_sec * 1000000000LL + ts.tv_nsec - t0) / 1e9, true);
	}
	err = tk_session__finish(s, &r);
	if (err) {
		ret = fail(EXIT_FAILURE, "%s: cannot build the %s: %s", run->cmd,
			   tk_session__collector(s) == TK_COLLECT_NUMA ? "report" : "profile",
			   strerror(-err));
		goto out;
	}
	if (run->rotate) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		write_period(&rc, r, (ts.tv_sec * 1000000000LL + ts.tv_nsec - t0) / 1e9);
		ret = rc.period_ret;
	} else {
		ret = outputs_write(run->outs, run->cmd, r, run->top);
	}
	if (!ret && rc.stdout_closed)
		ret = EXIT_STDOUT_CLOSED;
out:
	outputs_abort(run->outs);
	stop_session = NULL;
	if (run->argv && tk_session__command_stopped(s))
		fprintf(stderr, "tracekit: %s: '%s' was still running when the capture ended: "
			"stopped with %s\n", run->cmd, run->argv[0],
			tk_session__command_stopped(s) == SIGKILL ?
			"SIGKILL (it outlived SIGTERM)" : "SIGTERM");
	else if (run->argv && tk_session__command_pid(s) && tk_session__exit_status(s) < 0)
		/* an error ended the run: tk_session__free stops it */
		fprintf(stderr, "tracekit: %s: stopping '%s' (pid %d)\n", run->cmd, run->argv[0],
			tk_session__command_pid(s));
	status = tk_session__exit_status(s);
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) && run->argv)
		fprintf(stderr, "tracekit: '%s' exited with status %d\n", run->argv[0],
			WEXITSTATUS(status));
	tk_result__free(r);
	tk_session__free(s);
	return ret;
}

double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}
