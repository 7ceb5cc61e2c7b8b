// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <math.h>
#include <inttypes.h>

#include "json.h"

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

static void put_string(struct tk_json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', j->f);
	for (; *p; p++) {
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
}

static void close_(struct tk_json *j, char c)
{
	bool empty;

	if (j->depth == 0) {
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
