// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of allocation sessions: loader of bpf/alloc_trace.bpf.c.
 *
 * Hooks, by mode (traps per malloc+free pair; a trap costs µs, so this is the cost):
 *  - sampled, uprobes with sessions: entry of each allocator function (1) and
 *    of free (1); the return runs only for sampled calls.
 *  - sampled, uprobes without sessions (kernels before 6.13): entry and
 *    return of each allocating function (2) and free (1).
 *  - full: entry and return (2) and free (1).
 *  - preload: libtkalloc.so samples in-process; its two markers trap only for
 *    sampled allocations and their frees.
 *  - growth: page faults (the raw tracepoint page_fault_user, or where the
 *    kernel has none, arm64's case, the software perf event page-faults on
 *    every CPU) and raw tracepoints on brk/mmap; no allocator trap.
 * Records come through one ring buffer; growth counts stay in kernel maps and
 * are delivered as deltas at every poll.
 *
 * This file is the loader; alloc_trace_int.h names the files that attach,
 * read and measure.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/types.h>

#include "alloc/alloc_int.h"
#include "alloc/alloc_syms.h"
#include "alloc/alloc_trace_int.h"
#include "bpf/alloc_trace.h"
#include "alloc_trace.skel.h"
#include "alloc_trace_sess.skel.h"
#include "alloc_trace_kctx.skel.h"
#include "unwind/unwind_bpf.h"
#include "core/kfeat.h"
#include "core/log.h"

_Static_assert((int)TK_AFN_MALLOC == (int)AT_MALLOC && (int)TK_AFN_FREE == (int)AT_FREE &&
		       (int)TK_AFN_MARKER_ALLOC == (int)AT_MARKER_ALLOC &&
		       (int)TK_AFN_MARKER_FREE == (int)AT_MARKER_FREE &&
		       (int)TK_AFN_PVALLOC == (int)AT_PVALLOC,
	       "alloc_syms.h and alloc_trace.h number function kinds alike");
_Static_assert((int)AT_GROWTH_FAULT == (int)TK_GROWTH_FAULT &&
		       (int)AT_GROWTH_BRK == (int)TK_GROWTH_BRK &&
		       (int)AT_GROWTH_MMAP == (int)TK_GROWTH_MMAP,
	       "growth kinds");

/* ---- sampling intervals --------------------------------------------------------------- */

/*
 * The table of geometric (exponential) intervals: 4096 quantiles of -ln(1-u)
 * at the centres of equal strata, scaled so their mean is exactly @mean.
 */
static void fill_intervals(volatile __u64 *t, uint64_t mean)
{
	double x[AT_RAND_ENTRIES], sum = 0;
	uint64_t total = 0, want = mean * AT_RAND_ENTRIES;
	int i;

	for (i = 0; i < AT_RAND_ENTRIES; i++) {
		x[i] = -log1p(-(i + 0.5) / AT_RAND_ENTRIES);
		sum += x[i];
	}
	for (i = 0; i < AT_RAND_ENTRIES; i++) {
		t[i] = (uint64_t)llround(x[i] * mean * AT_RAND_ENTRIES / sum);
		if (!t[i])
			t[i] = 1;
		total += t[i];
	}
	/* rounding: the largest entry takes the difference */
	t[AT_RAND_ENTRIES - 1] += want - total;
}

/* ---- loading ---------------------------------------------------------------------------- */

/*
 * The object: alloc_trace.bpf.c as built, without uprobe sessions, or, for
 * them, the same source built with bpf_session_is_return() declared as the
 * running kernel declares it (bpf/alloc_trace_{sess,kctx}.bpf.c). They have
 * the same maps and variables, and the programs of the first plus
 * alloc_session, so its skeleton serves all three: only the ELF differs.
 */
static struct alloc_trace_bpf *open_object(enum tk_kfeat_session_kfunc kf)
{
	struct alloc_trace_bpf *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = alloc_trace_bpf__create_skeleton(s);
	if (!err && kf == TK_KF_SESSION_VOID)
		s->skeleton->data = (void *)alloc_trace_sess_bpf__elf_bytes(&s->skeleton->data_sz);
	else if (!err && kf == TK_KF_SESSION_CTX)
		s->skeleton->data = (void *)alloc_trace_kctx_bpf__elf_bytes(&s->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	if (err) {
		alloc_trace_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/* The slot programs (kernels without attach cookies), by slot. */
struct bpf_program *tk_alloc_bpf__slot_prog(struct alloc_trace_bpf *s, int slot)
{
	char name[32];

	snprintf(name, sizeof(name), "alloc_enter_s%d", slot);
	return bpf_object__find_program_by_name(s->obj, name);
}

/* alloc_session: in the session objects only, so not in the skeleton. */
struct bpf_program *tk_alloc_bpf__session_prog(struct alloc_trace_bpf *s)
{
	return bpf_object__find_program_by_name(s->obj, "alloc_session");
}

/* The offsets of task_struct's mm and mm_struct's brk in the kernel's BTF; 0 when unknown. */
static void brk_offsets(struct tk_alloc *a, struct alloc_trace_bpf *s)
{
	int mm = tk_kfeat__member_offset("task_struct", "mm");
	int brk = mm > 0 ? tk_kfeat__member_offset("mm_struct", "brk") : -ENOENT;

	if (mm > 0 && brk > 0) {
		s->rodata->task_mm_off = mm;
		s->rodata->mm_brk_off = brk;
	} else if (a) {
		snprintf(a->kernel_note, sizeof(a->kernel_note), "brk growth not seen: no "
			 "task_struct.mm or mm_struct.brk in kernel BTF (%s); page faults and "
			 "mmap are", strerror(mm > 0 ? -brk : -mm));
	}
}

/*
 * The offsets of task_struct's signal and signal_struct's live in the
 * kernel's BTF, so that exit_raw sees a process's last thread leave; without
 * them exits are not seen: the objects of a process that ends stay in use,
 * and the profile says so.
 */
static void exit_offsets(struct tk_alloc *a, struct alloc_trace_bpf *s)
{
	int sig = tk_kfeat__member_offset("task_struct", "signal");
	int live = sig > 0 ? tk_kfeat__member_offset("signal_struct", "live") : -ENOENT;

	if (sig > 0 && live > 0) {
		s->rodata->task_signal_off = sig;
		s->rodata->signal_live_off = live;
	} else if (a) {
		snprintf(a->exit_note, sizeof(a->exit_note), "process exits not seen: no "
			 "task_struct.signal or signal_struct.live in kernel BTF (%s); what an "
			 "exited child held stays in use (execs are seen)",
			 strerror(sig > 0 ? -live : -sig));
	}
}

/* Open, configure and load the programs of @k, with the unwinder per @unwind. */
static struct alloc_trace_bpf *load_as(struct tk_alloc *a, enum load_kind k,
				       enum tk_unwind_mode unwind, int *errp)
{
	struct alloc_trace_bpf *s;
	uint64_t mean = a ? a->sample_bytes : 0;
	bool full = a && a->opts.mode == TK_ALLOC_MODE_FULL;
	bool cookies = tk_kfeat__attach_cookie();
	char cut[200];
	int err, i;

	if (k == LOAD_SESSION && tk_kfeat__session_kfunc() != TK_KF_SESSION_VOID &&
	    tk_kfeat__session_kfunc() != TK_KF_SESSION_CTX) {
		*errp = -EOPNOTSUPP;	/* no kfunc this object knows how to call */
		return NULL;
	}
	if (a)
		a->kernel_note[0] = '\0';	/* the last load's, not a refused one's */
	s = open_object(k == LOAD_SESSION ? tk_kfeat__session_kfunc() : TK_KF_SESSION_ABSENT);
	if (!s) {
		*errp = -errno;
		return NULL;
	}
	switch (k) {
	case LOAD_SESSION:
		bpf_program__set_autoload(tk_alloc_bpf__session_prog(s), true);
		bpf_program__set_expected_attach_type(tk_alloc_bpf__session_prog(s),
						      AT_TRACE_UPROBE_SESSION);
		bpf_program__set_autoload(s->progs.free_enter, true);
		bpf_program__set_expected_attach_type(s->progs.free_enter,
						      AT_TRACE_UPROBE_MULTI);
		break;
	case LOAD_CLASSIC:
		if (cookies)
			bpf_program__set_autoload(s->progs.alloc_enter, true);
		for (i = 0; !cookies && i < AT_NR_SLOTS; i++) {
			struct bpf_program *p = tk_alloc_bpf__slot_prog(s, i);

			if (p)
				bpf_program__set_autoload(p, true);
		}
		bpf_program__set_autoload(s->progs.alloc_exit, true);
		bpf_program__set_autoload(s->progs.free_enter, true);
		break;
	case LOAD_MARKERS:
		bpf_program__set_autoload(s->progs.marker_alloc, true);
		bpf_program__set_autoload(s->progs.marker_free, true);
		break;
	case LOAD_GROWTH:
		/* page faults: the raw tracepoint where the kernel has it, else the perf event */
		bpf_program__set_autoload(s->progs.fault_user, tk_kfeat__page_fault_user());
		bpf_program__set_autoload(s->progs.fault_event, !tk_kfeat__page_fault_user());
		bpf_program__set_autoload(s->progs.sys_enter, !a || !a->opts.growth_faults_only);
		bpf_program__set_autoload(s->progs.sys_exit, !a || !a->opts.growth_faults_only);
		brk_offsets(a, s);
		break;
	case LOAD_COUNT:
		bpf_program__set_autoload(s->progs.count_alloc, true);
		bpf_program__set_autoload(s->progs.count_free, true);
		break;
	case LOAD_COUNT_MULTI:
		bpf_program__set_autoload(s->progs.count_calls, true);
		bpf_program__set_expected_attach_type(s->progs.count_calls, AT_TRACE_UPROBE_MULTI);
		break;
	}
	if (a)
		a->exit_note[0] = '\0';
	if (k != LOAD_COUNT && k != LOAD_COUNT_MULTI) {
		bpf_program__set_autoload(s->progs.exec_raw, true);
		bpf_program__set_autoload(s->progs.exit_raw, true);
		exit_offsets(a, s);
	}
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->sample_all = full || !mean;
	s->rodata->track_live = k != LOAD_MARKERS;
	if (mean)
		fill_intervals(s->rodata->intervals, mean);
	/* full mode remembers every live object and sends every call */
	bpf_map__set_max_entries(s->maps.live, full ? 1 << 20 : 1 << 17);
	bpf_map__set_max_entries(s->maps.events, full ? 16 << 20 : 8 << 20);
	s->rodata->wake_bytes = (full ? 16 << 20 : 8 << 20) / 4;
	if (k != LOAD_GROWTH) {
		bpf_map__set_max_entries(s->maps.growth, 1);
		bpf_map__set_max_entries(s->maps.stacks, 1);
	}
	if (tk_kfeat__fit_maps(s->obj, cut, sizeof(cut)) && a) {
		size_t n = strlen(a->kernel_note);

		snprintf(a->kernel_note + n, sizeof(a->kernel_note) - n,
			 "%sthis kernel (before 6.1) needs preallocated maps in tracing programs: "
			 "fewer entries (%s); what does not fit is counted as lost", n ? "; " : "",
			 cut);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);
		struct tk_unw_bpf_opts uo = {
			.mode = a && k != LOAD_COUNT && k != LOAD_COUNT_MULTI ? unwind :
										TK_UNWIND_FP,
			.rows = a ? tk_unw__rows_for(a->opts.unwind_mem) : 0,
			.procs = 256,
			.prog_type = k != LOAD_GROWTH	      ? BPF_PROG_TYPE_KPROBE :
				     tk_kfeat__page_fault_user() ? BPF_PROG_TYPE_RAW_TRACEPOINT :
								   BPF_PROG_TYPE_PERF_EVENT,
		};
		char why[200];

		err = tk_unw_bpf__prepare(&v, &uo, why, sizeof(why));
		if (a && why[0])
			snprintf(a->unwind_note, sizeof(a->unwind_note), "unwinding: %s%s",
				 err ? "" : "frame pointers only: ", why);
		if (!err)
			err = alloc_trace_bpf__load(s);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);

		/* a kernel that refuses the unwinder: the same programs without it */
		if (a && tk_unw_bpf__refused(&v, unwind, err, a->unwind_note,
					     sizeof(a->unwind_note))) {
			alloc_trace_bpf__destroy(s);
			return load_as(a, k, TK_UNWIND_FP, errp);
		}
	}
	if (err) {
		alloc_trace_bpf__destroy(s);
		*errp = err;
		return NULL;
	}
	if (mean) {
		int cpu;

		for (cpu = 0; cpu < AT_MAX_CPUS; cpu++)
			s->bss->countdown[cpu] =
				s->rodata->intervals[rand() & (AT_RAND_ENTRIES - 1)];
	}
	return s;
}

const char *tk_alloc_bpf__fault_source(void)
{
	return tk_kfeat__page_fault_user() ? "the raw tracepoint page_fault_user"
					   : "the software perf event page-faults on every CPU (no "
					     "exceptions:page_fault_user in this kernel)";
}

struct alloc_trace_bpf *tk_alloc_bpf__load(struct tk_alloc *a, enum load_kind k, int *errp)
{
	return load_as(a, k, a ? a->opts.unwind : TK_UNWIND_FP, errp);
}

/* Can a uprobe session link be made here? Tried on a function of our own. */
bool tk_alloc_bpf__sessions_work(struct alloc_trace_bpf *s)
{
	char path[PATH_MAX];
	uint64_t off, cookie = 0;
	int fd;

	if (tk_alloc_bpf__self_offset((const void *)tk_alloc__calib_push, path, sizeof(path), &off))
		return false;
	fd = tk_alloc_bpf__uprobe_multi_link(bpf_program__fd(tk_alloc_bpf__session_prog(s)),
					     AT_TRACE_UPROBE_SESSION, path, &off, &cookie, 1,
					     getpid());
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* ---- finding the allocator ------------------------------------------------------------ */

/* The allocator of process @pid, with the capability snapshot's findings when they are its. */
int tk_alloc_bpf__find_in_process(struct tk_alloc *a, int pid, const struct tk_caps *caps,
				  struct tk_alloc_syms *syms, char *why, size_t why_sz)
{
	const struct tk_proc_info *known = NULL;

	if (caps && caps->pid == pid && caps->proc.pid == pid)
		known = &caps->proc;
	return tk_alloc_syms__find_process(a ? a->opts.proc_root : NULL, pid, known, syms, why,
					   why_sz);
}

/* ---- the backend ------------------------------------------------------------------------ */

static void bpf_free(struct tk_alloc *a)
{
	struct at_state *st = a->priv;

	if (!st)
		return;
	tk_alloc_bpf__detach(st);
	ring_buffer__free(st->rb);
	tk_unw_bpf__free(st->unw);
	a->captured = NULL;
	a->gen_over = NULL;
	alloc_trace_bpf__destroy(st->skel);
	tk_alloc_syms__release(st->syms);
	free(st->syms);
	tk_hashmap__free(&st->growth);
	free(st);
	a->priv = NULL;
}

/* A process's maps were captured: its unwinder entry follows. */
static void on_captured(struct tk_alloc *a, uint32_t pid, uint32_t gen)
{
	struct at_state *st = a->priv;

	if (st)
		tk_unw_bpf__update(st->unw, a->sym, pid, gen);
}

/*
 * Records reach us up to a poll interval late: by the time the first record
 * of (pid, gen) is read, the process may have exec'd (procs holds a later
 * generation) or ended (no entry). Its maps in /proc are then not gen's.
 */
static bool gen_over(struct tk_alloc *a, uint32_t pid, uint32_t gen)
{
	struct at_state *st = a->priv;
	struct at_proc p;

	if (!st || !st->skel)
		return false;
	/* no entry: ended, unless it never had one (procs was full: generation 0) */
	if (bpf_map__lookup_elem(st->skel->maps.procs, &pid, sizeof(pid), &p, sizeof(p), 0))
		return gen != 0;
	return p.gen != gen;
}

static int open_unwinder(struct tk_alloc *a, struct at_state *st)
{
	struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(st->skel);
	int err = tk_unw_bpf__open(&v, &st->unw);

	if (err)
		return err;
	a->unwinding = st->unw != NULL;
	if (st->unw) {
		a->captured = on_captured;
		/* what was captured before the programs were there */
		if (a->pid && tk_symbolizer__has(a->sym, a->pid, 0))
			on_captured(a, a->pid, 0);
	}
	return 0;
}

static int bpf_open(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct tk_log_scope quiet;
	struct at_state *st;
	int err = 0;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->multi_fds[0] = st->multi_fds[1] = -1;
	a->priv = st;

	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		st->skel = tk_alloc_bpf__load(a, LOAD_GROWTH, &err);
		if (!st->skel)
			snprintf(why, why_sz, "cannot load the growth tracer: %s", strerror(-err));
		goto out;
	}
	if (a->hook == TK_ALLOC_HOOK_PRELOAD) {
		st->skel = tk_alloc_bpf__load(a, LOAD_MARKERS, &err);
		if (!st->skel)
			snprintf(why, why_sz, "cannot load the marker probes: %s", strerror(-err));
		goto out;
	}
	if (a->hook != TK_ALLOC_HOOK_UPROBES) {
		snprintf(why, why_sz, "the bpf backend needs uprobes, the preload sampler or "
			 "--mode growth");
		err = -EINVAL;
		goto out;
	}
	st->syms = calloc(1, sizeof(*st->syms));
	if (!st->syms) {
		err = -ENOMEM;
		goto out;
	}
	/* find the allocator now when it can be found: a clear refusal before anything runs */
	if (!a->child)
		err = tk_alloc_bpf__find_in_process(a, a->pid, a->caps, st->syms, why, why_sz);
	else if (!a->attach_after_exec)
		err = tk_alloc_syms__find_static(a->opts.argv[0], st->syms, why, why_sz);
	if (err)
		goto out;

	/*
	 * sessions, where the kernel has them (6.13+); refusals are expected: quiet.
	 * TK_ALLOC_NO_SESSIONS=1 takes the older kernels' way (for tests).
	 */
	tk_log__push(&tk_log_quiet, &quiet);
	if (!getenv("TK_ALLOC_NO_SESSIONS"))
		st->skel = tk_alloc_bpf__load(a, LOAD_SESSION, &err);
	if (st->skel && !tk_alloc_bpf__sessions_work(st->skel)) {
		alloc_trace_bpf__destroy(st->skel);
		st->skel = NULL;
	}
	tk_log__pop(&quiet);
	st->sessions = st->skel != NULL;
	err = 0;	/* a refused session is no error: the classic way follows */
	if (!st->skel)
		st->skel = tk_alloc_bpf__load(a, LOAD_CLASSIC, &err);
	if (!st->skel)
		snprintf(why, why_sz, "cannot load the uprobe programs: %s", strerror(-err));
out:
	if (!err)
		a->gen_over = gen_over;
	if (!err)
		err = open_unwinder(a, st);
	if (err)
		bpf_free(a);
	return err;
}

const struct tk_alloc_backend tk_alloc_backend_bpf = {
	.name = "bpf",
	.open = bpf_open,
	.start = tk_alloc_bpf__start,
	.poll = tk_alloc_bpf__poll,
	.drain = tk_alloc_bpf__drain,
	.free = bpf_free,
};

/*
 * What `tracekit alloc` would load here, loaded and closed (the capability
 * snapshot's bpf.load.alloc): the uprobe programs (with sessions where a
 * session link can be made) and the growth tracer. 0 and what was chosen
 * in @msg, or a negative errno and why.
 */
int tk_alloc_bpf__probe_load(char *msg, size_t msg_sz)
{
	enum tk_kfeat_session_kfunc kf = tk_kfeat__session_kfunc();
	struct alloc_trace_bpf *s = NULL;
	struct tk_log_scope quiet;
	const char *how = NULL;
	int err = -EOPNOTSUPP, gerr = 0;
	size_t len;

	tk_log__push(&tk_log_quiet, &quiet);
	if (kf == TK_KF_SESSION_VOID || kf == TK_KF_SESSION_CTX)
		s = tk_alloc_bpf__load(NULL, LOAD_SESSION, &err);
	if (s && tk_alloc_bpf__sessions_work(s))
		how = kf == TK_KF_SESSION_CTX ? "uprobe sessions (bpf_session_is_return(ctx))"
					      : "uprobe sessions (bpf_session_is_return())";
	alloc_trace_bpf__destroy(s);
	s = NULL;
	if (!how) {
		s = tk_alloc_bpf__load(NULL, LOAD_CLASSIC, &err);
		if (s)
			how = tk_kfeat__attach_cookie() ? "uprobes and uretprobes"
							: "uprobes (a program per function: no "
							  "attach cookies) and uretprobes";
		alloc_trace_bpf__destroy(s);
	}
	if (how) {
		s = tk_alloc_bpf__load(NULL, LOAD_GROWTH, &gerr);
		alloc_trace_bpf__destroy(s);
	}
	tk_log__pop(&quiet);
	if (!how) {
		snprintf(msg, msg_sz, "the uprobe programs do not load: %s", strerror(-err));
		return err;
	}
	if (gerr)
		len = snprintf(msg, msg_sz, "%s; --mode growth does not load: %s", how,
			       strerror(-gerr));
	else
		/*
		 * The perf event named where growth takes it (no page_fault_user:
		 * caps' tracepoint entry says so); short: the backend's reason holds
		 * 255 bytes, and arm64 5.10's is 251 long with it
		 */
		len = snprintf(msg, msg_sz, "%s%s", how,
			       tk_kfeat__page_fault_user() ? "" : "; growth: page-faults perf event");
	if (len < msg_sz && !tk_kfeat__runtime_alloc_maps())
		snprintf(msg + len, msg_sz - len, "; maps preallocated (smaller)");
	return 0;
}
