// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the MALLOC_CONF reader (a process's environment is
 * outside input): the prof_prefix it finds fits the buffer, is NUL-terminated
 * and is a substring of the input; and MALLOC_CONF built back from it parses
 * to the same prefix.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/jedump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *conf, small[8], buf[4096], conf2[8192], back[4096];
	int err;

	conf = malloc(size + 1);
	if (!conf)
		return 0;
	memcpy(conf, data, size);
	conf[size] = '\0';
	err = tk_jedump__conf_prefix(conf, small, sizeof(small));
	if (!err && strnlen(small, sizeof(small)) >= sizeof(small))
		abort();
	err = tk_jedump__conf_prefix(conf, buf, sizeof(buf));
	if (!err) {
		if (strnlen(buf, sizeof(buf)) >= sizeof(buf) || !strstr(conf, buf))
			abort();
		if (!tk_jedump__malloc_conf(conf2, sizeof(conf2), 19, buf) &&
		    !strchr(buf, ',') && !strchr(buf, ':') &&
		    (tk_jedump__conf_prefix(conf2, back, sizeof(back)) || strcmp(back, buf)))
			abort();
	}
	free(conf);
	return 0;
}
