// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit record, as a user runs it: real sessions on the real kernel, on a workload whose hot
 * and leaking functions are known (alloc_leak: churn() and work() burn the CPU, leak_site() keeps
 * 64 MiB) and on Debian's python3. The bundle's pprofs are read back by go tool pprof; index.html
 * is opened in a real headless Chromium (a screenshot, the DOM names the functions) with a net log
 * that shows no request of the page's; Ctrl-C still writes the bundle whole; --tar is one archive
 * and nothing else is left; bad input is refused before anything is written. And what another user
 * can do: a FIFO put at DIR.tar.gz during the window gets nothing; the bundle's directory renamed
 * away and replaced by a symlink is never written through; a tar that cannot be written (a full
 * file system) keeps the bundle's directory and says where; a tar name past ustar's limit is
 * refused before the window. A missing dependency is a skip, a failure under CI=true.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "need.h"
#include "spawn.h"

static char tmpdir[] = "/tmp/tk-record-test.XXXXXX";
static char out[1 << 17];

static const char *in_tmp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *in_tmp(const char *fmt, ...)
{
	static char buf[8][512];
	static int i;
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

/* Run a shell command line, stdout into out[]; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return tk_test_capture(cmd, out, sizeof(out));
}

static const char *tracekit(void)
{
	return tk_test_path(tk_test_build_dir(), "tracekit");
}

static void need_go(void)
{
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
}

static void need_workload(const char *name)
{
	NEED_DEP(access(tk_test_workload(name), X_OK) == 0, "%s (make the workloads)\n",
		 tk_test_workload(name));
}

/* go tool pprof -top of @pb (with extra @flags) into out[]; fails unless it reads it */
static void pprof_top(const char *pb, const char *flags)
{
	if (sh("HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top %s %s 2>&1", tmpdir, flags,
	       pb))
		fail_msg("go tool pprof cannot read %s:\n%s", pb, out);
}

/* the bundle @dir has @name, a regular file of mode 0600, not empty */
static void assert_file(const char *dir, const char *name)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st))
		fail_msg("the bundle has no %s", name);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(st.st_size > 0);
}

/* jq @filter on @dir/manifest.json, its output in out[] (trailing newline cut) */
static const char *manifest(const char *dir, const char *filter)
{
	size_t n;

	if (sh("jq -r '%s' %s/manifest.json", filter, dir))
		fail_msg("jq '%s' fails on %s/manifest.json", filter, dir);
	n = strlen(out);
	while (n && out[n - 1] == '\n')
		out[--n] = 0;
	return out;
}

static bool file_has_text(const char *path, const char *needle)
{
	static char buf[1 << 16];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/* No temporary directory of a bundle is left in tmpdir. */
static void assert_no_tmp_left(void)
{
	assert_int_equal(sh("ls -a %s | grep -c '\\.tmp\\.' || true", tmpdir), 0);
	assert_string_equal(out, "0\n");
}

static void test_record_command(void **state)
{
	const char *dir = in_tmp("cmd");

	NEED_ROOT();
	need_workload("alloc_leak");
	need_go();
	if (sh("%s record -o %s -- %s -d 3 --leak-bytes 67108864 2>&1", tracekit(), dir,
	       tk_test_workload("alloc_leak")))
		fail_msg("record failed:\n%s", out);
	/* the choices are printed */
	assert_non_null(strstr(out, "record: cpu: "));
	assert_non_null(strstr(out, "record: alloc: sampled"));
	assert_non_null(strstr(out, "record: numa: "));
	assert_file(dir, "caps.json");
	/*
	 * the whole snapshot, though the collectors started on scoped ones
	 * (it is taken on a thread meanwhile): every collector's load probe,
	 * the process's entries, every backend assessed
	 */
	if (sh("jq -e '[.entries[\"bpf.load.cpu\", \"bpf.load.alloc\", \"bpf.load.numa\", "
	       "\"bpf.load.stacks\", \"tracepoint.sched_process_exec\", "
	       "\"perf.hardware\"]] | map(select(. != null)) | length == 6' %s/caps.json && "
	       "! grep -q 'not assessed' %s/caps.json", dir, dir))
		fail_msg("caps.json is not the whole snapshot:\n%s", out);
	assert_file(dir, "summary.txt");
	assert_file(dir, "manifest.json");
	assert_file(dir, "index.html");
	assert_file(dir, "cpu.pb.gz");
	assert_file(dir, "cpu.svg");
	assert_file(dir, "cpu.json");
	assert_file(dir, "alloc.pb.gz");
	assert_file(dir, "alloc.svg");
	assert_file(dir, "numa.json");
	assert_no_tmp_left();

	pprof_top(tk_test_path(dir, "cpu.pb.gz"), "");
	if (!strstr(out, "churn") || !strstr(out, "work"))
		fail_msg("the CPU profile does not name churn and work:\n%s", out);
	pprof_top(tk_test_path(dir, "alloc.pb.gz"), "-sample_index=inuse_space");
	if (!strstr(out, "leak_site"))
		fail_msg("the allocation profile does not name leak_site:\n%s", out);

	assert_string_equal(manifest(dir, ".schema"), "tracekit.record/1");
	assert_string_equal(manifest(dir, ".ended"), "command exited");
	assert_string_equal(manifest(dir, ".command_exit_code"), "0");
	assert_string_equal(manifest(dir, "[.collectors[].status] | join(\",\")"),
			    "recorded,recorded,recorded,recorded");
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"cpu\") | .backend"),
			    "bpf");
	/* every loss counter is there, zero or not */
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"cpu\") | "
				     ".losses | has(\"ringbuf_reserve_failed\")"), "true");
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"alloc\") | "
				     ".losses | has(\"live_map_full\")"), "true");
	assert_int_equal(sh("uname -r | grep -qxF \"$(jq -r .kernel %s/manifest.json)\"", dir), 0);
	assert_int_equal(sh("jq -e '.start < .end and .duration_s > 2' %s/manifest.json "
			    ">/dev/null", dir), 0);
	assert_int_equal(sh("grep -q leak_site %s/summary.txt", dir), 0);
}

/*
 * index.html in a real browser: it renders (a screenshot), its DOM holds the
 * flame graphs and names the functions, and the page asks the network for
 * nothing (its Content-Security-Policy forbids it; the net log shows it). The
 * same check on a page that loads an image proves the net log sees loads.
 */
static const char chromium_flags[] =
	"--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
	"--disable-background-networking --disable-component-update --disable-sync "
	"--disable-default-apps --no-pings --disable-domain-reliability "
	"--virtual-time-budget=3000";
/* What Chromium asks for itself, whatever page it shows (its update and account services). */
static const char chromium_own[] = "google\\.com|googleapis\\.com|gvt1\\.com|gstatic\\.com";

/* the page's own requests, from a net log, in out[]: one URL a line */
static int page_requests(const char *url, const char *tag)
{
	return sh("rm -rf %s/chr-%s && timeout 90 chromium %s --user-data-dir=%s/chr-%s "
		  "--log-net-log=%s/net-%s.json --dump-dom '%s' >%s/dom-%s.html 2>/dev/null; "
		  "grep -o '\"url\":\"[a-z]*://[^\"]*\"' %s/net-%s.json | grep -vE '%s' | sort -u",
		  tmpdir, tag, chromium_flags, tmpdir, tag, tmpdir, tag, url, tmpdir, tag, tmpdir,
		  tag, chromium_own);
}

static void test_record_index_in_chromium(void **state)
{
	const char *dir = in_tmp("html");
	char url[1024], ctl[1024];
	FILE *f;

	NEED_ROOT();
	need_workload("alloc_leak");
	NEED_DEP(system("command -v chromium >/dev/null 2>&1") == 0, "chromium\n");
	if (sh("%s record -o %s -- %s -d 2 --leak-bytes 67108864 2>&1", tracekit(), dir,
	       tk_test_workload("alloc_leak")))
		fail_msg("record failed:\n%s", out);
	/* nothing in it points outside the bundle (the SVG namespace is a name, not a load) */
	assert_int_equal(sh("grep -oE '(src|href)=\"[^\"]*\"|url\\([^)]*\\)' %s/index.html | "
			    "grep -vE '^href=\"(#[a-z0-9-]+|[a-z0-9.-]+)\"$' || true", dir), 0);
	assert_string_equal(out, "");
	assert_int_equal(sh("grep -c \"default-src 'none'\" %s/index.html", dir), 0);

	snprintf(url, sizeof(url), "file://%s/index.html", dir);
	page_requests(url, "index");
	if (out[0])
		fail_msg("index.html made requests:\n%s", out);
	assert_int_equal(sh("cat %s/dom-index.html", tmpdir), 0);
	if (!strstr(out, "leak_site") || !strstr(out, "churn"))
		fail_msg("the rendered page does not name leak_site and churn");
	assert_non_null(strstr(out, "id=\"fg-cpu\""));
	assert_non_null(strstr(out, "id=\"fg-alloc\""));
	assert_non_null(strstr(out, "Not available here, and why"));

	/* the control: a page that loads an image is seen loading it */
	snprintf(ctl, sizeof(ctl), "%s/control.html", tmpdir);
	f = fopen(ctl, "w");
	assert_non_null(f);
	fputs("<html><body><img src=\"http://192.0.2.1/tk.png\"></body></html>\n", f);
	fclose(f);
	snprintf(url, sizeof(url), "file://%s", ctl);
	page_requests(url, "control");
	if (!strstr(out, "192.0.2.1/tk.png"))
		fail_msg("the net log did not show the control page's request: it proves nothing");

	/* and it renders: a screenshot of a page that has drawn */
	assert_int_equal(sh("timeout 90 chromium %s --user-data-dir=%s/chr-shot "
			    "--window-size=1280,2400 --screenshot=%s/index.png file://%s/index.html "
			    ">/dev/null 2>&1; stat -c %%s %s/index.png", chromium_flags, tmpdir,
			    tmpdir, dir, tmpdir), 0);
	assert_true(atol(out) > 50000);
}

/* A process tracekit did not start, Debian's python3: -p, the forecast, the choices. */
static void test_record_pid_python(void **state)
{
	const char *dir = in_tmp("py");
	pid_t py;
	int status;

	NEED_ROOT();
	need_go();
	NEED_DEP(access("/usr/bin/python3", X_OK) == 0, "python3\n");
	py = fork();
	assert_true(py >= 0);
	if (py == 0) {
		execl("/usr/bin/python3", "python3", "-c",
		      "import time\nd={}\nt=time.time()\n"
		      "while time.time()-t<60:\n"
		      "    for i in range(1000): d[i]=str(i)*3\n", (char *)NULL);
		_exit(127);
	}
	usleep(300 * 1000);
	if (sh("%s record -d 2 -p %d -o %s 2>&1", tracekit(), (int)py, dir)) {
		kill(py, SIGKILL);
		waitpid(py, &status, 0);
		fail_msg("record failed:\n%s", out);
	}
	kill(py, SIGKILL);
	waitpid(py, &status, 0);
	/* the allocation profile's choice, with its measured forecast */
	if (!strstr(out, "record: alloc: sampled:") && !strstr(out, "record: alloc: growth"))
		fail_msg("no allocation choice printed:\n%s", out);
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"alloc\") | "
				     ".forecast_slowdown | type"), "number");
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"alloc\") | .pid"),
			    manifest(dir, ".pids[0] | tostring"));
	assert_string_equal(manifest(dir, ".ended"), "duration");
	assert_file(dir, "alloc.pb.gz");
	pprof_top(tk_test_path(dir, "cpu.pb.gz"), "");
	if (!strstr(out, "_PyEval_EvalFrameDefault"))
		fail_msg("the CPU profile of python3 has no interpreter frames:\n%s", out);
}

/*
 * Debian's redis-server (jemalloc, no frame pointers), recorded by -p. Idle when
 * the forecast is taken, its allocations are sampled; then a load makes its
 * allocator calls trap ~10^5 times a second, and the guard ends the sampled
 * profile early, keeping what it has. Recorded again under the same load, the
 * forecast sees the rate and only page faults are traced.
 */
static void test_record_redis_budget(void **state)
{
	const char *dir = in_tmp("redis"), *dir2 = in_tmp("redis2");
	int port = 17000 + rand() % 1000;
	pid_t redis;

	NEED_ROOT();
	need_go();
	NEED_DEP(access("/usr/bin/redis-server", X_OK) == 0 &&
		 access("/usr/bin/redis-benchmark", X_OK) == 0, "redis-server, redis-benchmark\n");
	redis = tk_test_start_redis(port);
	assert_true(redis > 0);
	sh("(sleep 2; timeout 8 redis-benchmark -p %d -q -n 10000000 -t set,get >/dev/null 2>&1) & "
	   "%s record -d 6 -p %d -o %s 2>&1; wait", port, tracekit(), (int)redis, dir);
	if (!strstr(out, "record: alloc: sampled:") || !strstr(out, "ended early"))
		fail_msg("the idle forecast did not sample, or the guard did not end it:\n%s", out);
	assert_non_null(strstr(manifest(dir, ".collectors[] | select(.name == \"alloc\") | "
				       ".ended_early"), "over the 2.0 % budget"));
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"alloc\") | .status"),
			    "recorded");
	pprof_top(tk_test_path(dir, "alloc.pb.gz"), "-sample_index=alloc_space");
	pprof_top(tk_test_path(dir, "cpu.pb.gz"), "");
	if (!strstr(out, "aeMain") || !strstr(out, "processCommand"))
		fail_msg("the CPU profile does not show redis's event loop and commands:\n%s", out);

	/* under load from the start: the forecast says no, and page faults are traced */
	sh("(timeout 8 redis-benchmark -p %d -q -n 10000000 -t set,get >/dev/null 2>&1) & "
	   "sleep 1; %s record -d 2 -p %d -o %s 2>&1; wait", port, tracekit(), (int)redis, dir2);
	kill(redis, SIGTERM);
	waitpid(redis, NULL, 0);
	if (!strstr(out, "record: alloc: growth (page faults): sampling"))
		fail_msg("under load, the forecast did not choose growth:\n%s", out);
	assert_true(atof(manifest(dir2, ".collectors[] | select(.name == \"alloc\") | "
				  ".forecast_slowdown")) > 0.02);
	assert_non_null(strstr(manifest(dir2, ".collectors[] | select(.name == \"alloc\") | "
					".describe"), "page faults only"));
}

/* System-wide: no allocation profile, and the bundle says why. */
static void test_record_system_wide(void **state)
{
	const char *dir = in_tmp("sys");

	NEED_ROOT();
	if (sh("%s record -d 1 --no-off-cpu -o %s 2>&1", tracekit(), dir))
		fail_msg("record failed:\n%s", out);
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"alloc\") | .status"),
			    "unavailable");
	assert_non_null(strstr(manifest(dir, ".collectors[] | select(.name == \"alloc\") | .why"),
			       "-p PID"));
	assert_int_equal(sh("grep -c 'allocation profiles are taken per process' "
			    "%s/index.html", dir), 0);
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"cpu\") | .how"),
			    "bpf, 99 Hz, every process, without off-CPU time");
}

/* ---- the thread stacks at the start and the end of the window ---------------------------- */

/* tests/workloads/stacks_shape's threads, as its line says them */
struct shape {
	pid_t pid;
	int main, holder, waiter, sleeper, dthread;
	char dkind[8];
};

/* Start stacks_shape with @args (a shell word list) and read its line. */
static void start_shape(struct shape *s, const char *args)
{
	char line[512], cmd[1024];
	int pfd[2];

	memset(s, 0, sizeof(*s));
	need_workload("stacks_shape");
	assert_int_equal(pipe(pfd), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (!s->pid) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		snprintf(cmd, sizeof(cmd), "exec %s %s", tk_test_workload("stacks_shape"), args);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	tk_test_read_line(pfd[0], line, sizeof(line), 5000);
	if (sscanf(line, "pid %*d progress %*x signals %*x main %d holder %d waiter %d "
		   "sleeper %d dthread %d dkind %7s", &s->main, &s->holder, &s->waiter,
		   &s->sleeper, &s->dthread, s->dkind) != 6) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		fail_msg("stacks_shape did not start: '%s'", line);
	}
}

static void stop_shape(struct shape *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
}

/* index.html's table @id lists thread @tid (its rows carry data-tid) */
static bool table_has_tid(const char *dir, const char *id, int tid)
{
	static char html[1 << 20];
	char needle[64], *from, *to;
	size_t n;
	FILE *f;

	snprintf(needle, sizeof(needle), "%s/index.html", dir);
	f = fopen(needle, "r");
	assert_non_null(f);
	n = fread(html, 1, sizeof(html) - 1, f);
	fclose(f);
	html[n] = 0;
	snprintf(needle, sizeof(needle), "<table id=\"%s\">", id);
	from = strstr(html, needle);
	if (!from)
		fail_msg("index.html has no table %s", id);
	to = strstr(from, "</table>");
	assert_non_null(to);
	*to = 0;
	snprintf(needle, sizeof(needle), "data-tid=\"%d\"", tid);
	return strstr(from, needle) != NULL;
}

/*
 * record -p of a process whose threads are blocked for the whole window (a mutex holder
 * in read() on a pipe nobody writes, its waiter, a D thread) beside a busy main thread
 * and a nanosleep loop: both snapshots are in the bundle, the blocked ones are listed
 * first in index.html as "did not move", the busy and the sleeping ones as moved; the
 * JSON parses; the holder's name, "<script>tkx", is text in index.html, never markup.
 */
static void test_record_stacks(void **state)
{
	const char *dir = in_tmp("stk");
	struct shape s;
	char url[1024];
	int err, spid;

	NEED_ROOT();
	start_shape(&s, "-N '<script>tkx'");
	spid = s.pid;
	err = sh("%s record -d 2 -p %d -o %s 2>&1", tracekit(), spid, dir);
	stop_shape(&s);
	if (err)
		fail_msg("record failed:\n%s", out);
	if (!strstr(out, "record: stacks: "))
		fail_msg("the stacks' choice is not printed:\n%s", out);
	assert_file(dir, "stacks-start.txt");
	assert_file(dir, "stacks-start.pb.gz");
	assert_file(dir, "stacks-end.txt");
	assert_file(dir, "stacks-end.pb.gz");
	assert_file(dir, "stacks.json");
	assert_int_equal(sh("gzip -t %s/stacks-start.pb.gz %s/stacks-end.pb.gz", dir, dir), 0);
	/* pprof: one sample per thread, the blocked holder's function among them */
	if (system("command -v go >/dev/null 2>&1") == 0) {
		pprof_top(tk_test_path(dir, "stacks-end.pb.gz"), "-sample_index=threads");
		if (!strstr(out, "holder_read"))
			fail_msg("stacks-end.pb.gz does not name holder_read:\n%s", out);
	}

	/* both snapshots, a window apart, in JSON that parses; the moved flags of the end's */
	assert_int_equal(sh("jq -r '.schema, (.snapshots | length), "
			    "((.snapshots[1].time_nanos - .snapshots[0].time_nanos) > 1.5e9)' "
			    "%s/stacks.json | tr '\\n' ' '", dir), 0);
	assert_string_equal(out, "tracekit.stacks/1 2 true ");
	assert_int_equal(sh("jq -r '[.snapshots[1].threads[] | select(.moved == false) | .tid] "
			    "| sort | map(tostring) | join(\",\")' %s/stacks.json", dir), 0);
	{
		char want[128];

		if (!strcmp(s.dkind, "none"))
			snprintf(want, sizeof(want), "%d,%d\n", s.holder, s.waiter);
		else
			snprintf(want, sizeof(want), "%d,%d,%d\n", s.holder, s.waiter, s.dthread);
		assert_string_equal(out, want);
	}
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
				     "[.status, .snapshots, (.files | length)] | join(\",\")"),
			    "recorded,2,5");
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
				     ".losses | has(\"process_gone\")"), "true");
	/* the backend the capability snapshot chose, and why */
	assert_int_equal(sh("jq -r '.backends.stacks.backend' %s/caps.json", dir), 0);
	{
		char caps_backend[32];

		snprintf(caps_backend, sizeof(caps_backend), "%.*s", (int)strcspn(out, "\n"), out);
		assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
					     ".backend"), caps_backend);
	}
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
				     ".why_backend | length > 10"), "true");
	/* the text lists the ones that did not move first: the holder before main */
	{
		int a = 0, b = 0;

		assert_int_equal(sh("grep -n '^ *pid %d tid %d ' %s/stacks-end.txt | cut -d: -f1",
				    spid, s.holder, dir), 0);
		a = atoi(out);
		assert_int_equal(sh("grep -n '^ *pid %d tid %d ' %s/stacks-end.txt | cut -d: -f1",
				    spid, s.main, dir), 0);
		b = atoi(out);
		assert_true(a > 0 && b > 0);
		assert_true(a < b);
	}

	/* index.html: the suspects first, then the others */
	assert_true(table_has_tid(dir, "stacks-stuck", s.holder));
	assert_true(table_has_tid(dir, "stacks-stuck", s.waiter));
	assert_false(table_has_tid(dir, "stacks-stuck", s.main));
	assert_false(table_has_tid(dir, "stacks-stuck", s.sleeper));
	assert_true(table_has_tid(dir, "stacks-moved", s.main));
	assert_true(table_has_tid(dir, "stacks-moved", s.sleeper));
	assert_false(table_has_tid(dir, "stacks-moved", s.holder));
	assert_int_equal(sh("grep -o 'id=\"stacks-[a-z]*\"' %s/index.html | tr '\\n' ' '", dir), 0);
	assert_string_equal(out, "id=\"stacks-stuck\" id=\"stacks-moved\" ");
	/* the hostile name: escaped where it is shown, never markup */
	assert_false(file_has_text(tk_test_path(dir, "index.html"), "<script>tkx"));
	assert_true(file_has_text(tk_test_path(dir, "index.html"), "&lt;script&gt;tkx"));
	assert_int_equal(sh("jq -r '.snapshots[1].threads[] | select(.tid == %d) | .comm' "
			    "%s/stacks.json", s.holder, dir), 0);
	assert_string_equal(out, "<script>tkx\n");
	/* and as a browser reads it: text in the table, no element made of it */
	if (system("command -v chromium >/dev/null 2>&1") == 0) {
		snprintf(url, sizeof(url), "file://%s/index.html", dir);
		page_requests(url, "stk");
		if (out[0])
			fail_msg("index.html made requests:\n%s", out);
		assert_int_equal(sh("cat %s/dom-stk.html", tmpdir), 0);
		assert_non_null(strstr(out, "<table id=\"stacks-stuck\">"));
		assert_non_null(strstr(out, "<td>&lt;script&gt;tkx</td>"));
		assert_null(strstr(out, "<script>tkx"));
		/* the page was whole after the name: the section after it is there */
		assert_non_null(strstr(out, "Not available here, and why"));
	}
}

/*
 * The whole system: the threads in D or T state only. stacks_shape's D thread is
 * there, its sleeping ones are not.
 */
static void test_record_stacks_system(void **state)
{
	const char *dir = in_tmp("stksys");
	struct shape s;
	int err;

	NEED_ROOT();
	start_shape(&s, "");
	if (strcmp(s.dkind, "uffd") && strcmp(s.dkind, "vfork")) {
		stop_shape(&s);
		skip();
	}
	err = sh("%s record -d 1 --no-off-cpu -o %s 2>&1", tracekit(), dir);
	if (!err)
		err = sh("jq -r '[.snapshots[] | [.threads[] | select(.pid == %d) | .tid] | "
			 "sort | map(tostring) | join(\",\")] | join(\" \")' %s/stacks.json",
			 (int)s.pid, dir);
	stop_shape(&s);
	if (err)
		fail_msg("record failed:\n%s", out);
	{
		char want[64];

		snprintf(want, sizeof(want), "%d %d\n", s.dthread, s.dthread);
		assert_string_equal(out, want);
	}
	assert_int_equal(sh("jq -e '[.snapshots[].threads[].state] | all(. == \"D\" or . == "
			    "\"T\" or . == \"t\")' %s/stacks.json", dir), 0);
	assert_non_null(strstr(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
					".how"), "uninterruptible sleep or stopped (D, T)"));
}

/*
 * What may go wrong with the stacks loses nothing else: a start snapshot that cannot be
 * taken (an empty cgroup) is said and the other collectors are written; a process that
 * exits before the end keeps its start snapshot, said; --no-stacks takes none.
 */
static void test_record_stacks_fail_keeps_rest(void **state)
{
	const char *dir = in_tmp("stkcg"), *dir2 = in_tmp("stkgone"), *dir3 = in_tmp("nostk");
	char cg[256], cmd[2048];
	pid_t p, rec;
	int err, status;

	NEED_ROOT();
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/unified/tk-rec-%d", (int)getpid());
	if (access("/sys/fs/cgroup/unified/cgroup.procs", F_OK))
		snprintf(cg, sizeof(cg), "/sys/fs/cgroup/tk-rec-%d", (int)getpid());
	NEED_DEP(mkdir(cg, 0755) == 0, "a cgroup v2 directory to make (%s)\n", cg);
	err = sh("%s record -d 1 --no-off-cpu --cgroup %s -o %s 2>&1", tracekit(), cg, dir);
	rmdir(cg);
	if (err)
		fail_msg("record failed:\n%s", out);
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"stacks\") | "
				     ".status"), "failed");
	assert_non_null(strstr(manifest(dir, ".collectors[] | select(.name == \"stacks\") | .why"),
			       "has no processes"));
	assert_string_equal(manifest(dir, ".collectors[] | select(.name == \"cpu\") | .status"),
			    "recorded");
	assert_file(dir, "cpu.pb.gz");
	assert_file(dir, "index.html");
	assert_int_equal(sh("grep -c 'Not recorded: the start snapshot: cgroup' %s/index.html",
			    dir), 0);
	assert_int_equal(sh("ls %s | grep -c stacks || true", dir), 0);
	assert_string_equal(out, "0\n");

	/* a process gone before the end: the start snapshot stays, and the bundle says why */
	p = fork();
	assert_true(p >= 0);
	if (!p) {
		execl("/bin/sleep", "sleep", "6", (char *)NULL);
		_exit(127);
	}
	/* record beside, while this process reaps the sleep when it exits (no zombie) */
	rec = fork();
	assert_true(rec >= 0);
	if (!rec) {
		snprintf(cmd, sizeof(cmd), "%s record -d 20 --no-off-cpu -p %d -o %s >%s 2>&1",
			 tracekit(), (int)p, dir2, in_tmp("stkgone.out"));
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	waitpid(p, NULL, 0);
	waitpid(rec, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		sh("cat %s", in_tmp("stkgone.out"));
		fail_msg("record failed:\n%s", out);
	}
	assert_string_equal(manifest(dir2, ".collectors[] | select(.name == \"stacks\") | "
				     ".status"), "recorded");
	assert_file(dir2, "stacks-start.txt");
	assert_file(dir2, "stacks.json");
	snprintf(cmd, sizeof(cmd), "%d\n", (int)p);
	assert_int_equal(sh("jq -r '.snapshots[0].threads[].tid' %s/stacks.json", dir2), 0);
	assert_string_equal(out, cmd);
	/*
	 * Either the end snapshot could not be taken (the process reaped: the proc
	 * backend's ESRCH), or it holds no thread (exited, not yet reaped: the bpf
	 * iterator sees none); each is said.
	 */
	if (!strcmp(manifest(dir2, ".collectors[] | select(.name == \"stacks\") | .snapshots"),
		    "1")) {
		assert_string_equal(manifest(dir2, ".collectors[] | select(.name == \"stacks\") | "
					     ".end_snapshot_failed"), "the process exited");
		assert_int_equal(access(tk_test_path(dir2, "stacks-end.txt"), F_OK), -1);
		assert_true(file_has_text(tk_test_path(dir2, "index.html"),
					  "<table id=\"stacks-start\">"));
		assert_int_equal(sh("jq -r '.notes[]' %s/manifest.json | grep -c 'no end "
				    "snapshot: the process exited'", dir2), 0);
	} else {
		assert_int_equal(sh("jq -r '.snapshots[1].threads | length' %s/stacks.json", dir2),
				 0);
		assert_string_equal(out, "0\n");
		assert_int_equal(sh("jq -r '.notes[]' %s/manifest.json | grep -c 'end snapshot "
				    "found no thread: the process had exited'", dir2), 0);
	}

	/* --no-stacks: none taken, and the bundle says so */
	if (sh("%s record -d 1 --no-off-cpu --no-stacks -o %s 2>&1", tracekit(), dir3))
		fail_msg("record --no-stacks failed:\n%s", out);
	assert_string_equal(manifest(dir3, ".collectors[] | select(.name == \"stacks\") | "
				     "[.status, .why] | join(\",\")"),
			    "unavailable,not asked for (--no-stacks)");
	assert_int_equal(sh("ls %s | grep -c stacks || true", dir3), 0);
	assert_string_equal(out, "0\n");
}

/* Ctrl-C ends the window, and everything is still written whole. */
static void test_record_interrupted(void **state)
{
	const char *dir = in_tmp("int"), *err = in_tmp("int.err");
	char d[64];
	pid_t tk;
	int status, i;

	NEED_ROOT();
	need_workload("cpu_split");
	need_go();
	tk = fork();
	assert_true(tk >= 0);
	if (tk == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 2);
		setpgid(0, 0);
		execl(tracekit(), "tracekit", "record", "-d", "60", "-o", dir, "--",
		      tk_test_workload("cpu_split"), "60", (char *)NULL);
		_exit(127);
	}
	/*
	 * every collector started and the command let run: the collectors attach
	 * in stages (cpu before the whole snapshot is taken, numa after), so the
	 * number of events may hold still before the last one
	 */
	for (i = 0; i < 200 && sh("grep -q 'record: recording' %s", err); i++)
		usleep(100 * 1000);
	assert_true(i < 200);
	sleep(1);
	kill(tk, SIGINT);
	for (i = 0; i < 200 && waitpid(tk, &status, WNOHANG) == 0; i++)
		usleep(100 * 1000);
	if (i == 200) {
		kill(-tk, SIGKILL);
		waitpid(tk, &status, 0);
		fail_msg("record did not end within 20 s of SIGINT");
	}
	kill(-tk, SIGKILL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(manifest(dir, ".ended"), "interrupted");
	snprintf(d, sizeof(d), "%s", manifest(dir, ".duration_s < 30"));
	assert_string_equal(d, "true");
	pprof_top(tk_test_path(dir, "cpu.pb.gz"), "");
	if (!strstr(out, "hot"))
		fail_msg("the CPU profile does not name hot:\n%s", out);
	assert_file(dir, "index.html");
	assert_no_tmp_left();
}

/* --tar: one file, DIR.tar.gz, holding DIR/...; no directory left beside it. */
static void test_record_tar(void **state)
{
	const char *dir = in_tmp("bundle");
	struct stat st;

	NEED_ROOT();
	need_workload("cpu_split");
	if (sh("%s record --tar -o %s -- %s 1 2>&1", tracekit(), dir,
	       tk_test_workload("cpu_split")))
		fail_msg("record --tar failed:\n%s", out);
	assert_int_equal(stat(dir, &st), -1);
	assert_int_equal(sh("stat -c %%a %s.tar.gz", dir), 0);
	assert_string_equal(out, "600\n");
	assert_int_equal(sh("tar -tzf %s.tar.gz | sort | tr '\\n' ' '", dir), 0);
	assert_non_null(strstr(out, "bundle/ "));
	assert_non_null(strstr(out, "bundle/cpu.pb.gz "));
	assert_non_null(strstr(out, "bundle/index.html "));
	assert_non_null(strstr(out, "bundle/manifest.json "));
	/* what the archive holds is what a directory would: extract and read it */
	assert_int_equal(sh("mkdir -p %s/x && tar -xzf %s.tar.gz -C %s/x && jq -r .ended "
			    "%s/x/bundle/manifest.json", tmpdir, dir, tmpdir, tmpdir), 0);
	assert_string_equal(out, "command exited\n");
	assert_no_tmp_left();
}

/* Bad input: refused with a reason and an exit code, and nothing is written. */
static void test_record_bad_input(void **state)
{
	const char *exists = in_tmp("exists");

	assert_int_equal(mkdir(exists, 0700), 0);
	assert_int_equal(sh("%s record -d 1 -o %s 2>&1", tracekit(), exists), 1);
	assert_non_null(strstr(out, "exists"));
	assert_int_equal(sh("ls -A %s | wc -l", exists), 0);
	assert_string_equal(out, "0\n");
	assert_int_equal(sh("%s record -d 1 2>&1", tracekit()), 2);
	assert_non_null(strstr(out, "-o DIR"));
	assert_int_equal(sh("%s record -d 0 -o %s 2>&1", tracekit(), in_tmp("d0")), 2);
	assert_int_equal(sh("%s record -p 1 -o %s -- true 2>&1", tracekit(), in_tmp("pc")), 2);
	assert_int_equal(sh("%s record -p abc -o %s 2>&1", tracekit(), in_tmp("pa")), 2);
	assert_int_equal(sh("%s record --budget 200 -o %s 2>&1", tracekit(), in_tmp("b")), 2);
	assert_int_equal(sh("%s record --bogus -o %s 2>&1", tracekit(), in_tmp("b")), 2);
	assert_int_equal(sh("%s record -o %s/no/such/dir 2>&1", tracekit(), tmpdir), 1);
	assert_non_null(strstr(out, "parent directory does not exist"));
	/* a pid that is valid but gone */
	assert_int_equal(sh("%s record -p 4000000 -o %s 2>&1", tracekit(), in_tmp("np")), 1);
	assert_non_null(strstr(out, "no process"));
	assert_no_tmp_left();
}

/* ---- what another user can do around the bundle ---------------------------------------- */

#define NOBODY 65534

static void become_nobody(void)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		_exit(2);
}

/* A directory in tmpdir (made 0711) that everyone writes into, with @mode (01777: /tmp). */
static const char *open_dir(const char *name, mode_t mode)
{
	const char *dir = in_tmp("%s", name);

	mkdir(dir, 0755);
	assert_int_equal(chmod(tmpdir, 0711), 0);
	assert_int_equal(chmod(dir, mode), 0);
	return dir;
}

/* tracekit ARGS in the background, stdout and stderr to @err (may be NULL: /dev/null). */
static pid_t start(char *const args[], const char *err)
{
	char *argv[32] = { (char *)tracekit() };
	pid_t pid;
	int i;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int fd = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		for (i = 0; args[i] && i < 30; i++)
			argv[i + 1] = args[i];
		execv(argv[0], argv);
		_exit(121);
	}
	return pid;
}

static int wait_exit(pid_t pid, int limit_s)
{
	int status, i;

	for (i = 0; i < limit_s * 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * --tar into /tmp-like directory: another user puts a FIFO at DIR.tar.gz
 * during the window and waits on it. The archive, held from the start,
 * replaces it; nothing reaches the reader.
 */
static void test_record_tar_fifo_gets_nothing(void **state)
{
	const char *dir = open_dir("sticky", 01777), *base = in_tmp("sticky/inc");
	char tarp[600], *args[] = { "record", "--tar", "-d", "3", "-o", (char *)base, NULL };
	struct stat st;
	pid_t tk, reader;
	int rc, status;

	NEED_ROOT();
	snprintf(tarp, sizeof(tarp), "%s.tar.gz", base);
	tk = start(args, NULL);
	usleep(1500 * 1000);
	fflush(NULL);
	reader = fork();
	assert_true(reader >= 0);
	if (!reader) {
		char buf[4096];
		long total = 0;
		ssize_t n;
		int fd;

		become_nobody();
		if (mkfifo(tarp, 0666))
			_exit(3);
		fd = open(tarp, O_RDONLY);	/* waits for a writer */
		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
		_exit(total ? 1 : 0);
	}
	rc = wait_exit(tk, 30);
	usleep(200 * 1000);
	if (waitpid(reader, &status, WNOHANG) == 0) {
		kill(reader, SIGKILL);	/* still waiting for a writer: nothing came */
		waitpid(reader, &status, 0);
		status = 0;
	}
	assert_int_equal(status, 0);
	assert_int_equal(rc, 0);
	assert_int_equal(lstat(tarp, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 0777) == 0600);
	assert_int_equal(sh("tar -tzf %s | grep -c manifest.json", tarp), 0);
	assert_int_equal(sh("ls -a %s | grep -c '\\.tmp\\.' || true", dir), 0);
	assert_string_equal(out, "0\n");
}

/*
 * The bundle's directory in a directory everyone may write into without the
 * sticky bit: another user, watching it, renames the directory away as soon
 * as it appears and puts a symlink to a root directory in its place. Nothing
 * is written through the link (the bundle goes into the directory held open),
 * nothing is renamed over, and record says where the bundle is.
 */
static void test_record_dir_swapped_for_link(void **state)
{
	const char *dir = open_dir("open", 0777), *base = in_tmp("open/inc");
	const char *victim = in_tmp("victim"), *err = in_tmp("swap.err");
	char moved[600], *args[] = { "record", "-d", "2", "-o", (char *)base, NULL };
	pid_t tk, attacker;
	int rc, status;

	NEED_ROOT();
	mkdir(victim, 0755);
	snprintf(moved, sizeof(moved), "%s/moved", dir);
	fflush(NULL);
	attacker = fork();
	assert_true(attacker >= 0);
	if (!attacker) {
		int i;

		become_nobody();
		for (i = 0; i < 10000; i++) {
			char name[600], link[600];
			struct dirent *de;
			DIR *d = opendir(dir);

			while (d && (de = readdir(d)))
				if (!strncmp(de->d_name, "inc.tmp.", 8))
					break;
			if (d && de) {
				snprintf(name, sizeof(name), "%s/%s", dir, de->d_name);
				snprintf(link, sizeof(link), "%s", name);
				closedir(d);
				if (rename(name, moved) || symlink(victim, link))
					_exit(4);
				_exit(0);
			}
			if (d)
				closedir(d);
			usleep(1000);
		}
		_exit(5);
	}
	tk = start(args, err);
	assert_int_equal(waitpid(attacker, &status, 0), attacker);
	rc = wait_exit(tk, 30);
	sh("cat %s", err);
	print_message("%s", out);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);	/* it did swap */
	/* nothing through the link */
	assert_int_equal(sh("ls -A %s | wc -l", victim), 0);
	assert_string_equal(out, "0\n");
	/* refused to rename the link into place, and said where the bundle is */
	assert_int_equal(rc, 1);
	assert_true(file_has_text(err, "was moved or replaced"));
	assert_true(file_has_text(err, moved));
	assert_file(moved, "manifest.json");
	assert_file(moved, "cpu.pb.gz");
}

/*
 * The tar cannot be written (its file system full: a small tmpfs in a mount
 * namespace of the test's, filled while record waits before the tar, by
 * TK_TEST_RECORD_STOP=tar): the bundle's directory stays, named DIR, whole,
 * and stderr says where. Run in a child in its own mount namespace.
 */
static void test_record_tar_fails_keeps_dir(void **state)
{
	const char *small = in_tmp("small"), *err = in_tmp("full.err");
	char base[600], filler[600];
	pid_t child;
	int status;

	NEED_ROOT();
	mkdir(small, 0755);
	snprintf(base, sizeof(base), "%s/inc", small);
	snprintf(filler, sizeof(filler), "%s/filler", small);
	fflush(NULL);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		char *args[] = { "record", "--tar", "-d", "1", "-o", base, NULL };
		static char zero[65536];
		pid_t tk;
		int fd, rc;

		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("none", small, "tmpfs", 0, "size=16m"))
			_exit(77);
		setenv("TK_TEST_RECORD_STOP", "tar", 1);
		tk = start(args, err);
		if (waitpid(tk, &status, WUNTRACED) != tk || !WIFSTOPPED(status))
			_exit(10);
		/* the bundle is written; now nothing more fits */
		fd = open(filler, O_WRONLY | O_CREAT, 0600);
		while (fd >= 0 && write(fd, zero, sizeof(zero)) > 0)
			;
		if (fd >= 0)
			close(fd);
		kill(tk, SIGCONT);
		rc = wait_exit(tk, 30);
		unlink(filler);
		if (rc != 1)
			_exit(11);
		/* the directory, whole, named DIR; no tar, no temporary file */
		if (sh("test -s %s/manifest.json && test -s %s/index.html && test -s "
		       "%s/cpu.pb.gz && test ! -e %s.tar.gz && test $(ls -A %s | wc -l) = 1",
		       base, base, base, base, small))
			_exit(12);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("skip: no mount namespace here\n");
		skip();
	}
	sh("cat %s", err);
	print_message("%s", out);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(file_has_text(err, "No space left on device"));
	assert_true(file_has_text(err, "the bundle is left, whole, in the directory"));
	assert_true(file_has_text(err, base));
}

/* A tar name ustar cannot hold: refused at once, before the window, and nothing made. */
static void test_record_tar_name_too_long(void **state)
{
	char name[200], *args[] = { "record", "--tar", "-d", "20", "-o", NULL, NULL };
	const char *err = in_tmp("long.err");
	struct timespec t0, t1;
	pid_t tk;
	int rc;

	NEED_ROOT();
	memset(name, 'n', 92);
	name[92] = 0;
	args[5] = (char *)in_tmp("%s", name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tk = start(args, err);
	rc = wait_exit(tk, 30);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(rc, 1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	assert_true(file_has_text(err, "too long a name for a tar"));
	assert_int_equal(sh("ls -A %s | grep -c nnnnnnnn || true", tmpdir), 0);
	assert_string_equal(out, "0\n");
}

static int setup(void **state)
{
	srand((unsigned int)getpid());
	return mkdtemp(tmpdir) ? 0 : -1;
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
		cmocka_unit_test(test_record_command),
		cmocka_unit_test(test_record_index_in_chromium),
		cmocka_unit_test(test_record_pid_python),
		cmocka_unit_test(test_record_redis_budget),
		cmocka_unit_test(test_record_system_wide),
		cmocka_unit_test(test_record_stacks),
		cmocka_unit_test(test_record_stacks_system),
		cmocka_unit_test(test_record_stacks_fail_keeps_rest),
		cmocka_unit_test(test_record_interrupted),
		cmocka_unit_test(test_record_tar),
		cmocka_unit_test(test_record_bad_input),
		cmocka_unit_test(test_record_tar_fifo_gets_nothing),
		cmocka_unit_test(test_record_dir_swapped_for_link),
		cmocka_unit_test(test_record_tar_fails_keeps_dir),
		cmocka_unit_test(test_record_tar_name_too_long),
	};

	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests_name("record", tests, setup, teardown);
}
