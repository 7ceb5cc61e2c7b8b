// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit on a kernel without BTF, simulated on this one: every run in a
 * mount namespace of its own, private (nothing propagates back), in which an
 * empty file is bound over /sys/kernel/btf/vmlinux, so that libbpf finds no
 * kernel BTF, and tracefs is mounted at /sys/kernel/tracing or nowhere, as
 * the test asks. The namespace goes with the process; after each run the
 * host's mount table is compared with what it was before the first.
 *
 *   caps   bpf.btf not supported, with a remedy; CO-RE, tp_btf and fentry
 *          "BTF missing" with bpf.btf as cause; the tracepoints found in
 *          tracefs, or without it in kallsyms; one problem in the text report
 *   cpu    cpu_split: backend bpf, hot within 10 points of 75 % (as
 *          tests/vm/matrix.sh check_cpu)
 *   alloc  --mode full on alloc_leak: the leak exactly, backend bpf (as
 *          check_alloc); a note says process exits are not seen (no offsets
 *          of task_struct.signal and signal_struct.live)
 *   numa   backend vmstat, and missing[] says it is for want of BTF
 *
 * A missing dependency (root, a mount namespace, jq, the workloads) is a skip,
 * and a failure under CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"

#include "spawn.h"

#define SYS_BTF "/sys/kernel/btf/vmlinux"
#define TRACEFS "/sys/kernel/tracing"
#define SIM_FAILED 125		/* the child could not set the simulation up */

static char tmpdir[] = "/tmp/tk-nobtf-test.XXXXXX";
static char empty[sizeof(tmpdir) + 16];	/* the empty file bound over SYS_BTF */
static char host_mounts[1 << 16];	/* the host's mounts this test could touch */
static char text[1 << 20];

/* a file in this test's temporary directory */
#define path_in_tmp(name) tk_test_path(tmpdir, name)


static void need_basics(void)
{
	char buf[256];

	NEED_DEP(geteuid() == 0, "this test needs root (a mount namespace)\n");
	NEED_DEP(tk_test_capture("command -v jq", buf, sizeof(buf)) == 0,
	     "jq (tools/install-deps.sh)\n");
}

static void need_workload(const char *name)
{
	NEED_DEP(access(tk_test_workload(name), X_OK) == 0, "%s: make %s\n", tk_test_workload(name),
	     tk_test_workload(name));
}

/* The lines of the host's mountinfo about BTF, tracefs or this test's files. */
static void read_host_mounts(char *buf, size_t size)
{
	char line[4096];
	size_t off = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	assert_non_null(f);
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if ((strstr(line, "/sys/kernel/btf") || strstr(line, "tracefs") ||
		     strstr(line, tmpdir)) && off + strlen(line) < size)
			off += snprintf(buf + off, size - off, "%s", line);
	fclose(f);
}

/* Nothing of a run was left in the host's mount namespace. */
static void expect_no_leak(void)
{
	static char now[sizeof(host_mounts)];
	struct stat st;

	read_host_mounts(now, sizeof(now));
	if (strcmp(now, host_mounts))
		fail_msg("the host's mounts changed:\nbefore:\n%s\nafter:\n%s", host_mounts, now);
	/* the host's BTF is as it was: not the empty file */
	if (!stat(SYS_BTF, &st))
		assert_true(st.st_size > 0);
}

/* In the child: the simulation. NULL, or what failed. */
static const char *simulate(bool tracefs)
{
	if (unshare(CLONE_NEWNS))
		return "unshare(CLONE_NEWNS)";
	/* the host's / may be shared: make ours private, or the bind mount leaks back */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return "mount --make-rprivate /";
	/* a kernel truly without BTF has nothing to hide */
	if (!access(SYS_BTF, F_OK) && mount(empty, SYS_BTF, NULL, MS_BIND, NULL))
		return "mount --bind " SYS_BTF;
	/* tracefs only where asked: none wherever the host has it */
	umount2("/sys/kernel/debug/tracing", MNT_DETACH);
	umount2(TRACEFS, MNT_DETACH);
	if (tracefs && mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return "mount -t tracefs nodev " TRACEFS;
	return NULL;
}

/*
 * Run build/tracekit ARGS in the simulation, stdout into @out_file, stderr
 * into @err_file. The exit status, SIM_FAILED when the simulation could not be
 * set up (it says why on @err_file), -1 when tracekit did not exit normally or
 * ran past 180 s.
 */
static int run_nobtf(bool tracefs, const char *out_file, const char *err_file,
		     char *const args[])
{
	char bin[512], *argv[32] = { bin };
	int status, i, waited;
	const char *what;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/tracekit", tk_test_build_dir());
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int o = open(out_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int e = open(err_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(SIM_FAILED);
		what = simulate(tracefs);
		if (what) {
			fprintf(stderr, "simulation: %s: %s\n", what, strerror(errno));
			_exit(SIM_FAILED);
		}
		execv(bin, argv);
		_exit(127);
	}
	for (waited = 0; waitpid(pid, &status, WNOHANG) != pid; waited++) {
		if (waited >= 180 * 50) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(20 * 1000);
	}
	expect_no_leak();
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *slurp(const char *file)
{
	FILE *f = fopen(file, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* tracekit's own lines of @file ("tracekit: ..."), not libbpf's (-v), for messages */
static const char *said(const char *file)
{
	static char buf[2048];
	char line[1024];
	size_t off = 0;
	FILE *f = fopen(file, "r");

	buf[0] = '\0';
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f))
		if ((!strncmp(line, "tracekit", 8) || !strncmp(line, "simulation", 10)) &&
		    off + strlen(line) < sizeof(buf))
			off += snprintf(buf + off, sizeof(buf) - off, "%s", line);
	fclose(f);
	return buf;
}

/* Run, and expect exit 0 (a failed simulation is a missing dependency). */
static void run_ok(bool tracefs, const char *out_file, const char *err_file, char *const args[])
{
	int rc = run_nobtf(tracefs, out_file, err_file, args);

	NEED_DEP(rc != SIM_FAILED, "a private mount namespace: %s", said(err_file));
	if (rc)
		fail_msg("tracekit %s: exit %d; it said: %s", args[0], rc, said(err_file));
}

/* jq -e @filter on @file: true when it holds */
static bool jq_file(const char *file, const char *filter)
{
	char cmd[2048], res[2048];
	int rc;

	snprintf(cmd, sizeof(cmd), "jq -e '%s' %s 2>&1", filter, file);
	rc = tk_test_capture(cmd, res, sizeof(res));
	if (rc)
		print_error("jq '%s' on %s: %d: %s\n", filter, file, rc, res);
	return rc == 0;
}

/* what one entry of a caps report says, for messages */
static void explain(const char *file, const char *id)
{
	char cmd[512], res[2048];

	snprintf(cmd, sizeof(cmd), "jq -c '.entries[\"%s\"]' %s", id, file);
	tk_test_capture(cmd, res, sizeof(res));
	print_message("%s: %s", id, res);
}

/* ---- caps ---------------------------------------------------------------------------- */

/* What both caps runs must say of BTF and of what needs it. */
static void check_caps_btf(const char *json)
{
	static const char *const needs_btf[] = { "bpf.core", "bpf.prog.tp_btf",
						 "bpf.prog.fentry" };
	char filter[256];
	size_t i;

	assert_true(jq_file(json, ".schema == \"tracekit.caps/1\""));
	if (!jq_file(json, ".entries[\"bpf.btf\"].status != \"supported\""))
		explain(json, "bpf.btf");
	assert_true(jq_file(json, ".entries[\"bpf.btf\"].status != \"supported\""));
	assert_true(jq_file(json, ".entries[\"bpf.btf\"].remedy | type == \"string\" and "
				  "length > 0 and test(\"CONFIG_DEBUG_INFO_BTF=y\")"));
	/* it says what was tried: the hidden file and libbpf's other places */
	assert_true(jq_file(json, ".entries[\"bpf.btf\"].reason | test(\"/sys/kernel/btf/"
				  "vmlinux\") and test(\"/boot/vmlinux-KVER\")"));
	for (i = 0; i < sizeof(needs_btf) / sizeof(needs_btf[0]); i++) {
		snprintf(filter, sizeof(filter), ".entries[\"%s\"] | .status == \"unsupported\" "
			 "and .cause == \"bpf.btf\" and (.reason | startswith(\"BTF missing\"))",
			 needs_btf[i]);
		if (!jq_file(json, filter))
			explain(json, needs_btf[i]);
		assert_true(jq_file(json, filter));
	}
	assert_true(jq_file(json, ".backends.numa.backend == \"vmstat\" and "
				  "(.backends.numa.reason | test(\"BTF\"))"));
}

static void check_tracepoints(const char *json, const char *source)
{
	static const char *const tps[] = { "tracepoint.sched_process_exec",
					   "tracepoint.sched_process_exit",
					   "tracepoint.mm_migrate_pages" };
	char filter[256];
	size_t i;

	for (i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		snprintf(filter, sizeof(filter), ".entries[\"%s\"] | .status == \"supported\" and "
			 "(.reason | startswith(\"found in %s\"))", tps[i], source);
		if (!jq_file(json, filter))
			explain(json, tps[i]);
		assert_true(jq_file(json, filter));
	}
}

static void test_caps_with_tracefs(void **state)
{
	const char *json = path_in_tmp("caps.json"), *err = path_in_tmp("caps.err");
	char *args[] = { "caps", "--json", NULL };
	char fs[256];

	need_basics();
	NEED_DEP(tk_test_capture("grep -qw tracefs /proc/filesystems", fs, sizeof(fs)) == 0,
	     "tracefs in this kernel\n");
	run_ok(true, json, err, args);
	check_caps_btf(json);
	assert_true(jq_file(json, ".entries[\"kernel.tracefs\"].status == \"supported\""));
	check_tracepoints(json, "tracefs");
}

static void test_caps_without_tracefs(void **state)
{
	const char *json = path_in_tmp("caps-kallsyms.json"), *err = path_in_tmp("caps.err");
	const char *txt = path_in_tmp("caps.txt");
	char *args[] = { "caps", "--json", NULL };
	char *text_args[] = { "caps", NULL };
	const char *out, *attention;

	need_basics();
	run_ok(false, json, err, args);
	check_caps_btf(json);
	assert_true(jq_file(json, ".entries[\"kernel.tracefs\"].status == \"disabled\""));
	/* kallsyms names them even without CONFIG_KALLSYMS_ALL (__traceiter_NAME) */
	check_tracepoints(json, "kallsyms");

	/* the text report: BTF is one problem, what needs it named under it */
	run_ok(false, txt, err, text_args);
	out = slurp(txt);
	attention = strstr(out, "\nNeeds attention (");
	assert_non_null(attention);
	if (!strstr(attention, "  unsupported  kernel BTF: ") ||
	    !strstr(attention, "so also unavailable: CO-RE relocation, tp_btf programs,"))
		fail_msg("text report:\n%s", out);
	assert_null(strstr(out, "CO-RE relocation: no"));
}

/* ---- the collectors -------------------------------------------------------------------- */

/* The sum of the folded counts of lines that end in @tail or hold @tail followed by ';'. */
static unsigned long folded_sum(const char *file, const char *tail)
{
	char line[16384], mid[256];
	unsigned long sum = 0;
	FILE *f = fopen(file, "r");
	size_t n;

	assert_non_null(f);
	snprintf(mid, sizeof(mid), "%s;", tail);
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		n = strlen(line);
		if (strstr(line, mid) ||
		    (n >= strlen(tail) && !strcmp(line + n - strlen(tail), tail)))
			sum += strtoul(sp + 1, NULL, 10);
	}
	fclose(f);
	return sum;
}

/*
 * cpu_split under `cpu -- CMD` without kernel BTF. With tracefs the bpf
 * backend runs (its sampler needs no CO-RE; the fork follower reads the
 * child's pid from sched_process_fork's record); without tracefs either the
 * child cannot be named, and the session takes perf and says why.
 */
static void cpu_run(bool tracefs)
{
	const char *folded = path_in_tmp("cpu.folded"), *json = path_in_tmp("cpu.json");
	const char *out = path_in_tmp("cpu.out"), *err = path_in_tmp("cpu.err");
	char *args[] = { "cpu", "-F", "499", "-d", "3", "-o", (char *)folded, "-o", (char *)json,
			 "--", (char *)tk_test_workload("cpu_split"), "2", NULL };
	unsigned long hot, cold, pct;

	need_basics();
	need_workload("cpu_split");
	run_ok(tracefs, out, err, args);
	if (tracefs && !jq_file(json, ".backend == \"bpf\""))
		fail_msg("backend is not bpf; it said: %s", said(err));
	if (!tracefs && (!jq_file(json, ".backend == \"perf\"") ||
			 !jq_file(json, "any(.comments[]; test(\"cannot follow the command\"))")))
		fail_msg("want perf and why (the children cannot be named); it said: %s",
			 said(err));
	hot = folded_sum(folded, ";caller;hot");
	cold = folded_sum(folded, ";caller;cold");
	print_message("hot %lu, cold %lu under caller\n", hot, cold);
	assert_true(hot + cold >= 100);
	pct = 100 * hot / (hot + cold);
	if (pct < 65 || pct > 85)
		fail_msg("hot %lu %% of hot+cold under caller (%lu/%lu), want 75 +- 10", pct, hot,
			 hot + cold);
}

static void test_cpu(void **state)
{
	char fs[64];

	NEED_DEP(tk_test_capture("grep -qw tracefs /proc/filesystems", fs, sizeof(fs)) == 0,
	     "tracefs in this kernel\n");
	cpu_run(true);
}

static void test_cpu_without_tracefs(void **state)
{
	cpu_run(false);
}

static void test_alloc(void **state)
{
	const char *out = path_in_tmp("alloc.folded"), *err = path_in_tmp("alloc.err");
	const char *json = path_in_tmp("alloc.json"), *text = path_in_tmp("alloc.out");
	char *args[] = { "alloc", "-v", "--mode", "full", "-o", (char *)out, "-o", (char *)json,
			 "--", (char *)tk_test_workload("alloc_leak"), "-d", "1", "--leak-bytes",
			 "1048576", "--leak-block", "4096", NULL };
	unsigned long leak;

	need_basics();
	need_workload("alloc_leak");
	run_ok(false, text, err, args);
	/* -v says the backend: "tracekit: alloc: backend bpf: uprobe ..." */
	if (!strstr(said(err), "alloc: backend bpf"))
		fail_msg("backend is not bpf; it said: %s", said(err));
	leak = folded_sum(out, ";leak_site");
	if (leak != 1048576)
		fail_msg("leak_site %lu bytes in use, want 1048576", leak);
	/* without BTF no exit is seen: said, not silent */
	assert_true(jq_file(json, "any(.comments[]; test(\"process exits not seen\"))"));
}

static void test_numa(void **state)
{
	const char *json = path_in_tmp("numa.json"), *err = path_in_tmp("numa.err");
	const char *out = path_in_tmp("numa.out");
	char *args[] = { "numa", "--json", "-o", (char *)json, "-d", "2", NULL };

	need_basics();
	run_ok(false, out, err, args);
	assert_true(jq_file(json, ".backend == \"vmstat\" and .have.vmstat"));
	/* and why: eBPF is not used for want of BTF */
	assert_true(jq_file(json, "any(.missing[]; test(\"need eBPF\"))"));
	assert_true(jq_file(json, "any(.missing[]; test(\"no eBPF here: .*for want of kernel "
				  "BTF\"))"));
}

static int setup(void **state)
{
	int fd;

	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(empty, sizeof(empty), "%s/empty", tmpdir);
	fd = open(empty, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	close(fd);
	read_host_mounts(host_mounts, sizeof(host_mounts));
	return 0;
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
		cmocka_unit_test(test_caps_with_tracefs),
		cmocka_unit_test(test_caps_without_tracefs),
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_cpu_without_tracefs),
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_numa),
	};
	const char *filter = getenv("TK_TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("nobtf", tests, setup, teardown);
}
