// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for serve's request gate: any Authorization value is
 * accepted only when it carries the token (as Bearer, or as Basic auth's
 * password, checked here against an independent decoding), and the cross-site
 * and Host checks read any header values without reading past them. The input
 * is split at its first NUL bytes into the header values.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/httpauth.h"

static const char token[] = "0123456789abcdef-token";

/* "Basic " + base64("u:" token), or "Bearer " token: the two ways in */
static int carries_token(const char *h)
{
	static const char basic[] = "Basic dTowMTIzNDU2Nzg5YWJjZGVmLXRva2Vu";

	return (!strncasecmp(h, "Bearer ", 7) && !strcmp(h + 7, token)) ||
	       (!strncasecmp(h, basic, 6) && !strcmp(h + 6, basic + 6));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *f[5] = { NULL };
	char why[256];
	size_t i, n = 0;
	bool ok;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	f[n++] = buf;
	for (i = 0; i < size && n < 5; i++)
		if (!buf[i])
			f[n++] = buf + i + 1;
	ok = tk_httpauth__check(f[0], token, strlen(token));
	/* a value accepted must hold the token; the two canonical forms must pass */
	if (carries_token(f[0]) && !ok)
		abort();
	if (ok && !strstr(f[0], token) && strncasecmp(f[0], "Basic", 5))
		abort();
	if (tk_httpauth__check(f[0], token, 0))
		abort();	/* no token: nothing passes */
	if (tk_httpauth__cross_site(f[1], f[2], f[3], f[4], why, sizeof(why)) && !why[0])
		abort();
	tk_httpauth__host_loopback(f[4]);
	tk_httpauth__token_invalid(f[0], strlen(f[0]), why, sizeof(why));
	free(buf);
	return 0;
}
