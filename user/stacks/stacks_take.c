// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks: the snapshot. Chooses the backend (the sleepable task iterator,
 * else the plain one, else /proc), reads every thread in scope into raw records
 * (stacks_iter.c, stacks_proc.c), has them walked and named (stacks_build.c), and with
 * several snapshots says which threads moved. Nothing is stopped or signalled.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/opts.h"
#include "stacks/stacks_int.h"
#include "sym/symbolize.h"
#include "unwind/unwind.h"

#define STK_UNWIND_MEM (16u << 20)

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
		[STK_L_PY_UNKNOWN] = "python_unknown_version",
		[STK_L_PY_UNMATCHED] = "python_threads_unmatched",
		[STK_L_PY_RUNNING] = "python_running",
		[STK_L_PY_MOVED] = "python_moved",
		[STK_L_PY_TSTATE] = "python_tstate_not_found",
		[STK_L_PY_READ_FAULT] = "python_frame_read_fault",
		[STK_L_PY_MISALIGNED] = "python_misaligned",
		[STK_L_PY_DEPTH] = "python_depth_limit",
		[STK_L_PY_NAME] = "python_name_unreadable",
		[STK_L_PY_LINE] = "python_line_unknown",
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
void *stk_keep(struct stk_result *r, void *p)
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

char *stk_keep_str(struct stk_result *r, const char *s)
{
	return s && *s ? stk_keep(r, strdup(s)) : NULL;
}

void stk_note(struct stk_result *r, const char *fmt, ...)
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

/* ---- processes ------------------------------------------------------------------------- */

struct stk_proc *stk_proc_of(struct stk_result *r, uint32_t pid)
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
void stk_proc_capture(struct stk_result *r, struct stk_proc *p)
{
	if (p->captured)
		return;
	p->captured = true;
	if (tk_symbolizer__capture(r->sym, p->pid, 0))
		return;
	p->have_unw = !tk_unw_store__proc(r->store, r->sym, p->pid, 0, &p->unw);
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

static int read_snapshot(struct stk_result *r, const struct stk_pidset *pids, bool whole_system,
			 struct stk_raws *raws)
{
	bool denied = false;
	int err;

	if (r->iter) {
		/* (mmap_lock_busy is counted where the stack is not read: stacks_build.c) */
		return stk_iter__run(r->iter, whole_system ? NULL : pids->v,
				     whole_system ? 0 : pids->n, raws, &r->loss[STK_L_SEQ_RETRIES]);
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
		stk_note(r, "kernel stacks need CAP_SYS_ADMIN in the initial user namespace "
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

static int check_pids(struct stk_result *r, const int *pids, size_t n, struct stk_pidset *set,
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
		if (stk_pidset_add(set, pids[i]))
			return -ENOMEM;
	}
	return 0;
}

/* The scope and the backend, held for every snapshot: 0 or a negative errno, @why said. */
static int stk_open(struct stk_result *r, const struct tk_stacks_opts *opts, const int *pids,
		    size_t nr_pids, char *why, size_t why_sz)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .unwind_tables = true };
	int err;

	err = TK_OPTS_COPY(&r->o, opts);
	if (err) {
		snprintf(why, why_sz, "bad options");
		return err;
	}
	r->proc_root = "/proc";
	r->log.fn = r->o.log;
	r->log.ctx = r->o.log_ctx;
	if ((nr_pids && !pids) || (nr_pids && r->o.cgroup) || r->o.repeat > 10000) {
		snprintf(why, why_sz, "bad options: PIDs and a cgroup are exclusive");
		return -EINVAL;
	}
	err = check_pids(r, pids, nr_pids, &r->set, why, why_sz);
	if (!err && r->o.cgroup) {
		err = stk_cgroup_pids(r->o.cgroup, &r->set, why, why_sz);
		if (!err && !r->set.n) {
			snprintf(why, why_sz, "cgroup %s has no processes", r->o.cgroup);
			err = -ESRCH;
		}
	}
	if (err)
		return err;
	r->whole = !r->set.n;
	err = choose_backend(r, !r->whole, why, why_sz);
	if (err)
		return err;
	for (size_t i = 0; r->iter && i < r->set.n && !err; i++)
		err = stk_iter__add_pid(r->iter, r->set.v[i]);
	if (!err && r->whole && !r->iter)
		err = stk_all_pids(r->proc_root, &r->set);
	if (!err)
		err = tk_symbolizer__new(&so, &r->sym);
	if (!err)
		err = tk_unw_store__new(NULL, tk_unw__rows_for(STK_UNWIND_MEM), &r->store);
	if (err)
		snprintf(why, why_sz, "%s", strerror(-err));
	return err;
}

/*
 * One more snapshot, compared to the first (tk_stacks_thread.moved). 0 or a negative
 * errno, @why said (-ESRCH: every process of the scope exited); what was taken stays.
 */
static int stk_snap(struct stk_result *r, char *why, size_t why_sz)
{
	struct tk_stacks_snapshot *sn, *v;
	uint64_t t0 = mono_ns(), gone = r->loss[STK_L_PROCESS_GONE];
	size_t k = r->nsnaps;
	int err;

	if (k == r->snaps_cap) {
		size_t cap = r->snaps_cap ? r->snaps_cap * 2 : 2;

		v = realloc(r->snaps, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->snaps = v;
		r->snaps_cap = cap;
		r->pub.snapshots = r->snaps;
	}
	sn = &r->snaps[k];
	memset(sn, 0, sizeof(*sn));
	sn->time_nanos = unix_ns();
	stk_raws__clear(&r->raws);
	err = read_snapshot(r, &r->set, r->whole, &r->raws);
	if (!err)
		err = stk_build(r, &r->raws, sn);
	stk_raws__clear(&r->raws);
	if (err) {
		if (err == -EACCES || err == -EPERM)
			snprintf(why, why_sz, "not allowed to read the threads' /proc files "
				 "(needs ptrace access to the process: root or its user)");
		else
			snprintf(why, why_sz, "snapshot: %s", strerror(-err));
		return err;
	}
	if (!r->whole && !sn->nr_threads && r->loss[STK_L_PROCESS_GONE] - gone == r->set.n) {
		snprintf(why, why_sz, "the process%s exited", r->set.n > 1 ? "es" : "");
		return -ESRCH;
	}
	sn->took_ns = mono_ns() - t0;
	r->nsnaps++;
	if (k)
		mark_moved(&r->snaps[0], &r->snaps[k]);
	return 0;
}

/* What a reader of the result sees, as of the snapshots taken so far. */
static void stk_publish(struct stk_result *r)
{
	char *s;

	if (r->sampled && (!r->sampled_note || r->sampled_noted != r->sampled) &&
	    asprintf(&s, "%llu thread%s on a CPU sampled with perf (task clock) for %s user "
		     "stack", (unsigned long long)r->sampled, r->sampled == 1 ? "" : "s",
		     r->sampled == 1 ? "its" : "their") >= 0) {
		if (r->sampled_note) {
			free(*r->sampled_note);
			*r->sampled_note = s;
		} else if (r->nr_notes < sizeof(r->notes) / sizeof(r->notes[0])) {
			r->sampled_note = &r->notes[r->nr_notes];
			r->notes[r->nr_notes++] = s;
		} else {
			free(s);
		}
		r->sampled_noted = r->sampled;
	}
	stk_py_report(r);
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
}

int tk_stacks__take(const struct tk_stacks_opts *opts, const int *pids, size_t nr_pids,
		    struct tk_stacks_result **out, char *why, size_t why_sz)
{
	struct stk_result *r;
	uint32_t n;
	int err;

	if (why_sz)
		why[0] = 0;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = stk_open(r, opts, pids, nr_pids, why, why_sz);
	if (err)
		goto fail;
	n = r->o.repeat ? r->o.repeat : 1;
	for (uint32_t k = 0; k < n; k++) {
		struct timespec ts;

		if (k) {
			uint64_t ms = r->o.interval_ms ? r->o.interval_ms : 1000;

			ts.tv_sec = ms / 1000;
			ts.tv_nsec = ms % 1000 * 1000000;
			while (!(r->o.stop && *r->o.stop) && nanosleep(&ts, &ts) && errno == EINTR)
				;
			if (r->o.stop && *r->o.stop) {
				stk_note(r, "stopped after %u of %u snapshots", k, n);
				break;
			}
		}
		err = stk_snap(r, why, why_sz);
		/* a process that exits between snapshots: the ones taken are kept */
		if (err == -ESRCH && k) {
			stk_note(r, "%s after %u of %u snapshots", why, k, n);
			why[0] = 0;
			err = 0;
			break;
		}
		if (err)
			goto fail;
	}
	stk_publish(r);
	/* the iterator's buffer is no longer needed: the copies were walked */
	stk_iter__free(r->iter);
	r->iter = NULL;
	*out = &r->pub;
	return 0;
fail:
	tk_stacks_result__free(&r->pub);
	if (!err)
		err = -EINVAL;
	return err;
}

int tk_stacks__begin(const struct tk_stacks_opts *opts, const int *pids, size_t nr_pids,
		     struct tk_stacks_result **out, char *why, size_t why_sz)
{
	struct stk_result *r;
	int err;

	if (why_sz)
		why[0] = 0;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = stk_open(r, opts, pids, nr_pids, why, why_sz);
	if (!err)
		err = stk_snap(r, why, why_sz);
	if (err) {
		tk_stacks_result__free(&r->pub);
		return err;
	}
	r->open = true;
	stk_publish(r);
	*out = &r->pub;
	return 0;
}

int tk_stacks__again(struct tk_stacks_result *s, char *why, size_t why_sz)
{
	struct stk_result *r = (struct stk_result *)s;
	int err;

	if (why_sz)
		why[0] = 0;
	if (!r || !r->open) {
		snprintf(why, why_sz, "not a result of tk_stacks__begin");
		return -EINVAL;
	}
	if (r->whole && !r->iter) {
		/* every process, by /proc: those started since the first snapshot too */
		r->set.n = 0;
		err = stk_all_pids(r->proc_root, &r->set);
		if (err) {
			snprintf(why, why_sz, "%s", strerror(-err));
			return err;
		}
	}
	err = stk_snap(r, why, why_sz);
	stk_publish(r);
	return err;
}

void tk_stacks_result__free(struct tk_stacks_result *s)
{
	struct stk_result *r = (struct stk_result *)s;

	if (!r)
		return;
	for (size_t i = 0; i < r->nprocs; i++) {
		if (r->procs[i].memfd >= 0)
			close(r->procs[i].memfd);
		stk_py_free(&r->procs[i]);
	}
	free(r->procs);
	for (size_t i = 0; i < r->nallocs; i++)
		free(r->allocs[i]);
	free(r->allocs);
	for (size_t i = 0; i < r->nr_notes; i++)
		free(r->notes[i]);
	free(r->snaps);
	stk_raws__clear(&r->raws);
	free(r->raws.v);
	free(r->set.v);
	stk_iter__free(r->iter);
	tk_unw_store__free(r->store);
	tk_symbolizer__free(r->sym);
	free(r);
}
