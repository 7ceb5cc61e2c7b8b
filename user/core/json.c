// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <math.h>
#include <inttypes.h>

#include "core/json.h"

void tk_json__init(struct tk_json *j, FILE *f, bool pretty)
{
	j->f = f;
	j->pretty = pretty;
	j->depth = 0;
	j->first[0] = true;
	j->err = 0;
}

static void indent(struct tk_json *j)
{
	int i;

	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

int tk_utf8_len(const unsigned char *p)
{
	int n, i;
	unsigned int cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void put_string(struct tk_json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', j->f);
	for (; *p; p++) {
		if (*p >= 0x80) {
			int n = tk_utf8_len(p);

			if (n) {
				fwrite(p, 1, n, j->f);
				p += n - 1;
			} else {
				fputs("\\ufffd", j->f);
			}
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", j->f);
			break;
		case '\\':
			fputs("\\\\", j->f);
			break;
		case '\n':
			fputs("\\n", j->f);
			break;
		case '\t':
			fputs("\\t", j->f);
			break;
		case '\r':
			fputs("\\r", j->f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(j->f, "\\u%04x", *p);
			else
				fputc(*p, j->f);
		}
	}
	fputc('"', j->f);
}

/* Separator, indentation and key before a value. */
static void member(struct tk_json *j, const char *key)
{
	/* members of objects have keys, elements of arrays do not; one top-level value */
	if (j->depth ? !key != (j->kind[j->depth] == '[') : key || !j->first[0])
		j->err = j->err ?: -EINVAL;
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->f);
		indent(j);
	}
	j->first[j->depth] = false;
	if (key) {
		put_string(j, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_(struct tk_json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 >= TK_JSON_MAX_DEPTH) {
		j->err = j->err ?: -EINVAL;
		return;
	}
	j->depth++;
	j->first[j->depth] = true;
	j->kind[j->depth] = c;
}

static void close_(struct tk_json *j, char c)
{
	bool empty;

	if (j->depth == 0 || j->kind[j->depth] != (c == '}' ? '{' : '[')) {
		j->err = j->err ?: -EINVAL;
		return;
	}
	empty = j->first[j->depth];
	j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void tk_json__begin_object(struct tk_json *j, const char *key)
{
	open_(j, key, '{');
}

void tk_json__end_object(struct tk_json *j)
{
	close_(j, '}');
}

void tk_json__begin_array(struct tk_json *j, const char *key)
{
	open_(j, key, '[');
}

void tk_json__end_array(struct tk_json *j)
{
	close_(j, ']');
}

void tk_json__string(struct tk_json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		put_string(j, val);
	else
		fputs("null", j->f);
}

void tk_json__int(struct tk_json *j, const char *key, int64_t val)
{
	member(j, key);
	fprintf(j->f, "%" PRId64, val);
}

void tk_json__uint(struct tk_json *j, const char *key, uint64_t val)
{
	member(j, key);
	fprintf(j->f, "%" PRIu64, val);
}

void tk_json__double(struct tk_json *j, const char *key, double val)
{
	member(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.3f", val);
	else
		fputs("null", j->f);
}

void tk_json__bool(struct tk_json *j, const char *key, bool val)
{
	member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void tk_json__null(struct tk_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

int tk_json__finish(struct tk_json *j)
{
	if (j->depth != 0)
		j->err = j->err ?: -EINVAL;
	fputc('\n', j->f);
	if (ferror(j->f))
		j->err = j->err ?: -EIO;
	return j->err;
}
