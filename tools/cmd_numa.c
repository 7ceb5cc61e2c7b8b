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
#include "numa/numa_report.h"
#include "core/outfile.h"
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
	"      --format FMT       text (default), json or pprof (needs --stacks)\n"
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
	"Exit codes: 0 the report was written, 1 it could not be, 2 bad usage.\n";

static bool is_stack_format(enum tk_format f)
{
	return f == TK_FORMAT_PPROF || f == TK_FORMAT_FOLDED || f == TK_FORMAT_SVG;
}

/* Formats from --format or the names; stdout text when no -o. 0 or a usage error's code. */
static int resolve_outputs(struct outputs *o, bool stacks)
{
	int i;

	if (o->format && o->n > 1)
		return usage_error("numa", "--format goes with one -o at most");
	if (!o->n)
		o->path[o->n++] = "-";
	for (i = 0; i < o->n; i++) {
		if (o->format) {
			if (!strcmp(o->format, "text"))
				o->fmt[i] = TK_FORMAT_TEXT;
			else if (!strcmp(o->format, "json"))
				o->fmt[i] = TK_FORMAT_JSON;
			else if (!strcmp(o->format, "pprof"))
				o->fmt[i] = TK_FORMAT_PPROF;
			else
				return usage_error("numa", "unknown format '%s' (text, json, pprof)",
						   o->format);
		} else if (!strcmp(o->path[i], "-")) {
			o->fmt[i] = TK_FORMAT_TEXT;
		} else if (tk_format__from_path(o->path[i], &o->fmt[i])) {
			return usage_error("numa", "cannot tell the format of '%s' (use .txt, .json, "
					   ".pb.gz or --format)", o->path[i]);
		}
		if (is_stack_format(o->fmt[i]) && !stacks)
			return usage_error("numa", "%s is the --stacks profile: add --stacks",
					   o->format ? "--format pprof" : o->path[i]);
	}
	return 0;
}

static int write_outputs(const struct outputs *o, const struct tk_numa_report *r,
			 const struct tk_profile *prof, int top)
{
	struct tk_outfile out;
	int i, err;

	for (i = 0; i < o->n; i++) {
		err = tk_outfile__open(&out, o->path[i]);
		if (err)
			return fail(EXIT_FAILURE, "numa: cannot write '%s': %s", o->path[i],
				    err == -ELOOP ? "it is a symlink (refused: never followed "
				    "nor replaced)" : strerror(-err));
		if (o->fmt[i] == TK_FORMAT_TEXT)
			err = tk_numa_report__write_text(r, out.f, top);
		else if (o->fmt[i] == TK_FORMAT_JSON)
			err = tk_numa_report__write_json(r, out.f);
		else
			err = tk_profile__write(prof, o->fmt[i], out.f);
		if (!err)
			err = tk_outfile__commit(&out);
		else
			tk_outfile__abort(&out);
		if (err)
			return fail(EXIT_FAILURE, "numa: writing '%s' failed: %s", o->path[i],
				    strerror(-err));
	}
	return 0;
}

static bool any_alive(const struct tk_numa_opts *o)
{
	int i;

	for (i = 0; i < o->nr_pids; i++)
		if (process_alive(o->pids[i]))
			return true;
	return false;
}

/* Open and start the session; with --backend auto, vmstat when eBPF fails. */
static int open_session(struct tk_numa_opts *nopts, const struct tk_caps *caps,
			struct tk_numa **out, char *fallback, size_t fallback_sz)
{
	char why[512];
	int err;

	fallback[0] = '\0';
	err = tk_numa__open(nopts, caps, out, why, sizeof(why));
	if (!err) {
		err = tk_numa__start(*out, why, sizeof(why));
		if (err) {
			tk_numa__free(*out);
			*out = NULL;
		}
	}
	if (!err)
		return 0;
	if (nopts->backend == TK_BACKEND_NONE &&
	    caps->backends[TK_COLLECT_NUMA].backend == TK_BACKEND_BPF) {
		snprintf(fallback, fallback_sz, "eBPF backend: %s",
			 why[0] ? why : strerror(-err));
		fprintf(stderr, "tracekit: numa: %s; counting with vmstat instead\n", fallback);
		nopts->backend = TK_BACKEND_VMSTAT;
		err = tk_numa__open(nopts, caps, out, why, sizeof(why));
		if (!err) {
			err = tk_numa__start(*out, why, sizeof(why));
			if (err) {
				tk_numa__free(*out);
				*out = NULL;
			}
		}
		if (!err)
			return 0;
	}
	return fail(EXIT_FAILURE, "numa: %s%s", why[0] ? why : strerror(-err),
		    err == -EPERM || err == -EACCES ? " (see 'tracekit caps')" : "");
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
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts), .scope = TK_CAPS_ALL };
	struct tk_numa_report total = {};
	struct outputs outs = {};
	double duration = 0, interval = 0, t0, now, last_interval, last_status = 0;
	struct tk_profile *prof = NULL;
	struct tk_caps *caps = NULL;
	struct tk_numa *n = NULL;
	bool tty = isatty(2), need_stacks = false, have_total = false;
	char fallback[400];
	int c, i, err, ret = EXIT_FAILURE;
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
	nopts.unwind_rows = env.unwind_rows;
	if ((err = resolve_outputs(&outs, nopts.stacks)))
		return err;
	if (nopts.stacks && nopts.backend == TK_BACKEND_VMSTAT)
		return usage_error("numa", "--stacks needs the bpf backend: vmstat has no stacks");
	for (i = 0; i < outs.n; i++) {
		struct stat st;

		need_stacks |= is_stack_format(outs.fmt[i]);
		/* said now, not after the capture (tk_outfile__open refuses it then too) */
		if (strcmp(outs.path[i], "-") && !lstat(outs.path[i], &st) && S_ISLNK(st.st_mode))
			return fail(EXIT_FAILURE, "numa: cannot write '%s': it is a symlink (refused: "
				    "never followed nor replaced)", outs.path[i]);
	}
	for (i = 0; i < nopts.nr_pids; i++)
		if (kill(nopts.pids[i], 0) && errno == ESRCH)
			return fail(EXIT_FAILURE, "numa: no process with PID %d", nopts.pids[i]);
	if (nopts.cgroup) {
		struct statfs sfs;

		if (statfs(nopts.cgroup, &sfs))
			return fail(EXIT_FAILURE, "numa: --cgroup '%s': %s", nopts.cgroup,
				    strerror(errno));
		if (sfs.f_type != CGROUP2_SUPER_MAGIC)
			return fail(EXIT_FAILURE, "numa: --cgroup '%s' is not a cgroup v2 directory "
				    "(see /proc/self/mountinfo for cgroup2 mounts)", nopts.cgroup);
	}
	if (env.verbose)
		capopts.libbpf_log = libbpf_log;

	caps = calloc(1, sizeof(*caps));
	if (!caps)
		return fail(EXIT_FAILURE, "out of memory");
	err = tk_caps__snapshot(&capopts, caps);
	if (err) {
		ret = fail(EXIT_FAILURE, "numa: cannot take the capability snapshot: %s",
			   strerror(-err));
		goto out;
	}
	catch_stop_signals();
	if (open_session(&nopts, caps, &n, fallback, sizeof(fallback))) {
		ret = EXIT_FAILURE;
		goto out;
	}
	if (strcmp(tk_numa__backend(n), "bpf") && !fallback[0] &&
	    nopts.backend == TK_BACKEND_NONE)
		fprintf(stderr, "tracekit: numa: backend %s: %s\n", tk_numa__backend(n),
			caps->backends[TK_COLLECT_NUMA].reason);
	else if (env.verbose)
		fprintf(stderr, "tracekit: numa: backend %s%s%s\n", tk_numa__backend(n),
			nopts.backend == TK_BACKEND_NONE && !fallback[0] ? ": " : "",
			nopts.backend == TK_BACKEND_NONE && !fallback[0] ?
			caps->backends[TK_COLLECT_NUMA].reason : "");
	if (need_stacks && strcmp(tk_numa__backend(n), "bpf")) {
		ret = fail(EXIT_FAILURE, "numa: --stacks needs the bpf backend; this run uses %s",
			   tk_numa__backend(n));
		goto out;
	}

	t0 = last_interval = mono_s();
	while (!stop_requested) {
		err = tk_numa__poll(n, 100);
		if (err) {
			ret = fail(EXIT_FAILURE, "numa: tracing failed: %s", strerror(-err));
			goto out;
		}
		now = mono_s();
		if (duration && now - t0 >= duration)
			break;
		if (nopts.nr_pids && !any_alive(&nopts))
			break;
		if (interval && now - last_interval >= interval) {
			struct tk_numa_report iv;

			last_interval = now;
			if (tty)
				fputs("\r\033[K", stderr);
			err = tk_numa__collect(n, &iv, NULL);
			if (err) {
				fprintf(stderr, "tracekit: numa: no interval report: %s\n",
					strerror(-err));
			} else {
				printf("--- %.1f s\n", now - t0);
				tk_numa_report__write_text(&iv, stdout, top);
				fflush(stdout);
				tk_numa_report__free(&iv);
			}
		}
		if (tty && now - last_status >= 0.5) {
			fprintf(stderr, "\r\033[K%.1f s  backend %s", now - t0, tk_numa__backend(n));
			last_status = now;
		}
	}
	if (tty)
		fputs("\r\033[K", stderr);

	err = tk_numa__collect(n, NULL, &total);
	if (err) {
		ret = fail(EXIT_FAILURE, "numa: cannot read what was recorded: %s", strerror(-err));
		goto out;
	}
	have_total = true;
	if (fallback[0])
		tk_numa_report__missing(&total, "%s", fallback);
	if (need_stacks) {
		err = tk_numa__stacks(n, &prof);
		if (err) {
			ret = fail(EXIT_FAILURE, "numa: cannot build the --stacks profile: %s",
				   strerror(-err));
			goto out;
		}
	}
	if (write_outputs(&outs, &total, prof, top))
		goto out;
	ret = EXIT_SUCCESS;
out:
	if (have_total)
		tk_numa_report__free(&total);
	tk_profile__free(prof);
	tk_numa__free(n);
	free(caps);
	return ret;
}
