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
#include "core/fsutil.h"
#include "cpu/cpu.h"
#include "core/outfile.h"
#include "core/spawn_held.h"
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
	"  -o, --output FILE    write FILE, whole or not at all; the format follows the\n"
	"                       name: .pb.gz (pprof), .folded, .svg, .json, .txt;\n"
	"                       repeat -o for several files from the same capture\n"
	"      --format FMT     pprof, folded, svg, json or text (overrides the name\n"
	"                       of a single -o, or what goes to stdout)\n"
	"      --json           the same as --format json (errors are JSON too)\n"
	"      --backend B      auto (default), bpf or perf\n"
	"      --kernel-only    kernel stacks only\n"
	"      --user-only      user stacks only\n"
	CLI_UNWIND_USAGE
	"      --top N          functions in the text summary (default 20)\n"
	"  -v, --verbose        show libbpf's messages\n"
	"  -h, --help           this help\n"
	"  -- CMD ARGS...       start CMD, profile it and its children until it exits\n"
	"\n"
	"Without -o, the text summary goes to stdout. A status line is shown on\n"
	"stderr while it runs on a terminal.\n"
	"Exit codes: 0 the profile was written, 1 it could not be, 2 bad usage.\n";

static bool any_alive(const struct tk_cpu_opts *o)
{
	int i;

	for (i = 0; i < o->nr_pids; i++)
		if (process_alive(o->pids[i]))
			return true;
	return false;
}

static void status_line(struct tk_cpu *c, double elapsed, bool final)
{
	struct tk_cpu_stats st;

	tk_cpu__stats(c, &st);
	fprintf(stderr, "\r\033[K%.1f s  %llu samples  %llu processes  %llu lost%s", elapsed,
		(unsigned long long)st.samples, (unsigned long long)st.processes,
		(unsigned long long)st.lost, final ? "\n" : "");
}

int cmd_cpu(int argc, char **argv)
{
	enum { OPT_CGROUP = 256, OPT_BACKEND, OPT_KONLY, OPT_UONLY };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "kernel-only", no_argument, NULL, OPT_KONLY },
		{ "user-only", no_argument, NULL, OPT_UONLY },
		CLI_UNWIND_OPTIONS,
		CLI_OUTPUT_OPTIONS,
		{},
	};
	struct tk_cpu_opts copts = { .sz = TK_OPTS_SZ(tk_cpu_opts), .freq_hz = 99 };
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts), .scope = TK_CAPS_CPU };
	struct outputs outs = {};
	int i;
	long duration = 0, top = 20, v;
	struct tk_profile *prof = NULL;
	struct tk_caps *caps = NULL;
	struct tk_cpu *cpu = NULL;
	int c, err, ret = EXIT_FAILURE, release_fd = -1, exec_err_fd = -1, child_status = 0;
	bool tty = isatty(2), child_done = false;
	pid_t child = 0;
	char why[512];
	double t0, last_status = 0;
	struct rlimit rl;

	env.json = has_option(argc, argv, "--json");
	opterr = 0;
	/* "+": stop at the first non-option, so CMD's own options stay CMD's */
	while ((c = getopt_long(argc, argv, "+:p:F:d:o:vh", opts, NULL)) != -1) {
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
	copts.unwind_rows = env.unwind_rows;
	if ((err = outputs_resolve(&outs, "cpu")))
		return err;
	if (optind < argc && copts.nr_pids)
		return usage_error("cpu", "-p and a command exclude each other");
	for (i = 0; i < copts.nr_pids; i++)
		if (kill(copts.pids[i], 0) && errno == ESRCH)
			return fail(EXIT_FAILURE, "cpu: no process with PID %d", copts.pids[i]);
	if (copts.cgroup) {
		struct statfs sfs;

		if (statfs(copts.cgroup, &sfs))
			return fail(EXIT_FAILURE, "cpu: --cgroup '%s': %s", copts.cgroup,
				    strerror(errno));
		if (sfs.f_type != CGROUP2_SUPER_MAGIC)
			return fail(EXIT_FAILURE, "cpu: --cgroup '%s' is not a cgroup v2 directory "
				    "(see /proc/self/mountinfo for cgroup2 mounts)", copts.cgroup);
	}
	if (env.verbose)
		capopts.log = cli_log;

	/* the perf backend opens an event per thread per CPU: allow what the hard limit allows */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	caps = calloc(1, sizeof(*caps));
	if (!caps)
		return fail(EXIT_FAILURE, "out of memory");
	err = tk_caps__snapshot(&capopts, caps);
	if (err) {
		ret = fail(EXIT_FAILURE, "cpu: cannot take the capability snapshot: %s",
			   strerror(-err));
		goto out;
	}
	if (optind < argc) {
		child = tk_spawn_held(argv + optind, NULL, -1, &release_fd, &exec_err_fd);
		if (child < 0) {
			ret = fail(EXIT_FAILURE, "cpu: cannot start '%s': %s", argv[optind],
				   strerror(-child));
			goto out;
		}
		copts.pids[copts.nr_pids++] = child;
		copts.follow_children = true;
	}

	err = tk_cpu__open(&copts, caps, &cpu, why, sizeof(why));
	if (err) {
		ret = fail(EXIT_FAILURE, "cpu: %s", why[0] ? why : strerror(-err));
		goto out;
	}
	catch_stop_signals();
	err = tk_cpu__start(cpu);
	if (err) {
		ret = fail(EXIT_FAILURE, "cpu: cannot start %s sampling: %s%s", tk_cpu__backend(cpu),
			   strerror(-err), err == -EPERM || err == -EACCES ?
			   " (see 'tracekit caps')" : "");
		goto out;
	}
	if (child > 0) {
		err = tk_spawn_release(&release_fd, &exec_err_fd);
		if (err) {
			ret = fail(EXIT_FAILURE, "cpu: cannot run '%s': %s", argv[optind],
				   strerror(err > 0 ? err : -err));
			if (err > 0) {
				waitpid(child, &child_status, 0);
				child_done = true;
				child_status = 0;
			}
			goto out;
		}
	}

	t0 = mono_s();
	while (!stop_requested) {
		double now;

		err = tk_cpu__poll(cpu, 100);
		if (err) {
			ret = fail(EXIT_FAILURE, "cpu: sampling failed: %s", strerror(-err));
			goto out;
		}
		now = mono_s();
		if (duration && now - t0 >= duration)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
		if (!child && copts.nr_pids && !any_alive(&copts))
			break;
		if (tty && now - last_status >= 0.5) {
			status_line(cpu, now - t0, false);
			last_status = now;
		}
	}
	if (tty)
		status_line(cpu, mono_s() - t0, true);

	err = tk_cpu__finish(cpu, &prof);
	if (err) {
		ret = fail(EXIT_FAILURE, "cpu: cannot build the profile: %s", strerror(-err));
		goto out;
	}
	if (outputs_write(&outs, "cpu", prof, top))
		goto out;
	ret = EXIT_SUCCESS;
out:
	if (child > 0 && !child_done) {
		/* stopped early: the command goes on unprofiled unless it never started */
		if (release_fd >= 0)
			kill(child, SIGKILL);
		if (waitpid(child, &child_status, WNOHANG) == child)
			child_done = true;
	}
	if (release_fd >= 0)
		close(release_fd);
	if (exec_err_fd >= 0)
		close(exec_err_fd);
	if (child_done && WIFEXITED(child_status) && WEXITSTATUS(child_status))
		fprintf(stderr, "tracekit: '%s' exited with status %d\n", argv[optind],
			WEXITSTATUS(child_status));
	tk_profile__free(prof);
	tk_cpu__free(cpu);
	free(caps);
	return ret;
}
