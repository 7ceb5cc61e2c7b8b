// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the /proc/vmstat and numastat parsers (the vmstat
 * backend of tracekit numa): any text, as both files, parses without reading
 * past its end; the count of counters found is within bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numa/numa_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_numa_nodestat node;
	uint64_t vals[32];
	char *text;
	int n;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&node, 0, sizeof(node));
	n = tk_numa_vmstat__parse(text, text, vals, sizeof(vals) / sizeof(vals[0]), &node);
	if (n < 0 || n > 32)
		abort();
	free(text);
	return 0;
}
