// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for HotSpot's performance data parser (proc/hsperf.c:
 * /tmp/hsperfdata_USER/PID, the JVM's own writing): any bytes give a string
 * or a refusal, never a read outside them; what is found fits its buffer, is
 * NUL-terminated and holds no control character.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/jvm.h"

static void check(const uint8_t *data, size_t size, const char *name, size_t out_sz)
{
	char out[600];
	const char *c;
	int rc;

	memset(out, 'x', sizeof(out));
	rc = tk_hsperf__string(data, size, name, out, out_sz);
	if (out_sz && strnlen(out, out_sz) >= out_sz)
		abort();
	if (rc && out_sz && out[0])
		abort();
	for (c = out; out_sz && *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
	if (out[out_sz < sizeof(out) ? out_sz : sizeof(out) - 1] != 'x' && out_sz < sizeof(out))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly @size bytes: reading past it is ASan's to see */
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	check(buf, size, "sun.rt.jvmCapabilities", 8);
	check(buf, size, "java.rt.vmArgs", 512);
	check(buf, size, "x", 1);
	check(buf, size, "", 2);
	free(buf);
	return 0;
}
