// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Helpers shared by the tracekit subcommands. */
#include <errno.h>
#include <time.h>
#include <signal.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "core/json.h"
#include "core/outfile.h"

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

int outputs_resolve(struct outputs *o, const char *cmd)
{
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
				return usage_error(cmd, "cannot tell the format of '%s' (use .pb.gz, "
						   ".folded, .svg, .json, .txt or --format)",
						   o->path[i]);
	}
	if (o->format && tk_format__parse(o->format, &o->fmt[0]))
		return usage_error(cmd, "unknown format '%s' (pprof, folded, svg, json, text)",
				   o->format);
	return 0;
}

int outputs_write(const struct outputs *o, const char *cmd, const struct tk_result *r, int top)
{
	int i, err;

	for (i = 0; i < o->n; i++) {
		err = tk_result__write_file(r, o->path[i], o->fmt[i], top);
		if (err == -ELOOP)
			return fail(EXIT_FAILURE, "%s: cannot write '%s': it is a symlink (refused: "
				    "never followed nor replaced)", cmd, o->path[i]);
		if (err)
			return fail(EXIT_FAILURE, "%s: writing '%s' failed: %s", cmd, o->path[i],
				    strerror(-err));
	}
	return 0;
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

/* The session a SIGINT or SIGTERM ends (tk_session__stop is async-signal-safe). */
static struct tk_session *volatile stop_session;

static void on_stop_signal(int sig)
{
	tk_session__stop(stop_session);
}

/* Without SA_RESTART: a signal ends a wait at once. */
static void catch_stop_signals(struct tk_session *s)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	stop_session = s;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

struct run_ctx {
	const struct cli_run *run;
	bool tty;
};

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

	if (rc->tty)
		status_line(s, rc->run, elapsed, false);
}

static int on_interval(struct tk_session *s, struct tk_result *r, double elapsed, void *arg)
{
	struct run_ctx *rc = arg;
	int err;

	if (rc->tty)
		fputs("\r\033[K", stderr);
	printf("--- %.1f s\n", elapsed);
	err = tk_result__write(r, TK_FORMAT_TEXT, stdout, rc->run->top);
	fflush(stdout);
	tk_result__free(r);
	if (err)
		fprintf(stderr, "tracekit: %s: no interval report: %s\n", rc->run->cmd,
			strerror(-err));
	return 0;
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

	catch_stop_signals(s);
	err = tk_session__start(s, why, sizeof(why));
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
	if (outputs_write(run->outs, run->cmd, r, run->top))
		goto out;
	ret = EXIT_SUCCESS;
out:
	stop_session = NULL;
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
