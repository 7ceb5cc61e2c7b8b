// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Whole stacks through code without frame pointers, as a user sees them:
 * tracekit cpu and alloc on workloads built without frame pointers whose
 * call chains are known (tests/workloads/unw_*), a chain through glibc
 * (qsort calling back), frames with and without frame pointers on one
 * stack, a library dlopen'ed after the start (also by 101 processes, more
 * than the table of misses holds), code of no file (JIT), more executable
 * mappings than an entry holds (300 libraries; python3 with 200), stacks cut
 * at the depth limit, a process in another mount namespace, and real
 * programs nobody here wrote (Debian's redis-server under redis-benchmark,
 * python3). Both CPU backends:
 * the BPF evaluator in the kernel and the perf_event fallback's in user space.
 * --unwind fp on the same workloads shows what the tests would see without
 * the tables (they must fail there).
 */
#include <errno.h>
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

static char tmpdir[] = "/tmp/tk-unwind-test.XXXXXX";

#define UNW_DEPTH_FRAMES 127	/* frames of a stack cut at the depth limit */
static char out[1 << 20];

/* a file in this test's temporary directory */
#define path_in_tmp(name) tk_test_path(tmpdir, name)

/*
 * Samples of a folded file whose stack contains @leaf, and of those the ones
 * that also contain @chain; the total in *total.
 */
static unsigned long folded_share(const char *file, const char *leaf, const char *chain,
				  unsigned long *with_leaf, unsigned long *total)
{
	static char line[1 << 16];
	unsigned long ok = 0;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	*with_leaf = *total = 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		unsigned long n;

		assert_non_null(sp);
		n = strtoul(sp + 1, NULL, 10);
		*sp = '\0';
		*total += n;
		if (!strstr(line, leaf))
			continue;
		*with_leaf += n;
		if (strstr(line, chain))
			ok += n;
	}
	fclose(f);
	return ok;
}

/* The value of loss counter @name in the pprof comments of @pb ("lost: NAME=N"). */
static long pprof_loss(const char *pb, const char *name)
{
	char cmd[1024], want[128], *p;
	long v = -1;

	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -comments %s 2>&1", pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "lost: %s=", name);
	p = strstr(out, want);
	if (p)
		v = strtol(p + strlen(want), NULL, 10);
	return v;
}

static int run(char **args)
{
	return tk_test_run_tracekit(out, sizeof(out), false, args);
}

/*
 * tracekit cpu with @backend and --unwind @mode on `-- @workload ARGS`: the
 * share of @leaf's samples that carry @chain.
 */
static double cpu_share(const char *backend, const char *mode, const char *workload,
			const char *arg, const char *leaf, const char *chain, const char *pb)
{
	const char *folded = path_in_tmp("cpu.folded");
	char *args[] = { "cpu", "--backend", (char *)backend, "--unwind", (char *)mode, "-F",
			 "499", "-o", (char *)folded, "-o", (char *)(pb ? pb : path_in_tmp("x.pb.gz")),
			 "--", (char *)tk_test_workload(workload), (char *)arg, NULL };
	unsigned long ok, with_leaf, total;

	assert_int_equal(run(args), 0);
	ok = folded_share(folded, leaf, chain, &with_leaf, &total);
	print_message("%s --unwind %s %s: %lu samples, %lu with %s, %lu of them with %s\n",
		      backend, mode, workload, total, with_leaf, leaf, ok, chain);
	assert_true(total > 300);
	assert_true(with_leaf > total / 3);
	return (double)ok / with_leaf;
}

#define QSORT_CHAIN ";main;run;stage_a;stage_b;qsort_r;"

/* main → run → stage_a → stage_b → qsort (glibc) → compare → burn, no frame pointers */
static void check_chain(const char *backend, const char *workload)
{
	const char *pb = path_in_tmp("chain.pb.gz");
	double share = cpu_share(backend, "auto", workload, "3", ";burn", QSORT_CHAIN, pb);

	assert_true(share >= 0.97);
	/* the whole chain starts at _start: the outermost frame CFI marks */
	share = cpu_share(backend, "auto", workload, "3", ";burn", "_start;__libc_start_main;",
			  pb);
	assert_true(share >= 0.97);
	assert_int_equal(pprof_loss(pb, "unwind_unsupported_cfi"), 0);
	assert_true(pprof_loss(pb, "unwind_depth_limit") == 0);
	/* the profile says how it unwound */
	assert_non_null(strstr(out, "unwinding: CFI in "));
	assert_non_null(strstr(out, "unwind tables: "));
}

static void test_chain_bpf(void **state)
{
	NEED_ROOT();
	check_chain("bpf", "unw_chain");
}

static void test_chain_perf(void **state)
{
	NEED_ROOT();
	check_chain("perf", "unw_chain");
}

/*
 * Rows resident in the tracer: Rss of its rows mappings (rw-s BPF maps of a
 * chunk or more: 512 KiB each now; the whole --unwind-mem array before,
 * 16 MiB resident at once) while it runs, in kB.
 */
static long rows_rss_kb(pid_t pid)
{
	char path[64], line[512];
	long size = 0, rss, total = 0;
	bool rows = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			rows = strstr(line, " rw-s ") && strstr(line, "anon_inode:bpf-map");
			continue;
		}
		if (sscanf(line, "Size: %ld kB", &size) == 1)
			continue;
		if (rows && size >= 512 && sscanf(line, "Rss: %ld kB", &rss) == 1)
			total += rss;
	}
	fclose(f);
	return total;
}

/*
 * The rows take memory as tables come: resident rows of a capture of one
 * small program stay within the rows laid out (used and skipped, from the
 * profile's note) plus one chunk, not the --unwind-mem ceiling.
 */
static void test_rows_follow_use(void **state)
{
	const char *json = path_in_tmp("rows.json");
	char *args[] = { "cpu", "--backend", "bpf", "--unwind", "cfi", "-F", "499", "-o",
			 (char *)json, "--", (char *)tk_test_workload("unw_chain"), "3", NULL };
	double used_mib = -1;
	long rss, skipped = -1;
	char *p;
	pid_t pid;
	int st;
	FILE *f;
	size_t n;

	NEED_ROOT();
	pid = tk_test_start_tracekit(args);
	assert_true(pid > 0);
	assert_int_equal(tk_test_wait_attached(pid, 20000), 0);
	sleep(1);		/* the workload's tables are laid out */
	rss = rows_rss_kb(pid);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	f = fopen(json, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	p = strstr(out, "unwind memory (kernel): ");
	if (p)
		p = strstr(p, "ceiling, ");
	if (p)
		sscanf(p, "ceiling, %lf MiB used (%ld rows free", &used_mib, &skipped);
	print_message("rows resident %ld kB; laid out %.1f MiB used, %ld rows free\n", rss,
		      used_mib, skipped);
	assert_true(used_mib >= 0 && skipped >= 0);
	assert_true(rss > 0);
	/* the note's MiB are rounded to 0.1 */
	assert_true(rss <= (long)((used_mib + 0.05) * 1024) + skipped * 8 / 1024 + 512);
}

/* a stripped copy: no .symtab, CFI all the same (names from .dynsym where there are any) */
static void test_chain_stripped_bpf(void **state)
{
	NEED_ROOT();
	/* its own functions are unnamed (module+offset), glibc's are: the chain is whole */
	assert_true(cpu_share("bpf", "auto", "unw_chain_stripped", "3", ";qsort_r;",
			      "__libc_start_main;__libc_start_call_main;unw_chain_stripped+", NULL) >=
		    0.97);
}

/* The same workload with frame pointers only: the chain breaks (the tests above can fail). */
static void test_chain_fp_only(void **state)
{
	NEED_ROOT();
	assert_true(cpu_share("bpf", "fp", "unw_chain", "3", ";burn", QSORT_CHAIN, NULL) < 0.5);
}

/* main → outer (no fp) → lib_middle (fp, libunwfp.so) → callback_inner (no fp) → burn */
static void test_mixed_bpf(void **state)
{
	NEED_ROOT();
	assert_true(cpu_share("bpf", "auto", "unw_mixed", "3", ";burn",
			      ";main;outer;lib_middle;callback_inner;burn", NULL) >= 0.97);
}

static void test_mixed_perf(void **state)
{
	NEED_ROOT();
	assert_true(cpu_share("perf", "auto", "unw_mixed", "3", ";burn",
			      ";main;outer;lib_middle;callback_inner;burn", NULL) >= 0.97);
}

/* a library dlopen'ed after the first samples: its table loads on the first miss */
static void check_dlopen(const char *backend)
{
	const char *folded = path_in_tmp("dl.folded");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "499", "-o", (char *)folded,
			 "--", (char *)tk_test_workload("unw_dlopen"), "1", "3", NULL };
	unsigned long ok, with_leaf, total;

	assert_int_equal(run(args), 0);
	ok = folded_share(folded, ";late_hot", ";main;late_caller;late_outer;late_hot", &with_leaf,
			  &total);
	print_message("%s dlopen: %lu samples, %lu in late_hot, %lu whole\n", backend, total,
		      with_leaf, ok);
	/* 3 s at 499 Hz is ~1500 on a CPU of its own; a load of 9 on two CPUs left it 435 */
	assert_true(with_leaf > 200);
	/* at most the first second after the dlopen may be lost: one capture a second */
	assert_true(ok >= with_leaf * 0.6);
}

static void test_dlopen_bpf(void **state)
{
	NEED_ROOT();
	check_dlopen("bpf");
}

static void test_dlopen_perf(void **state)
{
	NEED_ROOT();
	check_dlopen("perf");
}

/*
 * More processes miss than the table of misses once had slots (64): two
 * waves of 50 processes each dlopen a library after a first phase, then one
 * more (named apart) does: the last one's library is captured as the first
 * ones' were. (Slots were never freed: from the 65th process on, misses went
 * unheard. test_unwind_store checks the pruning past today's table.)
 */
static void test_dlopen_many_processes_bpf(void **state)
{
	const char *folded = path_in_tmp("dlmany.folded"), *pb = path_in_tmp("dlmany.pb.gz");
	const char *last = path_in_tmp("unw_dlopen_last");
	char cmd[2048], script[2048], *p;
	unsigned long ok, with_leaf, total;
	long recaptures;

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd), "cp %s %s && cp %s %s", tk_test_workload("unw_dlopen"), last,
		 tk_test_workload("libunwlate.so"), tmpdir);
	assert_int_equal(system(cmd), 0);
	snprintf(script, sizeof(script), "for w in 1 2; do for i in $(seq 50); do %s 1.5 0.5 & "
		 "done; wait; done; exec %s 0.5 3", tk_test_workload("unw_dlopen"), last);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded,
				 "-o", (char *)pb, "--", "/bin/sh", "-c", script, NULL };

		assert_int_equal(run(args), 0);
	}
	ok = folded_share(folded, ";late_hot", ";main;late_caller;late_outer;late_hot", &with_leaf,
			  &total);
	print_message("101 processes dlopen: %lu samples, %lu in late_hot, %lu whole\n", total,
		      with_leaf, ok);
	/* the last process alone (its comm: the copy's name, cut at 15 bytes) */
	ok = folded_share(folded, "unw_dlopen_last;", ";main;late_caller;late_outer;late_hot",
			  &with_leaf, &total);
	print_message("the last: %lu samples, %lu whole in late_hot\n", with_leaf, ok);
	assert_true(with_leaf > 200);
	/* 3 s after its dlopen, one capture a second at most: 2/3 at the very least */
	assert_true(ok >= with_leaf * 0.6);
	assert_true(pprof_loss(pb, "unwind_miss_dropped") >= 0);
	p = strstr(out, "unwind misses: ");
	assert_non_null(p);
	recaptures = strtol(p + strlen("unwind misses: "), NULL, 10);
	print_message("%ld captures taken again after a miss\n", recaptures);
	assert_true(recaptures > 64);
}

/*
 * code of no file: the anonymous frame is JIT code, a mapping of its own
 * ("[jit]", no CFI) taken by rbp, which holds no frame here: the walk ends
 */
static void test_jit_bpf(void **state)
{
	const char *folded = path_in_tmp("jit.folded"), *pb = path_in_tmp("jit.pb.gz");
	char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded, "-o",
			 (char *)pb, "--", (char *)tk_test_workload("unw_jit"), "3", NULL };
	unsigned long ok, with_leaf, total;

	NEED_ROOT();
	assert_int_equal(run(args), 0);
	/* after_jit → burn, then the anonymous frame ([jit]+0xADDRESS), then nothing */
	ok = folded_share(folded, ";after_jit;burn", ";[jit]+0x", &with_leaf, &total);
	print_message("jit: %lu samples, %lu in after_jit→burn, %lu stop at the JIT frame\n",
		      total, with_leaf, ok);
	assert_true(with_leaf > total / 2);
	assert_true(ok >= with_leaf * 0.97);
	/* a known mapping without CFI, not an address in none: no miss, no capture again */
	assert_true(pprof_loss(pb, "unwind_fp_no_cfi") >= (long)(with_leaf * 0.9));
	assert_true(pprof_loss(pb, "unwind_no_mapping") <= (long)(with_leaf * 0.05));
	/* counted as unsymbolized_frames is: a frame of each distinct stack */
	assert_true(pprof_loss(pb, "jit_unnamed_frames") > 0);
}

/*
 * A process in another mount namespace whose program exists only there (a
 * tmpfs of its own): its objects are read through /proc/PID/map_files.
 */
static void test_other_mount_namespace(void **state)
{
	const char *folded = path_in_tmp("ns.folded");
	char cmd[2048];
	unsigned long ok, with_leaf, total;
	pid_t pid;
	int i;

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd),
		 "unshare --mount --propagation private sh -c 'd=$(mktemp -d) && "
		 "mount -t tmpfs none $d && cp %s $d/unw_chain_ns && exec $d/unw_chain_ns 6' "
		 ">/dev/null 2>&1 & echo $!", tk_test_workload("unw_chain"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	/* the workload's own pid: the first child of the shell that became it */
	pid = atoi(out);
	assert_true(pid > 0);
	for (i = 0; i < 50; i++) {
		char link[64], target[512];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', strstr(target, "unw_chain_ns")))
			break;
		usleep(20000);
	}
	assert_true(i < 50);
	{
		char spid[16];
		char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "3", "-F", "499",
				 "-o", (char *)folded, NULL };

		snprintf(spid, sizeof(spid), "%d", pid);
		assert_int_equal(run(args), 0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ok = folded_share(folded, ";burn", QSORT_CHAIN, &with_leaf, &total);
	print_message("mount namespace: %lu samples, %lu in burn, %lu whole\n", total, with_leaf,
		      ok);
	assert_true(with_leaf > 300);
	assert_true(ok >= with_leaf * 0.97);
}

/* ---- more executable mappings than an entry holds (UNW_MAX_MAPS) ---------------------- */

/*
 * Start @argv with its stdout on a pipe and wait (up to 20 s) for a line
 * starting with @ready; its pid.
 */
static pid_t start_ready(char *const argv[], const char *ready)
{
	char line[256];
	int fds[2];
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, ready, strlen(ready)))
			break;
	assert_true(!strncmp(line, ready, strlen(ready)));
	fclose(f);
	return pid;
}

/*
 * unw_manylibs with @nlibs libraries loaded, profiled with -p once they are
 * (the entry is written with all of them): the share of its samples whose
 * leaf is in glibc (its sort, memcpy, rand_r) that reach main, and of those
 * in the comparison (under glibc's sort).
 */
static double manylibs_share(const char *backend, int nlibs, double *cmp_share)
{
	const char *folded = path_in_tmp("many.folded"), *pb = path_in_tmp("many.pb.gz");
	static const char *const own[] = { "compare", "sort_round", "run", "main", "_start" };
	char n[16], spid[16], *wl[] = { (char *)tk_test_workload("unw_manylibs"), "-v", n, "6",
					NULL };
	unsigned long libc_leaf = 0, libc_main = 0, cmp_leaf = 0, cmp_main = 0, total = 0;
	static char line[1 << 16];
	pid_t pid;
	FILE *f;

	snprintf(n, sizeof(n), "%d", nlibs);
	pid = start_ready(wl, "executable mappings");
	snprintf(spid, sizeof(spid), "%d", pid);
	{
		char *args[] = { "cpu", "--backend", (char *)backend, "-p", spid, "-d", "3", "-F",
				 "499", "-o", (char *)folded, "-o", (char *)pb, NULL };

		assert_int_equal(run(args), 0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	f = fopen(folded, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' '), *leaf;
		unsigned long cnt;
		bool mine = false, whole;
		size_t i;

		assert_non_null(sp);
		cnt = strtoul(sp + 1, NULL, 10);
		*sp = '\0';
		leaf = strrchr(line, ';');
		leaf = leaf ? leaf + 1 : line;
		whole = strstr(line, ";main;run;sort_round;") != NULL;
		total += cnt;
		for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			mine |= !strcmp(leaf, own[i]);
		if (!strcmp(leaf, "compare")) {
			cmp_leaf += cnt;
			cmp_main += whole ? cnt : 0;
		} else if (!mine) {
			libc_leaf += cnt;
			libc_main += whole ? cnt : 0;
		}
	}
	fclose(f);
	print_message("%s, %d libraries: %lu samples; %lu with the leaf in glibc, %.1f %% reach "
		      "main; %lu in compare, %.1f %% reach main\n", backend, nlibs, total, libc_leaf,
		      libc_leaf ? 100.0 * libc_main / libc_leaf : 0.0, cmp_leaf,
		      cmp_leaf ? 100.0 * cmp_main / cmp_leaf : 0.0);
	assert_true(total > 300);
	assert_true(libc_leaf > total / 3);
	assert_true(cmp_leaf > 0);
	*cmp_share = (double)cmp_main / cmp_leaf;
	return (double)libc_main / libc_leaf;
}

/*
 * 300 libraries: the entry keeps the executable, libc, ld.so and the vdso
 * (kept in address order, libc and everything above it went first), says so,
 * and sends no misses; the stacks through glibc are as whole as with 10.
 */
static void check_manylibs(const char *backend)
{
	const char *pb = path_in_tmp("many.pb.gz");
	double few, many, few_cmp, many_cmp;

	few = manylibs_share(backend, 10, &few_cmp);
	assert_true(few >= 0.97);
	assert_true(few_cmp >= 0.97);
	many = manylibs_share(backend, 300, &many_cmp);
	print_message("%s: glibc-leaf samples reaching main: %.1f %% with 10 libraries, %.1f %% "
		      "with 300\n", backend, 100 * few, 100 * many);
	assert_true(many >= 0.97);
	assert_true(many_cmp >= 0.97);
	/* no address was in no mapping (no miss sent); the profile says what was left out */
	assert_int_equal(pprof_loss(pb, "unwind_no_mapping"), 0);
	assert_true(pprof_loss(pb, "unwind_mapping_left_out") >= 0);
	assert_non_null(strstr(out, "unwind entries: "));
}

static void test_manylibs_bpf(void **state)
{
	NEED_ROOT();
	check_manylibs("bpf");
}

static void test_manylibs_perf(void **state)
{
	NEED_ROOT();
	check_manylibs("perf");
}

/* ---- the depth limit ------------------------------------------------------------------ */

/*
 * Allocation stacks deeper than the limit, from two threads recursing
 * through functions of their own (deep_a, deep_b: unw_deep), sampled by the
 * preloaded sampler (its marker's frame left out, and the slow path's): every
 * stack cut at the limit holds 127 frames, all of them its own thread's —
 * none of the other's, none left from an earlier sample in the per-CPU buffer
 * (the length once said 127 frames where 125 were written).
 */
static void test_depth_limit_no_stale_frames(void **state)
{
	const char *pb = path_in_tmp("deep.pb.gz"), *traces = path_in_tmp("deep.traces");
	char *args[] = { "alloc", "-o", (char *)pb, "--", (char *)tk_test_workload("unw_deep"),
			 "3", "200", NULL };
	static char names[UNW_DEPTH_FRAMES + 8][32];
	unsigned long cut = 0, bad = 0, n = 0, i;
	char cmd[1024], line[512];
	FILE *f;

	NEED_ROOT();
	assert_int_equal(run(args), 0);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -traces "
		 "-sample_index=alloc_objects %s > %s 2>&1", pb, traces);
	assert_int_equal(system(cmd), 0);
	f = fopen(traces, "r");
	assert_non_null(f);
	/*
	 * Blocks between "-----------+----" lines: labels (NAME: VALUE), then the
	 * frames, the leaf first. A stack of 127 frames from alloc_X is one cut
	 * at the limit: the 126 others must all be deep_X.
	 */
	for (;;) {
		bool end = !fgets(line, sizeof(line), f);
		char *name = end ? NULL : strrchr(line, ' ');

		if (end || !strncmp(line, "-----------+", 12)) {
			if (n == UNW_DEPTH_FRAMES && !strncmp(names[0], "alloc_", 6)) {
				char want[32];

				snprintf(want, sizeof(want), "deep_%s", names[0] + 6);
				cut++;
				for (i = 1; i < n; i++) {
					if (strcmp(names[i], want)) {
						print_message("%s stack, frame %lu: %s\n", names[0],
							      i, names[i]);
						bad++;
					}
				}
			}
			n = 0;
			if (end)
				break;
			continue;
		}
		if (strchr(line, ':') || !name)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (n < sizeof(names) / sizeof(names[0]))
			snprintf(names[n], sizeof(names[n]), "%s", name + 1);
		n++;
	}
	fclose(f);
	print_message("depth limit: %lu stacks cut at %d frames, %lu frames not of their own walk\n",
		      cut, UNW_DEPTH_FRAMES, bad);
	assert_true(cut >= 2);
	assert_int_equal(bad, 0);
	assert_true(pprof_loss(pb, "unwind_depth_limit") > 0);
}

/* ---- programs nobody here wrote ------------------------------------------------------ */

/*
 * A container: Debian trixie's perl (another glibc and perl build than this
 * host's) with pivot_root in mount and pid namespaces of its own, as runtimes
 * make one (tk_test_spawn_in_root; tests/lib/mkroot.sh builds the root,
 * run.sh passes TK_OTHER_ROOT). Its interpreter loop's samples reach main
 * through trixie's libc.
 */
static void test_container_other_release(void **state)
{
	const char *root = getenv("TK_OTHER_ROOT"), *folded = path_in_tmp("ct.folded");
	char *perl[] = { "/usr/bin/perl", "-e",
			 "$t = time + 6; while (time < $t) { $s = 0; $s += $_ * $_ for 1..1000 }",
			 NULL };
	unsigned long ok, with_leaf, total;
	char cmd[2048], spid[16], link[64], target[512];
	pid_t outer, pid;
	int i;

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd), "%s/usr/bin/perl", root ? root : "");
	if (!root || access(cmd, X_OK)) {
		print_message("no container root (TK_OTHER_ROOT; tests/lib/mkroot.sh trixie DIR)\n");
		if (getenv("CI"))
			fail();
		skip();
	}
	pid = tk_test_spawn_in_root(root, perl, -1, -1, &outer);
	if (pid <= 0)
		fail_msg("cannot start perl in %s: %s", root, strerror(-pid));
	/* until its exec it is a copy of this test */
	for (i = 0; i < 250; i++) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', strstr(target, "perl")))
			break;
		usleep(20000);
	}
	assert_true(i < 250);
	usleep(100000);		/* past ld.so */
	snprintf(spid, sizeof(spid), "%d", pid);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "3", "-F", "499",
				 "-o", (char *)folded, NULL };

		assert_int_equal(run(args), 0);
	}
	kill(pid, SIGKILL);
	waitpid(outer, NULL, 0);
	ok = folded_share(folded, "Perl_runops_standard", ";main;perl_run;Perl_runops_standard",
			  &with_leaf, &total);
	print_message("container (%s's perl): %lu samples, %lu in the interpreter loop, %lu reach "
		      "main\n", root, total, with_leaf, ok);
	assert_true(with_leaf > total / 2);
	assert_true(ok >= with_leaf * 0.95);
}

/*
 * Debian's redis-server (no frame pointers, no .symtab) under redis-benchmark:
 * nearly every sample reaches main (the event loop) or a thread's start.
 */
static void check_redis(bool small_budget);

static void test_redis_bpf(void **state)
{
	NEED_ROOT();
	check_redis(true);
}

/*
 * The same with the user registers of a task in the kernel (redis in write(2))
 * read from task_struct.stack, as on kernels without bpf_task_pt_regs (< 5.15).
 */
static void test_redis_task_stack_bpf(void **state)
{
	NEED_ROOT();
	setenv("TK_UNWIND_TASK_STACK", "1", 1);
	check_redis(false);
	unsetenv("TK_UNWIND_TASK_STACK");
}

static void check_redis(bool small_budget)
{
	const char *folded = path_in_tmp("redis.folded");
	char cmd[1024], spid[16];
	unsigned long ok, with_leaf, total;
	static int calls;
	int port = 20000 + (getpid() + 7 * calls++) % 20000, i;
	pid_t rpid, bench;

	if (access("/usr/bin/redis-server", X_OK) || access("/usr/bin/redis-benchmark", X_OK)) {
		print_message("redis-server or redis-benchmark missing (tools/install-deps.sh)\n");
		if (getenv("CI"))
			fail();
		skip();
	}
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no "
		 ">/dev/null 2>&1 & echo $!", port);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	rpid = atoi(out);
	usleep(300000);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/redis-benchmark -h 127.0.0.1 -p %d -n 100000000 -c 20 -q -t set,get,incr "
		 ">/dev/null 2>&1 & echo $!", port);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	bench = atoi(out);
	usleep(300000);
	snprintf(spid, sizeof(spid), "%d", rpid);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "3", "-F", "499",
				 "-o", (char *)folded, NULL };

		assert_int_equal(run(args), 0);
	}
	/*
	 * The table memory is bounded: 1 MiB holds 131072 rows, redis's 19 objects
	 * need about twice that; what does not fit is said, and its frames go by
	 * the frame pointer (counted as tables not loaded).
	 */
	if (small_budget) {
		const char *pb = path_in_tmp("redis-small.pb.gz");
		char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "2", "-F", "499",
				 "--unwind-mem", "1", "-o", (char *)pb, NULL };
		long not_loaded = 0;
		int attempt;
		char *p;

		/*
		 * Which objects do not fit depends on the order their tables are
		 * built in: a capture where none of those ran is taken again, once
		 */
		for (attempt = 0; attempt < 2 && not_loaded <= 0; attempt++) {
			assert_int_equal(run(args), 0);
			not_loaded = pprof_loss(pb, "unwind_table_not_loaded");
			p = strstr(out, "unwind tables: ");
			assert_non_null(p);
			p = strstr(p, " did not fit");
			assert_non_null(p);
			while (p > out && p[-1] >= '0' && p[-1] <= '9')
				p--;
			print_message("redis, --unwind-mem 1: %ld objects did not fit, %ld stacks "
				      "with a frame whose table is not loaded\n", strtol(p, NULL, 10),
				      not_loaded);
			assert_true(strtol(p, NULL, 10) >= 1);
			assert_non_null(strstr(out, "of 1.0 MiB"));
		}
		assert_true(not_loaded > 0);
	}
	/* not our children (the shell started them): wait until they are gone */
	kill(bench, SIGKILL);
	kill(rpid, SIGTERM);
	for (i = 0; i < 300 && (!kill(bench, 0) || !kill(rpid, 0)); i++)
		usleep(10000);
	ok = folded_share(folded, "redis-server", ";main;", &with_leaf, &total);
	ok += folded_share(folded, "redis-server", ";start_thread;", &with_leaf, &total);
	print_message("redis: %lu samples, %lu reach main or start_thread\n", total, ok);
	assert_true(total > 300);
	assert_true(ok >= total * 0.95);
	/* the event loop's chain, as perf --call-graph dwarf shows it */
	ok = folded_share(folded, "redis-server", ";main;aeMain;", &with_leaf, &total);
	assert_true(ok >= total / 2);
}

/* Debian's python3 on a pure-Python loop: the interpreter's frames reach Py_BytesMain. */
static void test_python_bpf(void **state)
{
	const char *folded = path_in_tmp("py.folded"), *script = path_in_tmp("loop.py");
	unsigned long ok, with_leaf, total;
	FILE *f;

	NEED_ROOT();
	if (access("/usr/bin/python3", X_OK)) {
		print_message("/usr/bin/python3 missing\n");
		if (getenv("CI"))
			fail();
		skip();
	}
	f = fopen(script, "w");
	assert_non_null(f);
	fputs("import time\nt = time.time() + 3\nn = 0\nwhile time.time() < t:\n"
	      "    n = sum(i * i for i in range(1000))\n", f);
	fclose(f);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded, "--",
				 "/usr/bin/python3", (char *)script, NULL };

		assert_int_equal(run(args), 0);
	}
	ok = folded_share(folded, "_PyEval_EvalFrameDefault", ";Py_BytesMain;", &with_leaf,
			  &total);
	print_message("python3: %lu samples, %lu in the interpreter, %lu reach Py_BytesMain\n",
		      total, with_leaf, ok);
	assert_true(with_leaf > total / 2);
	assert_true(ok >= with_leaf * 0.95);
}

/*
 * Debian's python3 (no frame pointers) with more executable mappings than an
 * entry holds: every extension module of its lib-dynload imported, then
 * system libraries loaded with ctypes until it has 200 (a plugin host's
 * life); its hot loop copies bytes (glibc's memcpy the leaf). Kept in address
 * order, libc (mapped first, highest) went and those stacks stopped there.
 */
static void test_python_many_modules_bpf(void **state)
{
	const char *folded = path_in_tmp("pymany.folded"), *script = path_in_tmp("many.py");
	unsigned long ok, with_leaf, total, eval_ok, eval_n;
	char *p;
	FILE *f;

	NEED_ROOT();
	if (access("/usr/bin/python3", X_OK)) {
		print_message("/usr/bin/python3 missing\n");
		if (getenv("CI"))
			fail();
		skip();
	}
	f = fopen(script, "w");
	assert_non_null(f);
	fputs("import ctypes, glob, importlib, os, sys, time\n"
	      "for p in sorted(glob.glob(sys.base_prefix + '/lib/python3*/lib-dynload/*.so')):\n"
	      "    try:\n"
	      "        importlib.import_module(os.path.basename(p).split('.')[0])\n"
	      "    except Exception:\n"
	      "        pass\n"
	      "def xmaps():\n"
	      "    with open('/proc/self/maps') as f:\n"
	      "        return sum(1 for l in f if l.split()[1][2] == 'x')\n"
	      "for p in sorted(glob.glob('/usr/lib/x86_64-linux-gnu/lib*.so.*')):\n"
	      "    if xmaps() > 200:\n"
	      "        break\n"
	      /* a sanitizer's runtime aborts a process it was not linked into first */
	      "    if 'san.so' in p or 'san_' in p:\n"
	      "        continue\n"
	      "    try:\n"
	      "        ctypes.CDLL(p, mode=os.RTLD_LOCAL)\n"
	      "    except OSError:\n"
	      "        pass\n"
	      "print('executable mappings', xmaps(), flush=True)\n"
	      "buf = bytearray(1 << 20)\n"
	      "t = time.time() + 3\n"
	      "while time.time() < t:\n"
	      "    for i in range(50):\n"
	      "        b = bytes(buf)\n", f);
	fclose(f);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded, "--",
				 "/usr/bin/python3", (char *)script, NULL };

		assert_int_equal(run(args), 0);
	}
	p = strstr(out, "executable mappings ");
	assert_non_null(p);
	print_message("python3: %s", p);
	assert_true(atoi(p + strlen("executable mappings ")) > 128);
	ok = folded_share(folded, ";__memcpy", ";Py_BytesMain;", &with_leaf, &total);
	eval_ok = folded_share(folded, ";_PyEval_EvalFrameDefault", "_start;__libc_start_main;",
			       &eval_n, &total);
	print_message("python3, many modules: %lu samples, %lu in memcpy, %lu of them reach "
		      "Py_BytesMain; %lu in the interpreter, %lu reach _start\n", total, with_leaf,
		      ok, eval_n, eval_ok);
	assert_true(with_leaf > total / 3);
	assert_true(ok >= with_leaf * 0.97);
	assert_true(eval_ok >= eval_n * 0.95);
}

/* ---- allocations ---------------------------------------------------------------------- */

/*
 * growth mode on a leak whose pages malloc itself touches first (inside
 * glibc's _int_malloc): the bytes land under the leaking function.
 */
static void check_growth(const char *mode, double *share)
{
	const char *folded = path_in_tmp("growth.folded");
	char *args[] = { "alloc", "--mode", "growth", "--unwind", (char *)mode, "-o",
			 (char *)folded, "--", (char *)tk_test_workload("alloc_libc_touch"), "-d",
			 "2", "--leak-bytes", "33554432", NULL };
	unsigned long ok, with_leaf, total;

	assert_int_equal(run(args), 0);
	ok = folded_share(folded, "[page fault]", ";main;grow;leak_4k;", &with_leaf, &total);
	print_message("growth --unwind %s: %lu bytes faulted, %lu under main;grow;leak_4k\n",
		      mode, with_leaf, ok);
	assert_true(with_leaf > 0);
	*share = (double)ok / with_leaf;
}

static void test_growth_through_libc(void **state)
{
	double cfi, fp;

	NEED_ROOT();
	check_growth("auto", &cfi);
	check_growth("fp", &fp);
	print_message("growth: %.3f of the faulted bytes under leak_4k with CFI, %.3f without\n",
		      cfi, fp);
	/* 32 MiB leaked in 4 KiB blocks beside churn: most faults are the leak's */
	assert_true(cfi >= 0.8);
	assert_true(fp < cfi / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_bpf),
		cmocka_unit_test(test_chain_perf),
		cmocka_unit_test(test_rows_follow_use),
		cmocka_unit_test(test_chain_stripped_bpf),
		cmocka_unit_test(test_chain_fp_only),
		cmocka_unit_test(test_mixed_bpf),
		cmocka_unit_test(test_mixed_perf),
		cmocka_unit_test(test_dlopen_bpf),
		cmocka_unit_test(test_dlopen_perf),
		cmocka_unit_test(test_dlopen_many_processes_bpf),
		cmocka_unit_test(test_jit_bpf),
		cmocka_unit_test(test_manylibs_bpf),
		cmocka_unit_test(test_manylibs_perf),
		cmocka_unit_test(test_depth_limit_no_stale_frames),
		cmocka_unit_test(test_other_mount_namespace),
		cmocka_unit_test(test_container_other_release),
		cmocka_unit_test(test_redis_bpf),
		cmocka_unit_test(test_redis_task_stack_bpf),
		cmocka_unit_test(test_python_bpf),
		cmocka_unit_test(test_python_many_modules_bpf),
		cmocka_unit_test(test_growth_through_libc),
	};
	int ret;

	if (!mkdtemp(tmpdir))
		return 1;
	/* TK_TEST_FILTER="*manylibs*" runs a subset (cmocka's glob) */
	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	if (!getenv("TK_KEEP_TMP")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			ret = ret ? ret : 1;
	}
	return ret;
}
