// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The NUMA report: its helpers (pairs merge, processes grow and are found
 * again, latencies land in their log2 bucket, sorting), an interval as the
 * total minus the previous total, the text within 80 columns with every
 * "not seen" line, the JSON a strict checker and jq accept with nulls for
 * what was not observed, and the vmstat backend against fixture trees (two
 * nodes whose counters move between two reads; counters a kernel lacks).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "../lib/spawn.h"
#include "numa/numa_int.h"
#include "numa/numa_report.h"

/* ---- helpers ---------------------------------------------------------------------- */

static char *render(const struct tk_numa_report *r, bool json, int top)
{
	struct {
		char *buf;
		size_t len;
	} *m = calloc(1, sizeof(*m));
	char *buf;
	FILE *f;
	int err;

	assert_non_null(m);
	f = open_memstream(&m->buf, &m->len);
	assert_non_null(f);
	err = json ? tk_numa_report__write_json(r, f) : tk_numa_report__write_text(r, f, top);
	fclose(f);
	buf = m->buf;
	free(m);
	assert_int_equal(err, 0);
	if (getenv("TK_TEST_SHOW"))	/* see what is checked */
		fputs(buf, stderr);
	return buf;
}

static void assert_within_80(const char *text)
{
	const char *where;
	size_t n = fx_longest_line(text, &where);

	if (n > 80) {
		print_error("line of %zu columns: %.*s\n", n, (int)n, where);
		fail();
	}
}

static void assert_json_ok(const char *text)
{
	char err[256];

	if (fx_json_check(text, strlen(text), err, sizeof(err))) {
		print_error("invalid JSON: %s\n%s\n", err, text);
		fail();
	}
}

/* jq -e @filter on @json; true when it printed true */
static bool jq(const char *json, const char *filter)
{
	char path[] = "/tmp/tk-numa-json.XXXXXX", cmd[1024], out[256];
	int fd = mkstemp(path), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	snprintf(cmd, sizeof(cmd), "jq -e '%s' %s 2>&1", filter, path);
	rc = tk_test_capture(cmd, out, sizeof(out));
	unlink(path);
	if (rc != 0)
		print_error("jq '%s': %d: %s\n", filter, rc, out);
	return rc == 0;
}

static bool have_jq(void)
{
	char out[64];

	return tk_test_capture("command -v jq", out, sizeof(out)) == 0;
}

/* A report with every part filled, as the bpf backend would fill it. */
static void fill_full(struct tk_numa_report *r)
{
	struct tk_numa_proc *p;
	int i;

	tk_numa_report__init(r, "bpf", 2);
	r->duration_ns = 2000000000;
	r->have_reasons = r->have_pairs = r->have_procs = r->have_latency = r->have_sched = true;
	r->total.succeeded = 16389;
	r->total.failed = 2;
	r->total.thp_succeeded = 1;
	r->total.calls = 7;
	r->by_reason[TK_MR_SYSCALL].succeeded = 16384;
	r->by_reason[TK_MR_NUMA_MISPLACED].succeeded = 5;
	r->by_reason[TK_MR_NUMA_MISPLACED].failed = 2;
	assert_int_equal(tk_numa_report__add_pair(r, 0, 1, 16384), 0);
	assert_int_equal(tk_numa_report__add_pair(r, 1, 0, 5), 0);
	p = tk_numa_report__proc(r, 100, "mover");
	assert_non_null(p);
	p->total.succeeded = 16384;
	p->by_reason[TK_MR_SYSCALL] = 16384;
	p = tk_numa_report__proc(r, 200, "balanced");
	assert_non_null(p);
	p->total.succeeded = 5;
	p->total.failed = 2;
	p->by_reason[TK_MR_NUMA_MISPLACED] = 5;
	p->misplaced = 7;
	p->misplaced_ok = 5;
	for (i = 0; i < 5; i++)
		tk_numa_report__latency(r, 3000 + 1000 * i);
	r->sched[TK_NUMA_SCHED_MOVE] = 3;
	r->sched[TK_NUMA_SCHED_SWAP] = 1;
	tk_numa_report__missing(r, "fentry on migrate_misplaced_folio: refused (EPERM): no "
				"per-migration latency");
	snprintf(r->attach, sizeof(r->attach), "tp_btf/mm_migrate_pages, tp_btf/sched_move_numa");
	tk_numa_report__sort(r);
}

/* ---- the model ------------------------------------------------------------------ */

static void test_reason_names(void **state)
{
	static const char *const want[TK_MR__COUNT] = {
		"compaction", "memory_failure", "memory_hotplug", "syscall_or_cpuset",
		"mempolicy_mbind", "numa_misplaced", "contig_range", "longterm_pin",
		"demotion", "damon", "unknown",
	};
	int i;

	for (i = 0; i < TK_MR__COUNT; i++)
		assert_string_equal(tk_mig_reason__name(i), want[i]);
	assert_string_equal(tk_mig_reason__name(TK_MR__COUNT), "unknown");
	assert_string_equal(tk_mig_reason__name((enum tk_mig_reason)-1), "unknown");
}

static void test_pairs(void **state)
{
	struct tk_numa_report r;
	int i;

	tk_numa_report__init(&r, "bpf", 2);
	assert_int_equal(tk_numa_report__add_pair(&r, 0, 1, 10), 0);
	assert_int_equal(tk_numa_report__add_pair(&r, 1, 0, 3), 0);
	assert_int_equal(tk_numa_report__add_pair(&r, 0, 1, 5), 0);
	assert_int_equal(tk_numa_report__add_pair(&r, -1, 1, 100), 0);
	assert_int_equal(r.nr_pairs, 3);
	tk_numa_report__sort(&r);
	assert_int_equal(r.pairs[0].src, -1);
	assert_int_equal(r.pairs[0].pages, 100);
	assert_int_equal(r.pairs[1].src, 0);
	assert_int_equal(r.pairs[1].dst, 1);
	assert_int_equal(r.pairs[1].pages, 15);
	for (i = 0; r.nr_pairs < TK_NUMA_MAX_PAIRS; i++)
		assert_int_equal(tk_numa_report__add_pair(&r, 10 + i, 0, 1), 0);
	assert_int_equal(tk_numa_report__add_pair(&r, 5000, 0, 1), -E2BIG);
	/* an existing pair still adds up when the table is full */
	assert_int_equal(tk_numa_report__add_pair(&r, 0, 1, 1), 0);
	tk_numa_report__free(&r);
}

static void test_procs(void **state)
{
	struct tk_numa_report r;
	struct tk_numa_proc *p;
	uint32_t pid;

	tk_numa_report__init(&r, "bpf", 1);
	for (pid = 1; pid <= 100; pid++) {
		p = tk_numa_report__proc(&r, pid, "worker");
		assert_non_null(p);
		p->total.succeeded = pid % 7;
	}
	assert_int_equal(r.nr_procs, 100);
	p = tk_numa_report__proc(&r, 42, NULL);
	assert_non_null(p);
	assert_int_equal(p->pid, 42);
	assert_string_equal(p->comm, "worker");
	assert_int_equal(r.nr_procs, 100);
	/* a name learned later fills an empty one */
	p = tk_numa_report__proc(&r, 1000, NULL);
	assert_non_null(p);
	assert_string_equal(p->comm, "");
	p = tk_numa_report__proc(&r, 1000, "late");
	assert_string_equal(p->comm, "late");
	/* a name longer than comm is cut, NUL-terminated */
	p = tk_numa_report__proc(&r, 1001, "a-very-long-process-name");
	assert_int_equal(strlen(p->comm), 15);

	tk_numa_report__sort(&r);
	assert_int_equal(r.procs[0].total.succeeded, 6);
	assert_int_equal(r.procs[0].pid, 6);	/* 6, 13, 20 ... have 6: lowest pid first */
	assert_int_equal(r.procs[1].pid, 13);

	for (pid = 2000; r.nr_procs < TK_NUMA_MAX_PROCS; pid++)
		assert_non_null(tk_numa_report__proc(&r, pid, "x"));
	errno = 0;
	assert_null(tk_numa_report__proc(&r, 99999, "x"));
	assert_int_equal(errno, E2BIG);
	assert_non_null(tk_numa_report__proc(&r, 42, NULL));	/* known ones still found */
	tk_numa_report__free(&r);
	assert_null(r.procs);
	assert_int_equal(r.nr_procs, 0);
	tk_numa_report__free(&r);	/* twice is harmless */
}

static void test_latency(void **state)
{
	struct tk_numa_report r;

	tk_numa_report__init(&r, "bpf", 1);
	tk_numa_report__latency(&r, 0);
	tk_numa_report__latency(&r, 1);
	tk_numa_report__latency(&r, 2);
	tk_numa_report__latency(&r, 3);
	tk_numa_report__latency(&r, 1023);
	tk_numa_report__latency(&r, 1024);
	tk_numa_report__latency(&r, UINT64_C(1) << 50);
	assert_int_equal(r.latency[0], 2);
	assert_int_equal(r.latency[1], 2);
	assert_int_equal(r.latency[9], 1);
	assert_int_equal(r.latency[10], 1);
	assert_int_equal(r.latency[TK_NUMA_LAT_BUCKETS - 1], 1);
	assert_int_equal(r.latency_count, 7);
	assert_int_equal(r.latency_sum_ns, 0 + 1 + 2 + 3 + 1023 + 1024 + (UINT64_C(1) << 50));
	assert_int_equal(r.latency_max_ns, UINT64_C(1) << 50);
}

static void test_missing(void **state)
{
	struct tk_numa_report r;
	char long_line[400];
	int i;

	tk_numa_report__init(&r, "vmstat", 1);
	tk_numa_report__missing(&r, "kprobes: %s", "not built");
	assert_int_equal(r.nr_missing, 1);
	assert_string_equal(r.missing[0], "kprobes: not built");
	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	tk_numa_report__missing(&r, "%s", long_line);
	assert_int_equal(strlen(r.missing[1]), sizeof(r.missing[1]) - 1);
	for (i = 0; i < 40; i++)
		tk_numa_report__missing(&r, "line %d", i);
	assert_int_equal(r.nr_missing, TK_NUMA_MAX_MISSING);
	assert_string_equal(r.missing[TK_NUMA_MAX_MISSING - 1], "line 13");
}

/* ---- intervals ------------------------------------------------------------------ */

static void test_diff(void **state)
{
	struct tk_numa_report prev, total, iv;
	struct tk_numa_proc *p;

	fill_full(&prev);
	prev.have_vmstat = prev.have_numastat = true;
	prev.pgmigrate_success = 100;
	prev.pairs_lost = 3;
	prev.nr_numastat = 1;
	prev.numastat[0] = (struct tk_numa_nodestat){ .node = 0, .numa_hit = 50, .other_node = 1 };
	assert_int_equal(tk_numa_report__copy(&total, &prev), 0);
	assert_ptr_not_equal(total.procs, prev.procs);

	/* the next total: more of some, the same of others, something new */
	total.total.succeeded += 10;
	total.by_reason[TK_MR_SYSCALL].succeeded += 10;
	total.sched[TK_NUMA_SCHED_STICK] = 4;
	assert_int_equal(tk_numa_report__add_pair(&total, 0, 1, 10), 0);
	assert_int_equal(tk_numa_report__add_pair(&total, 1, 1, 2), 0);
	p = tk_numa_report__proc(&total, 100, NULL);
	p->total.succeeded += 10;
	p->by_reason[TK_MR_SYSCALL] += 10;
	p = tk_numa_report__proc(&total, 300, "newcomer");
	p->total.succeeded = 2;
	tk_numa_report__latency(&total, 100);
	total.pgmigrate_success = 112;
	total.pairs_lost = 10;
	total.numastat[0].numa_hit = 80;
	total.numastat[0].other_node = 0;	/* went backwards: 0, not a wrap */
	total.nr_numastat = 2;
	total.numastat[1] = (struct tk_numa_nodestat){ .node = 1, .numa_hit = 9 };

	assert_int_equal(tk_numa_report__diff(&iv, &total, &prev), 0);
	assert_string_equal(iv.backend, "bpf");
	assert_true(iv.have_pairs && iv.have_procs && iv.have_latency && iv.have_vmstat);
	assert_int_equal(iv.total.succeeded, 10);
	assert_int_equal(iv.total.failed, 0);
	assert_int_equal(iv.by_reason[TK_MR_SYSCALL].succeeded, 10);
	assert_int_equal(iv.by_reason[TK_MR_NUMA_MISPLACED].succeeded, 0);
	assert_int_equal(iv.sched[TK_NUMA_SCHED_STICK], 4);
	assert_int_equal(iv.sched[TK_NUMA_SCHED_MOVE], 0);
	assert_int_equal(iv.nr_pairs, 2);
	assert_int_equal(iv.pairs[0].src, 0);
	assert_int_equal(iv.pairs[0].pages, 10);
	assert_int_equal(iv.pairs[1].src, 1);
	assert_int_equal(iv.pairs[1].dst, 1);
	/* migrations whose pair the BPF map had no room for, in this interval */
	assert_int_equal(iv.pairs_lost, 7);
	/* processes with nothing new are left out */
	assert_int_equal(iv.nr_procs, 2);
	assert_int_equal(iv.procs[0].pid, 100);
	assert_int_equal(iv.procs[0].total.succeeded, 10);
	assert_string_equal(iv.procs[0].comm, "mover");
	assert_int_equal(iv.procs[1].pid, 300);
	assert_string_equal(iv.procs[1].comm, "newcomer");
	/* one new sample of 100 ns: a bucket, the count; the maximum did not change */
	assert_int_equal(iv.latency_count, 1);
	assert_int_equal(iv.latency[6], 1);
	assert_int_equal(iv.latency_sum_ns, 100);
	assert_int_equal(iv.latency_max_ns, 127);
	assert_int_equal(iv.pgmigrate_success, 12);
	assert_int_equal(iv.nr_numastat, 2);
	assert_int_equal(iv.numastat[0].numa_hit, 30);
	assert_int_equal(iv.numastat[0].other_node, 0);
	assert_int_equal(iv.numastat[1].numa_hit, 9);
	/* what could not be seen is said in every interval */
	assert_int_equal(iv.nr_missing, 1);
	assert_string_equal(iv.attach, total.attach);
	tk_numa_report__free(&iv);

	/* a new maximum is the interval's maximum */
	tk_numa_report__latency(&total, 1000000);
	assert_int_equal(tk_numa_report__diff(&iv, &total, &prev), 0);
	assert_int_equal(iv.latency_max_ns, 1000000);
	tk_numa_report__free(&iv);

	/* nothing new: an empty interval */
	assert_int_equal(tk_numa_report__diff(&iv, &prev, &prev), 0);
	assert_int_equal(iv.total.succeeded, 0);
	assert_int_equal(iv.nr_pairs, 0);
	assert_int_equal(iv.nr_procs, 0);
	assert_int_equal(iv.latency_count, 0);
	assert_int_equal(iv.latency_max_ns, 0);
	tk_numa_report__free(&iv);

	tk_numa_report__free(&total);
	tk_numa_report__free(&prev);
}

/* sched_skip_vma_numa as the bpf backend fills it: the kernel's names by value */
static void fill_skip(struct tk_numa_report *r)
{
	static const char *const names[] = { "unsuitable", "shared_ro", "inaccessible",
					     "scan_delay", "pid_inactive", "ignore_pid",
					     "seq_completed" };
	int i;

	r->have_skip_vma = true;
	r->nr_skip = 7;
	for (i = 0; i < 7; i++)
		snprintf(r->skip_names[i], sizeof(r->skip_names[i]), "%s", names[i]);
}

static void test_skip_vma(void **state)
{
	struct tk_numa_report prev, total, iv;
	struct tk_numa_proc *p;
	char *out;

	fill_full(&prev);
	fill_skip(&prev);
	prev.skip_vma[1] = 40;		/* shared_ro */
	prev.skip_vma[3] = 7;		/* scan_delay */
	prev.procs[1].skip_vma[1] = 40;
	assert_int_equal(tk_numa_report__copy(&total, &prev), 0);
	assert_string_equal(total.skip_names[6], "seq_completed");

	/* the next total: more skips, one process that only had its VMAs skipped */
	total.skip_vma[1] = 45;
	total.skip_vma[6] = 2;
	p = tk_numa_report__proc(&total, 400, "scanned");
	p->skip_vma[6] = 2;
	p = tk_numa_report__proc(&total, 200, NULL);
	p->skip_vma[1] = 45;

	assert_int_equal(tk_numa_report__diff(&iv, &total, &prev), 0);
	assert_true(iv.have_skip_vma);
	assert_int_equal(iv.nr_skip, 7);
	assert_string_equal(iv.skip_names[1], "shared_ro");
	assert_int_equal(iv.skip_vma[1], 5);
	assert_int_equal(iv.skip_vma[3], 0);
	assert_int_equal(iv.skip_vma[6], 2);
	/* skips alone keep a process in the interval */
	assert_int_equal(iv.nr_procs, 2);
	assert_int_equal(iv.procs[0].pid, 200);
	assert_int_equal(iv.procs[0].skip_vma[1], 5);
	assert_int_equal(iv.procs[1].pid, 400);
	assert_int_equal(iv.procs[1].skip_vma[6], 2);

	out = render(&iv, false, 0);
	assert_within_80(out);
	assert_non_null(strstr(out, "NUMA balancing skipped VMAs: reason"));
	assert_non_null(strstr(out, "\n  shared_ro                                      5\n"));
	assert_non_null(strstr(out, "\n  scan_delay                                     0\n"));
	free(out);
	out = render(&iv, true, 0);
	assert_json_ok(out);
	assert_non_null(strstr(out, "\"skip_vma\":{\"unsuitable\":0,\"shared_ro\":5,"));
	if (have_jq()) {
		assert_true(jq(out, ".have.skip_vma and (.skip_vma | keys | length) == 7 and "
				    ".skip_vma.seq_completed == 2"));
		assert_true(jq(out, ".processes[1].pid == 400 and "
				    ".processes[1].skip_vma.seq_completed == 2"));
	}
	free(out);
	tk_numa_report__free(&iv);

	/* nothing new: zeros, the names still there */
	assert_int_equal(tk_numa_report__diff(&iv, &prev, &prev), 0);
	assert_int_equal(iv.skip_vma[1], 0);
	assert_string_equal(iv.skip_names[0], "unsuitable");
	assert_int_equal(iv.nr_procs, 0);
	tk_numa_report__free(&iv);

	/* a kernel without the tracepoint: null, even filled */
	total.have_skip_vma = false;
	out = render(&total, true, 0);
	assert_json_ok(out);
	assert_non_null(strstr(out, "\"skip_vma\":null"));
	if (have_jq())
		assert_true(jq(out, "(.have.skip_vma | not) and .processes[0].skip_vma == null"));
	free(out);
	out = render(&total, false, 0);
	assert_null(strstr(out, "skipped VMAs"));
	free(out);

	tk_numa_report__free(&total);
	tk_numa_report__free(&prev);
}

/* ---- text ------------------------------------------------------------------------- */

static void test_text_full(void **state)
{
	struct tk_numa_report r;
	char *out;

	fill_full(&r);
	out = render(&r, false, 20);
	assert_within_80(out);
	assert_non_null(strstr(out, "NUMA page migrations: 2.0 s, backend bpf, 2 nodes"));
	assert_non_null(strstr(out, "syscall_or_cpuset"));
	assert_non_null(strstr(out, "0 -> 1"));
	/* the top process first, with its top reason */
	assert_true(strstr(out, "mover") < strstr(out, "balanced"));
	assert_non_null(strstr(out, "16384           0  syscall_or_cpuset"));
	assert_non_null(strstr(out, "count 5, mean 5.0us, max 7.0us"));
	assert_non_null(strstr(out, "2048-4095"));
	assert_non_null(strstr(out, "4096-8191"));
	assert_non_null(strstr(out, "  moved to their preferred node                  3\n"));
	assert_non_null(strstr(out, "  swapped with a task there                      1\n"));
	assert_non_null(strstr(out, "not seen: fentry on migrate_misplaced_folio: refused "));
	assert_non_null(strstr(out, "attached: tp_btf/mm_migrate_pages"));
	/* vmstat was not read: no section */
	assert_null(strstr(out, "/proc/vmstat"));
	free(out);
	tk_numa_report__free(&r);
}

/* Everything at its widest: long names, long lines, every bucket, big numbers. */
static void test_text_within_80(void **state)
{
	struct tk_numa_report r;
	struct tk_numa_proc *p;
	const uint64_t big = UINT64_C(99999999999);	/* 11 digits */
	char *out, *line;
	int i;

	fill_full(&r);
	r.nr_nodes = 64;
	r.duration_ns = INT64_C(86400) * 1000000000;
	r.total.succeeded = r.total.failed = r.total.thp_succeeded = big;
	r.total.thp_failed = r.total.thp_split = r.total.large_folio_split = r.total.calls = big;
	for (i = 0; i < TK_MR__COUNT; i++)
		r.by_reason[i] = r.total;
	for (i = 0; r.nr_pairs < TK_NUMA_MAX_PAIRS; i++)
		tk_numa_report__add_pair(&r, i - 1, i % 64, big);
	for (i = 0; i < 50; i++) {
		p = tk_numa_report__proc(&r, 4000000 + i, "\x01\x7f\xc3\xa9long-name-of-16");
		p->total = r.total;
		p->by_reason[TK_MR_LONGTERM_PIN] = big;
	}
	memcpy(r.procs[0].comm, "sixteen-bytes-xx", 16);	/* no NUL */
	for (i = 0; i < TK_NUMA_LAT_BUCKETS; i++)
		r.latency[i] = big - i;
	r.latency_count = r.latency_sum_ns = r.latency_max_ns = UINT64_MAX;
	r.sched[0] = r.sched[1] = r.sched[2] = big;
	r.have_vmstat = r.have_numastat = true;
	r.pgmigrate_success = r.numa_hint_faults_local = r.vmstat_thp_migration_fail = big;
	r.nr_numastat = TK_NUMA_MAX_NODESTAT;
	for (i = 0; i < TK_NUMA_MAX_NODESTAT; i++)
		r.numastat[i] = (struct tk_numa_nodestat){ i, big, 999999999, 99999999, 9999999999,
							   999999999, 999999999 };
	fill_skip(&r);
	snprintf(r.skip_names[2], sizeof(r.skip_names[2]), "%s", "twenty-three-chars-long");
	for (i = 0; i < 7; i++)
		r.skip_vma[i] = big;
	r.nr_skip = 9;			/* slot 7 unnamed but counted, slot 8 unused */
	r.skip_vma[7] = big;
	r.nr_missing = 0;
	tk_numa_report__missing(&r, "%0159d", 7);	/* one word longer than a line */
	tk_numa_report__missing(&r, "fentry on migrate_misplaced_folio: refused (EPERM): no "
				"per-migration latency; kprobe on migrate_misplaced_folio: not built "
				"(CONFIG_KPROBES off) either, so no latency at all here");
	tk_numa_report__missing(&r, "tab\there\nnewline");
	memset(r.attach, 'a', sizeof(r.attach) - 1);
	r.attach[100] = ' ';
	tk_numa_report__sort(&r);

	out = render(&r, false, 1000);
	assert_within_80(out);
	/* control and non-ASCII bytes shown as '?' */
	assert_non_null(strstr(out, "????long-name-o "));
	assert_non_null(strstr(out, "sixteen-bytes-xx"));
	assert_non_null(strstr(out, "longterm_pin"));
	assert_non_null(strstr(out, "? -> 0"));
	assert_non_null(strstr(out, "549755813888+"));	/* the last bucket is open */
	assert_non_null(strstr(out, "tab?here?newline"));
	/* each "not seen" line starts one, continuation lines are indented */
	line = strstr(out, "not seen: 0000");
	assert_non_null(line);
	assert_non_null(strstr(out, "\n    per-migration latency; kprobe") ?:
			strstr(out, "\n    latency; kprobe"));
	free(out);

	out = render(&r, false, 3);
	assert_within_80(out);
	assert_non_null(strstr(out, "... 253 more"));
	assert_non_null(strstr(out, "... 49 more"));
	free(out);
	tk_numa_report__free(&r);
}

static void test_text_vmstat(void **state)
{
	struct tk_numa_report r;
	char *out;

	tk_numa_report__init(&r, "vmstat", 1);
	r.have_vmstat = true;
	r.pgmigrate_success = r.total.succeeded = 12;
	r.numa_pages_migrated = r.by_reason[TK_MR_NUMA_MISPLACED].succeeded = 7;
	tk_numa_report__missing(&r, "per process, per reason (other than NUMA balancing and "
				"tiering), node pairs, latencies: need eBPF (see 'tracekit caps')");
	out = render(&r, false, 20);
	assert_within_80(out);
	assert_non_null(strstr(out, "backend vmstat, 1 node\n"));
	assert_non_null(strstr(out, "  numa_misplaced               7           -"));
	assert_non_null(strstr(out, "pgmigrate_success                 12"));
	/* not observed: no sections pretending to zeros */
	assert_null(strstr(out, "top processes"));
	assert_null(strstr(out, "node pairs"));
	assert_null(strstr(out, "time each took"));
	assert_non_null(strstr(out, "not seen: per process, per reason"));
	free(out);
}

/* ---- JSON ------------------------------------------------------------------------- */

static void test_json_full(void **state)
{
	struct tk_numa_report r;
	char *out;

	fill_full(&r);
	memcpy(r.procs[1].comm, "quote\"back\\sl\x01", 15);
	out = render(&r, true, 0);
	assert_json_ok(out);
	assert_non_null(strstr(out, "\"backend\":\"bpf\""));
	assert_non_null(strstr(out, "{\"src\":0,\"dst\":1,\"pages\":16384}"));
	assert_non_null(strstr(out, "\"have\":{\"reasons\":true,\"pairs\":true,\"processes\":true,"
				    "\"latency\":true,\"sched\":true,\"vmstat\":false"));
	assert_non_null(strstr(out, "\"vmstat\":null"));
	assert_non_null(strstr(out, "\"missing\":[\"fentry on migrate_misplaced_folio"));
	if (have_jq()) {
		assert_true(jq(out, ".pairs[0] == {\"src\":0,\"dst\":1,\"pages\":16384}"));
		assert_true(jq(out, ".processes[0].pid == 100 and .processes[0].comm == \"mover\" "
				    "and .processes[0].by_reason.syscall_or_cpuset == 16384"));
		assert_true(jq(out, ".processes[1].failed == 2 and .processes[1].misplaced == 7"));
		assert_true(jq(out, ".reasons.numa_misplaced.failed == 2 and "
				    "(.reasons | keys | length) == 11"));
		assert_true(jq(out, ".latency.count == 5 and .latency.sum_ns == 25000 and "
				    ".latency.max_ns == 7000 and .latency.buckets[0] == "
				    "{\"le_ns\":4095,\"count\":2}"));
		assert_true(jq(out, ".sched == {\"move\":3,\"swap\":1,\"stick\":0}"));
		assert_true(jq(out, ".pages.succeeded == 16389 and .duration_ns == 2000000000"));
	} else {
		print_message("note: jq not installed: only the strict checker ran\n");
	}
	free(out);
	tk_numa_report__free(&r);
}

static void test_json_not_observed(void **state)
{
	struct tk_numa_report r;
	char *out;

	tk_numa_report__init(&r, "vmstat", 2);
	r.have_vmstat = r.have_numastat = true;
	r.nr_numastat = 1;
	r.numastat[0].node = 1;
	r.numastat[0].numa_miss = 3;
	tk_numa_report__missing(&r, "need eBPF");
	r.latency[TK_NUMA_LAT_BUCKETS - 1] = 1;	/* even filled, not written when not had */
	out = render(&r, true, 0);
	assert_json_ok(out);
	assert_non_null(strstr(out, "\"pairs\":null"));
	assert_non_null(strstr(out, "\"processes\":null"));
	assert_non_null(strstr(out, "\"latency\":null"));
	assert_non_null(strstr(out, "\"sched\":null"));
	assert_non_null(strstr(out, "\"numastat\":[{\"node\":1,\"numa_hit\":0,\"numa_miss\":3"));
	assert_non_null(strstr(out, "\"missing\":[\"need eBPF\"]"));
	if (have_jq())
		assert_true(jq(out, ".have.vmstat and (.have.processes | not) and "
				    ".vmstat.pgmigrate_success == 0"));
	free(out);

	/* the last latency bucket has no upper bound */
	r.have_latency = true;
	out = render(&r, true, 0);
	assert_json_ok(out);
	assert_non_null(strstr(out, "\"buckets\":[{\"le_ns\":null,\"count\":1}]"));
	free(out);
}

/* ---- the vmstat backend, on fixture trees --------------------------------------- */

static const char vmstat_a[] =
	"nr_free_pages 1000\n"
	"numa_hit 500\n"
	"numa_pte_updates 10\n"
	"numa_hint_faults 8\n"
	"numa_hint_faults_local 6\n"
	"numa_pages_migrated 4\n"
	"pgpromote_success 1\n"
	"pgmigrate_success 20\n"
	"pgmigrate_fail 2\n"
	"pgdemote_kswapd 3\n"
	"pgdemote_direct 1\n"
	"thp_migration_success 0\n"
	"thp_migration_fail 0\n"
	"thp_migration_split 0\n";

static const char vmstat_b[] =
	"nr_free_pages 900\n"
	"numa_hit 800\n"
	"numa_pte_updates 110\n"
	"numa_hint_faults 58\n"
	"numa_hint_faults_local 26\n"
	"numa_pages_migrated 36\n"
	"pgpromote_success 5\n"
	"pgmigrate_success 16404\n"
	"pgmigrate_fail 7\n"
	"pgdemote_kswapd 13\n"
	"pgdemote_direct 3\n"
	"pgdemote_khugepaged 2\n"
	"thp_migration_success 2\n"
	"thp_migration_fail 1\n"
	"thp_migration_split 1\n";

static const char numastat_fmt[] =
	"numa_hit %d\nnuma_miss %d\nnuma_foreign %d\ninterleave_hit %d\nlocal_node %d\n"
	"other_node %d\n";

struct vm_fixture {
	struct fx *fx;
	struct tk_caps *caps;
	struct tk_numa *n;
};

static void vm_setup(struct vm_fixture *v, const char *vmstat)
{
	v->fx = fx_new();
	assert_non_null(v->fx);
	v->caps = calloc(1, sizeof(*v->caps));
	v->n = calloc(1, sizeof(*v->n));
	assert_non_null(v->caps);
	assert_non_null(v->n);
	v->caps->numa.nr_nodes = 2;
	v->caps->numa.nodes[0] = (struct tk_numa_node){ .id = 0, .cpus = "0" };
	v->caps->numa.nodes[1] = (struct tk_numa_node){ .id = 1, .cpus = "1" };
	v->caps->backends[TK_COLLECT_NUMA].backend = TK_BACKEND_VMSTAT;
	assert_int_equal(fx_write(v->fx, "proc/vmstat", vmstat), 0);
	assert_int_equal(fx_writef(v->fx, "sys/devices/system/node/node0/numastat", numastat_fmt,
				   100, 0, 5, 1, 100, 0), 0);
	assert_int_equal(fx_writef(v->fx, "sys/devices/system/node/node1/numastat", numastat_fmt,
				   50, 5, 0, 1, 40, 10), 0);
	v->n->opts.sz = sizeof(v->n->opts);
	v->n->opts.proc_root = v->fx->proc;
	v->n->opts.sys_root = v->fx->sys;
	v->n->caps = v->caps;
	v->n->nr_nodes = 2;
	v->n->be = &tk_numa_backend_vmstat;
}

static void vm_teardown(struct vm_fixture *v)
{
	v->n->be->free(v->n);
	assert_null(v->n->priv);
	free(v->n);
	free(v->caps);
	fx_free(v->fx);
}

static bool has_missing(const struct tk_numa_report *r, const char *sub)
{
	int i;

	for (i = 0; i < r->nr_missing; i++)
		if (strstr(r->missing[i], sub))
			return true;
	return false;
}

static void test_vmstat_two_nodes(void **state)
{
	const struct tk_numa_backend *be = &tk_numa_backend_vmstat;
	struct tk_numa_report r, r2, iv;
	struct vm_fixture v;
	char why[256] = "", *out;

	vm_setup(&v, vmstat_a);
	assert_string_equal(be->name, "vmstat");
	assert_null(be->stacks);
	assert_int_equal(be->open(v.n, why, sizeof(why)), 0);
	assert_int_equal(be->start(v.n, why, sizeof(why)), 0);

	/* the counters move */
	assert_int_equal(fx_write(v.fx, "proc/vmstat", vmstat_b), 0);
	assert_int_equal(fx_writef(v.fx, "sys/devices/system/node/node0/numastat", numastat_fmt,
				   400, 0, 25, 1, 390, 10), 0);
	assert_int_equal(fx_writef(v.fx, "sys/devices/system/node/node1/numastat", numastat_fmt,
				   90, 25, 0, 2, 70, 20), 0);
	assert_int_equal(be->poll(v.n, 1), 0);
	tk_numa_report__init(&r, be->name, 2);
	assert_int_equal(be->collect(v.n, &r), 0);
	assert_true(r.have_vmstat);
	assert_false(r.have_reasons || r.have_pairs || r.have_procs || r.have_latency ||
		     r.have_sched);
	assert_int_equal(r.pgmigrate_success, 16384);
	assert_int_equal(r.pgmigrate_fail, 5);
	assert_int_equal(r.total.succeeded, 16384);
	assert_int_equal(r.total.failed, 5);
	assert_int_equal(r.numa_pages_migrated, 32);
	assert_int_equal(r.by_reason[TK_MR_NUMA_MISPLACED].succeeded, 32);
	assert_int_equal(r.pgdemote_total, 14);		/* kswapd 10 + direct 2 + khugepaged 2 */
	assert_int_equal(r.by_reason[TK_MR_DEMOTION].succeeded, 14);
	assert_int_equal(r.pgpromote_success, 4);
	assert_int_equal(r.numa_hint_faults, 50);
	assert_int_equal(r.numa_hint_faults_local, 20);
	assert_int_equal(r.numa_pte_updates, 100);
	assert_int_equal(r.vmstat_thp_migration_success, 2);
	assert_int_equal(r.total.thp_succeeded, 2);
	assert_int_equal(r.vmstat_thp_migration_fail, 1);
	assert_int_equal(r.total.thp_split, 1);
	assert_true(r.have_numastat);
	assert_int_equal(r.nr_numastat, 2);
	assert_int_equal(r.numastat[0].node, 0);
	assert_int_equal(r.numastat[0].numa_hit, 300);
	assert_int_equal(r.numastat[0].numa_foreign, 20);
	assert_int_equal(r.numastat[0].other_node, 10);
	assert_int_equal(r.numastat[1].node, 1);
	assert_int_equal(r.numastat[1].numa_miss, 20);
	assert_int_equal(r.numastat[1].interleave_hit, 1);
	assert_int_equal(r.numastat[1].local_node, 30);
	assert_true(has_missing(&r, "per process, per reason (other than NUMA balancing and "
				    "tiering), node pairs, latencies: need eBPF (see 'tracekit "
				    "caps')"));
	assert_false(has_missing(&r, "has no"));
	assert_non_null(strstr(r.attach, "/vmstat"));
	assert_non_null(strstr(r.attach, "numastat"));

	out = render(&r, false, 20);
	assert_within_80(out);
	assert_non_null(strstr(out, "  node 0" "              300"));
	free(out);
	out = render(&r, true, 0);
	assert_json_ok(out);
	free(out);

	/* a second collect: still since the start; the interval is the difference */
	assert_int_equal(fx_write(v.fx, "proc/vmstat", "pgmigrate_success 16414\n"
				  "numa_pages_migrated 36\n"), 0);
	tk_numa_report__init(&r2, be->name, 2);
	assert_int_equal(be->collect(v.n, &r2), 0);
	assert_int_equal(r2.pgmigrate_success, 16394);
	assert_int_equal(tk_numa_report__diff(&iv, &r2, &r), 0);
	assert_int_equal(iv.pgmigrate_success, 10);
	assert_int_equal(iv.total.succeeded, 10);
	assert_int_equal(iv.numa_pages_migrated, 0);
	assert_int_equal(iv.pgmigrate_fail, 0);	/* the counter vanished: 0, not a wrap */
	/* and the counters that vanished are named */
	assert_true(has_missing(&r2, "/proc/vmstat has no pgmigrate_fail"));
	tk_numa_report__free(&iv);
	tk_numa_report__free(&r2);
	tk_numa_report__free(&r);
	vm_teardown(&v);
}

/* An older or smaller kernel: no NUMA balancing counters, no tiering, no numastat. */
static void test_vmstat_absent(void **state)
{
	const struct tk_numa_backend *be = &tk_numa_backend_vmstat;
	struct tk_numa_report r;
	struct vm_fixture v;
	char why[256] = "", *out;

	vm_setup(&v, "pgmigrate_success 5\npgmigrate_fail 0\n");
	assert_int_equal(fx_remove(v.fx, "sys/devices/system/node"), 0);
	v.n->opts.nr_pids = 1;
	assert_int_equal(be->open(v.n, why, sizeof(why)), 0);
	assert_int_equal(be->start(v.n, why, sizeof(why)), 0);
	assert_int_equal(fx_write(v.fx, "proc/vmstat", "pgmigrate_success 9\npgmigrate_fail 1\n"),
			 0);
	tk_numa_report__init(&r, be->name, 2);
	assert_int_equal(be->collect(v.n, &r), 0);
	assert_int_equal(r.total.succeeded, 4);
	assert_int_equal(r.total.failed, 1);
	assert_int_equal(r.numa_pages_migrated, 0);
	assert_false(r.have_numastat);
	assert_true(has_missing(&r, "/proc/vmstat has no numa_pages_migrated"));
	assert_true(has_missing(&r, "pgdemote_*"));
	assert_true(has_missing(&r, "per-node numastat: unreadable"));
	assert_true(has_missing(&r, "only these processes (-p): the counters are the whole "
				    "machine's"));
	assert_null(strstr(r.attach, "numastat"));
	out = render(&r, false, 20);
	assert_within_80(out);
	assert_null(strstr(out, "numastat (change"));
	free(out);
	tk_numa_report__free(&r);
	vm_teardown(&v);
}

static void test_vmstat_unreadable(void **state)
{
	const struct tk_numa_backend *be = &tk_numa_backend_vmstat;
	struct vm_fixture v;
	char why[256] = "";

	vm_setup(&v, "");
	assert_int_equal(fx_remove(v.fx, "proc/vmstat"), 0);
	assert_int_equal(be->open(v.n, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "vmstat"));
	vm_teardown(&v);
}

/* The parsers alone: demotion counters summed, other lines ignored, truncated text fine */
static void test_vmstat_parsers(void **state)
{
	struct tk_numa_nodestat node = { 0 };
	uint64_t vals[32] = { 0 };
	int n;

	n = tk_numa_vmstat__parse("nr_free_pages 1\nnuma_pages_migrated 16384\n"
				  "pgdemote_kswapd 5\npgdemote_direct 7\npgmigrate_success",
				  "numa_hit 1000\nnuma_miss 3\nother_node 10", vals, 32, &node);
	assert_int_equal(n, 2);
	assert_int_equal(node.numa_hit, 1000);
	assert_int_equal(node.numa_miss, 3);
	assert_int_equal(node.other_node, 10);
	assert_int_equal(tk_numa_vmstat__parse("", NULL, vals, 32, NULL), 0);
	assert_int_equal(tk_numa_vmstat__parse(NULL, "numa_hit", vals, 0, &node), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_pairs),
		cmocka_unit_test(test_procs),
		cmocka_unit_test(test_latency),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_skip_vma),
		cmocka_unit_test(test_text_full),
		cmocka_unit_test(test_text_within_80),
		cmocka_unit_test(test_text_vmstat),
		cmocka_unit_test(test_json_full),
		cmocka_unit_test(test_json_not_observed),
		cmocka_unit_test(test_vmstat_two_nodes),
		cmocka_unit_test(test_vmstat_absent),
		cmocka_unit_test(test_vmstat_unreadable),
		cmocka_unit_test(test_vmstat_parsers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
