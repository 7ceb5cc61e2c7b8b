// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* serve's request gate (core/httpauth.c): credentials, browsers' cross-site requests, Host. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "core/httpauth.h"

static const char tok[] = "s3cret-token-0123456789";
#define CHECK(h) tk_httpauth__check(h, tok, strlen(tok))

static void test_bearer(void **state)
{
	assert_true(CHECK("Bearer s3cret-token-0123456789"));
	assert_true(CHECK("bearer   s3cret-token-0123456789"));	/* scheme without case */
	assert_false(CHECK(NULL));
	assert_false(CHECK(""));
	assert_false(CHECK("Bearer"));
	assert_false(CHECK("Bearer "));
	assert_false(CHECK("Bearer s3cret-token-012345678"));	/* a prefix */
	assert_false(CHECK("Bearer s3cret-token-01234567890"));	/* longer */
	assert_false(CHECK("Bearer s3cret-token-0123456789 x"));
	assert_false(CHECK("Bearer S3CRET-TOKEN-0123456789"));	/* the token has case */
	assert_false(CHECK("Bearers3cret-token-0123456789"));
	assert_false(CHECK("Token s3cret-token-0123456789"));
	assert_false(CHECK("s3cret-token-0123456789"));
	/* no token configured: nothing passes */
	assert_false(tk_httpauth__check("Bearer ", "", 0));
}

static void test_basic(void **state)
{
	/* base64("tk:s3cret-token-0123456789"), as curl -u and Go's userinfo send it */
	assert_true(CHECK("Basic dGs6czNjcmV0LXRva2VuLTAxMjM0NTY3ODk="));
	/* any user name, and none */
	assert_true(CHECK("Basic cHJvbWV0aGV1czpzM2NyZXQtdG9rZW4tMDEyMzQ1Njc4OQ=="));
	assert_true(CHECK("Basic OnMzY3JldC10b2tlbi0wMTIzNDU2Nzg5"));
	/* padding left out */
	assert_true(CHECK("basic dGs6czNjcmV0LXRva2VuLTAxMjM0NTY3ODk"));
	/* the token as the user name, not the password: refused */
	assert_false(CHECK("Basic czNjcmV0LXRva2VuLTAxMjM0NTY3ODk6"));
	/* "tk:s3cret-token-012345678" (one short), and no colon at all */
	assert_false(CHECK("Basic dGs6czNjcmV0LXRva2VuLTAxMjM0NTY3OA=="));
	assert_false(CHECK("Basic czNjcmV0LXRva2VuLTAxMjM0NTY3ODk="));
	/* not base64, digits after padding, trailing text, a lone digit */
	assert_false(CHECK("Basic dGs6c*NjcmV0"));
	assert_false(CHECK("Basic dGs6=czNj"));
	assert_false(CHECK("Basic dGs6czNjcmV0LXRva2VuLTAxMjM0NTY3ODk= x"));
	assert_false(CHECK("Basic A"));
	assert_false(CHECK("Basic "));
	/* "tk:s3cret-token-0123456789\0x": a NUL inside is not the token */
	assert_false(CHECK("Basic dGs6czNjcmV0LXRva2VuLTAxMjM0NTY3ODkAeA=="));
}

static void test_long_basic(void **state)
{
	char h[2048], user[800];

	/* a user name too long for the decoder: refused, not overflowed */
	memset(user, 'A', sizeof(user) - 1);
	user[sizeof(user) - 1] = 0;
	snprintf(h, sizeof(h), "Basic %s", user);
	assert_false(CHECK(h));
}

static void test_cross_site(void **state)
{
	char why[256];

#define CROSS(sfs, origin, referer, host) \
	tk_httpauth__cross_site(sfs, origin, referer, host, why, sizeof(why))
	/* programs: none of the headers */
	assert_null(CROSS(NULL, NULL, NULL, "127.0.0.1:6060"));
	assert_null(CROSS(NULL, NULL, NULL, NULL));
	/* the address bar, and the server's own pages */
	assert_null(CROSS("none", NULL, NULL, "127.0.0.1:6060"));
	assert_null(CROSS("same-origin", "http://127.0.0.1:6060", "http://127.0.0.1:6060/x",
			  "127.0.0.1:6060"));
	assert_null(CROSS(NULL, "HTTP://LOCALHOST:6060", NULL, "localhost:6060"));
	/* a page of another site, or of another port of this host (same-site) */
	assert_non_null(CROSS("cross-site", NULL, NULL, "127.0.0.1:6060"));
	assert_non_null(strstr(why, "cross-site"));
	assert_non_null(CROSS("same-site", NULL, NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS("Cross-Site", NULL, NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS("", NULL, NULL, "127.0.0.1:6060"));
	/* Origin: another, null, a prefix of ours, with a path, without a Host */
	assert_non_null(CROSS(NULL, "http://evil.example", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "null", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "http://127.0.0.1:60601", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "http://127.0.0.1:6060.evil.example", NULL,
			      "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "https://127.0.0.1:6060", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "http://127.0.0.1:6060/x", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "http://", NULL, "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, "http://127.0.0.1:6060", NULL, NULL));
	/* an older browser's Referer alone */
	assert_non_null(CROSS(NULL, NULL, "http://evil.example/page", "127.0.0.1:6060"));
	assert_non_null(CROSS(NULL, NULL, "http://127.0.0.1:6060@evil.example/",
			      "127.0.0.1:6060"));
	assert_null(CROSS(NULL, NULL, "http://127.0.0.1:6060/", "127.0.0.1:6060"));
#undef CROSS
}

static void test_host(void **state)
{
	assert_true(tk_httpauth__host_loopback(NULL));
	assert_true(tk_httpauth__host_loopback("127.0.0.1:6060"));
	assert_true(tk_httpauth__host_loopback("127.1.2.3"));
	assert_true(tk_httpauth__host_loopback("localhost:6060"));
	assert_true(tk_httpauth__host_loopback("[::1]:6060"));
	assert_false(tk_httpauth__host_loopback("attacker.example:6060"));
	assert_false(tk_httpauth__host_loopback("127.0.0.1.evil.example"));
	assert_false(tk_httpauth__host_loopback("[::1"));
	assert_false(tk_httpauth__host_loopback("[]:6060"));
	assert_false(tk_httpauth__host_loopback(""));
}

static void test_token_rules(void **state)
{
	char why[128], t[80], t2[80];

	assert_null(tk_httpauth__token_invalid(tok, strlen(tok), why, sizeof(why)));
	assert_non_null(tk_httpauth__token_invalid("short", 5, why, sizeof(why)));
	assert_non_null(strstr(why, "shorter than 16"));
	assert_non_null(tk_httpauth__token_invalid("0123456789 abcdef", 17, why, sizeof(why)));
	assert_non_null(tk_httpauth__token_invalid("0123456789\tabcdef", 17, why, sizeof(why)));
	assert_non_null(tk_httpauth__token_invalid("0123456789\xc3\xa9" "abcdef", 18, why,
						   sizeof(why)));
	/* generated ones: 64 hex digits, valid, and not twice the same */
	assert_int_equal(tk_httpauth__token_new(t, sizeof(t)), 0);
	assert_int_equal(tk_httpauth__token_new(t2, sizeof(t2)), 0);
	assert_int_equal(strlen(t), 64);
	assert_int_equal(strspn(t, "0123456789abcdef"), 64);
	assert_null(tk_httpauth__token_invalid(t, strlen(t), why, sizeof(why)));
	assert_string_not_equal(t, t2);
	assert_int_equal(tk_httpauth__token_new(t, 64), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_long_basic),
		cmocka_unit_test(test_cross_site),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_token_rules),
	};

	return cmocka_run_group_tests_name("httpauth", tests, NULL, NULL);
}
