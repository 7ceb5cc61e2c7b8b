// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit cpu end to end, as a user runs it, on the real kernel, with both
 * backends: workloads with known behaviour (tests/workloads/cpu_*), outputs
 * read back (folded for the arithmetic, go tool pprof for the pprof files).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spawn.h"

static char tmpdir[] = "/tmp/tk-cpu-test.XXXXXX";
static char out[1 << 20];

/* a file in this test's temporary directory */
#define path_in_tmp(name) tk_test_path(tmpdir, name)

/* Sum the counts of folded lines for which @match(line) holds. */
static unsigned long folded_sum(const char *file, bool (*match)(const char *, const void *),
				const void *arg, unsigned long *total)
{
	char line[16384];
	unsigned long sum = 0;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	*total = 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		unsigned long n;

		assert_non_null(sp);
		n = strtoul(sp + 1, NULL, 10);
		*sp = '\0';
		*total += n;
		if (match(line, arg))
			sum += n;
	}
	fclose(f);
	return sum;
}

static bool has_sub(const char *line, const void *sub)
{
	return strstr(line, sub) != NULL;
}

static bool starts_with(const char *line, const void *prefix)
{
	return !strncmp(line, prefix, strlen(prefix));
}

/* a stack with at least one kernel frame ("_[k]" is the folded convention) */
static bool has_kernel(const char *line, const void *unused)
{
	return strstr(line, "_[k]") != NULL;
}

static int run_cpu(const char *backend, bool deny_bpf, char **extra)
{
	char *args[48] = { "cpu", "--backend", (char *)backend, "-F", "499" };
	int n = 5, i;

	for (i = 0; extra[i] && n < 46; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	return tk_test_run_tracekit(out, sizeof(out), deny_bpf, args);
}

/* main → caller → hot/cold, 75/25, with the perf backend and the bpf backend */
static void check_split(const char *backend)
{
	const char *folded = path_in_tmp("split.folded");
	char *extra[] = { "-o", (char *)folded, "--", (char *)tk_test_workload("cpu_split"), "3", NULL };
	unsigned long total, hot, cold, chain;
	double share;

	assert_int_equal(run_cpu(backend, false, extra), 0);
	hot = folded_sum(folded, has_sub, ";hot;", &total);
	cold = folded_sum(folded, has_sub, ";cold;", &total);
	chain = folded_sum(folded, has_sub, ";main;caller;hot;spin", &total);
	share = (double)hot / (hot + cold);
	print_message("%s: %lu samples, hot %lu, cold %lu: hot share %.3f; whole chain %lu\n",
		      backend, total, hot, cold, share, chain);
	/* 3 s at 499 Hz on one busy CPU: ~1500 samples; binomial sd of the share ~0.011 */
	assert_true(total > 500);
	assert_true(share > 0.68 && share < 0.82);
	/* the call chain is whole: main → caller → hot → spin */
	assert_true(chain > hot / 2);
}

static void test_split_bpf(void **state)
{
	NEED_ROOT();
	check_split("bpf");
}

static void test_split_perf(void **state)
{
	NEED_ROOT();
	check_split("perf");
}

/* The first cgroup v2 mount point, or NULL. */
static const char *cgroup2_mount(void)
{
	static char point[512];
	char line[2048];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - cgroup2 ");

		if (dash && sscanf(line, "%*s %*s %*s %*s %511s", point) == 1) {
			fclose(f);
			return point;
		}
	}
	fclose(f);
	return NULL;
}

/* --cgroup: only the tasks of a cgroup v2 directory, while another process burns CPU */
static void check_cgroup(const char *backend)
{
	const char *mnt = cgroup2_mount(), *folded = path_in_tmp("cgroup.folded");
	char dir[600], procs[700], pidbuf[32];
	char *extra[] = { "--cgroup", dir, "-d", "2", "-o", (char *)folded, NULL };
	unsigned long total, inside;
	pid_t in, out_pid;
	int fd;

	if (!mnt) {
		print_message("skip: no cgroup v2 hierarchy is mounted\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tk-test-%d", mnt, getpid());
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	in = fork();
	if (in == 0) {
		fd = open(procs, O_WRONLY);
		snprintf(pidbuf, sizeof(pidbuf), "%d", getpid());
		if (fd < 0 || write(fd, pidbuf, strlen(pidbuf)) < 0)
			_exit(125);
		close(fd);
		execl(tk_test_workload("cpu_split"), "cpu_split", "4", (char *)NULL);
		_exit(126);
	}
	out_pid = fork();
	if (out_pid == 0) {
		execl(tk_test_workload("cpu_shlib"), "cpu_shlib", "4", (char *)NULL);
		_exit(126);
	}
	usleep(300 * 1000);
	assert_int_equal(run_cpu(backend, false, extra), 0);
	waitpid(in, NULL, 0);
	waitpid(out_pid, NULL, 0);
	rmdir(dir);
	inside = folded_sum(folded, starts_with, "cpu_split;", &total);
	print_message("%s: cgroup samples %lu, cpu_split %lu\n", backend, total, inside);
	assert_true(total > 150);
	assert_int_equal(inside, total);	/* nothing from cpu_shlib, outside */
}

static void test_cgroup_bpf(void **state)
{
	NEED_ROOT();
	check_cgroup("bpf");
}

static void test_cgroup_perf(void **state)
{
	NEED_ROOT();
	check_cgroup("perf");
}

/* a process whose main thread exits first (its maps come from a live thread) is named */
static void check_leader_exit(const char *backend)
{
	const char *folded = path_in_tmp("leader.folded");
	char *extra[] = { "-o", (char *)folded, "--", (char *)tk_test_workload("cpu_leader_exit"), "2",
			  NULL };
	unsigned long total, named;

	assert_int_equal(run_cpu(backend, false, extra), 0);
	named = folded_sum(folded, has_sub, ";worker;orphan_worker_hot", &total);
	print_message("%s: orphan_worker_hot %lu of %lu\n", backend, named, total);
	assert_true(total > 150 && named > total * 8 / 10);
}

static void test_leader_exit_bpf(void **state)
{
	NEED_ROOT();
	check_leader_exit("bpf");
}

static void test_leader_exit_perf(void **state)
{
	NEED_ROOT();
	check_leader_exit("perf");
}

/* -- CMD follows the command's children: cpu_split runs under a shell */
static void check_follow(const char *backend)
{
	const char *folded = path_in_tmp("follow.folded");
	char cmd[600];
	char *extra[] = { "-o", (char *)folded, "--", "/bin/sh", "-c", cmd, NULL };
	unsigned long total, hot;

	snprintf(cmd, sizeof(cmd), "%s 2; true", tk_test_workload("cpu_split"));
	assert_int_equal(run_cpu(backend, false, extra), 0);
	hot = folded_sum(folded, starts_with, "cpu_split;", &total);
	print_message("%s: child cpu_split %lu of %lu\n", backend, hot, total);
	assert_true(hot > 300 && hot > total * 8 / 10);
}

static void test_follow_bpf(void **state)
{
	NEED_ROOT();
	check_follow("bpf");
}

static void test_follow_perf(void **state)
{
	NEED_ROOT();
	check_follow("perf");
}

/* pprof read back by go tool pprof; -top agrees with tracekit's own text summary */
static void check_pprof(const char *backend)
{
	const char *pb = path_in_tmp("split.pb.gz"), *txt = path_in_tmp("split.txt");
	char *extra[] = { "-o", (char *)pb, "-o", (char *)txt, "--", (char *)tk_test_workload("cpu_split"),
			  "2", NULL };
	char cmd[1024], top[1 << 16], *line, *save = NULL;
	unsigned long go_hot = 0, tk_hot = 0;
	FILE *f;

	assert_int_equal(run_cpu(backend, false, extra), 0);
	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top -nodecount=100 %s 2>&1",
		 tmpdir, pb);
	assert_int_equal(tk_test_capture(cmd, top, sizeof(top)), 0);
	assert_non_null(strstr(top, "Type: cpu"));
	/* flat samples of "spin" (the leaf under hot and cold): go's view ... */
	for (line = strtok_r(top, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		double flat;
		char unit[8];

		if (sscanf(line, " %lf%7[a-z] %*s %*s %*s %*s %255s", &flat, unit, name) == 3 &&
		    !strcmp(name, "spin"))
			go_hot = (unsigned long)(flat * (!strcmp(unit, "s") ? 1e9 :
							 !strcmp(unit, "ms") ? 1e6 :
							 !strcmp(unit, "us") ? 1e3 : 1));
	}
	/* ... and tracekit's: the text summary's self samples of "spin" */
	f = fopen(txt, "r");
	assert_non_null(f);
	while (fgets(cmd, sizeof(cmd), f)) {
		unsigned long self;
		char name[256];

		if (sscanf(cmd, " %lu %*s %*s %255s", &self, name) == 2 && !strcmp(name, "spin"))
			tk_hot = self;
	}
	fclose(f);
	print_message("%s: go tool pprof spin flat %lu ns, tracekit text spin self %lu samples\n",
		      backend, go_hot, tk_hot);
	assert_true(tk_hot > 0);
	/* cpu/nanoseconds = samples × period (1e9 / 499 ns) */
	assert_true(go_hot > 0);
	assert_true(labs((long)(go_hot / (1000000000 / 499)) - (long)tk_hot) <= 1);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -raw %s 2>&1",
		 tmpdir, pb);
	assert_int_equal(tk_test_capture(cmd, top, sizeof(top)), 0);
	assert_non_null(strstr(top, "cpu_split"));	/* the mapping's file name */
}

static void test_pprof_bpf(void **state)
{
	NEED_ROOT();
	check_pprof("bpf");
}

static void test_pprof_perf(void **state)
{
	NEED_ROOT();
	check_pprof("perf");
}

/* The "File:" line of go tool pprof -top for @pb: the profile's first mapping. */
static void pprof_file(const char *pb, char *file, size_t file_sz)
{
	char cmd[1024], top[1 << 14], *l;

	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top -nodecount=5 %s 2>&1",
		 tmpdir, pb);
	assert_int_equal(tk_test_capture(cmd, top, sizeof(top)), 0);
	l = strstr(top, "File: ");
	if (!l)
		fail_msg("no File: line:\n%s", top);
	snprintf(file, file_sz, "%.*s", (int)strcspn(l + 6, "\n"), l + 6);
}

/*
 * pprof calls the first mapping the main binary: it must be the profiled
 * program's, even when its first samples are in a library (cpu_shlib burns
 * in libcpuhot.so; Debian's perl in libperl.so.5.36).
 */
static void check_main_file(const char *backend)
{
	const char *pb = path_in_tmp("main.pb.gz");
	char *shlib[] = { "-o", (char *)pb, "--", (char *)tk_test_workload("cpu_shlib"), "2", NULL };
	char pid_s[16], *perl[] = { "-d", "2", "-o", (char *)pb, "-p", pid_s, NULL };
	char file[256];
	pid_t pid;

	assert_int_equal(run_cpu(backend, false, shlib), 0);
	pprof_file(pb, file, sizeof(file));
	print_message("%s: cpu_shlib: File: %s\n", backend, file);
	assert_string_equal(file, "cpu_shlib");

	if (access("/usr/bin/perl", X_OK)) {
		if (getenv("CI"))
			fail_msg("no /usr/bin/perl (tools/install-deps.sh installs it)");
		print_message("skip: no /usr/bin/perl\n");
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execl("/usr/bin/perl", "perl", "-e",
		      "my $s = ''; while (1) { $s .= 'x' x 64; $s = substr($s, 32) }", (char *)NULL);
		_exit(127);
	}
	usleep(300000);
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	assert_int_equal(run_cpu(backend, false, perl), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pprof_file(pb, file, sizeof(file));
	print_message("%s: perl -p: File: %s\n", backend, file);
	assert_true(!strcmp(file, "perl") || !strncmp(file, "perl5", 5));
}

static void test_main_file_bpf(void **state)
{
	NEED_ROOT();
	check_main_file("bpf");
}

static void test_main_file_perf(void **state)
{
	NEED_ROOT();
	check_main_file("perf");
}

/* a hot function in a shared library; a stripped binary; kernel frames */
static void check_shapes(const char *backend)
{
	const char *f1 = path_in_tmp("shlib.folded"), *f2 = path_in_tmp("stripped.folded"),
		   *f3 = path_in_tmp("sys.folded");
	char *shlib[] = { "-o", (char *)f1, "--", (char *)tk_test_workload("cpu_shlib"), "2", NULL };
	char *stripped[] = { "-o", (char *)f2, "--", (char *)tk_test_workload("cpu_stripped"), "2", NULL };
	char *sys[] = { "-o", (char *)f3, "--", (char *)tk_test_workload("cpu_syscalls"), "2", NULL };
	unsigned long total, n;

	assert_int_equal(run_cpu(backend, false, shlib), 0);
	n = folded_sum(f1, has_sub, ";shlib_hot", &total);
	print_message("%s: shlib_hot %lu of %lu\n", backend, n, total);
	assert_true(total > 300 && n > total / 2);

	assert_int_equal(run_cpu(backend, false, stripped), 0);
	n = folded_sum(f2, has_sub, ";cpu_stripped+0x", &total);
	print_message("%s: cpu_stripped+0x... %lu of %lu\n", backend, n, total);
	assert_true(total > 300 && n > total / 2);

	assert_int_equal(run_cpu(backend, false, sys), 0);
	n = folded_sum(f3, has_kernel, NULL, &total);
	print_message("%s: kernel frames in %lu of %lu\n", backend, n, total);
	assert_true(total > 300 && n > total / 3);
	/* named from kallsyms, not just present */
	assert_true(folded_sum(f3, has_sub, "do_syscall_64_[k]", &total) > total / 3);
	n = folded_sum(f3, has_sub, "syscall_heavy_loop", &total);
	assert_true(n > total / 2);
}

static void test_shapes_bpf(void **state)
{
	NEED_ROOT();
	check_shapes("bpf");
}

static void test_shapes_perf(void **state)
{
	NEED_ROOT();
	check_shapes("perf");
}

/* a 200 ms process started during a whole-system capture gets named frames */
static void check_short_lived(const char *backend)
{
	const char *folded = path_in_tmp("short.folded");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "499", "-d", "3", "-o",
			 (char *)folded, NULL };
	unsigned long total, named, any;
	pid_t tk = tk_test_start_tracekit(args);
	int status, i;

	assert_true(tk > 0);
	/* attached (its start can take a second or more on a loaded machine), and settled */
	assert_int_equal(tk_test_wait_attached(tk, 20000), 0);
	usleep(300000);
	for (i = 0; i < 3; i++) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "%s 200", tk_test_workload("cpu_short"));
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(waitpid(tk, &status, 0), tk);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	any = folded_sum(folded, starts_with, "cpu_short;", &total);
	named = folded_sum(folded, has_sub, ";short_lived_hot", &total);
	print_message("%s: cpu_short samples %lu, named short_lived_hot %lu (all %lu)\n", backend,
		      any, named, total);
	/* 3 × 200 ms at 499 Hz ≈ 300 samples; nearly all of them named */
	assert_true(any > 100);
	assert_true(named > any * 8 / 10);
}

static void test_short_lived_bpf(void **state)
{
	NEED_ROOT();
	check_short_lived("bpf");
}

static void test_short_lived_perf(void **state)
{
	NEED_ROOT();
	check_short_lived("perf");
}

/* A whole file, malloc'ed and NUL-terminated. */
static char *slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, n, f), n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The number after "@key": in @json (the first one), or -1. */
static long json_num(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The distinct "pid" values of a JSON profile's stacks, sorted, malloc'ed; their count in *@n. */
static long *json_pids(const char *json, size_t *n)
{
	size_t nr = 0, cap = 1024, i, distinct = 0;
	long *pids = malloc(cap * sizeof(*pids));
	const char *p;

	assert_non_null(pids);
	for (p = json; (p = strstr(p, "\"pid\":")); p += 6) {
		if (nr == cap) {
			pids = realloc(pids, (cap *= 2) * sizeof(*pids));
			assert_non_null(pids);
		}
		pids[nr++] = strtol(p + 6, NULL, 10);
	}
	qsort(pids, nr, sizeof(*pids), cmp_long);
	for (i = 0; i < nr; i++)
		if (!i || pids[i] != pids[i - 1])
			pids[distinct++] = pids[i];
	*n = distinct;
	return pids;
}

/* Distinct "pid" values of a JSON profile's stacks. */
static unsigned long json_distinct_pids(const char *json)
{
	size_t n;

	free(json_pids(json, &n));
	return n;
}

/*
 * cpu_forks under -F 1999: @n children, @jobs at once, @ms of CPU each;
 * the JSON profile's distinct pids and follow_map_full.
 */
static void run_forks(const char *n, const char *jobs, const char *ms, unsigned long *pids,
		      long *full)
{
	const char *json = path_in_tmp("forks.json");
	char *args[] = { "cpu", "--backend", "bpf", "-F", "1999", "-o", (char *)json, "--",
			 (char *)tk_test_workload("cpu_forks"), "-n", (char *)n, "-j", (char *)jobs,
			 "-m", (char *)ms, NULL };
	char *text;

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	text = slurp(json);
	*pids = json_distinct_pids(text);
	*full = json_num(text, "follow_map_full");
	free(text);
}

/*
 * 5000 children one after another (two at a time): the pid filter holds the
 * living ones, not every one ever forked (it used to name 4094 of 5000), and
 * none found it full. About 4 samples fall in each child's 2 ms.
 */
static void test_many_children_bpf(void **state)
{
	unsigned long pids;
	long full;

	NEED_ROOT();
	run_forks("5000", "2", "2", &pids, &full);
	print_message("5000 children: %lu distinct pids sampled, follow_map_full %ld\n", pids,
		      full);
	assert_int_equal(full, 0);
	assert_true(pids > 4500);
}

/*
 * The pids map cut to 8 entries (TK_TEST_MAP_ENTRIES), 40 children alive at
 * once: the command and 7 children fit; the others are counted, not sampled.
 * A child that exits before the last is forked (a slow machine) frees its
 * entry for one more: every child is followed or counted, never both.
 */
static void test_follow_map_full_bpf(void **state)
{
	unsigned long pids;
	long full;

	NEED_ROOT();
	setenv("TK_TEST_MAP_ENTRIES", "pids=8", 1);
	run_forks("40", "40", "100", &pids, &full);
	unsetenv("TK_TEST_MAP_ENTRIES");
	print_message("pids map of 8, 40 children at once: %lu pids sampled, follow_map_full "
		      "%ld\n", pids, full);
	assert_true(full > 0 && full <= 40 - 7);
	/* the sampled ones are among the command and the 40 - full children followed */
	assert_true(pids >= 1 && pids <= 1 + 40 - (unsigned long)full);
}

/* The entries of a JSON profile's "stacks": distinct (pid, tid, stack). */
static unsigned long json_entries(const char *json)
{
	unsigned long n = 0;
	const char *p;

	for (p = json; (p = strstr(p, "\"pid\":")); p += 6)
		n++;
	return n;
}

static void drained_maps(bool one_by_one)
{
	const char *json = path_in_tmp("drain.json");
	char *args[] = { "cpu", "--backend", "bpf", "-F", "199", "-o", (char *)json, "--",
			 (char *)tk_test_workload("cpu_forks"), "-n", "300", "-j", "2", "-m", "10",
			 NULL };
	unsigned long entries, counts = 0, calls = 0;
	char how[16] = "", *text;
	const char *note;

	NEED_ROOT();
	setenv("TK_TEST_MAP_ENTRIES", "counts=256,kstacks=256,ustacks=256", 1);
	setenv("TK_TEST_DRAIN_MS", "100", 1);
	if (one_by_one)
		setenv("TK_KFEAT_OFF", "map_batch", 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	unsetenv("TK_TEST_MAP_ENTRIES");
	unsetenv("TK_TEST_DRAIN_MS");
	unsetenv("TK_KFEAT_OFF");
	text = slurp(json);
	entries = json_entries(text);
	note = strstr(text, "maps drained: ");
	assert_non_null(note);
	assert_int_equal(sscanf(note, "maps drained: %lu counts in %lu bpf(2) calls (%15[a-z ])",
				&counts, &calls, how), 3);
	print_message("maps of 256 drained every 100 ms: %lu entries of %lu pids, count_map_full "
		      "%ld, stack_map_full %ld, stacks_missing_at_drain %ld; %lu counts drained "
		      "in %lu bpf(2) calls (%s)\n", entries, json_distinct_pids(text),
		      json_num(text, "count_map_full"), json_num(text, "stack_map_full"),
		      json_num(text, "stacks_missing_at_drain"), counts, calls, how);
	assert_int_equal(json_num(text, "count_map_full"), 0);
	assert_int_equal(json_num(text, "stack_map_full"), 0);
	assert_int_equal(json_num(text, "stacks_missing_at_drain"), 0);
	assert_true(entries > 256);
	assert_true(counts >= entries);
	if (one_by_one) {
		/* a get_next_key, a lookup, a delete a count, and its stacks' */
		assert_string_equal(how, "one by one");
		assert_true(calls > 3 * counts);
	} else {
		/*
		 * a few calls a drain (every 100 ms; one when nothing was counted), whatever
		 * the number of counts: 132 for 379 counts on a quiet machine, 367 for 191
		 * when a load stretched the run to 60 drains
		 */
		assert_string_equal(how, "batched");
		assert_true(calls < 3 * counts);
	}
	free(text);
}

/*
 * Draining: the counts and stacks maps cut to 256 entries, drained every
 * 100 ms (TK_TEST_DRAIN_MS), 300 children of 10 ms at 199 Hz: every child is
 * a pid of its own, so the capture counts more distinct keys than a map
 * holds, while a drain window (three intervals, at most 120 samples) fits.
 * Kept in the kernel until the end (as it was), what passed 256 would be
 * lost as count_map_full; drained, none is. Drained with the batch commands
 * (5.6+), and one entry at a time as where the kernel has none.
 */
static void test_drained_maps_bpf(void **state)
{
	drained_maps(false);
}

static void test_drained_maps_one_by_one_bpf(void **state)
{
	drained_maps(true);
}

/*
 * Processes gone before user space reads their maps (TK_TEST_CAPTURE_DELAY_MS
 * holds every capture back 60 ms; each cpu_short lives ~15 ms): named from
 * the kernel's MMAP2 records, none counted as processes_without_maps. By
 * /proc alone nearly all of their samples would be [unknown].
 */
static void test_gone_before_capture_bpf(void **state)
{
	const char *json = path_in_tmp("gone.json"), *folded = path_in_tmp("gone.folded");
	char cmd[PATH_MAX + 64];
	char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)json, "-o",
			 (char *)folded, "--", "sh", "-c", cmd, NULL };
	unsigned long total, any, named;
	char *text;

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd), "for i in 1 2 3 4 5 6 7 8 9 10; do %s 12; done",
		 tk_test_workload("cpu_short"));
	setenv("TK_TEST_CAPTURE_DELAY_MS", "60", 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	unsetenv("TK_TEST_CAPTURE_DELAY_MS");
	any = folded_sum(folded, starts_with, "cpu_short;", &total);
	named = folded_sum(folded, has_sub, ";short_lived_hot", &total);
	text = slurp(json);
	print_message("captures 60 ms late: cpu_short samples %lu, named short_lived_hot %lu, "
		      "processes_without_maps %ld\n", any, named,
		      json_num(text, "processes_without_maps"));
	assert_non_null(strstr(text, "named from the kernel's MMAP2 records"));
	assert_int_equal(json_num(text, "processes_without_maps"), 0);
	free(text);
	/* 10 x 12 ms at 499 Hz: about 60 samples, nearly all in short_lived_hot */
	assert_true(any > 30);
	assert_true(named > any * 8 / 10);

	/*
	 * Debian's python3 (no frame pointers), 600 ms late: a backlog of
	 * seconds by the end, and the records are still there when it is read
	 */
	snprintf(cmd, sizeof(cmd), "for i in 1 2 3 4 5; do /usr/bin/python3 -c 'x = 0\n"
		 "for i in range(1000000): x += i'; done");
	setenv("TK_TEST_CAPTURE_DELAY_MS", "600", 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	unsetenv("TK_TEST_CAPTURE_DELAY_MS");
	any = folded_sum(folded, starts_with, "python3;", &total);
	named = folded_sum(folded, has_sub, ";_PyEval_EvalFrameDefault", &total);
	text = slurp(json);
	print_message("python3, captures 600 ms late: %lu samples, %lu in "
		      "_PyEval_EvalFrameDefault, processes_without_maps %ld\n", any, named,
		      json_num(text, "processes_without_maps"));
	assert_int_equal(json_num(text, "processes_without_maps"), 0);
	free(text);
	/* 5 x about 60 ms here at 499 Hz: about 150 (a loop of 300000 made 50: too close) */
	assert_true(any > 50);
	assert_true(named > 0);
}

/* How many of the sorted sets @a and @b share. */
static size_t common(const long *a, size_t na, const long *b, size_t nb)
{
	size_t i = 0, j = 0, n = 0;

	while (i < na && j < nb) {
		if (a[i] == b[j]) {
			n++;
			i++;
			j++;
		} else if (a[i] < b[j]) {
			i++;
		} else {
			j++;
		}
	}
	return n;
}

/*
 * --rotate 1: 700 children of 10 ms, two at a time, over about 4 s. Each
 * period's file holds that period only: a child (it lives 10 ms) is in one
 * period or two neighbours, never in periods two apart, as it would be if
 * a file held the run so far. Most children are named in some period.
 * And the session forgets the children that ended: the last period's note
 * says it holds the names of the last two periods' processes, not the run's.
 */
static void check_rotate(const char *backend)
{
	const char *base = path_in_tmp("rot.json");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "199", "--rotate", "1", "-o",
			 (char *)base, "--", (char *)tk_test_workload("cpu_forks"), "-n", "700",
			 "-j", "2", "-m", "10", NULL };
	long *pids[64];
	size_t n[64], nfiles = 0, all = 0, apart = 0, i, j;
	unsigned long held = 0, forgotten = 0;
	char name[PATH_MAX], *text = NULL, *note;

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	/* the unnumbered name is never written */
	assert_int_equal(access(base, F_OK), -1);
	for (nfiles = 0; nfiles < 64; nfiles++) {
		snprintf(name, sizeof(name), "%s/rot.%04zu.json", tmpdir, nfiles + 1);
		if (access(name, F_OK))
			break;
		free(text);
		text = slurp(name);
		pids[nfiles] = json_pids(text, &n[nfiles]);
		all += n[nfiles];
		assert_int_equal(json_num(text, "stack_map_full"), 0);
		unlink(name);
	}
	assert_non_null(text);
	note = strstr(text, "names held for ");
	assert_non_null(note);
	assert_int_equal(sscanf(note, "names held for %lu processes, %lu ended ones forgotten",
				&held, &forgotten), 2);
	free(text);
	for (i = 0; i < nfiles; i++)
		for (j = i + 2; j < nfiles; j++)
			apart += common(pids[i], n[i], pids[j], n[j]);
	print_message("%s: %zu periods, %zu (period, pid) pairs; in periods two apart: %zu; "
		      "the last period: names held for %lu processes, %lu forgotten\n", backend,
		      nfiles, all, apart, held, forgotten);
	assert_true(nfiles >= 3);
	/*
	 * most children, each at most twice: a child burns 10 ms of wall time, so
	 * on a loaded machine some get too little CPU to be sampled (468 seen)
	 */
	assert_true(all >= 350 && all <= 2 * 701);
	/* only cpu_forks itself lives through the periods */
	assert_true(apart <= (nfiles - 2) * (nfiles - 1) / 2);
	/* what is held is two periods' processes (the last two, ended), not the run's */
	assert_true(held <= 3 * all / nfiles + 16);
	assert_true(forgotten + held >= all * 9 / 10);
	for (i = 0; i < nfiles; i++)
		free(pids[i]);
}

static void test_rotate_bpf(void **state)
{
	NEED_ROOT();
	check_rotate("bpf");
}

static void test_rotate_perf(void **state)
{
	NEED_ROOT();
	check_rotate("perf");
}

/* Off-CPU sums of a JSON profile's stacks, by the functions they pass through. */
struct off_sums {
	double off_long, off_short, off_vfork;	/* off_cpu ns (off_vfork: under libc's vfork) */
	double main_thread;			/* off_cpu ns of the main thread (tid == pid) */
	unsigned long spin_samples;		/* on-CPU samples under on_spin */
	double long_not_sleeping;		/* off_cpu ns of off_long not labelled sleeping */
	unsigned long vfork_not_d;		/* vfork entries not labelled uninterruptible */
	double vfork_not_d_ns;			/* ... their off_cpu ns */
	unsigned long vfork_sleeping;		/* ... of them labelled sleeping (S) */
	unsigned long broken_chains;		/* off_long/off_short entries without main */
	unsigned long entries;
};

static void off_sum_json(const char *json, const char *sleep_state, struct off_sums *o)
{
	char want[64];

	const char *p = strstr(json, "\"stacks\":"), *next, *lng;
	long main_pid;

	memset(o, 0, sizeof(*o));
	assert_non_null(p);
	/* the workload's own process: off_long waits there only (vfork children come and go) */
	lng = strstr(p, "\"name\":\"off_long\"");
	assert_non_null(lng);
	while (lng > p && strncmp(lng, "{\"pid\":", 7))
		lng--;
	main_pid = strtol(lng + 7, NULL, 10);
	for (p = strstr(p, "{\"pid\":"); p; p = next) {
		long pid = strtol(p + 7, NULL, 10), tid = json_num(p, "tid");
		const char *v = strstr(p, "\"values\":[");
		double val[4] = { 0 };
		size_t len;
		char *e;
		int k;

		next = strstr(p + 1, "{\"pid\":");
		len = next ? (size_t)(next - p) : strlen(p);
		e = strndup(p, len);
		assert_non_null(e);
		assert_non_null(v);
		v += 10;
		for (k = 0; k < 4; k++) {
			val[k] = strtod(v, (char **)&v);
			if (*v == ',')
				v++;
		}
		o->entries++;
		if (strstr(e, "\"name\":\"on_spin\""))
			o->spin_samples += (unsigned long)val[0];
		if (pid != main_pid) {
			free(e);
			continue;
		}
		if (val[2] > 0 && pid == tid)
			o->main_thread += val[2];
		if (strstr(e, "\"name\":\"off_long\"")) {
			o->off_long += val[2];
			/* preempted in off_long's own instructions, between its sleeps */
			snprintf(want, sizeof(want), "\"thread_state\":\"%s\"", sleep_state);
			if (!strstr(e, want))
				o->long_not_sleeping += val[2];
		}
		if (strstr(e, "\"name\":\"off_short\""))
			o->off_short += val[2];
		if ((strstr(e, "\"name\":\"off_long\"") || strstr(e, "\"name\":\"off_short\"")) &&
		    !strstr(e, "\"name\":\"main\""))
			o->broken_chains++;
		/* glibc's vfork keeps its return address in a register: off_vfork is not seen */
		if (strstr(e, "\"name\":\"vfork\"")) {
			o->off_vfork += val[2];
			if (!strstr(e, "\"thread_state\":\"uninterruptible\"")) {
				o->vfork_not_d++;
				o->vfork_not_d_ns += val[2];
				o->vfork_sleeping += strstr(e, "\"thread_state\":\"sleeping\"") != NULL;
			}
		}
		free(e);
	}
}

/*
 * --off-cpu: the main thread of cpu_offcpu waits 30 ms in off_long and
 * 10 ms in off_short in turn (3 s) while its other thread spins. In one
 * file: the off-CPU split 0.75 within 0.05, every wait's chain whole to
 * main through Debian's libc (no frame pointers there), the main thread's
 * off-CPU total its wall time within 10 %, the spinner in the on-CPU
 * samples, the waits labelled sleeping; go tool pprof reads off_cpu.
 */
static void check_off_cpu(const char *backend, const char *sleep_state, const char *note)
{
	const char *json = path_in_tmp("off.json"), *pb = path_in_tmp("off.pb.gz");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "199", "--off-cpu", "-o",
			 (char *)json, "-o", (char *)pb, "--", (char *)tk_test_workload("cpu_offcpu"),
			 "3", NULL };
	char cmd[1024], top[1 << 16];
	struct off_sums o;
	double share, wl = 0, ws = 0, want;
	char *text, *w;

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	/* 3:1 by the clock; the workload's own measure, which a loaded machine moves */
	w = strstr(out, "long_ms=");
	assert_non_null(w);
	assert_int_equal(sscanf(w, "long_ms=%lf short_ms=%lf", &wl, &ws), 2);
	want = wl / (wl + ws);
	text = slurp(json);
	off_sum_json(text, sleep_state, &o);
	share = o.off_long / (o.off_long + o.off_short);
	print_message("%s off-CPU: the workload measured a share of %.3f\n", backend, want);
	print_message("%s off-CPU: off_long %.3f s, off_short %.3f s (share %.3f), main thread "
		      "%.3f s off-CPU; on_spin %lu samples; %lu entries, %lu chains without "
		      "main, %.0f ns of off_long not %s; off_cpu_start_full %ld\n", backend,
		      o.off_long / 1e9, o.off_short / 1e9, share, o.main_thread / 1e9,
		      o.spin_samples, o.entries, o.broken_chains, o.long_not_sleeping, sleep_state,
		      json_num(text, "off_cpu_start_full"));
	assert_true(share > want - 0.05 && share < want + 0.05);
	assert_true(o.main_thread > 0.9 * 3e9 && o.main_thread < 1.1 * 3e9);
	assert_int_equal(o.broken_chains, 0);
	assert_true(o.long_not_sleeping < o.off_long / 100);
	/* 3 s at 199 Hz of one spinning thread: ~600 (the machine is shared) */
	assert_true(o.spin_samples > 300);
	assert_int_equal(json_num(text, "off_cpu_start_full"), 0);
	assert_int_equal(json_num(text, "off_cpu_count_map_full"), 0);
	/* how it was taken, in the profile */
	if (!strstr(text, note))
		fail_msg("the profile does not say \"%s\"", note);
	free(text);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof "
		 "-sample_index=off_cpu -top -nodecount=30 %s 2>&1", tmpdir, pb);
	assert_int_equal(tk_test_capture(cmd, top, sizeof(top)), 0);
	assert_non_null(strstr(top, "Type: off_cpu"));
	assert_non_null(strstr(top, "off_long"));
}

static void test_off_cpu_bpf(void **state)
{
	check_off_cpu("bpf", "sleeping", "off-CPU time: sched_switch (tp_btf)");
}

/* where tp_btf is refused: raw_tp, keyed by task address instead of tid, the same figures */
static void test_off_cpu_raw_tp_bpf(void **state)
{
	setenv("TK_TEST_OFF_RAW_TP", "1", 1);
	check_off_cpu("bpf", "sleeping",
		      "off-CPU time: sched_switch (raw_tp: tp_btf refused: TK_TEST_OFF_RAW_TP)");
	unsetenv("TK_TEST_OFF_RAW_TP");
}

/* the sched_switch tracepoint's samples, with prev_state: as BPF labels them */
static void test_off_cpu_perf(void **state)
{
	check_off_cpu("perf", "sleeping", "off-CPU time: perf sched:sched_switch events");
}

/*
 * A vfork()'s parent waits in D state until its child exits: those waits
 * (off_vfork, a third of the turn) are labelled uninterruptible, and the
 * --view off-cpu text summary gives off_long about three times off_short's
 * total.
 */
static void check_off_cpu_uninterruptible(const char *backend)
{
	const char *json = path_in_tmp("offd.json"), *txt = path_in_tmp("offd.txt");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "99", "--off-cpu", "--view", "off-cpu",
			 "--top", "100", "-o", (char *)json, "-o", (char *)txt, "--",
			 (char *)tk_test_workload("cpu_offcpu"), "2", "d", NULL };
	struct off_sums o;
	double share, tl, ts, wl = 0, ws = 0, wv = 0, want;
	char *text, *lng, *shrt, *w;

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	/* the workload's own measure of its waits (a loaded machine stretches the vfork's) */
	w = strstr(out, "long_ms=");
	assert_non_null(w);
	assert_int_equal(sscanf(w, "long_ms=%lf short_ms=%lf vfork_ms=%lf", &wl, &ws, &wv), 3);
	want = wv / (wl + ws + wv);
	text = slurp(json);
	off_sum_json(text, "sleeping", &o);
	free(text);
	share = o.off_vfork / (o.off_long + o.off_short + o.off_vfork);
	print_message("%s D state: off_vfork %.3f s (share %.3f; the workload measured %.3f: "
		      "%.0f ms of %.0f), %lu of its entries not uninterruptible (%.4f s, %lu of "
		      "them sleeping)\n", backend, o.off_vfork / 1e9, share, want, wv,
		      wl + ws + wv, o.vfork_not_d, o.vfork_not_d_ns / 1e9, o.vfork_sleeping);
	assert_true(o.off_vfork > 0);
	/*
	 * The waits are D; under vfork's stack a parent can also be preempted (R)
	 * when its child is woken on its CPU, which is no wait of the vfork's: a
	 * little of the time, never labelled sleeping.
	 */
	assert_int_equal(o.vfork_sleeping, 0);
	assert_true(o.vfork_not_d_ns < 0.05 * o.off_vfork);
	assert_true(share > want - 0.08 && share < want + 0.08);
	text = slurp(txt);
	assert_non_null(strstr(text, "off_cpu (nanoseconds"));
	lng = strstr(text, "off_long");
	shrt = strstr(text, "off_short");
	assert_non_null(lng);
	assert_non_null(shrt);
	/* "     0ns    0.0%   36.1%  off_long": the total% before the name */
	tl = strtod(lng - 8, NULL);
	ts = strtod(shrt - 8, NULL);
	print_message("text: off_long total %.1f %%, off_short %.1f %% (the workload: %.2f:1)\n",
		      tl, ts, wl / ws);
	assert_true(tl > 0.8 * (wl / ws) * ts && tl < 1.2 * (wl / ws) * ts);
	free(text);
}

static void test_off_cpu_uninterruptible_bpf(void **state)
{
	check_off_cpu_uninterruptible("bpf");
}

/* the sched:sched_switch tracepoint's prev_state: D state told from sleeping without BPF */
static void test_off_cpu_uninterruptible_perf(void **state)
{
	check_off_cpu_uninterruptible("perf");
}

/* The off_cpu nanoseconds of a JSON profile's entries of process @pid. */
static double off_total(const char *json, long pid)
{
	const char *p = strstr(json, "\"stacks\":");
	double sum = 0;

	for (p = p ? strstr(p, "{\"pid\":") : NULL; p; p = strstr(p + 1, "{\"pid\":")) {
		const char *v = strstr(p, "\"values\":[");
		double val[4] = { 0 };
		int k;

		if (!v || strtol(p + 7, NULL, 10) != pid)
			continue;
		v += 10;
		for (k = 0; k < 4; k++) {
			val[k] = strtod(v, (char **)&v);
			if (*v == ',')
				v++;
		}
		sum += val[2];
	}
	return sum;
}

/* The off_cpu nanoseconds of every entry of a JSON profile. */
static double off_total_all(const char *json)
{
	const char *p = strstr(json, "\"stacks\":");
	double sum = 0;

	for (p = p ? strstr(p, "\"values\":[") : NULL; p; p = strstr(p + 1, "\"values\":[")) {
		const char *v = p + 10;
		double val[4] = { 0 };
		int k;

		for (k = 0; k < 4; k++) {
			val[k] = strtod(v, (char **)&v);
			if (*v == ',')
				v++;
		}
		sum += val[2];
	}
	return sum;
}

/*
 * The scope applies at switch-out: two cpu_offcpu processes wait alike, one
 * in scope (-p, or in a cgroup with --cgroup), one not; the profile has the
 * waits of the first (its main thread out nearly all of the 2 s) and none of
 * the other's, nor of anything else.
 */
static void check_off_cpu_scope(const char *backend, bool cgroup)
{
	const char *json = path_in_tmp("offscope.json"), *mnt = cgroup2_mount();
	char dir[600] = "", procs[700], pidbuf[32];
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "99", "--off-cpu", "-d", "2",
			 "-o", (char *)json, cgroup ? "--cgroup" : "-p", cgroup ? dir : pidbuf,
			 NULL };
	double in_ns, out_ns, all_ns;
	pid_t in, other;
	char *text;
	int fd;

	NEED_ROOT();
	if (cgroup && !mnt) {
		print_message("skip: no cgroup v2 hierarchy is mounted\n");
		skip();
	}
	if (cgroup) {
		snprintf(dir, sizeof(dir), "%s/tk-offscope-%d", mnt, getpid());
		assert_int_equal(mkdir(dir, 0755), 0);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	}
	in = fork();
	if (in == 0) {
		if (cgroup) {
			fd = open(procs, O_WRONLY);
			snprintf(pidbuf, sizeof(pidbuf), "%d", getpid());
			if (fd < 0 || write(fd, pidbuf, strlen(pidbuf)) < 0)
				_exit(125);
			close(fd);
		}
		execl(tk_test_workload("cpu_offcpu"), "cpu_offcpu", "4", (char *)NULL);
		_exit(126);
	}
	other = fork();
	if (other == 0) {
		execl(tk_test_workload("cpu_offcpu"), "cpu_offcpu", "4", (char *)NULL);
		_exit(126);
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", in);
	usleep(300 * 1000);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	waitpid(in, NULL, 0);
	waitpid(other, NULL, 0);
	if (cgroup)
		rmdir(dir);
	text = slurp(json);
	in_ns = off_total(text, in);
	out_ns = off_total(text, other);
	all_ns = off_total_all(text);
	free(text);
	print_message("%s %s: off-CPU in scope %.3f s, the other process %.3f s, all %.3f s\n",
		      backend, cgroup ? "--cgroup" : "-p", in_ns / 1e9, out_ns / 1e9, all_ns / 1e9);
	assert_true(in_ns > 1.5e9);
	assert_true(out_ns == 0);
	assert_true(all_ns == in_ns);
}

static void test_off_cpu_pid_bpf(void **state)
{
	check_off_cpu_scope("bpf", false);
}

static void test_off_cpu_pid_perf(void **state)
{
	check_off_cpu_scope("perf", false);
}

static void test_off_cpu_cgroup_bpf(void **state)
{
	check_off_cpu_scope("bpf", true);
}

static void test_off_cpu_cgroup_perf(void **state)
{
	check_off_cpu_scope("perf", true);
}

/*
 * Thinning: pingpong's two threads, pinned to one CPU, pass a byte back and
 * forth (hundreds of thousands of switches a second): one of them is always
 * waiting, so their off-CPU time adds up to the run's wall time. Taken with
 * the default budget (most switch-outs not taken, the taken ones weighed)
 * the estimate is that (1.07 here), at most 15 % below; above it, up to
 * twice on a loaded machine (see below).
 * (Taking every switch-out slows the run itself more than twice, by the
 * stacks' cost, which its waits leave out: that run has no wall time to
 * compare with.)
 */
static void test_off_cpu_thinned_bpf(void **state)
{
	const char *json = path_in_tmp("pp.json");
	const char *budgets[] = { NULL };
	int b;

	NEED_ROOT();
	for (b = 0; b < 1; b++) {
		char *args[24] = { "cpu", "--backend", "bpf", "-F", "99", "--off-cpu", "-o",
				   (char *)json };
		int n = 8;
		double wall = 0, total;
		long pid;
		char *text, *sec;

		if (budgets[b]) {
			args[n++] = "--off-cpu-stacks";
			args[n++] = (char *)budgets[b];
		}
		args[n++] = "--";
		args[n++] = "taskset";
		args[n++] = "-c";
		args[n++] = "0";
		args[n++] = (char *)tk_test_workload("pingpong");
		args[n++] = "200000";
		args[n] = NULL;
		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		sec = strstr(out, "seconds=");
		assert_non_null(sec);
		wall = strtod(sec + 8, NULL);
		text = slurp(json);
		/* the process: the one under ping_side */
		sec = strstr(text, "\"name\":\"ping_side\"");
		if (!sec) {
			const char *l = strstr(text, "\"loss");

			print_error("no ping_side in the profile (%zu bytes); %.1500s\n", strlen(text),
				    l ? l : text);
		}
		assert_non_null(sec);
		while (sec > text && strncmp(sec, "{\"pid\":", 7))
			sec--;
		pid = strtol(sec + 7, NULL, 10);
		total = off_total(text, pid);
		print_message("--off-cpu-stacks %s: %.3f s off-CPU over a %.3f s run (%.2f); %s\n",
			      budgets[b] ? budgets[b] : "default", total / 1e9, wall,
			      total / 1e9 / wall, strstr(text, "off-CPU time estimated") ?
			      "estimated (thinned)" : "every switch-out taken");
		assert_non_null(strstr(text, "off-CPU time estimated"));
		/*
		 * Another task on that CPU keeps both threads out at once (one
		 * preempted, one asleep): on a loaded machine the sum is more
		 * (1.57 seen), up to twice the wall time, which two threads
		 * cannot pass; a biased estimate passes it (2.7 before the waits
		 * left the stacks' cost out).
		 */
		assert_true(total / 1e9 > 0.85 * wall && total / 1e9 < 2.0 * wall);
		free(text);
	}
}

/* bpf(2) denied by seccomp: the default backend falls back to perf, and says so */
static void test_fallback_under_seccomp(void **state)
{
	const char *json = path_in_tmp("fallback.json"), *folded = path_in_tmp("fallback.folded");
	char *args[] = { "cpu", "-F", "499", "-o", (char *)json, "-o", (char *)folded, "--",
			 (char *)tk_test_workload("cpu_split"), "2", NULL };
	unsigned long total, hot;
	char buf[256];
	FILE *f;

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, args), 0);
	f = fopen(json, "r");
	assert_non_null(f);
	assert_true(fread(out, 1, sizeof(out) - 1, f) > 0);
	fclose(f);
	assert_non_null(strstr(out, "\"backend\":\"perf\""));
	hot = folded_sum(folded, has_sub, ";hot;", &total);
	assert_true(total > 300 && hot > total / 2);
	/* and asking for bpf explicitly under the filter is a clear error */
	{
		char *bpf_args[] = { "cpu", "--backend", "bpf", "-d", "1", NULL };

		assert_int_equal(tk_test_run_tracekit(buf, sizeof(buf), true, bpf_args), 1);
	}
}

/* Ctrl-C ends a whole-system capture early and the file is still whole */
static void test_sigint_writes_whole_output(void **state)
{
	const char *pb = path_in_tmp("sigint.pb.gz");
	char *args[] = { "cpu", "-o", (char *)pb, NULL };
	char cmd[1024];
	int status;
	pid_t tk;

	NEED_ROOT();
	tk = tk_test_start_tracekit(args);
	assert_true(tk > 0);
	/* attached: before its session is open, a SIGINT ends tracekit with nothing written */
	assert_int_equal(tk_test_wait_attached(tk, 20000), 0);
	kill(tk, SIGINT);
	assert_int_equal(waitpid(tk, &status, 0), tk);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top %s >/dev/null 2>&1", tmpdir,
		 pb);
	assert_int_equal(system(cmd), 0);
}

/* Rss of mapping @name ("[heap]") in /proc/@pid/smaps, in kB; -1 when absent. */
static long smaps_rss(pid_t pid, const char *name)
{
	char path[64], line[512], cur[256] = "";
	long rss = -1, kb;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*x-%*x %*s %*s %*s %*s %255s", cur) == 1)
			continue;
		if (sscanf(line, "Rss: %ld kB", &kb) == 1 && !strcmp(cur, name))
			rss = (rss < 0 ? 0 : rss) + kb;
	}
	if (f)
		fclose(f);
	return rss;
}

/*
 * The 5.5 MB copies of the kernel's BTF that start-up makes (libbpf's at each
 * load) do not stay in the heap once freed: it held ~11 MiB of free memory all
 * the capture before (glibc's sliding mmap threshold brought them into it).
 */
static void test_heap_after_startup(void **state)
{
	const char *out = path_in_tmp("heap.json");
	char *args[] = { "cpu", "--unwind", "fp", "-F", "99", "-d", "20", "-o", (char *)out, NULL };
	long heap;
	pid_t tk;

	NEED_ROOT();
	tk = tk_test_start_tracekit(args);
	assert_true(tk > 0);
	assert_int_equal(tk_test_wait_attached(tk, 20000), 0);
	heap = smaps_rss(tk, "[heap]");
	kill(tk, SIGINT);
	waitpid(tk, NULL, 0);
	print_message("tracer's [heap] once attached: %ld kB\n", heap);
	assert_true(heap >= 0 && heap <= 4096);
}

static void test_cli_errors(void **state)
{
	char *bad_fmt[] = { "cpu", "-o", "x.unknown", NULL };
	char *bad_freq[] = { "cpu", "-F", "0", NULL };
	char *both[] = { "cpu", "--kernel-only", "--user-only", NULL };
	char *p_and_cmd[] = { "cpu", "-p", "1", "--", "true", NULL };
	char *no_such_pid[] = { "cpu", "-p", "2147483646", "-d", "1", NULL };
	char *no_such_cmd[] = { "cpu", "-d", "5", "--", "/nonexistent/command", NULL };
	char *bad_cgroup[] = { "cpu", "--cgroup", "/tmp", "-d", "1", NULL };
	/* --rotate names files: none given, stdout, a FIFO's kind; a bad period; with -i */
	char *rot_no_o[] = { "cpu", "--rotate", "5", "-d", "1", NULL };
	char *rot_stdout[] = { "cpu", "--rotate", "5", "-o", "-", "-d", "1", NULL };
	char *rot_dev[] = { "cpu", "--rotate", "5", "-o", "/dev/null", "-d", "1", NULL };
	char *rot_zero[] = { "cpu", "--rotate", "0", "-o", "x.json", "-d", "1", NULL };
	char *rot_and_i[] = { "cpu", "--rotate", "2", "-i", "1", "-o", "x.json", "-d", "1", NULL };

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, rot_no_o), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, rot_stdout), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, rot_dev), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, rot_zero), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, rot_and_i), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_fmt), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_freq), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, both), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, p_and_cmd), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, no_such_pid), 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_cgroup), 1);
	/* a command that cannot run is an error, said at once, not an empty profile */
	if (geteuid() == 0)
		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, no_such_cmd), 1);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli_errors),
		cmocka_unit_test(test_heap_after_startup),
		cmocka_unit_test(test_split_bpf),
		cmocka_unit_test(test_split_perf),
		cmocka_unit_test(test_cgroup_bpf),
		cmocka_unit_test(test_cgroup_perf),
		cmocka_unit_test(test_leader_exit_bpf),
		cmocka_unit_test(test_leader_exit_perf),
		cmocka_unit_test(test_follow_bpf),
		cmocka_unit_test(test_follow_perf),
		cmocka_unit_test(test_pprof_bpf),
		cmocka_unit_test(test_pprof_perf),
		cmocka_unit_test(test_main_file_bpf),
		cmocka_unit_test(test_main_file_perf),
		cmocka_unit_test(test_shapes_bpf),
		cmocka_unit_test(test_shapes_perf),
		cmocka_unit_test(test_short_lived_bpf),
		cmocka_unit_test(test_short_lived_perf),
		cmocka_unit_test(test_many_children_bpf),
		cmocka_unit_test(test_follow_map_full_bpf),
		cmocka_unit_test(test_drained_maps_bpf),
		cmocka_unit_test(test_drained_maps_one_by_one_bpf),
		cmocka_unit_test(test_gone_before_capture_bpf),
		cmocka_unit_test(test_rotate_bpf),
		cmocka_unit_test(test_off_cpu_bpf),
		cmocka_unit_test(test_off_cpu_raw_tp_bpf),
		cmocka_unit_test(test_off_cpu_perf),
		cmocka_unit_test(test_off_cpu_uninterruptible_bpf),
		cmocka_unit_test(test_off_cpu_uninterruptible_perf),
		cmocka_unit_test(test_off_cpu_thinned_bpf),
		cmocka_unit_test(test_off_cpu_pid_bpf),
		cmocka_unit_test(test_off_cpu_pid_perf),
		cmocka_unit_test(test_off_cpu_cgroup_bpf),
		cmocka_unit_test(test_off_cpu_cgroup_perf),
		cmocka_unit_test(test_rotate_perf),
		cmocka_unit_test(test_fallback_under_seccomp),
		cmocka_unit_test(test_sigint_writes_whole_output),
	};

	/* TK_TEST_FILTER="*bpf*" runs a subset (cmocka's glob) */
	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests_name("cpu", tests, setup, teardown);
}
