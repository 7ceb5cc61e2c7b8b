// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit serve: profiles on tap, in the conventions fleets already scrape.
 *
 *   /debug/pprof/profile?seconds=N   CPU, Go's net/http/pprof convention (what
 *                                    `go tool pprof URL`, Parca and Pyroscope ask)
 *   /debug/pprof/heap?pid=P&seconds=N  the allocations of one process
 *   /metrics                         Prometheus text: NUMA migrations by reason and
 *                                    node pair, tracekit's own losses and cost,
 *                                    capability states as 0/1 gauges
 *
 * HTTP is libmicrohttpd's (Debian's libmicrohttpd12), not a parser of ours: it is
 * a maintained, fuzzed server library with its own request limits, and it runs
 * here with a thread per connection, so a capture can block its connection's
 * thread for its N seconds while the others are served. Each capture is an
 * ordinary session, opened for the request and freed at its end: nothing is
 * attached while nothing is asked. A client that leaves mid-capture (its socket
 * reports POLLRDHUP) ends the capture at the next tick and leaks nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <microhttpd.h>

#include "cli.h"
#include "core/httpq.h"
#include "core/session.h"
#include "numa/numa_report.h"
#include "profile/profile.h"
#include "tracekit/tracekit.h"

static const char usage_serve[] =
	"Usage: tracekit serve [OPTIONS]\n"
	"\n"
	"Serve profiles over HTTP in the conventions fleets already scrape:\n"
	"  /debug/pprof/profile?seconds=N   a CPU profile (Go's net/http/pprof: `go\n"
	"                  tool pprof http://HOST:PORT/debug/pprof/profile`, Parca,\n"
	"                  Pyroscope); also pid=PID (repeatable), cgroup=DIR, hz=HZ,\n"
	"                  off_cpu=1\n"
	"  /debug/pprof/heap?pid=PID&seconds=N   the allocations of one process\n"
	"                  (mode=sampled or growth)\n"
	"  /metrics        Prometheus text: NUMA page migrations by reason and node\n"
	"                  pair, tracekit's losses and cost, capabilities as 0/1\n"
	"seconds defaults to 30 (1 to 3600). One capture per collector at a time:\n"
	"another gets 429 with Retry-After. Nothing is attached while nothing is\n"
	"asked; /metrics starts counting NUMA migrations at its first scrape.\n"
	"\n"
	"      --listen ADDR    ADDR:PORT, [ADDR6]:PORT, or unix:PATH (a socket of\n"
	"                       mode 0600) (default 127.0.0.1:6060)\n"
	"      --allow-remote   listen on an address that is not loopback (a token\n"
	"                       file is then needed)\n"
	"      --token-file FILE  every request needs 'Authorization: Bearer TOKEN',\n"
	"                       TOKEN the first line of FILE (mode 0600 or stricter)\n"
	"      --cgroup DIR     /metrics: only the migrations of tasks in this cgroup\n"
	"                       v2 directory (labelled cgroup=DIR)\n"
	"      --max-connections N  connections served at once (default 16, 1 to 1024)\n"
	"  -v, --verbose        log each request on stderr, and libbpf's messages\n"
	"  -h, --help           this help\n"
	"\n"
	"SIGINT or SIGTERM ends it: running captures are stopped, their clients get\n"
	"503. Exit codes: 0 served until asked to stop, 1 could not serve, 2 bad usage.\n";

enum { SLOT_CPU, SLOT_ALLOC, SLOT__COUNT };
static const char *const slot_name[SLOT__COUNT] = { "cpu", "alloc" };

#define MAX_LOSS_NAMES 64
#define MAX_PAIRS 256
#define MAX_CODES 16

struct slot {
	bool busy;
	struct tk_session *s;
	double until;			/* monotonic end of the running capture */
	uint64_t ok, aborted, failed, busy_refused, bad;
	double seconds;
	int in_progress;
};

struct srv {
	struct MHD_Daemon *d;
	int lfd;
	bool unix_sock, loopback;
	char where[PATH_MAX + 32];	/* "http://127.0.0.1:6060" or "unix:/run/x.sock" */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char token[512];
	size_t token_len;
	const char *cgroup;
	struct tk_caps *caps;
	atomic_bool stopping;

	pthread_mutex_t lock;		/* everything below */
	struct slot slot[SLOT__COUNT];
	/* losses of the captures served, by collector and counter name */
	struct {
		char name[48];
		uint64_t count[SLOT__COUNT];
		bool seen[SLOT__COUNT];	/* the collector has this counter */
	} loss[MAX_LOSS_NAMES];
	int nr_loss;
	struct { int code; uint64_t n; } codes[MAX_CODES];
	int nr_codes;
	/* NUMA: a session started at the first /metrics, run by its own thread */
	bool numa_tried, numa_running;
	char numa_why[512], numa_backend[16];
	struct tk_session *numa;
	pthread_t numa_th;
	bool have_reasons;
	uint64_t mig_ok[TK_MR__COUNT], mig_fail[TK_MR__COUNT];
	uint64_t thp_ok, thp_fail, thp_split;
	struct { int src, dst; uint64_t pages; } pair[MAX_PAIRS];
	int nr_pairs;
	uint64_t pairs_dropped;		/* pages of node pairs past MAX_PAIRS */
	uint64_t pairs_lost;		/* migrations whose pair found the BPF map full */
};

static struct srv srv;

struct req {
	char uri[8192];
	bool truncated;
};

static void count_code(int code)
{
	int i;

	for (i = 0; i < srv.nr_codes; i++)
		if (srv.codes[i].code == code) {
			srv.codes[i].n++;
			return;
		}
	if (srv.nr_codes < MAX_CODES) {
		srv.codes[srv.nr_codes].code = code;
		srv.codes[srv.nr_codes++].n = 1;
	}
}

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *r = calloc(1, sizeof(*r));

	if (r) {
		r->truncated = strlen(uri) >= sizeof(r->uri);
		snprintf(r->uri, sizeof(r->uri), "%s", uri);
	}
	return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

/* Queue a reply; @body is copied. Returns MHD's answer. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     const void *body, size_t len, bool must_free, const char *retry_after)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body,
					       must_free ? MHD_RESPMEM_MUST_FREE
							 : MHD_RESPMEM_MUST_COPY);
	if (!resp) {
		if (must_free)
			free((void *)body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (code >= 400) {
		/* Go's pprof client prints the body of a reply that says this */
		MHD_add_response_header(resp, "X-Go-Pprof", "1");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	}
	if (code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"tracekit\"");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET");
	if (retry_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry_after);
	pthread_mutex_lock(&srv.lock);
	count_code((int)code);
	pthread_mutex_unlock(&srv.lock);
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result error_reply(struct MHD_Connection *c, unsigned int code,
				   const char *retry_after, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum MHD_Result error_reply(struct MHD_Connection *c, unsigned int code,
				   const char *retry_after, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	msg[n] = 0;
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: %u: %s", code, msg);
	return reply(c, code, "text/plain; charset=utf-8", msg, (size_t)n, false, retry_after);
}

/* Constant-time: as long whatever matches, so a token cannot be guessed by timing. */
static bool token_ok(const char *got)
{
	const char *p = "Bearer ";
	unsigned char diff = 0;
	size_t i, len;

	if (!got || strncasecmp(got, p, strlen(p)))
		return false;
	got += strlen(p);
	len = strlen(got);
	diff = len != srv.token_len;
	for (i = 0; i < srv.token_len; i++)
		diff |= (unsigned char)srv.token[i] ^ (unsigned char)(i < len ? got[i] : 0);
	return diff == 0;
}

/* A Host a loopback listener may be asked by (others: DNS rebinding from a browser). */
static bool host_ok(const char *host)
{
	char name[256];
	size_t n;

	if (!host)
		return true;	/* HTTP/1.0 */
	if (host[0] == '[') {
		n = strcspn(host, "]");
		snprintf(name, sizeof(name), "%.*s", (int)n - 1, host + 1);
	} else {
		n = strcspn(host, ":");
		snprintf(name, sizeof(name), "%.*s", (int)n, host);
	}
	if (!strcasecmp(name, "localhost") || !strcmp(name, "::1"))
		return true;
	return !strncmp(name, "127.", 4) && strspn(name, "0123456789.") == strlen(name);
}

/* The client's socket: has it gone (FIN or reset) while its capture runs? */
struct capture_ctx {
	int fd;
	bool gone;
};

static void capture_tick(struct tk_session *s, double elapsed, void *arg)
{
	struct capture_ctx *cc = arg;
	struct pollfd p = { .fd = cc->fd, .events = POLLRDHUP };

	if (cc->fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		cc->gone = true;
		tk_session__stop(s);
	}
}

static void add_losses(int slot, const struct tk_profile *p)
{
	int l, k;

	for (l = 0; p && l < p->nr_losses && l < TK_PROFILE_MAX_LOSSES; l++) {
		for (k = 0; k < srv.nr_loss; k++)
			if (!strcmp(srv.loss[k].name, p->losses[l].name))
				break;
		if (k == srv.nr_loss) {
			if (srv.nr_loss == MAX_LOSS_NAMES)
				continue;
			snprintf(srv.loss[srv.nr_loss].name, sizeof(srv.loss[0].name), "%s",
				 p->losses[l].name);
			srv.nr_loss++;
		}
		srv.loss[k].count[slot] += p->losses[l].count;
		srv.loss[k].seen[slot] = true;
	}
}

static bool exists_pid(int pid)
{
	return !kill(pid, 0) || errno != ESRCH;
}

static enum MHD_Result capture(struct MHD_Connection *c, int slot, const char *query)
{
	static struct tk_httpq q;	/* big: parsed under the lock below */
	struct tk_capture_args a;
	struct tk_run_opts ro = { .sz = TK_OPTS_SZ(tk_run_opts) };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = srv.caps };
	const union MHD_ConnectionInfo *ci;
	struct capture_ctx cc = { .fd = -1 };
	struct tk_result *res = NULL;
	struct tk_session *s = NULL;
	char why[512] = "", retry[32];
	double t0 = mono_s(), left;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err, i;
	struct stat st;

	pthread_mutex_lock(&srv.lock);
	err = tk_httpq__parse(query, strlen(query), &q, why, sizeof(why));
	if (!err)
		err = tk_httpq__capture_args(&q, slot == SLOT_CPU ? TK_HTTPQ_PROFILE
								 : TK_HTTPQ_HEAP, &a, why, sizeof(why));
	if (err)
		srv.slot[slot].bad++;
	pthread_mutex_unlock(&srv.lock);
	if (err)
		return error_reply(c, MHD_HTTP_BAD_REQUEST, NULL, "bad request: %s", why);
	for (i = 0; i < a.nr_pids; i++)
		if (!exists_pid(a.pids[i])) {
			pthread_mutex_lock(&srv.lock);
			srv.slot[slot].bad++;
			pthread_mutex_unlock(&srv.lock);
			return error_reply(c, MHD_HTTP_BAD_REQUEST, NULL,
					   "bad request: no process with pid %d", a.pids[i]);
		}
	if (a.cgroup[0] && (stat(a.cgroup, &st) || !S_ISDIR(st.st_mode))) {
		pthread_mutex_lock(&srv.lock);
		srv.slot[slot].bad++;
		pthread_mutex_unlock(&srv.lock);
		return error_reply(c, MHD_HTTP_BAD_REQUEST, NULL,
				   "bad request: cgroup '%s' is not a directory", a.cgroup);
	}

	pthread_mutex_lock(&srv.lock);
	if (atomic_load(&srv.stopping)) {
		pthread_mutex_unlock(&srv.lock);
		return error_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "tracekit is stopping");
	}
	if (srv.slot[slot].busy) {
		left = srv.slot[slot].until - mono_s();
		snprintf(retry, sizeof(retry), "%d", left > 1 ? (int)ceil(left) : 1);
		srv.slot[slot].busy_refused++;
		pthread_mutex_unlock(&srv.lock);
		return error_reply(c, MHD_HTTP_TOO_MANY_REQUESTS, retry, "busy: a %s capture is "
				   "running (%s s left); one at a time", slot_name[slot], retry);
	}
	srv.slot[slot].busy = true;
	srv.slot[slot].until = t0 + a.seconds;
	srv.slot[slot].in_progress = 1;
	pthread_mutex_unlock(&srv.lock);

	if (slot == SLOT_CPU) {
		struct tk_cpu_opts o = { .sz = TK_OPTS_SZ(tk_cpu_opts),
					 .freq_hz = a.freq_hz ? a.freq_hz : 99,
					 .cgroup = a.cgroup[0] ? a.cgroup : NULL,
					 .off_cpu = a.off_cpu };

		for (i = 0; i < a.nr_pids; i++)
			o.pids[o.nr_pids++] = a.pids[i];
		s = tk_session__open_cpu(&o, &so, why, sizeof(why));
	} else {
		struct tk_alloc_opts o = { .sz = TK_OPTS_SZ(tk_alloc_opts), .pid = a.pids[0],
					   .mode = a.growth ? TK_ALLOC_MODE_GROWTH
							    : TK_ALLOC_MODE_SAMPLED };

		so.caps = NULL;		/* the snapshot's process entries are the target's */
		s = tk_session__open_alloc(&o, &so, why, sizeof(why));
	}
	if (!s) {
		err = -errno;
		goto unavailable;
	}
	pthread_mutex_lock(&srv.lock);
	srv.slot[slot].s = s;
	pthread_mutex_unlock(&srv.lock);
	if (atomic_load(&srv.stopping)) {
		snprintf(why, sizeof(why), "tracekit is stopping");
		goto unavailable;
	}
	err = tk_session__start(s, why, sizeof(why));
	if (err)
		goto unavailable;
	/* the capture holds this connection's thread: no idle timeout while it runs */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned int)0);
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	cc.fd = ci ? ci->connect_fd : -1;
	ro.duration_ms = (uint64_t)a.seconds * 1000;
	ro.on_tick = capture_tick;
	ro.ctx = &cc;
	err = tk_session__run(s, &ro);
	if (!err)
		err = tk_session__finish(s, &res);
	pthread_mutex_lock(&srv.lock);
	srv.slot[slot].s = NULL;
	pthread_mutex_unlock(&srv.lock);
	if (cc.gone || atomic_load(&srv.stopping) || err) {
		tk_result__free(res);
		tk_session__free(s);
		pthread_mutex_lock(&srv.lock);
		if (cc.gone)
			srv.slot[slot].aborted++;
		else
			srv.slot[slot].failed++;
		srv.slot[slot].seconds += mono_s() - t0;
		srv.slot[slot].busy = false;
		srv.slot[slot].in_progress = 0;
		pthread_mutex_unlock(&srv.lock);
		if (cc.gone) {
			if (env.verbose)
				fprintf(stderr, "tracekit: serve: the client left a %s capture after "
					"%.1f s; it was ended\n", slot_name[slot], mono_s() - t0);
			return MHD_NO;	/* nobody to answer: close */
		}
		if (err)
			return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
					   "the capture failed: %s", strerror(-err));
		return error_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
				   "tracekit is stopping: the capture was ended");
	}
	f = open_memstream(&buf, &len);
	err = f ? tk_result__write(res, TK_FORMAT_PPROF, f, 0) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -EIO;
	pthread_mutex_lock(&srv.lock);
	add_losses(slot, tk_result__profile(res));
	if (err)
		srv.slot[slot].failed++;
	else
		srv.slot[slot].ok++;
	srv.slot[slot].seconds += mono_s() - t0;
	srv.slot[slot].busy = false;
	srv.slot[slot].in_progress = 0;
	pthread_mutex_unlock(&srv.lock);
	tk_result__free(res);
	tk_session__free(s);
	if (err) {
		free(buf);
		return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
				   "the profile could not be written: %s", strerror(-err));
	}
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: 200: a %s profile of %d s, %zu bytes\n",
			slot_name[slot], a.seconds, len);
	return reply(c, MHD_HTTP_OK, "application/octet-stream", buf, len, true, NULL);

unavailable:
	if (s)
		tk_session__free(s);
	pthread_mutex_lock(&srv.lock);
	srv.slot[slot].s = NULL;
	srv.slot[slot].failed++;
	srv.slot[slot].busy = false;
	srv.slot[slot].in_progress = 0;
	pthread_mutex_unlock(&srv.lock);
	return error_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the %s collector is "
			   "unavailable: %s", slot_name[slot],
			   why[0] ? why : strerror(err < 0 ? -err : EIO));
}

/* ---- /metrics ------------------------------------------------------------------ */

static int numa_interval(struct tk_session *s, struct tk_result *r, double elapsed, void *ctx)
{
	const struct tk_numa_report *n = r->report;
	int i, k;

	pthread_mutex_lock(&srv.lock);
	if (n) {
		srv.have_reasons |= n->have_reasons;
		for (i = 0; i < TK_MR__COUNT; i++) {
			srv.mig_ok[i] += n->by_reason[i].succeeded;
			srv.mig_fail[i] += n->by_reason[i].failed;
		}
		srv.thp_ok += n->total.thp_succeeded;
		srv.thp_fail += n->total.thp_failed;
		srv.thp_split += n->total.thp_split;
		srv.pairs_lost += n->pairs_lost;
		for (i = 0; i < n->nr_pairs; i++) {
			for (k = 0; k < srv.nr_pairs; k++)
				if (srv.pair[k].src == n->pairs[i].src &&
				    srv.pair[k].dst == n->pairs[i].dst)
					break;
			if (k == srv.nr_pairs) {
				if (k == MAX_PAIRS) {
					srv.pairs_dropped += n->pairs[i].pages;
					continue;
				}
				srv.pair[k].src = n->pairs[i].src;
				srv.pair[k].dst = n->pairs[i].dst;
				srv.pair[k].pages = 0;
				srv.nr_pairs++;
			}
			srv.pair[k].pages += n->pairs[i].pages;
		}
	}
	pthread_mutex_unlock(&srv.lock);
	tk_result__free(r);
	return 0;
}

static void *numa_thread(void *arg)
{
	struct tk_run_opts ro = { .sz = TK_OPTS_SZ(tk_run_opts), .interval_ms = 1000,
				  .on_interval = numa_interval };
	int err = tk_session__run(srv.numa, &ro);

	pthread_mutex_lock(&srv.lock);
	srv.numa_running = false;
	if (err && !atomic_load(&srv.stopping)) {
		snprintf(srv.numa_why, sizeof(srv.numa_why), "the numa session failed: %s",
			 strerror(-err));
		fprintf(stderr, "tracekit: serve: /metrics stops counting NUMA migrations "
			"(tracekit_numa_up 0): %s\n", srv.numa_why);
	}
	pthread_mutex_unlock(&srv.lock);
	return NULL;
}

/* At the first scrape: a numa session for serve's whole life (counters must not restart). */
static void numa_start(void)
{
	struct tk_numa_opts o = { .sz = TK_OPTS_SZ(tk_numa_opts), .cgroup = srv.cgroup };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = srv.caps };
	char why[512] = "";
	sigset_t all, prev;
	int err;

	srv.numa_tried = true;
	srv.numa = tk_session__open_numa(&o, &so, why, sizeof(why));
	if (!srv.numa) {
		snprintf(srv.numa_why, sizeof(srv.numa_why), "%s", why[0] ? why : strerror(errno));
		return;
	}
	err = tk_session__start(srv.numa, why, sizeof(why));
	if (err) {
		snprintf(srv.numa_why, sizeof(srv.numa_why), "%s", why[0] ? why : strerror(-err));
		tk_session__free(srv.numa);
		srv.numa = NULL;
		return;
	}
	snprintf(srv.numa_backend, sizeof(srv.numa_backend), "%s", tk_session__backend(srv.numa));
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &prev);
	err = pthread_create(&srv.numa_th, NULL, numa_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (err) {
		snprintf(srv.numa_why, sizeof(srv.numa_why), "no thread: %s", strerror(err));
		tk_session__free(srv.numa);
		srv.numa = NULL;
		return;
	}
	srv.numa_running = true;
}

/* A label value, escaped as the text format wants (\\, \", \n). */
static void put_label(FILE *f, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*v, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void cgroup_label(FILE *f, bool first)
{
	if (!srv.cgroup)
		return;
	fputs(first ? "cgroup=\"" : ",cgroup=\"", f);
	put_label(f, srv.cgroup);
	fputc('"', f);
}

/* A NUMA counter without labels of its own (but the cgroup's, with --cgroup). */
static void numa_counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "counter", help);
	fputs(name, f);
	if (srv.cgroup) {
		fputc('{', f);
		cgroup_label(f, true);
		fputc('}', f);
	}
	fprintf(f, " %llu\n", (unsigned long long)v);
}

static enum MHD_Result metrics(struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	struct rusage ru;
	FILE *f;
	long rss_pages = 0;
	FILE *statm;
	int i, k;

	pthread_mutex_lock(&srv.lock);
	if (!srv.numa_tried && !atomic_load(&srv.stopping)) {
		numa_start();
		if (!srv.numa_running)
			fprintf(stderr, "tracekit: serve: /metrics has no NUMA migrations "
				"(tracekit_numa_up 0): %s\n", srv.numa_why);
	}
	pthread_mutex_unlock(&srv.lock);
	f = open_memstream(&buf, &len);
	if (!f)
		return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	pthread_mutex_lock(&srv.lock);
	family(f, "tracekit_build_info", "gauge", "tracekit's version and the kernel it runs on.");
	fprintf(f, "tracekit_build_info{version=\"%s\",kernel=\"", tk_version());
	put_label(f, tk_caps__kernel_release(srv.caps));
	fputs("\"} 1\n", f);

	family(f, "tracekit_numa_up", "gauge",
	       "1 while migrations are being counted (since the first scrape), 0 if they cannot be.");
	fprintf(f, "tracekit_numa_up{backend=\"%s\"", srv.numa_backend[0] ? srv.numa_backend
									 : "none");
	cgroup_label(f, false);
	fprintf(f, "} %d\n", srv.numa_running ? 1 : 0);
	family(f, "tracekit_numa_pages_migrated_total", "counter",
	       "Base pages the kernel migrated between NUMA nodes, by the kernel's reason.");
	for (i = 0; (srv.have_reasons || !strcmp(srv.numa_backend, "bpf")) && i < TK_MR__COUNT; i++) {
		fprintf(f, "tracekit_numa_pages_migrated_total{reason=\"%s\"", tk_mig_reason__name(i));
		cgroup_label(f, false);
		fprintf(f, "} %llu\n", (unsigned long long)srv.mig_ok[i]);
	}
	family(f, "tracekit_numa_pages_migration_failed_total", "counter",
	       "Base pages the kernel failed to migrate, by the kernel's reason.");
	for (i = 0; (srv.have_reasons || !strcmp(srv.numa_backend, "bpf")) && i < TK_MR__COUNT; i++) {
		fprintf(f, "tracekit_numa_pages_migration_failed_total{reason=\"%s\"",
			tk_mig_reason__name(i));
		cgroup_label(f, false);
		fprintf(f, "} %llu\n", (unsigned long long)srv.mig_fail[i]);
	}
	numa_counter(f, "tracekit_numa_thp_migrated_total", "Huge pages migrated.", srv.thp_ok);
	numa_counter(f, "tracekit_numa_thp_migration_failed_total",
		     "Huge pages the kernel failed to migrate.", srv.thp_fail);
	numa_counter(f, "tracekit_numa_thp_split_total", "Huge pages split to be migrated.",
		     srv.thp_split);
	family(f, "tracekit_numa_node_pages_migrated_total", "counter",
	       "Pages migrated from node src to node dst (where the kernel lets them be seen).");
	for (i = 0; i < srv.nr_pairs; i++) {
		fprintf(f, "tracekit_numa_node_pages_migrated_total{src=\"%d\",dst=\"%d\"",
			srv.pair[i].src, srv.pair[i].dst);
		cgroup_label(f, false);
		fprintf(f, "} %llu\n", (unsigned long long)srv.pair[i].pages);
	}

	family(f, "tracekit_captures_total", "counter",
	       "Captures asked for, by collector and how they ended.");
	for (i = 0; i < SLOT__COUNT; i++) {
		const struct slot *sl = &srv.slot[i];
		const struct { const char *n; uint64_t v; } o[] = {
			{ "ok", sl->ok }, { "client_gone", sl->aborted }, { "failed", sl->failed },
			{ "busy", sl->busy_refused }, { "bad_request", sl->bad },
		};

		for (k = 0; k < (int)(sizeof(o) / sizeof(o[0])); k++)
			fprintf(f, "tracekit_captures_total{collector=\"%s\",outcome=\"%s\"} %llu\n",
				slot_name[i], o[k].n, (unsigned long long)o[k].v);
	}
	family(f, "tracekit_capture_seconds_total", "counter",
	       "Seconds spent capturing, by collector.");
	for (i = 0; i < SLOT__COUNT; i++)
		fprintf(f, "tracekit_capture_seconds_total{collector=\"%s\"} %.3f\n", slot_name[i],
			srv.slot[i].seconds);
	family(f, "tracekit_captures_in_progress", "gauge", "Captures running now, by collector.");
	for (i = 0; i < SLOT__COUNT; i++)
		fprintf(f, "tracekit_captures_in_progress{collector=\"%s\"} %d\n", slot_name[i],
			srv.slot[i].in_progress);
	family(f, "tracekit_lost_total", "counter",
	       "What the captures served lost or degraded, by collector and loss counter.");
	for (k = 0; k < srv.nr_loss; k++)
		for (i = 0; i < SLOT__COUNT; i++)
			if (srv.loss[k].seen[i])
				fprintf(f, "tracekit_lost_total{collector=\"%s\",counter=\"%s\"} "
					"%llu\n", slot_name[i], srv.loss[k].name,
					(unsigned long long)srv.loss[k].count[i]);
	/* NUMA: the pages of node pairs beyond the ones counted apart */
	fprintf(f, "tracekit_lost_total{collector=\"numa\",counter=\"node_pairs_full\"} %llu\n",
		(unsigned long long)srv.pairs_dropped);
	/* and the migrations whose pair the kernel side had no room for (not in any pair) */
	fprintf(f, "tracekit_lost_total{collector=\"numa\",counter=\"node_pair_map_full\"} "
		"%llu\n", (unsigned long long)srv.pairs_lost);
	family(f, "tracekit_http_responses_total", "counter", "HTTP responses, by status code.");
	for (i = 0; i < srv.nr_codes; i++)
		fprintf(f, "tracekit_http_responses_total{code=\"%d\"} %llu\n", srv.codes[i].code,
			(unsigned long long)srv.codes[i].n);
	pthread_mutex_unlock(&srv.lock);

	getrusage(RUSAGE_SELF, &ru);
	family(f, "tracekit_process_cpu_seconds_total", "counter",
	       "tracekit's own CPU time (user and system), captures included.");
	fprintf(f, "tracekit_process_cpu_seconds_total %.3f\n",
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		ru.ru_stime.tv_usec / 1e6);
	statm = fopen("/proc/self/statm", "re");
	if (statm) {
		if (fscanf(statm, "%*d %ld", &rss_pages) != 1)
			rss_pages = 0;
		fclose(statm);
	}
	family(f, "tracekit_process_resident_memory_bytes", "gauge", "tracekit's resident memory.");
	fprintf(f, "tracekit_process_resident_memory_bytes %lld\n",
		(long long)rss_pages * sysconf(_SC_PAGESIZE));

	family(f, "tracekit_capability_supported", "gauge",
	       "1 when this machine allows it (tracekit caps), 0 when not; by entry id.");
	for (i = 0; i < TK_CAP__COUNT; i++) {
		if (!tk_caps__present(srv.caps, i))
			continue;
		fprintf(f, "tracekit_capability_supported{id=\"%s\"} %d\n", tk_cap__id_name(i),
			tk_caps__status(srv.caps, i) == TK_SUPPORTED);
	}
	family(f, "tracekit_backend_info", "gauge", "The backend each collector uses here.");
	for (i = 0; i < TK_COLLECT__COUNT; i++)
		fprintf(f, "tracekit_backend_info{collector=\"%s\",backend=\"%s\"} 1\n",
			tk_collector__name(i), tk_backend__name(tk_caps__backend(srv.caps, i, NULL)));
	if (fclose(f)) {
		free(buf);
		return error_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	}
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, len, true,
		     NULL);
}

static const char index_text[] =
	"tracekit serve\n\n"
	"/debug/pprof/profile?seconds=N   a CPU profile (pprof); pid=, cgroup=, hz=, off_cpu=1\n"
	"/debug/pprof/heap?pid=PID&seconds=N   the allocations of one process (pprof)\n"
	"/metrics                         Prometheus text\n";

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	const char *q;

	if (*upload_size) {
		*upload_size = 0;	/* a body is not for us: taken and dropped */
		return MHD_YES;
	}
	if (!r)
		return MHD_NO;
	if (srv.token_len &&
	    !token_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
		return error_reply(c, MHD_HTTP_UNAUTHORIZED, NULL,
				   "unauthorized: send 'Authorization: Bearer TOKEN'");
	if (srv.loopback && !srv.unix_sock &&
	    !host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
		return error_reply(c, MHD_HTTP_FORBIDDEN, NULL, "forbidden: Host '%.100s' is not "
				   "this loopback listener's",
				   MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"));
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return error_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "only GET is served");
	if (r->truncated)
		return error_reply(c, MHD_HTTP_URI_TOO_LONG, NULL, "the request target is too long");
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: GET %s\n", r->uri);
	q = strchr(r->uri, '?');
	q = q ? q + 1 : "";
	if (!strcmp(url, "/debug/pprof/profile"))
		return capture(c, SLOT_CPU, q);
	if (!strcmp(url, "/debug/pprof/heap"))
		return capture(c, SLOT_ALLOC, q);
	if (!strcmp(url, "/metrics"))
		return metrics(c);
	if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/") || !strcmp(url, "/debug/pprof"))
		return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", index_text,
			     strlen(index_text), false, NULL);
	return error_reply(c, MHD_HTTP_NOT_FOUND, NULL, "not found: %.200s (see /)", url);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	if (!env.verbose)
		return;
	fputs("tracekit: serve: libmicrohttpd: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* ---- listening ------------------------------------------------------------------- */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* A unix socket at @path, mode 0600; a stale one (nobody listening) is replaced. */
static int listen_unix(const char *path, char *why, size_t why_sz)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(why, why_sz, "the socket path is longer than %zu bytes",
			 sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			snprintf(why, why_sz, "'%s' exists and is not a socket", path);
			return -EEXIST;
		}
		if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			close(fd);
			snprintf(why, why_sz, "'%s' is in use by another server", path);
			return -EADDRINUSE;
		}
		unlink(path);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	}
	old = umask(0177);
	err = bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	umask(old);
	if (!err && listen(fd, 64))
		err = -errno;
	if (err) {
		snprintf(why, why_sz, "cannot listen on '%s': %s", path, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" (every address); the socket, and whether it is loopback. */
static int listen_tcp(const char *addr, bool *loopback, char *where, size_t where_sz, char *why,
		      size_t why_sz)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[256], port[16], shown[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai = NULL;
	const char *colon;
	int fd, one = 1, err;
	long p;

	if (addr[0] == '[') {
		colon = strstr(addr, "]:");
		if (!colon) {
			snprintf(why, why_sz, "invalid address '%s' ([ADDR6]:PORT)", addr);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 1), addr + 1);
		colon++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || strchr(addr, ':') != colon) {
			snprintf(why, why_sz, "invalid address '%s' (ADDR:PORT, [ADDR6]:PORT or "
				 "unix:PATH)", addr);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	}
	if (parse_long(colon + 1, 0, 65535, &p)) {
		snprintf(why, why_sz, "invalid port in '%s' (0 to 65535)", addr);
		return -EINVAL;
	}
	snprintf(port, sizeof(port), "%ld", p);
	err = getaddrinfo(host[0] && strcmp(host, "*") ? host : NULL, port, &hints, &ai);
	if (err) {
		snprintf(why, why_sz, "cannot resolve '%s': %s", host, gai_strerror(err));
		return -EINVAL;
	}
	*loopback = is_loopback(ai->ai_addr);
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		freeaddrinfo(ai);
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		err = -errno;
		snprintf(why, why_sz, "cannot listen on %s: %s", addr, strerror(-err));
		close(fd);
		freeaddrinfo(ai);
		return err;
	}
	freeaddrinfo(ai);
	/* the port the kernel gave (for :0) */
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		if (ss.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, shown,
				  sizeof(shown));
			snprintf(where, where_sz, "http://[%s]:%u", shown,
				 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
		} else {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, shown,
				  sizeof(shown));
			snprintf(where, where_sz, "http://%s:%u", shown,
				 ntohs(((struct sockaddr_in *)&ss)->sin_port));
		}
	}
	return fd;
}

/* The token: the first line of @path, a file only its owner can read. */
static int read_token(const char *path)
{
	struct stat st;
	FILE *f;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return fail(EXIT_FAILURE, "serve: cannot open the token file '%s': %s", path,
			    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' can be read by others (mode "
			    "%04o): chmod 600 it", path, st.st_mode & 07777);
	}
	f = fdopen(fd, "r");
	if (!f || !fgets(srv.token, sizeof(srv.token), f)) {
		if (f)
			fclose(f);
		else
			close(fd);
		return fail(EXIT_FAILURE, "serve: the token file '%s' is empty", path);
	}
	fclose(f);
	srv.token[strcspn(srv.token, "\r\n")] = 0;
	srv.token_len = strlen(srv.token);
	if (srv.token_len < 16)
		return fail(EXIT_FAILURE, "serve: the token in '%s' is shorter than 16 characters",
			    path);
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	enum { OPT_LISTEN = 256, OPT_ALLOW_REMOTE, OPT_TOKEN_FILE, OPT_CGROUP, OPT_MAX_CONN };
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct tk_caps_opts capopts = { .sz = TK_OPTS_SZ(tk_caps_opts) };
	const char *listen_addr = "127.0.0.1:6060", *token_file = NULL;
	struct outputs unused = {};
	bool allow_remote = false;
	long max_conn = 16, ntop = 0;
	char why[512] = "";
	sigset_t stop_set;
	struct stat st;
	MHD_socket quiesced;
	int c, err, sig, i, ret = EXIT_FAILURE;

	memset(&srv, 0, sizeof(srv));
	srv.lfd = -1;
	pthread_mutex_init(&srv.lock, NULL);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			listen_addr = optarg;
			break;
		case OPT_ALLOW_REMOTE:
			allow_remote = true;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_CGROUP:
			srv.cgroup = optarg;
			break;
		case OPT_MAX_CONN:
			if (parse_long(optarg, 1, 1024, &max_conn))
				return usage_error("serve", "invalid --max-connections '%s' (1 to "
						   "1024)", optarg);
			break;
		default:
			if ((err = common_option("serve", c, argv, usage_serve, &unused, &ntop)) !=
			    CLI_CONTINUE)
				return err;
			break;
		}
	}
	if (optind < argc)
		return usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (srv.cgroup && (stat(srv.cgroup, &st) || !S_ISDIR(st.st_mode)))
		return fail(EXIT_FAILURE, "serve: cgroup '%s' is not a directory", srv.cgroup);
	if (token_file && (err = read_token(token_file)))
		return err;

	if (!strncmp(listen_addr, "unix:", 5)) {
		srv.unix_sock = true;
		srv.loopback = true;
		srv.lfd = listen_unix(listen_addr + 5, why, sizeof(why));
		snprintf(srv.where, sizeof(srv.where), "%s", listen_addr);
		snprintf(srv.sock_path, sizeof(srv.sock_path), "%s", listen_addr + 5);
	} else {
		srv.lfd = listen_tcp(listen_addr, &srv.loopback, srv.where, sizeof(srv.where), why,
				     sizeof(why));
		if (srv.lfd >= 0 && !srv.loopback && (!allow_remote || !token_file)) {
			close(srv.lfd);
			if (!allow_remote)
				return usage_error("serve", "%s is not a loopback address: anyone "
						   "who reaches it could profile this machine; give "
						   "--allow-remote and --token-file, or listen on "
						   "loopback or a unix: socket", listen_addr);
			return usage_error("serve", "--allow-remote needs --token-file: a remote "
					   "listener serves only requests with its token");
		}
	}
	if (srv.lfd < 0) {
		if (srv.lfd == -EINVAL)
			return usage_error("serve", "%s", why);
		return fail(EXIT_FAILURE, "serve: %s", why[0] ? why : strerror(-srv.lfd));
	}

	/* one snapshot for every capture and for /metrics' capability gauges */
	if (env.verbose)
		capopts.log = cli_log;
	err = tk_caps__take(&capopts, &srv.caps);
	if (err) {
		fail(EXIT_FAILURE, "serve: cannot take the capability snapshot: %s", strerror(-err));
		goto out;
	}

	/* the stop signals are this thread's, taken by sigwait; every other thread blocks them */
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigaddset(&stop_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
	signal(SIGPIPE, SIG_IGN);
	srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				 MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
				 0, NULL, NULL, handler, NULL,
				 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				 MHD_OPTION_LISTEN_SOCKET, srv.lfd,
				 MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
				 MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)max_conn,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
				 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				 MHD_OPTION_END);
	if (!srv.d) {
		fail(EXIT_FAILURE, "serve: libmicrohttpd could not start on %s", srv.where);
		goto out;
	}
	fprintf(stderr, "tracekit: serve: listening on %s%s (CPU: %s; alloc: %s)\n", srv.where,
		srv.token_len ? ", bearer token required" : "",
		tk_backend__name(tk_caps__backend(srv.caps, TK_COLLECT_CPU, NULL)),
		tk_backend__name(tk_caps__backend(srv.caps, TK_COLLECT_ALLOC, NULL)));
	do {
		err = sigwait(&stop_set, &sig);
	} while (err == EINTR);
	fprintf(stderr, "tracekit: serve: %s: stopping\n", strsignal(sig));

	/* end the running captures (their clients get 503), then the server and numa */
	atomic_store(&srv.stopping, true);
	pthread_mutex_lock(&srv.lock);
	for (i = 0; i < SLOT__COUNT; i++)
		if (srv.slot[i].s)
			tk_session__stop(srv.slot[i].s);
	if (srv.numa)
		tk_session__stop(srv.numa);
	pthread_mutex_unlock(&srv.lock);
	/*
	 * No new connections; let the stopped captures send their 503 (at most
	 * 3 s). The listening socket is then ours to close, after MHD_stop_daemon.
	 */
	quiesced = MHD_quiesce_daemon(srv.d);
	for (i = 0; i < 30; i++) {
		bool busy;

		pthread_mutex_lock(&srv.lock);
		busy = srv.slot[SLOT_CPU].busy || srv.slot[SLOT_ALLOC].busy;
		pthread_mutex_unlock(&srv.lock);
		if (!busy)
			break;
		usleep(100 * 1000);
	}
	usleep(200 * 1000);
	MHD_stop_daemon(srv.d);
	if (quiesced == MHD_INVALID_SOCKET)
		srv.lfd = -1;	/* MHD closed it */
	if (srv.numa) {
		pthread_join(srv.numa_th, NULL);
		tk_session__free(srv.numa);
	}
	ret = EXIT_SUCCESS;
out:
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.unix_sock)
		unlink(srv.sock_path);
	tk_caps__free(srv.caps);
	return ret;
}
