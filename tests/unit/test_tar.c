// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gzipped tar writer (core/tar.c): what it writes is read back by GNU tar
 * (names, sizes, modes, contents byte for byte, including an empty file and
 * one of exactly a block), and what it cannot write whole it refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "core/tar.h"

static char dir[] = "/tmp/tk-tar-test.XXXXXX";

static void put(const char *sub, const char *name, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int write_tar(const char *sub, const char *top, const char *tarname)
{
	char src[512], path[512];
	int fd, err;

	snprintf(src, sizeof(src), "%s/%s", dir, sub);
	snprintf(path, sizeof(path), "%s/%s", dir, tarname);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	err = tk_tar__write_dir(fd, src, top, 1764547200);
	close(fd);
	return err;
}

static void test_round_trip(void **state)
{
	static unsigned char big[3 * 512 + 7], block[512];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 131 + 7);
	memset(block, 'b', sizeof(block));
	assert_int_equal(run("mkdir -p %s/src", dir), 0);
	put("src", "a.txt", "hello\n", 6);
	put("src", "empty", "", 0);
	put("src", "block", block, sizeof(block));
	put("src", "big.bin", big, sizeof(big));
	assert_int_equal(write_tar("src", "bundle", "t.tar.gz"), 0);
	/* GNU tar lists it in our order (sorted), with the sizes, modes and date we gave */
	assert_int_equal(run("cd %s && tar -tzf t.tar.gz | tr '\\n' ' ' | "
			     "grep -qx 'bundle/ bundle/a.txt bundle/big.bin bundle/block bundle/empty '",
			     dir), 0);
	assert_int_equal(run("cd %s && tar -tvzf t.tar.gz | grep -q '^-rw------- root/root *1543 "
			     "2025-12-01 00:00 bundle/big.bin$'", dir), 0);
	assert_int_equal(run("cd %s && tar -tvzf t.tar.gz | grep -q '^drwx------ .* bundle/$'", dir),
			 0);
	/* and extracts it byte for byte (tar checks every header's checksum) */
	assert_int_equal(run("cd %s && mkdir x && tar -xzf t.tar.gz -C x && "
			     "diff -r src x/bundle", dir), 0);
	assert_int_equal(run("cd %s && gzip -t t.tar.gz", dir), 0);
}

static void test_empty_dir(void **state)
{
	assert_int_equal(run("mkdir -p %s/none", dir), 0);
	assert_int_equal(write_tar("none", "n", "n.tar.gz"), 0);
	assert_int_equal(run("cd %s && tar -tzf n.tar.gz | grep -qx 'n/'", dir), 0);
}

static void test_refused(void **state)
{
	char name[200];

	assert_int_equal(run("mkdir -p %s/sub/inner", dir), 0);
	assert_int_equal(write_tar("sub", "s", "s.tar.gz"), -EINVAL);	/* a subdirectory */
	assert_int_equal(run("mkdir -p %s/lnk && ln -sf /etc/passwd %s/lnk/p", dir, dir), 0);
	assert_int_equal(write_tar("lnk", "l", "l.tar.gz"), -EINVAL);	/* a symlink */
	assert_int_equal(run("mkdir -p %s/long", dir), 0);
	memset(name, 'n', 120);
	name[120] = 0;
	put("long", name, "x", 1);
	assert_int_equal(write_tar("long", "l", "long.tar.gz"), -ENAMETOOLONG);
	assert_int_equal(write_tar("src", "a/b", "x.tar.gz"), -EINVAL);
	assert_int_equal(write_tar("src", "", "x.tar.gz"), -EINVAL);
	assert_int_equal(write_tar("missing", "m", "m.tar.gz"), -ENOENT);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return run("rm -rf %s", dir) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty_dir),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests_name("tar", tests, setup, teardown);
}
