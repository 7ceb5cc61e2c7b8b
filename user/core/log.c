// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libbpf's messages, routed to the session that runs on this thread (core/log.h). */
#include <pthread.h>
#include <stdio.h>
#include <bpf/libbpf.h>

#include "core/log.h"

const struct tk_log tk_log_quiet = {};

static pthread_once_t route_once = PTHREAD_ONCE_INIT;
static libbpf_print_fn_t before;	/* what was installed before ours */
static __thread struct tk_log_scope cur;

static enum tk_log_level level_of(enum libbpf_print_level l)
{
	return l == LIBBPF_WARN ? TK_LOG_WARN : l == LIBBPF_INFO ? TK_LOG_INFO : TK_LOG_DEBUG;
}

static int route(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!cur.active)
		return before ? before(level, fmt, ap) : 0;
	if (cur.log.fn)
		cur.log.fn(cur.log.ctx, level_of(level), fmt, ap);
	return 0;
}

static void install(void)
{
	before = libbpf_set_print(route);
}

void tk_log__push(const struct tk_log *log, struct tk_log_scope *saved)
{
	pthread_once(&route_once, install);
	*saved = cur;
	cur.log = log ? *log : tk_log_quiet;
	cur.active = 1;
}

void tk_log__pop(const struct tk_log_scope *saved)
{
	cur = *saved;
}

void tk_log__msg(const struct tk_log *log, enum tk_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log || !log->fn)
		return;
	va_start(ap, fmt);
	log->fn(log->ctx, level, fmt, ap);
	va_end(ap);
}
