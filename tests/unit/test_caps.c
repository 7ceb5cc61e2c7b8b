// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The capability snapshot against fixture trees and a fake probe: every
 * entry of the report (except process.*, tested with the process readers) in
 * each of its states, with its reason and remedy as a user reads them, the
 * collector backends that follow, and the JSON and text writers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <cmocka.h>

#include "../lib/caps_expect.h"
#include "../lib/fixture.h"
#include "caps/caps.h"

struct t {
	struct fx *fx;
	struct tk_caps_opts opts;
	struct tk_caps caps;
	char *out;		/* writer output */
	size_t outlen;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || fx_base_host(t->fx)) {
		fx_free(t->fx);
		free(t);
		return -1;
	}
	fx_probe_reset();
	t->opts.sz = TK_OPTS_SZ(tk_caps_opts);
	t->opts.proc_root = t->fx->proc;
	t->opts.sys_root = t->fx->sys;
	
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	fx_free(t->fx);
	free(t->out);
	free(t);
	return 0;
}

#define FX(call) assert_int_equal((call), 0)

static struct tk_caps *snap(struct t *t)
{
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps), 0);
	return &t->caps;
}

static const enum tk_cap_id bpf_after_syscall[] = {
	TK_CAP_RINGBUF,		TK_CAP_CORE,	    TK_CAP_PROG_PERF_EVENT,
	TK_CAP_PROG_TRACEPOINT, TK_CAP_PROG_RAW_TP, TK_CAP_PROG_TP_BTF,
	TK_CAP_PROG_FENTRY,	TK_CAP_PROG_UPROBE, TK_CAP_PROG_KPROBE,
};

static const enum tk_cap_id tracepoint_ids[] = {
	TK_CAP_TP_SCHED_PROCESS_EXEC, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_CAP_TP_MM_MIGRATE_PAGES,
	TK_CAP_TP_SCHED_MOVE_NUMA,    TK_CAP_TP_SCHED_SWAP_NUMA,    TK_CAP_TP_SCHED_STICK_NUMA,
	TK_CAP_TP_KMEM_MM_PAGE_ALLOC, TK_CAP_TP_KMEM_KMALLOC,	    TK_CAP_TP_PAGE_FAULT_USER,
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* the writers' checks, defined with the writer tests */
static void check_text(struct t *t, const char *file, int line);
#define expect_good_text(t) check_text(t, __FILE__, __LINE__)

/* CapEff values: root; root without CAP_SYSLOG; CAP_SYS_ADMIN only; CAP_BPF+CAP_PERFMON */
#define CAPEFF_NONE "0000000000000000"
#define CAPEFF_NO_SYSLOG "000001fbffffffff"
#define CAPEFF_SYS_ADMIN "0000000000200000"
#define CAPEFF_BPF_PERFMON "000000c000000000"
/* all 38 capabilities of a kernel before 5.8 (cap_last_cap 37) */
#define CAPEFF_OLD_ROOT "0000003fffffffff"

/* ---- the baseline ------------------------------------------------------------- */

static void test_baseline_host(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps = snap(t);
	char btf[PATH_MAX];
	int i;

	assert_string_equal(caps->kernel_release, FX_RELEASE);
	assert_true(caps->machine[0]);
	assert_int_equal(caps->pid, 0);
	for (i = 0; i < TK_CAP__COUNT; i++)
		assert_int_equal(caps->caps[i].present, i < TK_CAP_PROC_ALLOCATOR);
	for (i = 0; i < TK_PROBE__COUNT; i++)
		assert_int_equal(fx_probe_calls[i], 1);
	snprintf(btf, sizeof(btf), "%s/kernel/btf/vmlinux", t->fx->sys);
	assert_string_equal(fx_probe_btf_path, btf);
	/* the fixture's vmlinux is (tiny) BTF: the probes get it parsed */
	assert_true(fx_probe_had_btf);

	expect_cap(caps, TK_CAP_CAP_BPF, TK_SUPPORTED, "effective", "", "");
	expect_cap(caps, TK_CAP_CAP_PERFMON, TK_SUPPORTED, "effective", "", "");
	expect_cap(caps, TK_CAP_CAP_SYS_ADMIN, TK_SUPPORTED, "effective", "", "");
	expect_cap(caps, TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "2", "CAP_PERFMON", "");
	expect_cap(caps, TK_CAP_KPTR_RESTRICT, TK_SUPPORTED, "0", "", "");
	expect_cap(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "2", "holds CAP_BPF", "");
	expect_cap(caps, TK_CAP_LOCKDOWN, TK_SUPPORTED, "unknown", "securityfs", "");
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_SUPPORTED, "yes", "fake bpf_syscall: ok", "");
	expect_cap(caps, TK_CAP_BTF, TK_SUPPORTED, "kernel/btf/vmlinux", "", "");
	assert_string_equal(caps->caps[TK_CAP_BTF].value, btf);
	for (i = 0; i < (int)N(bpf_after_syscall); i++)
		expect_cap(caps, bpf_after_syscall[i], TK_SUPPORTED, "yes", "fake|: ok", "");
	expect_cap(caps, TK_CAP_PERF_CPU_CLOCK, TK_SUPPORTED, "yes", "fake perf_cpu_clock: ok",
		   "");
	expect_cap(caps, TK_CAP_PERF_HARDWARE, TK_SUPPORTED, "yes", "fake perf_hardware: ok", "");
	expect_cap(caps, TK_CAP_TRACEFS, TK_DISABLED, "not mounted", "not need it",
		   "mount -t tracefs");
	for (i = 0; i < (int)N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_SUPPORTED, "present", "found in kallsyms",
			   "");
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_folio",
		   "found in kallsyms", "");
	assert_null(strstr(caps->caps[TK_CAP_FN_MIGRATE_MISPLACED].reason, "fentry"));
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v1", FX_CGROUP, "");
	expect_cap(caps, TK_CAP_NUMA, TK_SUPPORTED, "1 node", "one node", "");
	expect_cap(caps, TK_CAP_NUMA_BALANCING, TK_DISABLED, "0 (off)", "nothing to balance",
		   "numa_balancing=1");

	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, "cpu-clock");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, "uprobes");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF,
		       "through tp_btf|fentry on the misplaced-page path");

	/* system and process memory figures */
	assert_int_equal(caps->memory.mem_total_kb, 24684092);
	assert_int_equal(caps->memory.mem_available_kb, 24336512);
	assert_int_equal(caps->memory.swap_total_kb, 0);
	assert_int_equal(caps->memory.rss_pid, FX_PID);
	assert_int_equal(caps->memory.rss_kb, 13928);
	assert_int_equal(caps->memory.hwm_kb, 25004);
	assert_true(caps->elapsed_ms >= 0);
}

static void test_release_override(void **state)
{
	struct t *t = *state;
	struct utsname u;

	t->opts.release = "7.1.0-rc2-test";
	assert_string_equal(snap(t)->kernel_release, "7.1.0-rc2-test");
	/* without osrelease, uname's */
	t->opts.release = NULL;
	FX(fx_write(t->fx, "proc/sys/kernel/osrelease", "6.1.0-28-amd64\n"));
	assert_string_equal(snap(t)->kernel_release, "6.1.0-28-amd64");
	FX(fx_remove(t->fx, "proc/sys/kernel/osrelease"));
	assert_int_equal(uname(&u), 0);
	assert_string_equal(snap(t)->kernel_release, u.release);
}

static void test_names(void **state)
{
	int i, k;

	for (i = 0; i < TK_CAP__COUNT; i++) {
		assert_string_not_equal(tk_cap__id_name(i), "unknown");
		assert_string_not_equal(tk_cap__title(i), "unknown");
		for (k = 0; k < i; k++)
			assert_string_not_equal(tk_cap__id_name(i), tk_cap__id_name(k));
	}
	assert_string_equal(tk_cap__id_name(TK_CAP_BPF_SYSCALL), "bpf.syscall");
	assert_string_equal(tk_cap__id_name(TK_CAP__COUNT), "unknown");
	assert_string_equal(tk_status__name(TK_DISABLED), "disabled");
	assert_string_equal(tk_backend__name(TK_BACKEND_VMSTAT), "vmstat");
	assert_string_equal(tk_backend__name(99), "unknown");
	assert_string_equal(tk_collector__name(TK_COLLECT_NUMA), "numa");
	assert_string_equal(tk_collector__name(TK_COLLECT__COUNT), "unknown");
}

/* ---- errors --------------------------------------------------------------------- */

static void test_pid_missing(void **state)
{
	struct t *t = *state;

	t->opts.pid = 999999;
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps), -ESRCH);
	assert_int_equal(fx_probe_calls[TK_PROBE_BPF_SYSCALL], 0);
}

static void test_invalid_opts(void **state)
{
	struct t *t = *state;
	struct tk_caps_opts opts = t->opts;

	assert_int_equal(tk_caps__snapshot(NULL, &t->caps), -EINVAL);
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, NULL), -EINVAL);
	opts.sz = 0;
	assert_int_equal(tk_caps__snapshot(&opts, &t->caps), -EINVAL);
	opts = t->opts;
	opts.pid = -1;
	assert_int_equal(tk_caps__snapshot(&opts, &t->caps), -EINVAL);
	assert_int_equal(fx_probe_calls[TK_PROBE_BPF_SYSCALL], 0);
}

/* ---- privileges -------------------------------------------------------------------- */

static void test_caps_not_effective(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	caps = snap(t);
	expect_cap(caps, TK_CAP_CAP_BPF, TK_DISABLED, "not effective",
		   "does not hold it|load BPF programs", "setcap");
	expect_cap(caps, TK_CAP_CAP_PERFMON, TK_DISABLED, "not effective",
		   "does not hold it|perf events", "root");
	expect_cap(caps, TK_CAP_CAP_SYS_ADMIN, TK_DISABLED, "not effective", "does not hold it",
		   "cap_sys_admin");
}

static void test_caps_bpf_perfmon_only(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, CAPEFF_BPF_PERFMON, 0));
	caps = snap(t);
	expect_cap(caps, TK_CAP_CAP_BPF, TK_SUPPORTED, "effective", "", "");
	expect_cap(caps, TK_CAP_CAP_PERFMON, TK_SUPPORTED, "effective", "", "");
	expect_cap(caps, TK_CAP_CAP_SYS_ADMIN, TK_DISABLED, "not effective", NULL, NULL);
	/* enough for the sysctls: they do not restrict this process */
	expect_cap(caps, TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "2", "CAP_PERFMON", "");
	expect_cap(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "2", "CAP_BPF", "");
	/* and no CAP_SYSLOG: kptr_restrict 1 would hide addresses */
	FX(fx_write(t->fx, "proc/sys/kernel/kptr_restrict", "1\n"));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_DISABLED, "1", "zero addresses", "CAP_SYSLOG");
}

static void test_caps_kernel_too_old(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write(t->fx, "proc/sys/kernel/cap_last_cap", "37\n"));
	FX(fx_set_status(t->fx, CAPEFF_OLD_ROOT, 0));
	caps = snap(t);
	expect_cap(caps, TK_CAP_CAP_BPF, TK_UNSUPPORTED, "absent",
		   "predates CAP_BPF|cap_last_cap is 37|CAP_SYS_ADMIN", "root");
	expect_cap(caps, TK_CAP_CAP_PERFMON, TK_UNSUPPORTED, "absent",
		   "predates CAP_PERFMON|cap_last_cap is 37", "root");
	expect_cap(caps, TK_CAP_CAP_SYS_ADMIN, TK_SUPPORTED, "effective", "", "");
	/* CAP_SYS_ADMIN stands in for the missing ones */
	expect_cap(caps, TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "2", "CAP_SYS_ADMIN", "");
	expect_cap(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "2", "CAP_SYS_ADMIN", "");
}

/* No status file: nothing is known to be held. */
static void test_caps_status_unreadable(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_remove(t->fx, "proc/self/status"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_CAP_BPF, TK_DISABLED, "not effective", NULL, NULL);
	expect_cap(caps, TK_CAP_CAP_SYS_ADMIN, TK_DISABLED, "not effective", NULL, NULL);
	expect_cap(caps, TK_CAP_PERF_EVENT_PARANOID, TK_DISABLED, "2", NULL, NULL);
}

static void test_paranoid(void **state)
{
	struct t *t = *state;

	/* 3 (Debian's default) without capabilities: no perf events at all */
	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "3\n"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_DISABLED, "3",
		   "forbids perf_event_open|CAP_PERFMON", "perf_event_paranoid=1");
	/* 2 without capabilities: own processes, user space only */
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "2\n"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_DISABLED, "2",
		   "user-space|their own processes", "perf_event_paranoid=1");
	/* 1 and below restrict nothing tracekit needs */
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "1\n"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "1", "", "");
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "-1\n"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "-1", "", "");
	/* 3 with capabilities */
	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 0));
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "3\n"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "3",
		   "does not restrict this process|CAP_PERFMON", "");
	FX(fx_set_status(t->fx, CAPEFF_SYS_ADMIN, 0));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED, "3", "CAP_SYS_ADMIN", "");
	/* no sysctl: no perf events in this kernel */
	FX(fx_remove(t->fx, "proc/sys/kernel/perf_event_paranoid"));
	expect_cap(snap(t), TK_CAP_PERF_EVENT_PARANOID, TK_UNSUPPORTED, "absent",
		   "CONFIG_PERF_EVENTS", "");
}

static void test_kptr_restrict(void **state)
{
	struct t *t = *state;

	FX(fx_write(t->fx, "proc/sys/kernel/kptr_restrict", "0\n"));
	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_SUPPORTED, "0", "", "");

	FX(fx_write(t->fx, "proc/sys/kernel/kptr_restrict", "1\n"));
	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 0));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_SUPPORTED, "1", "visible|CAP_SYSLOG", "");
	FX(fx_set_status(t->fx, CAPEFF_NO_SYSLOG, 0));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_DISABLED, "1",
		   "zero addresses|cannot be named", "root (CAP_SYSLOG)");

	/* 2 hides addresses even from root */
	FX(fx_write(t->fx, "proc/sys/kernel/kptr_restrict", "2\n"));
	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 0));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_DISABLED, "2", "zero addresses",
		   "kptr_restrict=1");

	FX(fx_remove(t->fx, "proc/sys/kernel/kptr_restrict"));
	expect_cap(snap(t), TK_CAP_KPTR_RESTRICT, TK_UNSUPPORTED, "absent", "no kptr_restrict", "");
}

static void test_unprivileged_bpf_disabled(void **state)
{
	struct t *t = *state;

	FX(fx_write(t->fx, "proc/sys/kernel/unprivileged_bpf_disabled", "1\n"));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "1", "holds CAP_BPF", "");
	FX(fx_set_status(t->fx, CAPEFF_SYS_ADMIN, 0));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "1", "holds CAP_SYS_ADMIN",
		   "");
	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_DISABLED, "1",
		   "refused|without CAP_BPF", "root");
	FX(fx_write(t->fx, "proc/sys/kernel/unprivileged_bpf_disabled", "2\n"));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_DISABLED, "2", "refused", "root");
	FX(fx_write(t->fx, "proc/sys/kernel/unprivileged_bpf_disabled", "0\n"));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED, "0", "", "");
	FX(fx_remove(t->fx, "proc/sys/kernel/unprivileged_bpf_disabled"));
	expect_cap(snap(t), TK_CAP_UNPRIV_BPF_DISABLED, TK_UNSUPPORTED, "absent", "bpf(2)", "");
}

static void test_lockdown(void **state)
{
	struct t *t = *state;
	const char *rel = "sys/kernel/security/lockdown";

	FX(fx_write(t->fx, rel, "[none] integrity confidentiality\n"));
	expect_cap(snap(t), TK_CAP_LOCKDOWN, TK_SUPPORTED, "none", "", "");
	assert_string_equal(t->caps.caps[TK_CAP_LOCKDOWN].value, "none");

	FX(fx_write(t->fx, rel, "none [integrity] confidentiality\n"));
	expect_cap(snap(t), TK_CAP_LOCKDOWN, TK_SUPPORTED, "integrity", "does not restrict", "");

	FX(fx_write(t->fx, rel, "none integrity [confidentiality]\n"));
	expect_cap(snap(t), TK_CAP_LOCKDOWN, TK_DISABLED, "confidentiality",
		   "forbids reading kernel memory|kprobes", "lockdown=integrity");

	FX(fx_remove(t->fx, rel));
	expect_cap(snap(t), TK_CAP_LOCKDOWN, TK_SUPPORTED, "unknown",
		   "securityfs does not show lockdown", "");

	/* there, but not readable as a file */
	FX(fx_mkdir(t->fx, rel));
	expect_cap(snap(t), TK_CAP_LOCKDOWN, TK_SUPPORTED, "unknown", "unreadable", "");
}

/* ---- bpf(2) -------------------------------------------------------------------- */

static void expect_rest_of_bpf(const struct tk_caps *caps, enum tk_status st, const char *file,
			       int line)
{
	size_t i;

	for (i = 0; i < N(bpf_after_syscall); i++)
		check_cap(caps, bpf_after_syscall[i], st, "no", "see bpf.syscall", NULL, file,
			  line);
	/* nothing else was loaded once bpf(2) failed */
	for (i = TK_PROBE_RINGBUF; i <= TK_PROBE_PROG_KPROBE; i++)
		if (fx_probe_calls[i]) {
			print_error("probe %s ran after bpf(2) failed\n", fx_probe_name(i));
			_fail(file, line);
		}
}

static void test_bpf_seccomp(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 2));
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	caps = snap(t);
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, "no",
		   "fake bpf_syscall: Operation not permitted|seccomp filter|Seccomp: 2",
		   "seccomp=unconfined|bpf(2)");
	expect_rest_of_bpf(caps, TK_UNSUPPORTED, __FILE__, __LINE__);
	/* BTF is a file, not a syscall: still there */
	expect_cap(caps, TK_CAP_BTF, TK_SUPPORTED, "kernel/btf/vmlinux", NULL, NULL);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF,
		       "bpf.syscall is unsupported|perf_event_open cpu-clock");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "bpf.syscall is unsupported|jemalloc");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT,
		       "bpf.syscall is unsupported|/proc/vmstat");
}

/* A container profile that blocks perf_event_open too: no CPU profiling at all. */
static void test_bpf_and_perf_seccomp(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 2));
	/* container profiles answer EPERM */
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	fx_probe_result[TK_PROBE_PERF_CPU_CLOCK] = -EPERM;
	fx_probe_result[TK_PROBE_PERF_HARDWARE] = -EPERM;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PERF_CPU_CLOCK, TK_UNSUPPORTED, "no", "seccomp",
		   "perf_event_open|seccomp=unconfined");
	expect_cap(caps, TK_CAP_PERF_HARDWARE, TK_UNSUPPORTED, "no", "seccomp",
		   "perf_event_open");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_NONE,
		       "bpf.syscall is unsupported|perf.cpu_clock is unsupported");
}

static void test_bpf_eperm_without_caps(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	caps = snap(t);
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_DISABLED, "no",
		   "Operation not permitted|lacks CAP_BPF and CAP_PERFMON", "root");
	assert_null(strstr(caps->caps[TK_CAP_BPF_SYSCALL].reason, "seccomp"));
	expect_rest_of_bpf(caps, TK_DISABLED, __FILE__, __LINE__);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF, "bpf.syscall is disabled");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.syscall is disabled");
}

/* Holding the capabilities, still refused: some other policy. */
static void test_bpf_eperm_with_caps(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	caps = snap(t);
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, "no",
		   "refuses it although|security policy", "");
	expect_rest_of_bpf(caps, TK_UNSUPPORTED, __FILE__, __LINE__);
}

static void test_bpf_enosys(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -ENOSYS;
	caps = snap(t);
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, "no",
		   "Function not implemented|does not exist here", "");
	assert_null(strstr(caps->caps[TK_CAP_BPF_SYSCALL].reason, "seccomp"));
	expect_rest_of_bpf(caps, TK_UNSUPPORTED, __FILE__, __LINE__);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF, "bpf.syscall is unsupported");

	/* under a seccomp filter ENOSYS may be the filter's answer */
	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 2));
	expect_cap(snap(t), TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, "no",
		   "does not exist here|or a seccomp filter answers ENOSYS", NULL);
}

/* A probe that says nothing: the errno's words stand in. */
static void test_probe_without_message(void **state)
{
	struct t *t = *state;

	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	fx_probe_msg[TK_PROBE_BPF_SYSCALL] = "";
	expect_cap(snap(t), TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, "no",
		   "Operation not permitted: the kernel refuses", NULL);
}

/* ---- BTF, CO-RE and program types ---------------------------------------------------- */

static void test_btf_missing(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_remove(t->fx, "sys/kernel/btf"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "absent",
		   "CONFIG_DEBUG_INFO_BTF|CO-RE, tp_btf and fentry", "CONFIG_DEBUG_INFO_BTF=y");
	expect_cap(caps, TK_CAP_CORE, TK_UNSUPPORTED, "no",
		   "BTF missing|no kernel BTF|see bpf.btf", NULL);
	expect_cap(caps, TK_CAP_PROG_TP_BTF, TK_UNSUPPORTED, "no", "BTF missing|needs kernel BTF",
		   NULL);
	/* its fix is bpf.btf's, not a security policy's */
	expect_cap(caps, TK_CAP_PROG_FENTRY, TK_UNSUPPORTED, "no", "BTF missing|needs kernel BTF",
		   "");
	/* what does not need BTF still works */
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_SUPPORTED, "yes", NULL, NULL);
	expect_cap(caps, TK_CAP_PROG_RAW_TP, TK_SUPPORTED, "yes", NULL, NULL);
	expect_cap(caps, TK_CAP_PROG_KPROBE, TK_SUPPORTED, "yes", NULL, NULL);
	assert_int_equal(fx_probe_calls[TK_PROBE_CORE], 0);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_TP_BTF], 0);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_FENTRY], 0);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_RAW_TP], 1);
	/* the probes were told there is no BTF */
	assert_string_equal(fx_probe_btf_path, "");
	/* no CO-RE record facts for mm_migrate_pages */
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present", "kallsyms", NULL);
	assert_null(strstr(caps->caps[TK_CAP_TP_MM_MIGRATE_PAGES].reason, "record has"));
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_folio",
		   "fentry on it is unavailable here", NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.core is unsupported");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
}

/* A real (tiny) BTF file: tracepoints and functions are found in it. */
static void test_btf_finds_tracepoints_and_functions(void **state)
{
	static const char *const typedefs[] = {
		"btf_trace_sched_process_exec", "btf_trace_sched_process_exit",
		"btf_trace_mm_migrate_pages",	"btf_trace_sched_move_numa",
		"btf_trace_sched_swap_numa",	"btf_trace_sched_stick_numa",
		"btf_trace_mm_page_alloc",	"btf_trace_kmalloc",
		"btf_trace_page_fault_user",	NULL,
	};
	static const char *const funcs[] = { "migrate_misplaced_page", NULL };
	struct t *t = *state;
	struct tk_caps *caps;
	size_t i;

	FX(fx_write_btf(t->fx, "sys/kernel/btf/vmlinux", typedefs, funcs));
	FX(fx_write(t->fx, "proc/kallsyms", "ffffffff81000000 T _stext\n"));
	caps = snap(t);
	assert_true(fx_probe_had_btf);
	for (i = 0; i < N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_SUPPORTED, "present", "found in BTF", NULL);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_page",
		   "found in BTF", NULL);

	/* a typedef that is not a tracepoint's, a function that is a typedef: not found */
	FX(fx_write_btf(t->fx, "sys/kernel/btf/vmlinux",
			(const char *const[]){ "btf_trace_sched_process_exec_x",
					       "migrate_misplaced_folio", NULL },
			(const char *const[]){ "btf_trace_kmalloc", NULL }));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_TP_KMEM_KMALLOC, TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_UNSUPPORTED, "absent", NULL, NULL);
}

static void test_ringbuf_einval(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_RINGBUF] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_RINGBUF, TK_UNSUPPORTED, "no", "fake ringbuf: Invalid argument",
		   "Linux 5.8");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "bpf.ringbuf is unsupported|jemalloc");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, NULL);
}

static void test_ringbuf_seccomp(void **state)
{
	struct t *t = *state;

	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 2));
	fx_probe_result[TK_PROBE_RINGBUF] = -EPERM;
	expect_cap(snap(t), TK_CAP_RINGBUF, TK_UNSUPPORTED, "no", "seccomp", "seccomp=unconfined");
}

static void test_core_facts(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_core.tgid = 77;
	fx_probe_core.mm_migrate_has_nr_split = true;
	fx_probe_core.has_mr_numa_misplaced = true;
	caps = snap(t);
	expect_cap(caps, TK_CAP_CORE, TK_SUPPORTED, "yes", "fake core: ok", "");
	assert_int_equal(caps->core.tgid, 77);
	assert_true(caps->core.mm_migrate_has_nr_split);
	assert_false(caps->core.mm_migrate_has_large_folio_split);
	assert_true(caps->core.has_mr_numa_misplaced);
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present",
		   "found in kallsyms (__tracepoint_mm_migrate_pages); record has nr_split", NULL);

	fx_probe_core.mm_migrate_has_large_folio_split = true;
	expect_cap(snap(t), TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present",
		   "record has large_folio_split", NULL);

	memset(&fx_probe_core, 0, sizeof(fx_probe_core));
	expect_cap(snap(t), TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present",
		   "record has neither nr_split nor large_folio_split", NULL);
}

static void test_core_fails(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_CORE] = -EINVAL;
	fx_probe_msg[TK_PROBE_CORE] = "CO-RE relocation failed: no field 'nr_split'";
	fx_probe_core.mm_migrate_has_nr_split = true;
	caps = snap(t);
	expect_cap(caps, TK_CAP_CORE, TK_UNSUPPORTED, "no", "CO-RE relocation failed", NULL);
	assert_false(caps->core.mm_migrate_has_nr_split);
	assert_null(strstr(caps->caps[TK_CAP_TP_MM_MIGRATE_PAGES].reason, "record has"));
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.core is unsupported");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
}

static void test_prog_perf_event_fails(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_PROG_PERF_EVENT] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_PERF_EVENT, TK_UNSUPPORTED, "no",
		   "fake prog_perf_event: Invalid argument", NULL);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF,
		       "bpf.prog.perf_event is unsupported|perf_event_open cpu-clock");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
}

/*
 * A kernel where the parts are there but a collector's own objects do not
 * load (5.10 before the maps were preallocated there): its backend falls back,
 * and says which load failed.
 */
static void test_collector_loads_refused(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_LOAD_CPU] = -EINVAL;
	fx_probe_msg[TK_PROBE_LOAD_CPU] = "perf_event programs can only use preallocated hash map";
	fx_probe_result[TK_PROBE_LOAD_ALLOC] = -EINVAL;
	fx_probe_result[TK_PROBE_LOAD_NUMA] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_LOAD_CPU, TK_UNSUPPORTED, "no", "preallocated hash map", NULL);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF,
		       "bpf.load.cpu is unsupported|perf_event_open cpu-clock");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC, "bpf.load.alloc is unsupported");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.load.numa is unsupported");
}

/* What differs between kernels is reported, and not as a problem: the collectors adapt. */
static void test_kernel_differences_not_needed(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_MAP_RUNTIME_ALLOC] = -EINVAL;
	fx_probe_result[TK_PROBE_ATTACH_COOKIE] = -ENOENT;
	fx_probe_result[TK_PROBE_UPROBE_SESSION] = -ENOENT;
	caps = snap(t);
	expect_cap(caps, TK_CAP_MAP_RUNTIME_ALLOC, TK_UNSUPPORTED, "no", NULL, "preallocates");
	expect_cap(caps, TK_CAP_ATTACH_COOKIE, TK_UNSUPPORTED, "no", NULL, "a program per");
	expect_cap(caps, TK_CAP_UPROBE_SESSION, TK_UNSUPPORTED, "no", NULL, "uretprobe");
	assert_true(caps->caps[TK_CAP_MAP_RUNTIME_ALLOC].not_needed);
	assert_true(caps->caps[TK_CAP_ATTACH_COOKIE].not_needed);
	assert_true(caps->caps[TK_CAP_UPROBE_SESSION].not_needed);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, NULL);
}

static void test_prog_tracepoint_fails(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_PROG_TRACEPOINT] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_TRACEPOINT, TK_UNSUPPORTED, "no",
		   "fake prog_tracepoint: Invalid argument", NULL);
	/* tracekit's collectors do not use tracefs tracepoint programs */
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, NULL);
}

static void test_raw_tp_and_tp_btf(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	/* tp_btf refused: raw_tp carries the NUMA collector */
	fx_probe_result[TK_PROBE_PROG_TP_BTF] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_TP_BTF, TK_UNSUPPORTED, "no", "Invalid argument", NULL);
	expect_cap(caps, TK_CAP_PROG_RAW_TP, TK_SUPPORTED, "yes", NULL, NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, "through raw_tp");

	/* neither: vmstat */
	fx_probe_result[TK_PROBE_PROG_RAW_TP] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_RAW_TP, TK_UNSUPPORTED, "no", "Invalid argument", NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT,
		       "neither tp_btf nor raw_tp programs work|/proc/vmstat");

	/* and without /proc/vmstat, nothing */
	FX(fx_remove(t->fx, "proc/vmstat"));
	expect_backend(snap(t), TK_COLLECT_NUMA, TK_BACKEND_NONE, "/proc/vmstat is unreadable");
}

static void test_fentry_refused_with_caps(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_PROG_FENTRY] = -EPERM;
	fx_probe_msg[TK_PROBE_PROG_FENTRY] = "program load: Operation not permitted";
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_FENTRY, TK_UNSUPPORTED, "no",
		   "program load: Operation not permitted|refuses it although this process "
		   "holds the capabilities",
		   "raw_tp/tp_btf");
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_folio",
		   "fentry on it is unavailable here", NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF,
		       "through tp_btf|fentry unavailable");
}

static void test_uprobe_not_configured(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write_gz(t->fx, "proc/config.gz", "CONFIG_UPROBES=y\n"
						"# CONFIG_UPROBE_EVENTS is not set\n"
						"CONFIG_KPROBES=y\n"));
	fx_probe_result[TK_PROBE_PROG_UPROBE] = -EOPNOTSUPP;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_UPROBE, TK_UNSUPPORTED, "no",
		   "fake prog_uprobe|built without CONFIG_UPROBE_EVENTS (config.gz)", NULL);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "bpf.prog.uprobe is unsupported");
}

static void test_kprobe_not_configured(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write_gz(t->fx, "proc/config.gz", "#\n# Automatically generated file\n#\n"
						"CONFIG_HAVE_KPROBES=y\n"
						"# CONFIG_KPROBES is not set\n"
						"CONFIG_UPROBE_EVENTS=y\n"));
	fx_probe_result[TK_PROBE_PROG_KPROBE] = -EOPNOTSUPP;
	fx_probe_msg[TK_PROBE_PROG_KPROBE] =
		"no kprobe PMU (bus/event_source/devices/kprobe is missing)";
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROG_KPROBE, TK_UNSUPPORTED, "no",
		   "no kprobe PMU|the kernel is built without CONFIG_KPROBES (config.gz)",
		   "none needed|tracepoints and fentry");
	/* kprobes are not on any collector's path */
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, NULL);
}

/* Without config.gz, or with the option set, there is nothing to add. */
static void test_kprobe_config_unknown_or_set(void **state)
{
	struct t *t = *state;

	fx_probe_result[TK_PROBE_PROG_KPROBE] = -EOPNOTSUPP;
	expect_cap(snap(t), TK_CAP_PROG_KPROBE, TK_UNSUPPORTED, "no", "fake prog_kprobe", NULL);
	assert_null(strstr(t->caps.caps[TK_CAP_PROG_KPROBE].reason, "CONFIG_"));

	FX(fx_write_gz(t->fx, "proc/config.gz", "CONFIG_KPROBES_ON_FTRACE=y\n"
						"CONFIG_KPROBES=y\n"));
	expect_cap(snap(t), TK_CAP_PROG_KPROBE, TK_UNSUPPORTED, "no", "fake prog_kprobe", NULL);
	assert_null(strstr(t->caps.caps[TK_CAP_PROG_KPROBE].reason, "CONFIG_"));
}

/* ---- perf_event_open ------------------------------------------------------------- */

static void test_perf_cpu_clock_eacces_without_caps(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	/* an ordinary user on Debian: paranoid 3, no bpf(2) either */
	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	FX(fx_write(t->fx, "proc/sys/kernel/perf_event_paranoid", "3\n"));
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	fx_probe_result[TK_PROBE_PERF_CPU_CLOCK] = -EACCES;
	fx_probe_result[TK_PROBE_PERF_HARDWARE] = -EACCES;
	caps = snap(t);
	expect_cap(caps, TK_CAP_PERF_CPU_CLOCK, TK_DISABLED, "no",
		   "Permission denied|lacks CAP_PERFMON", "root|perf_event_paranoid=1");
	expect_cap(caps, TK_CAP_PERF_HARDWARE, TK_DISABLED, "no", "lacks CAP_PERFMON", "root");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_NONE,
		       "bpf.syscall is disabled|perf.cpu_clock is disabled");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC, "bpf.syscall is disabled");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.syscall is disabled");
}

/* bpf(2) fine, cpu-clock refused: the BPF profiler needs the event too. */
static void test_perf_cpu_clock_refused_alone(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_PERF_CPU_CLOCK] = -EACCES;
	FX(fx_set_status(t->fx, CAPEFF_BPF_PERFMON, 0));
	caps = snap(t);
	/* holds CAP_PERFMON, still refused: not a privilege question */
	expect_cap(caps, TK_CAP_PERF_CPU_CLOCK, TK_UNSUPPORTED, "no", "refuses it although", "");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_NONE,
		       "perf.cpu_clock is unsupported");
}

/* paranoid 2 without CAP_PERFMON: sampling works with exclude_kernel only. */
static void test_perf_cpu_clock_user_only(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_set_status(t->fx, CAPEFF_NONE, 0));
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	fx_probe_user_only[TK_PROBE_PERF_CPU_CLOCK] = true;
	fx_probe_msg[TK_PROBE_PERF_CPU_CLOCK] = "sampling cpu-clock event opened, user space only";
	caps = snap(t);
	expect_cap(caps, TK_CAP_PERF_CPU_CLOCK, TK_SUPPORTED, "own processes, user space",
		   "sampling cpu-clock event opened|no kernel frames|"
		   "perf_event_paranoid|own processes",
		   "root|kernel stacks");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_PERF, "bpf.syscall is disabled");
	expect_good_text(t);
}

static void test_perf_hardware_enoent(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	fx_probe_result[TK_PROBE_PERF_HARDWARE] = -ENOENT;
	fx_probe_msg[TK_PROBE_PERF_HARDWARE] =
		"perf_event_open(hardware cpu-cycles): No such file or directory";
	caps = snap(t);
	expect_cap(caps, TK_CAP_PERF_HARDWARE, TK_UNSUPPORTED, "no",
		   "no hardware PMU counters are exposed|typical of virtual machines|"
		   "perf_event_open(hardware cpu-cycles): No such file or directory",
		   "none needed|cpu-clock");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);

	/* a PMU device that the kernel still refuses: not called a virtual machine */
	FX(fx_mkdir(t->fx, "sys/bus/event_source/devices/cpu"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PERF_HARDWARE, TK_UNSUPPORTED, "no",
		   "no hardware PMU counters are exposed", "cpu-clock");
	assert_null(strstr(caps->caps[TK_CAP_PERF_HARDWARE].reason, "virtual machines"));
}

/* ---- tracefs, tracepoints, functions ------------------------------------------------ */

static void test_tracefs_mounted(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_mkdir(t->fx, "sys/kernel/tracing/events/sched/sched_process_exec"));
	FX(fx_write(t->fx, "sys/kernel/tracing/events/migrate/mm_migrate_pages/id", "512\n"));
	FX(fx_append(t->fx, "proc/self/mountinfo", "40 25 0:12 / /sys/kernel/tracing "
		     "rw,nosuid,nodev,noexec,relatime - tracefs tracefs rw\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TRACEFS, TK_SUPPORTED, "/sys/kernel/tracing", "", "");
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_SUPPORTED, "present", "found in tracefs",
		   NULL);
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present", "found in tracefs",
		   NULL);
	/* not in tracefs: kallsyms still knows it */
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_SUPPORTED, "present",
		   "found in kallsyms", NULL);
}

static void test_tracefs_under_debugfs(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_mkdir(t->fx, "sys/kernel/debug/tracing/events/kmem/kmalloc"));
	FX(fx_append(t->fx, "proc/self/mountinfo", "41 30 0:12 / /sys/kernel/debug/tracing "
		     "rw,nosuid,nodev,noexec,relatime - tracefs tracefs rw\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TRACEFS, TK_SUPPORTED, "/sys/kernel/debug/tracing", "", "");
	expect_cap(caps, TK_CAP_TP_KMEM_KMALLOC, TK_SUPPORTED, "present", "found in tracefs", NULL);
}

/* An empty mount point is not tracefs: only an events directory counts. */
static void test_tracefs_not_mounted_ignores_stale_dirs(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_mkdir(t->fx, "sys/kernel/tracing"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TRACEFS, TK_DISABLED, "not mounted",
		   "tracefs is not mounted|does not need it", "mount -t tracefs");
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_SUPPORTED, "present",
		   "found in kallsyms", NULL);
}

static void test_tracepoints_absent(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;
	size_t i;

	/* look-alikes that must not count: a longer name, a non-data symbol */
	FX(fx_write(t->fx, "proc/kallsyms",
		    "ffffffff81000000 T _stext\n"
		    "ffffffff82a1d160 D __tracepoint_mm_migrate_pages_start\n"
		    "ffffffff82a1e000 t __tracepoint_mm_page_alloc\n"
		    "ffffffff82a1e000 D x__tracepoint_kmalloc\n"
		    "ffffffff82a1e000 D __tracepoint_sched_process_exec2\n"));
	caps = snap(t);
	for (i = 0; i < N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_UNSUPPORTED, "absent",
			   "is not in this kernel|not in BTF or kallsyms; tracefs is not mounted",
			   NULL);
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_UNSUPPORTED, "absent",
		   "migrate:mm_migrate_pages is not in this kernel", NULL);
	/* arm64's case: growth takes the software event page-faults, so it is not needed */
	expect_cap(caps, TK_CAP_TP_PAGE_FAULT_USER, TK_UNSUPPORTED, "absent",
		   "exceptions:page_fault_user", "none needed|software perf event page-faults");
	assert_true(caps->caps[TK_CAP_TP_PAGE_FAULT_USER].not_needed);
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT,
		       "tracepoint.mm_migrate_pages is unsupported");
	/* without perf_event programs there is nothing instead */
	fx_probe_result[TK_PROBE_PROG_PERF_EVENT] = -EINVAL;
	caps = snap(t);
	expect_cap(caps, TK_CAP_TP_PAGE_FAULT_USER, TK_UNSUPPORTED, "absent",
		   "exceptions:page_fault_user", "");
	assert_false(caps->caps[TK_CAP_TP_PAGE_FAULT_USER].not_needed);
	fx_probe_result[TK_PROBE_PROG_PERF_EVENT] = 0;

	/* no kallsyms at all */
	FX(fx_remove(t->fx, "proc/kallsyms"));
	caps = snap(t);
	for (i = 0; i < N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_UNSUPPORTED, "absent", NULL, NULL);
}

/* Symbols of modules end in "\t[module]"; zeroed addresses (kptr_restrict) still name them. */
static void test_tracepoint_kallsyms_forms(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write(t->fx, "proc/kallsyms",
		    "0000000000000000 T _stext\n"
		    "0000000000000000 D __tracepoint_sched_process_exec\n"
		    "0000000000000000 b __tracepoint_sched_process_exit\n"
		    "0000000000000000 R __tracepoint_kmalloc\n"
		    "ffffffffc0a01000 d __tracepoint_page_fault_user\t[kvm]\n"
		    "ffffffffc0a01000 D __tracepoint_mm_migrate_pages"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_SUPPORTED, "present", "kallsyms", NULL);
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_SUPPORTED, "present", "kallsyms", NULL);
	expect_cap(caps, TK_CAP_TP_KMEM_KMALLOC, TK_SUPPORTED, "present", "kallsyms", NULL);
	expect_cap(caps, TK_CAP_TP_PAGE_FAULT_USER, TK_SUPPORTED, "present", "kallsyms", NULL);
	/* the last line without a newline */
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present", "kallsyms", NULL);
	expect_cap(caps, TK_CAP_TP_SCHED_MOVE_NUMA, TK_UNSUPPORTED, "absent", NULL, NULL);
}

static void test_migrate_misplaced(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	/* kernels before 6.6: the page variant */
	FX(fx_write(t->fx, "proc/kallsyms", "ffffffff81000000 T _stext\n"
					    "ffffffff8166e050 T migrate_misplaced_page\n"
					    "ffffffff82a1d100 D __tracepoint_mm_migrate_pages\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_page",
		   "found in kallsyms", "");
	assert_string_equal(caps->caps[TK_CAP_FN_MIGRATE_MISPLACED].value,
			    "migrate_misplaced_page");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, "fentry on the misplaced-page path");

	/* both: the folio one wins; a static (t) symbol counts */
	FX(fx_append(t->fx, "proc/kallsyms", "ffffffff8166f000 t migrate_misplaced_folio\n"));
	assert_string_equal(snap(t)->caps[TK_CAP_FN_MIGRATE_MISPLACED].value,
			    "migrate_misplaced_folio");

	/* neither (only a longer name): NUMA collection still works, without the detail */
	FX(fx_write(t->fx, "proc/kallsyms", "ffffffff81000000 T _stext\n"
					    "ffffffff8166e3a0 t migrate_misplaced_folio_prepare\n"
					    "ffffffff8166e3a0 D migrate_misplaced_page\n"
					    "ffffffff82a1d100 D __tracepoint_mm_migrate_pages\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_UNSUPPORTED, "absent",
		   "neither migrate_misplaced_folio nor migrate_misplaced_page|inlined or renamed",
		   "none needed|migrate:mm_migrate_pages");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF,
		       "through tp_btf|no per-page misplacement detail");
}

/* ---- memory cgroup ------------------------------------------------------------------ */

/* @got is sys_root/@rel */
static void assert_sys_path(struct t *t, const char *got, const char *rel)
{
	char want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/%s", t->fx->sys, rel);
	assert_string_equal(got, want);
}

static const char v2_mountinfo[] =
	"22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
	"24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
	"30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
	"cgroup2 rw,nsdelegate,memory_recursiveprot\n";

#define V2_CG "/user.slice/user-1000.slice/session-2.scope"

static void set_v2_only(struct t *t)
{
	FX(fx_remove(t->fx, "sys/fs/cgroup"));
	FX(fx_write(t->fx, "proc/self/mountinfo", v2_mountinfo));
	FX(fx_write(t->fx, "proc/self/cgroup", "0::" V2_CG "\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup" V2_CG "/memory.current", "8273920\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup" V2_CG "/memory.max", "max\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup" V2_CG "/memory.peak", "10485760\n"));
}

static void test_cgroup_v1_only(void **state)
{
	struct t *t = *state;
	const struct tk_memory *m;
	struct tk_caps *caps;

	/* the baseline without its v2 hierarchy */
	FX(fx_write(t->fx, "proc/self/cgroup", "4:memory:" FX_CGROUP "\n1:cpu:/\n"));
	FX(fx_remove(t->fx, "sys/fs/cgroup/unified"));
	caps = snap(t);
	m = &caps->memory;
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v1",
		   FX_CGROUP ": memory.usage_in_bytes memory.limit_in_bytes "
			     "memory.max_usage_in_bytes",
		   "");
	assert_int_equal(m->cgroup, TK_CGROUP_V1);
	assert_string_equal(m->cgroup_path, FX_CGROUP);
	assert_sys_path(t, m->cgroup_dir, "fs/cgroup/memory" FX_CGROUP);
	assert_true(m->has_current && m->has_limit && m->has_peak);
	assert_int_equal(m->current_bytes, 14782464);
	assert_true(m->limit_unlimited);
	assert_int_equal(m->peak_bytes, 25600000);

	/* a real limit */
	FX(fx_write(t->fx, "sys/fs/cgroup/memory" FX_CGROUP "/memory.limit_in_bytes",
		    "536870912\n"));
	m = &snap(t)->memory;
	assert_false(m->limit_unlimited);
	assert_int_equal(m->limit_bytes, 536870912);
}

static void test_cgroup_v2_only(void **state)
{
	struct t *t = *state;
	const struct tk_memory *m;
	struct tk_caps *caps;

	set_v2_only(t);
	caps = snap(t);
	m = &caps->memory;
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2",
		   V2_CG ": memory.current memory.max memory.peak", "");
	assert_int_equal(m->cgroup, TK_CGROUP_V2);
	assert_string_equal(m->cgroup_path, V2_CG);
	assert_sys_path(t, m->cgroup_dir, "fs/cgroup" V2_CG);
	assert_int_equal(m->current_bytes, 8273920);
	assert_true(m->has_limit);
	assert_true(m->limit_unlimited);
	assert_int_equal(m->limit_bytes, UINT64_MAX);
	assert_true(m->has_peak);
	assert_int_equal(m->peak_bytes, 10485760);

	/* a limit, and no memory.peak (before Linux 5.19) */
	FX(fx_write(t->fx, "sys/fs/cgroup" V2_CG "/memory.max", "1073741824\n"));
	FX(fx_remove(t->fx, "sys/fs/cgroup" V2_CG "/memory.peak"));
	caps = snap(t);
	m = &caps->memory;
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", "memory.current memory.max", "");
	assert_null(strstr(caps->caps[TK_CAP_MEM_CGROUP].reason, "memory.peak"));
	assert_false(m->limit_unlimited);
	assert_int_equal(m->limit_bytes, 1073741824);
	assert_false(m->has_peak);
}

/* This machine: v2 mounted, but its memory controller is v1's, so v1 is used. */
static void test_cgroup_hybrid(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v1", FX_CGROUP, "");
	assert_int_equal(caps->memory.cgroup, TK_CGROUP_V1);

	/* once v2 accounts memory for the cgroup, v2 is preferred */
	FX(fx_write(t->fx, "sys/fs/cgroup/unified/memory.current", "4096\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", "/: memory.current", "");
	assert_sys_path(t, caps->memory.cgroup_dir, "fs/cgroup/unified");
	assert_int_equal(caps->memory.current_bytes, 4096);
	assert_false(caps->memory.has_limit);
}

static void test_cgroup_none(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	/* hierarchies mounted, but no accounting files for this cgroup */
	FX(fx_remove(t->fx, "sys/fs/cgroup/memory" FX_CGROUP));
	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_UNSUPPORTED, "none",
		   "no memory accounting files for this process's cgroup|system-wide", "");
	assert_int_equal(caps->memory.cgroup, TK_CGROUP_NONE);
	assert_string_equal(caps->memory.cgroup_files, "");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);

	/* no cgroups in the kernel at all: still no error */
	FX(fx_remove(t->fx, "proc/self/cgroup"));
	FX(fx_remove(t->fx, "proc/self/mountinfo"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_UNSUPPORTED, "none", "system-wide", "");
	assert_null(strstr(caps->caps[TK_CAP_MEM_CGROUP].reason, ": No such file"));
}

/* Hierarchies not under /sys cannot be found under sys_root: treated as none. */
static void test_cgroup_mounted_elsewhere(void **state)
{
	struct t *t = *state;

	set_v2_only(t);
	FX(fx_write(t->fx, "proc/self/mountinfo",
		    "30 24 0:26 / /run/cgroup rw,relatime - cgroup2 cgroup2 rw\n"));
	expect_cap(snap(t), TK_CAP_MEM_CGROUP, TK_UNSUPPORTED, "none", V2_CG, "");
}

/* Inside a cgroup namespace or a bind mount the mount shows a subtree. */
static void test_cgroup_namespace_root(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_remove(t->fx, "sys/fs/cgroup"));
	FX(fx_write(t->fx, "proc/self/mountinfo",
		    "1210 1200 0:26 /kubepods/pod1 /sys/fs/cgroup ro,nosuid,nodev,noexec,"
		    "relatime - cgroup2 cgroup rw,nsdelegate\n"));
	FX(fx_write(t->fx, "proc/self/cgroup", "0::/kubepods/pod1/ctr1\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup/ctr1/memory.current", "1048576\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup/ctr1/memory.max", "268435456\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", "/kubepods/pod1/ctr1", "");
	assert_sys_path(t, caps->memory.cgroup_dir, "fs/cgroup/ctr1");
	assert_int_equal(caps->memory.limit_bytes, 268435456);

	/* the cgroup is the mount's root itself */
	FX(fx_write(t->fx, "proc/self/cgroup", "0::/kubepods/pod1\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup/memory.current", "2097152\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", NULL, "");
	assert_sys_path(t, caps->memory.cgroup_dir, "fs/cgroup");
	assert_int_equal(caps->memory.current_bytes, 2097152);

	/* a sibling whose name starts like the root is outside the mount */
	FX(fx_write(t->fx, "proc/self/cgroup", "0::/kubepods/pod10/ctr1\n"));
	expect_cap(snap(t), TK_CAP_MEM_CGROUP, TK_UNSUPPORTED, "none", "/kubepods/pod10/ctr1", "");
}

/* ---- NUMA ------------------------------------------------------------------------- */

static void test_numa_two_nodes(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;
	const struct tk_numa_topology *n;

	FX(fx_remove(t->fx, "sys/devices/system/node"));
	/* node1 first: the order of readdir() must not matter */
	FX(fx_write(t->fx, "sys/devices/system/node/node1/cpulist", "4-7,12-15\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/node1/meminfo",
		    "Node 1 MemTotal:       16384000 kB\n"
		    "Node 1 MemFree:         8192000 kB\n"
		    "Node 1 MemUsed:         8192000 kB\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/node0/cpulist", "0-3,8-11\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/node0/meminfo",
		    "Node 0 MemTotal:       16777216 kB\n"
		    "Node 0 MemFree:        12000000 kB\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/online", "0-1\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/possible", "0-1\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/has_cpu", "0-1\n"));
	FX(fx_mkdir(t->fx, "sys/devices/system/node/power"));
	FX(fx_mkdir(t->fx, "sys/devices/system/node/nodeX"));
	FX(fx_write(t->fx, "proc/sys/kernel/numa_balancing", "1\n"));
	caps = snap(t);
	n = &caps->numa;
	expect_cap(caps, TK_CAP_NUMA, TK_SUPPORTED, "2 nodes", "", "");
	assert_int_equal(n->nr_nodes, 2);
	assert_int_equal(n->nodes[0].id, 0);
	assert_string_equal(n->nodes[0].cpus, "0-3,8-11");
	assert_int_equal(n->nodes[0].mem_total_kb, 16777216);
	assert_int_equal(n->nodes[0].mem_free_kb, 12000000);
	assert_int_equal(n->nodes[1].id, 1);
	assert_string_equal(n->nodes[1].cpus, "4-7,12-15");
	assert_int_equal(n->nodes[1].mem_total_kb, 16384000);
	assert_int_equal(n->nodes[1].mem_free_kb, 8192000);
	expect_cap(caps, TK_CAP_NUMA_BALANCING, TK_SUPPORTED, "1 (normal)", "", "");
	assert_int_equal(n->balancing, 1);

	/* balancing off on two nodes: no one-node note */
	FX(fx_write(t->fx, "proc/sys/kernel/numa_balancing", "0\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_NUMA_BALANCING, TK_DISABLED, "0 (off)",
		   "automatic NUMA balancing is off", "numa_balancing=1");
	assert_null(strstr(caps->caps[TK_CAP_NUMA_BALANCING].reason, "one node"));
}

/* A memory-only node (CXL, HBM) has an empty cpulist. */
static void test_numa_memory_only_node(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write(t->fx, "sys/devices/system/node/node2/cpulist", "\n"));
	FX(fx_write(t->fx, "sys/devices/system/node/node2/meminfo",
		    "Node 2 MemTotal:       67108864 kB\n"
		    "Node 2 MemFree:        67000000 kB\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_NUMA, TK_SUPPORTED, "2 nodes", "", "");
	assert_int_equal(caps->numa.nodes[1].id, 2);
	assert_string_equal(caps->numa.nodes[1].cpus, "");
	assert_int_equal(caps->numa.nodes[1].mem_total_kb, 67108864);
}

static void test_numa_one_node(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps = snap(t);

	expect_cap(caps, TK_CAP_NUMA, TK_SUPPORTED, "1 node", "one node|cannot move", "");
	assert_int_equal(caps->numa.nr_nodes, 1);
	assert_string_equal(caps->numa.nodes[0].cpus, "0-1");
	assert_int_equal(caps->numa.nodes[0].mem_total_kb, 4548820);
	assert_int_equal(caps->numa.nodes[0].mem_free_kb, 4092208);
}

static void test_numa_no_nodes(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_remove(t->fx, "sys/devices/system/node"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_NUMA, TK_UNSUPPORTED, "0 nodes", "CONFIG_NUMA", "");
	assert_int_equal(caps->numa.nr_nodes, 0);
	/* NUMA is not a collector's prerequisite */
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, NULL);
}

static void test_numa_balancing_modes(void **state)
{
	static const struct {
		const char *file, *value;
		enum tk_status st;
	} modes[] = {
		{ "0\n", "0 (off)", TK_DISABLED },
		{ "1\n", "1 (normal)", TK_SUPPORTED },
		{ "2\n", "2 (memory tiering)", TK_SUPPORTED },
		{ "3\n", "3 (normal and memory tiering)", TK_SUPPORTED },
		{ "5\n", "5 (unknown mode)", TK_SUPPORTED },
	};
	struct t *t = *state;
	struct tk_caps *caps;
	size_t i;

	for (i = 0; i < N(modes); i++) {
		FX(fx_write(t->fx, "proc/sys/kernel/numa_balancing", modes[i].file));
		caps = snap(t);
		expect_cap(caps, TK_CAP_NUMA_BALANCING, modes[i].st, modes[i].value, NULL, NULL);
		assert_string_equal(caps->caps[TK_CAP_NUMA_BALANCING].value, modes[i].value);
		assert_int_equal(caps->numa.balancing, atoi(modes[i].file));
	}
	FX(fx_remove(t->fx, "proc/sys/kernel/numa_balancing"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_NUMA_BALANCING, TK_UNSUPPORTED, "absent", "CONFIG_NUMA_BALANCING",
		   "");
	assert_int_equal(caps->numa.balancing, -1);
}

/* ---- writers ----------------------------------------------------------------------- */

enum fmt { JSON, TEXT };

static const char *render(struct t *t, enum fmt fmt)
{
	FILE *f;

	free(t->out);
	t->out = NULL;
	f = open_memstream(&t->out, &t->outlen);
	assert_non_null(f);
	if (fmt == JSON)
		assert_int_equal(tk_caps__write_json(&t->caps, f), 0);
	else
		assert_int_equal(tk_caps__write_text(&t->caps, f), 0);
	assert_int_equal(fclose(f), 0);
	return t->out;
}

static void check_json(struct t *t, const char *file, int line)
{
	const char *out = render(t, JSON);
	char why[128], key[160];
	int i, counts[3] = {};

	if (fx_json_check(out, t->outlen, why, sizeof(why))) {
		print_error("invalid JSON (%s):\n%s\n", why, out);
		_fail(file, line);
	}
	if (!strstr(out, "\"schema\": \"tracekit.caps/1\"")) {
		print_error("no schema line\n");
		_fail(file, line);
	}
	for (i = 0; i < TK_CAP__COUNT; i++) {
		snprintf(key, sizeof(key), "\"%s\": {", tk_cap__id_name(i));
		if (!t->caps.caps[i].present) {
			if (strstr(out, key)) {
				print_error("%s is not present but written\n", key);
				_fail(file, line);
			}
			continue;
		}
		counts[t->caps.caps[i].status]++;
		if (!strstr(out, key)) {
			print_error("entry %s missing\n", key);
			_fail(file, line);
		}
	}
	snprintf(key, sizeof(key),
		 "\"summary\": {\n    \"supported\": %d,\n    \"unsupported\": %d,\n"
		 "    \"disabled\": %d\n  }",
		 counts[TK_SUPPORTED], counts[TK_UNSUPPORTED], counts[TK_DISABLED]);
	if (!strstr(out, key)) {
		print_error("no summary %s\n", key);
		_fail(file, line);
	}
	for (i = 0; i < TK_COLLECT__COUNT; i++) {
		snprintf(key, sizeof(key), "\"%s\": {\n      \"backend\": \"%s\"",
			 tk_collector__name(i), tk_backend__name(t->caps.backends[i].backend));
		if (!strstr(out, key)) {
			print_error("backend %s missing\n", key);
			_fail(file, line);
		}
	}
}

static void check_text(struct t *t, const char *file, int line)
{
	const char *out = render(t, TEXT), *where, *attention, *works;
	size_t longest = fx_longest_line(out, &where);

	if (longest > 80) {
		print_error("a line of %zu columns:\n%.*s\n", longest, (int)longest, where);
		_fail(file, line);
	}
	attention = strstr(out, "\nNeeds attention (");
	works = strstr(out, "\nWorks (");
	if (strncmp(out, "tracekit caps:", 14) || !attention || !works || attention > works) {
		print_error("layout:\n%s\n", out);
		_fail(file, line);
	}
}

#define expect_valid_json(t) check_json(t, __FILE__, __LINE__)

static void test_json_baseline(void **state)
{
	struct t *t = *state;
	const char *out;

	snap(t);
	expect_valid_json(t);
	out = t->out;
	assert_non_null(strstr(out, "\"release\": \"" FX_RELEASE "\""));
	assert_non_null(strstr(out, "\"pid\": null"));
	assert_non_null(strstr(out, "\"process\": null"));
	/* 42 entries: all probes answer yes; no tracefs, no NUMA balancing */
	assert_non_null(strstr(out, "\"supported\": 40,\n    \"unsupported\": 0,\n"
				    "    \"disabled\": 2"));
	assert_non_null(strstr(out, "\"version\": \"v1\""));
	assert_non_null(strstr(out, "\"limit_bytes\": null"));
	assert_non_null(strstr(out, "\"unlimited\": true"));
	assert_non_null(strstr(out, "\"balancing_mode\": \"off\""));
	assert_non_null(strstr(out, "\"privileges.perf_event_paranoid\": {\n"
				    "      \"title\": \"kernel.perf_event_paranoid\",\n"
				    "      \"status\": \"supported\",\n"
				    "      \"value\": \"2\",\n"));
}

/* Everything refused or missing: still one valid document. */
static void break_everything(struct t *t)
{
	int i;

	for (i = 0; i < TK_PROBE__COUNT; i++)
		fx_probe_result[i] = -EPERM;
	FX(fx_remove(t->fx, "sys"));
	FX(fx_mkdir(t->fx, "sys"));
	FX(fx_remove(t->fx, "proc"));
	FX(fx_mkdir(t->fx, "proc"));
}

static void test_json_everything_broken(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	break_everything(t);
	caps = snap(t);
	expect_cap(caps, TK_CAP_NUMA, TK_UNSUPPORTED, NULL, NULL, NULL);
	expect_valid_json(t);
	assert_non_null(strstr(t->out, "\"balancing\": null"));
	assert_non_null(strstr(t->out, "\"nodes\": []"));
	expect_good_text(t);
}

/* Paths and messages with quotes, backslashes and control characters stay valid JSON. */
static void test_json_hostile_strings(void **state)
{
	struct t *t = *state;

	set_v2_only(t);
	FX(fx_write(t->fx, "proc/self/cgroup", "0::/we\"ird\\dir\ttab\n"));
	FX(fx_write(t->fx, "sys/fs/cgroup/we\"ird\\dir\ttab/memory.current", "1\n"));
	fx_probe_result[TK_PROBE_RINGBUF] = -EINVAL;
	fx_probe_msg[TK_PROBE_RINGBUF] = "verifier: \"R1\" \\ \x01\x1f\x7f end";
	expect_cap(snap(t), TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", "we\"ird", NULL);
	expect_valid_json(t);
	assert_non_null(strstr(t->out, "\"path\": \"/we\\\"ird\\\\dir\\ttab\""));
	assert_non_null(strstr(t->out, "verifier: \\\"R1\\\" \\\\ \\u0001\\u001f\\u007f end"));
}

static void test_text_baseline(void **state)
{
	struct t *t = *state;
	const char *out, *attention, *not_needed, *works, *tracefs, *balancing, *btf;
	char head[128];

	snap(t);
	expect_good_text(t);
	out = t->out;
	snprintf(head, sizeof(head), "tracekit caps: Linux %s %s, 42 checks in ", FX_RELEASE,
		 t->caps.machine);
	assert_int_equal(strncmp(out, head, strlen(head)), 0);
	/* tracefs and balancing on one node: shown, but under "not needed" */
	attention = strstr(out, "\nNeeds attention (0)\n  nothing\n");
	not_needed = strstr(out, "\nNot available, and not needed here (2)\n");
	works = strstr(out, "\nWorks (40)\n");
	assert_non_null(attention);
	assert_non_null(not_needed);
	assert_non_null(works);
	tracefs = strstr(out, "  disabled     tracefs: not mounted\n");
	balancing = strstr(out, "  disabled     kernel.numa_balancing: 0 (off)\n");
	btf = strstr(out, "  kernel BTF ");
	assert_true(tracefs > not_needed && tracefs < works);
	assert_true(balancing > tracefs && balancing < works);
	assert_true(btf > works);
	/* a benign entry's remedy ("only for other tools") is not printed as a fix */
	assert_null(strstr(out, "fix: only for other tools"));
	assert_non_null(strstr(out, "\nCollectors (what tracekit cpu/alloc/numa/stacks will use)\n"
				    "  cpu    bpf      "));
	assert_non_null(strstr(out, "  cgroup    v1 " FX_CGROUP ": 14.1 MiB used, no"));
	assert_non_null(strstr(out, "  node 0    cpus 0-1, 4.3 GiB, 3.9 GiB free\n"));
	assert_non_null(strstr(out, "  balancing 0 (off)\n"));
}

/* Disabled entries come before unsupported ones; nothing supported is under attention. */
static void test_text_attention_order(void **state)
{
	struct t *t = *state;
	const char *out, *works, *p, *last_disabled = NULL, *first_unsupported = NULL;

	fx_probe_result[TK_PROBE_PERF_HARDWARE] = -ENOENT;
	fx_probe_result[TK_PROBE_PROG_KPROBE] = -EOPNOTSUPP;
	snap(t);
	expect_good_text(t);
	out = t->out;
	works = strstr(out, "\nWorks (");
	for (p = strstr(out, "\n  disabled     "); p && p < works;
	     p = strstr(p + 1, "\n  disabled     "))
		last_disabled = p;
	first_unsupported = strstr(out, "\n  unsupported  ");
	assert_non_null(last_disabled);
	assert_non_null(first_unsupported);
	assert_true(last_disabled < first_unsupported && first_unsupported < works);
	/* all four are benign here: none needs attention, all are listed as not needed */
	assert_non_null(strstr(out, "\nNeeds attention (0)\n"));
	assert_non_null(strstr(out, "\nNot available, and not needed here (4)\n"));
	assert_null(strstr(works, "hardware PMU counters"));
	assert_null(strstr(out, "  supported    "));
}

static void test_text_nothing_needs_attention(void **state)
{
	struct t *t = *state;

	FX(fx_mkdir(t->fx, "sys/kernel/tracing/events"));
	FX(fx_write(t->fx, "proc/sys/kernel/numa_balancing", "1\n"));
	snap(t);
	expect_good_text(t);
	assert_non_null(strstr(t->out, "\nNeeds attention (0)\n  nothing\n"));
}

static void test_text_long_cgroup_path(void **state)
{
	struct t *t = *state;
	char cg[400], rel[512], line[8];
	int i;

	/* one long word (two directories of 150), then a path of many short parts */
	set_v2_only(t);
	for (i = 0; i < 300; i++)
		cg[i] = i % 150 ? 'a' + i % 26 : '/';
	cg[300] = '\0';
	FX(fx_writef(t->fx, "proc/self/cgroup", "0::%s\n", cg));
	snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/memory.current", cg);
	FX(fx_write(t->fx, rel, "123456789\n"));
	FX(fx_write(t->fx, "proc/sys/kernel/numa_balancing", "1\n"));
	expect_cap(snap(t), TK_CAP_MEM_CGROUP, TK_SUPPORTED, "v2", NULL, NULL);
	expect_good_text(t);

	cg[0] = '\0';
	for (i = 0; i < 30; i++) {
		snprintf(line, sizeof(line), "/s%03d", i);
		strcat(cg, line);
	}
	/* not accounted: the path goes into the reason under "Needs attention" */
	FX(fx_writef(t->fx, "proc/self/cgroup", "0::%s\n", cg));
	expect_cap(snap(t), TK_CAP_MEM_CGROUP, TK_UNSUPPORTED, "none", "/s029", NULL);
	expect_good_text(t);
}

static void test_text_long_reasons(void **state)
{
	struct t *t = *state;
	static char words[240], word[240];
	int i;

	for (i = 0; i < (int)sizeof(words) - 1; i++)
		words[i] = i % 9 == 8 ? ' ' : 'w';
	words[sizeof(words) - 1] = '\0';
	memset(word, 'x', sizeof(word) - 1);
	word[sizeof(word) - 1] = '\0';
	for (i = 0; i < TK_PROBE__COUNT; i++) {
		fx_probe_result[i] = i % 2 ? -EINVAL : -EPERM;
		fx_probe_msg[i] = i % 3 ? words : word;
	}
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = 0;
	fx_probe_msg[TK_PROBE_BPF_SYSCALL] = NULL;
	t->opts.release = "6.18.44-a-very-long-local-version-string-that-goes-on-and-on-and-on-"
			  "well-past-the-edge-of-the-terminal-window-x86_64";
	snap(t);
	expect_good_text(t);
	expect_valid_json(t);
}

/* Machines that number CPUs round-robin across nodes have long cpulists. */
static void test_text_long_cpulist(void **state)
{
	struct t *t = *state;
	char cpus[128] = "";
	int i;

	for (i = 0; i < 64; i += 2)
		snprintf(cpus + strlen(cpus), sizeof(cpus) - strlen(cpus), "%s%d", i ? "," : "",
			 i);
	FX(fx_writef(t->fx, "sys/devices/system/node/node0/cpulist", "%s\n", cpus));
	assert_string_equal(snap(t)->numa.nodes[0].cpus, cpus);
	expect_good_text(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_baseline_host),
		T(test_release_override),
		T(test_names),
		T(test_pid_missing),
		T(test_invalid_opts),
		T(test_caps_not_effective),
		T(test_caps_bpf_perfmon_only),
		T(test_caps_kernel_too_old),
		T(test_caps_status_unreadable),
		T(test_paranoid),
		T(test_kptr_restrict),
		T(test_unprivileged_bpf_disabled),
		T(test_lockdown),
		T(test_bpf_seccomp),
		T(test_bpf_and_perf_seccomp),
		T(test_bpf_eperm_without_caps),
		T(test_bpf_eperm_with_caps),
		T(test_bpf_enosys),
		T(test_probe_without_message),
		T(test_btf_missing),
		T(test_btf_finds_tracepoints_and_functions),
		T(test_ringbuf_einval),
		T(test_ringbuf_seccomp),
		T(test_core_facts),
		T(test_core_fails),
		T(test_prog_perf_event_fails),
		T(test_collector_loads_refused),
		T(test_kernel_differences_not_needed),
		T(test_prog_tracepoint_fails),
		T(test_raw_tp_and_tp_btf),
		T(test_fentry_refused_with_caps),
		T(test_uprobe_not_configured),
		T(test_kprobe_not_configured),
		T(test_kprobe_config_unknown_or_set),
		T(test_perf_cpu_clock_eacces_without_caps),
		T(test_perf_cpu_clock_refused_alone),
		T(test_perf_cpu_clock_user_only),
		T(test_perf_hardware_enoent),
		T(test_tracefs_mounted),
		T(test_tracefs_under_debugfs),
		T(test_tracefs_not_mounted_ignores_stale_dirs),
		T(test_tracepoints_absent),
		T(test_tracepoint_kallsyms_forms),
		T(test_migrate_misplaced),
		T(test_cgroup_v1_only),
		T(test_cgroup_v2_only),
		T(test_cgroup_hybrid),
		T(test_cgroup_none),
		T(test_cgroup_mounted_elsewhere),
		T(test_cgroup_namespace_root),
		T(test_numa_two_nodes),
		T(test_numa_memory_only_node),
		T(test_numa_one_node),
		T(test_numa_no_nodes),
		T(test_numa_balancing_modes),
		T(test_json_baseline),
		T(test_json_everything_broken),
		T(test_json_hostile_strings),
		T(test_text_baseline),
		T(test_text_attention_order),
		T(test_text_nothing_needs_attention),
		T(test_text_long_cgroup_path),
		T(test_text_long_reasons),
		T(test_text_long_cpulist),
#undef T
	};

	return cmocka_run_group_tests_name("caps", tests, NULL, NULL);
}
