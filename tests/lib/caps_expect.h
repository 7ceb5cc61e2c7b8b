/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Assertions on capability snapshot entries and backend choices, for the caps tests. */
#ifndef __TK_TEST_CAPS_EXPECT_H
#define __TK_TEST_CAPS_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "caps/caps.h"

/* Does @hay contain every '|'-separated word of @words? The first missing one in @missing. */
bool has_words(const char *hay, const char *words, char *missing, size_t size);

/*
 * Entry @id has status @st and its value, reason and remedy contain the
 * '|'-separated words given: NULL checks nothing, "" wants the field empty.
 */
void check_cap(const struct tk_caps *caps, enum tk_cap_id id, enum tk_status st,
	       const char *value, const char *reason, const char *remedy, const char *file,
	       int line);
void check_backend(const struct tk_caps *caps, enum tk_collector col, enum tk_backend b,
		   const char *reason, const char *file, int line);

#define expect_cap(caps, id, st, value, reason, remedy) \
	check_cap(caps, id, st, value, reason, remedy, __FILE__, __LINE__)

#define expect_backend(caps, col, b, reason) \
	check_backend(caps, col, b, reason, __FILE__, __LINE__)

#endif /* __TK_TEST_CAPS_EXPECT_H */
