// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The capability snapshot on a kernel without BTF (the "no BTF" fixture, and
 * the baseline with its vmlinux emptied, garbled or moved to where libbpf
 * looks next): bpf.btf says what was tried and what to do, the tracepoints are
 * still found (tracefs, kallsyms) and say where, the entries that need BTF say
 * "BTF missing" and are one problem with bpf.btf in the text report and carry
 * its id as their "cause" in the JSON, and the NUMA collector says why it
 * falls back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int setup_with(void **state, int (*tree)(struct fx *))
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || tree(t->fx)) {
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

static int setup_nobtf(void **state)
{
	return setup_with(state, fx_no_btf_host);
}

static int setup_base(void **state)
{
	return setup_with(state, fx_base_host);
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
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct tk_caps *snap(struct t *t)
{
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps), 0);
	return &t->caps;
}

static const enum tk_cap_id tracepoint_ids[] = {
	TK_CAP_TP_SCHED_PROCESS_EXEC, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_CAP_TP_MM_MIGRATE_PAGES,
	TK_CAP_TP_SCHED_MOVE_NUMA,    TK_CAP_TP_SCHED_SWAP_NUMA,    TK_CAP_TP_SCHED_STICK_NUMA,
	TK_CAP_TP_KMEM_MM_PAGE_ALLOC, TK_CAP_TP_KMEM_KMALLOC,	    TK_CAP_TP_PAGE_FAULT_USER,
};

/* what needs BTF: CO-RE relocation, and the programs that attach by its type ids */
static const enum tk_cap_id needs_btf[] = { TK_CAP_CORE, TK_CAP_PROG_TP_BTF,
					    TK_CAP_PROG_FENTRY };

/* Entry @id failed for want of entry @cause. */
static void expect_cause(const struct tk_caps *caps, enum tk_cap_id id, enum tk_cap_id cause)
{
	if (!caps->caps[id].has_cause || caps->caps[id].cause != cause)
		print_error("%s: cause %s, want %s\n", tk_cap__id_name(id),
			    caps->caps[id].has_cause ? tk_cap__id_name(caps->caps[id].cause)
						     : "none",
			    tk_cap__id_name(cause));
	assert_true(caps->caps[id].has_cause);
	assert_int_equal(caps->caps[id].cause, cause);
}

/* No BTF at all: the entries that need it say so, and no probe was asked about them. */
static void expect_btf_missing(struct tk_caps *caps)
{
	size_t i;

	for (i = 0; i < N(needs_btf); i++) {
		expect_cap(caps, needs_btf[i], TK_UNSUPPORTED, "no", "BTF missing|see bpf.btf",
			   "");
		expect_cause(caps, needs_btf[i], TK_CAP_BTF);
	}
	assert_int_equal(fx_probe_calls[TK_PROBE_CORE], 0);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_TP_BTF], 0);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_FENTRY], 0);
	/* the probes were told there is none */
	assert_string_equal(fx_probe_btf_path, "");
	assert_false(fx_probe_had_btf);
	assert_false(caps->caps[TK_CAP_BTF].has_cause);
	/* the NUMA collector falls back, and says it is for want of BTF */
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT,
		       "bpf.core is unsupported, for want of kernel BTF (bpf.btf)|/proc/vmstat");
	assert_string_equal(caps->backends[TK_COLLECT_NUMA].blocker,
			    "bpf.core is unsupported, for want of kernel BTF (bpf.btf)");
	/* what needs no BTF still works */
	expect_cap(caps, TK_CAP_PROG_RAW_TP, TK_SUPPORTED, "yes", NULL, NULL);
	expect_cap(caps, TK_CAP_PROG_PERF_EVENT, TK_SUPPORTED, "yes", NULL, NULL);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	assert_string_equal(caps->backends[TK_COLLECT_CPU].blocker, "");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, NULL);
}

/* ---- the "no BTF" fixture ----------------------------------------------------------- */

static void test_nobtf_host(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps = snap(t);
	size_t i;

	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "absent",
		   "kernel/btf/vmlinux: the kernel is built without CONFIG_DEBUG_INFO_BTF|"
		   "none of the files libbpf tries next exists|"
		   "/boot/vmlinux-KVER, /lib/modules/KVER/{vmlinux-KVER,build/vmlinux}, "
		   "/usr/lib/modules/KVER/kernel/vmlinux, /usr/lib/debug/boot/vmlinux-KVER[.debug], "
		   "/usr/lib/debug/lib/modules/KVER/vmlinux, KVER " FX_RELEASE "|"
		   "CO-RE, tp_btf and fentry need BTF",
		   "CONFIG_DEBUG_INFO_BTF=y|Debian's are|one of those files|perf sampling");
	expect_btf_missing(caps);
	/* tracefs lists them all */
	expect_cap(caps, TK_CAP_TRACEFS, TK_SUPPORTED, "/sys/kernel/tracing", "", "");
	for (i = 0; i < N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_SUPPORTED, "present", "found in tracefs",
			   "");
	/* without CO-RE, no record facts */
	assert_null(strstr(caps->caps[TK_CAP_TP_MM_MIGRATE_PAGES].reason, "record has"));
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED, "migrate_misplaced_folio",
		   "found in kallsyms|fentry on it is unavailable here", "");
}

/* tracefs not mounted either: kallsyms answers, by the tracepoints' own functions. */
static void test_nobtf_kallsyms(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;
	char want[128];
	size_t i;

	FX(fx_write(t->fx, "proc/self/mountinfo",
		    "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
		    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TRACEFS, TK_DISABLED, "not mounted", NULL, NULL);
	for (i = 0; i < N(tracepoint_ids); i++) {
		snprintf(want, sizeof(want), "found in kallsyms (__traceiter_%s)",
			 strchr(tk_cap__id_name(tracepoint_ids[i]), '.') + 1);
		expect_cap(caps, tracepoint_ids[i], TK_SUPPORTED, "present", want, "");
	}
	expect_btf_missing(caps);

	/*
	 * A class's __bpf_trace_ is not its events'; a longer name, a data symbol of
	 * that name, the probe stub: none of them counts.
	 */
	FX(fx_write(t->fx, "proc/kallsyms",
		    "ffffffff81000000 T _stext\n"
		    "ffffffff813a9da0 t __bpf_trace_sched_swap_numa\n"
		    "ffffffff813a5560 T __traceiter_sched_process_exec2\n"
		    "ffffffff813a5560 D __traceiter_kmalloc\n"
		    "ffffffff813a55d0 T __probestub_sched_process_exit\n"
		    "ffffffff813a5780 t __traceiter_sched_move_numa\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_TP_SCHED_MOVE_NUMA, TK_SUPPORTED, "present",
		   "found in kallsyms (__traceiter_sched_move_numa)", "");
	expect_cap(caps, TK_CAP_TP_SCHED_SWAP_NUMA, TK_UNSUPPORTED, "absent",
		   "sched:sched_swap_numa is not in this kernel (not in kallsyms; tracefs is not "
		   "mounted and there is no kernel BTF)", NULL);
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_TP_KMEM_KMALLOC, TK_UNSUPPORTED, "absent", NULL, NULL);
	expect_cap(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_UNSUPPORTED, "absent",
		   "is in kallsyms (inlined or renamed); there is no kernel BTF to look in", NULL);
	/* no record facts and no tracepoint: the NUMA collector names the first failure */
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_VMSTAT, "bpf.core is unsupported");

	/* and no kallsyms: nowhere to look, so not known to be absent */
	FX(fx_remove(t->fx, "proc/kallsyms"));
	caps = snap(t);
	for (i = 0; i < N(tracepoint_ids); i++)
		expect_cap(caps, tracepoint_ids[i], TK_UNSUPPORTED, "unknown",
			   "cannot tell whether|tracefs is not mounted, there is no kernel BTF and "
			   "kallsyms is unreadable", NULL);
}

/* ---- BTF that is there but is not: the simulation's empty file, garbage ------------- */

static void test_btf_empty_file(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	/* what mount --bind of an empty file over it leaves */
	FX(fx_write(t->fx, "sys/kernel/btf/vmlinux", ""));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "empty",
		   "kernel/btf/vmlinux is empty, and none of the files libbpf tries next exists",
		   "CONFIG_DEBUG_INFO_BTF=y");
	assert_null(strstr(caps->caps[TK_CAP_BTF].reason, "built without"));
	expect_btf_missing(caps);
	/* and tracefs still answers for the tracepoints */
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_SUPPORTED, "present", "found in tracefs",
		   "");
	expect_cap(caps, TK_CAP_TP_MM_MIGRATE_PAGES, TK_SUPPORTED, "present", "found in tracefs",
		   "");
}

static void test_btf_garbage(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_write(t->fx, "sys/kernel/btf/vmlinux", "not BTF, not ELF either\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "unparsable",
		   "kernel/btf/vmlinux holds no BTF libbpf can parse", "CONFIG_DEBUG_INFO_BTF=y");
	expect_btf_missing(caps);
}

/* The CPU-only scope checks the header and parses nothing; it still knows what fails. */
static void test_btf_cpu_scope(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;
	/* a BTF header whose type section runs past the end of the file */
	static const unsigned char truncated[24] = { 0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0,
						     0xff, 0xff, 0, 0 };
	FILE *f;
	char path[4096];

	t->opts.scope = TK_CAPS_CPU;
	FX(fx_write(t->fx, "sys/kernel/btf/vmlinux", ""));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "empty", NULL, NULL);
	/* what cpu.c reads to choose tp_btf and the fork follower */
	expect_cap(caps, TK_CAP_PROG_TP_BTF, TK_UNSUPPORTED, "no", "BTF missing", NULL);
	expect_cap(caps, TK_CAP_CORE, TK_UNSUPPORTED, "no", "BTF missing", NULL);
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_BPF, NULL);
	assert_false(caps->caps[TK_CAP_TP_SCHED_PROCESS_EXEC].present);

	FX(fx_path(t->fx, "sys/kernel/btf/vmlinux", path, sizeof(path)));
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(truncated, 1, sizeof(truncated), f), sizeof(truncated));
	assert_int_equal(fclose(f), 0);
	expect_cap(snap(t), TK_CAP_BTF, TK_UNSUPPORTED, "unparsable", NULL, NULL);

	/* real BTF: supported, not parsed (no probe of this scope reads it) */
	FX(fx_write_btf(t->fx, "sys/kernel/btf/vmlinux", NULL, NULL));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_SUPPORTED, "kernel/btf/vmlinux", "", "");
	assert_false(fx_probe_had_btf);
	assert_false(caps->caps[TK_CAP_PROG_TP_BTF].present);
	assert_false(caps->caps[TK_CAP_CORE].present);
}

/* ---- a vmlinux where libbpf looks next ----------------------------------------------- */

static void test_btf_on_disk(void **state)
{
	static const char *const typedefs[] = { "btf_trace_sched_process_exec",
						"btf_trace_mm_migrate_pages", NULL };
	struct t *t = *state;
	struct tk_caps *caps;
	char path[4096];

	FX(fx_write(t->fx, "sys/kernel/btf/vmlinux", ""));
	/* the first place is there but empty: the next one that holds BTF is taken */
	FX(fx_write(t->fx, "boot/vmlinux-" FX_RELEASE, ""));
	FX(fx_write_btf(t->fx, "usr/lib/debug/boot/vmlinux-" FX_RELEASE, typedefs, NULL));
	FX(fx_path(t->fx, "usr/lib/debug/boot/vmlinux-" FX_RELEASE, path, sizeof(path)));
	FX(fx_remove(t->fx, "proc/self/mountinfo"));
	FX(fx_write(t->fx, "proc/kallsyms", "ffffffff81000000 T _stext\n"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_SUPPORTED, path,
		   "kernel/btf/vmlinux is empty|libbpf's CO-RE relocates against|"
		   "tp_btf and fentry need the kernel's own BTF", "CONFIG_DEBUG_INFO_BTF=y");
	/* CO-RE relocates against it; tp_btf and fentry cannot attach by it */
	assert_int_equal(fx_probe_calls[TK_PROBE_CORE], 1);
	assert_string_equal(fx_probe_btf_path, path);
	assert_false(fx_probe_had_btf);
	expect_cap(caps, TK_CAP_CORE, TK_SUPPORTED, "yes", NULL, NULL);
	expect_cap(caps, TK_CAP_PROG_TP_BTF, TK_UNSUPPORTED, "no",
		   "BTF missing|the kernel's own BTF|serves CO-RE only", NULL);
	expect_cap(caps, TK_CAP_PROG_FENTRY, TK_UNSUPPORTED, "no", "serves CO-RE only", NULL);
	expect_cause(caps, TK_CAP_PROG_FENTRY, TK_CAP_BTF);
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_TP_BTF], 0);
	/* its types answer the look-ups */
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC, TK_SUPPORTED, "present", "found in BTF", "");
	expect_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXIT, TK_UNSUPPORTED, "absent",
		   "not in BTF or kallsyms; tracefs is not mounted", NULL);
	/* raw_tp carries the NUMA collector */
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_BPF, "through raw_tp");
}

static void test_btf_on_disk_unusable(void **state)
{
	struct t *t = *state;
	struct tk_caps *caps;

	FX(fx_remove(t->fx, "sys/kernel/btf"));
	FX(fx_write(t->fx, "boot/vmlinux-" FX_RELEASE, ""));
	FX(fx_write(t->fx, "lib/modules/" FX_RELEASE "/build/vmlinux", "\177ELF garbage"));
	caps = snap(t);
	expect_cap(caps, TK_CAP_BTF, TK_UNSUPPORTED, "absent",
		   "built without CONFIG_DEBUG_INFO_BTF; of the files libbpf tries next|"
		   "/boot/vmlinux-" FX_RELEASE " is empty; /lib/modules/" FX_RELEASE
		   "/build/vmlinux holds no BTF libbpf can parse|and the others are absent",
		   "CONFIG_DEBUG_INFO_BTF=y");
	expect_btf_missing(caps);
}

/* ---- the report: one problem, and its consequences -------------------------------------- */

static const char *render(struct t *t, bool json)
{
	FILE *f;

	free(t->out);
	t->out = NULL;
	f = open_memstream(&t->out, &t->outlen);
	assert_non_null(f);
	if (json)
		assert_int_equal(tk_caps__write_json(&t->caps, f), 0);
	else
		assert_int_equal(tk_caps__write_text(&t->caps, f), 0);
	assert_int_equal(fclose(f), 0);
	return t->out;
}

static void test_nobtf_text(void **state)
{
	struct t *t = *state;
	const char *out, *where, *attention, *btf, *works;

	snap(t);
	out = render(t, false);
	assert_true(fx_longest_line(out, &where) <= 80);
	/* no place of libbpf's is cut at the margin */
	assert_non_null(strstr(out, " /usr/lib/debug/boot/vmlinux-KVER[.debug],"));
	assert_non_null(strstr(out, " /usr/lib/debug/lib/modules/KVER/vmlinux,"));
	/* bpf.btf once; what fails for want of it is named under it, not listed apart */
	attention = strstr(out, "\nNeeds attention (1)\n  unsupported  kernel BTF: absent\n");
	btf = strstr(out, "so also unavailable: CO-RE relocation, tp_btf programs,\n"
			  "                    fentry/fexit programs\n");
	works = strstr(out, "\nWorks (");
	if (!attention || !btf || !works)
		print_error("%s\n", out);
	assert_non_null(attention);
	assert_non_null(btf);
	assert_true(attention < btf && btf < works);
	assert_null(strstr(out, "CO-RE relocation: no"));
	assert_null(strstr(out, "tp_btf programs: no"));
	assert_null(strstr(out, "fentry/fexit programs: no"));
	assert_non_null(strstr(works, "  sched:sched_process_exec         present\n"));
	/* the numa collector's line says why */
	assert_non_null(strstr(out, "  numa   vmstat   bpf.core is unsupported, for want of "
				    "kernel BTF (bpf.btf):"));
}

/* With a vmlinux on disk bpf.btf works: tp_btf and fentry are problems of their own. */
static void test_on_disk_text(void **state)
{
	struct t *t = *state;
	const char *out;

	FX(fx_remove(t->fx, "sys/kernel/btf"));
	FX(fx_write_btf(t->fx, "boot/vmlinux-" FX_RELEASE, NULL, NULL));
	snap(t);
	out = render(t, false);
	assert_non_null(strstr(out, "\nNeeds attention (2)\n  unsupported  tp_btf programs: no\n"));
	assert_non_null(strstr(out, "  unsupported  fentry/fexit programs: no\n"));
	assert_null(strstr(out, "so also unavailable"));
}

static void test_nobtf_json(void **state)
{
	struct t *t = *state;
	const char *out;
	char why[128];

	snap(t);
	out = render(t, true);
	if (fx_json_check(out, t->outlen, why, sizeof(why)))
		fail_msg("invalid JSON (%s):\n%s", why, out);
	assert_non_null(strstr(out, "\"bpf.core\": {\n      \"title\": \"CO-RE relocation\",\n"
				    "      \"status\": \"unsupported\",\n"));
	assert_non_null(strstr(out, "\"needed\": true,\n      \"cause\": \"bpf.btf\"\n"));
	assert_non_null(strstr(out, "\"bpf.btf\": {\n      \"title\": \"kernel BTF\",\n"
				    "      \"status\": \"unsupported\",\n      \"value\": \"absent\",\n"));
	/* an entry failing on its own account has a null cause */
	assert_non_null(strstr(out, "      \"cause\": null\n    },\n    \"bpf.ringbuf\": {\n"));
	/* the summary still counts each entry: bpf.btf, the three that need it, and the
	   stacks iterator, which needs CO-RE */
	assert_non_null(strstr(out, "\"supported\": 36,\n    \"unsupported\": 5,\n"
				    "    \"disabled\": 1"));
}

/* No bpf(2): the same grouping, under bpf.syscall. */
static void test_no_bpf_syscall_groups(void **state)
{
	struct t *t = *state;
	const char *out;

	FX(fx_set_status(t->fx, FX_CAPEFF_ROOT, 2));
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
	expect_cause(snap(t), TK_CAP_RINGBUF, TK_CAP_BPF_SYSCALL);
	expect_cause(&t->caps, TK_CAP_BPF_UNWIND, TK_CAP_BPF_SYSCALL);
	out = render(t, false);
	assert_non_null(strstr(out, "\nNeeds attention (1)\n  unsupported  bpf(2) system call"));
	assert_non_null(strstr(out, "so also unavailable: BPF ring buffer, CO-RE relocation,"));
	assert_null(strstr(out, "BPF ring buffer: no"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_nobtf, teardown)
#define B(fn) cmocka_unit_test_setup_teardown(fn, setup_base, teardown)
		T(test_nobtf_host),
		T(test_nobtf_kallsyms),
		T(test_btf_empty_file),
		B(test_btf_garbage),
		B(test_btf_cpu_scope),
		B(test_btf_on_disk),
		B(test_btf_on_disk_unusable),
		T(test_nobtf_text),
		B(test_on_disk_text),
		T(test_nobtf_json),
		B(test_no_bpf_syscall_groups),
#undef T
#undef B
	};

	return cmocka_run_group_tests_name("caps_btf", tests, NULL, NULL);
}
