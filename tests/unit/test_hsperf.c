// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * HotSpot's performance data (proc/hsperf.c), as a JVM writes
 * /tmp/hsperfdata_USER/PID: the strings tracekit reads (attach allowed,
 * version, the JVM's arguments) found; a long value is no string; a file cut
 * short, another byte order, entries whose lengths lie: refused without a
 * read outside the bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "proc/jvm.h"

struct pd {
	unsigned char b[4096];
	size_t n;
	int nr;
};

static void put32(unsigned char *p, int32_t v)
{
	memcpy(p, &v, 4);
}

static void begin(struct pd *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->b, "\xca\xfe\xc0\xc0\x01\x02\x00\x01", 8);
	put32(d->b + 24, 32);
	d->n = 32;
}

/* An entry @name of type @type holding @len bytes of @val. */
static void entry(struct pd *d, const char *name, char type, const void *val, size_t len)
{
	unsigned char *e = d->b + d->n;
	size_t nl = strlen(name) + 1, doff = (20 + nl + 7) & ~7ul, elen = (doff + len + 7) & ~7ul;

	assert_true(d->n + elen <= sizeof(d->b));
	put32(e, elen);
	put32(e + 4, 20);
	put32(e + 8, type == 'B' ? (int32_t)len : 0);
	e[12] = type;
	put32(e + 16, doff);
	memcpy(e + 20, name, nl);
	memcpy(e + doff, val, len);
	d->n += elen;
	d->nr++;
	put32(d->b + 8, d->n);
	put32(d->b + 28, d->nr);
}

static void sample(struct pd *d)
{
	static const char args[] = "-XX:+PreserveFramePointer -Xrs";
	int64_t ticks = 5;

	begin(d);
	entry(d, "sun.os.hrt.ticks", 'J', &ticks, sizeof(ticks));
	entry(d, "sun.rt.jvmCapabilities", 'B', "1100000000\0\0\0\0\0", 16);
	entry(d, "java.property.java.vm.version", 'B', "17.0.15+6-Debian", 17);
	entry(d, "java.rt.vmArgs", 'B', args, sizeof(args));
}

static void test_strings(void **state)
{
	struct pd d;
	char out[64];

	sample(&d);
	assert_int_equal(tk_hsperf__string(d.b, d.n, "sun.rt.jvmCapabilities", out, sizeof(out)),
			 0);
	assert_string_equal(out, "1100000000");
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.property.java.vm.version", out,
					   sizeof(out)), 0);
	assert_string_equal(out, "17.0.15+6-Debian");
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, 12), 0);
	assert_string_equal(out, "-XX:+Preser");	/* cut to the buffer */
	/* a long is no string; a name only a prefix of another's is not it */
	assert_int_equal(tk_hsperf__string(d.b, d.n, "sun.os.hrt.ticks", out, sizeof(out)),
			 -ENOENT);
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vm", out, sizeof(out)), -ENOENT);
	assert_string_equal(out, "");
}

static void test_garbage(void **state)
{
	struct pd d;
	char out[64];

	sample(&d);
	/* cut short: the entries past the end are not there */
	assert_int_equal(tk_hsperf__string(d.b, d.n - 8, "java.rt.vmArgs", out, sizeof(out)),
			 -ENOENT);
	assert_int_equal(tk_hsperf__string(d.b, 16, "java.rt.vmArgs", out, sizeof(out)), -EINVAL);
	/* big-endian data, a foreign magic */
	d.b[4] = 0;
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, sizeof(out)),
			 -EINVAL);
	sample(&d);
	d.b[0] = 0;
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, sizeof(out)),
			 -EINVAL);
	/* the first entry before the prologue's end, or far past it (negative) */
	sample(&d);
	put32(d.b + 24, 8);
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, sizeof(out)),
			 -EINVAL);
	put32(d.b + 24, -4);
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, sizeof(out)),
			 -EINVAL);
	/* an entry whose length runs past the data: the rest cannot be found */
	sample(&d);
	put32(d.b + 32, 100000);
	assert_int_equal(tk_hsperf__string(d.b, d.n, "java.rt.vmArgs", out, sizeof(out)),
			 -ENOENT);
	/* a value longer than its entry */
	sample(&d);
	put32(d.b + 32 + 48 + 8, 4000);	/* the second entry's vector_length */
	assert_int_equal(tk_hsperf__string(d.b, d.n, "sun.rt.jvmCapabilities", out, sizeof(out)),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
