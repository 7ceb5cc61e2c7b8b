// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The kernel's BTF is parsed once per process (core/kfeat.h): every kfeat
 * helper and the capability snapshot share one parse until the start-up ends
 * (tk_kfeat__btf_release); a holder keeps its copy across the release; after
 * it nothing stays cached, and the offsets found stay known without a parse.
 * Against the running kernel's BTF (skipped where it has none).
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

#include <bpf/btf.h>

#include "../lib/fixture.h"
#include "caps/caps.h"
#include "core/kfeat.h"

#define SYS_BTF "/sys/kernel/btf/vmlinux"

/* The bytes this process has read (read(2) and the like), from /proc/self/io. */
static long long read_bytes(void)
{
	char line[128];
	long long n = -1;
	FILE *f = fopen("/proc/self/io", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %lld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

static long long file_size(const char *path)
{
	FILE *f = fopen(path, "re");
	long long n = 0;
	char buf[65536];
	size_t got;

	while (f && (got = fread(buf, 1, sizeof(buf), f)) > 0)
		n += got;
	if (f)
		fclose(f);
	return n;
}

/* Every test here runs in this order, in one process: the counts add up. */
static void shared_while_starting(void **state)
{
	static const char *const members[] = { "pid", "tgid", "mm" };
	struct tk_caps_opts o = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	struct tk_caps *caps;
	long long r0, size;
	unsigned int n0;
	int offs[3], pid;

	(void)state;
	if (access(SYS_BTF, R_OK))
		skip();
	n0 = tk_kfeat__btf_parses();
	pid = tk_kfeat__member_offset("task_struct", "pid");
	assert_true(pid > 0);
	assert_int_equal(tk_kfeat__btf_parses(), n0 + 1);
	assert_int_equal(tk_kfeat__member_offsets("task_struct", members, offs, 3), 0);
	assert_int_equal(offs[0], pid);
	assert_true(offs[1] > 0 && offs[2] > 0);
	assert_true(tk_kfeat__raw_tp_args("sched_switch") >= 3);
	assert_int_not_equal(tk_kfeat__session_kfunc(), TK_KF_SESSION_UNKNOWN);
	assert_true(tk_kfeat__member_offset("mm_struct", "brk") > 0);

	/* the snapshot of the real /sys (probes answered by the fixture) takes the same */
	size = file_size(SYS_BTF);
	assert_true(size > 100000);
	caps = calloc(1, sizeof(*caps));
	assert_non_null(caps);
	fx_probe_reset();
	r0 = read_bytes();
	assert_int_equal(tk_caps__snapshot_probe(&o, fx_probe, caps), 0);
	/* the file was not read again (the snapshot reads far less of anything else) */
	assert_true(read_bytes() - r0 < size / 2);
	assert_int_equal(tk_caps__status(caps, TK_CAP_BTF), TK_SUPPORTED);
	free(caps);

	assert_int_equal(tk_kfeat__btf_parses(), n0 + 1);
}

static void held_across_release(void **state)
{
	struct btf *a, *b;
	unsigned int n0;

	(void)state;
	if (access(SYS_BTF, R_OK))
		skip();
	a = tk_kfeat__btf_get();
	assert_non_null(a);
	b = tk_kfeat__btf_get();
	assert_ptr_equal(a, b);
	tk_kfeat__btf_put(b);
	n0 = tk_kfeat__btf_parses();
	tk_kfeat__btf_release();
	/* still held: still whole (ASan would see a use after free) */
	assert_true(btf__type_cnt(a) > 1000);
	assert_true(btf__find_by_name_kind(a, "task_struct", BTF_KIND_STRUCT) > 0);
	tk_kfeat__btf_put(a);	/* the last: freed (LeakSanitizer would see it kept) */
	assert_int_equal(tk_kfeat__btf_parses(), n0);
}

static void nothing_kept_after_release(void **state)
{
	struct btf *a, *b;
	unsigned int n0;

	(void)state;
	if (access(SYS_BTF, R_OK))
		skip();
	n0 = tk_kfeat__btf_parses();
	/* known before the release: no parse */
	assert_true(tk_kfeat__member_offset("task_struct", "tgid") > 0);
	assert_true(tk_kfeat__raw_tp_args("sched_switch") >= 3);
	assert_int_equal(tk_kfeat__btf_parses(), n0);
	/* not known: parsed, and let go after */
	assert_true(tk_kfeat__member_offset("task_struct", "stack") > 0);
	assert_int_equal(tk_kfeat__btf_parses(), n0 + 1);
	a = tk_kfeat__btf_get();
	assert_non_null(a);
	assert_int_equal(tk_kfeat__btf_parses(), n0 + 2);
	b = tk_kfeat__btf_get();	/* shared while one holds it */
	assert_ptr_equal(a, b);
	assert_int_equal(tk_kfeat__btf_parses(), n0 + 2);
	tk_kfeat__btf_put(b);
	tk_kfeat__btf_put(a);
	assert_true(tk_kfeat__member_offset("task_struct", "stack") > 0);	/* known now */
	assert_int_equal(tk_kfeat__btf_parses(), n0 + 2);
	tk_kfeat__btf_put(NULL);
	tk_kfeat__btf_release();	/* twice: harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_while_starting),
		cmocka_unit_test(held_across_release),
		cmocka_unit_test(nothing_kept_after_release),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
