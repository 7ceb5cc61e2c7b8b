// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Every request of tracekit serve: a browser's cross-site request is refused,
 * then the credential is checked, before anything else runs for it (no pid
 * looked at, no path opened, no session opened); then the endpoint.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

struct req {
	char uri[8192];
	bool truncated;
	bool seen;		/* the handler was called for it */
};

static void count_code(int code)
{
	int i;

	for (i = 0; i < srv.nr_codes; i++)
		if (srv.codes[i].code == code) {
			srv.codes[i].n++;
			return;
		}
	if (srv.nr_codes < SERVE_MAX_CODES) {
		srv.codes[srv.nr_codes].code = code;
		srv.codes[srv.nr_codes++].n = 1;
	}
}

void *serve_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *r = calloc(1, sizeof(*r));

	if (r) {
		r->truncated = strlen(uri) >= sizeof(r->uri);
		snprintf(r->uri, sizeof(r->uri), "%s", uri);
	}
	return r;
}

void serve_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		     enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
	serve_conn_replied(c);
}

enum MHD_Result serve_reply(struct MHD_Connection *c, unsigned int code, const char *type,
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
	/* nothing served here is for a page to read or frame */
	MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
	MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'");
	if (code >= 400) {
		/* Go's pprof client prints the body of a reply that says this */
		MHD_add_response_header(resp, "X-Go-Pprof", "1");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	}
	if (code == MHD_HTTP_UNAUTHORIZED) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"tracekit\"");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Basic realm=\"tracekit\", charset=\"UTF-8\"");
	}
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

enum MHD_Result serve_error(struct MHD_Connection *c, unsigned int code, const char *retry_after,
			    const char *fmt, ...)
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
	return serve_reply(c, code, "text/plain; charset=utf-8", msg, (size_t)n, false,
			   retry_after);
}

enum MHD_Result serve_index(struct MHD_Connection *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	fprintf(f, "tracekit serve\n\n"
		"/debug/pprof/profile?seconds=N   a CPU profile (pprof); pid=, cgroup=, hz=%s\n"
		"/debug/pprof/heap?pid=PID&seconds=N   the allocations of one process (pprof)\n"
		"/metrics                         Prometheus text\n\n"
		"This server's limits: seconds up to %d (--max-seconds), hz up to %d "
		"(--max-hz),\noff-CPU time %s (--allow-off-cpu); a heap profile is sampled "
		"while its\nmeasured cost stays within %.1f %% (--alloc-budget), else growth.\n",
		srv.allow_off_cpu ? ", off_cpu=1" : "", srv.max_seconds, srv.max_hz,
		srv.allow_off_cpu ? "allowed" : "refused", 100 * srv.alloc_budget);
	if (fclose(f)) {
		free(buf);
		return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	}
	return serve_reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", buf, len, true, NULL);
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/*
 * Refused before anything runs: a browser's page of another site, another
 * Host, no credential. True when it was (the reply, or MHD_NO, in @ret).
 */
static bool refused(struct MHD_Connection *c, enum MHD_Result *ret)
{
	const char *host = header(c, MHD_HTTP_HEADER_HOST);
	char why[256];

	if (tk_httpauth__cross_site(header(c, "Sec-Fetch-Site"), header(c, "Origin"),
				    header(c, "Referer"), host, why, sizeof(why))) {
		pthread_mutex_lock(&srv.lock);
		srv.cross_site++;
		pthread_mutex_unlock(&srv.lock);
		*ret = serve_error(c, MHD_HTTP_FORBIDDEN, NULL, "forbidden: %s", why);
		return true;
	}
	if (srv.loopback && !srv.unix_sock && !tk_httpauth__host_loopback(host)) {
		*ret = serve_error(c, MHD_HTTP_FORBIDDEN, NULL, "forbidden: Host '%.100s' is not "
				   "this loopback listener's", host);
		return true;
	}
	if (srv.token_len &&
	    !tk_httpauth__check(header(c, MHD_HTTP_HEADER_AUTHORIZATION), srv.token,
				srv.token_len)) {
		*ret = serve_error(c, MHD_HTTP_UNAUTHORIZED, NULL,
				   "unauthorized: send the token as 'Authorization: Bearer TOKEN' "
				   "or as the password of Basic authentication");
		return true;
	}
	return false;
}

enum MHD_Result serve_handler(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	enum MHD_Result ret;
	const char *q;

	if (*upload_size) {
		*upload_size = 0;	/* a body is not for us: taken and dropped */
		return MHD_YES;
	}
	if (!r)
		return MHD_NO;
	if (!r->seen) {
		r->seen = true;
		serve_conn_request(c);
	}
	if (refused(c, &ret))
		return ret;	/* nothing else runs for this request */
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return serve_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "only GET is served");
	if (r->truncated)
		return serve_error(c, MHD_HTTP_URI_TOO_LONG, NULL, "the request target is too long");
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: GET %s\n", r->uri);
	q = strchr(r->uri, '?');
	q = q ? q + 1 : "";
	if (!strcmp(url, "/debug/pprof/profile"))
		return serve_capture(c, SLOT_CPU, q);
	if (!strcmp(url, "/debug/pprof/heap"))
		return serve_capture(c, SLOT_ALLOC, q);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(c);
	if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/") || !strcmp(url, "/debug/pprof"))
		return serve_index(c);
	return serve_error(c, MHD_HTTP_NOT_FOUND, NULL, "not found: %.200s (see /)", url);
}
