// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Assertions on capability snapshot entries and backend choices, for the caps tests. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "caps_expect.h"

/* Does @hay contain every '|'-separated word of @words? The first missing one in @missing. */
bool has_words(const char *hay, const char *words, char *missing, size_t size)
{
	const char *w = words;

	while (*w) {
		size_t n = strcspn(w, "|");
		char word[256];

		snprintf(word, sizeof(word), "%.*s", (int)n, w);
		if (!strstr(hay, word)) {
			snprintf(missing, size, "%s", word);
			return false;
		}
		w += n;
		if (*w)
			w++;
	}
	return true;
}

static bool field_ok(const char *name, const char *got, const char *want, char *why, size_t size)
{
	char missing[256];

	if (!want)
		return true;
	if (!*want) {
		if (!*got)
			return true;
		snprintf(why, size, "%s should be empty", name);
		return false;
	}
	if (has_words(got, want, missing, sizeof(missing)))
		return true;
	snprintf(why, size, "%s lacks \"%s\"", name, missing);
	return false;
}

/*
 * Entry @id has status @st and its value, reason and remedy contain the
 * '|'-separated words given: NULL checks nothing, "" wants the field empty.
 */
void check_cap(const struct tk_caps *caps, enum tk_cap_id id, enum tk_status st,
		      const char *value, const char *reason, const char *remedy, const char *file,
		      int line)
{
	const struct tk_cap *c = &caps->caps[id];
	char why[300] = "";

	if (!c->present)
		snprintf(why, sizeof(why), "not present");
	else if (c->status != st)
		snprintf(why, sizeof(why), "status %s, want %s", tk_status__name(c->status),
			 tk_status__name(st));
	else if (field_ok("value", c->value, value, why, sizeof(why)) &&
		 field_ok("reason", c->reason, reason, why, sizeof(why)) &&
		 field_ok("remedy", c->remedy, remedy, why, sizeof(why)))
		return;
	print_error("%s: %s\n  status: %s\n  value:  %s\n  reason: %s\n  remedy: %s\n",
		    tk_cap__id_name(id), why, c->present ? tk_status__name(c->status) : "-",
		    c->value, c->reason, c->remedy);
	_fail(file, line);
}

void check_backend(const struct tk_caps *caps, enum tk_collector col, enum tk_backend b,
			  const char *reason, const char *file, int line)
{
	const struct tk_backend_choice *c = &caps->backends[col];
	char why[300] = "";

	if (c->backend != b)
		snprintf(why, sizeof(why), "backend %s, want %s", tk_backend__name(c->backend),
			 tk_backend__name(b));
	else if (field_ok("reason", c->reason, reason, why, sizeof(why)))
		return;
	print_error("%s collector: %s\n  reason: %s\n", tk_collector__name(col), why, c->reason);
	_fail(file, line);
}

