// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * /proc/PID/maps lines look like
 *   7f1c2a400000-7f1c2a428000 r--p 00000000 08:01 1835023    /usr/lib/libc.so.6
 * The path starts after the padding and runs to the end of the line; it may
 * hold spaces, and the kernel appends " (deleted)" to unlinked files.
 */
#include <errno.h>
#include <string.h>

#include "core/fsutil.h"
#include "proc/maps.h"

#define DELETED_SUFFIX " (deleted)"

/* Parse a number in @base (10 or 16) at *@p, at least one digit, no overflow. */
static int parse_num(const char **p, const char *end, unsigned int base, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int d;

	while (s < end && (d = tk_hexval(*s)) >= 0 && (unsigned int)d < base) {
		if (v > (UINT64_MAX - d) / base)
			return -EINVAL;
		v = v * base + d;
		s++;
	}
	if (s == *p)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static int skip_spaces(const char **p, const char *end, bool required)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (required && s == *p)
		return -EINVAL;
	*p = s;
	return 0;
}

int tk_maps__parse_line(const char *line, size_t len, struct tk_map *m)
{
	const char *p = line, *end = line + len;
	uint64_t major, minor;
	size_t plen, i;
	int err;

	memset(m, 0, sizeof(*m));
	if ((err = parse_num(&p, end, 16, &m->start)) || (err = expect(&p, end, '-')) ||
	    (err = parse_num(&p, end, 16, &m->end)) || (err = skip_spaces(&p, end, true)))
		return err;
	if (m->end < m->start)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (p >= end || !strchr("rwxsp-", *p) || *p == '\0')
			return -EINVAL;
		m->perms[i] = *p++;
	}
	m->perms[4] = '\0';
	if ((err = skip_spaces(&p, end, true)) || (err = parse_num(&p, end, 16, &m->offset)) ||
	    (err = skip_spaces(&p, end, true)) || (err = parse_num(&p, end, 16, &major)) ||
	    (err = expect(&p, end, ':')) || (err = parse_num(&p, end, 16, &minor)) ||
	    (err = skip_spaces(&p, end, true)) || (err = parse_num(&p, end, 10, &m->inode)))
		return err;
	if (major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	m->dev_major = major;
	m->dev_minor = minor;
	if (p < end && *p != ' ' && *p != '\t')
		return -EINVAL;
	skip_spaces(&p, end, false);

	plen = end - p;
	if (memchr(p, '\0', plen))
		return -EINVAL;
	if (plen >= strlen(DELETED_SUFFIX) &&
	    !memcmp(end - strlen(DELETED_SUFFIX), DELETED_SUFFIX, strlen(DELETED_SUFFIX))) {
		m->deleted = true;
		plen -= strlen(DELETED_SUFFIX);
	}
	if (plen >= sizeof(m->path))
		return -ENAMETOOLONG;
	memcpy(m->path, p, plen);
	m->path[plen] = '\0';
	return 0;
}

int tk_maps__parse(const char *text, tk_maps_cb cb, void *ctx)
{
	struct tk_map m;
	const char *nl;
	size_t len;
	int err;

	while (*text) {
		nl = strchr(text, '\n');
		len = nl ? (size_t)(nl - text) : strlen(text);
		if (len) {
			err = tk_maps__parse_line(text, len, &m);
			if (err)
				return err;
			err = cb(&m, ctx);
			if (err)
				return err;
		}
		text += len;
		if (*text == '\n')
			text++;
	}
	return 0;
}
