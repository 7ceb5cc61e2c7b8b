// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the records of the perf rings say, kept for the CPU profile: the
 * processes (their exec generation, their executable mappings, shared with
 * a forked child until either changes them), the threads (their comm), the
 * user stacks unwound here; and the samples, as stacks in c->stacks. What is
 * kept, and why, is told in perf_ring.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/fsutil.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "cpu/perf_ring.h"
#include "runtime/py.h"

/* ---- small tables keyed by a non-zero u32 ------------------------------------ */

/*
 * core/hashmap.h tables of records that start with their u32 key: pid and
 * tid 0 are the idle task, never stored, so a record's first word is never
 * 0. Pointers are valid until the next insert or delete.
 */
static uint64_t tab_hash(uint32_t key)
{
	return tk_hash__u32(key);
}

static uint64_t tab_rec_hash(const void *rec)
{
	return tab_hash(*(const uint32_t *)rec);
}

static bool tab_match(const void *ctx, const void *rec, const void *key)
{
	return *(const uint32_t *)rec == *(const uint32_t *)key;
}

static void *tab_find(const struct tk_hashmap *t, uint32_t key)
{
	return key ? tk_hashmap__find(t, tab_hash(key), tab_match, NULL, &key) : NULL;
}

/* The entry of @key, created zeroed when missing (*@fresh tells); NULL: no memory. */
static void *tab_get(struct tk_hashmap *t, uint32_t key, bool *fresh)
{
	uint32_t *e;
	bool found;

	*fresh = false;
	if (!key)
		return NULL;
	/* the entry is there at almost every sample: look before reserving room */
	e = tk_hashmap__find(t, tab_hash(key), tab_match, NULL, &key);
	if (e)
		return e;
	e = tk_hashmap__insert(t, tab_hash(key), tab_match, NULL, &key, &found);
	if (e && !found) {
		*e = key;
		*fresh = true;
	}
	return e;
}

static void tab_del(struct tk_hashmap *t, uint32_t key)
{
	void *e = tab_find(t, key);

	if (e)
		tk_hashmap__del(t, e);
}

/* ---- processes and threads ------------------------------------------------- */

struct map_rec {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	const char *path;	/* interned */
	struct tk_file_id id;	/* the file's, as the kernel gave it */
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
	P_UNW = 8,		/* unw describes this gen's mappings as the symbolizer has them */
};

struct proc {
	uint32_t pid;		/* key */
	uint32_t gen;
	uint32_t flags;
	struct maplist *maps;	/* NULL: none known */
	struct unw_proc *unw;	/* for the walk, with P_UNW; NULL: no entry (UNW_C_NO_PROC) */
	int py;			/* CPython: 1 found, -1 not, 0 not yet known (asked again) */
	uint32_t py_asked;	/* samples since it was last asked */
};

struct thread {
	uint32_t tid;		/* key */
	uint32_t pid;
	char comm[16];
};

/* A thread switched out (--off-cpu): what its wait is counted under, until it is back. */
struct pend {
	uint32_t tid;		/* key */
	uint32_t pid;
	uint32_t gen;
	uint32_t kind;		/* enum tk_stack_kind */
	uint64_t time;		/* of the switch-out sample; 0: not out */
	uint64_t in_time;	/* of the latest switch-in record taken */
	uint32_t nk, nu;
	bool trunc;
	char comm[16];
	uint64_t *frames;	/* nk kernel, then nu user; malloc'ed, kept for the next wait */
	uint32_t cap;
};

struct tk_perf_records {
	struct tk_cpu *c;
	struct tk_perf_filter f;
	const char *proc_root;
	struct tk_hashmap procs;	/* struct proc */
	struct tk_hashmap threads;	/* struct thread */
	struct tk_hashmap pends;	/* struct pend: threads switched out, by tid */
	struct tk_strset paths;		/* file names of mappings */
	uint64_t lost;			/* LOST records so far, all periods */
	struct tk_unw_store *unw;	/* user stacks are walked here with its rows; NULL: not */
	uint64_t unw_procs;		/* process entries made */
	uint64_t unw_live;		/* process entries held now */
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
	free(((struct proc *)e)->unw);
}

static void tab_free(struct tk_hashmap *t, void (*fn)(void *e))
{
	size_t i = 0;
	void *e;

	while (fn && (e = tk_hashmap__next(t, &i)))
		fn(e);
	tk_hashmap__free(t);
}

/* Give the symbolizer what we know of (pid, gen) at its first sample. */
static void resolve(struct tk_perf_records *st, struct proc *p)
{
	struct tk_cpu *c = st->c;
	struct maplist *l = p->maps;
	uint32_t i;
	bool whole;
	int err = 0;

	p->flags |= P_RESOLVED | P_EVER;
	/*
	 * The unwinder describes only captured processes (tk_unw_store__proc):
	 * when unwinding, a process with a complete list is captured too (the
	 * list then laid over what /proc said), and missed only without it.
	 */
	whole = l && l->complete && l->nr;
	if (!whole || st->unw)
		err = tk_symbolizer__capture(c->sym, p->pid, p->gen);
	if (l && (l->complete || err)) {
		for (i = 0; i < l->nr; i++)
			tk_symbolizer__add_mapping_id(c->sym, p->pid, p->gen, l->m[i].start,
						      l->m[i].end, l->m[i].pgoff, l->m[i].path,
						      &l->m[i].id);
	}
	if (err && !whole)
		c->losses[TK_LOSS_MAPS_MISSED]++;
}

static struct thread *thread_of(struct tk_perf_records *st, uint32_t pid, uint32_t tid)
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

/* ---- user stacks unwound here ---------------------------------------------------- */

static void unw_info_update(struct tk_perf_records *st)
{
	struct tk_unw_info *info = &st->c->unw_info;

	info->in_kernel = false;
	tk_unw_store__stats(st->unw, &info->store);
	info->procs = st->unw_procs;
	info->memory = info->store.cap * sizeof(struct unw_row) +
		       st->unw_live * sizeof(struct unw_proc);
	info->py = tk_symbolizer__py_if_any(st->c->sym);
}

/*
 * A sample that ran Python code (an interpreter-loop frame on its stack):
 * its Python frames live in the process's heap, not in the stack copy, and
 * change right after the sample, so they are not read, only counted, and
 * the profile says so (never a guess dressed as a frame).
 */
static void python_unavailable(struct tk_perf_records *st, struct proc *p, uint32_t n)
{
	struct tk_py *py = tk_symbolizer__py(st->c->sym);
	struct unw_py e;
	uint32_t i;
	int err;

	if (!py || p->py < 0)
		return;
	st->c->unw_info.py = py;
	if (!p->py && (p->py_asked++ & 255) == 0) {
		err = tk_py__detect(py, st->c->sym, p->pid, p->gen, &e, NULL);
		p->py = !err ? 1 : err == -EAGAIN ? 0 : -1;
	}
	if (p->py <= 0)
		return;
	for (i = 0; i < n; i++) {
		if (tk_py__in_loop(py, p->pid, p->gen, st->ubuf[i])) {
			tk_py__count_unavailable(py, 1);
			return;
		}
	}
}

/* The walk's entry of @p's generation, made again after its mappings changed; NULL: none. */
static const struct unw_proc *unw_proc_of(struct tk_perf_records *st, struct proc *p)
{
	if (p->flags & P_UNW)
		return p->unw;
	p->flags |= P_UNW;
	if (!p->unw) {
		p->unw = malloc(sizeof(*p->unw));
		if (!p->unw)
			return NULL;
		st->unw_live++;
	}
	if (tk_unw_store__proc(st->unw, st->c->sym, p->pid, p->gen, p->unw)) {
		free(p->unw);
		p->unw = NULL;
		st->unw_live--;
	} else {
		st->unw_procs++;
	}
	unw_info_update(st);
	return p->unw;
}

static void unw_proc_drop(struct tk_perf_records *st, struct proc *p)
{
	if (p->unw)
		st->unw_live--;
	free(p->unw);
	p->unw = NULL;
	p->flags &= ~P_UNW;
}

struct ustack {
	uint64_t sp;
	uint64_t len;
	const uint8_t *data;
};

/* The sample's copy of the user stack: the bytes from sp up that the kernel could read. */
static int ustack_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct ustack *u = ctx;

	if (addr < u->sp || addr - u->sp > u->len || len > u->len - (addr - u->sp))
		return -EFAULT;
	memcpy(buf, u->data + (addr - u->sp), len);
	return 0;
}

struct code_ctx {
	struct tk_symbolizer *sym;
	uint32_t pid;
};

/* The process's code (a trampoline's bytes), while it lives. */
static int read_code(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct code_ctx *c = ctx;
	struct tk_py *py = tk_symbolizer__py(c->sym);

	return py ? tk_py__read_code(py, c->pid, addr, buf, len) : -ENOMEM;
}

/* Walk the sample's user stack into st->ubuf and count how; the frame count. */
static uint32_t unwind_sample(struct tk_perf_records *st, struct proc *p,
			      const struct tk_perf_sample *s, bool *trunc)
{
	/* the entry first: making it may lay new tables out in the store */
	const struct unw_proc *proc = unw_proc_of(st, p);
	struct ustack u = { s->regs.sp, s->stack_size, s->stack };
	struct code_ctx cc = { st->c->sym, p->pid };
	struct tk_unw_tramp tramp = { .read_code = read_code, .ctx = &cc };
	uint64_t *cnt = st->c->unwind;
	uint32_t causes, frames[2], i;
	const struct unw_row *rows;
	size_t nr_rows;
	int n;

	rows = tk_unw_store__rows(st->unw, &nr_rows);
	tramp.shape = p->py > 0 ? tk_py__tramp(tk_symbolizer__py(st->c->sym), p->pid, p->gen) : 0;
	tramp.frames = 0;
	n = tk_unw__walk_tramp(proc, rows, nr_rows, &s->regs, ustack_read, &u, st->ubuf,
			       TK_MAX_FRAMES, &causes, frames, tramp.shape ? &tramp : NULL);
	cnt[UNW_CNT_PY_TRAMP] += tramp.frames;
	cnt[UNW_CNT_STACKS]++;
	cnt[UNW_CNT_CFI_FRAMES] += frames[0];
	cnt[UNW_CNT_FP_FRAMES] += frames[1];
	for (i = 0; i < UNW_NR_CAUSES; i++)
		if (causes & (1u << i))
			cnt[UNW_CNT_FP + i]++;
	if (causes & UNW_C_DEPTH)
		*trunc = true;
	if (n > 0)
		python_unavailable(st, p, n);
	return n;
}

void tk_perf_records__set_unwind(struct tk_perf_records *r, struct tk_unw_store *store)
{
	r->unw = store;
	r->c->unwinding = store != NULL;
	if (store)
		unw_info_update(r);
}

static bool wanted_pid(const struct tk_cpu *c, uint32_t pid)
{
	int i;

	for (i = 0; i < c->opts.nr_pids; i++)
		if ((uint32_t)c->opts.pids[i] == pid)
			return true;
	return false;
}

/* ---- off-CPU time ----------------------------------------------------------------- */

static void pend_free(void *e)
{
	free(((struct pend *)e)->frames);
}

/*
 * How a sched:sched_switch sample's thread left, from the tracepoint's
 * prev_state: the kernel's report form (__trace_sched_switch_state), one bit
 * per state letter: S 0x1, D 0x2, T 0x4, t 0x8, X 0x10, Z 0x20, P 0x40, I
 * 0x80 (TASK_IDLE, a kernel thread's idle wait: sleeping, as BPF says), and
 * preempted past them (TASK_REPORT_MAX, 0x100 on 4.14 and later) or 0 (R).
 * Without the tracepoint's raw data: blocked (the context-switches event
 * does not tell sleeping from D state), preempted when the SWITCH out
 * record that follows says so.
 */
static uint32_t switch_kind(const struct tk_perf_records *st, const struct tk_perf_sample *s)
{
	uint64_t v = 0;
	uint32_t off = st->f.switch_state_off, size = st->f.switch_state_size;

	if (!size || !s->raw || size > sizeof(v) || off > s->raw_size || size > s->raw_size - off)
		return TK_STACK_OFF_BLOCKED;
	memcpy(&v, s->raw + off, size);		/* little-endian: the low bytes */
	if (v == 0 || v >= 0x100)
		return TK_STACK_OFF_RUNNABLE;
	if (v & 0x2)
		return TK_STACK_OFF_UNINTERRUPTIBLE;
	if (v & 0x81)
		return TK_STACK_OFF_SLEEPING;
	return TK_STACK_OFF_OTHER;
}

/*
 * A switch-out sample: its stacks (in st->kbuf, st->ubuf) are kept for the
 * thread until its switch-in record, with how it left (switch_kind).
 *
 * The rings of the CPUs are merged in time order, but a record can become
 * visible later than the merge's margin (a vCPU of a loaded host stopped
 * while writing it, measured in arm64 TCG guests), and records are lost when
 * a ring fills: a switch-out older than a switch-in already taken for its
 * thread, or a switch-out while the thread's last one still waits for its
 * switch-in, has a wait whose end was not seen. Pairing it with a later
 * switch-in would count the time between as off the CPU (on_spin's waits
 * grew 2.5-fold in one such run): it is not counted, and the loss is
 * (off_cpu_unpaired).
 */
static int switched_out(struct tk_perf_records *st, const struct tk_perf_sample *s, uint32_t gen,
			const char *comm, uint32_t nk, uint32_t nu, bool trunc)
{
	struct pend *w;
	bool fresh;

	w = tab_get(&st->pends, s->tid, &fresh);
	if (!w)
		return -ENOMEM;
	if (fresh) {
		w->time = 0;
		w->in_time = 0;
	} else if (w->time || s->time < w->in_time) {
		st->c->losses[TK_LOSS_OFF_UNPAIRED]++;
		w->time = 0;
		if (s->time < w->in_time)
			return 0;	/* this one's end was taken before it */
	}
	if (w->cap < nk + nu) {
		uint64_t *f = realloc(w->frames, (nk + nu) * sizeof(*f));

		if (!f) {
			tab_del(&st->pends, s->tid);
			return -ENOMEM;
		}
		w->frames = f;
		w->cap = nk + nu;
	}
	memcpy(w->frames, st->kbuf, nk * sizeof(*w->frames));
	memcpy(w->frames + nk, st->ubuf, nu * sizeof(*w->frames));
	w->pid = s->pid;
	w->gen = gen;
	w->kind = switch_kind(st, s);
	w->time = s->time;
	w->nk = nk;
	w->nu = nu;
	w->trunc = trunc;
	snprintf(w->comm, sizeof(w->comm), "%s", comm ? comm : "");
	return 0;
}

/* @w's wait until @now into the table; the thread is on a CPU again. */
static int wait_ends(struct tk_perf_records *st, struct pend *w, uint64_t now)
{
	struct tk_cpu *c = st->c;
	uint64_t ns = now > w->time ? now - w->time : 0;
	uint32_t kind = w->kind;
	int err;

	w->time = 0;
	if (ns < c->opts.off_cpu_min_ns) {
		/* counted, not hidden: under the thread, without stacks */
		kind |= TK_STACK_OFF_SHORT;
		err = tk_stacks__add_off(c->stacks, w->pid, w->tid, w->gen, w->comm, NULL, 0, NULL,
					 0, ns, 1, kind, false);
	} else {
		err = tk_stacks__add_off(c->stacks, w->pid, w->tid, w->gen, w->comm, w->frames,
					 w->nk, w->frames + w->nk, w->nu, ns, 1, kind, w->trunc);
	}
	return err;
}

/*
 * PERF_RECORD_SWITCH (a per-task event) and _SWITCH_CPU_WIDE: the record's
 * own task (its sample_id: pid, tid first) leaves (misc SWITCH_OUT, and
 * _PREEMPT when still runnable) or comes in.
 */
static int on_switch(struct tk_perf_records *st, const struct perf_event_header *h)
{
	bool wide = h->type == PERF_RECORD_SWITCH_CPU_WIDE;
	/* CPU_WIDE: next_prev_pid/tid first; then the sample_id */
	const uint32_t *id = (const uint32_t *)(h + 1) + (wide ? 2 : 0);
	uint64_t time = tk_perf_record__time(h);
	struct pend *w;

	if (h->size < sizeof(*h) + (wide ? 32 : 24))
		return 0;
	w = tab_find(&st->pends, id[1]);
	if (!w)
		return 0;
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		if (w->time && (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT))
			w->kind = TK_STACK_OFF_RUNNABLE;
		return 0;
	}
	if (time > w->in_time)
		w->in_time = time;
	/* a switch-in older than the switch-out waiting: an earlier wait's, late */
	if (!w->time || time < w->time)
		return 0;
	return wait_ends(st, w, time);
}

int tk_perf_records__pending_waits(struct tk_perf_records *r, uint64_t now)
{
	struct pend *w;
	size_t i = 0;
	int err;

	while ((w = tk_hashmap__next(&r->pends, &i))) {
		if (w->time && (err = wait_ends(r, w, now)))
			return err;
	}
	return 0;
}

static int on_sample(struct tk_perf_records *st, const struct perf_event_header *h)
{
	struct tk_cpu *c = st->c;
	struct tk_perf_sample s;
	uint32_t nk, nu, frames;
	struct thread *t;
	struct proc *p;
	bool fresh, trunc;

	if (tk_perf_sample__parse(h, st->unw != NULL, st->f.switch_state_size != 0, &s)) {
		c->losses[TK_LOSS_STACK_ERRORS]++;
		return 0;
	}
	if (!s.tid)
		return 0;				/* idle */
	if (st->f.skip_tid && s.tid == st->f.skip_tid)
		return 0;
	if (st->f.drop_pid && s.pid == st->f.drop_pid)
		return 0;				/* tracekit itself */
	if (st->f.only_pids && !wanted_pid(c, s.pid))
		return 0;

	frames = tk_perf_callchain__split(s.ips, s.nr, st->kbuf, &nk, st->ubuf, &nu);
	trunc = frames >= st->f.max_stack;

	t = thread_of(st, s.pid, s.tid);
	p = tab_get(&st->procs, s.pid, &fresh);
	if (!p)
		return -ENOMEM;
	if (!(p->flags & P_SEEN)) {
		p->flags |= P_SEEN;
		c->processes++;
	}
	/* unwinding here: no user callchain, but registers (none for a kernel thread) */
	if (s.regs_abi == PERF_SAMPLE_REGS_ABI_64 && s.regs.ip) {
		if (!(p->flags & P_RESOLVED))
			resolve(st, p);
		nu = unwind_sample(st, p, &s, &trunc);
	}
	if (nu && !(p->flags & P_RESOLVED))
		resolve(st, p);
	if (trunc)
		c->losses[TK_LOSS_TRUNCATED]++;
	/* the context-switches event's (period 1): a switch-out, its wait counted at its switch-in */
	if (c->opts.off_cpu && s.period == 1)
		return switched_out(st, &s, p->gen, t ? t->comm : NULL, nk, nu, trunc);
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

static int on_mmap2(struct tk_perf_records *st, const struct perf_event_header *h)
{
	struct tk_cpu *c = st->c;
	const struct mmap2_body *b = (const void *)(h + 1);
	size_t room = h->size - sizeof(*h) - sizeof(*b);
	struct map_rec m;
	struct proc *p;
	bool fresh;

	if (h->size < sizeof(*h) + sizeof(*b) + 8 || !memchr(b->filename, '\0', room))
		return 0;
	if (!(b->prot & PROT_EXEC) || b->filename[0] != '/' || !b->pid)
		return 0;	/* anonymous (JIT) code, [vdso]: nothing to open */
	if (st->f.only_pids && !wanted_pid(c, b->pid))
		return 0;
	m.start = b->addr;
	m.end = b->addr + b->len;
	m.pgoff = b->pgoff;
	m.id = (struct tk_file_id){ b->maj, b->min, b->ino };
	m.path = tk_strset__intern(&st->paths, b->filename);
	if (!m.path)
		return -ENOMEM;
	p = tab_get(&st->procs, b->pid, &fresh);
	if (!p)
		return -ENOMEM;
	if (maplist_add(p, &m))
		return -ENOMEM;
	if (p->flags & P_RESOLVED) {
		tk_symbolizer__add_mapping_id(c->sym, p->pid, p->gen, m.start, m.end, m.pgoff,
					      m.path, &m.id);
		p->flags &= ~P_UNW;	/* described again at its next sample */
	}
	return 0;
}

struct comm_body {
	uint32_t pid, tid;
	char comm[];
};

static int on_comm(struct tk_perf_records *st, const struct perf_event_header *h)
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
	if (!fresh) {
		if (p->flags & P_RESOLVED)
			tk_cpu__ended(st->c, p->pid, p->gen);
		p->gen++;
	}
	p->flags &= ~(P_RESOLVED | P_UNW);
	maplist_put(p->maps);
	p->maps = maplist_new(true);
	return p->maps ? 0 : -ENOMEM;
}

/* A thread that exited: no wait of its own follows (its last switch-out was its end). */
static void pend_del(struct tk_perf_records *st, uint32_t tid)
{
	struct pend *w = tab_find(&st->pends, tid);

	if (w) {
		free(w->frames);
		tk_hashmap__del(&st->pends, w);
	}
}

/* Body of PERF_RECORD_FORK and PERF_RECORD_EXIT. */
struct task_body {
	uint32_t pid, ppid;
	uint32_t tid, ptid;
	uint64_t time;
};

static int on_fork(struct tk_perf_records *st, const struct perf_event_header *h)
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

static int on_exit_rec(struct tk_perf_records *st, const struct perf_event_header *h)
{
	const struct task_body *b = (const void *)(h + 1);
	struct proc *p;

	if (h->size < sizeof(*h) + sizeof(*b))
		return 0;
	tab_del(&st->threads, b->tid);
	pend_del(st, b->tid);
	if (b->pid != b->tid)
		return 0;
	p = tab_find(&st->procs, b->pid);
	if (!p)
		return 0;
	maplist_put(p->maps);
	p->maps = NULL;
	unw_proc_drop(st, p);
	if (p->flags & P_RESOLVED)
		tk_cpu__ended(st->c, p->pid, p->gen);
	/* keep the entry (and its gen) only when a reuse of the pid must not collide */
	if (!(p->flags & P_EVER))
		tab_del(&st->procs, b->pid);
	return 0;
}

int tk_perf_records__record(void *ctx, const struct perf_event_header *h)
{
	struct tk_perf_records *st = ctx;
	struct tk_cpu *c = st->c;
	const uint64_t *w = (const uint64_t *)(h + 1);

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(st, h);
	case PERF_RECORD_MMAP2:
		return on_mmap2(st, h);
	case PERF_RECORD_COMM:
		return on_comm(st, h);
	case PERF_RECORD_FORK:
		return on_fork(st, h);
	case PERF_RECORD_EXIT:
		return on_exit_rec(st, h);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return c->opts.off_cpu ? on_switch(st, h) : 0;
	case PERF_RECORD_LOST:		/* id, lost */
		if (h->size >= sizeof(*h) + 16) {
			c->losses[TK_LOSS_PERF_LOST] += w[1];
			st->lost += w[1];
		}
		return 0;
	case PERF_RECORD_LOST_SAMPLES:	/* lost */
		if (h->size >= sizeof(*h) + 8) {
			c->losses[TK_LOSS_PERF_LOST] += w[0];
			st->lost += w[0];
		}
		return 0;
	default:
		return 0;
	}
}

struct tk_perf_records *tk_perf_records__new(struct tk_cpu *c, const struct tk_perf_filter *f)
{
	struct tk_perf_records *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->c = c;
	r->f = *f;
	r->proc_root = c->opts.proc_root && *c->opts.proc_root ? c->opts.proc_root : "/proc";
	r->procs = (struct tk_hashmap)TK_HASHMAP_INIT(struct proc, tab_rec_hash);
	r->threads = (struct tk_hashmap)TK_HASHMAP_INIT(struct thread, tab_rec_hash);
	r->pends = (struct tk_hashmap)TK_HASHMAP_INIT(struct pend, tab_rec_hash);
	return r;
}

void tk_perf_records__free(struct tk_perf_records *r)
{
	if (!r)
		return;
	tab_free(&r->procs, proc_free);
	tab_free(&r->threads, NULL);
	tab_free(&r->pends, pend_free);
	tk_strset__free(&r->paths);
	free(r);
}

uint64_t tk_perf_records__lost(const struct tk_perf_records *r)
{
	return r ? r->lost : 0;
}
