// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The sidecar: a thread of the host that drives the perf CPU backend on the
 * host itself (c->opts.pids = { getpid() }) and writes one pprof file per
 * period. The thread is created with every signal blocked
 * (pthread_attr_setsigmask_np, so the caller's own mask is never touched),
 * opens the events itself (so it is the one thread not sampled) and reports
 * whether that worked before tk_sidecar__start() returns.
 *
 * The symbolizer lives as long as the sidecar (each ELF file is parsed once);
 * the table of stacks and the loss counters start afresh each period. It
 * symbolizes the heap dumps too (their mappings go under TK_JEPROF_GEN).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "core/internal.h"
#include "core/opts.h"
#include "core/fsutil.h"
#include "alloc/jedump.h"
#include "core/outfile.h"
#include "cpu/perf_ring.h"
#include "tracekit/sidecar.h"

#define DEFAULT_FREQ 99
#define DEFAULT_PERIOD_S 60
/* 512 KiB per CPU: ~31 samples with their 16 KiB stack copies, 0.3 s at 99 Hz */
#define RING_PAGES_UNWIND 128
#define POLL_MS 1000

enum { ST_STARTING, ST_RUNNING, ST_FAILED };

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
			  size_t newlen);

struct tk_sidecar {
	pthread_t thread;
	pid_t pid;			/* the process that started it */
	int dirfd;
	int wake_fd;			/* eventfd: readable once stop is asked */
	char dir[PATH_MAX];		/* where to write: /proc/self/fd/N when it works */
	int freq_hz;
	int period_s;
	atomic_bool stop;

	pthread_mutex_t lock;		/* state, why */
	pthread_cond_t cond;
	int state;
	char why[256];

	struct tk_cpu cpu;		/* the thread's; perf backend */
	uint64_t seq;			/* file number */

	atomic_uint_fast64_t periods, files, samples, lost;
	atomic_int last_error;

	/* heap profiles: status and why are set before the thread reports RUNNING */
	bool heap_asked;		/* opts.heap */
	enum tk_sidecar_heap heap;
	char heap_why[160];
	mallctl_fn mallctl;
	uint64_t heap_seq;
	atomic_uint_fast64_t heap_files;
	atomic_int heap_last_error;
	bool closed_in_child;		/* a fork child already dropped its copies */
	struct tk_sidecar *next_running;	/* the list of running sidecars (track) */
};

/*
 * Sidecars running in this process, for the fork child handler: a child
 * inherits the perf event fds and rings, which would go on sampling the
 * host's threads until the child exits (forever in a prefork server). A
 * list through the handles themselves, so any number is covered (a fixed
 * table left the ninth out: its child kept the perf fds). The prepare
 * handler takes the lock, so the child sees the list whole, never halfway
 * through an insertion; the parent and the child release it.
 */
static struct tk_sidecar *running;
static pthread_mutex_t running_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* In a fork child (running_lock held): close the copies of every sidecar's descriptors. */
static void close_all_in_child(void)
{
	struct tk_sidecar *s;

	for (s = running; s; s = s->next_running) {
		if (s->closed_in_child)
			continue;
		tk_cpu_perf__close_in_child(&s->cpu);
		close(s->wake_fd);
		close(s->dirfd);
		s->closed_in_child = true;
	}
}

static void before_fork(void)
{
	pthread_mutex_lock(&running_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&running_lock);
}

static void after_fork_child(void)
{
	close_all_in_child();
	pthread_mutex_unlock(&running_lock);
}

static void in_child(void)
{
	pthread_mutex_lock(&running_lock);
	close_all_in_child();
	pthread_mutex_unlock(&running_lock);
}

static void register_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void track(struct tk_sidecar *s, bool add)
{
	struct tk_sidecar **p;

	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&running_lock);
	if (add) {
		s->next_running = running;
		running = s;
	} else {
		for (p = &running; *p; p = &(*p)->next_running)
			if (*p == s) {
				*p = s->next_running;
				break;
			}
	}
	pthread_mutex_unlock(&running_lock);
}

const char *tk_sidecar_status__name(enum tk_sidecar_status st)
{
	switch (st) {
	case TK_SIDECAR_DISABLED:
		return "disabled";
	case TK_SIDECAR_UNSUPPORTED:
		return "unsupported";
	case TK_SIDECAR_RUNNING:
		return "running";
	}
	return "unknown";
}

const char *tk_sidecar_heap__name(enum tk_sidecar_heap st)
{
	switch (st) {
	case TK_SIDECAR_HEAP_DISABLED:
		return "disabled";
	case TK_SIDECAR_HEAP_UNSUPPORTED:
		return "unsupported";
	case TK_SIDECAR_HEAP_RUNNING:
		return "running";
	}
	return "unknown";
}

/* ---- the output directory ------------------------------------------------- */

static int open_dir(struct tk_sidecar *s, const char *dir, char *why, size_t why_sz)
{
	struct stat st;
	int err;

	if (!dir || !*dir) {
		snprintf(why, why_sz, "no output directory given (opts.dir)");
		return -EINVAL;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		snprintf(why, why_sz, "cannot create %s: %s", dir, strerror(-err));
		return err;
	}
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dirfd < 0) {
		err = -errno;
		if ((err == -ELOOP || err == -ENOTDIR) && !lstat(dir, &st) && S_ISLNK(st.st_mode))
			snprintf(why, why_sz, "%s is a symbolic link; the sidecar writes only "
				 "into a directory of its own", dir);
		else
			snprintf(why, why_sz, "cannot open %s: %s", dir, strerror(-err));
		return err;
	}
	if (fstat(s->dirfd, &st)) {
		err = -errno;
		snprintf(why, why_sz, "cannot stat %s: %s", dir, strerror(-err));
		return err;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, why_sz, "%s belongs to uid %u, not to this process (uid %u)", dir,
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, why_sz, "%s is writable by others (mode %04o); it must be the "
			 "sidecar's own", dir, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	if (faccessat(s->dirfd, ".", W_OK | X_OK, AT_EACCESS)) {
		err = -errno;
		snprintf(why, why_sz, "%s is not writable: %s", dir, strerror(-err));
		return err;
	}
	/* write through the descriptor: a rename or symlink swap of @dir cannot redirect us */
	snprintf(s->dir, sizeof(s->dir), "/proc/self/fd/%d", s->dirfd);
	if (access(s->dir, W_OK))
		snprintf(s->dir, sizeof(s->dir), "%s", dir);
	return 0;
}

/* ---- one period, one file ----------------------------------------------- */

/*
 * Write @p as "KIND-YYYYmmddTHHMMSS-N.pb.gz" (@start_real's time, UTC; N from
 * *@seq, raised past names already taken), whole, under a temporary name.
 */
static int write_file(struct tk_sidecar *s, const struct tk_profile *p, const char *kind,
		      int64_t start_real, uint64_t *seq)
{
	char name[64], path[PATH_MAX + 64];
	time_t t = start_real / 1000000000;
	struct tk_outfile o;
	struct tm tm;
	int err, i;

	gmtime_r(&t, &tm);
	for (i = 0; i < 1000; i++) {
		(*seq)++;
		snprintf(name, sizeof(name), "%s-%04d%02d%02dT%02d%02d%02d-%llu.pb.gz", kind,
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (unsigned long long)*seq);
		if (faccessat(s->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
			break;
	}
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	err = tk_outfile__open(&o, path);
	if (err)
		return err;
	err = tk_profile__write_pprof(p, o.f);
	if (err) {
		tk_outfile__abort(&o);
		return err;
	}
	return tk_outfile__commit(&o);
}

/* The period that ends now (@final: sampling stopped) into its file. */
static int write_period(struct tk_sidecar *s, bool final, int64_t start_real)
{
	struct tk_cpu *c = &s->cpu;
	struct tk_cpu_stats st;
	struct tk_profile *p;
	int err;

	err = tk_cpu__rotate(c, final, &p);
	if (err)
		return err;
	tk_profile__add_comment(p, "tracekit sidecar: pid %d, period %llu of %d s", (int)s->pid,
				(unsigned long long)s->seq + 1, s->period_s);
	err = write_file(s, p, "cpu", start_real, &s->seq);
	if (!err) {
		atomic_fetch_add(&s->files, 1);
		/* the session counts from its start: the files' share so far */
		tk_cpu__stats(c, &st);
		atomic_store(&s->samples, st.samples);
		atomic_store(&s->lost, st.lost);
	}
	tk_profile__free(p);
	return err;
}

/* ---- heap profiles (jemalloc) ------------------------------------------------ */

/* jemalloc's mallctl in this process, under the names its builds export. */
static mallctl_fn find_mallctl(void)
{
	static const char *const names[] = { "mallctl", "je_mallctl", "_rjem_mallctl" };
	size_t i;
	void *f;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		f = dlsym(RTLD_DEFAULT, names[i]);
		if (f)
			return (mallctl_fn)f;
	}
	return NULL;
}

/* Is jemalloc here, built with profiling, with it on? Sets s->heap and s->heap_why. */
static void heap_setup(struct tk_sidecar *s)
{
	bool on = false;
	size_t sz = sizeof(on);
	int err;

	s->heap = TK_SIDECAR_HEAP_UNSUPPORTED;
	s->mallctl = find_mallctl();
	if (!s->mallctl) {
		snprintf(s->heap_why, sizeof(s->heap_why), "no jemalloc in this process (no "
			 "mallctl, je_mallctl or _rjem_mallctl symbol)");
		return;
	}
	err = s->mallctl("opt.prof", &on, &sz, NULL, 0);
	if (err == ENOENT) {
		snprintf(s->heap_why, sizeof(s->heap_why), "jemalloc was built without "
			 "profiling (--enable-prof)");
		return;
	}
	if (err || !on) {
		snprintf(s->heap_why, sizeof(s->heap_why), "jemalloc profiling is off (start "
			 "the program with MALLOC_CONF=prof:true)%s%s", err ? ": " : "",
			 err ? strerror(err) : "");
		return;
	}
	sz = sizeof(on);
	err = s->mallctl("prof.active", &on, &sz, NULL, 0);
	if (err || !on) {
		snprintf(s->heap_why, sizeof(s->heap_why), "jemalloc profiling is not active "
			 "(prof_active:false; the host may switch it on with mallctl "
			 "prof.active)%s%s", err ? ": " : "", err ? strerror(err) : "");
		return;
	}
	s->heap_why[0] = '\0';
	s->heap = TK_SIDECAR_HEAP_RUNNING;
}

/* A dump of this process's heap, converted, as one heap file; the dump is removed. */
static int write_heap(struct tk_sidecar *s, int64_t start_real, int64_t end_real)
{
	char dump[PATH_MAX + 64];
	const char *path = dump;
	struct tk_profile *p;
	uint64_t period = 0;
	int err;

	snprintf(dump, sizeof(dump), "%s/.heap-dump-%d.tmp", s->dir, (int)s->pid);
	unlink(dump);
	err = s->mallctl("prof.dump", NULL, NULL, (void *)&path, sizeof(path));
	if (err) {
		unlink(dump);
		return -err;
	}
	err = tk_jedump__load(dump, s->cpu.sym, (uint32_t)s->pid, "jemalloc", &period, &p);
	unlink(dump);
	if (err)
		return err;
	tk_profile__add_comment(p, "tracekit sidecar: pid %d, heap at the end of period %llu "
				"of %d s", (int)s->pid, (unsigned long long)s->heap_seq + 1,
				s->period_s);
	p->time_nanos = start_real;
	p->duration_nanos = end_real - start_real;
	err = write_file(s, p, "heap", start_real, &s->heap_seq);
	if (!err)
		atomic_fetch_add(&s->heap_files, 1);
	tk_profile__free(p);
	return err;
}

/* ---- the thread ------------------------------------------------------------ */

static void report(struct tk_sidecar *s, int state, const char *why)
{
	pthread_mutex_lock(&s->lock);
	s->state = state;
	if (why)
		snprintf(s->why, sizeof(s->why), "%s", why);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Descriptors in use and the soft limit: one event per thread per CPU must fit well. */
static int fd_budget(int nr_cpus, char *why, size_t why_sz)
{
	long threads = 0, fds = 0, need;
	struct rlimit rl;
	struct dirent *de;
	DIR *d;

	d = opendir("/proc/self/task");
	if (!d)
		return 0;	/* no /proc: let perf_event_open tell */
	while ((de = readdir(d)))
		threads += de->d_name[0] != '.';
	closedir(d);
	d = opendir("/proc/self/fd");
	if (d) {
		while ((de = readdir(d)))
			fds += de->d_name[0] != '.';
		closedir(d);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	need = (threads - 1) * nr_cpus + 2;
	if (need > ((long)rl.rlim_cur - fds) / 2) {
		snprintf(why, why_sz, "%ld threads on %d CPUs need %ld file descriptors: more than "
			 "half of what RLIMIT_NOFILE (%llu) leaves the process", threads - 1,
			 nr_cpus, need, (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	return 0;
}

/* Why perf_event_open said no, with what a person can do about it. */
static void perf_refused(int err, char *why, size_t why_sz)
{
	char status[4096], seccomp[16] = "0";
	long paranoid = -1;
	const char *hint = "";

	tk_read_long("/proc", "sys/kernel/perf_event_paranoid", &paranoid);
	if (tk_read_file("/proc", "self/status", status, sizeof(status)) > 0)
		tk_status_field(status, "Seccomp", seccomp, sizeof(seccomp));
	if (err == -EACCES || err == -EPERM || err == -ENOSYS) {
		if (paranoid > 2)
			hint = "; self-sampling needs kernel.perf_event_paranoid <= 2 "
			       "or CAP_PERFMON";
		else if (strcmp(seccomp, "0"))
			hint = "; this process runs under a seccomp filter, which may deny it";
		else
			hint = "; a security module (LSM) may deny it";
	}
	snprintf(why, why_sz, "perf_event_open self-sampling refused: %s "
		 "(kernel.perf_event_paranoid %ld)%s", strerror(-err), paranoid, hint);
}

static int setup(struct tk_sidecar *s, char *why, size_t why_sz)
{
	/* user stacks unwound from CFI (the default): each sample copies 16 KiB of stack */
	struct tk_cpu_perf_opts po = { .ring_pages = RING_PAGES_UNWIND, .wake_fd = s->wake_fd };
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .unwind_tables = true };
	struct tk_cpu *c = &s->cpu;
	int cpus[1024], nr_cpus, err;

	c->opts.sz = sizeof(c->opts);
	c->opts.freq_hz = s->freq_hz;
	c->opts.pids[0] = s->pid;
	c->opts.nr_pids = 1;
	c->be = &tk_cpu_backend_perf;
	c->periods_only = true;		/* a file per period; nothing kept after it */
	c->stacks = tk_stacks__new();
	if (!c->stacks)
		return -ENOMEM;
	err = tk_symbolizer__new(&so, &c->sym);
	if (err) {
		snprintf(why, why_sz, "cannot set up symbolization: %s", strerror(-err));
		return err;
	}
	nr_cpus = tk_online_cpus(cpus, 1024);
	err = fd_budget(nr_cpus > 0 ? nr_cpus : 1, why, why_sz);
	if (err)
		return err;
	c->start_ns = tk_now_ns(CLOCK_REALTIME);
	c->start_mono_ns = tk_now_ns(CLOCK_MONOTONIC);
	err = tk_cpu_perf__start(c, &po);
	if (err) {
		perf_refused(err, why, why_sz);
		return err;
	}
	return 0;
}

static void teardown(struct tk_cpu *c)
{
	if (c->priv)
		c->be->free(c);
	tk_symbolizer__free(c->sym);
	tk_stacks__free(c->stacks);
	c->sym = NULL;
	c->stacks = NULL;
}

static void *run(void *arg)
{
	struct tk_sidecar *s = arg;
	struct tk_cpu *c = &s->cpu;
	int64_t start_real, start_mono, deadline, now, left_ms;
	char why[256] = "";
	bool stopping = false;
	int err;

	prctl(PR_SET_NAME, "tk-sidecar");
	err = setup(s, why, sizeof(why));
	if (err) {
		teardown(c);
		report(s, ST_FAILED, why[0] ? why : strerror(-err));
		return NULL;
	}
	if (s->heap_asked)
		heap_setup(s);
	report(s, ST_RUNNING, NULL);

	start_real = c->start_ns;
	start_mono = c->start_mono_ns;
	while (!stopping) {
		deadline = start_mono + (int64_t)s->period_s * 1000000000;
		for (;;) {
			now = tk_now_ns(CLOCK_MONOTONIC);
			stopping = atomic_load(&s->stop);
			if (stopping || now >= deadline)
				break;
			left_ms = (deadline - now) / 1000000 + 1;
			err = tk_cpu__poll(c, left_ms < POLL_MS ? (int)left_ms : POLL_MS);
			if (err && err != -EINTR) {
				atomic_store(&s->last_error, err);
				stopping = true;	/* the events are unusable: end here */
				break;
			}
		}
		err = write_period(s, stopping, start_real);
		atomic_fetch_add(&s->periods, 1);
		if (err)
			atomic_store(&s->last_error, err);
		if (s->heap == TK_SIDECAR_HEAP_RUNNING) {
			err = write_heap(s, start_real, tk_now_ns(CLOCK_REALTIME));
			if (err)
				atomic_store(&s->heap_last_error, err);
		}
		start_real = tk_now_ns(CLOCK_REALTIME);
		start_mono = tk_now_ns(CLOCK_MONOTONIC);
	}
	teardown(c);
	return NULL;
}

/* ---- the host's side ---------------------------------------------------------- */

static void sidecar_free(struct tk_sidecar *s)
{
	track(s, false);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int spawn(struct tk_sidecar *s)
{
	pthread_attr_t attr;
	sigset_t all;
	int err;

	sigfillset(&all);
	err = -pthread_attr_init(&attr);
	if (err)
		return err;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	err = -pthread_attr_setsigmask_np(&attr, &all);
	if (!err)
		err = -pthread_create(&s->thread, &attr, run, s);
#else
	{
		sigset_t old;

		/* the new thread inherits the mask; the caller's is restored at once */
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = -pthread_create(&s->thread, &attr, run, s);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
#endif
	pthread_attr_destroy(&attr);
	return err;
}

enum tk_sidecar_status tk_sidecar__start(const struct tk_sidecar_opts *opts,
					 struct tk_sidecar **out, char *why, size_t why_sz)
{
	struct tk_sidecar_opts o = {};
	char buf[256] = "";
	struct tk_sidecar *s;
	int err;

	if (out)
		*out = NULL;
	if (why && why_sz)
		why[0] = '\0';
	if (opts && TK_OPTS_COPY(&o, opts)) {
		/* a newer caller asks for what this version cannot do: a no-op, said */
		if (opts->sz < offsetof(struct tk_sidecar_opts, enabled) + sizeof(bool) ||
		    !opts->enabled)
			return TK_SIDECAR_DISABLED;
		snprintf(buf, sizeof(buf), "options unknown to this libtracekit are set "
			 "(sz %zu, this version knows %zu bytes)", opts->sz, sizeof(o));
		goto unsupported;
	}
	if (!o.enabled)
		return TK_SIDECAR_DISABLED;
	if (!out) {
		snprintf(buf, sizeof(buf), "no place for the handle (out is NULL)");
		goto unsupported;
	}
	if (o.freq_hz < 0 || o.freq_hz > 10000 || o.period_s < 0) {
		snprintf(buf, sizeof(buf), "invalid options: freq_hz %d, period_s %d", o.freq_hz,
			 o.period_s);
		goto unsupported;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(buf, sizeof(buf), "out of memory");
		goto unsupported;
	}
	s->pid = getpid();
	s->dirfd = -1;
	s->freq_hz = o.freq_hz ? o.freq_hz : DEFAULT_FREQ;
	s->period_s = o.period_s ? o.period_s : DEFAULT_PERIOD_S;
	s->heap_asked = o.heap;		/* the thread looks whether it can (heap_setup) */
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		snprintf(buf, sizeof(buf), "eventfd: %s", strerror(errno));
		goto fail;
	}
	if (open_dir(s, o.dir, buf, sizeof(buf)))
		goto fail;
	/* known to the fork handler before any perf event exists */
	track(s, true);
	err = spawn(s);
	if (err) {
		snprintf(buf, sizeof(buf), "cannot start a thread: %s", strerror(-err));
		goto fail;
	}
	pthread_mutex_lock(&s->lock);
	while (s->state == ST_STARTING)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->state == ST_FAILED) {
		pthread_join(s->thread, NULL);
		snprintf(buf, sizeof(buf), "%s", s->why);
		goto fail;
	}
	*out = s;
	return TK_SIDECAR_RUNNING;
fail:
	sidecar_free(s);
unsupported:
	if (why && why_sz)
		snprintf(why, why_sz, "%s", buf);
	return TK_SIDECAR_UNSUPPORTED;
}

void tk_sidecar__stop(struct tk_sidecar *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (getpid() != s->pid) {
		/*
		 * A child forked by the host: the thread is not here, and what it
		 * was doing at the fork may be half done. Its descriptors (copies)
		 * were closed by the fork handler; the rest is left to exit or exec.
		 */
		if (!s->closed_in_child)
			in_child();
		return;
	}
	atomic_store(&s->stop, true);
	if (write(s->wake_fd, &one, sizeof(one)) < 0) {
		/* cannot fail with a valid eventfd; the thread sees s->stop within POLL_MS */
	}
	pthread_join(s->thread, NULL);
	sidecar_free(s);
}

void tk_sidecar__stats(const struct tk_sidecar *s, struct tk_sidecar_stats *st)
{
	struct tk_sidecar *m = (struct tk_sidecar *)s;

	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	st->periods = atomic_load(&m->periods);
	st->files = atomic_load(&m->files);
	st->samples = atomic_load(&m->samples);
	st->lost = atomic_load(&m->lost);
	st->last_error = atomic_load(&m->last_error);
	/* set before tk_sidecar__start() returned, constant since */
	st->heap = m->heap;
	snprintf(st->heap_why, sizeof(st->heap_why), "%s", m->heap_why);
	st->heap_files = atomic_load(&m->heap_files);
	st->heap_last_error = atomic_load(&m->heap_last_error);
}
