// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of allocation sessions: what hooking would cost, measured
 * before hooking (alloc_rate.h). A uprobe hit's cost, calibrated on two
 * functions of our own, and the allocator call rate of a running process,
 * counted with uprobes for a moment.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/types.h>

#include "alloc/alloc_int.h"
#include "alloc/alloc_rate.h"
#include "alloc/alloc_syms.h"
#include "alloc/alloc_trace_int.h"
#include "bpf/alloc_trace.h"
#include "alloc_trace.skel.h"
#include "core/log.h"
#include "core/percpu.h"

/* ---- the cost, before hooking: call rate and uprobe cost ------------------------------------ */

/*
 * Functions of our own for uprobes to probe and calibrate on. What a hit
 * costs depends on the probed instruction: a push (how most allocator
 * functions begin) is emulated, others (free of glibc begins with a test)
 * are single-stepped out of line, a second trap. One of each.
 */
#ifdef __x86_64__
__asm__(".text\n"
	".p2align 4\n"
	".globl tk_alloc__calib_push\n"
	".type tk_alloc__calib_push, @function\n"
	"tk_alloc__calib_push:\n"
	"	push %r12\n"
	"	pop %r12\n"
	"	ret\n"
	".size tk_alloc__calib_push, .-tk_alloc__calib_push\n"
	".p2align 4\n"
	".globl tk_alloc__calib_step\n"
	".type tk_alloc__calib_step, @function\n"
	"tk_alloc__calib_step:\n"
	"	test %rdi, %rdi\n"
	"	ret\n"
	".size tk_alloc__calib_step, .-tk_alloc__calib_step\n");
#else
__attribute__((noinline, used)) void tk_alloc__calib_push(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, used)) void tk_alloc__calib_step(void)
{
	__asm__ __volatile__("" ::: "memory");
}
#endif

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double time_calls(void (*fn)(void), int n)
{
	double t0 = mono_ns();
	int i;

	for (i = 0; i < n; i++)
		fn();
	return mono_ns() - t0;
}

static uint64_t sum_counter(struct alloc_trace_bpf *s, enum at_counter c)
{
	uint64_t sum[AT_CNT__COUNT];

	tk_percpu__sum(s->bss->counters, AT_MAX_CPUS, AT_CNT__COUNT, sum);
	return sum[c];
}

/* One hit on @fn, the best of 3 runs of 2000 calls with and without. */
static int hit_cost(struct alloc_trace_bpf *s, void (*fn)(void), double *ns)
{
	struct tk_alloc_fn f = { .kind = TK_AFN_MALLOC };
	struct at_state st = { .multi_fds = { -1, -1 } };
	double bare = 1e300, traced = 1e300, t;
	char path[PATH_MAX];
	int err, i, n = 2000;

	err = tk_alloc_bpf__self_offset((const void *)fn, path, sizeof(path), &f.offset);
	if (err)
		return err;
	for (i = 0; i < 3; i++) {
		t = time_calls(fn, n);
		bare = t < bare ? t : bare;
	}
	err = tk_alloc_bpf__attach_uprobe(&st, s->progs.count_alloc, getpid(), path, &f, false);
	if (err)
		return err;
	for (i = 0; i < 3; i++) {
		t = time_calls(fn, n);
		traced = t < traced ? t : traced;
	}
	tk_alloc_bpf__detach(&st);
	if (sum_counter(s, AT_CNT_ALLOC_CALLS) < (uint64_t)n)
		return -EIO;	/* the probe did not fire */
	memset(s->bss->counters, 0, sizeof(s->bss->counters));
	*ns = traced > bare ? (traced - bare) / n : 0;
	return 0;
}

/* What an emulated and a single-stepped probe's hit cost. */
static int uprobe_costs(struct alloc_trace_bpf *s, double *emulated, double *stepped)
{
	int err;

	if ((err = hit_cost(s, tk_alloc__calib_push, emulated)) ||
	    (err = hit_cost(s, tk_alloc__calib_step, stepped)))
		return err;
	return 0;
}

/* The mean of the two. */
static int uprobe_cost(struct alloc_trace_bpf *s, double *ns)
{
	double a, b;
	int err = uprobe_costs(s, &a, &b);

	if (!err)
		*ns = (a + b) / 2;
	return err;
}

int tk_alloc__uprobe_cost(double *ns)
{
	struct alloc_trace_bpf *s;
	int err = 0;

	s = tk_alloc_bpf__load(NULL, LOAD_COUNT, &err);
	if (!s)
		return err;
	err = uprobe_cost(s, ns);
	alloc_trace_bpf__destroy(s);
	return err;
}

int tk_alloc__measure_rate(int pid, const struct tk_caps *caps, int ms, struct tk_alloc_rate *out,
			   char *why, size_t why_sz)
{
	struct at_state st = { .multi_fds = { -1, -1 } };
	struct tk_alloc_syms *sy = NULL;
	struct alloc_trace_bpf *s = NULL, *probe, *multi = NULL;
	double t0, secs, c, cf, r_a, r_f, load_frac;
	uint64_t a0, f0;
	struct tk_log_scope quiet;
	int err = 0, i;

	memset(out, 0, sizeof(*out));
	sy = calloc(1, sizeof(*sy));
	if (!sy)
		return -ENOMEM;
	err = tk_alloc_bpf__find_in_process(NULL, pid, caps, sy, why, why_sz);
	if (err)
		goto out;
	s = tk_alloc_bpf__load(NULL, LOAD_COUNT, &err);
	if (!s) {
		snprintf(why, why_sz, "cannot load the counting probe: %s", strerror(-err));
		goto out;
	}
	err = uprobe_costs(s, &out->emulated_ns, &out->stepped_ns);
	out->uprobe_ns = (out->emulated_ns + out->stepped_ns) / 2;
	if (err) {
		snprintf(why, why_sz, "cannot calibrate a uprobe on tracekit itself: %s",
			 strerror(-err));
		goto out;
	}
	tk_log__push(&tk_log_quiet, &quiet);
	{
		struct tk_alloc fake = { .sample_bytes = TK_ALLOC_DEFAULT_SAMPLE_BYTES,
					  .opts.unwind = TK_UNWIND_FP };

		probe = tk_alloc_bpf__load(&fake, LOAD_SESSION, &err);
	}
	out->sessions = probe && tk_alloc_bpf__sessions_work(probe);
	alloc_trace_bpf__destroy(probe);
	tk_log__pop(&quiet);
	err = 0;

	/*
	 * One uprobe_multi link where the kernel has them: removing a uprobe
	 * waits for a grace period, ~0.1 s here, once per link.
	 */
	if (out->sessions) {
		uint64_t offs[TK_ALLOC_MAX_FNS], cookies[TK_ALLOC_MAX_FNS];

		multi = tk_alloc_bpf__load(NULL, LOAD_COUNT_MULTI, &err);
		for (i = 0; multi && i < sy->nr; i++) {
			offs[i] = sy->fns[i].offset;
			cookies[i] = AT_COOKIE(sy->fns[i].vaddr, sy->fns[i].kind);
		}
		if (multi)
			st.multi_fds[0] = tk_alloc_bpf__uprobe_multi_link(
				bpf_program__fd(multi->progs.count_calls), AT_TRACE_UPROBE_MULTI,
				tk_alloc_syms__probe(sy), offs, cookies, sy->nr, pid);
		if (st.multi_fds[0] >= 0) {
			alloc_trace_bpf__destroy(s);
			s = multi;
			multi = NULL;
		}
		err = 0;
	}
	for (i = 0; st.multi_fds[0] < 0 && i < sy->nr && !err; i++)
		err = tk_alloc_bpf__attach_uprobe(&st, sy->fns[i].kind == TK_AFN_FREE
								 ? s->progs.count_free
								 : s->progs.count_alloc,
						  pid, tk_alloc_syms__probe(sy), &sy->fns[i], false);
	if (err) {
		snprintf(why, why_sz, "cannot place uprobes in %s: %s", sy->path, strerror(-err));
		tk_alloc_bpf__detach(&st);
		goto out;
	}
	/* attaching and detaching take a while, probe by probe: count between them */
	a0 = sum_counter(s, AT_CNT_ALLOC_CALLS);
	f0 = sum_counter(s, AT_CNT_FREE_CALLS);
	t0 = mono_ns();
	usleep(ms * 1000);
	out->alloc_calls = sum_counter(s, AT_CNT_ALLOC_CALLS) - a0;
	out->free_calls = sum_counter(s, AT_CNT_FREE_CALLS) - f0;
	secs = (mono_ns() - t0) / 1e9;
	tk_alloc_bpf__detach(&st);
	out->ms = secs * 1e3;

	/*
	 * Counting put one trap (c seconds) on every call: r' = r / (1 + r c), so
	 * r = r' / (1 - r' c). When r' c nears 1 the process did little but trap:
	 * the true rate is unknown above a bound (and past a half, an error in c
	 * already doubles the estimate).
	 */
	/* malloc's and free's probes: on an emulated instruction or not (alloc_syms.c) */
	out->alloc_hit_ns = out->free_hit_ns = out->stepped_ns;
	for (i = 0; i < sy->nr; i++) {
		const struct tk_alloc_fn *fn = &sy->fns[i];
		size_t n = strlen(fn->name);
		double hit = fn->emulated ? out->emulated_ns : out->stepped_ns;

		if (fn->kind == TK_AFN_MALLOC && n >= 6 && !strcmp(fn->name + n - 6, "malloc"))
			out->alloc_hit_ns = hit;
		else if (fn->kind == TK_AFN_FREE && n >= 4 && !strcmp(fn->name + n - 4, "free"))
			out->free_hit_ns = hit;
	}
	c = out->alloc_hit_ns * 1e-9;
	cf = out->free_hit_ns * 1e-9;
	r_a = out->alloc_calls / secs;
	r_f = out->free_calls / secs;
	load_frac = r_a * c + r_f * cf;
	out->lower_bound = load_frac > 0.5;
	if (load_frac > 0.9)
		load_frac = 0.9;
	out->alloc_per_s = r_a / (1 - load_frac);
	out->free_per_s = r_f / (1 - load_frac);

	out->traps_per_alloc[TK_ALLOC_MODE_SAMPLED] = out->sessions ? 1 : 2;
	out->traps_per_free[TK_ALLOC_MODE_SAMPLED] = 1;
	out->traps_per_alloc[TK_ALLOC_MODE_FULL] = 2;
	out->traps_per_free[TK_ALLOC_MODE_FULL] = 1;
	for (i = 0; i <= TK_ALLOC_MODE_GROWTH; i++)
		out->slowdown[i] = c * out->traps_per_alloc[i] * out->alloc_per_s +
				   cf * out->traps_per_free[i] * out->free_per_s;
out:
	alloc_trace_bpf__destroy(multi);
	alloc_trace_bpf__destroy(s);
	tk_alloc_syms__release(sy);
	free(sy);
	return err;
}
