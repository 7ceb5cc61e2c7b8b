/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Who may ask `tracekit serve` for anything: the request headers that carry a
 * credential, and the ones a browser adds that say a request was made by a page
 * of another site. Outside input, read before anything else runs for a request
 * (tests/fuzz/fuzz_httpauth.c).
 */
#ifndef __TK_HTTPAUTH_H
#define __TK_HTTPAUTH_H

#include <stdbool.h>
#include <stddef.h>

#define TK_TOKEN_MIN 16
#define TK_TOKEN_MAX 511

/*
 * Whether @authorization (the header's value, NULL when absent) carries
 * @token: "Bearer TOKEN", or "Basic BASE64(USER:TOKEN)" with any user name
 * (what curl -u, Prometheus' basic_auth and Go's http://USER:TOKEN@HOST/ send).
 * The scheme names are case-insensitive. The comparison takes as long whatever
 * matches, so the token cannot be found by timing.
 */
bool tk_httpauth__check(const char *authorization, const char *token, size_t token_len);

/*
 * A request made by a browser for a page of another site — an <img> or a
 * fetch() on any page open on this host — names it in Sec-Fetch-Site
 * (cross-site, same-site: another port of this host is another origin), in
 * Origin, or, from older browsers, in Referer. NULL when none of them says so
 * (programs such as curl, Go and Prometheus send none of the three), else the
 * reason, in words, into @why.
 */
const char *tk_httpauth__cross_site(const char *sec_fetch_site, const char *origin,
				    const char *referer, const char *host, char *why,
				    size_t why_sz);

/*
 * Whether the Host header names a loopback address (127.0.0.0/8, ::1,
 * localhost): what a loopback listener is asked by, unless a page's DNS name was
 * rebound to 127.0.0.1. NULL (HTTP/1.0) is accepted.
 */
bool tk_httpauth__host_loopback(const char *host);

/*
 * Whether @tok (@len bytes) can be a token: TK_TOKEN_MIN to TK_TOKEN_MAX
 * printable ASCII characters without spaces. NULL, or the reason in @why.
 */
const char *tk_httpauth__token_invalid(const char *tok, size_t len, char *why, size_t why_sz);

/* A new token: 32 random bytes from getrandom(2), as 64 hex digits. 0 or -errno. */
int tk_httpauth__token_new(char *buf, size_t sz);

#endif /* __TK_HTTPAUTH_H */
