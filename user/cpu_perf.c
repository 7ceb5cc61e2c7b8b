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
 * Mappings (what makes names survive exit)
 * Each process keeps the executable mappings its MMAP2 records announced, as
 * a list shared with the children it forks (a fork copies the address
 * space). At the first sample with user frames of a (pid, gen), the
 * symbolizer is given that list when it is complete (the process exec'd or
 * was forked by such a process during the capture), or else the process's
 * /proc maps are captured (it existed before the capture); a capture that
 * fails (the process is gone) falls back to whatever the list holds and is
 * counted in TK_LOSS_MAPS_MISSED. Later MMAP2 records of a resolved process
 * go to the symbolizer at once. Processes never sampled cost no ELF work.
 * gen counts execs, and a pid reused by a new process (FORK) gets the next
 * gen too, so a (pid, gen) never names two different address spaces.
 *
 * Truncation: sample_max_stack (127, or less if kernel.perf_event_max_stack
 * is lower) bounds kernel and user frames together; a chain that reaches it
 * is marked truncated and counted in TK_LOSS_TRUNCATED.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "fsutil.h"
#include "perf_ring.h"

#define DEFAULT_RING_PAGES 64
#define MAX_CPUS 4096
#define REORDER_NS 2000000ULL		/* records younger than this wait a poll */
#define RESCAN_ROUNDS 8			/* /proc/PID/task passes */
#define WAKE_TAG UINT64_MAX

/* ---- small tables keyed by a non-zero u32 ------------------------------------ */

/*
 * Open addressing with linear probing and backward-shift deletion; entries are
 * @esz bytes starting with their u32 key, 0 marks a free slot (pid and tid 0
 * are the idle task, never stored). Pointers are valid until the next insert.
 */
struct tab {
	uint8_t *slots;
	size_t esz;
	size_t cap;		/* a power of two, or 0 */
	size_t nr;
};

static inline uint32_t *tab_key(const struct tab *t, size_t i)
{
	return (uint32_t *)(t->slots + i * t->esz);
}

static inline size_t tab_home(const struct tab *t, uint32_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (t->cap - 1);
}

static void *tab_find(const struct tab *t, uint32_t key)
{
	size_t i;

	if (!t->cap || !key)
		return NULL;
	for (i = tab_home(t, key);; i = (i + 1) & (t->cap - 1)) {
		uint32_t k = *tab_key(t, i);

		if (k == key)
			return tab_key(t, i);
		if (!k)
			return NULL;
	}
}

static int tab_grow(struct tab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64, i;
	struct tab n = { .esz = t->esz, .cap = ncap };

	n.slots = calloc(ncap, t->esz);
	if (!n.slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		uint32_t k = *tab_key(t, i);
		size_t j;

		if (!k)
			continue;
		for (j = tab_home(&n, k); *tab_key(&n, j); j = (j + 1) & (ncap - 1))
			;
		memcpy(tab_key(&n, j), tab_key(t, i), t->esz);
	}
	free(t->slots);
	n.nr = t->nr;
	*t = n;
	return 0;
}

/* The entry of @key, created zeroed when missing (*@fresh tells); NULL: no memory. */
static void *tab_get(struct tab *t, uint32_t key, bool *fresh)
{
	void *e = tab_find(t, key);
	size_t i;

	*fresh = false;
	if (e || !key)
		return e;
	if ((t->nr + 1) * 10 > t->cap * 7 && tab_grow(t))
		return NULL;
	for (i = tab_home(t, key); *tab_key(t, i); i = (i + 1) & (t->cap - 1))
		;
	memset(tab_key(t, i), 0, t->esz);
	*tab_key(t, i) = key;
	t->nr++;
	*fresh = true;
	return tab_key(t, i);
}

static void tab_del(struct tab *t, uint32_t key)
{
	uint32_t *e = tab_find(t, key);
	size_t i, j, h;

	if (!e)
		return;
	i = ((uint8_t *)e - t->slots) / t->esz;
	/* shift later members of the cluster back over the hole */
	for (j = (i + 1) & (t->cap - 1); *tab_key(t, j); j = (j + 1) & (t->cap - 1)) {
		h = tab_home(t, *tab_key(t, j));
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			memcpy(tab_key(t, i), tab_key(t, j), t->esz);
			i = j;
		}
	}
	*tab_key(t, i) = 0;
	t->nr--;
}

/* ---- interned file names ----------------------------------------------------- */

struct strset {
	char **slots;
	size_t cap, nr;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static const char *strset_intern(struct strset *ss, const char *s)
{
	size_t i;

	if ((ss->nr + 1) * 10 > ss->cap * 7) {
		size_t ncap = ss->cap ? ss->cap * 2 : 256, j;
		char **n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (j = 0; j < ss->cap; j++) {
			if (!ss->slots[j])
				continue;
			for (i = str_hash(ss->slots[j]) & (ncap - 1); n[i]; i = (i + 1) & (ncap - 1))
				;
			n[i] = ss->slots[j];
		}
		free(ss->slots);
		ss->slots = n;
		ss->cap = ncap;
	}
	for (i = str_hash(s) & (ss->cap - 1); ss->slots[i]; i = (i + 1) & (ss->cap - 1))
		if (!strcmp(ss->slots[i], s))
			return ss->slots[i];
	ss->slots[i] = strdup(s);
	if (!ss->slots[i])
		return NULL;
	ss->nr++;
	return ss->slots[i];
}

static void strset_free(struct strset *ss)
{
	size_t i;

	for (i = 0; i < ss->cap; i++)
		free(ss->slots[i]);
	free(ss->slots);
	memset(ss, 0, sizeof(*ss));
}

/* ---- processes and threads ------------------------------------------------- */

struct map_rec {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	const char *path;	/* interned */
};

/* The executable mappings of an address space, shared by fork until written. */
struct maplist {
	unsigned int refs;
	bool complete;		/* every mapping since exec: good without /proc */
	uint32_t nr, cap;
	struct map_rec m[];
};

enum {
	P_SEEN = 1,		/* counted in c->processes */
	P_RESOLVED = 2,		/* the symbolizer has this gen's mappings */
	P_EVER = 4,		/* the symbolizer has some gen of this pid: keep the entry */
};

struct proc {
	uint32_t pid;		/* key */
	uint32_t gen;
	uint32_t flags;
	struct maplist *maps;	/* NULL: none known */
};

struct thread {
	uint32_t tid;		/* key */
	uint32_t pid;
	char comm[16];
};

struct ring_cursor {
	const struct perf_event_header *h;
	uint64_t time;
};

struct perf_state {
	int *fds;
	int nr_fds, cap_fds;
	int cpus[MAX_CPUS];
	int nr_cpus;
	struct tk_perf_ring *rings;	/* one per CPU, by index into cpus */
	struct ring_cursor *cur;
	int epfd;
	int cgroup_fd;
	unsigned int ring_pages;
	struct perf_event_attr attr;
	bool attr_settled;		/* the first event opened: attr is final */
	bool clock_mono;
	bool filter_pids;		/* inherit_thread refused: drop children's samples */
	bool drained;
	uint32_t self_pid;
	uint32_t skip_tid;		/* the sampling thread of a process profiling itself */
	uint32_t max_stack;
	struct tab procs;
	struct tab threads;
	struct strset paths;
	char note[256];
	const char *proc_root;
	uint64_t kbuf[TK_MAX_FRAMES];
	uint64_t ubuf[TK_MAX_FRAMES];
};

static void maplist_put(struct maplist *l)
{
	if (l && --l->refs == 0)
		free(l);
}

static struct maplist *maplist_new(bool complete)
{
	struct maplist *l = calloc(1, sizeof(*l) + 16 * sizeof(l->m[0]));

	if (!l)
		return NULL;
	l->refs = 1;
	l->complete = complete;
	l->cap = 16;
	return l;
}

/* Append to @p's own list (copying a shared one first). Returns 0 or -ENOMEM. */
static int maplist_add(struct proc *p, const struct map_rec *m)
{
	struct maplist *l = p->maps;

	if (!l) {
		l = maplist_new(false);
		if (!l)
			return -ENOMEM;
		p->maps = l;
	}
	if (l->refs > 1 || l->nr == l->cap) {
		uint32_t cap = l->nr == l->cap ? l->cap * 2 : l->cap;
		struct maplist *n = malloc(sizeof(*n) + cap * sizeof(n->m[0]));

		if (!n)
			return -ENOMEM;
		memcpy(n, l, sizeof(*n) + l->nr * sizeof(l->m[0]));
		n->refs = 1;
		n->cap = cap;
		if (l->refs > 1)
			l->refs--;
		else
			free(l);
		p->maps = l = n;
	}
	l->m[l->nr++] = *m;
	return 0;
}

static void proc_free(void *e)
{
	maplist_put(((struct proc *)e)->maps);
}

static void tab_free(struct tab *t, void (*fn)(void *e))
{
	size_t i;

	for (i = 0; fn && i < t->cap; i++)
		if (*tab_key(t, i))
			fn(tab_key(t, i));
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static const char *proc_root(const struct tk_cpu *c)
{
	return c->opts.proc_root && *c->opts.proc_root ? c->opts.proc_root : "/proc";
}

/* Give the symbolizer what we know of (pid, gen) at its first sample. */
static void resolve(struct tk_cpu *c, struct perf_state *st, struct proc *p)
{
	struct maplist *l = p->maps;
	uint32_t i;
	int err = 0;

	p->flags |= P_RESOLVED | P_EVER;
	if (!l || !l->complete || !l->nr)
		err = tk_symbolizer__capture(c->sym, p->pid, p->gen);
	if (l && (l->complete || err)) {
		for (i = 0; i < l->nr; i++)
			tk_symbolizer__add_mapping(c->sym, p->pid, p->gen, l->m[i].start,
						   l->m[i].end, l->m[i].pgoff, l->m[i].path);
	}
	if (err)
		c->losses[TK_LOSS_MAPS_MISSED]++;
}

static struct thread *thread_of(struct perf_state *st, uint32_t pid, uint32_t tid)
{
	struct thread *t;
	char rel[64], buf[32];
	bool fresh;

	t = tab_get(&st->threads, tid, &fresh);
	if (!t || !fresh)
		return t;
	t->pid = pid;
	snprintf(rel, sizeof(rel), "%u/task/%u/comm", pid, tid);
	if (tk_read_file(st->proc_root, rel, buf, sizeof(buf)) > 0) {
		tk_rstrip(buf);
		snprintf(t->comm, sizeof(t->comm), "%s", buf);
	}
	return t;
}

static bool wanted_pid(const struct tk_cpu *c, uint32_t pid)
{
	int i;

	for (i = 0; i < c->opts.nr_pids; i++)
		if ((uint32_t)c->opts.pids[i] == pid)
			return true;
	return false;
}

static int on_sample(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	struct tk_perf_sample s;
	uint32_t nk, nu, frames;
	struct thread *t;
	struct proc *p;
	bool fresh, trunc;

	if (tk_perf_sample__parse(h, &s)) {
		c->losses[TK_LOSS_STACK_ERRORS]++;
		return 0;
	}
	if (!s.tid)
		return 0;				/* idle */
	if (st->skip_tid && s.tid == st->skip_tid)
		return 0;
	if (!c->opts.nr_pids && s.pid == st->self_pid)
		return 0;				/* tracekit itself */
	if (st->filter_pids && !wanted_pid(c, s.pid))
		return 0;

	frames = tk_perf_callchain__split(s.ips, s.nr, st->kbuf, &nk, st->ubuf, &nu);
	trunc = frames >= st->max_stack;
	if (trunc)
		c->losses[TK_LOSS_TRUNCATED]++;

	t = thread_of(st, s.pid, s.tid);
	p = tab_get(&st->procs, s.pid, &fresh);
	if (!p)
		return -ENOMEM;
	if (!(p->flags & P_SEEN)) {
		p->flags |= P_SEEN;
		c->processes++;
	}
	if (nu && !(p->flags & P_RESOLVED))
		resolve(c, st, p);
	c->samples++;
	return tk_stacks__add(c->stacks, s.pid, s.tid, p->gen, t ? t->comm : NULL, st->kbuf, nk,
			      st->ubuf, nu, 1, trunc);
}

/* Body of PERF_RECORD_MMAP2 (the filename follows, then the sample_id trailer). */
struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

static int on_mmap2(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	const struct mmap2_body *b = (const void *)(h + 1);
	size_t room = h->size - sizeof(*h) - sizeof(*b);
	struct map_rec m;
	struct proc *p;
	bool fresh;

	if (h->size < sizeof(*h) + sizeof(*b) + 8 || !memchr(b->filename, '\0', room))
		return 0;
	if (!(b->prot & PROT_EXEC) || b->filename[0] != '/' || !b->pid)
		return 0;	/* anonymous (JIT) code, [vdso]: nothing to open */
	if (st->filter_pids && !wanted_pid(c, b->pid))
		return 0;
	m.start = b->addr;
	m.end = b->addr + b->len;
	m.pgoff = b->pgoff;
	m.path = strset_intern(&st->paths, b->filename);
	if (!m.path)
		return -ENOMEM;
	p = tab_get(&st->procs, b->pid, &fresh);
	if (!p)
		return -ENOMEM;
	if (maplist_add(p, &m))
		return -ENOMEM;
	if (p->flags & P_RESOLVED)
		tk_symbolizer__add_mapping(c->sym, p->pid, p->gen, m.start, m.end, m.pgoff, m.path);
	return 0;
}

struct comm_body {
	uint32_t pid, tid;
	char comm[];
};

static int on_comm(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	const struct comm_body *b = (const void *)(h + 1);
	size_t room = h->size - sizeof(*h) - sizeof(*b);
	struct thread *t;
	struct proc *p;
	bool fresh;

	if (h->size < sizeof(*h) + sizeof(*b) + 8 || !b->tid)
		return 0;
	t = tab_get(&st->threads, b->tid, &fresh);
	if (!t)
		return -ENOMEM;
	t->pid = b->pid;
	snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(room < 16 ? room : 16), b->comm);
	if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC))
		return 0;
	/* exec: a new address space, whose mappings the MMAP2 records that follow give */
	p = tab_get(&st->procs, b->pid, &fresh);
	if (!p)
		return -ENOMEM;
	if (!fresh)
		p->gen++;
	p->flags &= ~P_RESOLVED;
	maplist_put(p->maps);
	p->maps = maplist_new(true);
	return p->maps ? 0 : -ENOMEM;
}

/* Body of PERF_RECORD_FORK and PERF_RECORD_EXIT. */
struct task_body {
	uint32_t pid, ppid;
	uint32_t tid, ptid;
	uint64_t time;
};

static int on_fork(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	const struct task_body *b = (const void *)(h + 1);
	struct thread *t, *pt;
	struct maplist *l = NULL;
	struct proc *p, *pp;
	char comm[16] = "";
	bool fresh, known;

	if (h->size < sizeof(*h) + sizeof(*b) || !b->tid)
		return 0;
	pt = tab_find(&st->threads, b->ptid);
	known = pt != NULL;
	if (pt)
		memcpy(comm, pt->comm, sizeof(comm));
	if (known) {
		t = tab_get(&st->threads, b->tid, &fresh);
		if (!t)
			return -ENOMEM;
		t->pid = b->pid;
		memcpy(t->comm, comm, sizeof(comm));
	}
	if (b->pid == b->ppid)
		return 0;	/* a new thread */
	pp = tab_find(&st->procs, b->ppid);
	if (pp && pp->maps) {
		l = pp->maps;
		l->refs++;
	}
	p = tab_get(&st->procs, b->pid, &fresh);
	if (!p) {
		maplist_put(l);
		return -ENOMEM;
	}
	/* a new process: if this pid was used before, its next generation */
	if (!fresh)
		p->gen++;
	p->flags &= P_EVER;
	maplist_put(p->maps);
	p->maps = l;
	return 0;
}

static int on_exit_rec(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	const struct task_body *b = (const void *)(h + 1);
	struct proc *p;

	if (h->size < sizeof(*h) + sizeof(*b))
		return 0;
	tab_del(&st->threads, b->tid);
	if (b->pid != b->tid)
		return 0;
	p = tab_find(&st->procs, b->pid);
	if (!p)
		return 0;
	maplist_put(p->maps);
	p->maps = NULL;
	/* keep the entry (and its gen) only when a reuse of the pid must not collide */
	if (!(p->flags & P_EVER))
		tab_del(&st->procs, b->pid);
	return 0;
}

static int on_record(struct tk_cpu *c, struct perf_state *st, const struct perf_event_header *h)
{
	const uint64_t *w = (const uint64_t *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(c, st, h);
	case PERF_RECORD_MMAP2:
		return on_mmap2(c, st, h);
	case PERF_RECORD_COMM:
		return on_comm(c, st, h);
	case PERF_RECORD_FORK:
		return on_fork(c, st, h);
	case PERF_RECORD_EXIT:
		return on_exit_rec(c, st, h);
	case PERF_RECORD_LOST:		/* id, lost */
		if (h->size >= sizeof(*h) + 16)
			c->losses[TK_LOSS_PERF_LOST] += w[1];
		return 0;
	case PERF_RECORD_LOST_SAMPLES:	/* lost */
		if (h->size >= sizeof(*h) + 8)
			c->losses[TK_LOSS_PERF_LOST] += w[0];
		return 0;
	default:
		return 0;
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Read every ring up to @limit (a record time), oldest record first across rings. */
static int consume(struct tk_cpu *c, struct perf_state *st, uint64_t limit)
{
	int i, best, err = 0;

	for (i = 0; i < st->nr_cpus; i++) {
		tk_perf_ring__begin(&st->rings[i]);
		st->cur[i].h = tk_perf_ring__next(&st->rings[i]);
		if (st->cur[i].h)
			st->cur[i].time = tk_perf_record__time(st->cur[i].h);
	}
	for (;;) {
		best = -1;
		for (i = 0; i < st->nr_cpus; i++)
			if (st->cur[i].h && (best < 0 || st->cur[i].time < st->cur[best].time))
				best = i;
		if (best < 0 || st->cur[best].time > limit)
			break;
		err = on_record(c, st, st->cur[best].h);
		if (err)
			break;
		tk_perf_ring__advance(&st->rings[best]);
		st->cur[best].h = tk_perf_ring__next(&st->rings[best]);
		if (st->cur[best].h)
			st->cur[best].time = tk_perf_record__time(st->cur[best].h);
	}
	for (i = 0; i < st->nr_cpus; i++)
		tk_perf_ring__end(&st->rings[i]);
	return err;
}

/* ---- events ------------------------------------------------------------------ */

static int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, unsigned long fl)
{
	int fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1, fl | PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
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
		fd = sys_perf_event_open(a, pid, cpu, flags);
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
		if (fd == -EINVAL && a->inherit_thread) {
			a->inherit_thread = 0;
			st->filter_pids = true;
			continue;
		}
		break;
	}
	if (fd < 0)
		return fd;
	st->attr_settled = true;
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

/* Open the event of (@pid, cpu index @ci): it feeds the ring of that CPU. */
static int open_on_cpu(struct tk_cpu *c, struct perf_state *st, pid_t pid, int ci,
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
	if (err)
		return err;
	ev.data.u64 = ci;
	return epoll_ctl(st->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
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

		if (*end || !tid || tid == st->skip_tid || tid_set_has(done, tid))
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

static void perf_free(struct tk_cpu *c)
{
	struct perf_state *st = c->priv;

	if (!st)
		return;
	perf_close_events(st);
	free(st->fds);
	free(st->rings);
	free(st->cur);
	tab_free(&st->procs, proc_free);
	tab_free(&st->threads, NULL);
	strset_free(&st->paths);
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
	st->procs.esz = sizeof(struct proc);
	st->threads.esz = sizeof(struct thread);
	c->priv = st;
	st->proc_root = proc_root(c);
	st->self_pid = getpid();
	st->ring_pages = o && o->ring_pages ? o->ring_pages : DEFAULT_RING_PAGES;
	st->max_stack = max_stack(st->proc_root);

	err = tk_online_cpus(st->cpus, MAX_CPUS);
	if (err <= 0) {
		err = err ? err : -ENODEV;
		goto fail;
	}
	st->nr_cpus = err;
	err = 0;
	c->nr_cpus = st->nr_cpus;
	st->rings = calloc(st->nr_cpus, sizeof(*st->rings));
	st->cur = calloc(st->nr_cpus, sizeof(*st->cur));
	if (!st->rings || !st->cur) {
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
	a->sample_max_stack = st->max_stack;
	a->exclude_callchain_kernel = opts->user_only;
	a->exclude_callchain_user = opts->kernel_only;
	a->exclude_hv = 1;
	a->exclude_idle = 1;
	a->disabled = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	st->clock_mono = true;
	a->watermark = 1;
	a->wakeup_watermark = st->ring_pages * sysconf(_SC_PAGESIZE) / 2;

	if (opts->nr_pids > 0) {
		/* the thread running a process's own profile never samples itself */
		for (i = 0; i < opts->nr_pids; i++)
			if ((uint32_t)opts->pids[i] == st->self_pid)
				st->skip_tid = syscall(SYS_gettid);
		a->inherit = 1;
		a->inherit_thread = !opts->follow_children;
		err = open_pids(c, st);
	} else if (opts->cgroup) {
		err = open_cgroup(c, st);
	} else {
		for (i = 0; i < st->nr_cpus && !err; i++)
			err = open_on_cpu(c, st, -1, i, 0);
	}
	if (err)
		goto fail;
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
	return consume(c, st, st->clock_mono ? mono_ns() - REORDER_NS : UINT64_MAX);
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
	err = consume(c, st, UINT64_MAX);
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
