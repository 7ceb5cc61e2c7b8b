// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The perf_event CPU backend: software cpu-clock events with call chains,
 * read from their mmap rings in user space, for when eBPF is unavailable.
 *
 * Events
 * - Whole system: one event per online CPU (pid -1); with opts->cgroup the
 *   same events narrowed to the cgroup (PERF_FLAG_PID_CGROUP).
 * - Processes (opts->pids): one event per thread per CPU with inherit=1, so
 *   threads (and, with follow_children, children) created later are followed
 *   by the kernel. cpu=N rather than cpu=-1 because the kernel refuses to
 *   mmap an inherited per-task event with cpu=-1; all events of one CPU
 *   write into one ring (PERF_EVENT_IOC_SET_OUTPUT). Without follow_children,
 *   inherit_thread=1 keeps the events to threads (5.13+; older kernels follow
 *   children too and their samples are dropped here). Threads are listed
 *   from /proc/PID/task until a pass finds no new one, which closes the race
 *   with threads created while the events are being opened.
 * - Kernel frames are asked for unless opts->user_only; when the kernel
 *   refuses (perf_event_paranoid >= 2 without CAP_PERFMON: EACCES) the
 *   events are opened with exclude_kernel=1 and tk_cpu_perf__note() says so.
 *   Idle is excluded (exclude_idle), and so is this process in whole-system
 *   mode, as the BPF backend does.
 * - The same events carry the side band: COMM (exec starts a new generation
 *   of the process), MMAP2 (executable mappings), FORK/EXIT. A per-CPU event
 *   gets the records of its CPU only, so each arrives once.
 * - Time stamps are CLOCK_MONOTONIC (use_clockid), so the rings of all CPUs
 *   are merged in time order: an exec seen on one CPU is applied before the
 *   samples that follow it on another. Records younger than 2 ms stay in the
 *   ring until the next poll, as they may still be being written elsewhere.
 *
 * What the records become (stacks, generations, mappings kept so names
 * survive exit) is perf_ring.c's part; see perf_ring.h.
 *
 * Truncation: sample_max_stack (127, or less if kernel.perf_event_max_stack
 * is lower) bounds kernel and user frames together; a chain that reaches it
 * is marked truncated and counted in TK_LOSS_TRUNCATED.
 *
 * User stacks: unless opts->unwind is TK_UNWIND_FP (or kernel_only), the
 * kernel's frame-pointer callchain of user frames is not asked for; samples
 * carry the user ip, sp and rbp and the top 16 KiB of the user stack
 * instead, walked in user space with the rows of the CFI of each mapping
 * (perf_ring.c, tk_unw__walk), as the BPF backend walks them in the kernel.
 * Those samples are ~16.5 KiB, so the rings are 512 KiB per CPU unless the
 * caller chose (the most perf_event_mlock_kb lets an unprivileged user lock
 * per CPU). A kernel that refuses the fields gets the callchains of old in
 * auto mode (and the profile says so), an error with TK_UNWIND_CFI.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "core/internal.h"
#include "core/fsutil.h"
#include "cpu/perf_ring.h"

#define DEFAULT_RING_PAGES 64
#define UNWIND_RING_PAGES 128		/* 512 KiB: 31 samples with their stacks */
#define UNWIND_ROWS (2u << 20)		/* 16 MiB of rows, as the BPF backend's default */
#define MAX_CPUS 4096
#define REORDER_NS 2000000ULL		/* records younger than this wait a poll */
#define RESCAN_ROUNDS 8			/* /proc/PID/task passes */
#define WAKE_TAG UINT64_MAX

struct perf_state {
	int *fds;
	int nr_fds, cap_fds;
	int cpus[MAX_CPUS];
	int nr_cpus;
	struct tk_perf_ring *rings;	/* one per CPU, by index into cpus */
	struct tk_perf_records *records;
	struct tk_unw_store *unw;	/* rows for the user stacks samples copy; NULL: none */
	int epfd;
	int cgroup_fd;
	unsigned int ring_pages;
	bool ring_pages_asked;		/* the caller's: never made smaller */
	struct perf_event_attr attr;
	bool attr_settled;		/* the first event opened: attr is final */
	bool clock_mono;
	bool drained;
	struct tk_perf_filter filter;	/* only_pids: inherit_thread refused */
	/* off-CPU switch-outs: sched:sched_switch's id (0: not looked up, <0: the SW event) */
	int switch_tp;
	bool switch_settled;		/* one switch event opened: its kind is every CPU's */
	char switch_why[96];		/* why the tracepoint is not used; "": it is */
	char note[256];
	const char *proc_root;
};

/* ---- events ------------------------------------------------------------------ */

/* Keep event @fd (a negative errno passes through) among st->fds; closed on -ENOMEM. */
static int keep_fd(struct perf_state *st, int fd)
{
	if (fd < 0)
		return fd;
	if (st->nr_fds == st->cap_fds) {
		int ncap = st->cap_fds ? st->cap_fds * 2 : 16;
		int *n = realloc(st->fds, ncap * sizeof(*n));

		if (!n) {
			close(fd);
			return -ENOMEM;
		}
		st->fds = n;
		st->cap_fds = ncap;
	}
	st->fds[st->nr_fds++] = fd;
	return fd;
}

/*
 * Open one event and, the first time, settle the attributes: without kernel
 * sampling when that is refused, without features this kernel does not know.
 */
static int open_event(struct tk_cpu *c, struct perf_state *st, pid_t pid, int cpu,
		      unsigned long flags)
{
	struct perf_event_attr *a = &st->attr;
	int fd;

	for (;;) {
		fd = tk_perf_event_open(a, pid, cpu, flags);
		if (fd >= 0 || st->attr_settled)
			break;
		if ((fd == -EACCES || fd == -EPERM) && !a->exclude_kernel && !c->opts.kernel_only) {
			long paranoid = -1;

			tk_read_long(st->proc_root, "sys/kernel/perf_event_paranoid", &paranoid);
			a->exclude_kernel = 1;
			a->exclude_callchain_kernel = 1;
			snprintf(st->note, sizeof(st->note),
				 "kernel frames excluded: the kernel refused kernel sampling "
				 "(perf_event_paranoid %ld without CAP_PERFMON); "
				 "samples taken in the kernel are not seen", paranoid);
			continue;
		}
		if (fd == -EINVAL && a->use_clockid) {
			a->use_clockid = 0;
			st->clock_mono = false;
			continue;
		}
		if (fd == -EINVAL && a->read_format) {
			a->read_format = 0;	/* PERF_FORMAT_LOST: 6.0+ */
			continue;
		}
		if (fd == -EINVAL && a->inherit_thread) {
			a->inherit_thread = 0;
			st->filter.only_pids = true;
			continue;
		}
		if ((fd == -EINVAL || fd == -ENOSYS || fd == -EOPNOTSUPP) &&
		    (a->sample_type & PERF_SAMPLE_STACK_USER)) {
			snprintf(c->unwind_note, sizeof(c->unwind_note),
				 "unwinding: %sthis kernel gives no user registers and stack in "
				 "perf samples (%s)", c->opts.unwind == TK_UNWIND_CFI ? "" :
				 "frame pointers only: ", strerror(-fd));
			if (c->opts.unwind == TK_UNWIND_CFI)
				break;
			a->sample_type &= ~(uint64_t)TK_PERF_SAMPLE_UNWIND;
			a->sample_regs_user = 0;
			a->sample_stack_user = 0;
			a->exclude_callchain_user = 0;
			continue;
		}
		break;
	}
	if (fd < 0)
		return fd;
	st->attr_settled = true;
	return keep_fd(st, fd);
}

/* The sampling event of (@pid, cpu index @ci). */
static int open_sampling(struct tk_cpu *c, struct perf_state *st, pid_t pid, int ci,
			 unsigned long flags)
{
	struct tk_perf_ring *r = &st->rings[ci];
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, err;

	fd = open_event(c, st, pid, st->cpus[ci], flags);
	if (fd < 0)
		return fd;
	if (r->page)
		return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) ? -errno : 0;
	err = tk_perf_ring__map(r, fd, st->ring_pages);
	if (err == -EPERM && !st->ring_pages_asked && st->ring_pages > DEFAULT_RING_PAGES) {
		/* over the locked-memory budget of an unprivileged user: the usual size */
		st->ring_pages = DEFAULT_RING_PAGES;
		err = tk_perf_ring__map(r, fd, st->ring_pages);
	}
	if (err)
		return err;
	ev.data.u64 = ci;
	return epoll_ctl(st->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/*
 * Where no tracefs is mounted: a child in a mount namespace of its own mounts
 * one there (nothing is mounted where anyone else sees it) and sends back
 * sched_switch's id and format: "ID\nFORMAT" into @buf. Its length or a
 * negative errno.
 */
static long private_tracefs_read(char *buf, size_t size)
{
	static const char dir[] = "/sys/kernel/tracing";
	int fds[2], status;
	size_t off = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		char part[4096];
		long len;

		close(fds[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tracefs", dir, "tracefs", 0, NULL))
			_exit(1);
		len = tk_read_file(dir, "events/sched/sched_switch/id", part, sizeof(part));
		if (len <= 0 || write(fds[1], part, len) != len)
			_exit(2);
		len = tk_read_file(dir, "events/sched/sched_switch/format", part, sizeof(part));
		if (len <= 0 || write(fds[1], part, len) != len)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	while (off < size - 1 && (n = read(fds[0], buf + off, size - 1 - off)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		off += n;
	}
	buf[off] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 1 ? -EPERM : -ENOENT;
	return (long)off;
}

/*
 * sched:sched_switch from tracefs: its id, and prev_state's offset and size in
 * its raw data (st->filter); or a negative errno, and why in st->switch_why.
 */
static int switch_tracepoint(struct perf_state *st)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char buf[8192], *f;
	unsigned int off, size;
	long n = -ENOENT;
	int id = -1;
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && n < 0; i++) {
		n = tk_read_file(dirs[i], "events/sched/sched_switch/id", buf, sizeof(buf));
		if (n > 0 && sscanf(buf, "%d", &id) == 1 && id > 0)
			n = tk_read_file(dirs[i], "events/sched/sched_switch/format", buf,
					 sizeof(buf));
		else if (n >= 0)
			n = -EINVAL;
	}
	if (n < 0) {
		/* none mounted (or none readable): one of our own, unseen */
		n = private_tracefs_read(buf, sizeof(buf));
		if (n > 0 && (sscanf(buf, "%d", &id) != 1 || id <= 0))
			n = -EINVAL;
	}
	if (n < 0) {
		snprintf(st->switch_why, sizeof(st->switch_why), "no sched:sched_switch in "
			 "tracefs (%s)", strerror((int)-n));
		return (int)n;
	}
	/* "\tfield:long prev_state;\toffset:24;\tsize:8;\tsigned:1;" */
	f = strstr(buf, " prev_state;");
	if (!f || !(f = strstr(f, "offset:")) || sscanf(f, "offset:%u;%*[ \t]size:%u;", &off,
							 &size) != 2 || !size || size > 8) {
		snprintf(st->switch_why, sizeof(st->switch_why), "sched_switch's format has no "
			 "prev_state");
		return -ENOENT;
	}
	st->filter.switch_state_off = off;
	st->filter.switch_state_size = size;
	return id;
}

/*
 * Off-CPU time (--off-cpu) beside (@pid, cpu index @ci)'s sampling event: a
 * sample at every switch-out (period 1, which is how its samples are told
 * from cpu-clock's, whose period is the nanoseconds between samples) and
 * PERF_RECORD_SWITCH records, whose switch-ins end the waits
 * (perf_records.c); into the same ring. The sample is the sched:sched_switch
 * tracepoint's, whose raw data says the state the thread left in; where that
 * does not open, the context-switches software event's (preempted or
 * blocked, from the records, no more). Which one is settled by the first.
 */
static int open_switches(struct tk_cpu *c, struct perf_state *st, pid_t pid, int ci,
			 unsigned long flags)
{
	struct perf_event_attr a = st->attr;
	int fd;

	if (!st->switch_tp)
		st->switch_tp = switch_tracepoint(st);
	if (st->switch_tp > 0) {
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = st->switch_tp;
		a.sample_type |= PERF_SAMPLE_RAW;
		a.freq = 0;
		a.sample_period = 1;
		a.context_switch = 1;
		a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
		fd = tk_perf_event_open(&a, pid, st->cpus[ci], flags);
		if (fd >= 0 || st->switch_settled || fd == -ESRCH) {
			st->switch_settled = st->switch_settled || fd >= 0;
			fd = keep_fd(st, fd);
			if (fd < 0)
				return fd;
			return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, st->rings[ci].fd) ? -errno : 0;
		}
		/* the first does not open: the software event, for all */
		snprintf(st->switch_why, sizeof(st->switch_why), "sched:sched_switch does not "
			 "open (%s)", strerror(-fd));
		st->switch_tp = -1;
		st->filter.switch_state_size = 0;
		a = st->attr;
	}
	st->switch_settled = true;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.freq = 0;
	a.sample_period = 1;
	a.context_switch = 1;
	/* the side band comes with the sampling event once */
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
	fd = keep_fd(st, tk_perf_event_open(&a, pid, st->cpus[ci], flags));
	if (fd < 0)
		return fd;
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, st->rings[ci].fd) ? -errno : 0;
}

/* Open the event of (@pid, cpu index @ci): it feeds the ring of that CPU. */
static int open_on_cpu(struct tk_cpu *c, struct perf_state *st, pid_t pid, int ci,
		       unsigned long flags)
{
	int err = open_sampling(c, st, pid, ci, flags);

	if (!err && c->opts.off_cpu) {
		err = open_switches(c, st, pid, ci, flags);
		if (err && err != -ESRCH)
			snprintf(c->start_why, sizeof(c->start_why), "off-CPU time: the "
				 "context-switches event does not open (%s)", strerror(-err));
		if (!err && !c->off_cpu_note[0] && st->switch_tp > 0)
			snprintf(c->off_cpu_note, sizeof(c->off_cpu_note), "off-CPU time: perf "
				 "sched:sched_switch events (period 1: both stacks and prev_state "
				 "at every switch-out) and PERF_RECORD_SWITCH records");
		else if (!err && !c->off_cpu_note[0])
			snprintf(c->off_cpu_note, sizeof(c->off_cpu_note), "off-CPU time: perf "
				 "context-switches events (period 1: both stacks at every "
				 "switch-out; preempted or blocked: %s) and PERF_RECORD_SWITCH "
				 "records", st->switch_why);
	}
	return err;
}

struct tid_set {
	uint32_t *v;
	size_t nr, cap;
};

static bool tid_set_has(const struct tid_set *s, uint32_t tid)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->v[i] == tid)
			return true;
	return false;
}

/* Open events for the threads of @pid not opened yet; *@added counts them. */
static int open_threads(struct tk_cpu *c, struct perf_state *st, uint32_t pid,
			struct tid_set *done, int *added)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ci, err = 0;

	snprintf(path, sizeof(path), "%s/%u/task", st->proc_root, pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (*end || !tid || tid == st->filter.skip_tid || tid_set_has(done, tid))
			continue;
		if (done->nr == done->cap) {
			size_t ncap = done->cap ? done->cap * 2 : 64;
			uint32_t *n = realloc(done->v, ncap * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			done->v = n;
			done->cap = ncap;
		}
		done->v[done->nr++] = tid;
		for (ci = 0; ci < st->nr_cpus; ci++) {
			err = open_on_cpu(c, st, tid, ci, 0);
			if (err == -ESRCH)
				break;	/* the thread ended meanwhile */
			if (err)
				goto out;
		}
		err = 0;
		(*added)++;
	}
out:
	closedir(d);
	return err;
}

static int open_pids(struct tk_cpu *c, struct perf_state *st)
{
	struct tid_set done = {};
	int i, round, added, opened = 0, err = 0;

	for (round = 0; round < RESCAN_ROUNDS; round++) {
		added = 0;
		for (i = 0; i < c->opts.nr_pids; i++) {
			err = open_threads(c, st, c->opts.pids[i], &done, &added);
			if (err == -ESRCH && round > 0)
				err = 0;	/* it was there a moment ago: it has exited */
			if (err)
				goto out;
		}
		opened += added;
		if (!added)
			break;
	}
	if (!opened)
		err = -ESRCH;
out:
	free(done.v);
	return err;
}

static int open_cgroup(struct tk_cpu *c, struct perf_state *st)
{
	const char *cg = c->opts.cgroup;
	char path[PATH_MAX];
	int ci, err;

	st->cgroup_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->cgroup_fd < 0 && cg[0] != '/') {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", cg);
		st->cgroup_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (st->cgroup_fd < 0)
		return -errno;
	for (ci = 0; ci < st->nr_cpus; ci++) {
		err = open_on_cpu(c, st, st->cgroup_fd, ci, PERF_FLAG_PID_CGROUP);
		if (err)
			return err;
	}
	return 0;
}

static void perf_close_events(struct perf_state *st)
{
	int i;

	for (i = 0; st->rings && i < st->nr_cpus; i++)
		tk_perf_ring__unmap(&st->rings[i]);
	for (i = 0; i < st->nr_fds; i++)
		close(st->fds[i]);
	st->nr_fds = 0;
	if (st->epfd >= 0)
		close(st->epfd);
	st->epfd = -1;
	if (st->cgroup_fd >= 0)
		close(st->cgroup_fd);
	st->cgroup_fd = -1;
}

void tk_cpu_perf__close_in_child(struct tk_cpu *c)
{
	/* unmap and close only: no allocator calls in a fork child handler */
	if (c->priv)
		perf_close_events(c->priv);
}

static void perf_free(struct tk_cpu *c)
{
	struct perf_state *st = c->priv;

	if (!st)
		return;
	perf_close_events(st);
	free(st->fds);
	free(st->rings);
	tk_perf_records__free(st->records);
	tk_unw_store__free(st->unw);
	free(st);
	c->priv = NULL;
}

static unsigned int max_stack(const char *root)
{
	long v = TK_MAX_FRAMES;

	if (!tk_read_long(root, "sys/kernel/perf_event_max_stack", &v) && v > 0 &&
	    v < TK_MAX_FRAMES)
		return v;
	return TK_MAX_FRAMES;
}

int tk_cpu_perf__start(struct tk_cpu *c, const struct tk_cpu_perf_opts *o)
{
	const struct tk_cpu_opts *opts = &c->opts;
	bool unwind = opts->unwind != TK_UNWIND_FP && !opts->kernel_only;
	struct perf_event_attr *a;
	struct perf_state *st;
	int i, err;

	if (c->priv)
		return -EBUSY;
	if (opts->user_only && opts->kernel_only)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->epfd = -1;
	st->cgroup_fd = -1;
	c->priv = st;
	st->proc_root = c->opts.proc_root && *c->opts.proc_root ? c->opts.proc_root : "/proc";
	st->ring_pages_asked = o && o->ring_pages;
	st->ring_pages = st->ring_pages_asked ? o->ring_pages :
			 unwind ? UNWIND_RING_PAGES : DEFAULT_RING_PAGES;
	st->filter.max_stack = max_stack(st->proc_root);

	err = tk_online_cpus(st->cpus, MAX_CPUS);
	if (err <= 0) {
		err = err ? err : -ENODEV;
		goto fail;
	}
	st->nr_cpus = err;
	err = 0;
	c->nr_cpus = st->nr_cpus;
	st->rings = calloc(st->nr_cpus, sizeof(*st->rings));
	if (!st->rings) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < st->nr_cpus; i++)
		st->rings[i].fd = -1;
	st->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (st->epfd < 0) {
		err = -errno;
		goto fail;
	}
	if (o && o->wake_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_TAG };

		if (epoll_ctl(st->epfd, EPOLL_CTL_ADD, o->wake_fd, &ev)) {
			err = -errno;
			goto fail;
		}
	}

	a = &st->attr;
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = opts->freq_hz > 0 ? opts->freq_hz : 99;
	a->sample_type = TK_PERF_SAMPLE_TYPE;
	a->sample_max_stack = st->filter.max_stack;
	a->exclude_callchain_kernel = opts->user_only;
	a->exclude_callchain_user = opts->kernel_only;
	if (unwind) {
		a->sample_type |= TK_PERF_SAMPLE_UNWIND;
		a->sample_regs_user = TK_PERF_REGS_USER;
		a->sample_stack_user = TK_PERF_STACK_USER;
		a->exclude_callchain_user = 1;	/* walked here instead */
	}
	a->exclude_hv = 1;
	a->exclude_idle = 1;
	a->disabled = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->read_format = PERF_FORMAT_LOST;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	st->clock_mono = true;
	a->watermark = 1;
	a->wakeup_watermark = st->ring_pages * sysconf(_SC_PAGESIZE) / 2;

	if (opts->nr_pids > 0) {
		/* the thread running a process's own profile never samples itself */
		for (i = 0; i < opts->nr_pids; i++)
			if (opts->pids[i] == getpid())
				st->filter.skip_tid = syscall(SYS_gettid);
		a->inherit = 1;
		a->inherit_thread = !opts->follow_children;
		err = open_pids(c, st);
	} else if (opts->cgroup) {
		st->filter.drop_pid = getpid();	/* tracekit itself, as the BPF backend */
		err = open_cgroup(c, st);
	} else {
		st->filter.drop_pid = getpid();
		for (i = 0; i < st->nr_cpus && !err; i++)
			err = open_on_cpu(c, st, -1, i, 0);
	}
	if (err)
		goto fail;
	st->records = tk_perf_records__new(c, &st->filter);
	if (!st->records) {
		err = -ENOMEM;
		goto fail;
	}
	if (a->sample_type & PERF_SAMPLE_STACK_USER) {
		err = tk_unw_store__new(NULL, opts->unwind_mem ? tk_unw__rows_for(opts->unwind_mem) :
					UNWIND_ROWS,
					&st->unw);
		if (err)
			goto fail;
		tk_perf_records__set_unwind(st->records, st->unw);
	}
	for (i = 0; i < st->nr_fds; i++) {
		if (ioctl(st->fds[i], PERF_EVENT_IOC_ENABLE, 0)) {
			err = -errno;
			goto fail;
		}
	}
	return 0;
fail:
	perf_free(c);
	return err;
}

const char *tk_cpu_perf__note(const struct tk_cpu *c)
{
	const struct perf_state *st = c->be == &tk_cpu_backend_perf ? c->priv : NULL;

	return st ? st->note : "";
}

static int perf_start(struct tk_cpu *c)
{
	struct tk_cpu_perf_opts o = { .wake_fd = -1 };

	return tk_cpu_perf__start(c, &o);
}

static int perf_poll(struct tk_cpu *c, int timeout_ms)
{
	struct perf_state *st = c->priv;
	struct epoll_event evs[16];
	uint64_t limit;
	int n, i;

	if (!st || st->drained)
		return -EINVAL;
	n = epoll_wait(st->epfd, evs, 16, timeout_ms);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		/*
		 * The task of a per-task event exited: the fd stays readable
		 * for good. Stop watching it; its ring is still read each poll.
		 */
		if (evs[i].data.u64 != WAKE_TAG && (evs[i].events & EPOLLHUP))
			epoll_ctl(st->epfd, EPOLL_CTL_DEL,
				  st->rings[evs[i].data.u64].fd, NULL);
	}
	limit = st->clock_mono ? (uint64_t)tk_now_ns(CLOCK_MONOTONIC) - REORDER_NS : UINT64_MAX;
	return tk_perf_rings__consume(st->rings, st->nr_cpus, limit, tk_perf_records__record,
				      st->records);
}

/*
 * A LOST record is written only once the ring has room again, so losses of
 * the last moments before the events were disabled may never be reported
 * in the ring. With PERF_FORMAT_LOST, read() gives each event's own count
 * (its inherited children's included): whatever the records did not say is
 * added here.
 */
static void count_unreported_losses(struct tk_cpu *c, struct perf_state *st)
{
	uint64_t v[2], lost = 0, seen = tk_perf_records__lost(st->records);
	int i;

	if (!(st->attr.read_format & PERF_FORMAT_LOST))
		return;
	for (i = 0; i < st->nr_fds; i++)
		if (read(st->fds[i], v, sizeof(v)) == sizeof(v))
			lost += v[1];
	if (lost > seen)
		c->losses[TK_LOSS_PERF_LOST] += lost - seen;
}

static int perf_drain(struct tk_cpu *c)
{
	struct perf_state *st = c->priv;
	int i, err;

	if (!st)
		return -EINVAL;
	if (st->drained)
		return 0;
	/* on an inherited event, this disables its children too */
	for (i = 0; i < st->nr_fds; i++)
		ioctl(st->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	err = tk_perf_rings__consume(st->rings, st->nr_cpus, UINT64_MAX, tk_perf_records__record,
				     st->records);
	/* threads still switched out: their wait until now */
	if (!err && c->opts.off_cpu && st->clock_mono)
		err = tk_perf_records__pending_waits(st->records, tk_now_ns(CLOCK_MONOTONIC));
	count_unreported_losses(c, st);
	perf_close_events(st);
	st->drained = true;
	return err;
}

const struct tk_cpu_backend tk_cpu_backend_perf = {
	.name = "perf",
	.start = perf_start,
	.poll = perf_poll,
	.drain = perf_drain,
	.free = perf_free,
};
