// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit caps: the capability snapshot. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tracekit/tracekit.h"

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

int cmd_caps(int argc, char **argv)
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
	struct tk_caps *caps;
	int c, err;

	/* --json decides how errors look, so find it before anything can fail */
	env.json = has_option(argc, argv, "--json");

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
			if (optopt && optopt < 256)
				return usage_error("caps", "option '-%c' needs an argument", optopt);
			return usage_error("caps", "option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("caps", "unknown option '-%c'", optopt);
			return usage_error("caps", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("caps", "unexpected argument '%s'", argv[optind]);
	if (env.verbose)
		copts.log = cli_log;

	err = tk_caps__take(&copts, &caps);
	if (err == -ESRCH)
		return fail(EXIT_FAILURE, "caps: no process with PID %d", copts.pid);
	if (err)
		return fail(EXIT_FAILURE, "caps: cannot take the snapshot: %s", strerror(-err));

	err = tk_caps__write_file(caps, output, env.json);
	tk_caps__free(caps);
	if (err)
		return output_error("caps", output, err);
	return EXIT_SUCCESS;
}

