// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit: the command line. Subcommands share option letters:
 * -p PID, -d SECONDS, -o FILE, -F HZ, -v, --json.
 *
 * Exit codes: 0 success; 1 the job could not be done (message says why);
 * 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "outfile.h"
#include "tracekit.h"

#define EXIT_USAGE 2

static struct {
	bool verbose;
	bool json;
} env;

static const char usage_main[] =
	"Usage: tracekit COMMAND [OPTIONS]\n"
	"\n"
	"A tracing toolkit for Linux incidents: where the CPU goes, who allocates and\n"
	"does not free, which pages the kernel moves between NUMA nodes.\n"
	"\n"
	"Commands:\n"
	"  caps        what this machine lets tracekit do, and why\n"
	"\n"
	"Run 'tracekit COMMAND --help' for a command's options.\n"
	"  -h, --help      this help\n"
	"  -V, --version   print the version\n"
	"\n"
	"Exit codes: 0 success, 1 the job could not be done, 2 bad usage.\n";

static const char usage_caps[] =
	"Usage: tracekit caps [-p PID] [--json] [-o FILE] [-v]\n"
	"\n"
	"Report what this kernel, these privileges and (with -p) this process allow:\n"
	"privileges, eBPF program and map types (probed with throw-away objects),\n"
	"perf events, the tracepoints and kernel functions the collectors use, memory\n"
	"and cgroup accounting, NUMA, and the backend each collector will choose.\n"
	"Read-only: it changes no setting, mounts nothing, pins nothing.\n"
	"\n"
	"  -p, --pid PID     also inspect process PID (allocator, jemalloc profiling,\n"
	"                    build-id, frame pointers) and use its cgroup\n"
	"      --json        one JSON object (schema: docs/caps-json.md)\n"
	"  -o, --output FILE write the report to FILE (whole, or not at all)\n"
	"  -v, --verbose     show libbpf's messages from the probes\n"
	"  -h, --help        this help\n"
	"\n"
	"Exit codes: 0 the report was produced (whatever it says), 1 it could not be\n"
	"(e.g. no such process), 2 bad usage.\n";

/* One error, once, with context: plain on stderr, or JSON on stdout with --json. */
__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...)
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

static int usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail(EXIT_USAGE, "%s%s%s (try 'tracekit %s%s--help')", cmd ? cmd : "",
		    cmd ? ": " : "", msg, cmd ? cmd : "", cmd ? " " : "");
}

static int parse_pid(const char *s, int *pid)
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

static int libbpf_log(int level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static int cmd_caps(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct tk_caps_opts copts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	const char *output = "-";
	struct tk_outfile out;
	struct tk_caps *caps;
	int c, err;

	/* --json decides how errors look, so find it before anything can fail */
	for (c = 1; c < argc && strcmp(argv[c], "--"); c++)
		if (!strcmp(argv[c], "--json"))
			env.json = true;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &copts.pid))
				return usage_error("caps", "invalid PID '%s'", optarg);
			break;
		case 'j':
			env.json = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'v':
			env.verbose = true;
			break;
		case 'h':
			fputs(usage_caps, stdout);
			return EXIT_SUCCESS;
		case ':':
			return usage_error("caps", "option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("caps", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("caps", "unexpected argument '%s'", argv[optind]);
	if (env.verbose)
		copts.libbpf_log = libbpf_log;

	caps = calloc(1, sizeof(*caps));
	if (!caps)
		return fail(EXIT_FAILURE, "out of memory");
	err = tk_caps__snapshot(&copts, caps);
	if (err == -ESRCH) {
		free(caps);
		return fail(EXIT_FAILURE, "caps: no process with PID %d", copts.pid);
	}
	if (err) {
		free(caps);
		return fail(EXIT_FAILURE, "caps: cannot take the snapshot: %s", strerror(-err));
	}

	err = tk_outfile__open(&out, output);
	if (err) {
		free(caps);
		return fail(EXIT_FAILURE, "caps: cannot write '%s': %s", output, strerror(-err));
	}
	err = env.json ? tk_caps__write_json(caps, out.f) : tk_caps__write_text(caps, out.f);
	if (err) {
		tk_outfile__abort(&out);
		free(caps);
		return fail(EXIT_FAILURE, "caps: writing '%s' failed: %s", output, strerror(-err));
	}
	err = tk_outfile__commit(&out);
	free(caps);
	if (err)
		return fail(EXIT_FAILURE, "caps: writing '%s' failed: %s", output, strerror(-err));
	return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		return usage_error(NULL, "a command is needed");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return EXIT_SUCCESS;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("tracekit %s\n", TRACEKIT_VERSION);
		return EXIT_SUCCESS;
	}
	if (!strcmp(cmd, "caps"))
		return cmd_caps(argc - 1, argv + 1);
	return usage_error(NULL, "unknown command '%s'", cmd);
}
