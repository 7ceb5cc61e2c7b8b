// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks: the snapshot. Chooses the backend (the sleepable task iterator,
 * else the plain one, else /proc), reads every thread in scope into raw records,
 * walks each user stack with the CFI rows of its process's objects (the copy the
 * iterator made, then /proc/PID/mem on demand: killable, unlike process_vm_readv),
 * names frames, derives the wait channel and what the thread waits for, and with
 * several snapshots says which threads moved. Nothing is stopped or signalled.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <execinfo.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/fsutil.h"
#include "core/opts.h"
#include "core/session.h"
#include "stacks/stacks_int.h"
#include "sym/symbolize.h"
#include "unwind/unwind.h"

#define STK_PAGES 8			/* pages of /proc/PID/mem one walk keeps */
#define STK_UNWIND_MEM (16u << 20)

struct stk_proc {
	uint32_t pid;
	int memfd;			/* /proc/PID/mem, -1 none */
	bool captured, have_unw;
	struct unw_proc unw;
	struct stk_fdcache fds;		/* its pipes, for this snapshot */
};

struct stk_result {
	struct tk_stacks_result pub;
	struct tk_stacks_opts o;
	const char *proc_root;
	struct tk_symbolizer *sym;
	struct tk_unw_store *store;
	struct stk_iter *iter;
	struct tk_log log;
	struct stk_proc *procs;
	size_t nprocs, procs_cap;
	struct tk_stacks_snapshot *snaps;
	size_t nsnaps;
	uint64_t loss[STK_L__COUNT];
	struct tk_stacks_loss losses[STK_L__COUNT];
	char *notes[8];
	size_t nr_notes;
	char reason[384];
	bool sample_said;
	uint64_t sampled;		/* threads on a CPU sampled */
	void **allocs;
	size_t nallocs, allocs_cap;
};

const char *stk_loss__name(enum stk_loss l)
{
	static const char *const n[STK_L__COUNT] = {
		[STK_L_PROCESS_GONE] = "process_gone",
		[STK_L_THREAD_GONE] = "thread_gone",
		[STK_L_RUNNING_NO_STACK] = "running_no_stack",
		[STK_L_TORN] = "moved_during_capture",
		[STK_L_USER_READ_FAILED] = "stack_read_failed",
		[STK_L_KSTACK_DENIED] = "kernel_stack_denied",
		[STK_L_MMAP_LOCK_BUSY] = "mmap_lock_busy",
		[STK_L_UNWIND_PARTIAL] = "unwind_partial",
		[STK_L_UNSYMBOLIZED] = "unsymbolized_frames",
		[STK_L_SEQ_RETRIES] = "seq_retries",
	};

	return l < STK_L__COUNT ? n[l] : NULL;
}

struct stk_raw *stk_raws__add(struct stk_raws *r)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct stk_raw *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->v = v;
		r->cap = cap;
	}
	memset(&r->v[r->n], 0, sizeof(r->v[0]));
	return &r->v[r->n++];
}

void stk_raws__clear(struct stk_raws *r)
{
	for (size_t i = 0; i < r->n; i++)
		stk_kframes_free(r->v[i].kf, r->v[i].nk);
	r->n = 0;
}

/* Memory that lives as long as the result. */
static void *keep(struct stk_result *r, void *p)
{
	if (!p)
		return NULL;
	if (r->nallocs == r->allocs_cap) {
		size_t cap = r->allocs_cap ? r->allocs_cap * 2 : 256;
		void **v = realloc(r->allocs, cap * sizeof(*v));

		if (!v) {
			free(p);
			return NULL;
		}
		r->allocs = v;
		r->allocs_cap = cap;
	}
	r->allocs[r->nallocs++] = p;
	return p;
}

static char *keep_str(struct stk_result *r, const char *s)
{
	return s && *s ? keep(r, strdup(s)) : NULL;
}

static void note(struct stk_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct stk_result *r, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (r->nr_notes == sizeof(r->notes) / sizeof(r->notes[0]))
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0)
		r->notes[r->nr_notes++] = s;
	va_end(ap);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- the scope --------------------------------------------------------------------------- */

struct pidset {
	uint32_t *v;
	size_t n, cap;
};

static int pidset_add(struct pidset *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == pid)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint32_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = pid;
	return 0;
}

static struct pidset *cg_set;
static int cg_err;

static int cg_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char file[PATH_MAX], *text = NULL, *p, *end;
	size_t len;

	if (flag != FTW_D)
		return 0;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	if (tk_read_file_alloc("/", file + 1, 16 << 20, &text, &len))
		return 0;
	for (p = text; *p; p = end) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v && v <= UINT32_MAX && pidset_add(cg_set, v)) {
			cg_err = -ENOMEM;
			free(text);
			return 1;
		}
	}
	free(text);
	return 0;
}

/* The processes of cgroup directory @dir and its descendants (cgroup.procs). */
static int cgroup_pids(const char *dir, struct pidset *out, char *why, size_t why_sz)
{
	char real[PATH_MAX];
	struct stat st;

	int err;

	if (!realpath(dir, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, why_sz, "no cgroup directory %s", dir);
		return -ENOENT;
	}
	/* on the cgroup2 file system itself: its cgroup.procs files are the kernel's */
	err = tk_session__check_cgroup(real, why, why_sz);
	if (err)
		return err;
	cg_set = out;
	cg_err = 0;
	nftw(real, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	cg_set = NULL;
	return cg_err;
}

static int all_pids(const char *proc_root, struct pidset *out)
{
	DIR *d = opendir(proc_root);
	struct dirent *e;
	int err = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && !err) {
		char *end;
		unsigned long v = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && !*end && v <= UINT32_MAX)
			err = pidset_add(out, v);
	}
	closedir(d);
	return err;
}

/* ---- processes ------------------------------------------------------------------------- */

static struct stk_proc *proc_of(struct stk_result *r, uint32_t pid)
{
	struct stk_proc *p;
	char path[64];

	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	if (r->nprocs == r->procs_cap) {
		size_t cap = r->procs_cap ? r->procs_cap * 2 : 16;
		struct stk_proc *v = realloc(r->procs, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->procs = v;
		r->procs_cap = cap;
	}
	p = &r->procs[r->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "%s/%u/mem", r->proc_root, pid);
	p->memfd = open(path, O_RDONLY | O_CLOEXEC);
	return p;
}

/* Capture the process's maps and lay out its unwind rows, once per take. */
static void proc_capture(struct stk_result *r, struct stk_proc *p)
{
	if (p->captured)
		return;
	p->captured = true;
	if (tk_symbolizer__capture(r->sym, p->pid, 0))
		return;
	p->have_unw = !tk_unw_store__proc(r->store, r->sym, p->pid, 0, &p->unw);
}

/* ---- reading a stack image --------------------------------------------------------------- */

struct img {
	const uint8_t *copy;		/* the iterator's copy of [sp, sp + len) */
	uint64_t sp, len;
	int memfd;
	uint64_t page[STK_PAGES];
	uint8_t buf[STK_PAGES][4096];
	int npages;
	bool failed;
};

static int img_page(struct img *m, uint64_t pg)
{
	for (int i = 0; i < m->npages; i++)
		if (m->page[i] == pg)
			return i;
	if (m->npages == STK_PAGES || m->memfd < 0)
		return -1;
	if (pread(m->memfd, m->buf[m->npages], 4096, pg) != 4096) {
		m->failed = true;
		return -1;
	}
	m->page[m->npages] = pg;
	return m->npages++;
}

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *m = ctx;
	uint8_t *out = buf;

	if (m->copy && addr >= m->sp && addr - m->sp <= m->len && len <= m->len - (addr - m->sp)) {
		memcpy(buf, m->copy + (addr - m->sp), len);
		return 0;
	}
	while (len) {
		uint64_t pg = addr & ~4095ULL, off = addr - pg, n = 4096 - off;
		int i = img_page(m, pg);

		if (i < 0)
			return -EFAULT;
		if (n > len)
			n = len;
		memcpy(out, m->buf[i] + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

struct mem_ctx {
	int memfd;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem_ctx *m = ctx;

	if (m->memfd < 0)
		return -EBADF;
	return pread(m->memfd, buf, len, addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- one thread ---------------------------------------------------------------------------- */

static void name_frame(struct stk_result *r, struct tk_stacks_frame *f, uint32_t pid,
		       bool kernel, bool ret)
{
	struct tk_sym_frame sf;
	uint64_t look = ret && f->addr ? f->addr - 1 : f->addr;
	int err;

	memset(&sf, 0, sizeof(sf));
	err = kernel ? tk_symbolizer__kernel(r->sym, look, &sf) :
		       tk_symbolizer__user(r->sym, pid, 0, look, &sf);
	f->kernel = kernel;
	f->function = err ? NULL : sf.function;
	f->module = sf.module;
	f->offset = sf.module ? sf.module_offset + (look != f->addr) : 0;
	if (!f->function)
		r->loss[STK_L_UNSYMBOLIZED]++;
}

static void kernel_frames(struct stk_result *r, struct stk_raw *x, struct tk_stacks_thread *t)
{
	struct tk_stacks_frame *f;

	if (!x->nk) {
		if (x->kstack_err == -EACCES || x->kstack_err == -EPERM)
			r->loss[STK_L_KSTACK_DENIED]++;
		return;
	}
	f = keep(r, calloc(x->nk, sizeof(*f)));
	if (!f)
		return;
	for (uint32_t i = 0; i < x->nk; i++) {
		f[i].addr = x->kf[i].addr;
		f[i].kernel = true;
		if (x->kf[i].name) {
			f[i].function = keep(r, x->kf[i].name);
			f[i].module = "[kernel.kallsyms]";
			x->kf[i].name = NULL;
		} else {
			name_frame(r, &f[i], 0, true, i > 0);
		}
	}
	t->kframes = f;
	t->nr_kframes = x->nk;
	/*
	 * The wait channel, as get_wchan() finds it: the first frame outside the scheduler's
	 * and the locks' text. bpf_get_task_stack (stack_trace_save_tsk) already leaves those
	 * frames out of a task's stack (consume_entry_nosched): its first frame.
	 */
	if (!x->wchan[0] && x->kf[0].addr && t->state != 'R' && f[0].function)
		snprintf(x->wchan, sizeof(x->wchan), "%s", f[0].function);
}

static void user_frames(struct stk_result *r, struct stk_proc *p, struct stk_raw *x,
			struct tk_stacks_thread *t)
{
	uint64_t ips[UNW_WALK_FRAMES];
	struct tk_stacks_frame *f;
	const struct unw_row *rows;
	struct tk_unw_regs regs = { .ip = x->ip, .sp = x->sp, .bp = x->bp };
	struct img *m;
	size_t nr_rows;
	uint32_t frames[2];
	int n;

	if (x->kthread)
		return;
	if (x->pid == (uint32_t)getpid() && x->tid == (uint32_t)gettid()) {
		/* the thread taking the snapshot: its own stack, by glibc's unwinder */
		void *self[STK_MAX_UFRAMES];

		n = backtrace(self, STK_MAX_UFRAMES);
		for (int i = 0; i < n; i++)
			ips[i] = (uint64_t)(uintptr_t)self[i];
		t->syscall = -2;
		t->syscall_name = NULL;
		t->user_note = "the thread taking the snapshot";
		t->user_whole = n > 0 && n < STK_MAX_UFRAMES;
		x->have_regs = false;
		goto named;
	}
	if (!x->have_regs) {
		if (x->on_cpu || x->nr == -2 || x->state == 'R') {
			t->user_note = "running on a CPU: no saved registers";
			r->loss[STK_L_RUNNING_NO_STACK]++;
		} else {
			t->user_note = "no saved user registers";
		}
		return;
	}
	if (x->mmap_busy && !x->copy) {
		r->loss[STK_L_MMAP_LOCK_BUSY]++;
		t->user_note = "its mmap_lock is held for writing: stack not read";
		return;
	}
	proc_capture(r, p);
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->copy = x->copy;
	m->len = x->copy_len;
	m->sp = x->sp;
	m->memfd = p->memfd;
	rows = tk_unw_store__rows(r->store, &nr_rows);
	n = tk_unw__walk(p->have_unw ? &p->unw : NULL, rows, nr_rows, &regs, img_read, m, ips,
			 STK_MAX_UFRAMES, &t->unwind_causes, frames);
	if (m->failed && n <= 1)
		r->loss[STK_L_USER_READ_FAILED]++;
	free(m);
	if (n <= 0)
		return;
	t->user_whole = t->unwind_causes & UNW_C_END;
	if (!t->user_whole)
		r->loss[STK_L_UNWIND_PARTIAL]++;
named:
	proc_capture(r, p);
	f = keep(r, calloc(n, sizeof(*f)));
	if (!f)
		return;
	for (int i = 0; i < n; i++) {
		f[i].addr = ips[i];
		name_frame(r, &f[i], x->pid, false, i > 0);
	}
	t->uframes = f;
	t->nr_uframes = n;
}

static void wait_of(struct stk_result *r, struct stk_proc *p, const struct stk_raw *x,
		    const struct stk_raw *all, size_t nall, struct tk_stacks_thread *t)
{
	const char *callers[4];
	struct stk_wait_out out;
	struct mem_ctx mc = { .memfd = p ? p->memfd : -1 };
	struct stk_wait_in in = {
		.proc_root = r->proc_root, .pid = x->pid, .nr = x->nr, .args = x->args,
		.callers = callers, .mem = mem_read, .mem_ctx = &mc, .fds = p ? &p->fds : NULL,
	};
	char text[256];

	for (uint32_t i = 0; i < t->nr_uframes && in.nr_callers < 4; i++)
		callers[in.nr_callers++] = t->uframes[i].function;
	stk_wait__describe(&in, &out);
	if (!out.text[0])
		return;
	if (out.holder_ns_tid) {
		const struct stk_raw *h = NULL;

		for (size_t i = 0; i < nall && !h; i++)
			if (all[i].pid == x->pid && all[i].ns_tid == out.holder_ns_tid)
				h = &all[i];
		if (h) {
			t->holder_tid = h->tid;
			snprintf(text, sizeof(text), "%s held by tid %u (%s)", out.text, h->tid,
				 h->comm);
		} else if (out.weak) {
			snprintf(text, sizeof(text), "%s", out.alt);
		} else {
			snprintf(text, sizeof(text), "%s held by tid %u (not a thread of this "
				 "process, or not read)", out.text, out.holder_ns_tid);
		}
		t->wait = keep_str(r, text);
	} else {
		t->wait = keep_str(r, out.text);
	}
}

static int cmp_raw(const void *a, const void *b)
{
	const struct stk_raw *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

#define STK_ONCPU_MAX 256
#define STK_ONCPU_MS 50

/* The threads on a CPU: one perf sample each, their registers and stack from it. */
static struct stk_oncpu *sample_running(struct stk_result *r, struct stk_raws *raws, size_t *nq)
{
	struct stk_oncpu *q;
	size_t n = 0, got = 0;
	int err;

	*nq = 0;
	if (r->o.no_user || r->o.no_sample)
		return NULL;
	q = calloc(STK_ONCPU_MAX, sizeof(*q));
	if (!q)
		return NULL;
	for (size_t i = 0; i < raws->n && n < STK_ONCPU_MAX; i++) {
		struct stk_raw *x = &raws->v[i];

		/* a runnable thread that ran while it was read: its copy may mix two stacks */
		if (x->torn && x->state == 'R' && x->have_regs && !x->kthread)
			x->have_regs = false;
		if (x->kthread || x->have_regs || !(x->on_cpu || x->nr == -2 || x->state == 'R') ||
		    (x->pid == (uint32_t)getpid() && x->tid == (uint32_t)gettid()))
			continue;
		q[n++].tid = x->tid;
	}
	if (!n)
		goto out;
	err = stk_oncpu__sample(q, n, STK_ONCPU_MS);
	if (err && !r->sample_said) {
		r->sample_said = true;
		note(r, "threads on a CPU not sampled: perf_event_open: %s", strerror(-err));
	}
	for (size_t i = 0, k = 0; i < raws->n && k < n; i++) {
		struct stk_raw *x = &raws->v[i];

		if (x->tid != q[k].tid)
			continue;
		if (q[k].ok) {
			x->have_regs = true;
			x->sampled = true;
			x->ip = q[k].ip;
			x->sp = q[k].sp;
			x->bp = q[k].bp;
			x->copy = q[k].stack;
			x->copy_len = q[k].len;
			x->nr = -2;
			x->torn = false;
			got++;
		}
		k++;
	}
	r->sampled += got;
out:
	*nq = n;
	return q;
}

static int build(struct stk_result *r, struct stk_raws *raws, struct tk_stacks_snapshot *s)
{
	struct tk_stacks_thread *th;
	struct stk_oncpu *q;
	size_t nq;
	int err = 0;

	q = sample_running(r, raws, &nq);
	qsort(raws->v, raws->n, sizeof(raws->v[0]), cmp_raw);
	th = keep(r, calloc(raws->n ? raws->n : 1, sizeof(*th)));
	if (!th) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < raws->n; i++) {
		struct stk_raw *x = &raws->v[i];
		struct tk_stacks_thread *t = &th[i];
		struct stk_proc *p = x->kthread ? NULL : proc_of(r, x->pid);

		if (!x->kthread && !p) {
			err = -ENOMEM;
			goto out;
		}
		t->pid = x->pid;
		t->tid = x->tid;
		t->ns_tid = x->ns_tid;
		memcpy(t->comm, x->comm, sizeof(t->comm));
		t->state = x->state;
		t->on_cpu = x->on_cpu;
		t->syscall = x->nr;
		t->syscall_name = stk_syscall_name(x->nr);
		memcpy(t->args, x->args, sizeof(t->args));
		t->off_cpu_ns = x->off_cpu_ns;
		t->switches = x->switches;
		t->torn = x->torn;
		r->loss[STK_L_TORN] += x->torn;
		if (!r->o.no_kernel)
			kernel_frames(r, x, t);
		if (!r->o.no_user && p)
			user_frames(r, p, x, t);
		t->wchan = keep_str(r, x->wchan);
		if (x->have_regs && t->state != 'R')
			wait_of(r, p, x, raws->v, raws->n, t);
	}
	s->threads = th;
	s->nr_threads = raws->n;
out:
	for (size_t i = 0; i < nq; i++)
		free(q[i].stack);
	free(q);
	/* a process's fds may change by the next snapshot */
	for (size_t i = 0; i < r->nprocs; i++)
		stk_fdcache__free(&r->procs[i].fds);
	return err;
}

/* ---- several snapshots --------------------------------------------------------------------- */

static bool same_frames(const struct tk_stacks_frame *a, uint32_t na,
			const struct tk_stacks_frame *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].addr != b[i].addr ||
		    (!a[i].addr && (!a[i].function || !b[i].function ||
				    strcmp(a[i].function, b[i].function))))
			return false;
	return true;
}

static const struct tk_stacks_thread *find_thread(const struct tk_stacks_snapshot *s,
						  uint32_t pid, uint32_t tid)
{
	size_t lo = 0, hi = s->nr_threads;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct tk_stacks_thread *t = &s->threads[mid];

		if (t->pid == pid && t->tid == tid)
			return t;
		if (t->pid < pid || (t->pid == pid && t->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A thread of @s moved since @first: it ran, or its state or a stack changed. */
static void mark_moved(const struct tk_stacks_snapshot *first, struct tk_stacks_snapshot *s)
{
	struct tk_stacks_thread *th = (struct tk_stacks_thread *)s->threads;

	for (size_t i = 0; i < s->nr_threads; i++) {
		const struct tk_stacks_thread *a = find_thread(first, th[i].pid, th[i].tid);

		th[i].moved = !a || a->switches != th[i].switches || a->state != th[i].state ||
			      th[i].state == 'R' ||
			      !same_frames(a->kframes, a->nr_kframes, th[i].kframes,
					   th[i].nr_kframes) ||
			      !same_frames(a->uframes, a->nr_uframes, th[i].uframes,
					   th[i].nr_uframes);
	}
}

/* ---- the take ------------------------------------------------------------------------------ */

static int read_snapshot(struct stk_result *r, const struct pidset *pids, bool whole_system,
			 struct stk_raws *raws)
{
	bool denied = false;
	int err;

	if (r->iter) {
		err = stk_iter__run(r->iter, whole_system ? NULL : pids->v,
				    whole_system ? 0 : pids->n, raws, &r->loss[STK_L_SEQ_RETRIES]);
		for (size_t i = 0; i < raws->n; i++)
			r->loss[STK_L_MMAP_LOCK_BUSY] += raws->v[i].mmap_busy && !raws->v[i].copy &&
							 raws->v[i].have_regs;
		return err;
	}
	for (size_t i = 0; i < pids->n; i++) {
		err = stk_proc__read(r->proc_root, pids->v[i], r->o.states, !r->o.no_kernel, raws,
				     &denied, &r->loss[STK_L_THREAD_GONE]);
		if (err == -ESRCH) {
			r->loss[STK_L_PROCESS_GONE]++;
		} else if ((err == -EACCES || err == -EPERM) && !whole_system) {
			return err;
		} else if (err == -ENOMEM) {
			return err;
		}
	}
	if (denied && !r->nr_notes)
		note(r, "kernel stacks need CAP_SYS_ADMIN in the initial user namespace "
			"(/proc/PID/task/TID/stack): left out");
	return 0;
}

static int choose_backend(struct stk_result *r, bool filter, char *why, size_t why_sz)
{
	struct stk_iter_opts io = {
		.filter_pids = filter, .no_kernel = r->o.no_kernel, .no_user = r->o.no_user,
		.log = &r->log,
	};
	char msg[256] = "";
	int err;

	if (r->o.backend == TK_BACKEND_PROC) {
		r->pub.backend = TK_BACKEND_PROC;
		snprintf(r->reason, sizeof(r->reason), "asked for (--backend proc)");
		return 0;
	}
	if (r->o.backend != TK_BACKEND_NONE && r->o.backend != TK_BACKEND_BPF) {
		snprintf(why, why_sz, "stacks has no %s backend", tk_backend__name(r->o.backend));
		return -EINVAL;
	}
	/* the state filter is the program's, in its classes (the same bits) */
	io.state_mask = r->o.states;
	io.plain = getenv("TK_STACKS_PLAIN_ITER") && *getenv("TK_STACKS_PLAIN_ITER") == '1';
	err = stk_iter__open(&io, &r->iter, msg, sizeof(msg));
	if (err) {
		if (r->o.backend == TK_BACKEND_BPF) {
			snprintf(why, why_sz, "the bpf backend is not available: %s", msg);
			return err == -ENOMEM ? err : -EOPNOTSUPP;
		}
		r->pub.backend = TK_BACKEND_PROC;
		snprintf(r->reason, sizeof(r->reason), "bpf backend: %s; /proc used instead", msg);
		return 0;
	}
	r->pub.backend = TK_BACKEND_BPF;
	snprintf(r->reason, sizeof(r->reason), "%s",
		 stk_iter__sleepable(r->iter) ?
			 "the sleepable task iterator loaded (iter.s/task: user stacks copied "
			 "with bpf_copy_from_user_task)" :
			 "the task iterator loaded (iter/task; no bpf_copy_from_user_task: user "
			 "stacks read from /proc/PID/mem)");
	return 0;
}

static int check_pids(struct stk_result *r, const int *pids, size_t n, struct pidset *set,
		      char *why, size_t why_sz)
{
	char path[64];

	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 0) {
			snprintf(why, why_sz, "bad PID %d", pids[i]);
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "%s/%d/task", r->proc_root, pids[i]);
		if (access(path, F_OK)) {
			snprintf(why, why_sz, "no process with PID %d", pids[i]);
			return -ESRCH;
		}
		if (pidset_add(set, pids[i]))
			return -ENOMEM;
	}
	return 0;
}

int tk_stacks__take(const struct tk_stacks_opts *opts, const int *pids, size_t nr_pids,
		    struct tk_stacks_result **out, char *why, size_t why_sz)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .unwind_tables = true };
	struct stk_raws raws = { 0 };
	struct pidset set = { 0 };
	struct stk_result *r;
	bool whole;
	uint32_t n;
	int err;

	if (why_sz)
		why[0] = 0;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = TK_OPTS_COPY(&r->o, opts);
	if (err) {
		snprintf(why, why_sz, "bad options");
		goto fail;
	}
	r->proc_root = "/proc";
	r->log.fn = r->o.log;
	r->log.ctx = r->o.log_ctx;
	if ((nr_pids && !pids) || (nr_pids && r->o.cgroup) || r->o.repeat > 10000) {
		snprintf(why, why_sz, "bad options: PIDs and a cgroup are exclusive");
		err = -EINVAL;
		goto fail;
	}
	err = check_pids(r, pids, nr_pids, &set, why, why_sz);
	if (!err && r->o.cgroup) {
		err = cgroup_pids(r->o.cgroup, &set, why, why_sz);
		if (!err && !set.n) {
			snprintf(why, why_sz, "cgroup %s has no processes", r->o.cgroup);
			err = -ESRCH;
		}
	}
	if (err)
		goto fail;
	whole = !set.n;
	err = choose_backend(r, !whole, why, why_sz);
	if (err)
		goto fail;
	for (size_t i = 0; r->iter && i < set.n && !err; i++)
		err = stk_iter__add_pid(r->iter, set.v[i]);
	if (!err && whole && !r->iter)
		err = all_pids(r->proc_root, &set);
	if (!err)
		err = tk_symbolizer__new(&so, &r->sym);
	if (!err)
		err = tk_unw_store__new(NULL, tk_unw__rows_for(STK_UNWIND_MEM), &r->store);
	if (err) {
		snprintf(why, why_sz, "%s", strerror(-err));
		goto fail;
	}
	n = r->o.repeat ? r->o.repeat : 1;
	r->snaps = calloc(n, sizeof(*r->snaps));
	if (!r->snaps) {
		err = -ENOMEM;
		goto fail;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint64_t t0 = mono_ns();
		struct timespec ts;

		if (k) {
			uint64_t ms = r->o.interval_ms ? r->o.interval_ms : 1000;

			ts.tv_sec = ms / 1000;
			ts.tv_nsec = ms % 1000 * 1000000;
			while (!(r->o.stop && *r->o.stop) && nanosleep(&ts, &ts) && errno == EINTR)
				;
			if (r->o.stop && *r->o.stop) {
				note(r, "stopped after %u of %u snapshots", k, n);
				break;
			}
			t0 = mono_ns();
		}
		r->snaps[k].time_nanos = unix_ns();
		stk_raws__clear(&raws);
		err = read_snapshot(r, &set, whole, &raws);
		if (!err)
			err = build(r, &raws, &r->snaps[k]);
		if (err) {
			if (err == -EACCES || err == -EPERM)
				snprintf(why, why_sz, "not allowed to read the threads' /proc files "
					 "(needs ptrace access to the process: root or its user)");
			else
				snprintf(why, why_sz, "snapshot: %s", strerror(-err));
			goto fail;
		}
		r->snaps[k].took_ns = mono_ns() - t0;
		r->nsnaps++;
		if (k)
			mark_moved(&r->snaps[0], &r->snaps[k]);
	}
	if (!whole && !r->snaps[n - 1].nr_threads && r->loss[STK_L_PROCESS_GONE] == set.n) {
		snprintf(why, why_sz, "the process%s exited", set.n > 1 ? "es" : "");
		err = -ESRCH;
		goto fail;
	}
	if (r->sampled)
		note(r, "%llu thread%s on a CPU sampled with perf (task clock) for %s user stack",
		     (unsigned long long)r->sampled, r->sampled == 1 ? "" : "s",
		     r->sampled == 1 ? "its" : "their");
	for (int i = 0; i < STK_L__COUNT; i++) {
		r->losses[i].name = stk_loss__name(i);
		r->losses[i].count = r->loss[i];
	}
	r->pub.losses = r->losses;
	r->pub.nr_losses = STK_L__COUNT;
	r->pub.notes = (const char *const *)r->notes;
	r->pub.nr_notes = r->nr_notes;
	r->pub.backend_reason = r->reason;
	r->pub.snapshots = r->snaps;
	r->pub.nr_snapshots = r->nsnaps;
	stk_raws__clear(&raws);
	free(raws.v);
	free(set.v);
	/* the iterator's buffer is no longer needed: the copies were walked */
	stk_iter__free(r->iter);
	r->iter = NULL;
	*out = &r->pub;
	return 0;
fail:
	stk_raws__clear(&raws);
	free(raws.v);
	free(set.v);
	tk_stacks_result__free(&r->pub);
	if (!err)
		err = -EINVAL;
	return err;
}

void tk_stacks_result__free(struct tk_stacks_result *s)
{
	struct stk_result *r = (struct stk_result *)s;

	if (!r)
		return;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].memfd >= 0)
			close(r->procs[i].memfd);
	free(r->procs);
	for (size_t i = 0; i < r->nallocs; i++)
		free(r->allocs[i]);
	free(r->allocs);
	for (size_t i = 0; i < r->nr_notes; i++)
		free(r->notes[i]);
	free(r->snaps);
	stk_iter__free(r->iter);
	tk_unw_store__free(r->store);
	tk_symbolizer__free(r->sym);
	free(r);
}
