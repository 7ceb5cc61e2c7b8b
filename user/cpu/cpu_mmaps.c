// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Mappings from PERF_RECORD_MMAP2, for processes gone before /proc could be
 * read (see cpu_mmaps.h). One dummy software event per CPU, sampling
 * nothing: its ring carries only the side-band records asked for.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_mmaps.h"
#include "cpu/perf_ring.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/fsutil.h"
#include "core/grow.h"
#include "core/internal.h"
#include "proc/mapfile.h"
#include "proc/maps.h"

#define RING_PAGES 32			/* 128 KiB per CPU: ~1 MB/s of records at 100 ms polls */
/*
 * A gone process's mappings are kept until the BPF ring has been read past
 * its end (tk_cpu_mmaps__drained), however far behind user space is: its
 * events may still be in the ring. This much after its EXIT, as the two
 * streams are not written at the same instant.
 */
#define MARGIN_NS (1000000000LL)

struct mm_map {
	uint64_t start, end, pgoff;
	const char *path;		/* interned */
	struct tk_file_id id;		/* the file's, as the kernel or maps gives it */
};

/*
 * One address space of a process: what a fork copied or an exec began (at
 * @since), and the mappings added since.
 */
struct mm_image {
	uint64_t since;			/* CLOCK_MONOTONIC ns of its fork or exec */
	size_t nr, cap;
	struct mm_map *m;
	bool complete;			/* began during the capture: every mapping is here */
};

/*
 * A process, by pid: its current image and the one before (a shell's fork
 * runs as the shell until it execs the command; both have samples).
 */
struct mm_proc {
	uint32_t pid;			/* key; never 0 */
	uint8_t gone;
	uint8_t pad[3];
	uint64_t gone_ns;		/* CLOCK_MONOTONIC of its EXIT */
	struct mm_image cur, prev;
};

struct gone_rec {
	uint32_t pid;
	uint64_t when;
};

struct tk_cpu_mmaps {
	struct tk_perf_ring *rings;
	int nr;
	uint32_t self;
	struct tk_hashmap procs;	/* struct mm_proc */
	struct tk_strset paths;
	uint64_t lost;
	uint64_t safe_before;		/* the BPF ring is handled up to events this old */
	/* gone processes in the order they went: a FIFO of their pids */
	struct gone_rec *gone;
	size_t gone_head, gone_n, gone_cap;
};

static uint64_t proc_rec_hash(const void *rec)
{
	return tk_hash__u32(*(const uint32_t *)rec);
}

static bool proc_match(const void *ctx, const void *rec, const void *key)
{
	return *(const uint32_t *)rec == *(const uint32_t *)key;
}

static struct mm_proc *proc_find(struct tk_cpu_mmaps *m, uint32_t pid)
{
	return pid ? tk_hashmap__find(&m->procs, tk_hash__u32(pid), proc_match, NULL, &pid) : NULL;
}

/* @pid's entry, made empty when missing; NULL: no memory (or pid 0). */
static struct mm_proc *proc_get(struct tk_cpu_mmaps *m, uint32_t pid)
{
	struct mm_proc *p = proc_find(m, pid);
	bool found;

	if (p || !pid)
		return p;
	p = tk_hashmap__insert(&m->procs, tk_hash__u32(pid), proc_match, NULL, &pid, &found);
	if (p && !found) {
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	}
	return p;
}

static void proc_del(struct tk_cpu_mmaps *m, struct mm_proc *p)
{
	free(p->cur.m);
	free(p->prev.m);
	tk_hashmap__del(&m->procs, p);
}

static int maps_add(struct mm_image *im, const struct mm_map *x)
{
	if (tk_grow((void **)&im->m, &im->cap, im->nr + 1, sizeof(*im->m), 16))
		return -ENOMEM;
	im->m[im->nr++] = *x;
	return 0;
}

/*
 * A new image begins at @since (an exec; a fork under a pid used before),
 * empty: the one before is kept for samples taken before @since, and the
 * one before that goes.
 */
static void image_begin(struct mm_proc *p, uint64_t since, bool complete)
{
	free(p->prev.m);
	p->prev = p->cur;
	p->cur = (struct mm_image){ .since = since, .complete = complete };
	p->gone = 0;
}

/* ---- the records ---------------------------------------------------------------- */

struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

struct comm_body {
	uint32_t pid, tid;
	char comm[];
};

struct task_body {
	uint32_t pid, ppid;
	uint32_t tid, ptid;
	uint64_t time;
};

static int on_mmap2(struct tk_cpu_mmaps *m, const struct perf_event_header *h)
{
	const struct mmap2_body *b = (const void *)(h + 1);
	struct mm_map x;
	struct mm_proc *p;

	if (h->size < sizeof(*h) + sizeof(*b) + 8 ||
	    !memchr(b->filename, '\0', h->size - sizeof(*h) - sizeof(*b)))
		return 0;
	/* anonymous (JIT) code and [vdso] have no file to open */
	if (!(b->prot & PROT_EXEC) || b->filename[0] != '/' || !b->pid || b->pid == m->self)
		return 0;
	x.start = b->addr;
	x.end = b->addr + b->len;
	x.pgoff = b->pgoff;
	x.id = (struct tk_file_id){ b->maj, b->min, b->ino };
	x.path = tk_strset__intern(&m->paths, b->filename);
	p = x.path ? proc_get(m, b->pid) : NULL;
	return p ? maps_add(&p->cur, &x) : -ENOMEM;
}

static int on_comm(struct tk_cpu_mmaps *m, const struct perf_event_header *h)
{
	const struct comm_body *b = (const void *)(h + 1);
	struct mm_proc *p;

	if (h->size < sizeof(*h) + sizeof(*b) || !(h->misc & PERF_RECORD_MISC_COMM_EXEC))
		return 0;
	/* exec: a new address space, which the MMAP2 records that follow describe */
	p = proc_get(m, b->pid);
	if (!p)
		return -ENOMEM;
	image_begin(p, tk_perf_record__time(h), true);
	return 0;
}

struct from_proc_ctx {
	struct tk_cpu_mmaps *m;
	struct mm_image *im;
};

static int from_proc_map(const struct tk_map *x, void *arg)
{
	struct from_proc_ctx *c = arg;
	struct mm_map mm;

	if (x->perms[2] != 'x' || !tk_map__is_file(x) || x->end <= x->start)
		return 0;
	mm.start = x->start;
	mm.end = x->end;
	mm.pgoff = x->offset;
	mm.id = tk_map__id(x);
	mm.path = tk_strset__intern(&c->m->paths, x->path);
	return mm.path ? maps_add(c->im, &mm) : -ENOMEM;
}

/*
 * A parent older than the capture forked (a shell starting a command): its
 * mappings from PID/maps now, kept current by its MMAP2 records from then
 * on, so that this child and its next ones are known. NULL when it is gone.
 */
static struct mm_proc *from_proc(struct tk_cpu_mmaps *m, uint32_t pid)
{
	struct from_proc_ctx c = { .m = m };
	char rel[32], *text;
	struct mm_proc *p;
	size_t len;
	int err;

	snprintf(rel, sizeof(rel), "%u/maps", pid);
	if (tk_read_file_alloc("/proc", rel, 64 << 20, &text, &len))
		return NULL;
	p = proc_get(m, pid);
	if (p) {
		p->cur.complete = true;
		c.im = &p->cur;
		err = tk_maps__parse(text, from_proc_map, &c);
		if (err && err != -ENOMEM)
			p->cur.nr = 0;	/* unreadable: nothing rather than part */
	}
	free(text);
	return p;
}

static int on_fork(struct tk_cpu_mmaps *m, const struct perf_event_header *h)
{
	const struct task_body *b = (const void *)(h + 1);
	struct mm_proc *pp, *p;
	size_t i;

	if (h->size < sizeof(*h) + sizeof(*b) || b->pid == b->ppid || !b->pid)
		return 0;	/* a new thread shares its process's entry */
	pp = proc_find(m, b->ppid);
	if (!pp && b->ppid != m->self)
		pp = from_proc(m, b->ppid);
	p = proc_get(m, b->pid);
	if (!p)
		return -ENOMEM;
	/*
	 * The child's address space is a copy of its parent's (found again: the
	 * insert may have moved it); a parent gone before it could be read has
	 * none here, and then neither has the child, rather than a wrong one.
	 */
	pp = proc_find(m, b->ppid);
	image_begin(p, b->time, pp && pp->cur.complete);
	for (i = 0; pp && pp->cur.complete && i < pp->cur.nr; i++)
		if (maps_add(&p->cur, &pp->cur.m[i]))
			return -ENOMEM;
	free(p->prev.m);	/* a new process: nothing of the pid's last one applies */
	p->prev = (struct mm_image){ 0 };
	return 0;
}

static int on_exit_rec(struct tk_cpu_mmaps *m, const struct perf_event_header *h)
{
	const struct task_body *b = (const void *)(h + 1);
	struct mm_proc *p;

	if (h->size < sizeof(*h) + sizeof(*b) || b->pid != b->tid)
		return 0;
	p = proc_find(m, b->pid);
	if (!p || p->gone)
		return 0;
	if (m->gone_n == m->gone_cap) {
		size_t cap = m->gone_cap ? 2 * m->gone_cap : 256, i;
		struct gone_rec *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (i = 0; i < m->gone_n; i++)
			n[i] = m->gone[(m->gone_head + i) % m->gone_cap];
		free(m->gone);
		m->gone = n;
		m->gone_cap = cap;
		m->gone_head = 0;
	}
	p->gone = 1;
	p->gone_ns = b->time;
	m->gone[(m->gone_head + m->gone_n++) % m->gone_cap] =
		(struct gone_rec){ .pid = p->pid, .when = p->gone_ns };
	return 0;
}

/* Forget what went before the BPF ring was last read whole (and was not a pid used again since). */
static void prune(struct tk_cpu_mmaps *m)
{
	while (m->gone_n) {
		struct gone_rec *g = &m->gone[m->gone_head];
		struct mm_proc *p;

		if (g->when + MARGIN_NS >= m->safe_before)
			break;
		p = proc_find(m, g->pid);
		if (p && p->gone && p->gone_ns == g->when)
			proc_del(m, p);
		m->gone_head = (m->gone_head + 1) % m->gone_cap;
		m->gone_n--;
	}
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct tk_cpu_mmaps *m = ctx;
	const uint64_t *w = (const uint64_t *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_MMAP2:
		return on_mmap2(m, h);
	case PERF_RECORD_COMM:
		return on_comm(m, h);
	case PERF_RECORD_FORK:
		return on_fork(m, h);
	case PERF_RECORD_EXIT:
		return on_exit_rec(m, h);
	case PERF_RECORD_LOST:		/* id, lost */
		if (h->size >= sizeof(*h) + 16)
			m->lost += w[1];
		return 0;
	default:
		return 0;
	}
}

/*
 * Every ring, oldest record first across them all: a process's exec and its
 * mappings are often written on different CPUs, and an exec read after the
 * mappings that follow it would clear them.
 */
int tk_cpu_mmaps__read(struct tk_cpu_mmaps *m)
{
	int err = tk_perf_rings__consume(m->rings, m->nr, UINT64_MAX, on_record, m);

	prune(m);
	return err;
}

int tk_cpu_mmaps__give(struct tk_cpu_mmaps *m, struct tk_symbolizer *s, uint32_t pid,
		       uint32_t gen, uint64_t when)
{
	const struct mm_image *im;
	struct mm_proc *p;
	size_t i;

	/* the records of everything before the sample that made this call are in the rings */
	tk_cpu_mmaps__read(m);
	p = proc_find(m, pid);
	if (!p)
		return -ENOENT;
	/* the image the sample ran in; an incomplete one (never forked or exec'd here) is kept */
	im = when >= p->cur.since ? &p->cur : when >= p->prev.since ? &p->prev : NULL;
	if (!im || !im->nr)
		return -ENOENT;
	for (i = 0; i < im->nr; i++)
		tk_symbolizer__add_mapping_id(s, pid, gen, im->m[i].start, im->m[i].end,
					      im->m[i].pgoff, im->m[i].path, &im->m[i].id);
	return 0;
}

void tk_cpu_mmaps__drained(struct tk_cpu_mmaps *m, uint64_t before)
{
	if (m && before > m->safe_before)
		m->safe_before = before;
}

void tk_cpu_mmaps__forget(struct tk_cpu_mmaps *m, uint32_t pid)
{
	struct mm_proc *p;

	if (!m)
		return;
	tk_cpu_mmaps__read(m);
	p = proc_find(m, pid);
	/* its EXIT read: not a later process with the pid (whose records may be read already) */
	if (p && p->gone)
		proc_del(m, p);
}

uint64_t tk_cpu_mmaps__lost(const struct tk_cpu_mmaps *m)
{
	return m ? m->lost : 0;
}

uint64_t tk_cpu_mmaps__procs(const struct tk_cpu_mmaps *m)
{
	return m ? m->procs.used : 0;
}

struct tk_cpu_mmaps *tk_cpu_mmaps__open(const int *cpus, int nr_cpus, uint32_t self)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		/* every record ends with pid/tid, time, cpu (tk_perf_record__time) */
		.sample_id_all = 1,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
		/* the clock of bpf_ktime_get_ns(), which stamps the BPF ring's events */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		.watermark = 1,
		.wakeup_watermark = 1 << 30,	/* never woken: read at every poll */
	};
	struct tk_cpu_mmaps *m = calloc(1, sizeof(*m));
	int i, err = 0;

	if (!m)
		return NULL;
	m->self = self;
	m->procs = (struct tk_hashmap)TK_HASHMAP_INIT(struct mm_proc, proc_rec_hash);
	m->rings = calloc(nr_cpus, sizeof(*m->rings));
	if (!m->rings) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < nr_cpus; i++) {
		int fd = tk_perf_event_open(&a, -1, cpus[i], 0);

		if (fd < 0) {
			err = fd;
			goto fail;
		}
		err = tk_perf_ring__map(&m->rings[i], fd, RING_PAGES);
		if (err) {
			close(fd);
			goto fail;
		}
		m->nr++;
	}
	return m;
fail:
	tk_cpu_mmaps__free(m);
	errno = -err;
	return NULL;
}

void tk_cpu_mmaps__free(struct tk_cpu_mmaps *m)
{
	size_t i = 0;
	struct mm_proc *p;
	int r;

	if (!m)
		return;
	for (r = 0; r < m->nr; r++) {
		int fd = m->rings[r].fd;

		tk_perf_ring__unmap(&m->rings[r]);
		close(fd);
	}
	free(m->rings);
	while ((p = tk_hashmap__next(&m->procs, &i))) {
		free(p->cur.m);
		free(p->prev.m);
	}
	tk_hashmap__free(&m->procs);
	tk_strset__free(&m->paths);
	free(m->gone);
	free(m);
}
