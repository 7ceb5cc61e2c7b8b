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

#include "cli.h"
#include "core/fsutil.h"
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

bool process_alive(int pid)
{
	char rel[32], stat[512], *rp;

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	if (tk_read_file("/proc", rel, stat, sizeof(stat)) <= 0)
		return false;
	/* "PID (comm) S ...": the state follows the last ')' */
	rp = strrchr(stat, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
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

int outputs_write(const struct outputs *o, const char *cmd, const struct tk_profile *p, int top)
{
	struct tk_outfile out;
	int i, err;

	for (i = 0; i < o->n; i++) {
		err = tk_outfile__open(&out, o->path[i]);
		if (err)
			return fail(EXIT_FAILURE, "%s: cannot write '%s': %s", cmd, o->path[i],
				    strerror(-err));
		err = o->fmt[i] == TK_FORMAT_TEXT ? tk_profile__write_text(p, out.f, top)
						  : tk_profile__write(p, o->fmt[i], out.f);
		if (!err)
			err = tk_outfile__commit(&out);
		else
			tk_outfile__abort(&out);
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
		env.unwind_rows = (size_t)v * 1048576 / sizeof(struct unw_row);
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

volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	stop_requested = 1;
}

void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
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
