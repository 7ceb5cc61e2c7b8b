// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * /metrics: Prometheus text. NUMA page migrations come from one numa session
 * that the first scrape starts (without holding the server's lock: the other
 * replies do not wait for it) and a thread of its own runs for serve's whole
 * life, adding each second's migrations into counters; if it fails, it is
 * freed at once and tracekit_numa_up says 0 with the reason on stderr. Then
 * the captures served, their losses, the connections serve closed itself, and
 * tracekit's own cost.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "core/session.h"
#include "numa/numa_report.h"
#include "serve.h"

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
				if (k == SERVE_MAX_PAIRS) {
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
	struct tk_session *s = arg;
	int err = tk_session__run(s, &ro);

	/* ended: detached and freed now, not at exit (the shutdown stops it under the lock) */
	pthread_mutex_lock(&srv.lock);
	srv.numa_state = NUMA_ENDED;
	srv.numa = NULL;
	if (err && !atomic_load(&srv.stopping)) {
		snprintf(srv.numa_why, sizeof(srv.numa_why), "the numa session failed: %s",
			 strerror(-err));
		fprintf(stderr, "tracekit: serve: /metrics stops counting NUMA migrations "
			"(tracekit_numa_up 0): %s\n", srv.numa_why);
	}
	pthread_mutex_unlock(&srv.lock);
	tk_session__free(s);
	return NULL;
}

/* The first scrape: a numa session for serve's whole life (counters must not restart). */
static void numa_start(void)
{
	struct tk_numa_opts o = { .sz = TK_OPTS_SZ(tk_numa_opts), .cgroup = srv.cgroup };
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = srv.caps };
	struct tk_session *s;
	char why[512] = "";
	sigset_t all, prev;
	int err;

	s = tk_session__open_numa(&o, &so, why, sizeof(why));
	if (!s) {
		err = -errno;
		goto failed;
	}
	err = tk_session__start(s, why, sizeof(why));
	if (err)
		goto failed;
	pthread_mutex_lock(&srv.lock);
	if (atomic_load(&srv.stopping)) {
		pthread_mutex_unlock(&srv.lock);
		snprintf(why, sizeof(why), "tracekit is stopping");
		goto failed;
	}
	snprintf(srv.numa_backend, sizeof(srv.numa_backend), "%s", tk_session__backend(s));
	srv.numa = s;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &prev);
	err = pthread_create(&srv.numa_th, NULL, numa_thread, s);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (!err) {
		srv.numa_thread = true;
		srv.numa_state = NUMA_RUNNING;
		pthread_mutex_unlock(&srv.lock);
		return;
	}
	srv.numa = NULL;
	pthread_mutex_unlock(&srv.lock);
	snprintf(why, sizeof(why), "no thread: %s", strerror(err));
	err = -err;
failed:
	if (s)
		tk_session__free(s);
	pthread_mutex_lock(&srv.lock);
	srv.numa_state = NUMA_ENDED;
	snprintf(srv.numa_why, sizeof(srv.numa_why), "%s", why[0] ? why : strerror(-err));
	pthread_mutex_unlock(&srv.lock);
	fprintf(stderr, "tracekit: serve: /metrics has no NUMA migrations (tracekit_numa_up 0): "
		"%s\n", srv.numa_why);
}

void serve_numa_stop(void)
{
	pthread_mutex_lock(&srv.lock);
	if (srv.numa)
		tk_session__stop(srv.numa);
	pthread_mutex_unlock(&srv.lock);
	if (srv.numa_thread)
		pthread_join(srv.numa_th, NULL);
	srv.numa_thread = false;
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

enum MHD_Result serve_metrics(struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	struct rusage ru;
	FILE *f;
	long rss_pages = 0;
	FILE *statm;
	bool start = false;
	int i, k;

	pthread_mutex_lock(&srv.lock);
	if (srv.numa_state == NUMA_IDLE && !atomic_load(&srv.stopping)) {
		srv.numa_state = NUMA_STARTING;
		start = true;
	}
	pthread_mutex_unlock(&srv.lock);
	if (start)
		numa_start();	/* without the lock: other replies do not wait for it */
	f = open_memstream(&buf, &len);
	if (!f)
		return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
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
	fprintf(f, "} %d\n", srv.numa_state == NUMA_RUNNING ? 1 : 0);
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
				serve_slot_name[i], o[k].n, (unsigned long long)o[k].v);
	}
	family(f, "tracekit_heap_ended_over_budget_total", "counter",
	       "Heap profiles served that the guard ended early: their cost rose past "
	       "--alloc-budget (each is also counted as ok).");
	fprintf(f, "tracekit_heap_ended_over_budget_total %llu\n",
		(unsigned long long)srv.slot[SLOT_ALLOC].over_budget);
	family(f, "tracekit_capture_seconds_total", "counter",
	       "Seconds spent capturing, by collector.");
	for (i = 0; i < SLOT__COUNT; i++)
		fprintf(f, "tracekit_capture_seconds_total{collector=\"%s\"} %.3f\n", serve_slot_name[i],
			srv.slot[i].seconds);
	family(f, "tracekit_captures_in_progress", "gauge", "Captures running now, by collector.");
	for (i = 0; i < SLOT__COUNT; i++)
		fprintf(f, "tracekit_captures_in_progress{collector=\"%s\"} %d\n", serve_slot_name[i],
			srv.slot[i].in_progress);
	family(f, "tracekit_lost_total", "counter",
	       "What the captures served lost or degraded, by collector and loss counter.");
	for (k = 0; k < srv.nr_loss; k++)
		for (i = 0; i < SLOT__COUNT; i++)
			if (srv.loss[k].seen[i])
				fprintf(f, "tracekit_lost_total{collector=\"%s\",counter=\"%s\"} "
					"%llu\n", serve_slot_name[i], srv.loss[k].name,
					(unsigned long long)srv.loss[k].count[i]);
	/* NUMA: the pages of node pairs beyond the ones counted apart */
	fprintf(f, "tracekit_lost_total{collector=\"numa\",counter=\"node_pairs_full\"} %llu\n",
		(unsigned long long)srv.pairs_dropped);
	/* and the migrations whose pair the kernel side had no room for (not in any pair) */
	fprintf(f, "tracekit_lost_total{collector=\"numa\",counter=\"node_pair_map_full\"} "
		"%llu\n", (unsigned long long)srv.pairs_lost);
	family(f, "tracekit_http_connections_closed_total", "counter",
	       "Connections serve closed itself: no request within the header deadline, "
	       "or to make room past --max-connections or --max-per-address.");
	for (i = 0; i < CONN__COUNT; i++)
		fprintf(f, "tracekit_http_connections_closed_total{reason=\"%s\"} %llu\n",
			i == CONN_LIMIT ? "max_connections" :
			i == CONN_PER_ADDRESS ? "max_per_address" : "header_deadline",
			(unsigned long long)srv.conn_closed[i]);
	family(f, "tracekit_http_cross_site_refused_total", "counter",
	       "Requests refused because a browser made them for a page of another site.");
	fprintf(f, "tracekit_http_cross_site_refused_total %llu\n",
		(unsigned long long)srv.cross_site);
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
		return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	}
	return serve_reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, len, true,
		     NULL);
}

