// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit numa: which pages the kernel moves between NUMA nodes, why, and for whom. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tracekit/tracekit.h"

static const char usage_numa[] =
	"Usage: tracekit numa [OPTIONS]\n"
	"\n"
	"Which pages the kernel migrates between NUMA nodes, why, and for whom: pages\n"
	"moved and failed by reason (NUMA balancing, move_pages/cpusets, mbind,\n"
	"compaction, demotion ...), THP migrations and splits, node pairs (from -> to),\n"
	"the processes that caused them, how long misplaced-page migrations took (a\n"
	"log2 histogram), the scheduler's NUMA placement moves, and the /proc/vmstat\n"
	"and per-node numastat changes. What the kernel does not let tracekit see is\n"
	"listed under \"not seen\", never shown as zero.\n"
	"\n"
	"  -p, --pid PID          only migrations caused by this process (repeat -p,\n"
	"                         up to 64); the capture stops when all have exited\n"
	"      --cgroup DIR       only tasks in this cgroup v2 directory and below\n"
	"  -d, --duration SEC     stop after SEC seconds; otherwise at Ctrl-C\n"
	"  -i, --interval SEC     print the text report of each SEC seconds to stdout\n"
	"      --stacks           also record the user stacks of the tasks that migrate\n"
	"                         pages (bpf backend), for --format pprof\n"
	"      --unwind MODE      --stacks: auto (default: CFI from .eh_frame where the\n"
	"                         kernel allows, else frame pointers), cfi, or fp\n"
	"      --unwind-mem MIB   memory for unwind tables (default 16, 1 to 4096)\n"
	"  -o, --output FILE      write FILE, whole or not at all; the format follows\n"
	"                         the name: .txt (text), .json, .pb.gz (the --stacks\n"
	"                         profile; .folded and .svg too); repeat -o for\n"
	"                         several files; a symlink is refused\n"
	"      --format FMT       text (default), json, or with --stacks pprof, folded\n"
	"                         or svg\n"
	"      --json             the same as --format json (errors are JSON too)\n"
	"      --backend B        auto (default: what 'tracekit caps' chose), bpf\n"
	"                         (tracepoints and fentry), or vmstat (/proc/vmstat and\n"
	"                         numastat counters: whole machine, no processes,\n"
	"                         node pairs nor latencies)\n"
	"      --top N            processes and node pairs in the text (default 20)\n"
	"  -v, --verbose          the backend and why, and libbpf's messages\n"
	"  -h, --help             this help\n"
	"\n"
	"With --backend auto, when eBPF cannot be loaded or attached, tracekit says why\n"
	"and counts with vmstat instead. Without -o, the report goes to stdout.\n"
	"Exit codes: 0 the report was written, 1 it could not be, 2 bad usage,\n"
	"141 stdout was closed early (| head; the -o files are still whole).\n";

static bool is_stack_format(enum tk_format f)
{
	return f == TK_FORMAT_PPROF || f == TK_FORMAT_FOLDED || f == TK_FORMAT_SVG;
}

/* Formats from --format or the names; stdout text when no -o. 0 or a usage error's code. */
static int resolve_outputs(struct outputs *o, bool stacks)
{
	int i, err = outputs_resolve(o, "numa");

	for (i = 0; !err && i < o->n; i++)
		if (is_stack_format(o->fmt[i]) && !stacks)
			return usage_error("numa", "%s is the --stacks profile: add --stacks",
					   o->format ? o->format : o->path[i]);
	return err;
}

int cmd_numa(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_STACKS, OPT_BACKEND };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "stacks", no_argument, NULL, OPT_STACKS },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		CLI_UNWIND_OPTIONS,
		CLI_OUTPUT_OPTIONS,
		{},
	};
	struct tk_numa_opts nopts = { .sz = TK_OPTS_SZ(tk_numa_opts) };
	struct tk_session_opts sopts = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log };
	struct cli_run run = { .cmd = "numa" };
	struct outputs outs = {};
	double duration = 0, interval = 0;
	bool need_stacks = false;
	struct tk_session *s;
	char why[512];
	int c, i, err;
	long top = 20;

	env.json = has_option(argc, argv, "--json");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:d:i:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (nopts.nr_pids >= TK_NUMA_MAX_PIDS)
				return usage_error("numa", "at most %d -p", TK_NUMA_MAX_PIDS);
			if (parse_pid(optarg, &nopts.pids[nopts.nr_pids]))
				return usage_error("numa", "invalid PID '%s'", optarg);
			nopts.nr_pids++;
			break;
		case OPT_CGROUP:
			nopts.cgroup = optarg;
			break;
		case 'd':
			if (parse_seconds(optarg, 0.1, 86400, &duration))
				return usage_error("numa", "invalid duration '%s' (0.1 to 86400 s)",
						   optarg);
			break;
		case 'i':
			if (parse_seconds(optarg, 0.1, 86400, &interval))
				return usage_error("numa", "invalid interval '%s' (0.1 to 86400 s)",
						   optarg);
			break;
		case OPT_STACKS:
			nopts.stacks = true;
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "auto"))
				nopts.backend = TK_BACKEND_NONE;
			else if (!strcmp(optarg, "bpf"))
				nopts.backend = TK_BACKEND_BPF;
			else if (!strcmp(optarg, "vmstat"))
				nopts.backend = TK_BACKEND_VMSTAT;
			else
				return usage_error("numa", "invalid backend '%s' (auto, bpf, vmstat)",
						   optarg);
			break;
		default:
			if ((err = common_option("numa", c, argv, usage_numa, &outs, &top)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (optind < argc)
		return usage_error("numa", "unexpected argument '%s'", argv[optind]);
	nopts.unwind = env.unwind;
	nopts.unwind_mem = env.unwind_mem;
	if ((err = resolve_outputs(&outs, nopts.stacks)))
		return err;
	if (nopts.stacks && nopts.backend == TK_BACKEND_VMSTAT)
		return usage_error("numa", "--stacks needs the bpf backend: vmstat has no stacks");
	for (i = 0; i < outs.n; i++)
		need_stacks |= is_stack_format(outs.fmt[i]);
	/* said now, not after the capture */
	if ((err = outputs_open(&outs, "numa")))
		return err;
	s = tk_session__open_numa(&nopts, &sopts, why, sizeof(why));
	if (!s) {
		err = -errno;
		outputs_abort(&outs);
		return fail(EXIT_FAILURE, "numa: %s%s", why[0] ? why : strerror(-err),
			    err == -EPERM || err == -EACCES ? " (see 'tracekit caps')" : "");
	}
	if (env.verbose)
		fprintf(stderr, "tracekit: numa: backend %s%s%s\n", tk_session__backend(s),
			tk_session__why_backend(s)[0] ? ": " : "", tk_session__why_backend(s));
	if (need_stacks && strcmp(tk_session__backend(s), "bpf")) {
		err = fail(EXIT_FAILURE, "numa: --stacks needs the bpf backend; this run uses %s",
			   tk_session__backend(s));
		tk_session__free(s);
		outputs_abort(&outs);
		return err;
	}
	run.duration = duration;
	run.interval = interval;
	run.outs = &outs;
	run.top = top;
	return cli_session(s, &run);
}
