// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The sidecar's contract, in its three states. Disabled: nothing happens at
 * all. Unsupported (an unusable directory, perf_event_open denied by a
 * seccomp filter): a status and a reason, no thread, no descriptor, no file,
 * and the host goes on. Enabled: one gzipped pprof per period naming the
 * host's hot function, the sidecar's thread blocks every signal, threads the
 * host starts later are sampled, and stop leaves the thread count and the
 * descriptor count as they were. The enabled tests need perf_event_open for
 * self-sampling (root, CAP_PERFMON or kernel.perf_event_paranoid <= 2) and
 * skip, saying why, where it is refused.
 *
 * Heap profiles: in this process (glibc malloc) the heap part is unsupported,
 * says why, and the CPU part writes its files as before; in a host running
 * jemalloc with profiling on (build/workloads/sidecar_example --heap under
 * LD_PRELOAD of libjemalloc) every period adds a heap file whose profile puts
 * the leaked bytes on the leaking function.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "tracekit/sidecar.h"
#include "spawn.h"
#include "test_pprof_decode.h"

struct t {
	struct fx *fx;
	char dir[PATH_MAX];	/* fx root/out: the sidecar's directory */
	int threads;		/* before the test */
	int fds;
};

static int count_entries(const char *path)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(path);

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - (strcmp(path, "/proc/self/fd") ? 0 : 1);	/* opendir's own fd */
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || fx_path(t->fx, "out", t->dir, sizeof(t->dir))) {
		fx_free(t->fx);
		free(t);
		return -1;
	}
	t->threads = count_entries("/proc/self/task");
	t->fds = count_entries("/proc/self/fd");
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

/* Nothing running, nothing open that was not open before. */
static void assert_nothing_left(const struct t *t)
{
	int i;

	/* a thread that returned from its function may take a moment to leave the list */
	for (i = 0; i < 50 && count_entries("/proc/self/task") != t->threads; i++)
		usleep(10 * 1000);
	assert_int_equal(count_entries("/proc/self/task"), t->threads);
	assert_int_equal(count_entries("/proc/self/fd"), t->fds);
}

static volatile uint64_t sink;

/* The host's hot function: its name must be in the profile. */
__attribute__((noinline)) static void sidecar_test_burn(double seconds)
{
	struct timespec a, b;
	uint64_t x = sink;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (i = 0; i < 200000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	sink = x;
}

static void *burn_thread(void *arg)
{
	sidecar_test_burn(*(double *)arg);
	return NULL;
}

/* ---- disabled ---------------------------------------------------------------------- */

static void test_disabled(void **state)
{
	struct t *t = *state;
	struct tk_sidecar_opts o = { .sz = sizeof(o), .enabled = false, .dir = t->dir };
	struct tk_sidecar *s = (void *)1;
	char why[128] = "junk";

	assert_int_equal(tk_sidecar__start(&o, &s, why, sizeof(why)), TK_SIDECAR_DISABLED);
	assert_null(s);
	assert_string_equal(why, "");
	assert_false(fx_exists(t->fx, "out"));

	/* no options at all, or options too short to hold .enabled: disabled too */
	s = (void *)1;
	assert_int_equal(tk_sidecar__start(NULL, &s, why, sizeof(why)), TK_SIDECAR_DISABLED);
	assert_null(s);
	o.enabled = true;
	o.sz = offsetof(struct tk_sidecar_opts, enabled);
	assert_int_equal(tk_sidecar__start(&o, &s, NULL, 0), TK_SIDECAR_DISABLED);
	assert_false(fx_exists(t->fx, "out"));
	assert_nothing_left(t);
	tk_sidecar__stop(NULL);
	assert_string_equal(tk_sidecar_status__name(TK_SIDECAR_DISABLED), "disabled");
}

/* ---- unsupported ------------------------------------------------------------------- */

static void expect_unsupported(struct t *t, const char *dir, const char *why_has)
{
	struct tk_sidecar_opts o = { .sz = sizeof(o), .enabled = true, .dir = dir, .period_s = 1 };
	struct tk_sidecar *s = (void *)1;
	char why[256] = "";

	assert_int_equal(tk_sidecar__start(&o, &s, why, sizeof(why)), TK_SIDECAR_UNSUPPORTED);
	assert_null(s);
	print_message("unsupported as expected: %s\n", why);
	if (!strstr(why, why_has)) {
		print_error("reason \"%s\" does not mention \"%s\"\n", why, why_has);
		fail();
	}
	assert_nothing_left(t);
}

static void test_unsupported_dir(void **state)
{
	struct t *t = *state;
	char path[PATH_MAX];

	/* a directory under a regular file cannot be created */
	assert_int_equal(fx_write(t->fx, "file", "x"), 0);
	assert_int_equal(fx_path(t->fx, "file/out", path, sizeof(path)), 0);
	expect_unsupported(t, path, "Not a directory");

	/* a symbolic link to a directory is refused, and nothing is written through it */
	assert_int_equal(fx_mkdir(t->fx, "real"), 0);
	assert_int_equal(fx_path(t->fx, "real", path, sizeof(path)), 0);
	assert_int_equal(fx_symlink(t->fx, path, "link"), 0);
	assert_int_equal(fx_path(t->fx, "link", path, sizeof(path)), 0);
	expect_unsupported(t, path, "symbolic link");
	assert_int_equal(fx_path(t->fx, "real", path, sizeof(path)), 0);
	assert_int_equal(count_entries(path), 0);

	/* a directory others may write into is not the sidecar's own */
	assert_int_equal(fx_mkdir(t->fx, "shared"), 0);
	assert_int_equal(fx_path(t->fx, "shared", path, sizeof(path)), 0);
	assert_int_equal(chmod(path, 0777), 0);
	expect_unsupported(t, path, "writable by others");

	/* no directory at all */
	expect_unsupported(t, NULL, "no output directory");
	expect_unsupported(t, "", "no output directory");
}

/*
 * In a child under the filter: UNSUPPORTED with a reason naming
 * perf_event_open, no thread and no descriptor left, and the host's own work
 * goes on to a normal exit. Exit codes tell the parent which check failed.
 */
static int seccomp_child(const char *dir)
{
	struct tk_sidecar_opts o = { .sz = sizeof(o), .enabled = true, .dir = dir, .period_s = 1 };
	struct tk_sidecar *s = (void *)1;
	int threads, fds;
	char why[256] = "";

	if (tk_test_deny_syscall(__NR_perf_event_open, EACCES))
		return 10;
	threads = count_entries("/proc/self/task");
	fds = count_entries("/proc/self/fd");
	if (tk_sidecar__start(&o, &s, why, sizeof(why)) != TK_SIDECAR_UNSUPPORTED)
		return 11;
	if (s)
		return 12;
	if (!strstr(why, "perf_event_open"))
		return 13;
	if (count_entries("/proc/self/task") != threads || count_entries("/proc/self/fd") != fds)
		return 14;
	dprintf(STDOUT_FILENO, "child: %s\n", why);
	sidecar_test_burn(0.05);	/* the host carries on */
	return 0;
}

static void test_unsupported_seccomp(void **state)
{
	struct t *t = *state;
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(seccomp_child(t->dir));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- enabled ----------------------------------------------------------------------- */

/* Stats once @n files are written, waiting up to 10 s (not a fixed sleep: no flake). */
static void wait_for_files(struct tk_sidecar *s, struct tk_sidecar_stats *st, uint64_t n)
{
	int i;

	for (i = 0; i < 100; i++) {
		tk_sidecar__stats(s, st);
		if (st->files >= n)
			return;
		usleep(100 * 1000);
	}
}

/* Start with @period_s, or skip when this machine refuses self-sampling. */
static struct tk_sidecar *start_or_skip(struct t *t, int period_s)
{
	struct tk_sidecar_opts o = { .sz = sizeof(o), .enabled = true, .dir = t->dir,
				     .freq_hz = 199, .period_s = period_s };
	struct tk_sidecar *s = NULL;
	enum tk_sidecar_status st;
	char why[256] = "";

	st = tk_sidecar__start(&o, &s, why, sizeof(why));
	if (st == TK_SIDECAR_UNSUPPORTED && strstr(why, "perf_event_open")) {
		print_message("skip: %s\n", why);
		skip();
	}
	if (st != TK_SIDECAR_RUNNING) {
		print_error("%s: %s\n", tk_sidecar_status__name(st), why);
		fail();
	}
	assert_non_null(s);
	return s;
}

/* Inflate a whole gzip file; NULL when it is not one. */
static unsigned char *gunzip_file(const char *path, size_t *len)
{
	unsigned char in[4096], *out = NULL, *n;
	size_t cap = 0, have = 0;
	z_stream z = {};
	bool magic_ok = false, done = false;
	FILE *f = fopen(path, "rb");
	size_t got;
	int zr = Z_OK;

	if (!f || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		if (f)
			fclose(f);
		return NULL;
	}
	while (!done && (got = fread(in, 1, sizeof(in), f)) > 0) {
		if (!have && !magic_ok) {
			if (got < 2 || in[0] != 0x1f || in[1] != 0x8b)
				break;
			magic_ok = true;
		}
		z.next_in = in;
		z.avail_in = got;
		do {
			if (cap - have < 65536) {
				cap = cap ? cap * 2 : 1 << 17;
				n = realloc(out, cap);
				if (!n)
					goto fail;
				out = n;
			}
			z.next_out = out + have;
			z.avail_out = cap - have;
			zr = inflate(&z, Z_NO_FLUSH);
			have = cap - z.avail_out;
			if (zr == Z_STREAM_END)
				done = true;
			else if (zr != Z_OK && zr != Z_BUF_ERROR)
				goto fail;
		} while (!done && z.avail_out == 0);
	}
	if (!done)
		goto fail;
	inflateEnd(&z);
	fclose(f);
	*len = have;
	return out;
fail:
	inflateEnd(&z);
	fclose(f);
	free(out);
	return NULL;
}

struct files {
	int nr;
	int with_burn;		/* files whose profile names sidecar_test_burn */
	bool names_ok;		/* every name is cpu-YYYYmmddTHHMMSS-N.pb.gz */
};

static void check_files(const char *dir, struct files *fs)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	memset(fs, 0, sizeof(*fs));
	fs->names_ok = true;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[PATH_MAX * 2], date[16], time_[16], rest[32];
		unsigned char *pb;
		unsigned long n;
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		if (sscanf(de->d_name, "cpu-%8[0-9]T%6[0-9]-%lu%31s", date, time_, &n, rest) != 4 ||
		    strlen(date) != 8 || strlen(time_) != 6 || strcmp(rest, ".pb.gz"))
			fs->names_ok = false;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		pb = gunzip_file(path, &len);
		if (!pb) {
			print_error("%s is not a whole gzip file\n", path);
			fail();
		}
		assert_true(len > 0);
		/* profile.proto's string table holds the function names */
		if (memmem(pb, len, "sidecar_test_burn", strlen("sidecar_test_burn")))
			fs->with_burn++;
		free(pb);
		/* and a real pprof reader takes it (go is installed by tools/install-deps.sh) */
		if (system("command -v go >/dev/null 2>&1") == 0) {
			char cmd[PATH_MAX * 2 + 128];

			snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof "
				 "-top %s 2>&1 | grep -q 'Type: cpu'", dir, path);
			if (system(cmd) != 0) {
				print_error("go tool pprof cannot read %s\n", path);
				fail();
			}
		}
		fs->nr++;
	}
	closedir(d);
}

static void test_enabled_writes_periods(void **state)
{
	struct t *t = *state;
	struct tk_sidecar_stats st;
	struct tk_sidecar *s;
	struct files fs;
	struct stat sb;
	double secs = 1.5;
	pthread_t th;

	s = start_or_skip(t, 1);
	/* the directory is created, the sidecar's own */
	assert_int_equal(stat(t->dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	/* a thread the host starts after the sidecar is sampled too */
	assert_int_equal(pthread_create(&th, NULL, burn_thread, &secs), 0);
	sidecar_test_burn(2.3);
	assert_int_equal(pthread_join(th, NULL), 0);
	wait_for_files(s, &st, 1);
	assert_true(st.files >= 1);
	tk_sidecar__stop(s);
	assert_nothing_left(t);

	check_files(t->dir, &fs);
	print_message("%d files, %d name sidecar_test_burn\n", fs.nr, fs.with_burn);
	/* 2.3 s in 1 s periods, and the last partial one at stop */
	assert_true(fs.nr >= 2 && fs.nr <= 4);
	assert_true(fs.names_ok);
	assert_true(fs.with_burn >= 2);
}

static void test_enabled_stats_and_stop_now(void **state)
{
	struct t *t = *state;
	struct tk_sidecar_stats st;
	struct tk_sidecar *s;
	struct files fs;

	/* a long period stopped at once: one file, written at stop */
	s = start_or_skip(t, 3600);
	sidecar_test_burn(0.5);
	tk_sidecar__stop(s);
	assert_nothing_left(t);
	check_files(t->dir, &fs);
	assert_int_equal(fs.nr, 1);
	assert_int_equal(fs.with_burn, 1);

	/* a second sidecar in the same directory and second adds files, replaces none */
	s = start_or_skip(t, 3600);
	sidecar_test_burn(0.3);
	tk_sidecar__stats(s, &st);
	assert_int_equal(st.files, 0);
	tk_sidecar__stop(s);
	check_files(t->dir, &fs);
	assert_int_equal(fs.nr, 2);
	assert_nothing_left(t);
}

/* The sidecar's thread (named tk-sidecar) blocks every signal the host might get. */
static void test_enabled_blocks_signals(void **state)
{
	struct t *t = *state;
	sigset_t before, after;
	struct tk_sidecar *s;
	struct dirent *de;
	bool found = false;
	DIR *d;
	int i;

	sigemptyset(&before);
	sigemptyset(&after);
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	s = start_or_skip(t, 3600);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	/* the caller's own mask is untouched */
	for (i = 1; i < SIGRTMIN; i++)
		assert_int_equal(sigismember(&before, i), sigismember(&after, i));

	d = opendir("/proc/self/task");
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[300], buf[4096], *p;
		unsigned long long blk;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f) || strcmp(buf, "tk-sidecar\n")) {
			fclose(f);
			continue;
		}
		fclose(f);
		found = true;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
		p = strstr(buf, "SigBlk:");
		assert_non_null(p);
		blk = strtoull(p + 7, NULL, 16);
		print_message("tk-sidecar SigBlk %016llx\n", blk);
		assert_true(blk & (1ULL << (SIGINT - 1)));
		assert_true(blk & (1ULL << (SIGTERM - 1)));
		assert_true(blk & (1ULL << (SIGUSR1 - 1)));
		assert_true(blk & (1ULL << (SIGCHLD - 1)));
		assert_true(blk & (1ULL << (SIGALRM - 1)));
		assert_true(blk & (1ULL << (SIGPIPE - 1)));
	}
	closedir(d);
	tk_sidecar__stop(s);
	assert_true(found);
	assert_nothing_left(t);
}

/* A child the host forks is not sampled, and stop in that child returns at once. */
/* perf_event descriptors this process holds */
static int count_perf_fds(void)
{
	char path[64], target[64];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%.20s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += !strcmp(target, "anon_inode:[perf_event]");
		}
	}
	closedir(d);
	return n;
}

static void test_enabled_fork(void **state)
{
	struct t *t = *state;
	struct tk_sidecar *s;
	int status;
	pid_t pid;

	s = start_or_skip(t, 3600);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the fork handler closed the inherited events: nothing samples the parent */
		if (count_perf_fds() != 0)
			_exit(3);
		tk_sidecar__stop(s);	/* the thread is not in this process: no join */
		sidecar_test_burn(0.2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tk_sidecar__stop(s);
	assert_nothing_left(t);
}

/*
 * More sidecars than the fork handler once had room for (8): a child holds
 * the perf events of none of them.
 */
static void test_enabled_fork_many(void **state)
{
	struct t *t = *state;
	struct tk_sidecar *s[11];
	int status, i, n = (int)(sizeof(s) / sizeof(s[0]));
	pid_t pid;

	for (i = 0; i < n; i++)
		s[i] = start_or_skip(t, 3600);
	assert_true(count_perf_fds() >= n);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(count_perf_fds() == 0 ? 0 : 3);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (i = 0; i < n; i++)
		tk_sidecar__stop(s[i]);
	assert_nothing_left(t);
}

/* ---- heap profiles ------------------------------------------------------------------ */

/* Files in @dir whose names start with @prefix; leftovers (".heap-dump-*") counted apart. */
static int count_named(const char *dir, const char *prefix, int *hidden)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (hidden)
		*hidden = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
		else if (hidden && de->d_name[0] == '.' && strcmp(de->d_name, ".") &&
			 strcmp(de->d_name, ".."))
			(*hidden)++;
	}
	closedir(d);
	return n;
}

/* glibc's malloc here: the heap part says why it cannot run; the CPU part runs as ever. */
static void test_heap_unsupported_without_jemalloc(void **state)
{
	struct t *t = *state;
	struct tk_sidecar_opts o = { .sz = sizeof(o), .enabled = true, .dir = t->dir,
				     .freq_hz = 199, .period_s = 1, .heap = true };
	struct tk_sidecar_stats st;
	struct tk_sidecar *s = NULL;
	enum tk_sidecar_status status;
	char why[256] = "";
	int hidden;

	status = tk_sidecar__start(&o, &s, why, sizeof(why));
	if (status == TK_SIDECAR_UNSUPPORTED && strstr(why, "perf_event_open")) {
		print_message("skip: %s\n", why);
		skip();
	}
	assert_int_equal(status, TK_SIDECAR_RUNNING);
	tk_sidecar__stats(s, &st);
	assert_int_equal(st.heap, TK_SIDECAR_HEAP_UNSUPPORTED);
	print_message("heap: %s: %s\n", tk_sidecar_heap__name(st.heap), st.heap_why);
	assert_non_null(strstr(st.heap_why, "jemalloc"));
	sidecar_test_burn(1.3);
	/* the first period's file, however long its writing takes on a busy machine */
	wait_for_files(s, &st, 1);
	assert_true(st.files >= 1);
	assert_int_equal(st.heap_files, 0);
	assert_int_equal(st.heap_last_error, 0);
	tk_sidecar__stop(s);
	assert_nothing_left(t);
	assert_true(count_named(t->dir, "cpu-", NULL) >= 2);
	assert_int_equal(count_named(t->dir, "heap-", &hidden), 0);
	assert_int_equal(hidden, 0);

	/* not asked for: disabled, no reason */
	o.heap = false;
	o.period_s = 3600;
	assert_int_equal(tk_sidecar__start(&o, &s, why, sizeof(why)), TK_SIDECAR_RUNNING);
	tk_sidecar__stats(s, &st);
	assert_int_equal(st.heap, TK_SIDECAR_HEAP_DISABLED);
	assert_string_equal(st.heap_why, "");
	tk_sidecar__stop(s);
	assert_string_equal(tk_sidecar_heap__name(TK_SIDECAR_HEAP_RUNNING), "running");
	assert_nothing_left(t);
}

/* The name of the function of location @id, or "". */
static const char *loc_func(const struct dec *d, uint64_t id)
{
	int i, j;

	for (i = 0; i < d->nr_locations; i++) {
		if (d->locations[i].id != id)
			continue;
		for (j = 0; j < d->nr_functions; j++)
			if (d->functions[j].id == d->locations[i].function_id)
				return dec_str(d, d->functions[j].name);
	}
	return "";
}

/* Sum of value @vi over the samples whose stack holds function @fn. */
static int64_t value_under(const struct dec *d, const char *fn, int vi)
{
	int64_t sum = 0;
	int i, j;

	for (i = 0; i < d->nr_samples; i++)
		for (j = 0; j < d->samples[i].nr_locs; j++)
			if (!strcmp(loc_func(d, d->samples[i].locs[j]), fn)) {
				sum += (int64_t)d->samples[i].values[vi];
				break;
			}
	return sum;
}

/* build/workloads/sidecar_example beside this test's build directory. */
static bool find_example(char *path, size_t size)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		/* BUILD/tests/unit[-san]/test_sidecar → BUILD/workloads/sidecar_example */
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, size, "%s/../../workloads/sidecar_example", self);
			if (!access(path, X_OK))
				return true;
		}
	}
	snprintf(path, size, "%s/workloads/sidecar_example", tk_test_build_dir());
	return !access(path, X_OK);
}

#define LIBJEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
#define LEAK_BYTES (8 << 20)

static void test_heap_jemalloc_host(void **state)
{
	struct t *t = *state;
	char exe[PATH_MAX], cmd[3 * PATH_MAX], out[4096], path[2 * PATH_MAX], newest[256] = "";
	int64_t leak_inuse, churn_inuse;
	struct dirent *de;
	struct dec dec = {};
	uint8_t *pb;
	size_t len;
	int status, n, hidden, i;
	DIR *d;

	if (!find_example(exe, sizeof(exe))) {
		print_message("skip: no workloads/sidecar_example (make it)\n");
		skip();
	}
	if (access(LIBJEMALLOC, R_OK)) {
		print_message("skip: no %s (apt-get install libjemalloc2)\n", LIBJEMALLOC);
		skip();
	}
	snprintf(cmd, sizeof(cmd), "LD_PRELOAD=%s MALLOC_CONF=prof:true,prof_active:true,"
		 "lg_prof_sample:12 %s -d 2.2 -P 1 -F 99 --sidecar %s --heap --leak-bytes %d 2>&1",
		 LIBJEMALLOC, exe, t->dir, LEAK_BYTES);
	status = tk_test_capture(cmd, out, sizeof(out));
	print_message("%s", out);
	if (strstr(out, "sidecar: unsupported") && strstr(out, "perf_event_open")) {
		print_message("skip: the host cannot self-sample\n");
		skip();
	}
	assert_int_equal(status, 0);
	if (!strstr(out, "heap: ")) {
		print_message("skip: %s has no --heap (an old build; make it)\n", exe);
		skip();
	}
	assert_non_null(strstr(out, "heap: running"));

	/* a heap file per period beside the cpu files; the raw dumps are gone */
	n = count_named(t->dir, "heap-", &hidden);
	print_message("%d heap files, %d cpu files\n", n, count_named(t->dir, "cpu-", NULL));
	assert_true(n >= 2 && n <= 4);
	assert_int_equal(hidden, 0);
	assert_int_equal(count_named(t->dir, "cpu-", NULL), n);

	d = opendir(t->dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char date[16], time_[16], rest[32];
		unsigned long seq;

		if (strncmp(de->d_name, "heap-", 5))
			continue;
		assert_int_equal(sscanf(de->d_name, "heap-%8[0-9]T%6[0-9]-%lu%31s", date, time_,
					&seq, rest), 4);
		assert_string_equal(rest, ".pb.gz");
		/* the last period's file: the highest N */
		if (!newest[0] || seq > strtoul(strrchr(newest, '-') + 1, NULL, 10))
			snprintf(newest, sizeof(newest), "%s", de->d_name);
	}
	closedir(d);

	snprintf(path, sizeof(path), "%s/%s", t->dir, newest);
	pb = dec_gunzip_file(path, &len);
	dec_profile(pb, len, &dec);
	assert_int_equal(dec.nr_sample_types, 4);
	{
		static const char *const types[4][2] = {
			{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
			{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
		};

		for (i = 0; i < 4; i++) {
			assert_string_equal(dec_str(&dec, dec.sample_type[i][0]), types[i][0]);
			assert_string_equal(dec_str(&dec, dec.sample_type[i][1]), types[i][1]);
		}
	}
	assert_int_equal(dec.period, 4096);
	/* the leak is attributed to the leaking function, the churn keeps ~nothing */
	leak_inuse = value_under(&dec, "example_leak", 3);
	churn_inuse = value_under(&dec, "example_churn", 3);
	print_message("%s: example_leak inuse_space %lld of %d leaked, example_churn %lld\n",
		      newest, (long long)leak_inuse, LEAK_BYTES, (long long)churn_inuse);
	assert_true(leak_inuse >= LEAK_BYTES * 9 / 10 && leak_inuse <= LEAK_BYTES * 11 / 10);
	assert_true(churn_inuse <= LEAK_BYTES / 16);
	dec_free(&dec);
	free(pb);

	/* and go tool pprof reads it as a heap profile */
	if (system("command -v go >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof "
			 "-sample_index=inuse_space -top %s 2>&1 | grep -q 'example_leak'", t->dir,
			 path);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsupported_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsupported_seccomp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enabled_writes_periods, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enabled_stats_and_stop_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enabled_blocks_signals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enabled_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enabled_fork_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_unsupported_without_jemalloc, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heap_jemalloc_host, setup, teardown),
	};

	return cmocka_run_group_tests_name("sidecar", tests, NULL, NULL);
}
