// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libFuzzer target for the /proc/PID/maps parser, whole texts and single lines. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/maps.h"

static int check(const struct tk_map *m, void *ctx)
{
	if (m->start > m->end || strlen(m->perms) != 4 ||
	    strnlen(m->path, sizeof(m->path)) >= sizeof(m->path))
		abort();
	(*(unsigned int *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int n = 0;
	struct tk_map m;
	char *text;

	/* one line, not NUL-terminated: only @size bytes may be read */
	if (!tk_maps__parse_line((const char *)data, size, &m))
		check(&m, &n);

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	tk_maps__parse(text, check, &n);
	free(text);
	return 0;
}
