// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Helpers shared by the tracekit subcommands. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

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

int libbpf_log(int level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
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
