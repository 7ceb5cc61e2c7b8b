/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * tracekit serve, by responsibility:
 *   serve.c          options, the listener, the credential, start and shutdown
 *   serve_conn.c     who may hold a connection: limits, per address, the
 *                    request-header deadline
 *   serve_http.c     every request: authentication and cross-site refusal first,
 *                    then the endpoint; replies
 *   serve_capture.c  /debug/pprof/profile and /debug/pprof/heap
 *   serve_metrics.c  /metrics and the NUMA session behind it
 */
#ifndef __TK_SERVE_H
#define __TK_SERVE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include <microhttpd.h>

/*
 * libmicrohttpd's functions, from dlopen at serve's start (serve_mhd.c): the
 * names below stand for the loaded ones everywhere else in serve.
 */
#define SERVE_MHD_SONAME "libmicrohttpd.so.12"
struct serve_mhd {
	__typeof__(MHD_start_daemon) *MHD_start_daemon;
	__typeof__(MHD_stop_daemon) *MHD_stop_daemon;
	__typeof__(MHD_quiesce_daemon) *MHD_quiesce_daemon;
	__typeof__(MHD_get_connection_info) *MHD_get_connection_info;
	__typeof__(MHD_set_connection_option) *MHD_set_connection_option;
	__typeof__(MHD_lookup_connection_value) *MHD_lookup_connection_value;
	__typeof__(MHD_create_response_from_buffer) *MHD_create_response_from_buffer;
	__typeof__(MHD_add_response_header) *MHD_add_response_header;
	__typeof__(MHD_queue_response) *MHD_queue_response;
	__typeof__(MHD_destroy_response) *MHD_destroy_response;
};
extern struct serve_mhd serve_mhd;
/* load it (once); 0, or -errno with why[] filled */
int serve_mhd_open(char *why, size_t why_sz);
#ifndef SERVE_MHD_IMPL
#define MHD_start_daemon serve_mhd.MHD_start_daemon
#define MHD_stop_daemon serve_mhd.MHD_stop_daemon
#define MHD_quiesce_daemon serve_mhd.MHD_quiesce_daemon
#define MHD_get_connection_info serve_mhd.MHD_get_connection_info
#define MHD_set_connection_option serve_mhd.MHD_set_connection_option
#define MHD_lookup_connection_value serve_mhd.MHD_lookup_connection_value
#define MHD_create_response_from_buffer serve_mhd.MHD_create_response_from_buffer
#define MHD_add_response_header serve_mhd.MHD_add_response_header
#define MHD_queue_response serve_mhd.MHD_queue_response
#define MHD_destroy_response serve_mhd.MHD_destroy_response
#endif

#include "core/httpauth.h"
#include "numa/numa_report.h"
#include "tracekit/tracekit.h"

enum { SLOT_CPU, SLOT_ALLOC, SLOT__COUNT };
extern const char *const serve_slot_name[SLOT__COUNT];

#define SERVE_MAX_LOSS_NAMES 64
#define SERVE_MAX_PAIRS 256
#define SERVE_MAX_CODES 16
/* a connection has this long from its start (or its last reply) to send a request's headers */
#define SERVE_HEADER_DEADLINE_S 10

struct slot {
	bool busy;
	struct tk_session *s;
	double until;			/* monotonic end of the running capture */
	uint64_t ok, aborted, failed, busy_refused, bad, over_budget;
	double seconds;
	int in_progress;
};

enum numa_state { NUMA_IDLE, NUMA_STARTING, NUMA_RUNNING, NUMA_ENDED };

/* Why serve closed a connection itself (tracekit_http_connections_closed_total). */
enum conn_close { CONN_LIMIT, CONN_PER_ADDRESS, CONN_HEADER_DEADLINE, CONN__COUNT };

struct srv {
	struct MHD_Daemon *d;
	int lfd;
	bool unix_sock, loopback;
	char where[PATH_MAX + 32];	/* "http://127.0.0.1:6060" or "unix:/run/x.sock" */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	/* the credential: none only with --no-auth (loopback) or on a unix socket */
	char token[TK_TOKEN_MAX + 1];
	size_t token_len;
	char token_path[PATH_MAX];	/* the file serve generated, removed at exit; "" */
	dev_t token_dev;
	ino_t token_ino;
	bool no_auth;
	/* what a capture may ask for */
	int max_seconds, max_hz;
	bool allow_off_cpu;
	double alloc_budget;		/* /debug/pprof/heap: the slowdown allowed (0.02) */
	int max_conn, max_per_addr;
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
	} loss[SERVE_MAX_LOSS_NAMES];
	int nr_loss;
	struct { int code; uint64_t n; } codes[SERVE_MAX_CODES];
	int nr_codes;
	uint64_t conn_closed[CONN__COUNT];
	uint64_t cross_site;		/* requests refused as cross-site */
	/* NUMA: a session started at the first /metrics, run by its own thread */
	enum numa_state numa_state;
	bool numa_thread;		/* numa_th was created: join it */
	char numa_why[512], numa_backend[16];
	struct tk_session *numa;	/* while its thread runs; the thread frees it */
	pthread_t numa_th;
	bool have_reasons;
	uint64_t mig_ok[TK_MR__COUNT], mig_fail[TK_MR__COUNT];
	uint64_t thp_ok, thp_fail, thp_split;
	struct { int src, dst; uint64_t pages; } pair[SERVE_MAX_PAIRS];
	int nr_pairs;
	uint64_t pairs_dropped;		/* pages of node pairs past SERVE_MAX_PAIRS */
	uint64_t pairs_lost;		/* migrations whose pair found the BPF map full */
};

extern struct srv srv;

/* serve_http.c */
enum MHD_Result serve_handler(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls);
void *serve_uri_log(void *cls, const char *uri, struct MHD_Connection *c);
void serve_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		     enum MHD_RequestTerminationCode toe);
/* Queue a reply; @body is copied, or freed by MHD when @must_free. */
enum MHD_Result serve_reply(struct MHD_Connection *c, unsigned int code, const char *type,
			    const void *body, size_t len, bool must_free, const char *retry_after);
enum MHD_Result serve_error(struct MHD_Connection *c, unsigned int code, const char *retry_after,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The index page: the endpoints and this server's limits. */
enum MHD_Result serve_index(struct MHD_Connection *c);

/* serve_conn.c */
void serve_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe);
/* A request's headers are in: the connection is no longer held to the deadline. */
void serve_conn_request(struct MHD_Connection *c);
/* Its reply is sent: the deadline starts again for the next request. */
void serve_conn_replied(struct MHD_Connection *c);
/* Close the connections past their header deadline (the main thread, twice a second). */
void serve_conn_reap(void);
/* How MHD is to bound connections: more than ours, so that ours decide. */
unsigned int serve_conn_mhd_limit(void);

/* serve_capture.c */
enum MHD_Result serve_capture(struct MHD_Connection *c, int slot, const char *query);
/* A cgroup v2 directory that a request or --cgroup names; 0 or -errno with @why. */
int serve_check_cgroup(const char *dir, char *why, size_t why_sz);

/* serve_metrics.c */
enum MHD_Result serve_metrics(struct MHD_Connection *c);
/* At shutdown, after MHD stopped: end the NUMA session and its thread. */
void serve_numa_stop(void);

#endif /* __TK_SERVE_H */
