// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Parsers of the /proc text tracekit stacks reads (fuzzed: tests/fuzz/fuzz_stacks.c).
 * The kernel writes these files, but a thread's comm is the process's to choose,
 * so nothing here trusts a length, a parenthesis or a digit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "stacks/stacks_int.h"

static const char *skip_sp(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A hex number ("0x" allowed); false when there is none. */
static bool hex_word(const char **pp, uint64_t *v)
{
	const char *p = skip_sp(*pp);
	int d, n = 0;

	*v = 0;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	while ((d = tk_hexval(*p)) >= 0 && n < 16) {
		*v = *v << 4 | d;
		p++;
		n++;
	}
	if (!n || tk_hexval(*p) >= 0)
		return false;
	*pp = p;
	return true;
}

int stk_parse_syscall(const char *text, int64_t *nr, uint64_t args[6], uint64_t *sp,
		      uint64_t *pc)
{
	const char *p = skip_sp(text);
	uint64_t w[8];
	char *end;
	long n;
	int k;

	memset(args, 0, 6 * sizeof(args[0]));
	*sp = *pc = 0;
	if (!strncmp(p, "running", 7)) {
		*nr = -2;
		return 0;
	}
	errno = 0;
	n = strtol(p, &end, 10);
	if (end == p || errno || n < -1 || n > 4095)
		return -EINVAL;
	p = end;
	for (k = 0; k < 8 && hex_word(&p, &w[k]); k++)
		;
	p = skip_sp(p);
	if (*p && *p != '\n')
		return -EINVAL;
	if (n == -1 && k == 2) {
		*sp = w[0];
		*pc = w[1];
	} else if (n >= 0 && k == 8) {
		memcpy(args, w, 6 * sizeof(args[0]));
		*sp = w[6];
		*pc = w[7];
	} else {
		return -EINVAL;
	}
	*nr = n;
	return 0;
}

int stk_parse_stat(const char *text, char comm[16], char *state, uint32_t *flags)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	unsigned int f = 0;
	size_t n;

	if (!open || !close || close < open || close[1] != ' ' || !close[2])
		return -EINVAL;
	n = close - open - 1;
	if (n > 15)
		n = 15;
	memcpy(comm, open + 1, n);
	comm[n] = 0;
	*state = close[2];
	/* state ppid pgrp session tty_nr tpgid flags */
	if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %u", &f) != 1)
		return -EINVAL;
	*flags = f;
	return *state && strchr("RSDTtZXIPWK", *state) ? 0 : -EINVAL;
}

int stk_parse_kstack(const char *text, struct stk_kframe *kf, int max)
{
	const char *p = text;
	int n = 0;

	while (*p && n < max) {
		const char *eol = strchr(p, '\n'), *name, *end;
		size_t len;

		if (!eol)
			eol = p + strlen(p);
		name = p;
		if (*name == '[') {
			const char *c = memchr(name, ']', eol - name);

			name = c ? skip_sp(c + 1) : eol;
		}
		for (end = name; end < eol && *end != '+' && *end != ' '; end++)
			;
		len = end - name;
		if (len) {
			kf[n].addr = 0;
			kf[n].name = strndup(name, len < 127 ? len : 127);
			if (!kf[n].name) {
				stk_kframes_free(kf, n);
				return -ENOMEM;
			}
			n++;
		}
		p = *eol ? eol + 1 : eol;
	}
	return n;
}

void stk_kframes_free(struct stk_kframe *kf, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(kf[i].name);
		kf[i].name = NULL;
	}
}

int stk_parse_schedstat(const char *text, uint64_t *pcount)
{
	const char *p = text;
	char *end;

	for (int i = 0; i < 2; i++) {
		p = skip_sp(p);
		strtoull(p, &end, 10);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	p = skip_sp(p);
	errno = 0;
	*pcount = strtoull(p, &end, 10);
	return end == p || errno ? -EINVAL : 0;
}

uint32_t stk_parse_nspid(const char *status)
{
	char val[128], *p, *end;
	unsigned long v = 0;

	if (!tk_status_field(status, "NSpid", val, sizeof(val)))
		return 0;
	for (p = val; *p;) {
		p = (char *)skip_sp(p);
		if (!*p)
			break;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (end == p || errno || v > UINT32_MAX)
			return 0;
		p = end;
	}
	return v;
}

/* One "NAME:\tN" number of a status text: 0 or -EINVAL. */
static int status_u64(const char *status, const char *name, uint64_t *v)
{
	char val[64], *end;
	const char *p;

	if (!tk_status_field(status, name, val, sizeof(val)))
		return -EINVAL;
	p = skip_sp(val);
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || *skip_sp(end))
		return -EINVAL;
	return 0;
}

int stk_parse_ctxt_switches(const char *status, uint64_t *v)
{
	uint64_t a, b;

	if (status_u64(status, "voluntary_ctxt_switches", &a) ||
	    status_u64(status, "nonvoluntary_ctxt_switches", &b))
		return -EINVAL;
	*v = a + b;
	return 0;
}

uint32_t stk_state_class(char state)
{
	switch (state) {
	case 'R':
		return TK_STACKS_RUNNING;
	case 'S':
	case 'P':
	case 'W':
	case 'K':
		return TK_STACKS_SLEEPING;
	case 'D':
		return TK_STACKS_DISK;
	case 'T':
	case 't':
		return TK_STACKS_STOPPED;
	case 'I':
		return TK_STACKS_IDLE;
	case 'Z':
	case 'X':
		return TK_STACKS_ZOMBIE;
	}
	return 0;
}

const char *tk_stacks__state_name(char state)
{
	switch (state) {
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "uninterruptible";
	case 'T':
		return "stopped";
	case 't':
		return "traced";
	case 'Z':
		return "zombie";
	case 'X':
		return "dead";
	case 'I':
		return "idle";
	case 'P':
		return "parked";
	}
	return "unknown";
}

int tk_stacks__parse_states(const char *s, uint32_t *mask)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} names[] = {
		{ "R", TK_STACKS_RUNNING },	 { "running", TK_STACKS_RUNNING },
		{ "S", TK_STACKS_SLEEPING },	 { "sleeping", TK_STACKS_SLEEPING },
		{ "D", TK_STACKS_DISK },	 { "uninterruptible", TK_STACKS_DISK },
		{ "T", TK_STACKS_STOPPED },	 { "stopped", TK_STACKS_STOPPED },
		{ "I", TK_STACKS_IDLE },	 { "idle", TK_STACKS_IDLE },
		{ "Z", TK_STACKS_ZOMBIE },	 { "zombie", TK_STACKS_ZOMBIE },
	};
	const char *p = s;

	*mask = 0;
	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strlen(names[i].name) == len && !strncasecmp(p, names[i].name, len) &&
			    (len > 1 || *p == names[i].name[0])) {
				*mask |= names[i].bit;
				found = true;
			}
		}
		if (!found)
			return -EINVAL;
		p += len;
		if (*p == ',' && *++p == 0)
			return -EINVAL;
	}
	return 0;
}
