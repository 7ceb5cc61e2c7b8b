// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The capability snapshot against the running kernel, as root: the report
 * must match what this machine really allows (checked against independent
 * oracles, not against the code under test), change nothing, and tell the
 * truth under a seccomp filter that denies bpf(2) as container runtimes do.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <numa.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "core/internal.h"
#include "core/kfeat.h"
#include "spawn.h"
#include "caps/caps.h"

/* In the test body: cmocka 1.1 reports a skip() in a setup as an error. */
static struct tk_caps *snapshot(int pid)
{
	struct tk_caps_opts opts = { .sz = TK_OPTS_SZ(tk_caps_opts), .pid = pid };
	struct tk_caps *caps = calloc(1, sizeof(*caps));

	assert_non_null(caps);
	assert_int_equal(tk_caps__snapshot(&opts, caps), 0);
	return caps;
}

static enum tk_status status_of(const struct tk_caps *caps, enum tk_cap_id id)
{
	assert_true(caps->caps[id].present);
	return caps->caps[id].status;
}

/* Oracle independent of libbpf and caps_probe.c: raw bpf(2) BPF_PROG_LOAD. */
static int raw_prog_load(__u32 type, __u32 eat, __u32 btf_id)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = type;
	attr.expected_attach_type = eat;
	attr.attach_btf_id = btf_id;
	attr.insns = (unsigned long)insns;
	attr.insn_cnt = 2;
	attr.license = (unsigned long)"GPL";
	fd = syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The BTF id of a kernel function, by bpftool — a second, independent reader. */
static int btf_func_id(const char *name)
{
	char cmd[256], line[512];
	int id = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | "
		 "grep -m1 \"FUNC '%s' \"",
		 name);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fgets(line, sizeof(line), p))
		sscanf(line, "[%d]", &id);
	pclose(p);
	return id;
}

/*
 * Option @name of the running kernel, read by zcat apart from the config
 * reader under test: 1 (=y or =m), 0 (not set or =n), -1 (unknown: no
 * /proc/config.gz, or no line for it).
 */
static int kernel_config(const char *name)
{
	char line[512], set[128], notset[128];
	size_t n;
	int ret = -1;
	FILE *p;

	if (access("/proc/config.gz", R_OK))
		return -1;
	p = popen("zcat /proc/config.gz 2>/dev/null", "r");
	if (!p)
		return -1;
	n = snprintf(set, sizeof(set), "%s=", name);
	snprintf(notset, sizeof(notset), "# %s is not set\n", name);
	/* read it all: zcat is not cut off by a closed pipe */
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, set, n))
			ret = line[n] == 'y' || line[n] == 'm';
		else if (!strcmp(line, notset))
			ret = 0;
	}
	if (pclose(p))
		return -1;
	return ret;
}

static void test_report_matches_machine(void **state)
{
	bool has_kprobe_pmu = access("/sys/bus/event_source/devices/kprobe/type", F_OK) == 0;
	struct tk_caps *caps;
	int fentry_id, fentry_err, kprobes;

	NEED_ROOT();
	caps = snapshot(0);

	/* what every root process on a BTF kernel of this kind must see */
	assert_int_equal(status_of(caps, TK_CAP_BPF_SYSCALL), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_BTF),
			 access("/sys/kernel/btf/vmlinux", R_OK) ? TK_UNSUPPORTED : TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_RINGBUF), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_CORE), TK_SUPPORTED);
	assert_int_equal(caps->core.tgid, (uint32_t)getpid());
	assert_int_equal(status_of(caps, TK_CAP_PROG_TRACEPOINT), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_PROG_RAW_TP), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_PROG_TP_BTF), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_PROG_UPROBE), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_PROG_PERF_EVENT), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_PERF_CPU_CLOCK), TK_SUPPORTED);
	assert_int_equal(status_of(caps, TK_CAP_CAP_BPF), TK_SUPPORTED);
	/* what off-CPU time (--off-cpu) needs, and that it is there: the kernel's BTF */
	print_message("cpu: %s\n", caps->backends[TK_COLLECT_CPU].reason);
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		assert_non_null(strstr(caps->backends[TK_COLLECT_CPU].reason,
				       "off-CPU time (--off-cpu) by sched_switch (tp_btf), waits "
				       "begun before the capture by a task iterator"));
	else
		assert_non_null(strstr(caps->backends[TK_COLLECT_CPU].reason,
				       "no off-CPU time by BPF (--off-cpu takes the perf backend): "
				       "it needs the kernel's BTF"));

	/* kprobes: the PMU exists or the report says it does not, and why */
	if (has_kprobe_pmu) {
		assert_int_equal(status_of(caps, TK_CAP_PROG_KPROBE), TK_SUPPORTED);
	} else {
		assert_int_equal(status_of(caps, TK_CAP_PROG_KPROBE), TK_UNSUPPORTED);
		assert_non_null(strstr(caps->caps[TK_CAP_PROG_KPROBE].reason, "kprobe PMU"));
		kprobes = kernel_config("CONFIG_KPROBES");
		print_message("oracle: zcat /proc/config.gz: CONFIG_KPROBES %s\n",
			      kprobes < 0 ? "unknown" : kprobes ? "set" : "not set");
		if (kprobes == 0)
			assert_non_null(strstr(caps->caps[TK_CAP_PROG_KPROBE].reason,
					       "CONFIG_KPROBES"));
	}

	/* fentry: whatever raw bpf(2) says about an fentry load is the truth */
	fentry_id = btf_func_id("do_nanosleep");
	assert_true(fentry_id > 0);
	fentry_err = raw_prog_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, fentry_id);
	print_message("oracle: raw fentry load on do_nanosleep: %s\n",
		      fentry_err ? strerror(-fentry_err) : "ok");
	/* the loaders' own probe (numa skips its fentry variants by it) says the same */
	assert_int_equal(tk_kfeat__fentry(), fentry_err);
	if (fentry_err == 0) {
		assert_int_equal(status_of(caps, TK_CAP_PROG_FENTRY), TK_SUPPORTED);
	} else {
		assert_int_equal(status_of(caps, TK_CAP_PROG_FENTRY), TK_UNSUPPORTED);
		assert_non_null(strstr(caps->caps[TK_CAP_PROG_FENTRY].reason,
				       strerror(-fentry_err)));
		if (fentry_err == -EPERM)
			assert_non_null(strstr(caps->caps[TK_CAP_PROG_FENTRY].reason, "refuses"));
	}

	/* perf hardware counters exist exactly when the cpu PMU does */
	assert_int_equal(status_of(caps, TK_CAP_PERF_HARDWARE),
			 access("/sys/bus/event_source/devices/cpu", F_OK) ? TK_UNSUPPORTED
									   : TK_SUPPORTED);

	/* with all of that, every collector uses BPF */
	assert_int_equal(caps->backends[TK_COLLECT_CPU].backend, TK_BACKEND_BPF);
	assert_int_equal(caps->backends[TK_COLLECT_ALLOC].backend, TK_BACKEND_BPF);
	assert_int_equal(caps->backends[TK_COLLECT_NUMA].backend, TK_BACKEND_BPF);
	free(caps);
}

static void test_numa_agrees_with_libnuma(void **state)
{
	struct tk_caps *caps;
	int i;

	NEED_ROOT();
	caps = snapshot(0);
	if (numa_available() < 0) {
		assert_int_equal(status_of(caps, TK_CAP_NUMA), TK_UNSUPPORTED);
		free(caps);
		return;
	}
	assert_int_equal(caps->numa.nr_nodes, numa_num_configured_nodes());
	for (i = 0; i < caps->numa.nr_nodes; i++) {
		long long total = numa_node_size64(caps->numa.nodes[i].id, NULL);

		assert_true(total > 0);
		assert_int_equal(caps->numa.nodes[i].mem_total_kb, (unsigned long long)total / 1024);
	}
	free(caps);
}

static int bpf_max_id(int (*next)(__u32, __u32 *))
{
	__u32 id = 0, max = 0;

	while (!next(id, &id))
		max = id;
	return max;
}

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r"), *m = open_memstream(&buf, &len);
	int c;

	assert_non_null(f);
	assert_non_null(m);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* The snapshot changes nothing: no mount, no sysctl, no pin, no BPF object left. */
static void test_snapshot_changes_nothing(void **state)
{
	static const char *const sysctls[] = {
		"/proc/sys/kernel/perf_event_paranoid",	   "/proc/sys/kernel/kptr_restrict",
		"/proc/sys/kernel/unprivileged_bpf_disabled", "/proc/sys/kernel/numa_balancing",
		"/proc/sys/net/core/bpf_jit_enable",
	};
	char *mounts, *vals[5], *after;
	int prog_max, map_max, link_max;
	struct tk_caps *caps;
	__u32 id;
	size_t i;

	NEED_ROOT();
	mounts = slurp("/proc/self/mountinfo");
	prog_max = bpf_max_id(bpf_prog_get_next_id);
	map_max = bpf_max_id(bpf_map_get_next_id);
	link_max = bpf_max_id(bpf_link_get_next_id);
	for (i = 0; i < 5; i++)
		vals[i] = access(sysctls[i], R_OK) ? NULL : slurp(sysctls[i]);
	caps = snapshot(0);
	after = slurp("/proc/self/mountinfo");
	assert_string_equal(mounts, after);
	free(after);
	for (i = 0; i < 5; i++) {
		if (!vals[i])
			continue;
		after = slurp(sysctls[i]);
		assert_string_equal(vals[i], after);
		free(after);
		free(vals[i]);
	}
	/*
	 * every program, map and link the probes made is gone: closed, and freed
	 * by the kernel after an RCU grace period (a map bound to a program, as
	 * libbpf's feature probe binds one, goes only after its program): wait
	 * for that, 2 s at most
	 */
	for (i = 0; i < 200; i++) {
		if (bpf_prog_get_next_id(prog_max, &id) && bpf_map_get_next_id(map_max, &id) &&
		    bpf_link_get_next_id(link_max, &id))
			break;
		usleep(10000);
	}
	assert_int_not_equal(bpf_prog_get_next_id(prog_max, &id), 0);
	assert_int_not_equal(bpf_map_get_next_id(map_max, &id), 0);
	assert_int_not_equal(bpf_link_get_next_id(link_max, &id), 0);
	free(mounts);
	free(caps);
}

/* The "status" (or another member) of JSON object @key, from the pretty output. */
static void json_member(const char *json, const char *key, const char *member, char *val,
			size_t size)
{
	char pat[128];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "\"%s\": {", key);
	p = strstr(json, pat);
	assert_non_null(p);
	snprintf(pat, sizeof(pat), "\"%s\": \"", member);
	p = strstr(p, pat);
	assert_non_null(p);
	p += strlen(pat);
	q = strchr(p, '"');
	assert_non_null(q);
	snprintf(val, size, "%.*s", (int)(q - p), p);
}

static void test_seccomp_denies_bpf(void **state)
{
	static char out[1 << 17];
	char *args[] = { "caps", "--json", NULL };
	char val[512];

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, args), 0);
	json_member(out, "bpf.syscall", "status", val, sizeof(val));
	assert_string_equal(val, "unsupported");
	json_member(out, "bpf.syscall", "reason", val, sizeof(val));
	assert_non_null(strstr(val, "seccomp"));
	assert_non_null(strstr(val, "Operation not permitted"));
	json_member(out, "bpf.prog.perf_event", "status", val, sizeof(val));
	assert_string_equal(val, "unsupported");
	/* the non-BPF backends are chosen */
	json_member(out, "cpu", "backend", val, sizeof(val));
	assert_string_equal(val, "perf");
	json_member(out, "cpu", "reason", val, sizeof(val));
	assert_non_null(strstr(val, "off-CPU time (--off-cpu) by sched:sched_switch samples"));
	json_member(out, "alloc", "backend", val, sizeof(val));
	assert_string_equal(val, "jemalloc");
	json_member(out, "numa", "backend", val, sizeof(val));
	assert_string_equal(val, "vmstat");
	/* perf_event_open itself is not blocked, so the fallback really works */
	json_member(out, "perf.cpu_clock", "status", val, sizeof(val));
	assert_string_equal(val, "supported");
}

static void test_cli_errors(void **state)
{
	static char out[1 << 16];
	char *missing[] = { "caps", "-p", "2147483646", NULL };
	char *missing_json[] = { "caps", "--json", "-p", "2147483646", NULL };
	char *badpid[] = { "caps", "-p", "12abc", NULL };
	char *badopt[] = { "caps", "--frobnicate", NULL };
	char *noarg[] = { "caps", "-p", NULL };
	char *badcmd[] = { "frobnicate", NULL };
	char *self[] = { "caps", "-p", NULL, NULL };
	char pidbuf[32];

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, missing), 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, missing_json), 1);
	assert_non_null(strstr(out, "\"error\":\"caps: no process with PID 2147483646\""));
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, badpid), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, badopt), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, noarg), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, badcmd), 2);
	/* and a real PID works: ours */
	snprintf(pidbuf, sizeof(pidbuf), "%d", getpid());
	self[2] = pidbuf;
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, self), 0);
	assert_non_null(strstr(out, "Process "));
}

static void test_text_fits_80_columns(void **state)
{
	static char out[1 << 17];
	char *args[] = { "caps", NULL };
	char *line, *save = NULL;
	int n = 0;

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	assert_memory_equal(out, "tracekit caps:", 14);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++)
		if (strlen(line) > 80)
			fail_msg("line longer than 80 columns: '%s'", line);
	assert_true(n > 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_matches_machine),
		cmocka_unit_test(test_numa_agrees_with_libnuma),
		cmocka_unit_test(test_snapshot_changes_nothing),
		cmocka_unit_test(test_seccomp_denies_bpf),
		cmocka_unit_test(test_cli_errors),
		cmocka_unit_test(test_text_fits_80_columns),
	};

	return cmocka_run_group_tests_name("caps_live", tests, NULL, NULL);
}
