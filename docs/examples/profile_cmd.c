// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * profile_cmd: profile a command's CPU with libtracekit, print the top
 * functions of every interval, and write the whole run as pprof.
 *
 *   cc profile_cmd.c $(pkg-config --cflags --libs tracekit) -o profile_cmd
 *   sudo ./profile_cmd out.pb.gz CMD ARGS...
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tracekit/tracekit.h>

static struct tk_session *session;

static void on_signal(int sig)
{
	tk_session__stop(session);	/* async-signal-safe */
}

static void log_warnings(void *ctx, enum tk_log_level level, const char *fmt, va_list ap)
{
	if (level == TK_LOG_WARN)
		vfprintf(stderr, fmt, ap);
}

static int on_interval(struct tk_session *s, struct tk_result *r, double elapsed, void *ctx)
{
	printf("--- %.1f s\n", elapsed);
	tk_result__write(r, TK_FORMAT_TEXT, stdout, 5);
	tk_result__free(r);
	return 0;
}

int main(int argc, char **argv)
{
	struct tk_cpu_opts copts = { .sz = TK_OPTS_SZ(tk_cpu_opts), .freq_hz = 199 };
	struct tk_session_opts sopts = {
		.sz = TK_OPTS_SZ(tk_session_opts),
		.argv = argv + 2,
		.log = log_warnings,
	};
	struct tk_run_opts ropts = {
		.sz = TK_OPTS_SZ(tk_run_opts),
		.interval_ms = 1000,
		.on_interval = on_interval,
	};
	struct tk_result *r;
	char why[512];
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: %s OUT.pb.gz CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	session = tk_session__open_cpu(&copts, &sopts, why, sizeof(why));
	if (!session) {
		fprintf(stderr, "cannot profile: %s\n", why[0] ? why : strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	err = tk_session__run(session, &ropts);	/* starts it, ends when CMD exits */
	if (!err)
		err = tk_session__finish(session, &r);
	if (!err) {
		err = tk_result__write_file(r, argv[1], TK_FORMAT_PPROF, 0);
		tk_result__free(r);
	}
	if (err)
		fprintf(stderr, "profiling failed: %s\n", strerror(-err));
	else
		fprintf(stderr, "%s: backend %s, ended: %s\n", argv[1],
			tk_session__backend(session),
			tk_session_end__name(tk_session__ended(session)));
	tk_session__free(session);
	return err ? 1 : 0;
}
