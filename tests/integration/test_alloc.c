// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit alloc end to end, as a user runs it, on the real kernel: workloads
 * with a known answer (tests/workloads/alloc_leak*, alloc_cxx: a leak from a
 * known call site beside churn that frees at once), every pprof read back by
 * go tool pprof. Each mode and hook: sampled through the in-process sampler,
 * sampled through uprobes (a command and a running process), full, growth;
 * glibc, shared jemalloc, jemalloc linked into the executable, C++ new and
 * delete, threads, a target that exits during the capture, one that execs
 * and a child that exits (what they held is released, counted), and the
 * jemalloc fallback under a seccomp filter that denies bpf(2).
 *
 * TK_TEST_FILTER="*full*" runs a subset (cmocka's glob).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

static char tmpdir[] = "/tmp/tk-alloc-test.XXXXXX";
static char out[1 << 20];

/* a file in this test's temporary directory */
#define path_in_tmp(name) tk_test_path(tmpdir, name)

struct pp_func {
	double flat;
	double cum;
	bool found;
};

/*
 * go tool pprof -top of @file for @index; the flat and cumulative values of
 * @func (bytes with -unit=B, or counts). Also checks the file's type line.
 */
static struct pp_func pprof_func(const char *file, const char *index, const char *func)
{
	static char top[1 << 18];
	char cmd[1024], *line, *save = NULL, type[64];
	struct pp_func r = {};

	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -sample_index=%s -unit=B "
		 "-top -nodecount=200 %s 2>&1", tmpdir, index, file);
	assert_int_equal(tk_test_capture(cmd, top, sizeof(top)), 0);
	snprintf(type, sizeof(type), "Type: %s", index);
	assert_non_null(strstr(top, type));
	for (line = strtok_r(top, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "  1073741824B 95.00% 95.00%  1073741824B 95.00%  leak_site" (0 has no unit) */
		char *tok[6], *s2 = NULL, *t;
		size_t n = strlen(func);
		int k = 0;

		for (t = strtok_r(line, " \t", &s2); t && k < 6; t = strtok_r(NULL, " \t", &s2))
			tok[k++] = t;
		if (k < 6 || !strchr(tok[1], '%') || !strchr(tok[4], '%'))
			continue;
		/* C++ names come demangled: "cxx_leak_site(std::vector<...>&, ...)" */
		if (strncmp(tok[5], func, n) || (tok[5][n] && tok[5][n] != '('))
			continue;
		r.flat = strtod(tok[0], NULL);
		r.cum = strtod(tok[3], NULL);
		r.found = true;
	}
	return r;
}

/* "key=NUMBER" in the captured output of a workload */
static unsigned long long field(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	p = strstr(text, pat);
	assert_non_null(p);
	return strtoull(p + strlen(pat), NULL, 10);
}

static int run_alloc(bool deny_bpf, char **args)
{
	char *argv[40] = { "alloc" };
	int i;

	for (i = 0; args[i] && i < 38; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	return tk_test_run_tracekit(out, sizeof(out), deny_bpf, argv);
}

/* The leak lands on leak_site within @tol of the truth; churn keeps ~nothing in use. */
static void check_leak(const char *pb, const char *site, const char *churn_site,
		       unsigned long long leaked, double tol)
{
	struct pp_func leak = pprof_func(pb, "inuse_space", site);
	struct pp_func churn = pprof_func(pb, "inuse_space", churn_site);
	struct pp_func churn_alloc = pprof_func(pb, "alloc_space", churn_site);

	print_message("  %s: in use %.1f MiB of %.1f MiB leaked (%+.2f %%); %s in use %.0f B, "
		      "allocated %.1f MiB\n", site, leak.flat / 1048576.0, leaked / 1048576.0,
		      100.0 * (leak.flat / leaked - 1), churn_site, churn.flat,
		      churn_alloc.flat / 1048576.0);
	assert_true(leak.found);
	assert_true(fabs(leak.flat / leaked - 1) <= tol);
	/* churn frees at once: whatever is in use is a few objects at the end */
	assert_true(churn.flat < leaked * 0.01);
	assert_true(churn_alloc.found && churn_alloc.flat > 0);
}

/*
 * The default mean (512 KiB), a 1 GiB leak in 256 KiB blocks (4096 blocks,
 * each sampled with p = 0.39): the estimate's standard error is 1.9 %, so
 * 10 % is more than 5 standard errors. --no-touch keeps the test light.
 */
#define BIG_LEAK "1073741824"
#define BIG_BLOCK "262144"

static void check_sampled_command(const char *wl, bool preload, const char *site,
				  const char *churn_site)
{
	const char *pb = path_in_tmp("sampled.pb.gz");
	char *args[] = { "-o", (char *)pb, preload ? "-v" : "--no-preload", "--",
			 (char *)tk_test_workload(wl), "-d", "2", "--leak-bytes", BIG_LEAK, "--leak-block",
			 BIG_BLOCK, "--no-touch", NULL };

	assert_int_equal(run_alloc(false, args), 0);
	check_leak(pb, site, churn_site, field(out, "leaked"), 0.10);
}

static void test_sampled_preload_glibc(void **state)
{
	NEED_ROOT();
	check_sampled_command("alloc_leak", true, "leak_site", "churn");
}

static void test_sampled_uprobes_glibc(void **state)
{
	NEED_ROOT();
	check_sampled_command("alloc_leak", false, "leak_site", "churn");
}

static void test_sampled_preload_jemalloc(void **state)
{
	NEED_ROOT();
	check_sampled_command("alloc_leak_je", true, "leak_site", "churn");
}

static void test_sampled_uprobes_jemalloc(void **state)
{
	NEED_ROOT();
	check_sampled_command("alloc_leak_je", false, "leak_site", "churn");
}

/* jemalloc linked into the executable: no LD_PRELOAD can interpose it; uprobes on the program */
static void test_sampled_jemalloc_static(void **state)
{
	NEED_ROOT();
	check_sampled_command("alloc_leak_jestatic", true, "leak_site", "churn");
}

static void test_threads(void **state)
{
	const char *pb = path_in_tmp("threads.pb.gz");
	char *args[] = { "-o", (char *)pb, "--", (char *)tk_test_workload("alloc_leak"), "-d", "2",
			 "--threads", "4", "--leak-bytes", BIG_LEAK, "--leak-block", BIG_BLOCK,
			 "--no-touch", NULL };

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	check_leak(pb, "leak_site", "churn", field(out, "leaked"), 0.10);
}

static void test_cxx_new_delete(void **state)
{
	const char *pb = path_in_tmp("cxx.pb.gz");
	char *args[] = { "-o", (char *)pb, "--", (char *)tk_test_workload("alloc_cxx"), "-d", "2",
			 "--leak-bytes", BIG_LEAK, "--leak-block", BIG_BLOCK, NULL };

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	check_leak(pb, "cxx_leak_site", "cxx_churn", field(out, "leaked"), 0.10);
}

/* full: every allocation; the in-use figures are exact */
static void test_full_exact(void **state)
{
	const char *pb = path_in_tmp("full.pb.gz");
	char *args[] = { "--mode", "full", "-o", (char *)pb, "--", (char *)tk_test_workload("alloc_leak"),
			 "-d", "1", "--leak-bytes", "1048576", "--leak-block", "4096", NULL };
	struct pp_func objs, bytes;

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(field(out, "leaked"), 1048576);
	objs = pprof_func(pb, "inuse_objects", "leak_site");
	bytes = pprof_func(pb, "inuse_space", "leak_site");
	print_message("  full: leak_site %.0f objects, %.0f bytes in use\n", objs.flat, bytes.flat);
	assert_true(objs.found && objs.flat == 256);
	assert_true(bytes.flat == 1048576);
	assert_true(pprof_func(pb, "inuse_objects", "churn").flat <= 1);
}

/* growth: no allocator hooks; the pages leak_site touches are its resident growth */
static void test_growth(void **state)
{
	const char *pb = path_in_tmp("growth.pb.gz");
	char *args[] = { "--mode", "growth", "-o", (char *)pb, "--", (char *)tk_test_workload("alloc_leak"),
			 "-d", "1", "--leak-bytes", "67108864", "--leak-block", "65536", NULL };
	struct pp_func site, fault;

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	site = pprof_func(pb, "inuse_space", "leak_site");
	fault = pprof_func(pb, "inuse_space", "[page");
	print_message("  growth: leak_site %.1f MiB made resident (cum), all faults %.1f MiB\n",
		      site.cum / 1048576.0, fault.flat / 1048576.0);
	assert_true(site.found);
	/*
	 * Every leaked page is faulted in once: most by leak_site's writes, the
	 * rest by malloc writing the header of the next chunk (glibc has no frame
	 * pointers, so that caller is not named).
	 */
	assert_true(fault.flat >= 0.95 * 67108864 && fault.flat <= 1.1 * 67108864 + (4 << 20));
	assert_true(site.cum >= 0.8 * 67108864 && site.cum <= 67108864 + (1 << 20));
}

/* A running process: -p; it exits during the capture, and its names survive. */
static void test_pid_target_exits(void **state)
{
	const char *pb = path_in_tmp("pid.pb.gz"), *log = path_in_tmp("pid.log");
	char pidbuf[16], *args[] = { "-p", pidbuf, "-d", "20", "-o", (char *)pb, NULL };
	char text[512];
	int status, fd;
	pid_t wl;

	NEED_ROOT();
	wl = fork();
	assert_true(wl >= 0);
	if (wl == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		execl(tk_test_workload("alloc_leak"), "alloc_leak", "-d", "6", "--leak-bytes", BIG_LEAK,
		      "--leak-block", BIG_BLOCK, "--no-touch", (char *)NULL);
		_exit(127);
	}
	usleep(300 * 1000);
	snprintf(pidbuf, sizeof(pidbuf), "%d", wl);
	/* ends when the process does, long before -d 20 */
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(waitpid(wl, &status, 0), wl);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	memset(text, 0, sizeof(text));
	assert_true(read(fd, text, sizeof(text) - 1) > 0);
	close(fd);
	{
		/*
		 * it leaked before tracekit attached too: a lower bound, then most of
		 * it. The probes are attached first (no 300 ms of counting before
		 * them, no full capability snapshot): 83-86 % of the 6 s leak was seen
		 * here, 34-45 % when they came after the forecast.
		 */
		struct pp_func leak = pprof_func(pb, "inuse_space", "leak_site");
		struct pp_func churn = pprof_func(pb, "inuse_space", "churn");
		double leaked = field(text, "leaked");

		print_message("  -p: leak_site %.1f MiB in use of %.1f MiB leaked in all\n",
			      leak.flat / 1048576.0, leaked / 1048576.0);
		assert_true(leak.found);
		assert_true(leak.flat > 0.65 * leaked && leak.flat < 1.1 * leaked);
		assert_true(churn.flat < leaked * 0.01);
	}
}

/* The loss counter @name of the JSON profile @file */
static unsigned long long json_loss(const char *file, const char *name)
{
	static char buf[1 << 20];
	char pat[80];
	const char *p;
	size_t n;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(buf, pat);
	if (!p)
		fail_msg("no loss counter %s in %s", name, file);
	return strtoull(p + strlen(pat), NULL, 10);
}

#define EXEC_BEFORE (1ul << 20)		/* alloc_exec: before_exec_site's, 16 blocks */
#define EXEC_AFTER (2ul << 20)		/* after_exec_site's, 32 blocks */
#define EXEC_CHILD (3ul << 20)		/* child_site's, 48 blocks */

/*
 * After an exec, what the old image held is nobody's: before_exec_site,
 * named from the old image (its addresses, randomized, are not the new
 * one's), has nothing in use, and the exec released its 16 blocks (and the
 * few stdio buffers the image had). after_exec_site holds its bytes, named
 * from the new image. @pb and @json are the run's outputs, @tol the
 * tolerance of the sampled estimates.
 */
static void check_exec(const char *pb, const char *json, double tol)
{
	struct pp_func before = pprof_func(pb, "inuse_space", "before_exec_site");
	struct pp_func before_alloc = pprof_func(pb, "alloc_space", "before_exec_site");
	struct pp_func after = pprof_func(pb, "inuse_space", "after_exec_site");
	unsigned long long objs = json_loss(json, "released_at_exec");
	unsigned long long bytes = json_loss(json, "released_at_exec_bytes");

	print_message("  exec: before_exec_site allocated %.0f B, in use %.0f B; after_exec_site "
		      "in use %.0f B; released_at_exec %llu objects, %llu B\n", before_alloc.flat,
		      before.flat, after.flat, objs, bytes);
	assert_true(before_alloc.found);
	assert_true(fabs(before_alloc.flat / EXEC_BEFORE - 1) <= tol);
	assert_true(before.flat == 0);
	assert_true(after.found);
	assert_true(fabs(after.flat / EXEC_AFTER - 1) <= tol);
	assert_true(bytes >= EXEC_BEFORE * (1 - tol) && bytes <= EXEC_BEFORE * (1 + tol) + 65536);
	if (tol == 0)
		assert_true(objs >= 16 && objs <= 16 + 8);
}

/* full mode: exact figures across the exec */
static void test_exec_full(void **state)
{
	const char *pb = path_in_tmp("exec.pb.gz"), *json = path_in_tmp("exec.json");
	char *args[] = { "--mode", "full", "-o", (char *)pb, "-o", (char *)json, "--",
			 (char *)tk_test_workload("alloc_exec"), "-d", "1", NULL };

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(field(out, "before"), EXEC_BEFORE);
	assert_int_equal(field(out, "after"), EXEC_AFTER);
	check_exec(pb, json, 0);
	/* the target's own exit ends the capture: what it held then stays in use */
	assert_int_equal(json_loss(json, "released_at_exit"), 0);
}

/*
 * The in-process sampler (a 4 KiB mean: every 64 KiB block sampled, weight
 * ~1) follows the command's child too: it allocates at child_site and exits,
 * and nothing of it stays in use; its exit released what it held. The exec
 * as in full mode, within the estimates' error.
 */
/*
 * The pids map cut to one entry (TK_TEST_MAP_ENTRIES): the command takes it,
 * and its child (alloc_exec --child, spawned: its own sampler calls the
 * marker) finds it full. Its samples count follow_map_full, in the profile
 * by name (0 with the map as built). The child is still followed through
 * the procs map its first record made: its exit is released all the same.
 */
static void test_follow_map_full(void **state)
{
	const char *json = path_in_tmp("follow.json");
	char *args[] = { "--sample-bytes", "4096", "-o", (char *)json, "--",
			 (char *)tk_test_workload("alloc_exec"), "-d", "1", "--child", "3145728",
			 NULL };
	unsigned long long full;

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(json_loss(json, "follow_map_full"), 0);
	setenv("TK_TEST_MAP_ENTRIES", "pids=1", 1);
	assert_int_equal(run_alloc(false, args), 0);
	unsetenv("TK_TEST_MAP_ENTRIES");
	full = json_loss(json, "follow_map_full");
	print_message("  pids=1: follow_map_full %llu, released_at_exit %llu\n", full,
		      json_loss(json, "released_at_exit"));
	/* 48 blocks of 64 KiB at a 4 KiB mean: nearly every one sampled */
	assert_true(full >= 24);
	assert_true(json_loss(json, "released_at_exit") > 0);
}

/*
 * The brk_old map cut to one entry: alloc_brk's four threads queue inside
 * brk (it takes the address space's lock), so a second one in the call
 * finds the map full; its growth is counted brk_map_full (0 as built).
 */
static void test_brk_map_full(void **state)
{
	const char *json = path_in_tmp("brk.json");
	char *args[] = { "--mode", "growth", "-o", (char *)json, "--",
			 (char *)tk_test_workload("alloc_brk"), "-t", "4", "-d", "1", NULL };
	unsigned long long full, calls;

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(json_loss(json, "brk_map_full"), 0);
	setenv("TK_TEST_MAP_ENTRIES", "brk_old=1", 1);
	assert_int_equal(run_alloc(false, args), 0);
	unsetenv("TK_TEST_MAP_ENTRIES");
	full = json_loss(json, "brk_map_full");
	calls = field(out, "calls");
	print_message("  brk_old=1: brk_map_full %llu of %llu brk calls\n", full, calls);
	assert_true(full > 0 && full <= calls);
}

/* Does @file contain @needle? */
static bool file_has(const char *file, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(file, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/*
 * growth by the software event page-faults, arm64's way (it has no
 * exceptions:page_fault_user), taken here with TK_KFEAT_OFF=page_fault_user:
 * the same leak found as by the tracepoint, run for run, and nothing lost.
 */
static void test_growth_perf_event(void **state)
{
	const char *json[2] = { path_in_tmp("growth_tp.json"), path_in_tmp("growth_pe.json") };
	const char *pb[2] = { path_in_tmp("growth_tp.pb.gz"), path_in_tmp("growth_pe.pb.gz") };
	static const char *const how[2] = { "page faults by the raw tracepoint page_fault_user",
					    "page faults by the software perf event page-faults" };
	static const char *const lost[] = { "stack_errors", "stack_map_full", "truncated_stacks" };
	struct pp_func site[2], fault[2];
	int i, k;

	NEED_ROOT();
	for (i = 0; i < 2; i++) {
		char *args[] = { "--mode", "growth", "-o", (char *)json[i], "-o", (char *)pb[i],
				 "--", (char *)tk_test_workload("alloc_leak"), "-d", "1",
				 "--leak-bytes", "67108864", "--leak-block", "65536", NULL };

		if (i)
			setenv("TK_KFEAT_OFF", "page_fault_user", 1);
		assert_int_equal(run_alloc(false, args), 0);
		unsetenv("TK_KFEAT_OFF");
		assert_true(file_has(json[i], how[i]));
		assert_false(file_has(json[i], how[!i]));
		site[i] = pprof_func(pb[i], "inuse_space", "leak_site");
		fault[i] = pprof_func(pb[i], "inuse_space", "[page");
		for (k = 0; k < (int)(sizeof(lost) / sizeof(lost[0])); k++)
			assert_int_equal(json_loss(json[i], lost[k]), 0);
	}
	print_message("  growth: leak_site %.1f MiB by the tracepoint, %.1f MiB by the perf event; "
		      "all faults %.1f and %.1f MiB\n", site[0].cum / 1048576.0,
		      site[1].cum / 1048576.0, fault[0].flat / 1048576.0,
		      fault[1].flat / 1048576.0);
	for (i = 0; i < 2; i++) {
		assert_true(site[i].found);
		assert_true(fault[i].flat >= 0.95 * 67108864 &&
			    fault[i].flat <= 1.1 * 67108864 + (4 << 20));
		assert_true(site[i].cum >= 0.8 * 67108864 && site[i].cum <= 67108864 + (1 << 20));
	}
	/*
	 * The same pages: leak_site's share varies from run to run by the pages
	 * the churn's malloc touches first (1.3 % between two runs of either here)
	 */
	assert_true(fabs(site[1].cum - site[0].cum) <= 0.05 * 67108864);
}

static void test_exec_and_child_exit_sampled(void **state)
{
	const char *pb = path_in_tmp("child.pb.gz"), *json = path_in_tmp("child.json");
	char *args[] = { "--sample-bytes", "4096", "-o", (char *)pb, "-o", (char *)json, "--",
			 (char *)tk_test_workload("alloc_exec"), "-d", "1", "--child", "3145728",
			 NULL };
	struct pp_func child, child_alloc;
	unsigned long long bytes;

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	assert_int_equal(field(out, "child"), EXEC_CHILD);
	child = pprof_func(pb, "inuse_space", "child_site");
	child_alloc = pprof_func(pb, "alloc_space", "child_site");
	bytes = json_loss(json, "released_at_exit_bytes");
	print_message("  child: child_site allocated %.0f B, in use %.0f B; released_at_exit "
		      "%llu objects, %llu B\n", child_alloc.flat, child.flat,
		      json_loss(json, "released_at_exit"), bytes);
	assert_true(child_alloc.found);
	assert_true(fabs(child_alloc.flat / EXEC_CHILD - 1) <= 0.02);
	assert_true(child.flat == 0);
	assert_true(bytes >= EXEC_CHILD * 0.98 && bytes <= EXEC_CHILD * 1.02 + 65536);
	check_exec(pb, json, 0.02);
}

/*
 * A program nobody here wrote that forks after allocating: Debian's perl,
 * 30 children each allocating and exiting, in sampled mode (the preload
 * sampler's markers hit in parent and children). On 6.18 a uprobe on a
 * 5-byte nop is rewritten into a call of a trampoline mapping a fork()ed
 * child lacks, and every child died of SIGSEGV at its first sample; the
 * markers must be a site the kernel leaves alone.
 */
static void test_forking_program(void **state)
{
	char *args[] = { "--sample-bytes", "65536", "-o", (char *)path_in_tmp("fork.json"), "--",
			 "perl", "-e",
			 "my $bad = 0; for (1..30) { my @a = map { 'x' x 100 } 1..20000; "
			 "my $p = fork; if (!$p) { my @b = map { 'y' x 100 } 1..20000; exit 0 } "
			 "waitpid($p, 0); $bad++ if $?; } print \"bad=$bad\\n\";", NULL };

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	print_message("  perl forking 30 children under the preload sampler: %llu died\n",
		      field(out, "bad"));
	assert_int_equal(field(out, "bad"), 0);
}

/* --min-age hides what is younger: a leak that ends early stays, newer churn goes */
static void test_min_age_and_interval(void **state)
{
	const char *txt = path_in_tmp("minage.txt");
	char *args[] = { "--min-age", "0.5", "-i", "0.5", "-o", (char *)txt, "--mode", "full", "--",
			 (char *)tk_test_workload("alloc_leak"), "-d", "1.5", "--leak-bytes", "1048576",
			 "--leak-block", "8192", NULL };

	NEED_ROOT();
	assert_int_equal(run_alloc(false, args), 0);
	/* the interval reports went to stdout, with the text summary's header */
	assert_non_null(strstr(out, "--- "));
	assert_non_null(strstr(out, "leak_site"));
}

/* bpf(2) denied: jemalloc's own profiler, preloaded, gives the answer; the output says so */
static void test_jemalloc_fallback_seccomp(void **state)
{
	const char *pb = path_in_tmp("je.pb.gz"), *json = path_in_tmp("je.json");
	char *args[] = { "-o", (char *)pb, "-o", (char *)json, "--", (char *)tk_test_workload("alloc_leak"),
			 "-d", "1", "--leak-bytes", "268435456", "--leak-block", "262144",
			 "--no-touch", NULL };
	char buf[1 << 16];
	FILE *f;
	size_t n;

	NEED_ROOT();
	assert_int_equal(run_alloc(true, args), 0);
	f = fopen(json, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, "\"backend\":\"jemalloc\""));
	check_leak(pb, "leak_site", "churn", field(out, "leaked"), 0.15);
	/* asking for bpf under the filter is a clear error */
	{
		char *bpf_args[] = { "--backend", "bpf", "--", "true", NULL };

		assert_int_equal(run_alloc(true, bpf_args), 1);
	}
}

/* Ctrl-C: the file is whole, and readable */
static void test_sigint_writes_whole_output(void **state)
{
	const char *pb = path_in_tmp("sigint.pb.gz");
	char *args[] = { "alloc", "-o", (char *)pb, "--", (char *)tk_test_workload("alloc_leak"), "-d", "30",
			 NULL };
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
	assert_true(pprof_func(pb, "alloc_space", "churn").found);
}

static void test_cli_errors(void **state)
{
	char *none[] = { "-d", "1", NULL };
	char *both[] = { "-p", "1", "--", "true", NULL };
	char *bad_mode[] = { "--mode", "bogus", "--", "true", NULL };
	char *bad_bytes[] = { "--sample-bytes", "0", "--", "true", NULL };
	char *bad_bytes2[] = { "--sample-bytes", "12Q", "--", "true", NULL };
	char *bytes_full[] = { "--mode", "full", "--sample-bytes", "4K", "--", "true", NULL };
	char *bad_age[] = { "--min-age", "-1", "--", "true", NULL };
	char *bad_fmt[] = { "-o", "x.unknown", "--", "true", NULL };
	char *no_pid[] = { "-p", "2147483646", "-d", "1", NULL };
	char *no_cmd[] = { "--", "/nonexistent/command", NULL };
	char *growth_je[] = { "--mode", "growth", "--backend", "jemalloc", "--", "true", NULL };

	assert_int_equal(run_alloc(false, none), 2);
	assert_int_equal(run_alloc(false, both), 2);
	assert_int_equal(run_alloc(false, bad_mode), 2);
	assert_int_equal(run_alloc(false, bad_bytes), 2);
	assert_int_equal(run_alloc(false, bad_bytes2), 2);
	assert_int_equal(run_alloc(false, bytes_full), 2);
	assert_int_equal(run_alloc(false, bad_age), 2);
	assert_int_equal(run_alloc(false, bad_fmt), 2);
	assert_int_equal(run_alloc(false, no_pid), 1);
	if (geteuid() == 0) {
		assert_int_equal(run_alloc(false, no_cmd), 1);
		assert_int_equal(run_alloc(false, growth_je), 1);
	}
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
		cmocka_unit_test(test_sampled_preload_glibc),
		cmocka_unit_test(test_sampled_uprobes_glibc),
		cmocka_unit_test(test_sampled_preload_jemalloc),
		cmocka_unit_test(test_sampled_uprobes_jemalloc),
		cmocka_unit_test(test_sampled_jemalloc_static),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_cxx_new_delete),
		cmocka_unit_test(test_full_exact),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_growth_perf_event),
		cmocka_unit_test(test_pid_target_exits),
		cmocka_unit_test(test_exec_full),
		cmocka_unit_test(test_exec_and_child_exit_sampled),
		cmocka_unit_test(test_follow_map_full),
		cmocka_unit_test(test_brk_map_full),
		cmocka_unit_test(test_forking_program),
		cmocka_unit_test(test_min_age_and_interval),
		cmocka_unit_test(test_jemalloc_fallback_seccomp),
		cmocka_unit_test(test_sigint_writes_whole_output),
	};
	const char *filter = getenv("TK_TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, setup, teardown);
}
