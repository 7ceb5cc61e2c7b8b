// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of tracekit numa on the running kernel, through the
 * session (tk_numa__open with backend bpf), scoped to this test's own pid.
 *
 * It must start on any kernel with the migration tracepoints, whatever it
 * cannot attach being a "not seen" line: on the development machine fentry
 * is refused and kprobes are not built, so the misplaced-page function is a
 * line and the tracepoints are attached. Migrations with a known cause on one
 * node: writing /proc/sys/vm/compact_memory compacts memory in the writer's
 * context (reason compaction, pid = this test); how many pages move is the
 * kernel's business, so the check is that they are counted for this pid,
 * agree among the report's views, do not exceed /proc/vmstat's
 * pgmigrate_success, and land on this test's stack with --stacks. Known
 * counts across two nodes are checked in the guests (tests/vm/matrix.sh).
 *
 * The node-pair counting of misplaced-page migrations (pair_add, which the
 * misplaced-page function's exit runs; neither fentry nor kprobes attach
 * here) is run by BPF_PROG_TEST_RUN through the object's test program
 * pair_add_test: two threads insert the same new pairs at once (the second
 * insert of a pair is -EEXIST, and must still add), and a map too small is
 * counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../lib/spawn.h"
#include "bpf/numa_trace.h"
#include "core/percpu.h"
#include "numa/numa_report.h"
#include "caps/caps.h"
#include "numa_trace.skel.h"

static struct tk_caps caps;

static void need_caps(void)
{
	static bool done;
	struct tk_caps_opts co = { .sz = sizeof(co) };

	NEED_ROOT();
	if (!done) {
		assert_int_equal(tk_caps__snapshot(&co, &caps), 0);
		done = true;
	}
	if (caps.caps[TK_CAP_TP_MM_MIGRATE_PAGES].status != TK_SUPPORTED) {
		print_message("skip: %s\n", caps.caps[TK_CAP_TP_MM_MIGRATE_PAGES].reason);
		skip();
	}
}

static struct tk_numa *open_started(int pid, bool stacks)
{
	struct tk_numa_opts o = { .sz = sizeof(o), .backend = TK_BACKEND_BPF, .stacks = stacks };
	struct tk_numa *n = NULL;
	char why[256] = "";
	int err;

	o.pids[0] = pid;
	o.nr_pids = 1;
	err = tk_numa__open(&o, &caps, &n, why, sizeof(why));
	if (err)
		fail_msg("open: %s (%s)", strerror(-err), why);
	err = tk_numa__start(n, why, sizeof(why));
	if (err)
		fail_msg("start: %s (%s)", strerror(-err), why);
	return n;
}

static bool has_missing(const struct tk_numa_report *r, const char *a, const char *b)
{
	int i;

	for (i = 0; i < r->nr_missing; i++)
		if (strstr(r->missing[i], a) && (!b || strstr(r->missing[i], b)))
			return true;
	return false;
}

static uint64_t vmstat(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	uint64_t v = 0;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ')
			v = strtoull(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Leave 64 MiB half freed, page by page, then compact from this thread. */
static int compact(void)
{
	size_t len = 64 << 20, i;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd, err = 0;

	if (buf == MAP_FAILED)
		return -errno;
	madvise(buf, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len; i += 4096)
		buf[i] = 1;
	for (i = 0; i < len; i += 8192)
		madvise(buf + i, 4096, MADV_DONTNEED);
	fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		err = -errno;
	if (fd >= 0)
		close(fd);
	munmap(buf, len);
	return err;
}

/* Whatever the kernel lacks is a line; the tracepoints are attached. */
static void test_starts_and_says_what_is_missing(void **state)
{
	struct tk_numa_report r;
	struct tk_numa *n;

	need_caps();
	n = open_started(getpid(), false);
	assert_string_equal(tk_numa__backend(n), "bpf");
	assert_int_equal(tk_numa__poll(n, 10), 0);
	assert_int_equal(tk_numa__collect(n, NULL, &r), 0);
	print_message("attached: %s\n", r.attach);
	assert_true(r.have_reasons);
	assert_non_null(strstr(r.attach, "raw_tp mm_migrate_pages (args by BTF"));
	if (caps.core.mm_migrate_has_large_folio_split)
		assert_non_null(strstr(r.attach, "large_folio_split"));
	assert_true(r.have_procs);
	assert_true(r.have_sched);
	assert_non_null(strstr(r.attach, "sched_"));
	/* mm_migrate_pages_start times migrations with no function probe */
	assert_true(r.have_latency);
	assert_non_null(strstr(r.attach, "mm_migrate_pages_start"));

	if (caps.caps[TK_CAP_FN_MIGRATE_MISPLACED].status != TK_SUPPORTED) {
		assert_false(r.have_pairs);
	} else if (caps.caps[TK_CAP_PROG_FENTRY].status == TK_SUPPORTED) {
		assert_true(r.have_pairs);
		assert_non_null(strstr(r.attach, ": fentry"));
	} else if (caps.caps[TK_CAP_PROG_KPROBE].status == TK_SUPPORTED) {
		assert_true(r.have_pairs);
		assert_non_null(strstr(r.attach, ": kprobe"));
	} else {
		/* the development machine: fentry refused, no kprobes */
		assert_false(r.have_pairs);
		assert_true(has_missing(&r, "fentry on migrate_misplaced_", "no kprobes"));
		assert_true(has_missing(&r, "refused (", "latency from mm_migrate_pages_start"));
	}
	/* an idle test process migrated nothing yet, and the numbers add up */
	assert_int_equal(r.total.failed, r.by_reason[TK_MR_COMPACTION].failed +
						 r.by_reason[TK_MR_SYSCALL].failed +
						 r.by_reason[TK_MR_NUMA_MISPLACED].failed +
						 r.by_reason[TK_MR_MEMPOLICY_MBIND].failed +
						 r.by_reason[TK_MR_DEMOTION].failed +
						 r.by_reason[TK_MR_CONTIG_RANGE].failed +
						 r.by_reason[TK_MR_LONGTERM_PIN].failed +
						 r.by_reason[TK_MR_MEMORY_FAILURE].failed +
						 r.by_reason[TK_MR_MEMORY_HOTPLUG].failed +
						 r.by_reason[TK_MR_DAMON].failed +
						 r.by_reason[TK_MR_UNKNOWN].failed);
	tk_numa_report__free(&r);
	tk_numa__free(n);
}

static const struct tk_numa_proc *find(const struct tk_numa_report *r, uint32_t pid)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	return NULL;
}

/* Compaction caused by this test: counted for it, as compaction, within vmstat's count. */
static void test_compaction_counted_for_this_pid(void **state)
{
	const struct tk_numa_proc *p;
	struct tk_numa_report r;
	struct tk_profile *prof = NULL;
	uint64_t before, after, sum = 0;
	struct tk_numa *n;
	size_t i;
	int err;

	need_caps();
	n = open_started(getpid(), true);
	before = vmstat("pgmigrate_success");
	err = compact();
	after = vmstat("pgmigrate_success");
	if (err) {
		tk_numa__free(n);
		print_message("skip: cannot write /proc/sys/vm/compact_memory: %s\n",
			      strerror(-err));
		skip();
	}
	assert_int_equal(tk_numa__poll(n, 10), 0);
	assert_int_equal(tk_numa__collect(n, NULL, &r), 0);
	p = find(&r, getpid());
	if (!p || !p->total.succeeded) {
		tk_numa_report__free(&r);
		tk_numa__free(n);
		/*
		 * Nothing moved anywhere: memory was not fragmented enough to
		 * compact, which this machine decides. But pages moved while this
		 * pid compacted, and none of them counted for it, is a failure.
		 */
		if (after == before) {
			print_message("skip: compaction moved no page anywhere (pgmigrate_success "
				      "+0)\n");
			skip();
		}
		fail_msg("pgmigrate_success +%llu while this pid compacted, and none of it "
			 "attributed to pid %d", (unsigned long long)(after - before), getpid());
	}
	print_message("compaction: %llu pages in %llu calls for pid %d; pgmigrate_success "
		      "+%llu\n", (unsigned long long)p->total.succeeded,
		      (unsigned long long)p->total.calls, getpid(),
		      (unsigned long long)(after - before));
	/* only this pid: the filter holds */
	for (i = 0; i < r.nr_procs; i++)
		assert_int_equal(r.procs[i].pid, getpid());
	assert_int_equal(p->by_reason[TK_MR_COMPACTION], p->total.succeeded);
	assert_int_equal(r.by_reason[TK_MR_COMPACTION].succeeded, p->total.succeeded);
	assert_int_equal(r.total.succeeded, p->total.succeeded);
	assert_true(p->total.calls >= 1);
	assert_true(p->total.succeeded <= after - before);

	/* --stacks: the same pages, all under this test's pid */
	assert_int_equal(tk_numa__stacks(n, &prof), 0);
	assert_non_null(prof);
	assert_string_equal(prof->value_types[0].type, "pages");
	for (i = 0; i < prof->nr_samples; i++) {
		assert_int_equal(prof->samples[i].pid, getpid());
		assert_true(prof->samples[i].nr_locations > 0);
		sum += prof->samples[i].values[0];
	}
	assert_int_equal(sum, p->total.succeeded);
	tk_profile__free(prof);
	tk_numa_report__free(&r);
	tk_numa__free(n);
}

/* Scoped to another process: this test's compaction is not counted. */
static void test_other_pid_sees_nothing(void **state)
{
	struct tk_numa_report r;
	struct tk_numa *n;
	pid_t child;
	int st;

	need_caps();
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	n = open_started(child, false);
	compact();
	assert_int_equal(tk_numa__collect(n, NULL, &r), 0);
	assert_int_equal(r.total.calls, 0);
	assert_int_equal(r.nr_procs, 0);
	tk_numa_report__free(&r);
	tk_numa__free(n);
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
}

/* ---- node pairs: pair_add by BPF_PROG_TEST_RUN ------------------------------------- */

static struct numa_trace_bpf *pair_skel(uint32_t max_entries)
{
	struct numa_trace_bpf *skel;

	NEED_ROOT();
	skel = numa_trace_bpf__open();
	assert_non_null(skel);
	bpf_program__set_autoload(skel->progs.pair_add_test, true);
	assert_int_equal(bpf_map__set_max_entries(skel->maps.pairs, max_entries), 0);
	assert_int_equal(numa_trace_bpf__load(skel), 0);
	return skel;
}

/* pair_add of 1 to the pairs (@src, 0 .. @n - 1) */
static void run_pairs(struct numa_trace_bpf *skel, uint64_t src, uint64_t n)
{
	uint64_t args[2] = { src, n };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args, .ctx_size_in = sizeof(args));

	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.pair_add_test), &o),
			 0);
}

static uint64_t counter(struct numa_trace_bpf *skel, enum nt_counter c)
{
	uint64_t sum[NT_CNT__COUNT];

	tk_percpu__sum(skel->bss->counters, NT_MAX_CPUS, NT_CNT__COUNT, sum);
	return sum[c];
}

#define RACE_ROUNDS 2000
#define RACE_PAIRS 256

static pthread_barrier_t race_start, race_done;

static void *racer(void *arg)
{
	struct numa_trace_bpf *skel = arg;
	int r;

	for (r = 0; r < RACE_ROUNDS; r++) {
		pthread_barrier_wait(&race_start);
		run_pairs(skel, r, RACE_PAIRS);
		pthread_barrier_wait(&race_done);
	}
	return NULL;
}

/*
 * Two threads (one per CPU here) add 1 to the same 256 new pairs at once,
 * round after round: every pair must hold 2 after each round. Dropping the
 * add on -EEXIST, as the misplaced-page exit did, loses one in some rounds.
 */
static void test_pair_race(void **state)
{
	struct numa_trace_bpf *skel = pair_skel(4 * RACE_PAIRS);
	struct nt_pair_key key;
	uint64_t v, lost = 0;
	pthread_t t[2];
	int fd = bpf_map__fd(skel->maps.pairs), r, i;

	pthread_barrier_init(&race_start, NULL, 3);
	pthread_barrier_init(&race_done, NULL, 3);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, racer, skel), 0);
	for (r = 0; r < RACE_ROUNDS; r++) {
		pthread_barrier_wait(&race_start);
		pthread_barrier_wait(&race_done);
		for (i = 0; i < RACE_PAIRS; i++) {
			key.src = r;
			key.dst = i;
			v = 0;
			assert_int_equal(bpf_map_lookup_elem(fd, &key, &v), 0);
			if (v != 2)
				lost += 2 - v;
			assert_int_equal(bpf_map_delete_elem(fd, &key), 0);
		}
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	print_message("%d rounds of %d new pairs from 2 threads: %" PRIu64 " adds lost, "
		      "%" PRIu64 " counted full\n", RACE_ROUNDS, RACE_PAIRS, lost,
		      counter(skel, NT_CNT_MISPLACED_PAIR_FULL));
	assert_int_equal(lost, 0);
	assert_int_equal(counter(skel, NT_CNT_MISPLACED_PAIR_FULL), 0);
	pthread_barrier_destroy(&race_start);
	pthread_barrier_destroy(&race_done);
	numa_trace_bpf__destroy(skel);
}

/* A pairs map of 4: the 252 other new pairs are counted, the 4 kept are whole */
static void test_pair_map_full(void **state)
{
	struct numa_trace_bpf *skel = pair_skel(4);
	struct nt_pair_key key, next;
	int fd = bpf_map__fd(skel->maps.pairs), n = 0;
	bool first = true;
	uint64_t v;

	run_pairs(skel, 7, 256);
	run_pairs(skel, 7, 256);
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		assert_int_equal(bpf_map_lookup_elem(fd, &key, &v), 0);
		assert_int_equal(v, 2);
		n++;
	}
	assert_int_equal(n, 4);
	assert_int_equal(counter(skel, NT_CNT_MISPLACED_PAIR_FULL), 2 * 252);
	numa_trace_bpf__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_and_says_what_is_missing),
		cmocka_unit_test(test_compaction_counted_for_this_pid),
		cmocka_unit_test(test_other_pid_sees_nothing),
		cmocka_unit_test(test_pair_race),
		cmocka_unit_test(test_pair_map_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
