// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* serve's credentials and browsers' cross-site requests (httpauth.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "core/httpauth.h"

/* The value of one base64 digit (RFC 4648, standard alphabet), or -1. */
static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decode base64 @s (up to its end or whitespace) into @dst (at most @sz - 1
 * bytes, NUL-terminated). Padding is optional; a bad digit, stray padding or
 * an output that does not fit is -1. The decoded length otherwise.
 */
static int b64decode(const char *s, char *dst, size_t sz)
{
	unsigned int acc = 0;
	size_t n = 0;
	int bits = 0, v, pad = 0;

	for (; *s && *s != ' ' && *s != '\t'; s++) {
		if (*s == '=') {
			pad++;
			continue;
		}
		if (pad || (v = b64val((unsigned char)*s)) < 0)
			return -1;	/* a digit after padding, or not a digit */
		acc = (acc << 6 | (unsigned int)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= sz)
				return -1;
			dst[n++] = (char)(acc >> bits & 0xff);
		}
	}
	if (pad > 2 || bits >= 6)	/* one digit alone says no whole byte */
		return -1;
	dst[n] = 0;
	return (int)n;
}

/* Compare in time that depends on @want's length only. */
static bool same_secret(const char *got, size_t got_len, const char *want, size_t want_len)
{
	unsigned char diff = got_len != want_len;
	size_t i;

	for (i = 0; i < want_len; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < got_len ? got[i] : 0);
	return diff == 0;
}

static const char *skip_scheme(const char *h, const char *scheme)
{
	size_t n = strlen(scheme);

	if (strncasecmp(h, scheme, n) || (h[n] != ' ' && h[n] != '\t'))
		return NULL;
	for (h += n; *h == ' ' || *h == '\t'; h++)
		;
	return h;
}

bool tk_httpauth__check(const char *authorization, const char *token, size_t token_len)
{
	char dec[3 * (TK_TOKEN_MAX + 256) / 4 + 4];
	const char *v, *pass;
	size_t len;
	int n;

	if (!authorization || !token || !token_len)
		return false;
	if ((v = skip_scheme(authorization, "Bearer"))) {
		len = strcspn(v, " \t");
		if (v[len])
			return false;	/* something after the token */
		return same_secret(v, len, token, token_len);
	}
	if ((v = skip_scheme(authorization, "Basic"))) {
		n = b64decode(v, dec, sizeof(dec));
		if (n < 0 || v[strcspn(v, " \t")] || (size_t)n != strlen(dec))
			return false;	/* bad base64, trailing text, or a NUL inside */
		pass = strchr(dec, ':');
		if (!pass)
			return false;
		pass++;
		return same_secret(pass, (size_t)n - (size_t)(pass - dec), token, token_len);
	}
	return false;
}

/*
 * Whether @url's origin ("http://HOST[:PORT]", then '/' or its end) is
 * http://@host, compared without case.
 */
static bool same_origin(const char *url, const char *host)
{
	static const char http[] = "http://";
	size_t hl = strlen(host);

	if (strncasecmp(url, http, strlen(http)))
		return false;
	url += strlen(http);
	return !strncasecmp(url, host, hl) && (url[hl] == 0 || url[hl] == '/');
}

const char *tk_httpauth__cross_site(const char *sec_fetch_site, const char *origin,
				    const char *referer, const char *host, char *why,
				    size_t why_sz)
{
	/* "none": the user typed the address or followed a bookmark */
	if (sec_fetch_site && strcmp(sec_fetch_site, "same-origin") &&
	    strcmp(sec_fetch_site, "none")) {
		snprintf(why, why_sz, "a browser sent this request for a page of another site "
			 "(Sec-Fetch-Site: %.40s)", sec_fetch_site);
		return why;
	}
	if (origin && (!host || !same_origin(origin, host) || strchr(origin + 7, '/'))) {
		snprintf(why, why_sz, "a browser sent this request for a page of another origin "
			 "(Origin: %.100s)", origin);
		return why;
	}
	if (referer && (!host || !same_origin(referer, host))) {
		snprintf(why, why_sz, "a browser sent this request for a page of another origin "
			 "(Referer from another site)");
		return why;
	}
	return NULL;
}

bool tk_httpauth__host_loopback(const char *host)
{
	char name[256];
	size_t n;

	if (!host)
		return true;	/* HTTP/1.0 */
	if (host[0] == '[') {
		n = strcspn(host, "]");
		if (!host[n] || n < 1)
			return false;
		snprintf(name, sizeof(name), "%.*s", (int)n - 1, host + 1);
	} else {
		n = strcspn(host, ":");
		snprintf(name, sizeof(name), "%.*s", (int)n, host);
	}
	if (!strcasecmp(name, "localhost") || !strcmp(name, "::1"))
		return true;
	return !strncmp(name, "127.", 4) && strspn(name, "0123456789.") == strlen(name);
}

const char *tk_httpauth__token_invalid(const char *tok, size_t len, char *why, size_t why_sz)
{
	size_t i;

	if (len < TK_TOKEN_MIN) {
		snprintf(why, why_sz, "the token is shorter than %d characters", TK_TOKEN_MIN);
		return why;
	}
	if (len > TK_TOKEN_MAX) {
		snprintf(why, why_sz, "the token is longer than %d characters", TK_TOKEN_MAX);
		return why;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f) {
			snprintf(why, why_sz, "the token has a space or a character that is not "
				 "printable ASCII (at %zu)", i);
			return why;
		}
	return NULL;
}

int tk_httpauth__token_new(char *buf, size_t sz)
{
	unsigned char r[32];
	size_t got = 0, i;
	ssize_t n;

	if (sz < 2 * sizeof(r) + 1)
		return -ENOSPC;
	while (got < sizeof(r)) {
		n = getrandom(r + got, sizeof(r) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(r); i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
	return 0;
}
