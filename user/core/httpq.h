/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The query string of an HTTP request (`tracekit serve`): split into
 * key=value pairs and percent-decoded, then read as a capture's parameters.
 * Outside input: whatever arrives is either taken whole or refused with a
 * reason for a 400 reply, never half-read (tests/fuzz/fuzz_httpq.c).
 */
#ifndef __TK_HTTPQ_H
#define __TK_HTTPQ_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define TK_HTTPQ_MAX_PAIRS 80
#define TK_HTTPQ_MAX_LEN 4096
#define TK_HTTPQ_MAX_PIDS 64
#define TK_HTTPQ_DEFAULT_SECONDS 30	/* Go's net/http/pprof default */
#define TK_HTTPQ_MAX_SECONDS 3600

struct tk_httpq {
	int n;
	const char *key[TK_HTTPQ_MAX_PAIRS];
	const char *val[TK_HTTPQ_MAX_PAIRS];	/* "" for "key" or "key=" */
	char buf[TK_HTTPQ_MAX_LEN + 2 * TK_HTTPQ_MAX_PAIRS];	/* decoded, each NUL-ended */
};

/*
 * Parse the query @q (@len bytes, without the '?'): pairs split at '&'
 * (empty pieces skipped), key and value at the first '=', "%XX" and '+'
 * decoded. Refused (-EINVAL, with @why): longer than TK_HTTPQ_MAX_LEN, more
 * than TK_HTTPQ_MAX_PAIRS pairs, a bad escape, a decoded control character
 * (NUL among them) or an empty key.
 */
int tk_httpq__parse(const char *q, size_t len, struct tk_httpq *out, char *why, size_t why_sz);
/* The first value of @key, or NULL. */
const char *tk_httpq__get(const struct tk_httpq *q, const char *key);

enum tk_httpq_kind {
	TK_HTTPQ_PROFILE,	/* /debug/pprof/profile: CPU */
	TK_HTTPQ_HEAP,		/* /debug/pprof/heap: allocations of one process */
};

struct tk_capture_args {
	int seconds;			/* 1 to TK_HTTPQ_MAX_SECONDS; default 30 */
	int pids[TK_HTTPQ_MAX_PIDS];	/* profile: any number; heap: exactly one */
	int nr_pids;
	char cgroup[PATH_MAX];		/* profile: "" or a cgroup v2 directory */
	int freq_hz;			/* profile: 1 to 10000; 0: the default (99) */
	bool off_cpu;			/* profile: off_cpu=1 */
	bool growth;			/* heap: mode=growth (else sampled) */
};

/*
 * The parameters of a capture of @kind: seconds, pid (repeatable for a
 * profile), cgroup, hz, off_cpu=0|1 (profile), mode=sampled|growth (heap);
 * Go's gc (ignored) and debug=0. Anything else, a value out of range, a
 * parameter given twice, or a heap without one pid: -EINVAL and @why.
 */
int tk_httpq__capture_args(const struct tk_httpq *q, enum tk_httpq_kind kind,
			   struct tk_capture_args *a, char *why, size_t why_sz);

#endif /* __TK_HTTPQ_H */
