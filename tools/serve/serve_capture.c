// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * serve's captures: /debug/pprof/profile (CPU) and /debug/pprof/heap (the
 * allocations of one process). Each is an ordinary session opened for the
 * request and freed at its end, one per collector at a time, within the
 * server's limits (--max-seconds, --max-hz, --allow-off-cpu) and, for a heap
 * profile, within --alloc-budget: the same forecast and guard as `tracekit
 * record` (alloc/alloc_budget.h). A client that leaves (POLLRDHUP on its
 * socket) ends its capture at the next tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>

#include "alloc/alloc_budget.h"
#include "cli.h"
#include "core/httpq.h"
#include "profile/profile.h"
#include "serve.h"

int serve_check_cgroup(const char *dir, char *why, size_t why_sz)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct statfs sfs;
	int fd, err = 0;

	/*
	 * Only a directory of the cgroup v2 hierarchy, reached without a link:
	 * the same answer for a path that is missing and for one that is not a
	 * cgroup, so a request cannot probe what exists elsewhere.
	 */
	if (dir[0] == '/')
		fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	else
		fd = -1;
	if (fd < 0 || fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC)
		err = -ENOTDIR;
	if (fd >= 0)
		close(fd);
	if (err)
		snprintf(why, why_sz, "cgroup '%.200s' is not a directory of the cgroup v2 "
			 "hierarchy (an absolute path, without symbolic links)", dir);
	return err;
}

/* The client's socket: has it gone (FIN or reset) while its capture runs? */
struct capture_ctx {
	int fd;
	bool gone;
	struct tk_alloc_budget *budget;	/* a sampled heap profile's guard, or NULL */
};

static void capture_tick(struct tk_session *s, double elapsed, void *arg)
{
	struct capture_ctx *cc = arg;
	struct pollfd p = { .fd = cc->fd, .events = POLLRDHUP };

	if (cc->fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		cc->gone = true;
		tk_session__stop(s);
	}
	if (cc->budget)
		tk_alloc_budget__check(cc->budget, s, elapsed);
}

static void add_losses(int slot, const struct tk_profile *p)
{
	int l, k;

	for (l = 0; p && l < p->nr_losses && l < TK_PROFILE_MAX_LOSSES; l++) {
		for (k = 0; k < srv.nr_loss; k++)
			if (!strcmp(srv.loss[k].name, p->losses[l].name))
				break;
		if (k == srv.nr_loss) {
			if (srv.nr_loss == SERVE_MAX_LOSS_NAMES)
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

/* The request's parameters, within this server's limits; 0, or -EINVAL and @why. */
static int capture_args(int slot, const char *query, struct tk_capture_args *a, char *why,
			size_t why_sz)
{
	static struct tk_httpq q;	/* big: parsed under the lock */
	int err, i;

	pthread_mutex_lock(&srv.lock);
	err = tk_httpq__parse(query, strlen(query), &q, why, why_sz);
	if (!err)
		err = tk_httpq__capture_args(&q, slot == SLOT_CPU ? TK_HTTPQ_PROFILE
								 : TK_HTTPQ_HEAP, a, why, why_sz);
	pthread_mutex_unlock(&srv.lock);
	if (err)
		return err;
	if (a->seconds > srv.max_seconds) {
		snprintf(why, why_sz, "seconds=%d is past this server's limit of %d "
			 "(tracekit serve --max-seconds)", a->seconds, srv.max_seconds);
		return -EINVAL;
	}
	if (a->freq_hz > srv.max_hz) {
		snprintf(why, why_sz, "hz=%d is past this server's limit of %d "
			 "(tracekit serve --max-hz)", a->freq_hz, srv.max_hz);
		return -EINVAL;
	}
	if (a->off_cpu && !srv.allow_off_cpu) {
		snprintf(why, why_sz, "off_cpu=1 is refused by this server (tracekit serve "
			 "--allow-off-cpu): it adds a cost to every context switch");
		return -EINVAL;
	}
	for (i = 0; i < a->nr_pids; i++)
		if (!exists_pid(a->pids[i])) {
			snprintf(why, why_sz, "no process with pid %d", a->pids[i]);
			return -EINVAL;
		}
	if (a->cgroup[0])
		return serve_check_cgroup(a->cgroup, why, why_sz) ? -EINVAL : 0;
	return 0;
}

/* The slot is free again; @outcome counted (NULL: none). */
static void release_slot(int slot, uint64_t *outcome, double t0)
{
	pthread_mutex_lock(&srv.lock);
	srv.slot[slot].s = NULL;
	if (outcome)
		(*outcome)++;
	srv.slot[slot].seconds += mono_s() - t0;
	srv.slot[slot].busy = false;
	srv.slot[slot].in_progress = 0;
	pthread_mutex_unlock(&srv.lock);
}

/* Open the session the request asks for (a heap profile within the budget). */
static struct tk_session *open_capture(int slot, const struct tk_capture_args *a,
				       struct tk_alloc_budget *budget, char *why, size_t why_sz)
{
	struct tk_session_opts so = { .sz = TK_OPTS_SZ(tk_session_opts), .log = cli_log,
				      .caps = srv.caps };
	int i;

	if (slot == SLOT_CPU) {
		struct tk_cpu_opts o = { .sz = TK_OPTS_SZ(tk_cpu_opts),
					 .freq_hz = a->freq_hz ? a->freq_hz : 99,
					 .cgroup = a->cgroup[0] ? a->cgroup : NULL,
					 .off_cpu = a->off_cpu, .no_jit_ask = env.no_jit_ask };

		for (i = 0; i < a->nr_pids; i++)
			o.pids[o.nr_pids++] = a->pids[i];
		return tk_session__open_cpu(&o, &so, why, why_sz);
	}
	struct tk_alloc_opts o = { .sz = TK_OPTS_SZ(tk_alloc_opts), .pid = a->pids[0],
				   .mode = a->growth ? TK_ALLOC_MODE_GROWTH
						     : TK_ALLOC_MODE_SAMPLED,
				   .no_jit_ask = env.no_jit_ask };

	so.caps = NULL;		/* the snapshot's process entries are the target's */
	if (tk_caps__backend(srv.caps, TK_COLLECT_ALLOC, NULL) == TK_BACKEND_BPF)
		tk_alloc_budget__plan(budget, srv.alloc_budget, NULL, &o);
	return tk_session__open_alloc(&o, &so, why, why_sz);
}

enum MHD_Result serve_capture(struct MHD_Connection *c, int slot, const char *query)
{
	struct tk_run_opts ro = { .sz = TK_OPTS_SZ(tk_run_opts) };
	struct tk_alloc_budget budget = { .forecast = -1 };
	const union MHD_ConnectionInfo *ci;
	struct capture_ctx cc = { .fd = -1 };
	struct tk_capture_args a;
	struct tk_result *res = NULL;
	struct tk_session *s = NULL;
	struct tk_profile *p;
	char why[512] = "", retry[32];
	double t0 = mono_s(), left;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err = 0;

	if (capture_args(slot, query, &a, why, sizeof(why))) {
		pthread_mutex_lock(&srv.lock);
		srv.slot[slot].bad++;
		pthread_mutex_unlock(&srv.lock);
		return serve_error(c, MHD_HTTP_BAD_REQUEST, NULL, "bad request: %s", why);
	}

	pthread_mutex_lock(&srv.lock);
	if (atomic_load(&srv.stopping)) {
		pthread_mutex_unlock(&srv.lock);
		return serve_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "tracekit is stopping");
	}
	if (srv.slot[slot].busy) {
		left = srv.slot[slot].until - mono_s();
		snprintf(retry, sizeof(retry), "%d", left > 1 ? (int)ceil(left) : 1);
		srv.slot[slot].busy_refused++;
		pthread_mutex_unlock(&srv.lock);
		return serve_error(c, MHD_HTTP_TOO_MANY_REQUESTS, retry, "busy: a %s capture is "
				   "running (%s s left); one at a time", serve_slot_name[slot],
				   retry);
	}
	srv.slot[slot].busy = true;
	srv.slot[slot].until = t0 + a.seconds;
	srv.slot[slot].in_progress = 1;
	pthread_mutex_unlock(&srv.lock);

	s = open_capture(slot, &a, &budget, why, sizeof(why));
	if (!s) {
		err = -errno;
		goto unavailable;
	}
	pthread_mutex_lock(&srv.lock);
	srv.slot[slot].s = s;
	pthread_mutex_unlock(&srv.lock);
	/* set before the shutdown stops every slot's session: this one was not there yet */
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
	cc.budget = budget.guarded ? &budget : NULL;
	ro.duration_ms = (uint64_t)a.seconds * 1000;
	ro.on_tick = capture_tick;
	ro.ctx = &cc;
	err = tk_session__run(s, &ro);
	if (!err)
		err = tk_session__finish(s, &res);
	if (cc.gone || atomic_load(&srv.stopping) || err) {
		/* the slot forgets the session before it is freed: the shutdown may stop it */
		release_slot(slot, cc.gone ? &srv.slot[slot].aborted : &srv.slot[slot].failed, t0);
		tk_result__free(res);
		tk_session__free(s);
		if (cc.gone) {
			if (env.verbose)
				fprintf(stderr, "tracekit: serve: the client left a %s capture after "
					"%.1f s; it was ended\n", serve_slot_name[slot],
					mono_s() - t0);
			return MHD_NO;	/* nobody to answer: close */
		}
		if (err)
			return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
					   "the capture failed: %s", strerror(-err));
		return serve_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
				   "tracekit is stopping: the capture was ended");
	}
	/* what the budget chose, and why a profile ended early, go with it */
	p = (struct tk_profile *)tk_result__profile(res);
	if (p && budget.plan[0])
		tk_profile__add_comment(p, "allocations: %s", budget.plan);
	if (p && budget.ended[0])
		tk_profile__add_comment(p, "allocations: %s", budget.ended);
	f = open_memstream(&buf, &len);
	err = f ? tk_result__write(res, TK_FORMAT_PPROF, f, 0) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -EIO;
	pthread_mutex_lock(&srv.lock);
	add_losses(slot, tk_result__profile(res));
	if (budget.ended[0])
		srv.slot[slot].over_budget++;
	pthread_mutex_unlock(&srv.lock);
	release_slot(slot, err ? &srv.slot[slot].failed : &srv.slot[slot].ok, t0);
	tk_result__free(res);
	tk_session__free(s);
	if (err) {
		free(buf);
		return serve_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
				   "the profile could not be written: %s", strerror(-err));
	}
	if (env.verbose)
		fprintf(stderr, "tracekit: serve: 200: a %s profile of %d s, %zu bytes%s%s\n",
			serve_slot_name[slot], a.seconds, len, budget.plan[0] ? "; " : "",
			budget.ended[0] ? budget.ended : budget.plan);
	return serve_reply(c, MHD_HTTP_OK, "application/octet-stream", buf, len, true, NULL);

unavailable:
	release_slot(slot, &srv.slot[slot].failed, t0);
	if (s)
		tk_session__free(s);
	return serve_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the %s collector is "
			   "unavailable: %s", serve_slot_name[slot],
			   why[0] ? why : strerror(err < 0 ? -err : EIO));
}
