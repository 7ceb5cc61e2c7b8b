// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* An HTTP query string, split, decoded and read as a capture's parameters (httpq.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/httpq.h"

/* Decode @len bytes at @s into @dst (NUL-terminated); the decoded length, or -1. */
static int decode(const char *s, size_t len, char *dst, char *why, size_t why_sz)
{
	size_t i, n = 0;
	int hi, lo;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= len) {
				snprintf(why, why_sz, "a '%%' escape is cut short");
				return -1;
			}
			hi = tk_hexval(s[i + 1]);
			lo = tk_hexval(s[i + 2]);
			if (hi < 0 || lo < 0) {
				snprintf(why, why_sz, "'%%%c%c' is not an escape", s[i + 1], s[i + 2]);
				return -1;
			}
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c < 0x20 || c == 0x7f) {
			snprintf(why, why_sz, "a control character (0x%02x) in the query", c);
			return -1;
		}
		dst[n++] = (char)c;
	}
	dst[n] = 0;
	return (int)n;
}

int tk_httpq__parse(const char *q, size_t len, struct tk_httpq *out, char *why, size_t why_sz)
{
	size_t i = 0, end, eq, used = 0;
	int n;

	out->n = 0;
	if (len > TK_HTTPQ_MAX_LEN) {
		snprintf(why, why_sz, "the query is longer than %d bytes", TK_HTTPQ_MAX_LEN);
		return -EINVAL;
	}
	while (i < len) {
		for (end = i; end < len && q[end] != '&'; end++)
			;
		if (end == i) {		/* "&&" or a trailing '&' */
			i++;
			continue;
		}
		if (out->n >= TK_HTTPQ_MAX_PAIRS) {
			snprintf(why, why_sz, "more than %d parameters", TK_HTTPQ_MAX_PAIRS);
			return -EINVAL;
		}
		for (eq = i; eq < end && q[eq] != '='; eq++)
			;
		/* each piece decodes to at most its own length, plus a NUL */
		out->key[out->n] = out->buf + used;
		n = decode(q + i, eq - i, out->buf + used, why, why_sz);
		if (n < 0)
			return -EINVAL;
		if (n == 0) {
			snprintf(why, why_sz, "a parameter without a name");
			return -EINVAL;
		}
		used += (size_t)n + 1;
		out->val[out->n] = out->buf + used;
		n = eq < end ? decode(q + eq + 1, end - eq - 1, out->buf + used, why, why_sz)
			     : (out->buf[used] = 0, 0);
		if (n < 0)
			return -EINVAL;
		used += (size_t)n + 1;
		out->n++;
		i = end + 1;
	}
	return 0;
}

const char *tk_httpq__get(const struct tk_httpq *q, const char *key)
{
	int i;

	for (i = 0; i < q->n; i++)
		if (!strcmp(q->key[i], key))
			return q->val[i];
	return NULL;
}

/* A whole decimal number in [@min, @max]. */
static int number(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* printable for a reply: at most 40 bytes of @s */
static const char *shown(const char *s, char *buf, size_t sz)
{
	snprintf(buf, sz, "%.40s%s", s, strlen(s) > 40 ? "..." : "");
	return buf;
}

int tk_httpq__capture_args(const struct tk_httpq *q, enum tk_httpq_kind kind,
			   struct tk_capture_args *a, char *why, size_t why_sz)
{
	bool seen_seconds = false, seen_cgroup = false, seen_hz = false, seen_off = false,
	     seen_mode = false, seen_debug = false;
	const bool heap = kind == TK_HTTPQ_HEAP;
	char sk[48], sv[48];
	int i, k;
	long v;

	memset(a, 0, sizeof(*a));
	a->seconds = TK_HTTPQ_DEFAULT_SECONDS;
	for (i = 0; i < q->n; i++) {
		const char *key = q->key[i], *val = q->val[i];
		bool *seen = NULL;

		shown(key, sk, sizeof(sk));
		shown(val, sv, sizeof(sv));
		if (!strcmp(key, "seconds"))
			seen = &seen_seconds;
		else if (!strcmp(key, "cgroup") && !heap)
			seen = &seen_cgroup;
		else if (!strcmp(key, "hz") && !heap)
			seen = &seen_hz;
		else if (!strcmp(key, "off_cpu") && !heap)
			seen = &seen_off;
		else if (!strcmp(key, "mode") && heap)
			seen = &seen_mode;
		else if (!strcmp(key, "debug"))
			seen = &seen_debug;
		if (seen) {
			if (*seen) {
				snprintf(why, why_sz, "'%s' is given twice", sk);
				return -EINVAL;
			}
			*seen = true;
		}
		if (!strcmp(key, "seconds")) {
			if (number(val, 1, TK_HTTPQ_MAX_SECONDS, &v)) {
				snprintf(why, why_sz, "invalid seconds '%s' (1 to %d)", sv,
					 TK_HTTPQ_MAX_SECONDS);
				return -EINVAL;
			}
			a->seconds = (int)v;
		} else if (!strcmp(key, "pid")) {
			if (number(val, 1, 4194304, &v)) {
				snprintf(why, why_sz, "invalid pid '%s'", sv);
				return -EINVAL;
			}
			if (a->nr_pids >= (heap ? 1 : TK_HTTPQ_MAX_PIDS)) {
				snprintf(why, why_sz, heap ? "a heap profile is of one process: one "
					 "pid" : "at most %d pids", TK_HTTPQ_MAX_PIDS);
				return -EINVAL;
			}
			for (k = 0; k < a->nr_pids; k++)
				if (a->pids[k] == v) {
					snprintf(why, why_sz, "pid %ld is given twice", v);
					return -EINVAL;
				}
			a->pids[a->nr_pids++] = (int)v;
		} else if (!heap && !strcmp(key, "cgroup")) {
			if (val[0] != '/' || strlen(val) >= sizeof(a->cgroup) || strstr(val, "/../") ||
			    (strlen(val) >= 3 && !strcmp(val + strlen(val) - 3, "/.."))) {
				snprintf(why, why_sz, "invalid cgroup '%s' (an absolute cgroup v2 "
					 "directory)", sv);
				return -EINVAL;
			}
			snprintf(a->cgroup, sizeof(a->cgroup), "%s", val);
		} else if (!heap && !strcmp(key, "hz")) {
			if (number(val, 1, 10000, &v)) {
				snprintf(why, why_sz, "invalid hz '%s' (1 to 10000)", sv);
				return -EINVAL;
			}
			a->freq_hz = (int)v;
		} else if (!heap && !strcmp(key, "off_cpu")) {
			if (strcmp(val, "0") && strcmp(val, "1")) {
				snprintf(why, why_sz, "invalid off_cpu '%s' (0 or 1)", sv);
				return -EINVAL;
			}
			a->off_cpu = val[0] == '1';
		} else if (heap && !strcmp(key, "mode")) {
			if (strcmp(val, "sampled") && strcmp(val, "growth")) {
				snprintf(why, why_sz, "invalid mode '%s' (sampled, growth)", sv);
				return -EINVAL;
			}
			a->growth = !strcmp(val, "growth");
		} else if (!strcmp(key, "debug")) {
			/* Go's debug=N asks for text; only the binary profile is written */
			if (strcmp(val, "0")) {
				snprintf(why, why_sz, "debug=%s: only the binary profile (debug=0) is "
					 "served", sv);
				return -EINVAL;
			}
		} else if (!strcmp(key, "gc")) {
			/* Go's heap endpoint runs a GC first; there is none to run here */
		} else {
			snprintf(why, why_sz, "unknown parameter '%s' (%s)", sk,
				 heap ? "pid, seconds, mode" : "seconds, pid, cgroup, hz, off_cpu");
			return -EINVAL;
		}
	}
	if (heap && !a->nr_pids) {
		snprintf(why, why_sz, "a heap profile needs pid=PID (allocations are per process)");
		return -EINVAL;
	}
	return 0;
}
