// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Who may hold one of serve's connections. libmicrohttpd refuses a connection
 * past its limit and resets an idle one only after its timeout, which any byte
 * restarts: a client that sends a byte every few seconds keeps its slot for
 * ever, and --max-connections of them lock everyone out (tried: 16 of them, a
 * byte every 29 s, 0.9.75). So serve keeps its own account of the connections:
 *
 *   - a connection waits for a request's headers from its start, or from its
 *     last reply, for SERVE_HEADER_DEADLINE_S at most, whatever it sends
 *     meanwhile; then it is closed;
 *   - past --max-connections, or --max-per-address from one address, a new
 *     connection closes the one of them (of that address) that has waited
 *     longest for its headers; only when every one is busy with a request is the
 *     new one closed instead.
 *
 * So a client that sends its request at once is always taken in, and what a
 * client holds without a request is bounded by the deadline. A loopback
 * listener sees one address for every local client (and a local user can take
 * any of 127/8), which is why the eviction, not the per-address count, is what
 * keeps such a listener open. Closing is shutdown(2) on a duplicate of the
 * socket: libmicrohttpd's thread sees the end and closes its own; the duplicate
 * keeps the socket from being reused under us until the close is notified.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include "cli.h"
#include "serve.h"

struct conn {
	struct conn *prev, *next;
	int fd;				/* our duplicate of its socket */
	struct sockaddr_storage addr;
	socklen_t addr_len;
	double since;			/* waiting for headers since (monotonic) */
	bool waiting;			/* no request being served */
	bool closing;			/* shut down by us */
};

static struct conn *conns;		/* under srv.lock */

/* The address, without the port (a local client has every port). */
static bool same_address(const struct conn *a, const struct conn *b)
{
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&b->addr)->sin_addr.s_addr;
	if (a->addr.ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
			       &((const struct sockaddr_in6 *)&b->addr)->sin6_addr,
			       sizeof(struct in6_addr));
	return true;	/* a unix socket: one address */
}

static void close_conn(struct conn *k, enum conn_close why)
{
	k->closing = true;
	shutdown(k->fd, SHUT_RDWR);
	srv.conn_closed[why]++;
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: a connection closed: %s\n",
			why == CONN_HEADER_DEADLINE ? "no request within the header deadline" :
			why == CONN_PER_ADDRESS ? "past --max-per-address" :
						  "past --max-connections");
}

/* The connection (of @like's address when given) that has waited longest, or NULL. */
static struct conn *longest_waiting(const struct conn *like)
{
	struct conn *k, *best = NULL;

	for (k = conns; k; k = k->next)
		if (k->waiting && !k->closing && (!like || same_address(k, like)) &&
		    (!best || k->since < best->since))
			best = k;
	return best;
}

/* A new connection @n (already listed): room for it, by closing the longest waiting if need be. */
static void admit(struct conn *n)
{
	int total = 0, same = 0;
	struct conn *k, *victim;

	for (k = conns; k; k = k->next) {
		if (k->closing)
			continue;
		total++;
		same += same_address(k, n);
	}
	if (same > srv.max_per_addr) {
		victim = longest_waiting(n);
		close_conn(victim ? victim : n, CONN_PER_ADDRESS);
	} else if (total > srv.max_conn) {
		victim = longest_waiting(NULL);
		close_conn(victim ? victim : n, CONN_LIMIT);
	}
}

void serve_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *ci;
	struct conn *k;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		k = *socket_context;
		if (!k)
			return;
		pthread_mutex_lock(&srv.lock);
		if (k->prev)
			k->prev->next = k->next;
		else
			conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		pthread_mutex_unlock(&srv.lock);
		close(k->fd);
		free(k);
		*socket_context = NULL;
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	k = calloc(1, sizeof(*k));
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!k || !ci || (k->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		/* not accounted for, so not served: no connection escapes the limits */
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		free(k);
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr) {
		k->addr_len = ci->client_addr->sa_family == AF_INET6 ?
				      sizeof(struct sockaddr_in6) :
			      ci->client_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
								      0;
		memcpy(&k->addr, ci->client_addr, k->addr_len);
	}
	if (!k->addr_len)
		k->addr.ss_family = AF_UNIX;
	k->since = mono_s();
	k->waiting = true;
	pthread_mutex_lock(&srv.lock);
	k->next = conns;
	if (conns)
		conns->prev = k;
	conns = k;
	admit(k);
	pthread_mutex_unlock(&srv.lock);
	*socket_context = k;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void serve_conn_request(struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&srv.lock);
	k->waiting = false;
	pthread_mutex_unlock(&srv.lock);
}

void serve_conn_replied(struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&srv.lock);
	k->waiting = true;
	k->since = mono_s();
	pthread_mutex_unlock(&srv.lock);
}

void serve_conn_reap(void)
{
	double now = mono_s();
	struct conn *k;

	pthread_mutex_lock(&srv.lock);
	for (k = conns; k; k = k->next)
		if (k->waiting && !k->closing && now - k->since > SERVE_HEADER_DEADLINE_S)
			close_conn(k, CONN_HEADER_DEADLINE);
	pthread_mutex_unlock(&srv.lock);
}

unsigned int serve_conn_mhd_limit(void)
{
	/* ours are counted first; MHD's own limit only caps a flood faster than the closes */
	return (unsigned int)(2 * srv.max_conn + 16);
}
