// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for serve's query parser: any bytes parse or are refused
 * with a reason; what parses holds only printable, NUL-terminated keys and
 * values inside the parser's own buffer, no more pairs than the limit, and a
 * capture's parameters, when accepted, are within their ranges.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/httpq.h"

static void check_str(const struct tk_httpq *q, const char *s)
{
	const char *c;

	if (s < q->buf || s >= q->buf + sizeof(q->buf))
		abort();
	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || c >= q->buf + sizeof(q->buf) - 1)
			abort();
}

static void check_args(const struct tk_capture_args *a, enum tk_httpq_kind kind)
{
	int i;

	if (a->seconds < 1 || a->seconds > TK_HTTPQ_MAX_SECONDS || a->nr_pids < 0 ||
	    a->nr_pids > TK_HTTPQ_MAX_PIDS || a->freq_hz < 0 || a->freq_hz > 10000)
		abort();
	if (kind == TK_HTTPQ_HEAP && (a->nr_pids != 1 || a->cgroup[0]))
		abort();
	for (i = 0; i < a->nr_pids; i++)
		if (a->pids[i] <= 0)
			abort();
	if (a->cgroup[0] && (a->cgroup[0] != '/' || !memchr(a->cgroup, 0, sizeof(a->cgroup))))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tk_httpq q;
	struct tk_capture_args a;
	char why[256] = "";
	int i, err;

	err = tk_httpq__parse((const char *)data, size, &q, why, sizeof(why));
	if (err) {
		if (!why[0])
			abort();
		return 0;
	}
	if (q.n < 0 || q.n > TK_HTTPQ_MAX_PAIRS)
		abort();
	for (i = 0; i < q.n; i++) {
		check_str(&q, q.key[i]);
		check_str(&q, q.val[i]);
		if (!q.key[i][0])
			abort();
	}
	why[0] = 0;
	if (!tk_httpq__capture_args(&q, TK_HTTPQ_PROFILE, &a, why, sizeof(why)))
		check_args(&a, TK_HTTPQ_PROFILE);
	else if (!why[0])
		abort();
	why[0] = 0;
	if (!tk_httpq__capture_args(&q, TK_HTTPQ_HEAP, &a, why, sizeof(why)))
		check_args(&a, TK_HTTPQ_HEAP);
	else if (!why[0])
		abort();
	return 0;
}
