// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The process.jit entry of `tracekit caps -p PID` as a user reads it, on a
 * fixture /proc: node (Debian's: a small executable over libnode.so.N, the
 * version read from the library) with and without --perf-basic-prof and
 * --interpreted-frames-native-stack; a JVM without -XX:+PreserveFramePointer,
 * and one that does not catch SIGQUIT (-Xrs: not asked); a process of
 * neither. And the version finder on its own: a URL cut short, a wrong one.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/caps_expect.h"
#include "../lib/fixture.h"
#include "caps/caps.h"
#include "proc/jit_runtime.h"

#define TPID 4545

struct t {
	struct fx *fx;
	struct tk_caps_opts opts;
	struct tk_caps caps;
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
	t->opts.pid = TPID;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	fx_free(t->fx);
	free(t);
	return 0;
}

#define FX(call) assert_int_equal((call), 0)

/* proc/TPID with @maps, its command line @cmd (@cmd_len bytes) and SigCgt @sigcgt. */
static void make_proc(struct t *t, const char *maps, const char *cmd, size_t cmd_len,
		      const char *sigcgt)
{
	char rel[128], path[PATH_MAX];
	FILE *f;

	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_write(t->fx, rel, maps));
	snprintf(rel, sizeof(rel), "proc/%d/status", TPID);
	FX(fx_writef(t->fx, rel, "Name:\tx\nPid:\t%d\nNSpid:\t%d\t7\nUid:\t%u\t%u\t%u\t%u\n"
			"Gid:\t%u\t%u\t%u\t%u\nSigCgt:\t%s\n", TPID, TPID, getuid(), getuid(),
			getuid(), getuid(), getgid(), getgid(), getgid(), getgid(), sigcgt));
	snprintf(rel, sizeof(rel), "proc/%d/comm", TPID);
	FX(fx_write(t->fx, rel, "x\n"));
	snprintf(rel, sizeof(rel), "proc/%d/cmdline", TPID);
	FX(fx_write(t->fx, rel, ""));
	FX(fx_path(t->fx, rel, path, sizeof(path)));
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(cmd, 1, cmd_len, f), cmd_len);
	fclose(f);
}

#define NODE_MAPS                                                                          \
	"55d000000000-55d000001000 r-xp 00001000 08:01 100 /usr/bin/node\n"                   \
	"7f0000000000-7f0001000000 r-xp 00100000 08:01 101 "                                 \
	"/usr/lib/x86_64-linux-gnu/libnode.so.108\n"                                         \
	"7f1000000000-7f1000100000 rwxp 00000000 00:00 0 \n"

/* Debian's node: the release URL in libnode (in its root here), none in the executable. */
static void node_files(struct t *t)
{
	char rel[128], body[4096];

	memset(body, 'x', sizeof(body));
	memcpy(body + 3000, "https://nodejs.org/download/release/v18.20.4/node-v18.20.4.tar.gz",
	       66);
	body[sizeof(body) - 1] = '\0';
	snprintf(rel, sizeof(rel), "proc/%d/root/usr/lib/x86_64-linux-gnu/libnode.so.108", TPID);
	FX(fx_write(t->fx, rel, body));
	snprintf(rel, sizeof(rel), "proc/%d/root/usr/bin/node", TPID);
	FX(fx_write(t->fx, rel, "ELF? no URL here"));
}

static void test_node(void **state)
{
	static const char basic[] = "node\0--perf-basic-prof\0--interpreted_frames_native_stack\0"
				    "app.js\0--perf-prof\0";
	static const char bare[] = "node\0app.js\0--perf-basic-prof\0";
	struct t *t = *state;
	char rel[128];

	node_files(t);
	make_proc(t, NODE_MAPS, basic, sizeof(basic) - 1, "0000000000000000");
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_SUPPORTED, "node v18.20.4",
		   "frame pointers|--perf-basic-prof: named from its perf map|interpreted "
		   "functions named too", "");

	/* its options stop at its script: an argument of the script is not node's */
	make_proc(t, NODE_MAPS, bare, sizeof(bare) - 1, "0000000000000000");
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_UNSUPPORTED, "node v18.20.4",
		   "no --perf-basic-prof nor --perf-prof|Builtins_InterpreterEntryTrampoline",
		   "node --perf-basic-prof --interpreted-frames-native-stack");

	/* its perf map in its root (by its pid there, 7) says it all the same */
	snprintf(rel, sizeof(rel), "proc/%d/root/tmp/perf-7.map", TPID);
	FX(fx_write(t->fx, rel, "7f1000000000 10 JS:*f\n"));
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_SUPPORTED, "node", "named from its perf map",
		   "--interpreted-frames-native-stack");
}

#define JVM_MAPS                                                                           \
	"55d000000000-55d000001000 r-xp 00001000 08:01 200 /usr/lib/jvm/java-17/bin/java\n"   \
	"7f0000000000-7f0001000000 r-xp 00100000 08:01 201 "                                 \
	"/usr/lib/jvm/java-17/lib/server/libjvm.so\n"                                        \
	"7f1000000000-7f1000100000 rwxp 00000000 00:00 0 \n"

static void test_jvm(void **state)
{
	static const char nofp[] = "java\0-Xmx1g\0-cp\0.\0App\0";
	static const char fp[] = "java\0-XX:-PreserveFramePointer\0-XX:+PreserveFramePointer\0"
				 "-Xrs\0App\0";
	struct t *t = *state;

	/* SigCgt with SIGQUIT (bit 2) */
	make_proc(t, JVM_MAPS, nofp, sizeof(nofp) - 1, "0000000101005ccd");
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_UNSUPPORTED, "JVM",
		   "-XX:+PreserveFramePointer is not among its arguments|tracekit asks it|'jcmd 7 "
		   "Compiler.perfmap'", "restart it with -XX:+PreserveFramePointer");

	/* the last of the flags counts; -Xrs: SIGQUIT not caught, no listener: not asked */
	make_proc(t, JVM_MAPS, fp, sizeof(fp) - 1, "0000000101001cc8");
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_UNSUPPORTED, "JVM",
		   "-XX:+PreserveFramePointer is on|does not catch SIGQUIT (-Xrs)|not asked",
		   "without -Xrs|-XX:+DumpPerfMapAtExit");
}

static void test_none(void **state)
{
	static const char cmd[] = "sleep\0" "1\0";
	struct t *t = *state;

	make_proc(t, "55d000000000-55d000001000 r-xp 00001000 08:01 300 /usr/bin/sleep\n", cmd,
		  sizeof(cmd) - 1, "0");
	FX(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps));
	expect_cap(&t->caps, TK_CAP_PROC_JIT, TK_SUPPORTED, "none", "no JVM", "");
}

static void test_node_version(void **state)
{
	static const char ok[] = "\0https://nodejs.org/download/release/v20.20.2/node-v20.tar.gz";
	static const char cut[] = "https://nodejs.org/download/release/v20.20";
	static const char bad[] = "https://nodejs.org/download/release/latest/ "
				  "https://nodejs.org/download/release/v1/x "
				  "https://nodejs.org/download/release/v22.1.0/x";
	char v[16];

	assert_int_equal(tk_jit_runtime__node_version(ok, sizeof(ok) - 1, v, sizeof(v)), 0);
	assert_string_equal(v, "v20.20.2");
	assert_int_equal(tk_jit_runtime__node_version(cut, sizeof(cut) - 1, v, sizeof(v)),
			 -ENOENT);
	/* the ones that are no version are passed over */
	assert_int_equal(tk_jit_runtime__node_version(bad, sizeof(bad) - 1, v, sizeof(v)), 0);
	assert_string_equal(v, "v22.1.0");
	/* no room for it: not found rather than cut */
	assert_int_equal(tk_jit_runtime__node_version(ok, sizeof(ok) - 1, v, 6), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jvm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test(test_node_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
