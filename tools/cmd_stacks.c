// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit stacks: what every thread is doing right now, without stopping anything. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tracekit/tracekit.h"

static const char usage_stacks[] =
	"Usage: tracekit stacks [OPTIONS]\n"
	"\n"
	"Every thread's current stack, kernel and user, with its state, the syscall\n"
	"and what it waits for (an fd's target, a mutex and the thread holding it),\n"
	"the kernel's wait channel and how long it has been off the CPU — without\n"
	"stopping anything: no signal, no ptrace, no pause. Identical stacks are\n"
	"grouped (\"37 threads: ...\"), the largest group first.\n"
	"\n"
	"  -p, --pid PID          this process's threads (repeat -p, up to 64)\n"
	"      --cgroup DIR       the processes of this cgroup v2 directory and below\n"
	"                         (without -p or --cgroup: every process)\n"
	"      --state LIST       only threads in these states: R, S, D, T, I, Z or\n"
	"                         their names, comma-separated (--state D: the tasks\n"
	"                         stuck in the kernel)\n"
	"      --repeat N         take N snapshots (1 to 1000) and list first the\n"
	"                         threads that did not move between them (same stack,\n"
	"                         did not run)\n"
	"      --interval SEC     between snapshots (default 1, 0.01 to 3600); Ctrl-C\n"
	"                         ends them, and those taken are written\n"
	"  -o, --output FILE      write FILE, whole or not at all; the format follows\n"
	"                         the name: .txt (text), .json, .pb.gz (pprof: one\n"
	"                         sample per thread); repeat -o for several files\n"
	"      --format FMT       text (default), json or pprof\n"
	"      --json             the same as --format json (errors are JSON too)\n"
	"      --backend B        auto (default: bpf where its task iterator loads,\n"
	"                         else proc), bpf, or proc (/proc/PID/task/TID files\n"
	"                         and /proc/PID/mem)\n"
	"      --no-kernel        leave kernel stacks out\n"
	"      --no-user          leave user stacks out\n"
	"  -v, --verbose          the backend and why, and libbpf's messages\n"
	"  -h, --help             this help\n"
	"\n"
	"A thread on a CPU at that moment has no saved registers: it gets one perf\n"
	"sample of its own (after 1 ms of its CPU time, 50 ms at most), else its user\n"
	"stack is left out and said (running_no_stack). A CPython 3.9-3.14 thread's\n"
	"Python functions (name, file, line) are in its user stack before the\n"
	"interpreter frames that run them, read from /proc/PID/mem right after its\n"
	"native stack (a thread on a CPU: not read, counted python_running).\n"
	"Without -o, text on stdout.\n"
	"Exit codes: 0 written, 1 it could not be, 2 bad usage, 141 stdout was\n"
	"closed early (| head; the -o files are still whole).\n";

static volatile int stop_asked;

static void on_stop(int sig)
{
	stop_asked = 1;
}

static int resolve(struct outputs *o)
{
	return outputs_resolve_in(o, "stacks",
				  TK_FORMAT_BIT(TK_FORMAT_TEXT) | TK_FORMAT_BIT(TK_FORMAT_JSON) |
					  TK_FORMAT_BIT(TK_FORMAT_PPROF));
}

static int write_one(const struct tk_stacks_result *s, enum tk_format fmt, FILE *f)
{
	switch (fmt) {
	case TK_FORMAT_JSON:
		return tk_stacks_result__write_json(s, f);
	case TK_FORMAT_PPROF:
		return tk_stacks_result__write_pprof(s, f);
	default:
		return tk_stacks_result__write_text(s, f);
	}
}

static int write_all(struct outputs *o, const struct tk_stacks_result *s)
{
	int ret = 0, err;

	for (int i = 0; i < o->n; i++) {
		if (o->held[i].f) {
			err = write_one(s, o->fmt[i], o->held[i].f);
			if (err)
				tk_outfile__abort(&o->held[i]);
			else
				err = tk_outfile__commit(&o->held[i]);
		} else {
			err = write_one(s, o->fmt[i], stdout);
			if (!err && fflush(stdout))
				err = -errno;
			if (err) {
				fprintf(stderr, "tracekit: stacks: stdout was closed before the output "
					"was written to it\n");
				if (!ret)
					ret = EXIT_STDOUT_CLOSED;
				continue;
			}
		}
		if (err) {
			fail(EXIT_FAILURE, "stacks: writing '%s' failed: %s", o->path[i],
			     strerror(-err));
			ret = EXIT_FAILURE;
		}
	}
	return ret;
}

int cmd_stacks(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_STATE, OPT_REPEAT, OPT_INTERVAL, OPT_BACKEND, OPT_NO_KERNEL,
	       OPT_NO_USER };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "no-user", no_argument, NULL, OPT_NO_USER },
		CLI_OUTPUT_OPTIONS,
		{},
	};
	struct tk_stacks_opts so = { .sz = TK_OPTS_SZ(tk_stacks_opts) };
	struct outputs outs = {};
	struct tk_stacks_result *s;
	double interval = 1;
	int pids[64], nr_pids = 0, c, err;
	long top = 20, v;
	char why[512];

	env.json = has_option(argc, argv, "--json");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (nr_pids >= 64)
				return usage_error("stacks", "at most 64 -p");
			if (parse_pid(optarg, &pids[nr_pids]))
				return usage_error("stacks", "invalid PID '%s'", optarg);
			nr_pids++;
			break;
		case OPT_CGROUP:
			so.cgroup = optarg;
			break;
		case OPT_STATE:
			if (tk_stacks__parse_states(optarg, &so.states))
				return usage_error("stacks", "invalid --state '%s' (R, S, D, T, I, Z, "
						   "comma-separated)", optarg);
			break;
		case OPT_REPEAT:
			if (parse_long(optarg, 1, 1000, &v))
				return usage_error("stacks", "invalid --repeat '%s' (1 to 1000)",
						   optarg);
			so.repeat = v;
			break;
		case OPT_INTERVAL:
			if (parse_seconds(optarg, 0.01, 3600, &interval))
				return usage_error("stacks", "invalid --interval '%s' (0.01 to 3600 s)",
						   optarg);
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "auto"))
				so.backend = TK_BACKEND_NONE;
			else if (!strcmp(optarg, "bpf"))
				so.backend = TK_BACKEND_BPF;
			else if (!strcmp(optarg, "proc"))
				so.backend = TK_BACKEND_PROC;
			else
				return usage_error("stacks", "invalid backend '%s' (auto, bpf, proc)",
						   optarg);
			break;
		case OPT_NO_KERNEL:
			so.no_kernel = true;
			break;
		case OPT_NO_USER:
			so.no_user = true;
			break;
		default:
			if ((err = common_option("stacks", c, argv, usage_stacks, &outs, &top)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (optind < argc)
		return usage_error("stacks", "unexpected argument '%s'", argv[optind]);
	if (nr_pids && so.cgroup)
		return usage_error("stacks", "-p and --cgroup are exclusive");
	so.interval_ms = (uint64_t)(interval * 1000 + 0.5);
	if (env.verbose)
		so.log = cli_log;
	if ((err = resolve(&outs)))
		return err;
	signal(SIGPIPE, SIG_IGN);
	if ((err = outputs_open(&outs, "stacks")))
		return err;
	/* Ctrl-C, SIGTERM, SIGHUP between snapshots: the ones taken are written whole */
	{
		struct sigaction sa = { .sa_handler = on_stop };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	so.stop = &stop_asked;
	err = tk_stacks__take(&so, pids, nr_pids, &s, why, sizeof(why));
	if (err) {
		outputs_abort(&outs);
		return fail(EXIT_FAILURE, "stacks: %s", why[0] ? why : strerror(-err));
	}
	if (env.verbose)
		fprintf(stderr, "tracekit: stacks: backend %s: %s\n", tk_backend__name(s->backend),
			s->backend_reason);
	err = write_all(&outs, s);
	tk_stacks_result__free(s);
	return err;
}
