/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where libbpf's messages go, per session rather than per process.
 *
 * libbpf has one print function for the whole process. libtracekit installs
 * its own once (tk_log__route) and never swaps it again: while a session's
 * thread runs inside tk_log__push() … tk_log__pop(), messages go to that
 * session's callback (or nowhere); on any other thread, or outside a session,
 * to the print function that was installed before ours — an embedder's own,
 * or libbpf's default. An embedder that installs its own later takes every
 * message, ours included.
 */
#ifndef __TK_CORE_LOG_H
#define __TK_CORE_LOG_H

#include <stdarg.h>

#include "tracekit/common.h"

struct tk_log {
	tk_log_fn fn;		/* NULL: nowhere */
	void *ctx;
};

/* Nowhere: for probes whose refusals are expected and reported otherwise. */
extern const struct tk_log tk_log_quiet;

/*
 * Route this thread's libbpf messages to @log until tk_log__pop(@saved).
 * Nests: *@saved keeps what was routed before.
 */
struct tk_log_scope {
	struct tk_log log;
	int active;
};
void tk_log__push(const struct tk_log *log, struct tk_log_scope *saved);
void tk_log__pop(const struct tk_log_scope *saved);

/* A message of libtracekit's own, to @log (printf-style). */
void tk_log__msg(const struct tk_log *log, enum tk_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* __TK_CORE_LOG_H */
