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
	char base[128];		/* http://127.0.0.1:PORT */
	char host[128];		/* 127.0.0.1:PORT */
	char url[256];		/* with the token as Basic auth's password: http://tk:TOKEN@... */
	char tokfile[256];	/* the token file it generated, or "" */
	char token[128];
	char err[600];		/* its stderr */
};

/* The generated token file's path from "token in PATH", and the token in it. */
static void read_generated_token(struct server *s, const char *line)
{
	const char *p = strstr(line, "token in ");
	FILE *f;

	if (!p)
		return;
	p += strlen("token in ");
	snprintf(s->tokfile, sizeof(s->tokfile), "%.*s", (int)strcspn(p, " \n,"), p);
	f = fopen(s->tokfile, "r");
	if (f && fgets(s->token, sizeof(s->token), f))
		s->token[strcspn(s->token, "\n")] = 0;
	if (f)
		fclose(f);
}

/* The servers running, so that a failed test's are ended by its teardown. */
static pid_t live[8];

static void track(pid_t pid, bool on)
{
	int i;

	for (i = 0; i < 8; i++)
		if (on ? live[i] == 0 : live[i] == pid) {
			live[i] = on ? pid : 0;
			return;
		}
}

static int kill_servers(void **state)
{
	int i;

	for (i = 0; i < 8; i++)
		if (live[i] > 0) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
	return 0;
}

/* Start build/tracekit serve ARGS... with its stderr in a file; wait for "listening on". */
static int start_server(struct server *s, const char *first, ...)
{
	const char *args[16] = { "tracekit", "serve" };
	char line[512], *p;
	va_list ap;
	int n = 2, i;
	FILE *f;

	va_start(ap, first);
	for (const char *a = first; a && n < 15; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	snprintf(s->err, sizeof(s->err), "%s/serve.%d.err", tmpdir, rand());
	s->url[0] = s->base[0] = s->tokfile[0] = s->token[0] = 0;
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		int fd = open(s->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 2);
		execv(tk_test_path(tk_test_build_dir(), "tracekit"), (char *const *)args);
		_exit(127);
	}
	track(s->pid, true);
	for (i = 0; i < 200; i++) {
		usleep(50 * 1000);
		f = fopen(s->err, "r");
		while (f && fgets(line, sizeof(line), f)) {
			p = strstr(line, "listening on ");

			if (p) {
				read_generated_token(s, p);
				p += strlen("listening on ");
				p[strcspn(p, " \n,")] = 0;
				snprintf(s->base, sizeof(s->base), "%s", p);
			}
		}
		if (f)
			fclose(f);
		if (s->base[0]) {
			p = strstr(s->base, "://");
			snprintf(s->host, sizeof(s->host), "%s", p ? p + 3 : s->base);
			if (s->token[0])
				snprintf(s->url, sizeof(s->url), "http://tk:%s@%s", s->token,
					 s->host);
			else
				snprintf(s->url, sizeof(s->url), "%s", s->base);
			return 0;
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			track(s->pid, false);
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
	track(s->pid, false);
	s->pid = 0;
}

/* Its fds that are BPF objects or perf events (readlink of /proc/PID/fd/N). */
static int bpf_fds(pid_t pid)
{
	sh("ls -l /proc/%d/fd 2>/dev/null | grep -cE 'anon_inode:(\\[perf_event\\]|bpf-)' || true",
	   (int)pid);
	return atoi(out);
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

static pid_t start_workload4(const char *name, const char *a1, const char *a2, const char *a3,
			     const char *a4)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		execl(tk_test_workload(name), name, a1, a2, a3, a4, (char *)NULL);
		_exit(127);
	}
	usleep(300 * 1000);
	return pid;
}

static pid_t start_workload(const char *name, const char *a1, const char *a2, const char *a3)
{
	return start_workload4(name, a1, a2, a3, NULL);
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
	/* the token as Prometheus reads it: authorization.credentials_file */
	fprintf(f, "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tracekit\n"
		"    authorization:\n      credentials_file: %s\n"
		"    static_configs:\n      - targets: ['%s']\n", s.tokfile, s.host);
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
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", "--allow-off-cpu", NULL), 0);
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

/*
 * libmicrohttpd (and gnutls, p11-kit, nettle... under it) is mapped by serve
 * only: every other command starts without them (dlopen in serve_mhd.c).
 */
static void test_http_stack_in_serve_only(void **state)
{
	struct server s;
	int http = -1, bpf = -1;
	pid_t pid;
	char pb[600];

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	sh("grep -c libmicrohttpd /proc/%d/maps", (int)s.pid);
	assert_true(atoi(out) > 0);
	stop_server(&s);

	snprintf(pb, sizeof(pb), "%s/plain.pb.gz", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(tk_test_path(tk_test_build_dir(), "tracekit"), "tracekit", "cpu", "-F", "19",
		      "-d", "2", "-o", pb, (char *)NULL);
		_exit(127);
	}
	usleep(800 * 1000);
	sh("grep -cE 'libmicrohttpd|libgnutls|libp11-kit|libnettle' /proc/%d/maps; "
	   "grep -c libbpf /proc/%d/maps", (int)pid, (int)pid);
	print_message("tracekit cpu's maps: http stack, libbpf: %s", out);
	/* both counts read, so a process already gone (no maps at all) fails, not passes */
	assert_int_equal(sscanf(out, "%d %d", &http, &bpf), 2);
	assert_int_equal(http, 0);
	assert_true(bpf > 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
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
	assert_int_equal(sh("%s/tracekit serve --listen 0.0.0.0:0 --allow-remote --no-auth 2>&1",
			    tk_test_build_dir()), 2);
	assert_non_null(strstr(out, "loopback only"));
	assert_int_equal(sh("%s/tracekit serve --listen 0.0.0.0:0 --no-auth 2>&1",
			    tk_test_build_dir()), 2);
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
	track(s.pid, false);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	s.pid = 0;
}

/* curl as uid 65534 (nobody), any other local user: the status code of @path */
static int get_as_nobody(const struct server *s, const char *path)
{
	sh("setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null "
	   "-w '%%{http_code}' '%s%s'", s->base, path);
	return atoi(out);
}

/* The value of the line "SERIES VALUE" of /metrics (@series ends with its space), or -1 */
static double metric(const struct server *s, const char *series)
{
	char line[256];
	const char *p;

	sh("curl -sf '%s/metrics'", s->url);
	snprintf(line, sizeof(line), "\n%s", series);
	p = strstr(out, line);
	return p ? atof(p + strlen(line)) : -1;
}

/*
 * A default serve asks every request for the credential it generated into a
 * root-only file: another local user, and root without it, get 401 for every
 * endpoint, and no capture runs. The token is taken as Bearer and as Basic
 * auth's password (curl -u, Go's http://USER:TOKEN@HOST/, go tool pprof in
 * test_go_pprof_over_http; Prometheus' credentials_file in the metrics test).
 */
static void test_credential_required(void **state)
{
	static const char *const paths[] = {
		"/", "/metrics", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap?pid=1&seconds=1",
		"/debug/pprof/profile?seconds=1&cgroup=/etc",
	};
	struct server s;
	struct stat st;
	char tokfile[256];
	size_t i;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, NULL), 0);	/* the defaults: 127.0.0.1:6060 */
	if (strcmp(s.host, "127.0.0.1:6060"))
		fail_msg("the default listener is not 127.0.0.1:6060: %s", s.host);
	assert_true(s.tokfile[0] && strlen(s.token) == 64);
	assert_int_equal(stat(s.tokfile, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 0777) == 0600);
	assert_int_equal(stat("/run/tracekit", &st), 0);
	assert_true(st.st_uid == 0 && (st.st_mode & 0077) == 0);
	/* nobody cannot read it */
	assert_int_not_equal(sh("setpriv --reuid=65534 --regid=65534 --clear-groups cat %s 2>&1",
				s.tokfile), 0);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(get_as_nobody(&s, paths[i]), 401);
		sh("curl -s -o /dev/null -w '%%{http_code}' '%s%s'", s.base, paths[i]);
		if (strcmp(out, "401"))
			fail_msg("%s without the token: %s, not 401", paths[i], out);
		sh("curl -s -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer %.63sx' '%s%s'",
		   s.token, s.base, paths[i]);
		assert_string_equal(out, "401");
		sh("curl -s -o /dev/null -w '%%{http_code}' -u 'tk:%.63sx' '%s%s'", s.token, s.base,
		   paths[i]);
		assert_string_equal(out, "401");
	}
	/* nothing ran for any of them */
	assert_true(metric(&s, "tracekit_captures_total{collector=\"cpu\",outcome=\"ok\"} ") == 0);
	assert_true(metric(&s, "tracekit_captures_total{collector=\"cpu\",outcome=\"bad_request\"} ")
		    == 0);
	assert_true(metric(&s, "tracekit_http_responses_total{code=\"401\"} ") >= 20);
	/* with it: Bearer, and Basic with any user name */
	sh("curl -s -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer %s' '%s/metrics'",
	   s.token, s.base);
	assert_string_equal(out, "200");
	sh("curl -s -o /dev/null -w '%%{http_code}' -u 'anyone:%s' "
	   "'%s/debug/pprof/profile?seconds=1'", s.token, s.base);
	assert_string_equal(out, "200");
	snprintf(tokfile, sizeof(tokfile), "%s", s.tokfile);
	stop_server(&s);
	/* its token file goes with it */
	assert_int_equal(lstat(tokfile, &st), -1);
}

/* --no-auth: loopback only, and it says what that exposes. */
static void test_no_auth(void **state)
{
	struct server s;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", "--no-auth", NULL), 0);
	assert_string_equal(s.tokfile, "");
	assert_int_equal(get_as_nobody(&s, "/metrics"), 200);
	sh("cat %s", s.err);
	assert_non_null(strstr(out, "every local user"));
	stop_server(&s);
}

/*
 * A page of another site, open in a browser on this host, makes requests with
 * the browser's headers: refused whatever they carry (a browser that was once
 * given the token sends it again with them), and no capture runs. Tried with
 * --no-auth, so that only this check stands in the way, and in a real headless
 * Chromium: a page on another port of 127.0.0.1 (same site, another origin)
 * with an <img> of a profile.
 */
static void test_cross_site(void **state)
{
	static const char *const refused[] = {
		"-H 'Sec-Fetch-Site: cross-site' -H 'Sec-Fetch-Mode: no-cors' "
		"-H 'Sec-Fetch-Dest: image' -H 'Referer: http://evil.example/'",
		"-H 'Sec-Fetch-Site: same-site' -H 'Sec-Fetch-Mode: no-cors'",
		"-H 'Origin: http://evil.example'",
		"-H 'Origin: null'",
		"-H 'Referer: http://evil.example/page.html'",	/* a browser without Sec-Fetch */
	};
	struct server s;
	char page[600], srvdir[600];
	int port = 20000 + rand() % 1000, i;
	pid_t web;
	FILE *f;

	NEED_ROOT();
	need_tools();
	NEED_DEP(system("command -v chromium >/dev/null && command -v python3 >/dev/null") == 0,
		 "chromium, python3\n");
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", "--no-auth", NULL), 0);
	for (i = 0; i < (int)(sizeof(refused) / sizeof(refused[0])); i++) {
		sh("curl -s -i %s '%s/debug/pprof/profile?seconds=1'", refused[i], s.base);
		if (!strstr(out, " 403 ") || !strstr(out, "another"))
			fail_msg("not refused (%s):\n%s", refused[i], out);
	}
	/* the address bar (none), and the server's own origin */
	sh("curl -s -o /dev/null -w '%%{http_code}' -H 'Sec-Fetch-Site: none' '%s/metrics'", s.base);
	assert_string_equal(out, "200");
	sh("curl -s -o /dev/null -w '%%{http_code}' -H 'Sec-Fetch-Site: same-origin' "
	   "-H 'Origin: %s' '%s/metrics'", s.base, s.base);
	assert_string_equal(out, "200");
	assert_true(metric(&s, "tracekit_captures_total{collector=\"cpu\",outcome=\"ok\"} ") == 0);

	/* a real browser */
	snprintf(srvdir, sizeof(srvdir), "%s/site", tmpdir);
	mkdir(srvdir, 0755);
	snprintf(page, sizeof(page), "%s/index.html", srvdir);
	f = fopen(page, "w");
	assert_non_null(f);
	fprintf(f, "<!doctype html><title>elsewhere</title>"
		"<img src=\"%s/debug/pprof/profile?seconds=1\">"
		"<img src=\"http://localhost:%s/debug/pprof/profile?seconds=1&x=2\">",
		s.base, strrchr(s.host, ':') + 1);
	fclose(f);
	web = fork();
	if (web == 0) {
		int fd = open("/dev/null", O_WRONLY);
		char p[16];

		dup2(fd, 1);
		dup2(fd, 2);
		snprintf(p, sizeof(p), "%d", port);
		execlp("python3", "python3", "-m", "http.server", "-b", "127.0.0.1", "-d", srvdir, p,
		       (char *)NULL);
		_exit(127);
	}
	usleep(800 * 1000);
	sh("rm -rf %s/chr && timeout 90 chromium --headless --no-sandbox --disable-gpu "
	   "--no-first-run --disable-extensions --disable-background-networking "
	   "--disable-component-update --disable-sync --virtual-time-budget=4000 "
	   "--user-data-dir=%s/chr --dump-dom 'http://127.0.0.1:%d/index.html' 2>/dev/null",
	   tmpdir, tmpdir, port);
	kill(web, SIGTERM);
	waitpid(web, NULL, 0);
	if (!strstr(out, "elsewhere"))
		fail_msg("chromium did not load the page:\n%s", out);
	if (metric(&s, "tracekit_http_cross_site_refused_total ") < 6)	/* 5 of curl's */
		fail_msg("chromium's requests were not refused as cross-site:\n%s", out);
	assert_true(metric(&s, "tracekit_captures_total{collector=\"cpu\",outcome=\"ok\"} ") == 0);
	stop_server(&s);
}

/* Open @n connections that send a request line, then a byte every 0.5 s; the child's pid. */
static pid_t slow_clients(const char *host, int n, double seconds)
{
	pid_t pid = fork();

	if (pid == 0) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "import socket,time\n"
			 "h,p='%.*s',%s\nss=[]\n"
			 "for i in range(%d):\n s=socket.create_connection((h,p)); "
			 "s.send(b'GET / HTTP/1.1\\r\\n'); ss.append(s)\n"
			 "t=time.time()\nwhile time.time()-t<%g:\n time.sleep(0.5)\n for s in ss:\n"
			 "  try: s.send(b'X-a: b\\r\\n')\n  except OSError: pass\n",
			 (int)(strchr(host, ':') - host), host, strchr(host, ':') + 1, n, seconds);
		execlp("python3", "python3", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * Slow clients cannot lock the others out: 20 connections that trickle their
 * headers, and a legitimate client is still answered within 2 s; a connection
 * that never finishes its headers is closed at the deadline, whatever it sends.
 */
static void test_slow_clients(void **state)
{
	struct server s;
	double t0;
	pid_t slow;

	NEED_ROOT();
	need_tools();
	NEED_DEP(system("command -v python3 >/dev/null") == 0, "python3\n");
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	slow = slow_clients(s.host, 20, 14);
	sleep(2);
	t0 = mono_now();
	sh("curl -s -m 2 -o /dev/null -w '%%{http_code}' '%s/metrics'", s.url);
	print_message("answered in %.3f s beside 20 slow clients\n", mono_now() - t0);
	assert_string_equal(out, "200");
	assert_true(mono_now() - t0 < 2);
	assert_true(metric(&s, "tracekit_http_connections_closed_total{reason=\"max_per_address\"} ")
		    >= 12);
	/* the slow ones left are closed at the 10 s deadline, bytes or not */
	sleep(11);
	assert_true(metric(&s, "tracekit_http_connections_closed_total{reason=\"header_deadline\"} ")
		    >= 1);
	waitpid(slow, NULL, 0);
	/* the same past the global limit, with one address allowed all of them */
	stop_server(&s);
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", "--max-connections", "8",
				      "--max-per-address", "64", NULL), 0);
	slow = slow_clients(s.host, 20, 4);
	sleep(2);
	t0 = mono_now();
	sh("curl -s -m 2 -o /dev/null -w '%%{http_code}' '%s/metrics'", s.url);
	assert_string_equal(out, "200");
	assert_true(mono_now() - t0 < 2);
	assert_true(metric(&s, "tracekit_http_connections_closed_total{reason=\"max_connections\"} ")
		    >= 12);
	waitpid(slow, NULL, 0);
	stop_server(&s);
}

/* What a request may cost is the server's to say: seconds, hz and off_cpu past it get 400. */
static void test_capture_limits(void **state)
{
	struct server s;

	NEED_ROOT();
	need_tools();
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
#define LIMIT(path, why)                                                                  \
	do {                                                                              \
		sh("curl -s -i '%s%s'", s.url, path);                                     \
		if (!strstr(out, " 400 ") || !strstr(out, why))                          \
			fail_msg("%s: not 400 '%s':\n%s", path, why, out);                 \
	} while (0)
	LIMIT("/debug/pprof/profile?seconds=61", "--max-seconds");
	LIMIT("/debug/pprof/profile?seconds=3600&hz=10000", "--max-seconds");
	LIMIT("/debug/pprof/profile?seconds=1&hz=1001", "--max-hz");
	LIMIT("/debug/pprof/profile?seconds=1&off_cpu=1", "--allow-off-cpu");
	LIMIT("/debug/pprof/heap?pid=1&seconds=61", "--max-seconds");
	sh("curl -s '%s/'", s.url);
	assert_non_null(strstr(out, "seconds up to 60"));
	assert_non_null(strstr(out, "hz up to 1000"));
	stop_server(&s);
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", "--max-seconds", "2",
				      "--max-hz", "50", "--allow-off-cpu", NULL), 0);
	LIMIT("/debug/pprof/profile?seconds=3", "limit of 2");
	LIMIT("/debug/pprof/profile?seconds=1&hz=51", "limit of 50");
	sh("curl -s -o /dev/null -w '%%{http_code}' '%s/debug/pprof/profile?seconds=2&hz=50&off_cpu=1'",
	   s.url);
	assert_string_equal(out, "200");
	stop_server(&s);
#undef LIMIT
}

/*
 * cgroup= names a directory of the cgroup v2 hierarchy, reached without a link;
 * anything else is refused with the same words, present or not.
 */
static void test_cgroup_param(void **state)
{
	struct server s;
	char link[600], a[1024], b[1024], mnt[256];

	NEED_ROOT();
	need_tools();
	sh("awk '/ - cgroup2 / {print $5; exit}' /proc/self/mountinfo");
	out[strcspn(out, "\n")] = 0;
	NEED_DEP(out[0] == '/', "a cgroup2 mount\n");
	snprintf(mnt, sizeof(mnt), "%s", out);
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	sh("curl -s '%s/debug/pprof/profile?seconds=1&cgroup=/etc'", s.url);
	snprintf(a, sizeof(a), "%s", out);
	sh("curl -s '%s/debug/pprof/profile?seconds=1&cgroup=/no/such/dir'", s.url);
	snprintf(b, sizeof(b), "%s", out);
	assert_non_null(strstr(a, "is not a directory of the cgroup v2 hierarchy"));
	assert_non_null(strstr(b, "is not a directory of the cgroup v2 hierarchy"));
	/* the same answer but for the path itself */
	assert_string_equal(strstr(a, "' is not"), strstr(b, "' is not"));
	snprintf(link, sizeof(link), "%s/cg", tmpdir);
	assert_int_equal(symlink(mnt, link), 0);
	sh("curl -s -o /dev/null -w '%%{http_code}' '%s/debug/pprof/profile?seconds=1&cgroup=%s'",
	   s.url, link);
	assert_string_equal(out, "400");
	sh("curl -s -o /dev/null -w '%%{http_code}' "
	   "'%s/debug/pprof/profile?seconds=1&cgroup=%s'", s.url, mnt + 1);	/* relative */
	assert_string_equal(out, "400");
	sh("curl -s -o /dev/null -w '%%{http_code}' "
	   "'%s/debug/pprof/profile?seconds=1&cgroup=%s/../../../../../etc'", s.url, mnt);
	assert_string_equal(out, "400");
	sh("curl -s -o /dev/null -w '%%{http_code}' "
	   "'%s/debug/pprof/profile?seconds=1&cgroup=%s'", s.url, mnt);
	assert_string_equal(out, "200");
	stop_server(&s);
	assert_int_equal(sh("%s/tracekit serve --listen 127.0.0.1:0 --cgroup /etc 2>&1",
			    tk_test_build_dir()), 1);
	assert_non_null(strstr(out, "cgroup v2"));
}

/* The pprof comments of a heap profile fetched from @url into @pb */
static void heap_comments(const char *url, const char *pb)
{
	int code = get(url, pb);

	if (code != 200)
		fail_msg("%s: %d", url, code);
	sh("HOME=%s PPROF_TMPDIR=%s go tool pprof -comments %s 2>&1", tmpdir, tmpdir, pb);
}

/*
 * /debug/pprof/heap within --alloc-budget, as record does: a process that
 * allocates little is sampled; one that allocates millions of times a second
 * gets growth (page faults), and the profile says why; a process whose rate
 * rises during a sampled profile has it ended early (Debian's redis-server,
 * idle at the forecast, then loaded).
 */
static void test_heap_budget(void **state)
{
	struct server s;
	char url[512], pb[600];
	int port = 21000 + rand() % 1000;
	pid_t w, redis;

	NEED_ROOT();
	need_tools();
	NEED_DEP(access("/usr/bin/redis-server", X_OK) == 0 &&
		 access("/usr/bin/redis-benchmark", X_OK) == 0, "redis-server, redis-benchmark\n");
	assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
	snprintf(pb, sizeof(pb), "%s/budget.pb.gz", tmpdir);
	w = start_workload4("alloc_bench", "--loop", "tight", "-n", "2000000000");
	snprintf(url, sizeof(url), "%s/debug/pprof/heap?pid=%d&seconds=1", s.url, (int)w);
	heap_comments(url, pb);
	stop_workload(w);
	if (!strstr(out, "allocations: growth (page faults): sampling") ||
	    !strstr(out, "over the 2.0 % budget"))
		fail_msg("a busy allocator was not traced by growth within the budget:\n%s", out);

	redis = tk_test_start_redis(port);
	assert_true(redis > 0);
	snprintf(url, sizeof(url), "%s/debug/pprof/heap?pid=%d&seconds=6", s.url, (int)redis);
	sh("(sleep 2; timeout 7 redis-benchmark -p %d -q -n 10000000 -t set,get >/dev/null 2>&1) & "
	   "curl -s -o %s -w '%%{http_code}' '%s'; wait", port, pb, url);
	kill(redis, SIGTERM);
	waitpid(redis, NULL, 0);
	assert_string_equal(out, "200");
	sh("HOME=%s PPROF_TMPDIR=%s go tool pprof -comments %s 2>&1", tmpdir, tmpdir, pb);
	if (!strstr(out, "allocations: sampled:") || !strstr(out, "ended early"))
		fail_msg("the idle forecast did not sample, or the guard did not end it:\n%s", out);
	assert_true(metric(&s, "tracekit_heap_ended_over_budget_total ") == 1);
	stop_server(&s);
}

/* The token file: a regular file of root's, 0600, one line of at most 511 characters. */
static void test_token_file(void **state)
{
	char tok[600], fifo[600], lnk[600], big[700];
	double t0;
	FILE *f;

	NEED_ROOT();
	snprintf(tok, sizeof(tok), "%s/tok-long", tmpdir);
	memset(big, 'a', 600);
	big[600] = 0;
	f = fopen(tok, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", big);
	fclose(f);
	chmod(tok, 0600);
	assert_int_equal(sh("timeout 10 %s/tracekit serve --listen 127.0.0.1:0 --token-file %s 2>&1",
			    tk_test_build_dir(), tok), 1);
	assert_non_null(strstr(out, "longer than 511"));

	snprintf(tok, sizeof(tok), "%s/tok-nobody", tmpdir);
	f = fopen(tok, "w");
	assert_non_null(f);
	fputs("s3cret-token-0123456789\n", f);
	fclose(f);
	chmod(tok, 0600);
	assert_int_equal(chown(tok, 65534, 65534), 0);
	assert_int_equal(sh("timeout 10 %s/tracekit serve --listen 127.0.0.1:0 --token-file %s 2>&1",
			    tk_test_build_dir(), tok), 1);
	assert_non_null(strstr(out, "belongs to uid 65534"));

	snprintf(fifo, sizeof(fifo), "%s/tok-fifo", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	t0 = mono_now();
	assert_int_equal(sh("timeout 5 %s/tracekit serve --listen 127.0.0.1:0 --token-file %s 2>&1",
			    tk_test_build_dir(), fifo), 1);
	assert_true(mono_now() - t0 < 3);
	assert_non_null(strstr(out, "not a regular file"));

	snprintf(lnk, sizeof(lnk), "%s/tok-link", tmpdir);
	assert_int_equal(chown(tok, 0, 0), 0);
	assert_int_equal(symlink(tok, lnk), 0);
	assert_int_equal(sh("timeout 10 %s/tracekit serve --listen 127.0.0.1:0 --token-file %s 2>&1",
			    tk_test_build_dir(), lnk), 1);
	assert_non_null(strstr(out, "cannot open the token file"));
}

/*
 * The first scrape of /metrics starts the NUMA session (loading its BPF object
 * takes ~0.1 s here); it does so without the server's lock, so a request that
 * arrives meanwhile is answered at once rather than after it. Three tries on a
 * fresh server each: a loaded machine may delay the second request by itself.
 */
static void test_numa_start_blocks_nobody(void **state)
{
	double first = 0, other = 0;
	struct server s;
	int i;

	NEED_ROOT();
	need_tools();
	for (i = 0; i < 3; i++) {
		assert_int_equal(start_server(&s, "--listen", "127.0.0.1:0", NULL), 0);
		sh("curl -s -o /dev/null -w 'first %%{time_total}\\n' '%s/metrics' & sleep 0.02; "
		   "curl -s -o /dev/null -w 'other %%{time_total}\\n' '%s/'; wait", s.url, s.url);
		stop_server(&s);
		first = atof(strstr(out, "first ") + 6);
		other = atof(strstr(out, "other ") + 6);
		print_message("the first /metrics took %.3f s, a request meanwhile %.3f s\n", first,
			      other);
		if (other < first / 2)
			return;
	}
	fail_msg("a request waited for the NUMA session's start: %.3f s of %.3f s", other, first);
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
		cmocka_unit_test_teardown(test_go_pprof_over_http, kill_servers),
		cmocka_unit_test_teardown(test_redis_over_http, kill_servers),
		cmocka_unit_test_teardown(test_heap_over_http, kill_servers),
		cmocka_unit_test_teardown(test_metrics_promtool_and_prometheus, kill_servers),
		cmocka_unit_test_teardown(test_bad_requests, kill_servers),
		cmocka_unit_test_teardown(test_concurrent_captures, kill_servers),
		cmocka_unit_test_teardown(test_client_gone_leaks_nothing, kill_servers),
		cmocka_unit_test_teardown(test_idle, kill_servers),
		cmocka_unit_test_teardown(test_http_stack_in_serve_only, kill_servers),
		cmocka_unit_test_teardown(test_long_capture, kill_servers),
		cmocka_unit_test_teardown(test_listen_policy, kill_servers),
		cmocka_unit_test_teardown(test_unix_socket, kill_servers),
		cmocka_unit_test_teardown(test_sigterm_mid_capture, kill_servers),
		cmocka_unit_test_teardown(test_credential_required, kill_servers),
		cmocka_unit_test_teardown(test_no_auth, kill_servers),
		cmocka_unit_test_teardown(test_cross_site, kill_servers),
		cmocka_unit_test_teardown(test_slow_clients, kill_servers),
		cmocka_unit_test_teardown(test_capture_limits, kill_servers),
		cmocka_unit_test_teardown(test_cgroup_param, kill_servers),
		cmocka_unit_test_teardown(test_heap_budget, kill_servers),
		cmocka_unit_test_teardown(test_token_file, kill_servers),
		cmocka_unit_test_teardown(test_numa_start_blocks_nobody, kill_servers),
	};

	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests_name("serve", tests, setup, teardown);
}
