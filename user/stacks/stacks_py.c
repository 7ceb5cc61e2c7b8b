// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks: Python frames, on both backends. A process running CPython is found
 * once per take (tk_py__detect, as the collectors find it); per snapshot its
 * interpreter's thread states are read and tied to its threads: by the task's fsbase,
 * which is its pthread_t and the state's thread_id (the bpf backend's record carries
 * it on x86-64), else by glibc's struct pthread.tid, read at the thread_id (the proc
 * backend, and arm64, whose thread pointer lies above the pthread_t),
 * which must name a distinct thread of the process for every state, or the process is
 * refused (python_threads_unmatched). A thread whose native stack has interpreter-loop
 * frames, and which was off the CPU when read, gets its frame chain read from
 * /proc/PID/mem right after its native stack (user/runtime/py_walk.c, the kernel walk's
 * rules), each activation written before its loop frame, as the cpu profile's are; then
 * its switch count and state are read again: a thread that ran meanwhile may have moved
 * its frames, which are dropped (python_moved). A thread on a CPU is not read
 * (python_running): a blocked thread's frames do not move, a running one's do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "runtime/py.h"
#include "stacks/stacks_int.h"
#include "sym/symbolize.h"

#define STK_PY_TSTATES 4096		/* thread states of one interpreter */
/*
 * Whether the bpf backend's records tie threads by fsbase (bpf/stacks_iter.bpf.c): x86-64.
 * arm64's thread pointer (TPIDR_EL0) is not the pthread_t, so its threads are tied by
 * struct pthread.tid on both backends.
 */
#if defined(__x86_64__)
#define STK_PY_BY_FSBASE 1
#else
#define STK_PY_BY_FSBASE 0
#endif
#define STK_PY_TRIES 3			/* reads of the list before a process is refused */

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct stk_proc *p = ctx;

	if (p->memfd < 0)
		return -EBADF;
	return pread(p->memfd, buf, len, addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* Found and ready, once per take. */
static bool py_ready(struct stk_result *r, struct stk_proc *p)
{
	struct tk_py *py;
	struct tk_py_info info;
	int err;

	if (p->py)
		return p->py > 0;
	p->py = -1;
	py = tk_symbolizer__py(r->sym);
	if (!py)
		return false;
	err = tk_py__detect(py, r->sym, p->pid, 0, &p->upy, &info);
	if (err == -ENOTSUP) {
		r->loss[STK_L_PY_UNKNOWN]++;
		stk_note(r, "python: pid %u runs CPython tracekit cannot walk: %s", p->pid,
			 info.why);
	} else if (err && err != -ENOENT) {
		stk_note(r, "python: pid %u: %s", p->pid, info.why[0] ? info.why : strerror(-err));
	}
	if (err)
		return false;
	p->py = 1;
	r->py_procs++;
	return true;
}

bool stk_py_in_loop(struct stk_result *r, uint32_t pid, uint64_t look)
{
	struct tk_py *py = tk_symbolizer__py_if_any(r->sym);

	return py && tk_py__in_loop(py, pid, 0, look);
}

/* Whether @tid (as the process sees it) is a thread of @p. */
static bool is_thread(const struct stk_result *r, const struct stk_proc *p, int32_t tid,
		      const struct stk_raw *all, size_t nall)
{
	char path[64];

	for (size_t i = 0; i < nall; i++)
		if (all[i].pid == p->pid && all[i].ns_tid == (uint32_t)tid)
			return true;
	/* a thread the state filter left out: as this namespace sees it (no translation) */
	if (!r->o.states || tid <= 0)
		return false;
	for (size_t i = 0; i < nall; i++)
		if (all[i].pid == p->pid && all[i].ns_tid != all[i].tid)
			return false;
	snprintf(path, sizeof(path), "%s/%u/task/%d", r->proc_root, p->pid, tid);
	return !access(path, F_OK);
}

/*
 * Every state has a distinct thread_id (the bpf backend ties them to threads by fsbase,
 * the task's own), and, on the proc backend, a struct pthread.tid naming a distinct
 * thread of the process (a state of a thread exiting reads 0: left out; not all of
 * them). 0, or -EINVAL.
 */
static int check_tstates(const struct stk_result *r, const struct stk_proc *p,
			 const struct stk_raw *all, size_t nall)
{
	bool by_fsbase = STK_PY_BY_FSBASE && r->pub.backend == TK_BACKEND_BPF;
	int tied = 0;

	for (int i = 0; i < p->nts; i++) {
		const struct tk_py_tstate *a = &p->ts[i];

		if (!a->thread_id || (!a->tid && !by_fsbase))
			continue;
		if (!by_fsbase && (a->tid < 0 || !is_thread(r, p, a->tid, all, nall)))
			return -EINVAL;
		for (int j = 0; j < i; j++)
			if ((!by_fsbase && p->ts[j].tid == a->tid) ||
			    p->ts[j].thread_id == a->thread_id)
				return -EINVAL;
		tied++;
	}
	/* states, and none tied: every tid read 0, not threads all exiting at once */
	return p->nts && !tied ? -EINVAL : 0;
}

/* The process's thread states for this snapshot: true when they can be used. */
static bool tstates(struct stk_result *r, struct stk_proc *p, const struct stk_raw *all,
		    size_t nall)
{
	struct tk_py *py = tk_symbolizer__py(r->sym);
	int n = -EINVAL;

	if (p->py_snap == r->snap_no)
		return p->nts >= 0;
	p->py_snap = r->snap_no;
	if (!p->ts)
		p->ts = calloc(STK_PY_TSTATES, sizeof(*p->ts));
	if (!p->ts) {
		p->nts = -1;
		return false;
	}
	for (int k = 0; k < STK_PY_TRIES; k++) {
		if (k)
			usleep(2000);
		n = tk_py__thread_states(py, p->pid, p->ts, STK_PY_TSTATES);
		p->nts = n;
		if (n >= 0 && !check_tstates(r, p, all, nall))
			return true;
		if (n >= 0)
			n = -EINVAL;
	}
	p->nts = -1;
	r->loss[STK_L_PY_UNMATCHED]++;
	stk_note(r, "python: pid %u: its thread states could not be tied to its threads (%s): "
		 "no Python frames", p->pid, n == -EINVAL ? "a state whose pthread names no "
		 "distinct thread of the process: not glibc, or a layout tracekit does not know" :
		 strerror(-n));
	return false;
}

static uint64_t tstate_of(const struct stk_proc *p, const struct stk_raw *x)
{
	uint64_t ts = 0;

	for (int i = 0; i < p->nts; i++) {
		const struct tk_py_tstate *a = &p->ts[i];

		if (STK_PY_BY_FSBASE && x->fsbase ? a->thread_id != x->fsbase :
		    a->tid != (int32_t)x->ns_tid)
			continue;
		if (ts)
			return 0;	/* two states claim it (3.9/3.10, a thread starting) */
		ts = a->tstate;
	}
	return ts;
}

static long read_file(const struct stk_result *r, const struct stk_raw *x, const char *name,
		      char *buf, size_t size)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%u/task/%u/%s", r->proc_root, x->pid, x->tid, name);
	return stk_read_at(AT_FDCWD, path, buf, size);
}

/*
 * Whether @x ran since its native stack was read: its switch count as its backend
 * counted it (the task's nvcsw + nivcsw, or schedstat's switch-ins) moved, or it is
 * runnable now (woken, not switched out yet). Unknown counts as moved.
 */
static bool moved(const struct stk_result *r, const struct stk_raw *x)
{
	char buf[4096], comm[16], st;
	uint32_t flags;
	uint64_t v;
	bool ok;

	if (!x->have_switches)
		return true;
	if (read_file(r, x, "stat", buf, sizeof(buf)) <= 0 ||
	    stk_parse_stat(buf, comm, &st, &flags) || st == 'R')
		return true;
	if (r->pub.backend == TK_BACKEND_BPF)
		ok = read_file(r, x, "status", buf, sizeof(buf)) > 0 &&
		     !stk_parse_ctxt_switches(buf, &v);
	else
		ok = read_file(r, x, "schedstat", buf, sizeof(buf)) > 0 &&
		     !stk_parse_schedstat(buf, &v);
	return !ok || v != x->switches;
}

static void count_causes(struct stk_result *r, uint32_t c)
{
	if (c & UNW_PY_C_TSTATE)
		r->loss[STK_L_PY_TSTATE]++;
	if (c & UNW_PY_C_READ_FAULT)
		r->loss[STK_L_PY_READ_FAULT]++;
	if (c & UNW_PY_C_MISALIGNED)
		r->loss[STK_L_PY_MISALIGNED]++;
	if (c & UNW_PY_C_DEPTH)
		r->loss[STK_L_PY_DEPTH]++;
}

static int native_only(const uint64_t *ips, int n, uint64_t *out, int max)
{
	if (n > max)
		n = max;
	memcpy(out, ips, n * sizeof(*ips));
	return n;
}

int stk_py_frames(struct stk_result *r, struct stk_proc *p, const struct stk_raw *x,
		  const struct stk_raw *all, size_t nall, const uint64_t *ips,
		  const uint64_t *sps, int n, bool whole, uint64_t *out, int max,
		  struct tk_stacks_thread *t)
{
	struct tk_py *py;
	struct tk_py_wframe wf[STK_MAX_PYFRAMES];
	struct tk_py_walk w;
	uint32_t causes;
	int loops = 0, k = 0;

	if (!py_ready(r, p))
		return native_only(ips, n, out, max);
	for (int i = 0; i < n; i++)
		loops += stk_py_in_loop(r, x->pid, i ? ips[i] - 1 : ips[i]);
	if (!loops)
		return native_only(ips, n, out, max);
	if (x->sampled || x->on_cpu || x->torn || x->state == 'R') {
		r->loss[STK_L_PY_RUNNING]++;
		t->python_note = "on a CPU when read: its Python frames move, not read";
		return native_only(ips, n, out, max);
	}
	if (!tstates(r, p, all, nall)) {
		t->python_note = "the process's thread states are not tied to its threads";
		return native_only(ips, n, out, max);
	}
	py = tk_symbolizer__py(r->sym);
	tk_py_walk__begin(&w, &p->upy, mem_read, p, tstate_of(p, x), STK_MAX_PYFRAMES);
	for (int i = 0; i < n && k < max; i++) {
		if (stk_py_in_loop(r, x->pid, i ? ips[i] - 1 : ips[i])) {
			uint64_t cfa = i + 1 < n ? sps[i + 1] : UINT64_MAX;
			int room = max - k - 1 < STK_MAX_PYFRAMES ? max - k - 1 : STK_MAX_PYFRAMES;
			int m = tk_py_walk__activation(&w, sps[i], cfa, wf, room);

			for (int j = 0; j < m; j++)
				tk_py__code_rec(py, x->pid, &p->upy, wf[j].code, wf[j].idx,
						&out[k++]);
		}
		out[k++] = ips[i];
	}
	causes = tk_py_walk__end(&w, whole);
	/* a chain read while the thread ran may be another moment's: dropped, whatever it gave */
	if (!(causes & UNW_PY_C_TSTATE) && moved(r, x)) {
		r->loss[STK_L_PY_MOVED]++;
		t->python_note = "ran while its Python frames were read: not shown";
		return native_only(ips, n, out, max);
	}
	count_causes(r, causes);
	if (causes & UNW_PY_C_TSTATE)
		t->python_note = "no thread state of its own found";
	else if (!(causes & UNW_PY_C_FRAMES))
		t->python_note = "its Python frames could not be read";
	else
		r->py_threads++;
	return k;
}

void stk_py_name(struct stk_result *r, uint32_t pid, uint64_t rec, struct tk_stacks_frame *f)
{
	struct tk_py *py = tk_symbolizer__py_if_any(r->sym);
	struct tk_py_frame pf;

	f->addr = rec;
	f->python = true;
	if (!py || tk_py__frame(py, pid, rec, &pf)) {
		/* as the cpu profile names it: never another function's name */
		f->function = "[python: code object unnamed]";
		return;
	}
	f->function = pf.name;
	f->file = pf.file;
	f->line = pf.line;
	f->first_line = pf.first_line;
}

void stk_py_report(struct stk_result *r)
{
	struct tk_py *py = tk_symbolizer__py_if_any(r->sym);
	struct tk_py_stats st;
	char *s;

	if (!py)
		return;
	tk_py__stats(py, &st);
	r->loss[STK_L_PY_NAME] = st.name_unreadable;
	r->loss[STK_L_PY_LINE] = st.line_unknown;
	/* published again after each snapshot (tk_stacks__again): one note, kept true */
	if (!r->py_procs ||
	    asprintf(&s, "python: %llu process%s running CPython, %llu thread stack%s with "
		     "Python frames (read from /proc/PID/mem after the native stack)",
		     (unsigned long long)r->py_procs, r->py_procs == 1 ? "" : "es",
		     (unsigned long long)r->py_threads, r->py_threads == 1 ? "" : "s") < 0)
		return;
	if (r->py_note) {
		free(*r->py_note);
		*r->py_note = s;
	} else if (r->nr_notes < sizeof(r->notes) / sizeof(r->notes[0])) {
		r->py_note = &r->notes[r->nr_notes];
		r->notes[r->nr_notes++] = s;
	} else {
		free(s);
	}
}

void stk_py_free(struct stk_proc *p)
{
	free(p->ts);
	p->ts = NULL;
}
