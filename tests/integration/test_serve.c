// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit serve, from the outside: a real server on a loopback port, real
 * clients. go tool pprof reads a CPU profile over HTTP that names the hot
 * function (of our workload, and Debian's redis-server's event loop under
 * load), and a heap profile that names the leak; promtool accepts /metrics
 * and a real Prometheus scrapes it (up == 1, tracekit_ series stored); bad
 * requests get 400/404/405/403 with a reason; a second capture of the same
 * collector gets 429 with Retry-After while another collector's runs; a client
 * that leaves mid-capture leaves no fd and no BPF object behind; idle, nothing
 * is attached and no CPU is spent; a capture longer than libmicrohttpd's idle
 * timeout still arrives; a non-loopback listen is refused without
 * --allow-remote and a token, and with one every request needs it; a unix
 * socket is 0600 and removed at exit; SIGTERM mid-capture answers 503 and
 * exits 0. A missing dependency is a skip, a failure under CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "need.h"
#include "spawn.h"

static char tmpdir[] = "/tmp/tk-serve-test.XXXXXX";
static char out[1 << 18];

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

static void need_tools(void)
{
	NEED_DEP(system("command -v curl >/dev/null 2>&1") == 0, "curl\n");
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
}

struct server {
	pid_t pid;
	char url[128];		/* http://127.0.0.1:PORT */
	char err[600];		/* its stderr */
};

/* Start build/tracekit serve ARGS... with its stderr in a file; wait for "listening on". */
static int start_server(struct server *s, const char *first, ...)
{
	const char *args[16] = { "tracekit", "serve" };
	char line[512];
	va_list ap;
	int n = 2, i;
	FILE *f;

	va_start(ap, first);
	for (const char *a = first; a && n < 15; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	snprintf(s->err, sizeof(s->err), "%s/serve.%d.err", tmpdir, rand());
	s->url[0] = 0;
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		int fd = open(s->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 2);
		execv(tk_test_path(tk_test_build_dir(), "tracekit"), (char *const *)args);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		usleep(50 * 1000);
		f = fopen(s->err, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "listening on ");

			if (p) {
				p += strlen("listening on ");
				p[strcspn(p, " \n,")] = 0;
				snprintf(s->url, sizeof(s->url), "%s", p);
			}
		}
		if (f)
			fclose(f);
		if (s->url[0])
			return 0;
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return -ECHILD;
		}
	}
	return -ETIMEDOUT;
}

static void stop_server(struct server *s)
{
	int status;

	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, &status, 0);
	s->pid = 0;
}

/* Its fds that are BPF objects or perf events (readlink of /proc/PID/fd/N). */
static int bpf_fds(pid_t pid)
{
	sh("ls -l /proc/%d/fd 2>/dev/null | grep -cE 'anon_inode:(\\[perf_event\\]|bpf-)' || true",
	   (int)pid);
	return atoi(out);
}

static int nr_fds(pid_t pid)
{
	sh("ls /proc/%d/fd | wc -l", (int)pid);
	return atoi(out);
}

/* curl URL, the body into @file; the HTTP status code */
static int get(const char *url, const char *file)
{
	sh("curl -s -o '%s' -w '%%{http_code}' '%s'", file ? file : "/dev/null", url);
	return atoi(out);
}

static pid_t start_workload(const char *name, const char *a1, const char *a2, const char *a3)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		execl(tk_test_workload(name), name, a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	usleep(300 * 1000);
	return pid;
}

static void stop_workload(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_go_pprof_over_http(void **state)
{
	struct server s;
	char url[512];
	pid_t w;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	w = start_workload("cpu_split", "20", NULL, NULL);
	/* Go's own client, as `go tool pprof http://HOST:PORT/debug/pprof/profile` */
	snprintf(url, sizeof(url), "%s/debug/pprof/profile?pid=%d", s.url, (int)w);
	sh("HOME=%s PPROF_TMPDIR=%s timeout 60 go tool pprof -top -seconds 3 '%s' 2>&1", tmpdir,
	   tmpdir, url);
	stop_workload(w);
	if (!strstr(out, "Saved profile") || !strstr(out, " hot"))
		fail_msg("go tool pprof did not read a profile naming hot:\n%s", out);
	/* and with no query at all, as Parca scrapes: the default 30 s would be long here */
	snprintf(url, sizeof(url), "%s/debug/pprof/profile?seconds=1", s.url);
	assert_int_equal(get(url, NULL), 200);
	stop_server(&s);
}

/* A program nobody here wrote: Debian's redis-server (no frame pointers), under load. */
static void test_redis_over_http(void **state)
{
	struct server s;
	char url[512];
	int port = 18000 + rand() % 1000;
	pid_t redis;

	NEED_ROOT();
	need_tools();
	NEED_DEP(access("/usr/bin/redis-server", X_OK) == 0 &&
		 access("/usr/bin/redis-benchmark", X_OK) == 0, "redis-server, redis-benchmark\n");
	redis = tk_test_start_redis(port);
	assert_true(redis > 0);
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	snprintf(url, sizeof(url), "%s/debug/pprof/profile?pid=%d", s.url, (int)redis);
	sh("(timeout 10 redis-benchmark -p %d -q -n 10000000 -t set,get >/dev/null 2>&1 &); "
	   "sleep 0.5; HOME=%s PPROF_TMPDIR=%s timeout 60 go tool pprof -top -seconds 3 '%s' 2>&1",
	   port, tmpdir, tmpdir, url);
	kill(redis, SIGTERM);
	waitpid(redis, NULL, 0);
	stop_server(&s);
	if (!strstr(out, "aeMain") || !strstr(out, "processCommand"))
		fail_msg("the profile of redis-server over HTTP lacks its event loop:\n%s", out);
}

static void test_heap_over_http(void **state)
{
	struct server s;
	char url[512], pb[600];
	pid_t w;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	w = start_workload("alloc_leak", "-d", "20", NULL);
	snprintf(url, sizeof(url), "%s/debug/pprof/heap?pid=%d&seconds=3&mode=growth", s.url,
		 (int)w);
	snprintf(pb, sizeof(pb), "%s/heap.pb.gz", tmpdir);
	assert_int_equal(get(url, pb), 200);
	stop_workload(w);
	sh("HOME=%s PPROF_TMPDIR=%s go tool pprof -top -sample_index=alloc_space %s 2>&1", tmpdir,
	   tmpdir, pb);
	if (!strstr(out, "leak_site"))
		fail_msg("the heap profile does not name leak_site:\n%s", out);
	stop_server(&s);
}

static void test_metrics_promtool_and_prometheus(void **state)
{
	struct server s;
	char url[512], cfg[600], port[16];
	pid_t prom;
	FILE *f;
	int i, up = 0;

	NEED_ROOT();
	need_tools();
	NEED_DEP(system("command -v promtool >/dev/null && command -v prometheus >/dev/null") == 0,
		 "prometheus and promtool\n");
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	if (sh("curl -sf '%s' | promtool check metrics 2>&1", url))
		fail_msg("promtool check metrics refuses /metrics:\n%s", out);
	sh("curl -sf '%s'", url);
	assert_non_null(strstr(out, "tracekit_numa_pages_migrated_total{reason=\"numa_misplaced\"}"));
	assert_non_null(strstr(out, "tracekit_capability_supported{id=\"bpf.syscall\"} 1"));
	assert_non_null(strstr(out, "tracekit_process_cpu_seconds_total"));
	/* node pairs the kernel side had no room for: a loss, even at 0 */
	assert_non_null(strstr(out, "tracekit_lost_total{collector=\"numa\","
				    "counter=\"node_pair_map_full\"} "));

	/* a real Prometheus, on a port and a storage of its own (not the packaged service) */
	snprintf(port, sizeof(port), "%d", 19000 + rand() % 1000);
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", tmpdir);
	f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f, "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tracekit\n"
		"    static_configs:\n      - targets: ['%s']\n", s.url + strlen("http://"));
	fclose(f);
	prom = fork();
	if (prom == 0) {
		char a1[700], a2[700], a3[64];
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		snprintf(a1, sizeof(a1), "--config.file=%s", cfg);
		snprintf(a2, sizeof(a2), "--storage.tsdb.path=%s/prom", tmpdir);
		snprintf(a3, sizeof(a3), "--web.listen-address=127.0.0.1:%s", port);
		execlp("prometheus", "prometheus", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 60 && !up; i++) {
		sleep(1);
		if (!sh("curl -sf 'http://127.0.0.1:%s/api/v1/query?query=up%%7Bjob%%3D%%22tracekit%%22%%7D'",
			port) && strstr(out, "\"value\":[") && strstr(out, ",\"1\"]"))
			up = 1;
	}
	if (up)
		sh("curl -sf 'http://127.0.0.1:%s/api/v1/query?query=count(%%7B__name__%%3D~%%22tracekit_.%%2B%%22%%7D)'",
		   port);
	kill(prom, SIGTERM);
	waitpid(prom, NULL, 0);
	stop_server(&s);
	if (!up)
		fail_msg("Prometheus did not report up == 1 for tracekit within 60 s");
	/* a number of series above a handful: the count's value is "N" */
	if (!strstr(out, "\"value\":[") || atoi(strrchr(out, ',') + 2) < 20)
		fail_msg("Prometheus stored few tracekit_ series: %s", out);
}

static void test_bad_requests(void **state)
{
	struct server s;
	char url[512];

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
#define EXPECT(code, path, why)                                                           \
	do {                                                                              \
		snprintf(url, sizeof(url), "curl -s -i '%s%s'", s.url, path);            \
		sh("%s", url);                                                            \
		if (!strstr(out, " " #code " ") || !strstr(out, why))                    \
			fail_msg("%s: not %d '%s':\n%s", path, code, why, out);            \
	} while (0)
	EXPECT(400, "/debug/pprof/profile?seconds=0", "invalid seconds");
	EXPECT(400, "/debug/pprof/profile?seconds=abc", "invalid seconds");
	EXPECT(400, "/debug/pprof/profile?bogus=1", "unknown parameter 'bogus'");
	EXPECT(400, "/debug/pprof/profile?pid=4000000", "no process with pid 4000000");
	EXPECT(400, "/debug/pprof/profile?cgroup=/no/such/dir", "is not a directory");
	EXPECT(400, "/debug/pprof/profile?seconds=%zz", "not an escape");
	EXPECT(400, "/debug/pprof/heap?seconds=1", "needs pid=PID");
	EXPECT(400, "/debug/pprof/heap?pid=1&pid=2", "one pid");
	EXPECT(404, "/nothing/here", "not found");
	sh("curl -s -i -X POST '%s/metrics'", s.url);
	assert_non_null(strstr(out, " 405 "));
	assert_non_null(strstr(out, "Allow: GET"));
	/* a browser led here by a rebinding DNS name is refused */
	sh("curl -s -i -H 'Host: attacker.example' '%s/metrics'", s.url);
	assert_non_null(strstr(out, " 403 "));
	/* still serving after all of it */
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	assert_int_equal(get(url, NULL), 200);
	stop_server(&s);
}

static void test_concurrent_captures(void **state)
{
	struct server s;
	char url[512];
	pid_t w;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	w = start_workload("alloc_leak", "-d", "20", NULL);
	/* a cpu capture and a heap capture at once: both served */
	sh("curl -s -o /dev/null -w '%%{http_code}\\n' '%s/debug/pprof/profile?seconds=3' & "
	   "sleep 0.5; curl -s -i '%s/debug/pprof/profile?seconds=1' | head -20; "
	   "curl -s -o /dev/null -w 'heap %%{http_code}\\n' "
	   "'%s/debug/pprof/heap?pid=%d&seconds=1&mode=growth'; wait",
	   s.url, s.url, s.url, (int)w);
	stop_workload(w);
	if (!strstr(out, " 429 ") || !strstr(out, "Retry-After: ") ||
	    !strstr(out, "one at a time"))
		fail_msg("a second cpu capture was not refused with 429:\n%s", out);
	assert_non_null(strstr(out, "heap 200"));
	assert_non_null(strstr(out, "\n200\n"));
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	sh("curl -sf '%s' | grep 'outcome=\"busy\"'", url);
	assert_non_null(strstr(out, "collector=\"cpu\",outcome=\"busy\"} 1"));
	stop_server(&s);
}

static void test_client_gone_leaks_nothing(void **state)
{
	struct server s;
	int fds0, fds1, i;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	fds0 = nr_fds(s.pid);
	assert_int_equal(bpf_fds(s.pid), 0);
	/* the client gives up after 1.5 s of a 20 s capture */
	sh("curl -s -m 1.5 -o /dev/null '%s/debug/pprof/profile?seconds=20&off_cpu=1'", s.url);
	for (i = 0; i < 40 && bpf_fds(s.pid); i++)
		usleep(100 * 1000);
	assert_int_equal(bpf_fds(s.pid), 0);
	fds1 = nr_fds(s.pid);
	assert_int_equal(fds1, fds0);
	sh("curl -sf '%s/metrics' | grep 'outcome=\"client_gone\"'", s.url);
	assert_non_null(strstr(out, "collector=\"cpu\",outcome=\"client_gone\"} 1"));
	/* and the slot is free again */
	sh("curl -s -o /dev/null -w '%%{http_code}' '%s/debug/pprof/profile?seconds=1'", s.url);
	assert_string_equal(out, "200");
	stop_server(&s);
}

/* Idle: nothing attached, no CPU time spent. */
static void test_idle(void **state)
{
	struct server s;
	double t0, t1;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	sleep(1);
	sh("awk '{print ($14 + $15) / 100}' /proc/%d/stat", (int)s.pid);
	t0 = atof(out);
	sleep(3);
	sh("awk '{print ($14 + $15) / 100}' /proc/%d/stat", (int)s.pid);
	t1 = atof(out);
	assert_int_equal(bpf_fds(s.pid), 0);
	print_message("idle: %.2f CPU seconds in 3 s\n", t1 - t0);
	assert_true(t1 - t0 <= 0.02);
	stop_server(&s);
}

/* A capture longer than libmicrohttpd's 30 s idle timeout is still answered. */
static void test_long_capture(void **state)
{
	struct server s;
	char url[512], pb[600];

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	snprintf(url, sizeof(url), "%s/debug/pprof/profile?seconds=32&hz=19", s.url);
	snprintf(pb, sizeof(pb), "%s/long.pb.gz", tmpdir);
	assert_int_equal(get(url, pb), 200);
	sh("HOME=%s PPROF_TMPDIR=%s go tool pprof -raw %s 2>&1 | grep -m1 Duration", tmpdir,
	   tmpdir, pb);
	print_message("%s", out);
	assert_non_null(strstr(out, "Duration: 32"));
	stop_server(&s);
}

static void test_listen_policy(void **state)
{
	struct server s;
	char tok[600], url[512];
	FILE *f;

	NEED_ROOT();
	need_tools();
	/* every address, or a routable one: refused without the flag, and without a token */
	assert_int_equal(sh("%s/tracekit serve --listen 0.0.0.0:0 2>&1", tk_test_build_dir()), 2);
	assert_non_null(strstr(out, "not a loopback address"));
	assert_int_equal(sh("%s/tracekit serve --listen :0 2>&1", tk_test_build_dir()), 2);
	assert_int_equal(sh("%s/tracekit serve --listen 0.0.0.0:0 --allow-remote 2>&1",
			    tk_test_build_dir()), 2);
	assert_non_null(strstr(out, "needs --token-file"));
	assert_int_equal(sh("%s/tracekit serve --listen nonsense 2>&1", tk_test_build_dir()), 2);
	assert_int_equal(sh("%s/tracekit serve --listen 127.0.0.1:99999 2>&1",
			    tk_test_build_dir()), 2);
	/* a token file others can read is refused */
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	assert_non_null(f);
	fputs("s3cret-token-0123456789\n", f);
	fclose(f);
	chmod(tok, 0644);
	assert_int_equal(sh("%s/tracekit serve --listen 0.0.0.0:0 --allow-remote --token-file %s "
			    "2>&1", tk_test_build_dir(), tok), 1);
	assert_non_null(strstr(out, "chmod 600"));
	chmod(tok, 0600);
	assert_int_equal(start_server(&s, "--listen", "0.0.0.0:0", "--allow-remote",
				      "--token-file", tok, NULL), 0);
	/* "http://0.0.0.0:PORT": ask it on loopback */
	snprintf(url, sizeof(url), "http://127.0.0.1:%s/metrics", strrchr(s.url, ':') + 1);
	sh("curl -s -i '%s'", url);
	assert_non_null(strstr(out, " 401 "));
	assert_non_null(strstr(out, "WWW-Authenticate: Bearer"));
	sh("curl -s -i -H 'Authorization: Bearer s3cret-token-012345678X' '%s'", url);
	assert_non_null(strstr(out, " 401 "));
	sh("curl -s -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer "
	   "s3cret-token-0123456789' '%s'", url);
	assert_string_equal(out, "200");
	stop_server(&s);
}

static void test_unix_socket(void **state)
{
	struct server s;
	char path[600], arg[700];
	struct stat st;

	NEED_ROOT();
	need_tools();
	snprintf(path, sizeof(path), "%s/tk.sock", tmpdir);
	snprintf(arg, sizeof(arg), "unix:%s", path);
	assert_int_equal(start_server(&s, "--listen", arg, NULL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	sh("curl -s -o /dev/null -w '%%{http_code}' --unix-socket %s http://x/metrics", path);
	assert_string_equal(out, "200");
	/* a second server on the same socket is refused: it is in use */
	assert_int_equal(sh("%s/tracekit serve --listen %s 2>&1", tk_test_build_dir(), arg), 1);
	assert_non_null(strstr(out, "in use"));
	stop_server(&s);
	assert_int_equal(lstat(path, &st), -1);
}

/* SIGTERM mid-capture: the client gets 503 with a reason, and serve exits 0. */
static void test_sigterm_mid_capture(void **state)
{
	struct server s;
	int status;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	sh("(sleep 1.5; kill -TERM %d) & curl -s -i '%s/debug/pprof/profile?seconds=20'; wait",
	   (int)s.pid, s.url);
	assert_non_null(strstr(out, " 503 "));
	assert_non_null(strstr(out, "stopping"));
	assert_int_equal(waitpid(s.pid, &status, 0), s.pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	s.pid = 0;
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
		cmocka_unit_test(test_go_pprof_over_http),
		cmocka_unit_test(test_redis_over_http),
		cmocka_unit_test(test_heap_over_http),
		cmocka_unit_test(test_metrics_promtool_and_prometheus),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_concurrent_captures),
		cmocka_unit_test(test_client_gone_leaks_nothing),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_long_capture),
		cmocka_unit_test(test_listen_policy),
		cmocka_unit_test(test_unix_socket),
		cmocka_unit_test(test_sigterm_mid_capture),
	};

	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests_name("serve", tests, setup, teardown);
}
