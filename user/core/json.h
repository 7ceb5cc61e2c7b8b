/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A small streaming JSON writer: nesting, commas, escaping; nothing else. */
#ifndef __TK_JSON_H
#define __TK_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TK_JSON_MAX_DEPTH 32

struct tk_json {
	FILE *f;
	bool pretty;
	int depth;
	bool first[TK_JSON_MAX_DEPTH];
	char kind[TK_JSON_MAX_DEPTH];	/* '{' or '[' of each open level */
	int err;		/* first error: -EINVAL on misuse, -EIO on a write error */
	/* Strings are written as valid UTF-8: invalid bytes become U+FFFD. */
};

/*
 * Length of the valid UTF-8 sequence at @p (2 to 4 bytes), or 0 when it is
 * not one (overlong, surrogate, beyond U+10FFFF, cut short). For any writer
 * that must not pass invalid text on.
 */
int tk_utf8_len(const unsigned char *p);

void tk_json__init(struct tk_json *j, FILE *f, bool pretty);
/* @key is the member name inside an object, NULL inside an array or at top level. */
void tk_json__begin_object(struct tk_json *j, const char *key);
void tk_json__end_object(struct tk_json *j);
void tk_json__begin_array(struct tk_json *j, const char *key);
void tk_json__end_array(struct tk_json *j);
void tk_json__string(struct tk_json *j, const char *key, const char *val);	/* NULL → null */
void tk_json__int(struct tk_json *j, const char *key, int64_t val);
void tk_json__uint(struct tk_json *j, const char *key, uint64_t val);
void tk_json__double(struct tk_json *j, const char *key, double val);
void tk_json__bool(struct tk_json *j, const char *key, bool val);
void tk_json__null(struct tk_json *j, const char *key);
/* Finish: newline after the top-level value; returns 0 or the first error. */
int tk_json__finish(struct tk_json *j);

#endif /* __TK_JSON_H */
