// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Whole stacks through real JIT code, as a user sees them with tracekit cpu
 * on both backends, read back with go tool pprof:
 *
 * - Node (whichever `node` is installed: Debian's 18, or another) running
 *   tests/workloads/jit_chain.js with --perf-basic-prof and inlining off, in a
 *   mount namespace with a /tmp of its own (as in a container): its perf map
 *   is reachable only while it lives, so it must be read then. At least 95 %
 *   of the JS leaf's samples must carry its JS caller and reach the native
 *   start (_start, or a thread's start).
 * - Node with --perf-prof: its frames named from the jitdump it writes in its
 *   working directory (its own /tmp here), no perf map at all.
 * - A JVM (tests/workloads/JitChain.java, compiled here; -XX:+PreserveFramePointer,
 *   the chain not inlined) that tracekit asks for its perf map itself: at
 *   least 95 % of the Java leaf's samples carry its caller and reach the
 *   thread's start.
 * - What must not be done to a JVM: one with -Xrs (SIGQUIT would end it)
 *   whose attach socket is gone is not signalled and lives on; one with
 *   -XX:+DisableAttachMechanism is not signalled (it would print a thread
 *   dump); one of uid 65534 is asked as uid 65534 (its perf map is its
 *   user's); and one in a user namespace where root is not mapped, with a
 *   /tmp of its own, is asked as its user — as root the trigger file would
 *   be of an unknown owner to it, ignored, and SIGQUIT would print a thread
 *   dump — and everything in its /tmp stays its user's; and one that is pid 1
 *   in namespaces of its own is asked by that pid, in its own /tmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
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

#include "need.h"
#include "spawn.h"

#define NOBODY 65534
#define MIN_LEAF 150		/* samples of the leaf to judge a share by */

static char tmpdir[] = "/tmp/tk-jitrt.XXXXXX";
static char classes[600];	/* JitChain.class, readable by everyone */
static char script[4096];	/* jit_chain.js, absolute */
static char out[1 << 16];

static bool have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return !system(cmd);
}

/* ---- reading a profile back with go tool pprof --------------------------------------- */

#define MAX_FRAMES 200

struct trace {
	long n;
	int nr;
	char *f[MAX_FRAMES];	/* leaf first */
};

/* @name is function @fn of a runtime: "JS:*fn /x.js:1:2", "LazyCompile:~fn x", "long C.fn(long)" */
static bool is_fn(const char *name, const char *fn)
{
	size_t n = strlen(fn);
	const char *p;

	for (p = strstr(name, fn); p; p = strstr(p + 1, fn)) {
		char before = p == name ? ':' : p[-1], after = p[n];

		if (strchr(":~^+*.", before) && (after == ' ' || after == '(' || after == '\0'))
			return true;
	}
	return false;
}

static bool is_root(const char *name)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "start_thread",
					     "clone3", "clone", "__clone" };
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(name, roots[i]))
			return true;
	return false;
}

struct chain {
	const char *leaf, *caller;
	long leaf_n, whole_n;
};

static void judge(const struct trace *t, struct chain *c)
{
	if (!t->nr || !is_fn(t->f[0], c->leaf))
		return;
	c->leaf_n += t->n;
	if (t->nr >= 3 && is_fn(t->f[1], c->caller) && is_root(t->f[t->nr - 1]))
		c->whole_n += t->n;
}

/* Count @pb's samples whose leaf is c->leaf, and of those the ones with the whole chain. */
static void read_chain(const char *pb, struct chain *c)
{
	static char line[8192];
	struct trace t = { 0 };
	char cmd[1024];
	bool in = false;
	FILE *f;
	int i;

	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -traces -sample_index=samples "
		 "%s 2>/dev/null", pb);
	f = popen(cmd, "r");
	assert_non_null(f);
	c->leaf_n = c->whole_n = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *e = line + strlen(line);

		while (e > line && (e[-1] == '\n' || e[-1] == ' '))
			*--e = '\0';
		if (!strncmp(line, "-----------+", 12)) {
			judge(&t, c);
			for (i = 0; i < t.nr; i++)
				free(t.f[i]);
			memset(&t, 0, sizeof(t));
			in = true;
			continue;
		}
		if (!in || !*line)
			continue;
		while (*p == ' ')
			p++;
		/* a label ("comm:  java"), a sample's first frame ("  12   fn"), or a frame */
		if (strspn(p, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(strchr(p, ':') ?
			   strchr(p, ':') - p : -1) && strstr(p, ":  ") == strchr(p, ':'))
			continue;
		if (*p >= '0' && *p <= '9' && !t.nr) {
			t.n = strtol(p, &p, 10);
			while (*p == ' ')
				p++;
		}
		if (t.nr < MAX_FRAMES)
			t.f[t.nr++] = strdup(p);
	}
	judge(&t, c);
	for (i = 0; i < t.nr; i++)
		free(t.f[i]);
	pclose(f);
}

/* The loss counter @name of @pb, or -1 when it has none. */
static long pprof_loss(const char *pb, const char *name)
{
	char cmd[1024], *p, key[128];

	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -comments %s 2>&1", pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	snprintf(key, sizeof(key), "lost: %s=", name);
	p = strstr(out, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static bool pprof_comment(const char *pb, const char *text)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -comments %s 2>&1", pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	return strstr(out, text) != NULL;
}

/* The whole-chain share of @pb's leaf samples, at least MIN_LEAF of them. */
static double chain_share(const char *what, const char *pb, const char *leaf, const char *caller)
{
	struct chain c = { .leaf = leaf, .caller = caller };

	read_chain(pb, &c);
	print_message("%s: %ld samples in %s, %ld of them with %s and the start below\n", what,
		      c.leaf_n, leaf, c.whole_n, caller);
	assert_true(c.leaf_n >= MIN_LEAF);
	return (double)c.whole_n / c.leaf_n;
}

/* ---- running tracekit ---------------------------------------------------------------- */

static const char *path_in_tmp(const char *name)
{
	static char buf[8][700];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

/* build/tracekit @args (a shell word list), its stderr into @err_file; the exit status. */
static int tracekit(const char *args, const char *err_file)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "%s/tracekit %s 2>%s", tk_test_build_dir(), args, err_file);
	return tk_test_capture(cmd, out, sizeof(out));
}

static bool file_has(const char *path, const char *text)
{
	static char buf[1 << 16];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, text) != NULL;
}

/* ---- Node ---------------------------------------------------------------------------- */

#define NODE_FLAGS "--interpreted-frames-native-stack --no-turbo-inlining"

static void need_node(void)
{
	NEED_ROOT();
	NEED_DEP(have("node"), "node (Debian's nodejs)\n");
	NEED_DEP(have("go"), "go (go tool pprof)\n");
}

/*
 * node with @how (--perf-basic-prof or --perf-prof) as a command, in a mount
 * namespace whose /tmp is a tmpfs of its own (its working directory too).
 */
static void check_node(const char *backend, const char *how, const char *pb)
{
	const char *err = path_in_tmp("node.err");
	char args[8192];
	int rc;

	snprintf(args, sizeof(args), "cpu --backend %s -F 499 --user-only -o %s -- unshare "
		 "--mount --propagation private sh -c 'mount -t tmpfs none /tmp && cd /tmp && "
		 "exec node %s " NODE_FLAGS " %s 5000' >/dev/null", backend, pb, how, script);
	rc = tracekit(args, err);
	assert_int_equal(rc, 0);
	/* every output carries the JIT counter */
	assert_true(pprof_loss(pb, "jit_unnamed_frames") >= 0);
}

static void node_perf_map(const char *backend)
{
	char name[64], pb[700];

	snprintf(name, sizeof(name), "node-%s.pb.gz", backend);
	snprintf(pb, sizeof(pb), "%s", path_in_tmp(name));

	need_node();
	check_node(backend, "--perf-basic-prof", pb);
	assert_true(chain_share(backend, pb, "leafHot", "handler") >= 0.95);
}

static void test_node_perf_map_bpf(void **state)
{
	node_perf_map("bpf");
}

static void test_node_perf_map_perf(void **state)
{
	node_perf_map("perf");
}

/*
 * --perf-prof: no perf map, a jitdump in its working directory (V8 buffers
 * it and writes the rest as it exits: here in our namespaces, so what it
 * wrote last is still read then).
 */
static void node_jitdump(const char *backend)
{
	char args[8192], name[64], pb[700], err[700];

	snprintf(name, sizeof(name), "nodej-%s.pb.gz", backend);
	snprintf(pb, sizeof(pb), "%s", path_in_tmp(name));
	snprintf(name, sizeof(name), "nodej-%s.err", backend);
	snprintf(err, sizeof(err), "%s", path_in_tmp(name));

	need_node();
	snprintf(args, sizeof(args), "cpu --backend %s -F 499 --user-only -o %s -- sh -c 'cd %s "
		 "&& exec node --perf-prof " NODE_FLAGS " %s 5000' >/dev/null", backend, pb,
		 tmpdir, script);
	assert_int_equal(tracekit(args, err), 0);
	assert_true(pprof_loss(pb, "jit_unnamed_frames") >= 0);
	assert_true(pprof_comment(pb, "perf maps: 0 read"));
	assert_false(pprof_comment(pb, "jitdumps: 0 read"));
	assert_true(chain_share(backend, pb, "leafHot", "handler") >= 0.95);
}

static void test_node_jitdump_bpf(void **state)
{
	node_jitdump("bpf");
}

static void test_node_jitdump_perf(void **state)
{
	node_jitdump("perf");
}

/* ---- Java ---------------------------------------------------------------------------- */

#define JAVA_FLAGS "-XX:+PreserveFramePointer -XX:CompileCommand=quiet " \
		   "-XX:CompileCommand=dontinline,JitChain::*"

/* javac once: JitChain.class in a directory everyone may read (the JVMs of uid 65534). */
static void need_java(void)
{
	char cmd[2048];

	NEED_ROOT();
	NEED_DEP(have("java") && have("javac"), "java and javac (openjdk-17-jdk-headless)\n");
	NEED_DEP(have("go"), "go (go tool pprof)\n");
	if (classes[0])
		return;
	snprintf(classes, sizeof(classes), "%s/classes", tmpdir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && javac -d %s tests/workloads/JitChain.java && "
		 "chmod -R a+rX %s", classes, classes, tmpdir);
	assert_int_equal(system(cmd), 0);
}

static void java_command(const char *backend)
{
	const char *pb = path_in_tmp("java.pb.gz"), *err = path_in_tmp("java.err");
	char args[4096];

	need_java();
	snprintf(args, sizeof(args), "cpu --backend %s -F 499 --user-only -o %s -- java "
		 JAVA_FLAGS " -cp %s JitChain 4000 >/dev/null", backend, pb, classes);
	assert_int_equal(tracekit(args, err), 0);
	/* said on stderr, and done */
	assert_true(file_has(err, "asked JVM"));
	assert_true(chain_share(backend, pb, "leafHot", "handler") >= 0.95);
}

static void test_java_bpf(void **state)
{
	java_command("bpf");
}

static void test_java_perf(void **state)
{
	java_command("perf");
}

/* A JVM (@prefix: how it is started, NULL: as is) with @opt, stdout to @log; its pid. */
static pid_t start_java(const char *prefix, const char *opt, const char *log, int ms)
{
	char cmd[4096];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		snprintf(cmd, sizeof(cmd), "cd %s && exec %s java " JAVA_FLAGS
			 " %s -cp . JitChain %d >%s 2>&1", classes, prefix ? prefix : "", opt, ms,
			 log);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The pid of the java process @pid is or runs (through sh, setpriv, unshare). */
static pid_t java_pid(pid_t pid)
{
	char cmd[128];
	int i;

	for (i = 0; i < 200; i++) {
		char exe[64], target[512];
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		n = readlink(exe, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', strstr(target, "/java")))
			return pid;
		snprintf(cmd, sizeof(cmd), "pgrep -P %d -x java 2>/dev/null || "
			 "pgrep -P \"$(pgrep -P %d)\" -x java 2>/dev/null", pid, pid);
		if (!tk_test_capture(cmd, out, sizeof(out)) && atoi(out) > 0)
			return atoi(out);
		usleep(20000);
	}
	fail_msg("no java under %d", pid);
	return -1;
}

static bool alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

static void stop_java(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The JVM's socket and perf map paths under its root, by its pid in its namespace. */
static void jvm_paths(pid_t jpid, char *sock, char *map, size_t sz)
{
	char st[64], *p;

	snprintf(st, sizeof(st), "grep NSpid /proc/%d/status", jpid);
	assert_int_equal(tk_test_capture(st, out, sizeof(out)), 0);
	p = strrchr(out, '\t');
	assert_non_null(p);
	snprintf(sock, sz, "/proc/%d/root/tmp/.java_pid%d", jpid, atoi(p + 1));
	snprintf(map, sz, "/proc/%d/root/tmp/perf-%d.map", jpid, atoi(p + 1));
}

/* tracekit cpu -p @jpid for 2 s; its stderr into @err. */
static void capture_pid(pid_t jpid, const char *pb, const char *err)
{
	char args[2048];

	snprintf(args, sizeof(args), "cpu -F 499 --user-only -d 2 -p %d -o %s", jpid, pb);
	assert_int_equal(tracekit(args, err), 0);
}

/*
 * -Xrs: SIGQUIT's default action (a core dump) would end it. Its attach
 * listener starts with it then; with that socket gone, asking would take a
 * SIGQUIT: it is not sent.
 */
static void test_java_xrs(void **state)
{
	const char *log = path_in_tmp("xrs.log"), *err = path_in_tmp("xrs.err");
	char sock[128], map[128];
	pid_t pid, jpid;
	int i;

	need_java();
	pid = start_java(NULL, "-Xrs", log, 8000);
	jpid = java_pid(pid);
	jvm_paths(jpid, sock, map, sizeof(sock));
	for (i = 0; i < 300 && access(sock, F_OK); i++)
		usleep(10000);
	assert_int_equal(unlink(sock), 0);
	unlink(map);
	capture_pid(jpid, path_in_tmp("xrs.pb.gz"), err);
	usleep(300000);
	assert_true(alive(pid));
	assert_true(file_has(err, "does not catch SIGQUIT"));
	assert_int_equal(access(map, F_OK), -1);
	stop_java(pid);
}

/*
 * -XX:+DisableAttachMechanism: SIGQUIT would print a thread dump; not sent.
 * Said by its performance data, or, without any (-XX:-UsePerfData), by its
 * command line.
 */
static void check_attach_disabled(const char *opts)
{
	const char *log = path_in_tmp("dis.log"), *err = path_in_tmp("dis.err");
	char sock[128], map[128];
	pid_t pid, jpid;

	need_java();
	pid = start_java(NULL, opts, log, 8000);
	jpid = java_pid(pid);
	jvm_paths(jpid, sock, map, sizeof(sock));
	usleep(500000);
	capture_pid(jpid, path_in_tmp("dis.pb.gz"), err);
	usleep(300000);
	assert_true(alive(pid));
	assert_true(file_has(err, "attach is disabled"));
	assert_false(file_has(log, "Full thread dump"));
	assert_int_equal(access(map, F_OK), -1);
	stop_java(pid);
}

static void test_java_attach_disabled(void **state)
{
	check_attach_disabled("-XX:+DisableAttachMechanism");
}

static void test_java_attach_disabled_no_perf_data(void **state)
{
	check_attach_disabled("-XX:-UsePerfData -XX:+DisableAttachMechanism");
}

/* A JVM of uid 65534: asked as 65534, its perf map is 65534's, its code named. */
static void test_java_nobody(void **state)
{
	const char *log = path_in_tmp("nobody.log"), *err = path_in_tmp("nobody.err");
	const char *pb = path_in_tmp("nobody.pb.gz");
	char sock[128], map[128];
	struct stat st;
	pid_t pid, jpid;

	need_java();
	pid = start_java("setpriv --reuid=65534 --regid=65534 --clear-groups", "", log, 8000);
	jpid = java_pid(pid);
	jvm_paths(jpid, sock, map, sizeof(sock));
	unlink(map);
	usleep(500000);
	capture_pid(jpid, pb, err);
	assert_true(file_has(err, "asked JVM"));
	assert_int_equal(stat(map, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(lstat(sock, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	stop_java(pid);
	unlink(map);
	assert_true(chain_share("nobody", pb, "leafHot", "handler") >= 0.95);
}

/*
 * A JVM of uid 65534 in a user namespace where it is root and host root is
 * no one, with a /tmp of its own: asked as 65534 it sees its own root's
 * trigger; everything in its /tmp is 65534's, and it printed no thread dump.
 */
static void test_java_userns(void **state)
{
	const char *log = path_in_tmp("userns.log"), *err = path_in_tmp("userns.err");
	const char *pb = path_in_tmp("userns.pb.gz");
	char dir[128], sock[128], map[128], path[512];
	struct dirent *de;
	struct stat st;
	pid_t pid, jpid;
	int files = 0;
	DIR *d;

	need_java();
	pid = start_java("setpriv --reuid=65534 --regid=65534 --clear-groups unshare --user "
			 "--map-root-user --mount --propagation private sh -c 'mount -t tmpfs "
			 "none /tmp && mkdir /tmp/c && cp JitChain.class /tmp/c && cd /tmp/c && "
			 "exec \"$0\" \"$@\"'", "", log, 8000);
	jpid = java_pid(pid);
	jvm_paths(jpid, sock, map, sizeof(sock));
	usleep(500000);
	capture_pid(jpid, pb, err);
	assert_true(file_has(err, "asked JVM"));
	assert_false(file_has(log, "Full thread dump"));
	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp", jpid);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		assert_int_equal(lstat(path, &st), 0);
		print_message("its /tmp: %s uid %u\n", de->d_name, st.st_uid);
		assert_int_equal(st.st_uid, NOBODY);
		files++;
	}
	closedir(d);
	assert_int_equal(stat(map, &st), 0);
	assert_true(files >= 2);
	stop_java(pid);
	assert_true(chain_share("userns", pb, "leafHot", "handler") >= 0.95);
}

/*
 * A JVM that is pid 1 in pid and mount namespaces of its own, with a /tmp
 * of its own: asked by its pid there, in its /tmp (the host's has no
 * /tmp/perf-1.map of it).
 */
static void test_java_pid_namespace(void **state)
{
	const char *log = path_in_tmp("pidns.log"), *err = path_in_tmp("pidns.err");
	const char *pb = path_in_tmp("pidns.pb.gz");
	char sock[128], map[128];
	struct stat st;
	pid_t pid, jpid;

	need_java();
	pid = start_java("unshare --pid --fork --mount --propagation private sh -c 'mount -t "
			 "tmpfs none /tmp && mkdir /tmp/c && cp JitChain.class /tmp/c && cd "
			 "/tmp/c && exec \"$0\" \"$@\"'", "", log, 8000);
	jpid = java_pid(pid);
	jvm_paths(jpid, sock, map, sizeof(sock));
	assert_non_null(strstr(map, "/perf-1.map"));
	usleep(500000);
	capture_pid(jpid, pb, err);
	assert_true(file_has(err, "'jcmd 1 Compiler.perfmap'"));
	assert_int_equal(stat(map, &st), 0);
	kill(jpid, SIGKILL);
	stop_java(pid);
	assert_true(chain_share("pid namespace", pb, "leafHot", "handler") >= 0.95);
}

/* `tracekit caps -p PID` of a running JVM and node: the runtime, its version, what it lacks. */
static void test_caps(void **state)
{
	const char *log = path_in_tmp("caps.log");
	char args[1024], err[700], sock[128], map[128];
	pid_t pid, jpid, npid;

	need_java();
	need_node();
	/* a JVM without -XX:+PreserveFramePointer (after JAVA_FLAGS' own: the last counts) */
	pid = start_java(NULL, "-XX:-PreserveFramePointer", log, 8000);
	jpid = java_pid(pid);
	usleep(800000);
	snprintf(err, sizeof(err), "%s", path_in_tmp("caps.err"));
	snprintf(args, sizeof(args), "caps -p %d", jpid);
	assert_int_equal(tracekit(args, err), 0);
	print_message("%s", strstr(out, "JIT runtime") ? strstr(out, "JIT runtime") : out);
	assert_non_null(strstr(out, "JIT runtime: JVM 17"));
	assert_non_null(strstr(out, "restart it with -XX:+PreserveFramePointer"));
	/* it changes nothing: no attach listener was started, no perf map written */
	assert_true(alive(pid));
	jvm_paths(jpid, sock, map, sizeof(sock));
	assert_int_equal(access(sock, F_OK), -1);
	assert_int_equal(access(map, F_OK), -1);
	stop_java(pid);

	npid = fork();
	assert_true(npid >= 0);
	if (!npid) {
		/* in the test's directory: --perf-basic-prof writes an isolate-*.log in its own */
		if (!freopen("/dev/null", "w", stdout) || chdir(tmpdir))
			_exit(127);
		execlp("node", "node", "--perf-basic-prof", script, "5000", (char *)NULL);
		_exit(127);
	}
	usleep(800000);
	snprintf(args, sizeof(args), "caps --json -p %d", npid);
	assert_int_equal(tracekit(args, err), 0);
	assert_non_null(strstr(out, "\"process.jit\""));
	assert_non_null(strstr(out, "\"value\": \"node v"));
	assert_non_null(strstr(out, "--perf-basic-prof: named from its perf map"));
	assert_non_null(strstr(out, "--interpreted-frames-native-stack"));
	kill(npid, SIGKILL);
	waitpid(npid, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_perf_map_bpf),
		cmocka_unit_test(test_node_perf_map_perf),
		cmocka_unit_test(test_node_jitdump_bpf),
		cmocka_unit_test(test_node_jitdump_perf),
		cmocka_unit_test(test_java_bpf),
		cmocka_unit_test(test_java_perf),
		cmocka_unit_test(test_java_xrs),
		cmocka_unit_test(test_java_attach_disabled),
		cmocka_unit_test(test_java_attach_disabled_no_perf_data),
		cmocka_unit_test(test_java_nobody),
		cmocka_unit_test(test_java_userns),
		cmocka_unit_test(test_java_pid_namespace),
		cmocka_unit_test(test_caps),
	};
	int ret;

	if (!mkdtemp(tmpdir) || !realpath("tests/workloads/jit_chain.js", script))
		return 1;
	chmod(tmpdir, 0755);
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
