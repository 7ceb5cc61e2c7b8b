// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What perf records say (perf_records.c), fed as the kernel writes them: a
 * sample lands under its process's exec generation and its thread's comm;
 * COMM with exec starts the next generation; a forked thread inherits its
 * parent's comm; EXIT forgets the thread, and the process unless its pid's
 * generation must survive; thousands of threads that come and go
 * leave every survivor findable; records too short to hold their body are
 * skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/perf_ring.h"

struct fix {
	struct tk_cpu c;
	struct tk_perf_records *r;
	uint64_t buf[64];
	uint64_t time;
};

static int setup(void **state)
{
	struct tk_perf_filter f = { .max_stack = 127 };
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .proc_root = "/nonexistent" };
	struct fix *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	/* no /proc: comms only from the records, and no ELF work */
	x->c.opts.sz = sizeof(x->c.opts);
	x->c.opts.proc_root = "/nonexistent";
	x->c.stacks = tk_stacks__new();
	if (!x->c.stacks || tk_symbolizer__new(&so, &x->c.sym))
		return -1;
	x->r = tk_perf_records__new(&x->c, &f);
	if (!x->r)
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fix *x = *state;

	tk_perf_records__free(x->r);
	tk_symbolizer__free(x->c.sym);
	tk_stacks__free(x->c.stacks);
	free(x);
	return 0;
}

/* Hand a record of @type with @body (and the sample_id trailer) to the records. */
static void feed(struct fix *x, uint32_t type, uint16_t misc, const void *body, size_t len)
{
	struct perf_event_header *h = (void *)x->buf;
	size_t words = (len + 7) / 8;
	uint64_t *w = x->buf + 1;

	memset(x->buf, 0, sizeof(x->buf));
	memcpy(w, body, len);
	w += words;
	w[0] = 0;		/* pid/tid */
	w[1] = ++x->time;
	w[2] = 0;		/* cpu */
	h->type = type;
	h->misc = misc;
	h->size = sizeof(*h) + (words + 3) * 8;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
}

static void comm(struct fix *x, uint32_t pid, uint32_t tid, const char *name, bool exec)
{
	struct {
		uint32_t pid, tid;
		char comm[16];
	} b = { pid, tid };

	snprintf(b.comm, sizeof(b.comm), "%s", name);
	feed(x, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &b, sizeof(b));
}

static void task(struct fix *x, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
		 uint32_t ptid)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} b = { pid, ppid, tid, ptid, x->time };

	feed(x, type, 0, &b, sizeof(b));
}

/* A sample with one kernel frame, @ip, and no user frames. */
static void sample(struct fix *x, uint32_t pid, uint32_t tid, uint64_t ip)
{
	struct perf_event_header *h = (void *)x->buf;
	uint64_t *w = x->buf + 1;

	memset(x->buf, 0, sizeof(x->buf));
	w[0] = ip;
	w[1] = pid | (uint64_t)tid << 32;
	w[2] = ++x->time;
	w[3] = 0;
	w[4] = 1;
	w[5] = 2;		/* the callchain: a context marker and one frame */
	w[6] = (uint64_t)PERF_CONTEXT_KERNEL;
	w[7] = ip;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = 0;
	h->size = sizeof(*h) + 8 * 8;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
}

struct want {
	uint32_t pid, tid, gen;
	uint64_t ip;
	const char *comm;
	uint64_t count;		/* found */
};

static int find_cb(const struct tk_stack_entry *e, void *ctx)
{
	struct want *w = ctx;

	if (e->pid == w->pid && e->tid == w->tid && e->gen == w->gen && e->nr_kernel == 1 &&
	    e->kernel[0] == w->ip) {
		assert_string_equal(e->comm, w->comm);
		w->count += e->count;
	}
	return 0;
}

static uint64_t count(struct fix *x, uint32_t pid, uint32_t tid, uint32_t gen, uint64_t ip,
		      const char *comm)
{
	struct want w = { pid, tid, gen, ip, comm, 0 };

	assert_int_equal(tk_stacks__for_each(x->c.stacks, find_cb, &w), 0);
	return w.count;
}

/* A PERF_RECORD_SWITCH(_CPU_WIDE) of task (@pid, @tid) at @time (sample_id: pid/tid, time, cpu). */
static void switch_rec(struct fix *x, bool cpu_wide, uint16_t misc, uint32_t pid, uint32_t tid,
		       uint64_t time)
{
	struct perf_event_header *h = (void *)x->buf;
	uint64_t *w = x->buf + 1;
	int n = 0;

	memset(x->buf, 0, sizeof(x->buf));
	if (cpu_wide)
		w[n++] = 4242;	/* next_prev pid/tid: the other task */
	w[n++] = pid | (uint64_t)tid << 32;
	w[n++] = time;
	w[n++] = 0;
	h->type = cpu_wide ? PERF_RECORD_SWITCH_CPU_WIDE : PERF_RECORD_SWITCH;
	h->misc = misc;
	h->size = sizeof(*h) + n * 8;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
}

struct off_seen {
	uint32_t tid;
	enum tk_stack_kind kind;
	uint64_t ns, waits;
	uint32_t nr_kernel;
};

static int off_cb(const struct tk_stack_entry *e, void *ctx)
{
	struct off_seen *o = ctx;

	if (e->kind != TK_STACK_ON_CPU && e->tid == o->tid) {
		o->kind = e->kind;
		o->ns += e->count;
		o->waits += e->count2;
		o->nr_kernel = e->nr_kernel;
	}
	return 0;
}

/*
 * --off-cpu with the perf backend: a context-switches sample (period 1) of a
 * thread is its switch-out, with its stacks; the SWITCH out record after it
 * says whether it was preempted; its switch-in record ends the wait, counted
 * in nanoseconds under those stacks. Cpu-clock samples are not waits; a
 * thread that exits while out leaves no wait; waits under the minimum go
 * without stacks; the ones still out at the end count until then.
 */
static void test_off_cpu_switches(void **state)
{
	struct fix *x = *state;
	struct off_seen o = { .tid = 101 };

	x->c.opts.off_cpu = true;
	comm(x, 100, 101, "pp", true);
	sample(x, 100, 101, 0xffffffff81000010ull);	/* period 1: a switch-out */
	switch_rec(x, true, PERF_RECORD_MISC_SWITCH_OUT, 100, 101, 1000);
	switch_rec(x, true, 0, 100, 101, 1000 + 5000);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	/* from the sample's time (x->time then) to the switch-in */
	assert_int_equal(o.kind, TK_STACK_OFF_BLOCKED);
	assert_int_equal(o.waits, 1);
	assert_true(o.ns > 5000 && o.ns < 6000 + 1000);
	assert_int_equal(o.nr_kernel, 1);
	assert_int_equal(x->c.samples, 0);

	/* preempted: the out record says so (a per-task event's records) */
	o = (struct off_seen){ .tid = 102 };
	sample(x, 100, 102, 0xffffffff81000020ull);
	switch_rec(x, false, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
		   100, 102, 2000);
	switch_rec(x, false, 0, 100, 102, 9000);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.kind, TK_STACK_OFF_RUNNABLE);
	assert_int_equal(o.waits, 1);

	/* a switch-in with no switch-out before it, and one after the thread's exit: nothing */
	o = (struct off_seen){ .tid = 103 };
	switch_rec(x, true, 0, 100, 103, 3000);
	sample(x, 100, 103, 0xffffffff81000030ull);
	task(x, PERF_RECORD_EXIT, 100, 100, 103, 103);
	switch_rec(x, true, 0, 100, 103, 4000);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.waits, 0);

	/* under the minimum: counted without stacks */
	x->c.opts.off_cpu_min_ns = 1000000;
	o = (struct off_seen){ .tid = 104 };
	sample(x, 100, 104, 0xffffffff81000040ull);
	switch_rec(x, true, 0, 100, 104, x->time + 10);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_true(o.kind & TK_STACK_OFF_SHORT);
	assert_int_equal(o.nr_kernel, 0);
	assert_int_equal(o.waits, 1);

	/* still out at the end: its wait until then */
	x->c.opts.off_cpu_min_ns = 0;
	o = (struct off_seen){ .tid = 105 };
	sample(x, 100, 105, 0xffffffff81000050ull);
	assert_int_equal(tk_perf_records__pending_waits(x->r, x->time + 777), 0);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.ns, 777);
	assert_int_equal(o.waits, 1);
}

/*
 * Records out of time order or lost (a ring that filled; a record that became
 * visible after the merge passed its time): a wait whose end was not seen is
 * not paired with a later switch-in, which would count the time the thread ran
 * in between as a wait; it is counted in off_cpu_unpaired.
 */
static void test_off_cpu_unpaired(void **state)
{
	struct fix *x = *state;
	struct off_seen o = { .tid = 111 };

	x->c.opts.off_cpu = true;
	comm(x, 100, 111, "pp", true);
	/* out at 1000, in at 2000: 1000 ns */
	x->time = 999;
	sample(x, 100, 111, 0xffffffff81000010ull);
	switch_rec(x, true, 0, 100, 111, 2000);
	/* a switch-out of 1500 seen after that switch-in: its end was already taken */
	x->time = 1499;
	sample(x, 100, 111, 0xffffffff81000010ull);
	switch_rec(x, true, 0, 100, 111, 900000);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.waits, 1);
	assert_int_equal(o.ns, 1000);
	assert_int_equal(x->c.losses[TK_LOSS_OFF_UNPAIRED], 1);

	/* two switch-outs with no switch-in between (its record lost): the first is not
	 * counted to the second's end */
	o = (struct off_seen){ .tid = 112 };
	x->time = 9999;
	sample(x, 100, 112, 0xffffffff81000020ull);
	x->time = 19999;
	sample(x, 100, 112, 0xffffffff81000020ull);
	switch_rec(x, true, 0, 100, 112, 20500);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.waits, 1);
	assert_int_equal(o.ns, 500);
	assert_int_equal(x->c.losses[TK_LOSS_OFF_UNPAIRED], 2);

	/* a switch-in older than the switch-out waiting (an earlier wait's, late) does not
	 * end it; its own does */
	o = (struct off_seen){ .tid = 113 };
	x->time = 29999;
	sample(x, 100, 113, 0xffffffff81000030ull);
	switch_rec(x, true, 0, 100, 113, 29000);
	switch_rec(x, true, 0, 100, 113, 30300);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.waits, 1);
	assert_int_equal(o.ns, 300);
	assert_int_equal(x->c.losses[TK_LOSS_OFF_UNPAIRED], 2);
}

/*
 * A sched:sched_switch sample (period 1, PERF_SAMPLE_RAW after its callchain:
 * u32 size, then the tracepoint's fields) of @tid leaving in report state
 * @prev_state, at raw offset 24 (8 bytes); @raw_size not 36 makes it malformed.
 */
static void switch_sample(struct fix *x, uint32_t tid, uint64_t prev_state, uint32_t raw_size)
{
	struct perf_event_header *h = (void *)x->buf;
	uint64_t *w = x->buf + 1;
	uint8_t *raw;

	memset(x->buf, 0, sizeof(x->buf));
	w[0] = 0xffffffff81000100ull;
	w[1] = 100 | (uint64_t)tid << 32;
	w[2] = ++x->time;
	w[3] = 0;
	w[4] = 1;
	w[5] = 2;
	w[6] = (uint64_t)PERF_CONTEXT_KERNEL;
	w[7] = w[0];
	raw = (uint8_t *)(w + 8);
	memcpy(raw, &raw_size, 4);
	memcpy(raw + 4 + 24, &prev_state, 8);
	h->type = PERF_RECORD_SAMPLE;
	h->misc = 0;
	h->size = sizeof(*h) + (8 + 5) * 8;	/* 4 + 36 bytes of raw: 5 words */
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
}

/*
 * With the sched_switch tracepoint (filter.switch_state_*): the state the
 * thread left in, from prev_state's report bits: S sleeping, D
 * uninterruptible, I (idle kernel thread) sleeping, R and R+ preempted,
 * others other; a raw part that does not fit its sample is a stack error.
 */
static void test_off_cpu_switch_state(void **state)
{
	static const struct {
		uint64_t prev_state;
		enum tk_stack_kind kind;
	} cases[] = {
		{ 0x1, TK_STACK_OFF_SLEEPING },   { 0x2, TK_STACK_OFF_UNINTERRUPTIBLE },
		{ 0x80, TK_STACK_OFF_SLEEPING },  { 0x100, TK_STACK_OFF_RUNNABLE },
		{ 0x0, TK_STACK_OFF_RUNNABLE },   { 0x4, TK_STACK_OFF_OTHER },
	};
	struct tk_perf_filter f = { .max_stack = 127, .switch_state_off = 24,
				    .switch_state_size = 8 };
	struct fix *x = *state;
	struct off_seen o;
	size_t i;

	tk_perf_records__free(x->r);
	x->r = tk_perf_records__new(&x->c, &f);
	assert_non_null(x->r);
	x->c.opts.off_cpu = true;
	comm(x, 100, 100, "d", true);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = (struct off_seen){ .tid = 200 + i };
		switch_sample(x, 200 + i, cases[i].prev_state, 36);
		switch_rec(x, true, 0, 100, 200 + i, x->time + 1000);
		assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
		assert_int_equal(o.waits, 1);
		assert_int_equal(o.kind, cases[i].kind);
	}
	/* 4 + 37 is not whole words; 4 + 100 runs past the sample */
	o = (struct off_seen){ .tid = 300 };
	switch_sample(x, 300, 0x2, 37);
	switch_sample(x, 300, 0x2, 100);
	switch_rec(x, true, 0, 100, 300, x->time + 1000);
	assert_int_equal(tk_stacks__for_each(x->c.stacks, off_cb, &o), 0);
	assert_int_equal(o.waits, 0);
	assert_int_equal(x->c.losses[TK_LOSS_STACK_ERRORS], 2);
}

static void test_generations_and_comms(void **state)
{
	struct fix *x = *state;

	comm(x, 100, 100, "parent", true);
	sample(x, 100, 100, 0xffffffff81000010ULL);
	sample(x, 100, 100, 0xffffffff81000010ULL);
	assert_int_equal(count(x, 100, 100, 0, 0xffffffff81000010ULL, "parent"), 2);

	/* a thread of 100 and a child process 200: both inherit the comm */
	task(x, PERF_RECORD_FORK, 100, 100, 101, 100);
	task(x, PERF_RECORD_FORK, 200, 100, 200, 100);
	sample(x, 100, 101, 0xffffffff81000020ULL);
	sample(x, 200, 200, 0xffffffff81000030ULL);
	assert_int_equal(count(x, 100, 101, 0, 0xffffffff81000020ULL, "parent"), 1);
	assert_int_equal(count(x, 200, 200, 0, 0xffffffff81000030ULL, "parent"), 1);

	/* 100 execs: its next generation, under its new name */
	comm(x, 100, 100, "child", true);
	sample(x, 100, 100, 0xffffffff81000010ULL);
	assert_int_equal(count(x, 100, 100, 1, 0xffffffff81000010ULL, "child"), 1);
	assert_int_equal(count(x, 100, 100, 0, 0xffffffff81000010ULL, "parent"), 2);

	/* a rename without exec keeps the generation */
	comm(x, 200, 200, "renamed", false);
	sample(x, 200, 200, 0xffffffff81000040ULL);
	assert_int_equal(count(x, 200, 200, 0, 0xffffffff81000040ULL, "renamed"), 1);

	/*
	 * 200 exits, and a new process takes its pid after a fork: its entry
	 * was forgotten (the symbolizer never had that pid), so gen 0 again
	 */
	task(x, PERF_RECORD_EXIT, 200, 100, 200, 100);
	comm(x, 300, 300, "other", true);
	task(x, PERF_RECORD_FORK, 200, 300, 200, 300);
	sample(x, 200, 200, 0xffffffff81000050ULL);
	assert_int_equal(x->c.processes, 3);
	assert_int_equal(count(x, 200, 200, 0, 0xffffffff81000050ULL, "other"), 1);

	/* a thread never announced has no comm (no /proc to read it from) */
	sample(x, 400, 401, 0xffffffff81000060ULL);
	assert_int_equal(count(x, 400, 401, 0, 0xffffffff81000060ULL, ""), 1);
	assert_int_equal(x->c.samples, 8);
}

/* Threads that come and go: deletions in the thread table keep the others. */
static void test_thread_churn(void **state)
{
	enum { N = 5000 };
	struct fix *x = *state;
	uint32_t tid;
	char name[16];

	comm(x, 10, 10, "main", true);
	for (tid = 11; tid < 11 + N; tid++) {
		task(x, PERF_RECORD_FORK, 10, 10, tid, 10);
		snprintf(name, sizeof(name), "w%u", tid);
		comm(x, 10, tid, name, false);
		/* every other thread exits at once */
		if (tid % 2)
			task(x, PERF_RECORD_EXIT, 10, 10, tid, tid);
	}
	for (tid = 11; tid < 11 + N; tid++) {
		snprintf(name, sizeof(name), "w%u", tid);
		sample(x, 10, tid, 0xffffffff81000100ULL);
		/* an exited thread's tid, seen again, is a thread of unknown name */
		assert_int_equal(count(x, 10, tid, 0, 0xffffffff81000100ULL,
				       tid % 2 ? "" : name), 1);
	}
}

static void test_short_records_skipped(void **state)
{
	struct fix *x = *state;
	struct perf_event_header *h = (void *)x->buf;

	memset(x->buf, 0, sizeof(x->buf));
	h->size = sizeof(*h) + 8;
	h->type = PERF_RECORD_COMM;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
	h->type = PERF_RECORD_FORK;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
	h->type = PERF_RECORD_EXIT;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
	h->type = PERF_RECORD_SAMPLE;
	assert_int_equal(tk_perf_records__record(x->r, h), 0);
	assert_int_equal(x->c.samples, 0);
	assert_int_equal(x->c.losses[TK_LOSS_STACK_ERRORS], 1);
	assert_int_equal(tk_stacks__size(x->c.stacks), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_generations_and_comms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_records_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_cpu_switches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_cpu_unpaired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_cpu_switch_state, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
