// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks: one snapshot's threads, from raw records to the result. Threads on a
 * CPU get their perf sample (stacks_oncpu.c); each user stack is walked with the CFI rows
 * of its process's objects over the iterator's or the sample's copy, then /proc/PID/mem
 * on demand (killable, unlike process_vm_readv); frames are named, the wait channel and
 * what the thread waits for derived (stacks_wait.c).
 */
#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arch.h"
#include "stacks/stacks_int.h"
#include "sym/symbolize.h"
#include "unwind/unwind.h"

#define STK_PAGES 8			/* pages of /proc/PID/mem one walk keeps */

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
	f = stk_keep(r, calloc(x->nk, sizeof(*f)));
	if (!f)
		return;
	for (uint32_t i = 0; i < x->nk; i++) {
		f[i].addr = x->kf[i].addr;
		f[i].kernel = true;
		if (x->kf[i].name) {
			f[i].function = stk_keep(r, x->kf[i].name);
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
			const struct stk_raw *all, size_t nall, struct tk_stacks_thread *t)
{
	uint64_t ips[UNW_WALK_FRAMES], sps[UNW_WALK_FRAMES];
	uint64_t merged[STK_MAX_UFRAMES + STK_MAX_PYFRAMES];
	struct tk_stacks_frame *f;
	const struct unw_row *rows;
	struct tk_unw_regs regs = { .ip = x->ip, .sp = x->sp, .bp = x->bp, .lr = x->lr,
				    .ra_mask = tk_unw_ra_mask(NULL) };
	struct img *m;
	size_t nr_rows;
	int n, native = 0;

	if (x->kthread)
		return;
	if (x->pid == (uint32_t)getpid() && x->tid == (uint32_t)gettid()) {
		/* the thread taking the snapshot: its own stack, by glibc's unwinder */
		void *self[STK_MAX_UFRAMES];

		n = backtrace(self, STK_MAX_UFRAMES);
		for (int i = 0; i < n; i++)
			merged[i] = (uint64_t)(uintptr_t)self[i];
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
	stk_proc_capture(r, p);
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->copy = x->copy;
	m->len = x->copy_len;
	m->sp = x->sp;
	m->memfd = p->memfd;
	rows = tk_unw_store__rows(r->store, &nr_rows);
	n = tk_unw__walk_sps(p->have_unw ? &p->unw : NULL, rows, nr_rows, &regs, img_read, m, ips,
			     sps, STK_MAX_UFRAMES, &t->unwind_causes, NULL);
	if (m->failed && n <= 1)
		r->loss[STK_L_USER_READ_FAILED]++;
	free(m);
	if (n <= 0)
		return;
	t->user_whole = t->unwind_causes & UNW_C_END;
	if (!t->user_whole)
		r->loss[STK_L_UNWIND_PARTIAL]++;
#if TK_PERF_REG_LR >= 0
	/*
	 * A leaf that saved no frame (a libc system call wrapper) returns by LR, which the
	 * task iterator reads and /proc/PID/syscall does not give: the walk ends at the leaf
	 * without a cause of its own.
	 */
	if (!t->user_whole && n == 1 && !x->lr && !t->unwind_causes)
		t->user_note = "a leaf: its caller is in the link register, which /proc does not give";
#endif
	/* Python frames before the interpreter-loop frames that run them (stacks_py.c) */
	n = stk_py_frames(r, p, x, all, nall, ips, sps, n, t->user_whole, merged,
			  STK_MAX_UFRAMES + STK_MAX_PYFRAMES, t);
named:
	stk_proc_capture(r, p);
	f = stk_keep(r, calloc(n, sizeof(*f)));
	if (!f)
		return;
	for (int i = 0; i < n; i++) {
		if (UNW_PY_IS_REC(merged[i])) {
			stk_py_name(r, x->pid, merged[i], &f[i]);
			continue;
		}
		f[i].addr = merged[i];
		name_frame(r, &f[i], x->pid, false, native > 0);
		/* a part gcc split off the interpreter loop has no symbol of its own */
		if (f[i].module && stk_py_in_loop(r, x->pid, native ? f[i].addr - 1 : f[i].addr) &&
		    (!f[i].function || strcmp(f[i].function, "_PyEval_EvalFrameDefault"))) {
			if (!f[i].function)
				r->loss[STK_L_UNSYMBOLIZED]--;
			f[i].function = "_PyEval_EvalFrameDefault";
		}
		native++;
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
		t->wait = stk_keep_str(r, text);
	} else {
		t->wait = stk_keep_str(r, out.text);
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
#define STK_ONCPU_MS 150	/* a busy host (load 5 on 2 CPUs) left a runnable thread unsampled at 50 */

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
		stk_note(r, "threads on a CPU not sampled: perf_event_open: %s", strerror(-err));
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
			x->lr = q[k].lr;
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

int stk_build(struct stk_result *r, struct stk_raws *raws, struct tk_stacks_snapshot *s)
{
	struct tk_stacks_thread *th;
	struct stk_oncpu *q;
	size_t nq;
	int err = 0;

	r->snap_no++;
	q = sample_running(r, raws, &nq);
	qsort(raws->v, raws->n, sizeof(raws->v[0]), cmp_raw);
	th = stk_keep(r, calloc(raws->n ? raws->n : 1, sizeof(*th)));
	if (!th) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < raws->n; i++) {
		struct stk_raw *x = &raws->v[i];
		struct tk_stacks_thread *t = &th[i];
		struct stk_proc *p = x->kthread ? NULL : stk_proc_of(r, x->pid);

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
			user_frames(r, p, x, raws->v, raws->n, t);
		t->wchan = stk_keep_str(r, x->wchan);
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

