// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit alloc: who allocates, who does not free, and what grows. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc_rate.h"
#include "cli.h"
#include "tracekit/tracekit.h"

static const char usage_alloc[] =
	"Usage: tracekit alloc [OPTIONS] (-p PID | -- CMD ARGS...)\n"
	"\n"
	"Who allocates memory, who does not free it, and what makes memory grow:\n"
	"allocation stacks with the bytes and objects allocated and still in use,\n"
	"written as pprof (alloc_objects, alloc_space, inuse_objects, inuse_space:\n"
	"'go tool pprof -sample_index=inuse_space' works), folded stacks, an SVG\n"
	"flame graph, JSON, or a top-N text summary of what is in use.\n"
	"\n"
	"  -p, --pid PID          a running process\n"
	"  -d, --duration SEC     stop after SEC seconds; otherwise at Ctrl-C or when\n"
	"                         the process exits\n"
	"  -i, --interval SEC     print the top outstanding stacks every SEC seconds\n"
	"      --mode MODE        sampled (default): allocations sampled by bytes,\n"
	"                         about one per --sample-bytes, weighted so totals\n"
	"                         estimate the truth; full: every allocation and free\n"
	"                         (a uprobe trap each: can slow the target 100x);\n"
	"                         growth: no allocator hooks, page faults, brk and mmap\n"
	"                         (what makes resident memory grow; close to free);\n"
	"                         faults by the tracepoint page_fault_user, or where\n"
	"                         the kernel has none (arm64) the page-faults perf event\n"
	"      --sample-bytes N   mean bytes between samples (default 512K; K, M, G)\n"
	"      --min-age SEC      in use: only objects at least SEC seconds old (the\n"
	"                         leak view); fractions allowed\n"
	"  -o, --output FILE      write FILE, whole or not at all; the format follows\n"
	"                         the name: .pb.gz (pprof), .folded, .svg, .json, .txt;\n"
	"                         repeat -o for several files\n"
	"      --format FMT       pprof, folded, svg, json or text\n"
	"      --json             the same as --format json (errors are JSON too)\n"
	"      --backend B        auto (default), bpf, or jemalloc (jemalloc's own\n"
	"                         sampled heap profiler, the fallback without eBPF)\n"
	"      --no-preload       -- CMD: hook the allocator with uprobes instead of\n"
	"                         the in-process sampler (libtkalloc.so)\n"
	"      --unwind MODE      user stacks: auto (default: CFI from .eh_frame where\n"
	"                         the kernel allows, else frame pointers), cfi, or fp\n"
	"      --unwind-mem MIB   memory for unwind tables (default 16, 1 to 4096)\n"
	"      --no-jit-ask       do not ask JVMs for their perf maps (by default a\n"
	"                         JVM is asked, as 'jcmd PID Compiler.perfmap' asks,\n"
	"                         as its own user, and stderr says so; never one that\n"
	"                         does not catch SIGQUIT or has attach disabled)\n"
	"      --top N            stacks in the text summary (default 20)\n"
	"  -v, --verbose          what is hooked, and libbpf's messages\n"
	"  -h, --help             this help\n"
	"  -- CMD ARGS...         start CMD and profile it until it exits\n"
	"\n"
	"With -- CMD in sampled mode, CMD runs with an in-process sampler preloaded\n"
	"(LD_PRELOAD) that traps into BPF once per sample, not once per call. For\n"
	"-p PID, tracekit first counts the allocator calls for a moment and prints\n"
	"the slowdown the chosen mode is expected to cause.\n"
	"A CMD still running when the capture ends is stopped, as perf record does\n"
	"(SIGTERM; SIGKILL 10 s later), and stderr and the profile say so; if\n"
	"tracekit is killed instead, the sampler turns itself off in CMD.\n"
	"Without -o, the text summary goes to stdout.\n"
	"Exit codes: 0 the profile was written, 1 it could not be, 2 bad usage,\n"
	"141 stdout was closed early (| head; the -o files are still whole).\n";

/* "512K", "1M", "4096" → bytes in [1, 1 TiB]; -EINVAL */
static int parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ULL << 10; break;
		case 'm': case 'M': mul = 1ULL << 20; break;
		case 'g': case 'G': mul = 1ULL << 30; break;
		default: return -EINVAL;
		}
		if (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
			return -EINVAL;
	}
	if (!v || v > (1ULL << 40) / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

/*
 * What the probes cost the running process, said from their first half second
 * of real counting: they are attached first (nothing is counted apart before),
 * so the allocations of that half second are in the profile too.
 */
struct expectation {
	int pid;
	enum tk_alloc_mode mode;
	bool said;
};

static void say_expectation(struct tk_session *s, double elapsed, void *arg)
{
	struct expectation *e = arg;
	uint64_t traps = tk_session__traps(s);
	double ns, per_s, slow;
	int err;

	if (e->said || elapsed < 0.2)
		return;
	e->said = true;
	if (strcmp(tk_session__backend(s), "bpf"))
		return;	/* it fell back to jemalloc's profiler: no uprobes */
	per_s = traps / elapsed;
	err = tk_alloc__uprobe_cost(&ns);
	if (err) {
		fprintf(stderr, "tracekit: alloc: process %d: its allocator calls trapped %.0f times "
			"a second over the first %.1f s; the cost of a uprobe here could not be "
			"measured: %s\n", e->pid, per_s, elapsed, strerror(-err));
		return;
	}
	slow = per_s * ns * 1e-9;
	fprintf(stderr, "tracekit: alloc: process %d: its allocator calls trapped %.0f times a "
		"second over the first %.1f s attached, and a uprobe hit costs %.2f us here "
		"(measured): --mode %s slows it by about %.1f%%%s\n", e->pid, per_s, elapsed,
		ns / 1000, e->mode == TK_ALLOC_MODE_FULL ? "full" : "sampled", 100 * slow,
		slow > 0.5 ? "; --mode growth costs ~nothing" : "");
}

int cmd_alloc(int argc, char **argv)
{
	enum { OPT_MODE = 256, OPT_SAMPLE, OPT_MIN_AGE, OPT_BACKEND, OPT_NO_PRELOAD };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "sample-bytes", required_argument, NULL, OPT_SAMPLE },
		{ "min-age", required_argument, NULL, OPT_MIN_AGE },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "no-preload", no_argument, NULL, OPT_NO_PRELOAD },
		CLI_UNWIND_OPTIONS,
		CLI_JIT_OPTIONS,
		CLI_OUTPUT_OPTIONS,
		{},
	};
	struct tk_alloc_opts aopts = { .sz = TK_OPTS_SZ(tk_alloc_opts) };
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	struct tk_session_opts sopts = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log };
	struct cli_run run = { .cmd = "alloc" };
	struct outputs outs = {};
	double duration = 0, interval = 0, min_age = 0;
	struct tk_caps *caps = NULL;
	struct expectation expect;
	struct tk_session *s;
	long top = 20;
	char why[512];
	int c, err;

	env.json = has_option(argc, argv, "--json");
	opterr = 0;
	/* "+": stop at the first non-option, so CMD's own options stay CMD's */
	while ((c = getopt_long(argc, argv, "+:p:d:i:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (aopts.pid)
				return usage_error("alloc", "one -p only");
			if (parse_pid(optarg, &aopts.pid))
				return usage_error("alloc", "invalid PID '%s'", optarg);
			break;
		case 'd':
			if (parse_seconds(optarg, 0.1, 86400, &duration))
				return usage_error("alloc", "invalid duration '%s' (0.1 to 86400 s)",
						   optarg);
			break;
		case 'i':
			if (parse_seconds(optarg, 0.1, 86400, &interval))
				return usage_error("alloc", "invalid interval '%s' (0.1 to 86400 s)",
						   optarg);
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "sampled"))
				aopts.mode = TK_ALLOC_MODE_SAMPLED;
			else if (!strcmp(optarg, "full"))
				aopts.mode = TK_ALLOC_MODE_FULL;
			else if (!strcmp(optarg, "growth"))
				aopts.mode = TK_ALLOC_MODE_GROWTH;
			else
				return usage_error("alloc", "invalid mode '%s' (sampled, full, growth)",
						   optarg);
			break;
		case OPT_SAMPLE:
			if (parse_bytes(optarg, &aopts.sample_bytes))
				return usage_error("alloc", "invalid --sample-bytes '%s' (1 to 1T; "
						   "K, M, G suffixes)", optarg);
			break;
		case OPT_MIN_AGE:
			if (parse_seconds(optarg, 0, 86400 * 365, &min_age))
				return usage_error("alloc", "invalid --min-age '%s' (seconds)", optarg);
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "auto"))
				aopts.backend = TK_BACKEND_NONE;
			else if (!strcmp(optarg, "bpf"))
				aopts.backend = TK_BACKEND_BPF;
			else if (!strcmp(optarg, "jemalloc"))
				aopts.backend = TK_BACKEND_JEMALLOC;
			else
				return usage_error("alloc", "invalid backend '%s' (auto, bpf, jemalloc)",
						   optarg);
			break;
		case OPT_NO_PRELOAD:
			aopts.no_preload = true;
			break;
		default:
			if ((err = common_option("alloc", c, argv, usage_alloc, &outs, &top)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if ((err = outputs_resolve(&outs, "alloc")))
		return err;
	aopts.unwind = env.unwind;
	aopts.unwind_mem = env.unwind_mem;
	aopts.no_jit_ask = env.no_jit_ask;
	if (optind < argc && aopts.pid)
		return usage_error("alloc", "-p and a command exclude each other");
	if (optind >= argc && !aopts.pid)
		return usage_error("alloc", "give -p PID or -- CMD ARGS...");
	if (aopts.sample_bytes && aopts.mode != TK_ALLOC_MODE_SAMPLED)
		return usage_error("alloc", "--sample-bytes goes with --mode sampled");
	if (aopts.no_preload && optind >= argc)
		return usage_error("alloc", "--no-preload goes with -- CMD");
	if (aopts.pid && kill(aopts.pid, 0) && errno == ESRCH)
		return fail(EXIT_FAILURE, "alloc: no process with PID %d", aopts.pid);
	if (optind < argc)
		sopts.argv = argv + optind;
	aopts.min_age_ns = (uint64_t)(min_age * 1e9);
	if (env.verbose)
		capopts.log = cli_log;
	capopts.pid = aopts.pid;
	capopts.scope = TK_CAPS_ALLOC;	/* what the choice needs; the session loads its object */

	/* an output that cannot be written is said now, not after the capture */
	if ((err = outputs_open(&outs, "alloc")))
		return err;
	err = tk_caps__take(&capopts, &caps);
	if (err) {
		outputs_abort(&outs);
		return fail(EXIT_FAILURE, "alloc: cannot take the capability snapshot: %s",
			    strerror(-err));
	}
	if (aopts.pid && aopts.mode != TK_ALLOC_MODE_GROWTH &&
	    aopts.backend != TK_BACKEND_JEMALLOC &&
	    tk_caps__backend(caps, TK_COLLECT_ALLOC, NULL) == TK_BACKEND_BPF) {
		expect = (struct expectation){ aopts.pid, aopts.mode };
		run.tick = say_expectation;
		run.tick_arg = &expect;
	} else if (aopts.mode == TK_ALLOC_MODE_FULL)
		fprintf(stderr, "tracekit: alloc: --mode full traps every allocation and free "
			"(a uprobe each, microseconds apiece): the program will run much slower\n");

	sopts.caps = caps;
	s = tk_session__open_alloc(&aopts, &sopts, why, sizeof(why));
	if (!s) {
		err = -errno;
		tk_caps__free(caps);
		outputs_abort(&outs);
		return fail(EXIT_FAILURE, "alloc: %s%s", why[0] ? why : strerror(-err),
			    err == -EPERM || err == -EACCES ? " (see 'tracekit caps')" : "");
	}
	if (min_age && !strcmp(tk_session__backend(s), "jemalloc"))
		fprintf(stderr, "tracekit: alloc: --min-age is ignored: jemalloc's dumps do not "
			"say when objects were allocated\n");
	run.duration = duration;
	run.interval = interval;
	run.outs = &outs;
	run.top = top;
	run.argv = sopts.argv;
	err = cli_session(s, &run);
	tk_caps__free(caps);
	return err;
}
