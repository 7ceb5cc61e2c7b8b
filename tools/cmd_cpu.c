// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit cpu: where the CPU goes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tracekit/tracekit.h"

static const char usage_cpu[] =
	"Usage: tracekit cpu [OPTIONS] [-- CMD ARGS...]\n"
	"\n"
	"Sample where the CPU goes: kernel and user stacks of every CPU at -F Hz,\n"
	"symbolized (names survive the exit of short-lived processes), written as\n"
	"pprof, folded stacks, an SVG flame graph, JSON, or a top-N text summary.\n"
	"The backend (bpf, or perf_event when eBPF is unavailable) comes from the\n"
	"capability snapshot ('tracekit caps'); every loss is counted in the output.\n"
	"\n"
	"  -p, --pid PID        only this process and its threads (repeatable)\n"
	"      --cgroup DIR     only tasks in this cgroup v2 directory and below\n"
	"  -F, --freq HZ        samples per second per CPU (default 99, at most 10000)\n"
	"  -d, --duration SEC   stop after SEC seconds; otherwise at Ctrl-C, when CMD\n"
	"                       exits, or when every -p process has exited\n"
	"  -i, --interval SEC   also print the top functions of each SEC-second\n"
	"                       interval on stdout (-o files still hold the whole run)\n"
	"      --rotate SEC     write each SEC-second period to its own -o files, the\n"
	"                       period's number before the extension (out.pb.gz:\n"
	"                       out.0001.pb.gz, out.0002.pb.gz, ...), each whole with\n"
	"                       its own losses, and keep nothing of a period once it\n"
	"                       is written: memory stays flat over hours (1 to 86400)\n"
	"  -o, --output FILE    write FILE, whole or not at all; the format follows the\n"
	"                       name: .pb.gz (pprof), .folded, .svg, .json, .txt;\n"
	"                       repeat -o for several files from the same capture\n"
	"      --format FMT     pprof, folded, svg, json or text (overrides the name\n"
	"                       of a single -o, or what goes to stdout)\n"
	"      --json           the same as --format json (errors are JSON too)\n"
	"      --backend B      auto (default), bpf or perf\n"
	"      --off-cpu        also the time threads spend switched out, under their\n"
	"                       stacks when they left and how (preempted, sleeping,\n"
	"                       uninterruptible): pprof sample types off_cpu and\n"
	"                       off_cpu_count, label thread_state; threads already\n"
	"                       blocked at the start count from then (bpf), label\n"
	"                       off_cpu_began=before_capture\n"
	"      --off-cpu-min USEC  waits shorter than USEC microseconds are counted\n"
	"                       per thread without stacks (default 0: every wait)\n"
	"      --off-cpu-stacks N  stacks a CPU takes a second at switch-outs (default\n"
	"                       2000); past that, one switch-out in 2^k is taken and\n"
	"                       weighed 2^k: the totals estimated at a fraction of the\n"
	"                       cost; 0: every switch-out\n"
	"      --view VIEW      cpu (default) or off-cpu: what the text, folded, SVG\n"
	"                       and JSON counts show, and pprof's default sample type\n"
	"      --kernel-only    kernel stacks only\n"
	"      --user-only      user stacks only\n"
	CLI_UNWIND_USAGE
	CLI_JIT_USAGE
	"      --top N          functions in the text summary (default 20)\n"
	"  -v, --verbose        show libbpf's messages\n"
	"  -h, --help           this help\n"
	"  -- CMD ARGS...       start CMD, profile it and its children until it exits\n"
	"\n"
	"Without -o, the text summary goes to stdout. A status line is shown on\n"
	"stderr while it runs on a terminal. A CMD still running when the capture\n"
	"ends is stopped, as perf record does (SIGTERM; SIGKILL 10 s later), and\n"
	"stderr and the profile say so.\n"
	"Exit codes: 0 the profile was written, 1 it could not be, 2 bad usage,\n"
	"141 stdout was closed early (| head; the -o files are still whole).\n";

int cmd_cpu(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_BACKEND, OPT_KONLY, OPT_UONLY, OPT_ROTATE, OPT_OFF_CPU,
	       OPT_OFF_CPU_MIN, OPT_OFF_CPU_STACKS, OPT_VIEW };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "rotate", required_argument, NULL, OPT_ROTATE },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
		{ "off-cpu-stacks", required_argument, NULL, OPT_OFF_CPU_STACKS },
		{ "view", required_argument, NULL, OPT_VIEW },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "kernel-only", no_argument, NULL, OPT_KONLY },
		{ "user-only", no_argument, NULL, OPT_UONLY },
		CLI_UNWIND_OPTIONS,
		CLI_JIT_OPTIONS,
		CLI_OUTPUT_OPTIONS,
		{},
	};
	struct tk_cpu_opts copts = { .sz = TK_OPTS_SZ(tk_cpu_opts), .freq_hz = 99 };
	struct tk_session_opts sopts = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log };
	struct cli_run run = { .cmd = "cpu" };
	struct outputs outs = {};
	double interval = 0, rotate = 0;
	bool min_given = false, view_given = false;
	long duration = 0, top = 20, v;
	struct tk_session *s;
	char why[512];
	struct rlimit rl;
	int c, err;

	env.json = has_option(argc, argv, "--json");
	opterr = 0;
	/* "+": stop at the first non-option, so CMD's own options stay CMD's */
	while ((c = getopt_long(argc, argv, "+:p:F:d:i:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (copts.nr_pids >= TK_CPU_MAX_PIDS)
				return usage_error("cpu", "at most %d -p", TK_CPU_MAX_PIDS);
			if (parse_pid(optarg, &copts.pids[copts.nr_pids]))
				return usage_error("cpu", "invalid PID '%s'", optarg);
			copts.nr_pids++;
			break;
		case OPT_CGROUP:
			copts.cgroup = optarg;
			break;
		case 'F':
			if (parse_long(optarg, 1, 10000, &v))
				return usage_error("cpu", "invalid frequency '%s' (1 to 10000 Hz)",
						   optarg);
			copts.freq_hz = v;
			break;
		case 'd':
			if (parse_long(optarg, 1, 86400, &duration))
				return usage_error("cpu", "invalid duration '%s' (1 to 86400 s)",
						   optarg);
			break;
		case 'i':
			if (parse_seconds(optarg, 0.1, 86400, &interval))
				return usage_error("cpu", "invalid interval '%s' (0.1 to 86400 s)",
						   optarg);
			break;
		case OPT_ROTATE:
			if (parse_seconds(optarg, 1, 86400, &rotate))
				return usage_error("cpu", "invalid rotation period '%s' (1 to 86400 s)",
						   optarg);
			break;
		case OPT_OFF_CPU:
			copts.off_cpu = true;
			break;
		case OPT_OFF_CPU_MIN:
			if (parse_long(optarg, 0, 60000000, &v))
				return usage_error("cpu", "invalid --off-cpu-min '%s' (0 to 60000000 "
						   "microseconds)", optarg);
			copts.off_cpu_min_ns = (uint64_t)v * 1000;
			min_given = true;
			break;
		case OPT_OFF_CPU_STACKS:
			if (parse_long(optarg, 0, 10000000, &v))
				return usage_error("cpu", "invalid --off-cpu-stacks '%s' (0 to "
						   "10000000 a second)", optarg);
			copts.off_cpu_stacks = v ? (uint32_t)v : TK_CPU_OFF_CPU_ALL;
			min_given = true;
			break;
		case OPT_VIEW:
			if (!strcmp(optarg, "cpu"))
				copts.view_off_cpu = false;
			else if (!strcmp(optarg, "off-cpu"))
				copts.view_off_cpu = true;
			else
				return usage_error("cpu", "invalid view '%s' (cpu, off-cpu)", optarg);
			view_given = true;
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "auto"))
				copts.backend = TK_BACKEND_NONE;
			else if (!strcmp(optarg, "bpf"))
				copts.backend = TK_BACKEND_BPF;
			else if (!strcmp(optarg, "perf"))
				copts.backend = TK_BACKEND_PERF;
			else
				return usage_error("cpu", "invalid backend '%s' (auto, bpf, perf)",
						   optarg);
			break;
		case OPT_KONLY:
			copts.kernel_only = true;
			break;
		case OPT_UONLY:
			copts.user_only = true;
			break;
		default:
			if ((err = common_option("cpu", c, argv, usage_cpu, &outs, &top)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (copts.kernel_only && copts.user_only)
		return usage_error("cpu", "--kernel-only and --user-only exclude each other");
	copts.unwind = env.unwind;
	copts.unwind_mem = env.unwind_mem;
	copts.no_jit_ask = env.no_jit_ask;
	if ((min_given || view_given) && !copts.off_cpu)
		return usage_error("cpu", "--off-cpu-min, --off-cpu-stacks and --view go with "
				   "--off-cpu");
	if (rotate && interval)
		return usage_error("cpu", "--rotate and -i exclude each other");
	if (rotate && !outs.n)
		return usage_error("cpu", "--rotate needs -o FILE: each period goes to its own files");
	if ((err = outputs_resolve(&outs, "cpu")))
		return err;
	if (rotate && (err = outputs_rotating(&outs, "cpu")))
		return err;
	copts.periods_only = rotate > 0;
	if (optind < argc && copts.nr_pids)
		return usage_error("cpu", "-p and a command exclude each other");
	if (optind < argc)
		sopts.argv = argv + optind;

	/* the perf backend opens an event per thread per CPU: allow what the hard limit allows */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* an output that cannot be written is said now, not after the capture */
	if ((err = outputs_open(&outs, "cpu")))
		return err;
	s = tk_session__open_cpu(&copts, &sopts, why, sizeof(why));
	if (!s) {
		err = errno;
		outputs_abort(&outs);
		return fail(EXIT_FAILURE, "cpu: %s", why[0] ? why : strerror(err));
	}
	run.duration = duration;
	run.interval = rotate ? rotate : interval;
	run.rotate = rotate > 0;
	run.outs = &outs;
	run.top = top;
	run.argv = sopts.argv;
	return cli_session(s, &run);
}
