// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit record: an incident in one command. Every collector over one
 * window: the capability snapshot, cpu (with off-CPU time), allocations of
 * the processes named (sampled where the measured rate says it is cheap,
 * else growth), numa; then one directory (or .tar.gz) with all of it.
 *
 * Each session runs on a thread of its own; the main thread keeps the window
 * and ends every session together (duration, Ctrl-C, the command's exit).
 * The bundle is written into DIR.tmp.XXXXXX, held open from the start, and
 * renamed into place once whole (record_bundle.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc_budget.h"
#include "cli.h"
#include "core/fsutil.h"
#include "record.h"
#include "tracekit/tracekit.h"

static const char usage_record[] =
	"Usage: tracekit record [OPTIONS] -o DIR [-- CMD ARGS...]\n"
	"\n"
	"Every collector over one window, into one directory: the capability\n"
	"snapshot (caps.json); where the CPU goes, with off-CPU time (cpu.*);\n"
	"who allocates and does not free, for each -p process or CMD (alloc*.*);\n"
	"which pages the kernel moves between NUMA nodes (numa.*); every thread's\n"
	"stack at the start and the end of the window, those that did not move\n"
	"first (stacks*, as tracekit stacks: nothing is stopped); summary.txt,\n"
	"manifest.json (versions, kernel, host, window, backends, every loss\n"
	"counter) and index.html, which opens offline: the summaries, the flame\n"
	"graphs, and what was not available and why. Profiles are pprof (.pb.gz),\n"
	"SVG, JSON and text. Allocations are sampled when a measured forecast of\n"
	"the cost fits the budget, else only what makes memory grow is traced.\n"
	"\n"
	"  -o, --output DIR     the directory to create (it must not exist); written\n"
	"                       whole, or not at all\n"
	"      --tar            write DIR.tar.gz instead: one file to copy off (if it\n"
	"                       cannot be written, the bundle stays as DIR, said)\n"
	"  -d, --duration SEC   the window (default 10; with -- CMD: until it exits)\n"
	"  -p, --pid PID        these processes only (repeatable, at most 8); their\n"
	"                       allocations are profiled too\n"
	"      --cgroup DIR     cpu and numa: only tasks in this cgroup v2 directory\n"
	"  -F, --freq HZ        CPU samples per second per CPU (default 99)\n"
	"      --budget PCT     the slowdown allowed beyond CPU sampling, for the\n"
	"                       allocation profiles (default 2 %%)\n"
	"      --no-off-cpu     no off-CPU time\n"
	"      --no-stacks      no thread stacks at the start and the end of the\n"
	"                       window (stacks-*: every thread of the processes, the\n"
	"                       command or the cgroup; without them, the threads in\n"
	"                       D or T state; those that did not move listed first)\n"
	CLI_JIT_USAGE
	"  -v, --verbose        libbpf's messages\n"
	"  -h, --help           this help\n"
	"  -- CMD ARGS...       start CMD, record it (and its children's CPU) until\n"
	"                       it exits\n"
	"\n"
	"Ctrl-C ends the window early; everything is still written whole. A CMD\n"
	"still running when the window ends is stopped, as perf record does\n"
	"(SIGTERM; SIGKILL 10 s later), and the bundle says so.\n"
	"Exit codes: 0 the bundle was written, 1 it could not be, 2 bad usage.\n";

static atomic_int stop_flag;
static struct rec *volatile sig_rec;

static void on_signal(int sig)
{
	struct rec *r = sig_rec;
	int i;

	atomic_store(&stop_flag, sig);
	if (!r)
		return;
	for (i = 0; i < r->n; i++)
		if (r->c[i].s)
			tk_session__stop(r->c[i].s);
}

void rec_note(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nr_notes >= REC_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(r->notes[r->nr_notes], sizeof(r->notes[0]), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tracekit: record: %s\n", r->notes[r->nr_notes]);
	r->nr_notes++;
}

static struct rec_coll *add_coll(struct rec *r, enum tk_collector c, const char *name)
{
	struct rec_coll *rc = &r->c[r->n++];

	rc->coll = c;
	rc->budget.forecast = -1;
	snprintf(rc->name, sizeof(rc->name), "%s", name);
	return rc;
}

static const char *comm_of(int pid, char *buf, size_t sz)
{
	char rel[32];

	snprintf(rel, sizeof(rel), "%d/comm", pid);
	if (tk_read_file("/proc", rel, buf, sz) < 0)
		buf[0] = 0;
	return tk_rstrip(buf);
}

static void opened(struct rec_coll *rc)
{
	snprintf(rc->backend, sizeof(rc->backend), "%s", tk_session__backend(rc->s));
	snprintf(rc->describe, sizeof(rc->describe), "%s", tk_session__describe(rc->s));
	snprintf(rc->why_backend, sizeof(rc->why_backend), "%s", tk_session__why_backend(rc->s));
	rc->status = REC_OK;
}

/* The CPU session; @cmd: it owns the command (when the allocation profile cannot). */
static void open_cpu(struct rec *r, struct rec_coll *rc, const int *pids, int nr_pids,
		     bool follow, char *const *cmd)
{
	struct tk_cpu_opts o = { .sz = TK_OPTS_SZ(tk_cpu_opts), .freq_hz = r->freq_hz,
				 .cgroup = r->cgroup, .off_cpu = r->off_cpu,
				 .follow_children = follow, .unwind = env.unwind,
				 .unwind_mem = env.unwind_mem, .no_jit_ask = env.no_jit_ask };
	/* its own CPU-only snapshot: the whole one is still being taken (caps_thread) */
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .argv = cmd };
	char why[512] = "";
	int i;

	for (i = 0; i < nr_pids; i++)
		o.pids[o.nr_pids++] = pids[i];
	rc->owns_command = cmd != NULL;
	snprintf(rc->title, sizeof(rc->title), "CPU");
	rc->s = tk_session__open_cpu(&o, &so, why, sizeof(why));
	if (!rc->s && o.off_cpu) {
		rec_note(r, "cpu: no off-CPU time: %s", why[0] ? why : strerror(errno));
		o.off_cpu = false;
		why[0] = 0;
		rc->s = tk_session__open_cpu(&o, &so, why, sizeof(why));
	}
	if (!rc->s) {
		snprintf(rc->why, sizeof(rc->why), "%s", why[0] ? why : strerror(errno));
		return;
	}
	opened(rc);
	snprintf(rc->plan, sizeof(rc->plan), "%s, %d Hz, %s%s%s", rc->backend, r->freq_hz,
		 nr_pids || cmd ? (follow || cmd ? "the command and its children" :
				   "the processes named") : "every process",
		 r->cgroup ? " in the cgroup" : "",
		 o.off_cpu ? ", with off-CPU time" : ", without off-CPU time");
}

/* -- CMD's allocation profile: the in-process sampler, and the session holds the command. */
static void open_alloc_cmd(struct rec *r, struct rec_coll *rc)
{
	struct tk_alloc_opts o = { .sz = TK_OPTS_SZ(tk_alloc_opts),
				   .unwind = env.unwind, .unwind_mem = env.unwind_mem,
				   .no_jit_ask = env.no_jit_ask };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = r->alloc_caps, .argv = r->argv };
	char why[512] = "";

	snprintf(rc->title, sizeof(rc->title), "Allocations of %s", r->argv[0]);
	rc->owns_command = true;
	rc->s = tk_session__open_alloc(&o, &so, why, sizeof(why));
	if (!rc->s) {
		snprintf(rc->why, sizeof(rc->why), "%s", why[0] ? why : strerror(errno));
		rc->owns_command = false;
		return;
	}
	opened(rc);
	rc->pid = tk_session__command_pid(rc->s);
}

/* Once started (the hook is known then): how the command's allocations are sampled. */
static void plan_alloc_cmd(struct rec_coll *rc)
{
	snprintf(rc->plan, sizeof(rc->plan), "sampled, about one per %u KiB allocated, %s",
		 TK_ALLOC_DEFAULT_SAMPLE_BYTES / 1024,
		 strcmp(rc->backend, "bpf") ? "by the allocator's own profiler (no eBPF)" :
		 strstr(rc->describe, "in-process sampler") ? "by an in-process sampler that traps "
		 "once per sample, not per call" : "by uprobes on its allocator (the command "
		 "cannot load the in-process sampler: every call traps)");
}

/*
 * A running process's allocations: sampled when the measured forecast of its
 * cost fits the budget, else growth (page faults, brk, mmap: ~free).
 */
static void open_alloc_pid(struct rec *r, struct rec_coll *rc, int pid, bool first)
{
	struct tk_alloc_opts o = { .sz = TK_OPTS_SZ(tk_alloc_opts), .pid = pid,
				   .unwind = env.unwind, .unwind_mem = env.unwind_mem,
				   .no_jit_ask = env.no_jit_ask };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = first ? r->alloc_caps : NULL };
	char why[512] = "", comm[32];

	rc->pid = pid;
	snprintf(rc->title, sizeof(rc->title), "Allocations of %d (%s)", pid,
		 comm_of(pid, comm, sizeof(comm)));
	if (tk_caps__backend(r->alloc_caps, TK_COLLECT_ALLOC, NULL) != TK_BACKEND_BPF) {
		snprintf(rc->plan, sizeof(rc->plan), "the allocator's own profiler (no eBPF)");
	} else {
		tk_alloc_budget__plan(&rc->budget, r->budget, first ? r->alloc_caps : NULL, &o);
		memcpy(rc->plan, rc->budget.plan, sizeof(rc->budget.plan));
	}
	rc->s = tk_session__open_alloc(&o, &so, why, sizeof(why));
	if (!rc->s) {
		snprintf(rc->why, sizeof(rc->why), "%s", why[0] ? why : strerror(errno));
		return;
	}
	opened(rc);
}

static void open_numa(struct rec *r, struct rec_coll *rc, const int *pids, int nr_pids)
{
	struct tk_numa_opts o = { .sz = TK_OPTS_SZ(tk_numa_opts), .cgroup = r->cgroup };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = r->caps };
	char why[512] = "";
	int i;

	for (i = 0; i < nr_pids; i++)
		o.pids[o.nr_pids++] = pids[i];
	snprintf(rc->title, sizeof(rc->title), "NUMA page migration");
	rc->s = tk_session__open_numa(&o, &so, why, sizeof(why));
	if (!rc->s) {
		snprintf(rc->why, sizeof(rc->why), "%s", why[0] ? why : strerror(errno));
		return;
	}
	opened(rc);
	snprintf(rc->plan, sizeof(rc->plan), "%s, %s", rc->backend,
		 nr_pids ? "the processes named" : r->cgroup ? "the cgroup" : "every process");
}

/* On the worker's thread, about twice a second: is a sampled process still within budget? */
static void alloc_guard(struct tk_session *s, double elapsed, void *arg)
{
	struct rec_coll *rc = arg;

	tk_alloc_budget__check(&rc->budget, s, elapsed);
}

static void *worker(void *arg)
{
	struct rec_coll *rc = arg;
	struct tk_run_opts ro = { .sz = TK_OPTS_SZ(tk_run_opts) };

	if (rc->budget.guarded) {
		ro.on_tick = alloc_guard;
		ro.ctx = rc;
	}
	rc->run_err = tk_session__run(rc->s, &ro);
	rc->end = tk_session__ended(rc->s);
	/* stop collecting now (a profile ended early detaches at once): its result */
	rc->finish_err = tk_session__finish(rc->s, &rc->r);
	atomic_store(&rc->done, true);
	return NULL;
}

/*
 * The whole snapshot, for the bundle's caps.json, the stacks collector and
 * numa: taken on a thread of its own while cpu and alloc load and attach
 * with snapshots scoped to their own choice.
 */
struct caps_job {
	struct tk_caps_opts opts;
	struct tk_caps *caps;
	int err;
	pthread_t th;
	bool running;
};

static void *caps_thread(void *arg)
{
	struct caps_job *j = arg;

	j->err = tk_caps__take(&j->opts, &j->caps);
	return NULL;
}

/* r->caps, once the thread has it; 0 or -errno */
static int caps_join(struct rec *r, struct caps_job *j)
{
	if (j->running) {
		pthread_join(j->th, NULL);
		j->running = false;
		r->caps = j->caps;
		j->caps = NULL;
	}
	return j->err;
}

static void start_one(struct rec_coll *rc)
{
	char why[512] = "";
	int err;

	if (!rc->s)
		return;
	err = tk_session__start(rc->s, why, sizeof(why));
	if (err) {
		rc->status = REC_FAILED;
		snprintf(rc->why, sizeof(rc->why), "could not start: %s",
			 why[0] ? why : strerror(-err));
		return;
	}
	/* what it could attach, once attached */
	snprintf(rc->describe, sizeof(rc->describe), "%s", tk_session__describe(rc->s));
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* Keep the window; returns why it ended. */
static const char *window(struct rec *r)
{
	double t0 = mono_s(), cpu0 = cpu_seconds(), now, last_status = 0;
	bool tty = isatty(2), any;
	const char *why = NULL;
	int i, running;

	clock_gettime(CLOCK_REALTIME, &r->start_rt);
	/* every thread's stack now and at the end (the threads that did not move: a hang's) */
	rec_stacks__start(r);
	while (!why) {
		now = mono_s();
		if (atomic_load(&stop_flag)) {
			why = "interrupted";
			break;
		}
		if (r->duration && now - t0 >= r->duration) {
			why = "duration";
			break;
		}
		running = 0;
		any = false;
		for (i = 0; i < r->n; i++) {
			struct rec_coll *rc = &r->c[i];

			if (!rc->thread)
				continue;
			any = true;
			if (!atomic_load(&rc->done)) {
				running++;
				continue;
			}
			if (rc->owns_command)
				why = "command exited";
			else if (rc->coll == TK_COLLECT_CPU && r->nr_pids)
				why = rc->run_err ? "cpu collection failed" : "processes gone";
		}
		if (!why && (!any || !running))
			why = "every collector ended";
		if (why)
			break;
		if (tty && now - last_status >= 0.5) {
			fprintf(stderr, "\r\033[K%.1f s", now - t0);
			if (r->duration)
				fprintf(stderr, " of %.0f", r->duration);
			fputs("  recording; Ctrl-C ends it", stderr);
			last_status = now;
		}
		usleep(100 * 1000);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	/* before the sessions stop (a command still running is stopped with them) */
	rec_stacks__end(r);
	for (i = 0; i < r->n; i++)
		if (r->c[i].thread)
			tk_session__stop(r->c[i].s);
	for (i = 0; i < r->n; i++)
		if (r->c[i].thread)
			pthread_join(r->c[i].th, NULL);
	r->elapsed = mono_s() - t0;
	r->self_cpu_s = cpu_seconds() - cpu0;
	clock_gettime(CLOCK_REALTIME, &r->end_rt);
	return why;
}

/* Say what was chosen, a line per collector. */
static void print_plan(const struct rec *r)
{
	int i;

	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];

		if (rc->s && rc->status == REC_OK)
			fprintf(stderr, "tracekit: record: %s: %s\n", rc->name, rc->plan);
		else
			fprintf(stderr, "tracekit: record: %s: not recorded: %s\n", rc->name,
				rc->why);
	}
}

int cmd_record(int argc, char **argv)
{
	enum { OPT_TAR = 256, OPT_CGROUP, OPT_BUDGET, OPT_NO_OFF_CPU, OPT_NO_STACKS };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "tar", no_argument, NULL, OPT_TAR },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "freq", required_argument, NULL, 'F' },
		{ "budget", required_argument, NULL, OPT_BUDGET },
		{ "no-off-cpu", no_argument, NULL, OPT_NO_OFF_CPU },
		{ "no-stacks", no_argument, NULL, OPT_NO_STACKS },
		CLI_JIT_OPTIONS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static struct rec rec;
	static struct rec_out rec_out;
	struct rec_out *ro = &rec_out;
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	struct caps_job cj = {};
	struct rec_coll *nc;
	struct rec *r = &rec;
	const char *out = NULL;
	struct sigaction sa = { .sa_handler = on_signal }, old;
	sigset_t block, prev;
	struct outputs unused = {};
	long ntop = 0;
	bool tar = false;
	struct stat st;
	int c, i, err, ret = EXIT_FAILURE, ran = 0, status;
	long v;

	memset(r, 0, sizeof(*r));
	r->freq_hz = 99;
	r->budget = 0.02;
	r->duration = -1;
	r->off_cpu = true;
	r->stk.on = true;
	r->exit_status = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:d:p:F:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case OPT_TAR:
			tar = true;
			break;
		case 'd':
			if (parse_seconds(optarg, 1, 86400, &r->duration))
				return usage_error("record", "invalid duration '%s' (1 to 86400 s)",
						   optarg);
			break;
		case 'p':
			if (r->nr_pids >= REC_MAX_PIDS)
				return usage_error("record", "at most %d -p", REC_MAX_PIDS);
			if (parse_pid(optarg, &r->pids[r->nr_pids]))
				return usage_error("record", "invalid PID '%s'", optarg);
			for (i = 0; i < r->nr_pids; i++)
				if (r->pids[i] == r->pids[r->nr_pids])
					return usage_error("record", "PID %s is given twice", optarg);
			r->nr_pids++;
			break;
		case OPT_CGROUP:
			r->cgroup = optarg;
			break;
		case 'F':
			if (parse_long(optarg, 1, 10000, &v))
				return usage_error("record", "invalid frequency '%s' (1 to 10000 Hz)",
						   optarg);
			r->freq_hz = (int)v;
			break;
		case OPT_BUDGET:
			if (parse_seconds(optarg, 0, 100, &r->budget))
				return usage_error("record", "invalid budget '%s' (0 to 100 %%)",
						   optarg);
			r->budget /= 100;
			break;
		case OPT_NO_OFF_CPU:
			r->off_cpu = false;
			break;
		case OPT_NO_STACKS:
			r->stk.on = false;
			break;
		default:
			/* -v, -h and getopt's complaints, as every command says them */
			if ((err = common_option("record", c, argv, usage_record, &unused, &ntop)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (!out)
		return usage_error("record", "give -o DIR: the directory to write");
	if (optind < argc && r->nr_pids)
		return usage_error("record", "-p and a command exclude each other");
	if (optind < argc)
		r->argv = argv + optind;
	if (r->duration < 0)
		r->duration = r->argv ? 0 : 10;
	for (i = 0; i < r->nr_pids; i++)
		if (kill(r->pids[i], 0) && errno == ESRCH)
			return fail(EXIT_FAILURE, "record: no process with PID %d", r->pids[i]);
	if (r->cgroup && (stat(r->cgroup, &st) || !S_ISDIR(st.st_mode)))
		return fail(EXIT_FAILURE, "record: cgroup '%s' is not a directory", r->cgroup);

	/* DIR, or DIR.tar.gz with --tar: checked, held and made now, before the window */
	if ((err = rec_out__open(ro, r, out, tar))) {
		rec_out__close(ro);
		return err;
	}

	sig_rec = r;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!sigaction(SIGHUP, NULL, &old) && old.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	gethostname(r->host, sizeof(r->host) - 1);

	/*
	 * The whole snapshot (with the first process, for its entries) on a
	 * thread, while cpu and alloc start with their own scoped ones: the
	 * allocation scope is taken here (the budget's plan reads it).
	 */
	if (env.verbose)
		capopts.log = cli_log;
	capopts.pid = r->nr_pids ? r->pids[0] : 0;
	cj.opts = capopts;
	err = pthread_create(&cj.th, NULL, caps_thread, &cj);
	if (err) {
		fail(EXIT_FAILURE, "record: no thread for the capability snapshot: %s",
		     strerror(err));
		goto out;
	}
	cj.running = true;
	capopts.scope = TK_CAPS_ALLOC;
	err = tk_caps__take(&capopts, &r->alloc_caps);
	if (err) {
		fail(EXIT_FAILURE, "record: cannot take the capability snapshot: %s",
		     strerror(-err));
		goto out;
	}

	/*
	 * With a command, the allocation session starts it (held before exec)
	 * and is started last, which lets it run; cpu follows it and its
	 * children by pid; numa watches the whole system (its children too).
	 */
	if (r->argv) {
		struct rec_coll *ac = add_coll(r, TK_COLLECT_ALLOC, "alloc");
		struct rec_coll *cc = add_coll(r, TK_COLLECT_CPU, "cpu");

		open_alloc_cmd(r, ac);
		if (ac->s)
			open_cpu(r, cc, &ac->pid, 1, true, NULL);
		else
			open_cpu(r, cc, NULL, 0, true, r->argv);
		if (!ac->s && !cc->s) {
			fail(EXIT_FAILURE, "record: cannot start '%s': the allocation profile: %s; "
			     "cpu: %s", r->argv[0], ac->why, cc->why);
			goto out;
		}
		nc = add_coll(r, TK_COLLECT_NUMA, "numa");
	} else {
		open_cpu(r, add_coll(r, TK_COLLECT_CPU, "cpu"), r->pids, r->nr_pids, false, NULL);
		for (i = 0; i < r->nr_pids; i++) {
			char name[32];

			snprintf(name, sizeof(name), r->nr_pids > 1 ? "alloc-%d" : "alloc",
				 r->pids[i]);
			open_alloc_pid(r, add_coll(r, TK_COLLECT_ALLOC, name), r->pids[i], i == 0);
		}
		if (!r->nr_pids) {
			struct rec_coll *ac = add_coll(r, TK_COLLECT_ALLOC, "alloc");

			snprintf(ac->title, sizeof(ac->title), "Allocations");
			snprintf(ac->why, sizeof(ac->why), "allocation profiles are taken per "
				 "process: give -p PID or -- CMD");
		}
		nc = add_coll(r, TK_COLLECT_NUMA, "numa");
	}
	/* the processes' profiles first, then numa (on the whole snapshot), the command's owner last */
	for (i = 0; i < r->n; i++)
		if (!r->c[i].owns_command && &r->c[i] != nc)
			start_one(&r->c[i]);
	err = caps_join(r, &cj);
	if (err == -ESRCH && cj.opts.pid) {
		/* the process ended while the thread looked at it: the rest of the snapshot */
		rec_note(r, "caps: process %d ended before the capability snapshot was whole: "
			 "caps.json has no process entries", cj.opts.pid);
		cj.opts.pid = 0;
		err = tk_caps__take(&cj.opts, &r->caps);
	}
	if (err) {
		fail(EXIT_FAILURE, "record: cannot take the capability snapshot: %s",
		     strerror(-err));
		goto out;
	}
	if (r->argv)
		open_numa(r, nc, NULL, 0);
	else
		open_numa(r, nc, r->pids, r->nr_pids);
	start_one(nc);
	for (i = 0; i < r->n; i++)
		if (r->c[i].owns_command) {
			start_one(&r->c[i]);
			if (r->c[i].status != REC_OK) {
				print_plan(r);
				fail(EXIT_FAILURE, "record: %s: %s", r->c[i].name, r->c[i].why);
				goto out;
			}
			if (r->c[i].coll == TK_COLLECT_ALLOC)
				plan_alloc_cmd(&r->c[i]);
		}
	cli_startup_over();
	print_plan(r);
	/* the workers leave the stop signals to this thread */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &prev);
	for (i = 0; i < r->n; i++) {
		struct rec_coll *rc = &r->c[i];

		if (rc->s && rc->status == REC_OK) {
			if ((err = pthread_create(&rc->th, NULL, worker, rc))) {
				rc->status = REC_FAILED;
				snprintf(rc->why, sizeof(rc->why), "no thread: %s", strerror(err));
				continue;
			}
			rc->thread = true;
			ran++;
		}
	}
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (!atomic_load(&stop_flag))
		fprintf(stderr, "tracekit: record: %s; Ctrl-C ends it early\n",
			r->duration ? "recording" : "recording until the command exits");
	r->end_reason = window(r);

	for (i = 0; i < r->n; i++) {
		struct rec_coll *rc = &r->c[i];

		if (!rc->thread)
			continue;
		if (rc->owns_command) {
			r->exit_status = tk_session__exit_status(rc->s);
			r->cmd_stop_sig = tk_session__command_stopped(rc->s);
			if (r->cmd_stop_sig)
				rec_note(r, "'%s' was still running when the recording ended (%s): "
					 "stopped with %s", r->argv[0], r->end_reason,
					 r->cmd_stop_sig == SIGKILL ?
					 "SIGKILL, as SIGTERM did not end it" : "SIGTERM");
		}
		if (rc->budget.ended[0])
			rec_note(r, "%s: %s", rc->name, rc->budget.ended);
		if (rc->run_err) {
			rc->status = REC_FAILED;
			snprintf(rc->why, sizeof(rc->why), "collection failed: %s",
				 strerror(-rc->run_err));
		}
		err = rc->finish_err;
		if (err) {
			rc->status = REC_FAILED;
			snprintf(rc->why, sizeof(rc->why), "cannot build the %s: %s",
				 rc->coll == TK_COLLECT_NUMA ? "report" : "profile", strerror(-err));
		}
	}

	if (rec_out__finish(ro, r))
		goto out;
	fprintf(stderr, "tracekit: record: wrote %s (%.1f s, ended: %s; tracekit's own CPU "
		"time %.2f s, %.1f %% of one CPU)\n", ro->final, r->elapsed, r->end_reason,
		r->self_cpu_s, r->elapsed > 0 ? 100 * r->self_cpu_s / r->elapsed : 0.0);
	ret = ran ? EXIT_SUCCESS : fail(EXIT_FAILURE, "record: no collector could run here "
					"(the bundle says why)");
out:
	sig_rec = NULL;
	for (i = 0; i < r->n; i++) {
		tk_result__free(r->c[i].r);
		tk_session__free(r->c[i].s);
		r->c[i].s = NULL;
	}
	status = r->exit_status;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) && r->argv)
		fprintf(stderr, "tracekit: '%s' exited with status %d\n", r->argv[0],
			WEXITSTATUS(status));
	rec_out__close(ro);
	rec_stacks__free(r);
	caps_join(r, &cj);
	tk_caps__free(r->caps);
	tk_caps__free(r->alloc_caps);
	return ret;
}
