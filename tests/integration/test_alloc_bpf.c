// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF allocation backend on the real kernel, through the session API:
 * alloc_leak (leak_site leaks, churn frees at once) is attached with -p, and
 * the profile must put the bytes in use on leak_site, with frame 0 the
 * leaking function itself (the return address into the allocator's caller).
 * Also: full mode, growth mode, the rate measurement before attaching, a
 * process that execs (what its old image held is released), and a process
 * in a container whose libc is another file at the host's libc's path.
 * Skips with the reason when not root or when the kernel has no uprobes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "alloc/alloc_int.h"
#include "alloc/alloc_rate.h"
#include "core/kfeat.h"
#include "profile/profile.h"
#include "spawn.h"
#include "caps/caps.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

static struct tk_caps caps;

static void need(enum tk_cap_id id, bool root)
{
	if (root && geteuid() != 0) {
		print_message("skip: this test needs root\n");
		skip();
	}
	if (caps.caps[id].status != TK_SUPPORTED) {
		print_message("skip: %s: %s\n", tk_cap__title(id), caps.caps[id].reason);
		skip();
	}
}

/*
 * Workload @name with @args (NULL-terminated, argv[0] not included), stdout
 * to /dev/null; its pid once @settle_us have passed (past ld.so, at least).
 */
static pid_t start_workload(const char *name, const char *const args[], useconds_t settle_us)
{
	char path[512];
	char *argv[16] = { path };
	pid_t pid;
	int i;

	snprintf(path, sizeof(path), "%s/workloads/%s", tk_test_build_dir(), name);
	if (access(path, X_OK))
		fail_msg("%s missing: build it first", path);
	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = (char *)args[i];
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		freopen("/dev/null", "w", stdout);
		execv(path, argv);
		_exit(127);
	}
	usleep(settle_us);
	return pid;
}

/* alloc_leak for @secs seconds leaking 32 MiB in 64 KiB blocks; its pid */
static pid_t start_leak(int secs)
{
	char d[16];

	snprintf(d, sizeof(d), "%d", secs);
	return start_workload("alloc_leak", (const char *[]){ "-d", d, "--leak-bytes", "33554432",
			      "--leak-block", "65536", NULL }, 200000);
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run a session on @pid for @secs; the folded profile's text into @out. */
static uint64_t sample_bytes;	/* for run(); 0: the default */
static int go_signal;		/* for run(): sent to the process once attached; 0: none */
/* the last run's loss counters */
static struct {
	char name[64];
	uint64_t count;
} losses[TK_PROFILE_MAX_LOSSES];
static int nr_losses;

static uint64_t loss(const char *name)
{
	int i;

	for (i = 0; i < nr_losses; i++)
		if (!strcmp(losses[i].name, name))
			return losses[i].count;
	fail_msg("no loss counter %s", name);
	return 0;
}

/* A session on @pid, attached; what it hooks into @describe. */
static struct tk_alloc *start(pid_t pid, enum tk_alloc_mode mode, char *describe,
			      size_t describe_sz)
{
	struct tk_alloc_opts o = { .sz = sizeof(o), .mode = mode, .pid = pid,
				   .backend = TK_BACKEND_BPF, .sample_bytes = sample_bytes };
	struct tk_caps_opts co = { .sz = sizeof(co), .pid = pid };
	static struct tk_caps pcaps;
	struct tk_alloc *a;
	char why[512] = "";

	assert_int_equal(tk_caps__snapshot(&co, &pcaps), 0);
	if (tk_alloc__open(&o, &pcaps, &a, why, sizeof(why)))
		fail_msg("open: %s", why);
	if (tk_alloc__start(a, why, sizeof(why)))
		fail_msg("start: %s", why);
	/* attached: a workload that waits for it may go on */
	if (go_signal)
		kill(pid, go_signal);
	snprintf(describe, describe_sz, "%s", tk_alloc__describe(a));
	return a;
}

/* Poll @a for @secs more, finish it; its folded profile into @out. */
static void finish(struct tk_alloc *a, double secs, struct tk_alloc_stats *st, char *out,
		   size_t out_sz)
{
	struct tk_profile *p = NULL;
	double t0;
	FILE *f;

	for (t0 = now_s(); now_s() - t0 < secs;)
		assert_int_equal(tk_alloc__poll(a, 100), 0);
	assert_int_equal(tk_alloc__finish(a, 0, &p), 0);
	tk_alloc__stats(a, st);
	for (nr_losses = 0; nr_losses < p->nr_losses; nr_losses++) {
		snprintf(losses[nr_losses].name, sizeof(losses[nr_losses].name), "%s",
			 p->losses[nr_losses].name);
		losses[nr_losses].count = p->losses[nr_losses].count;
	}
	f = fmemopen(out, out_sz, "w");
	assert_non_null(f);
	assert_int_equal(tk_profile__write_folded(p, f), 0);
	fclose(f);
	tk_profile__free(p);
	tk_alloc__free(a);
}

static void run(pid_t pid, enum tk_alloc_mode mode, double secs, struct tk_alloc_stats *st,
		char *out, size_t out_sz, char *describe, size_t describe_sz)
{
	finish(start(pid, mode, describe, describe_sz), secs, st, out, out_sz);
}

/* Sum of the folded lines whose last frame is @leaf. */
static unsigned long leaf_sum(const char *folded, const char *leaf)
{
	const char *line = folded, *end, *sp, *semi;
	unsigned long sum = 0;
	size_t n = strlen(leaf);

	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		sp = memrchr(line, ' ', end - line);
		if (!sp)
			continue;
		semi = memrchr(line, ';', sp - line);
		semi = semi ? semi + 1 : line;
		if ((size_t)(sp - semi) == n && !memcmp(semi, leaf, n))
			sum += strtoul(sp + 1, NULL, 10);
	}
	return sum;
}

static char folded[1 << 20];

/*
 * A --wait-signal workload @pid: attach (sampling every @sbytes; 0: the
 * default), send it SIGUSR1, capture @secs into the global folded, stop it.
 */
static void run_signalled(pid_t pid, enum tk_alloc_mode mode, uint64_t sbytes, double secs,
			  struct tk_alloc_stats *st, char *describe, size_t describe_sz)
{
	sample_bytes = sbytes;
	go_signal = SIGUSR1;
	run(pid, mode, secs, st, folded, sizeof(folded), describe, describe_sz);
	go_signal = 0;
	sample_bytes = 0;
	stop(pid);
}

static void test_sampled(void **state)
{
	struct tk_alloc_stats st;
	char describe[512];
	unsigned long leak;
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	pid = start_leak(5);
	run(pid, TK_ALLOC_MODE_SAMPLED, 2.5, &st, folded, sizeof(folded), describe,
	    sizeof(describe));
	stop(pid);
	print_message("%s\n", describe);
	assert_non_null(strstr(describe, "malloc"));
	/* run as on an older kernel (tests/run.sh): no sessions, no cookies */
	if (getenv("TK_ALLOC_NO_SESSIONS"))
		assert_non_null(strstr(describe, "uprobes and uretprobes"));
	assert_true(st.calls > 1000);
	assert_true(st.allocs > 0);
	leak = leaf_sum(folded, "leak_site");
	/* ~16 MiB leaked in 2.5 s of 5: sampled at 512 KiB, allow a wide margin */
	assert_true(leak > 4u << 20);
	assert_true(leak < 40u << 20);
	assert_true(leaf_sum(folded, "churn") < leak / 4);
}

static void test_full(void **state)
{
	struct tk_alloc_stats st;
	char describe[512];
	unsigned long leak;
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	pid = start_leak(4);
	run(pid, TK_ALLOC_MODE_FULL, 1.5, &st, folded, sizeof(folded), describe,
	    sizeof(describe));
	stop(pid);
	leak = leaf_sum(folded, "leak_site");
	/* every block: whole multiples of 64 KiB */
	assert_true(leak >= 64u << 10);
	assert_int_equal(leak % (64u << 10), 0);
	assert_int_equal(leaf_sum(folded, "churn"), 0);
	assert_true(st.frees > 0);
	assert_true(st.allocs >= st.frees);
}

static void test_growth(void **state)
{
	struct tk_alloc_stats st;
	char describe[512];
	pid_t pid;

	need(TK_CAP_PROG_RAW_TP, true);
	pid = start_leak(4);
	run(pid, TK_ALLOC_MODE_GROWTH, 1.5, &st, folded, sizeof(folded), describe,
	    sizeof(describe));
	stop(pid);
	/* leak_site's memset faults its blocks in */
	assert_true(st.growth_events > 100);
	assert_true(leaf_sum(folded, "[page fault]") > 1u << 20);
	/* by the source this kernel has (TK_KFEAT_OFF=page_fault_user: arm64's, the perf event) */
	print_message("  %s\n", describe);
	assert_non_null(strstr(describe, tk_kfeat__page_fault_user() ?
						 "page faults by the raw tracepoint page_fault_user" :
						 "page faults by the software perf event page-faults"));
}

static void test_rate(void **state)
{
	struct tk_alloc_rate r;
	char why[512] = "";
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	pid = start_leak(4);
	if (tk_alloc__measure_rate(pid, NULL, 500, &r, why, sizeof(why)))
		fail_msg("measure_rate: %s", why);
	stop(pid);
	print_message("allocs %.0f/s frees %.0f/s%s, uprobe %.0f ns, slowdown sampled %.2f "
		      "full %.2f\n", r.alloc_per_s, r.free_per_s,
		      r.lower_bound ? " (lower bounds)" : "", r.uprobe_ns,
		      r.slowdown[TK_ALLOC_MODE_SAMPLED], r.slowdown[TK_ALLOC_MODE_FULL]);
	assert_true(r.alloc_calls > 100);
	assert_true(r.free_calls > 100);
	assert_true(r.uprobe_ns > 50 && r.uprobe_ns < 1e6);
	assert_true(r.slowdown[TK_ALLOC_MODE_FULL] > r.slowdown[TK_ALLOC_MODE_SAMPLED] * 0.99);
	assert_true(r.slowdown[TK_ALLOC_MODE_GROWTH] == 0);
}

/*
 * a = realloc(a, n); b = realloc(b, n) from one frame (alloc_realloc): the
 * second is a call of its own, not a tail call of the first; 400 blocks of
 * 64 KiB stay in use at realloc_site, and nothing of what they grew from.
 */
static void realloc_pairs(enum tk_alloc_mode mode, uint64_t sbytes, double tolerance)
{
	const unsigned long held = 2ul * 200 * 65536;
	struct tk_alloc_stats st;
	char describe[512];
	unsigned long got;
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	/* it grows its blocks once it gets SIGUSR1 */
	pid = start_workload("alloc_realloc", (const char *[]){ "-d", "3", "--wait-signal", NULL },
			     300000);
	run_signalled(pid, mode, sbytes, 2.5, &st, describe, sizeof(describe));
	got = leaf_sum(folded, "realloc_site");
	print_message("%s: %lu bytes in use at realloc_site, %lu held; live_map_full %" PRIu64
		      ", replaced_live_objects %" PRIu64 "\n",
		      mode == TK_ALLOC_MODE_FULL ? "full" : "sampled", got, held,
		      loss("live_map_full"), loss("replaced_live_objects"));
	if (got < held * (1 - tolerance) || got > held * (1 + tolerance))
		fail_msg("realloc_site %lu bytes in use, want %lu (± %.0f %%)", got, held,
			 100 * tolerance);
}

static void test_realloc_pairs_full(void **state)
{
	realloc_pairs(TK_ALLOC_MODE_FULL, 0, 0);
}

static void test_realloc_pairs_sampled(void **state)
{
	/* 64 KiB between samples: ~400 samples of the 25 MiB, a few % of error */
	realloc_pairs(TK_ALLOC_MODE_SAMPLED, 65536, 0.2);
}

/*
 * Full mode attached to a process that frees 1000 blocks it allocated before
 * the attach: every one of those frees is counted.
 */
static void test_unknown_frees_full(void **state)
{
	struct tk_alloc_stats st;
	char describe[512];
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	/* past ld.so and the allocations; it frees them at 2.5 s: time to attach on a busy machine */
	pid = start_workload("alloc_prefree", (const char *[]){ "-n", "1000", "-w", "2500", "-d",
			     "3", NULL }, 300000);
	run(pid, TK_ALLOC_MODE_FULL, 3.5, &st, folded, sizeof(folded), describe, sizeof(describe));
	stop(pid);
	print_message("frees_of_unknown_objects %" PRIu64 "\n", loss("frees_of_unknown_objects"));
	assert_true(loss("frees_of_unknown_objects") >= 1000);
	assert_int_equal(leaf_sum(folded, "prefree_site"), 0);
}

/*
 * The live map cut to 64 entries (TK_TEST_MAP_ENTRIES) under alloc_leak's
 * ~190 leaked blocks: the ones that found it full are counted, and none of
 * them is reported in use (their frees would never be seen).
 */
static void test_live_map_full(void **state)
{
	struct tk_alloc_stats st;
	char describe[512];
	unsigned long leak;
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	pid = start_leak(4);
	setenv("TK_TEST_MAP_ENTRIES", "live=64", 1);
	run(pid, TK_ALLOC_MODE_FULL, 1.5, &st, folded, sizeof(folded), describe,
	    sizeof(describe));
	unsetenv("TK_TEST_MAP_ENTRIES");
	stop(pid);
	leak = leaf_sum(folded, "leak_site");
	print_message("live_map_full %" PRIu64 ", %lu bytes in use at leak_site, %" PRIu64
		      " objects live\n", loss("live_map_full"), leak, st.live);
	assert_true(loss("live_map_full") > 0);
	assert_true(st.live <= 64);
	assert_true(leak <= 64u * (64u << 10));
}

/*
 * -p on a process that execs (alloc_exec): the uprobes on its libc follow it
 * into the new image. Once it exec'd, before_exec_site's 1 MiB is nobody's:
 * nothing in use there, released_at_exec counts it; after_exec_site holds
 * its 2 MiB exactly. The generation of a -p process is 0 before its exec,
 * the one BPF hands out after; with generation 0 throughout, the old
 * image's blocks would stay in use.
 */
static void exec_pid(enum tk_alloc_mode mode, uint64_t sbytes, double tol)
{
	struct tk_alloc_stats st;
	char describe[512];
	unsigned long before, after;
	pid_t pid;

	need(TK_CAP_PROG_UPROBE, true);
	/* it allocates once it gets SIGUSR1 */
	pid = start_workload("alloc_exec", (const char *[]){ "-d", "5", "--wait-signal", NULL },
			     300000);
	/* 0.5 s of waiting before its exec, and time for the new image's 2 MiB */
	run_signalled(pid, mode, sbytes, 2.5, &st, describe, sizeof(describe));
	before = leaf_sum(folded, "before_exec_site");
	after = leaf_sum(folded, "after_exec_site");
	print_message("exec: %lu bytes in use at before_exec_site, %lu at after_exec_site; "
		      "released_at_exec %" PRIu64 " objects, %" PRIu64 " bytes\n", before, after,
		      loss("released_at_exec"), loss("released_at_exec_bytes"));
	assert_int_equal(before, 0);
	if (after < (2ul << 20) * (1 - tol) || after > (2ul << 20) * (1 + tol))
		fail_msg("after_exec_site %lu bytes in use, want %lu (± %.0f %%)", after,
			 2ul << 20, 100 * tol);
	assert_true(loss("released_at_exec_bytes") >= (1ul << 20) * (1 - tol));
	assert_true(loss("released_at_exec_bytes") <= (1ul << 20) * (1 + tol) + 65536);
	assert_int_equal(loss("released_at_exit"), 0);
}

static void test_exec_pid_full(void **state)
{
	exec_pid(TK_ALLOC_MODE_FULL, 0, 0);
}

static void test_exec_pid_sampled(void **state)
{
	/* 4 KiB between samples: each 64 KiB block sampled, weight ~1 */
	exec_pid(TK_ALLOC_MODE_SAMPLED, 4096, 0.02);
}

/* ---- a container ------------------------------------------------------------------------ */

/* TK_OTHER_ROOT (tests/lib/mkroot.sh's Debian trixie root); skip without it, fail under CI. */
static const char *other_root(void)
{
	const char *root = getenv("TK_OTHER_ROOT");
	char perl[PATH_MAX];

	snprintf(perl, sizeof(perl), "%s/usr/bin/perl", root ? root : "");
	if (!root || access(perl, X_OK)) {
		print_message("no container root (TK_OTHER_ROOT; tests/lib/mkroot.sh trixie DIR)\n");
		if (getenv("CI"))
			fail();
		skip();
	}
	return root;
}

struct ct {
	pid_t pid, outer;
	int in, out;		/* perl's stdin and stdout */
};

static struct ct ct;		/* the one running, for ct_teardown after a failure */

/*
 * Wait up to @secs for @word in what perl writes, polling @a (when not NULL)
 * meanwhile so that its ring buffer keeps draining.
 */
static void ct_wait(struct ct *c, const char *word, struct tk_alloc *a, double secs)
{
	char buf[256];
	size_t len = 0;
	double t0;
	ssize_t n;

	for (t0 = now_s(); !memmem(buf, len, word, strlen(word));) {
		struct pollfd pf = { .fd = c->out, .events = POLLIN };

		if (now_s() - t0 > secs)
			fail_msg("perl did not say '%s' in %.0f s", word, secs);
		if (a)
			assert_int_equal(tk_alloc__poll(a, 100), 0);
		if (poll(&pf, 1, a ? 0 : 100) == 1) {
			n = read(c->out, buf + len, sizeof(buf) - len);
			assert_true(n > 0);
			len += n;
			if (len == sizeof(buf))
				len = 0;
		}
	}
}

/*
 * perl -e @script in a container of the trixie root, whose libc (glibc 2.41)
 * is at the host's libc's path but another file; once it says "up" (until
 * its exec, the child maps the host's libc: that is not the process to
 * inspect).
 */
static void ct_start(struct ct *c, const char *script)
{
	char *argv[] = { "/usr/bin/perl", "-e", (char *)script, NULL };
	const char *root = other_root();
	char libc[PATH_MAX];
	struct stat here, there;
	int in[2], out[2];

	snprintf(libc, sizeof(libc), "%s" LIBC, root);
	assert_int_equal(stat(LIBC, &here), 0);
	assert_int_equal(stat(libc, &there), 0);
	/* what the test is about: the same path names two files */
	assert_true(here.st_ino != there.st_ino || here.st_dev != there.st_dev);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	c->pid = tk_test_spawn_in_root(root, argv, in[0], out[1], &c->outer);
	close(in[0]);
	close(out[1]);
	if (c->pid <= 0)
		fail_msg("cannot start perl in %s: %s", root, strerror(-c->pid));
	c->in = in[1];
	c->out = out[0];
	ct_wait(c, "up\n", NULL, 10);
}

static void ct_stop(struct ct *c)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, SIGKILL);
	waitpid(c->outer, NULL, 0);
	close(c->in);
	close(c->out);
	c->pid = 0;
}

static int ct_teardown(void **state)
{
	ct_stop(&ct);
	return 0;
}

/* Bytes of the folded lines whose stack holds a frame starting with @frame. */
static unsigned long stack_sum(const char *folded, const char *frame)
{
	const char *line = folded, *end, *sp, *f, *semi;
	unsigned long sum = 0;
	size_t n = strlen(frame);

	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		sp = memrchr(line, ' ', end - line);
		if (!sp)
			continue;
		for (f = line; f < sp; f = semi + 1) {
			semi = memchr(f, ';', sp - f);
			if (!semi)
				semi = sp;
			if ((size_t)(semi - f) >= n && !memcmp(f, frame, n)) {
				sum += strtoul(sp + 1, NULL, 10);
				break;
			}
		}
	}
	return sum;
}

/*
 * A process in another root, made as container runtimes make it (pivot_root
 * in mount and pid namespaces of its own): trixie's perl holds 32 MiB in 512
 * strings. The uprobes must sit on the container's libc, reached through
 * /proc/PID (the host's file of that name would take them at the wrong
 * offsets and never fire), and every byte shows under perl's frames.
 */
static void test_container_full(void **state)
{
	const unsigned long held = 512ul * 65536;
	struct tk_alloc_stats st;
	char describe[1024], want[64];
	unsigned long got;
	struct tk_alloc *a;

	need(TK_CAP_PROG_UPROBE, true);
	ct_start(&ct, "$| = 1; print qq(up\n); <STDIN>; "
		      "sub hold { my @a = map { 'x' x 65536 } 1..512; print qq(held\n); sleep 30 } "
		      "hold()");
	a = start(ct.pid, TK_ALLOC_MODE_FULL, describe, sizeof(describe));
	print_message("%s\n", describe);
	snprintf(want, sizeof(want), " through /proc/%d/", ct.pid);
	assert_non_null(strstr(describe, want));
	assert_non_null(strstr(describe, "not the host's file"));
	assert_int_equal(write(ct.in, "\n", 1), 1);
	ct_wait(&ct, "held\n", a, 20);
	finish(a, 0.5, &st, folded, sizeof(folded));
	ct_stop(&ct);
	got = stack_sum(folded, "Perl_");
	print_message("container: %lu bytes in use under perl's frames, %lu held; %llu calls\n",
		      got, held, (unsigned long long)st.calls);
	if (got < held * 0.9)
		fail_msg("%lu bytes in use under Perl_ frames, want >= 90 %% of %lu", got, held);
}

/* The call rate of the container's perl: counted on its own libc, not 0 on the host's. */
static void test_container_rate(void **state)
{
	struct tk_alloc_rate r;
	char why[512] = "";
	int err;

	need(TK_CAP_PROG_UPROBE, true);
	ct_start(&ct, "$| = 1; print qq(up\n); "
		      "while (1) { my @a = map { 'y' x 100 . $_ } 1..1000 }");
	err = tk_alloc__measure_rate(ct.pid, NULL, 500, &r, why, sizeof(why));
	ct_stop(&ct);
	if (err)
		fail_msg("measure_rate: %s", why);
	print_message("container: allocs %.0f/s frees %.0f/s\n", r.alloc_per_s, r.free_per_s);
	assert_true(r.alloc_calls > 100);
	assert_true(r.free_calls > 100);
}

int main(void)
{
	struct tk_caps_opts co = { .sz = sizeof(co) };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sampled),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_realloc_pairs_full),
		cmocka_unit_test(test_realloc_pairs_sampled),
		cmocka_unit_test(test_unknown_frees_full),
		cmocka_unit_test(test_live_map_full),
		cmocka_unit_test(test_exec_pid_full),
		cmocka_unit_test(test_exec_pid_sampled),
		cmocka_unit_test_teardown(test_container_full, ct_teardown),
		cmocka_unit_test_teardown(test_container_rate, ct_teardown),
	};

	const char *filter = getenv("TK_TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
	if (tk_caps__snapshot(&co, &caps))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
