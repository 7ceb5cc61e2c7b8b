// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jemalloc heap dumps as files (jedump.h): the MALLOC_CONF tracekit gives a
 * command, a process's prof_prefix, picking the newest dump (and only
 * regular *.heap files), the dump request to libtkagent.so answered by a
 * fake agent (success, the agent's errno, a garbled answer, silence, a
 * closed agent), loading a real dump, and telling how a program has
 * jemalloc (the workloads: glibc only, -ljemalloc, libjemalloc.a).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "spawn.h"
#include "alloc/jedump.h"

static void test_lg_sample(void **state)
{
	assert_int_equal(tk_jedump__lg_sample(0), 19);
	assert_int_equal(tk_jedump__lg_sample(1), 0);
	assert_int_equal(tk_jedump__lg_sample(512 * 1024), 19);
	assert_int_equal(tk_jedump__lg_sample(4096), 12);
	/* rounded in the log domain: 2^12.5 ~ 5793 */
	assert_int_equal(tk_jedump__lg_sample(5792), 12);
	assert_int_equal(tk_jedump__lg_sample(5793), 13);
	assert_int_equal(tk_jedump__lg_sample(1000000), 20);
	assert_int_equal(tk_jedump__lg_sample(UINT64_MAX), 62);
}

static void test_malloc_conf(void **state)
{
	char buf[256], small[32];

	assert_int_equal(tk_jedump__malloc_conf(buf, sizeof(buf), 19, "/tmp/d/jeprof"), 0);
	assert_string_equal(buf, "prof:true,prof_active:true,prof_accum:true,lg_prof_sample:19,"
				 "prof_final:true,prof_prefix:/tmp/d/jeprof");
	assert_int_equal(tk_jedump__malloc_conf(buf, sizeof(buf), 19, "/a,b"), -EINVAL);
	assert_int_equal(tk_jedump__malloc_conf(buf, sizeof(buf), 19, "/a:b"), -EINVAL);
	assert_int_equal(tk_jedump__malloc_conf(buf, sizeof(buf), 63, "/a"), -EINVAL);
	assert_int_equal(tk_jedump__malloc_conf(small, sizeof(small), 19, "/a"), -ENAMETOOLONG);

	/* what a process configured: the last prof_prefix wins, as in jemalloc */
	assert_int_equal(tk_jedump__conf_prefix("prof:true,prof_prefix:/var/tmp/x", buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "/var/tmp/x");
	assert_int_equal(tk_jedump__conf_prefix("prof_prefix:a,prof:true,prof_prefix:b", buf,
						sizeof(buf)), 0);
	assert_string_equal(buf, "b");
	assert_int_equal(tk_jedump__conf_prefix("prof:true,lg_prof_sample:12", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(tk_jedump__conf_prefix("", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tk_jedump__conf_prefix("prof_prefix:0123456789012345678901234567890123",
						small, sizeof(small)), -ENAMETOOLONG);
}

static void touch_at(struct fx *fx, const char *rel, time_t sec)
{
	struct timespec ts[2] = { { sec, 0 }, { sec, 0 } };
	char path[PATH_MAX];

	assert_int_equal(fx_path(fx, rel, path, sizeof(path)), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_newest(void **state)
{
	struct fx *fx = fx_new();
	char dir[PATH_MAX], path[PATH_MAX], target[PATH_MAX];
	int64_t mt = 0;

	assert_non_null(fx);
	assert_int_equal(fx_mkdir(fx, "d"), 0);
	assert_int_equal(fx_path(fx, "d", dir, sizeof(dir)), 0);
	assert_int_equal(tk_jedump__newest(dir, NULL, 0, path, sizeof(path), NULL), -ENOENT);

	assert_int_equal(fx_write(fx, "d/jeprof.100.0.i0.heap", "x"), 0);
	assert_int_equal(fx_write(fx, "d/jeprof.100.1.i1.heap", "x"), 0);
	assert_int_equal(fx_write(fx, "d/jeprof.200.0.f.heap", "x"), 0);
	assert_int_equal(fx_write(fx, "d/jeprof.100.9.i9.txt", "x"), 0);	/* not a dump */
	assert_int_equal(fx_mkdir(fx, "d/jeprof.100.7.i7.heap"), 0);		/* not a file */
	touch_at(fx, "d/jeprof.100.0.i0.heap", 1000);
	touch_at(fx, "d/jeprof.100.1.i1.heap", 2000);
	touch_at(fx, "d/jeprof.200.0.f.heap", 3000);
	touch_at(fx, "d/jeprof.100.9.i9.txt", 9000);
	touch_at(fx, "d/jeprof.100.7.i7.heap", 9000);
	/* a symbolic link, however new, is not followed */
	assert_int_equal(fx_path(fx, "d/jeprof.100.0.i0.heap", target, sizeof(target)), 0);
	assert_int_equal(fx_symlink(fx, target, "d/jeprof.100.8.i8.heap"), 0);

	assert_int_equal(tk_jedump__newest(dir, NULL, 0, path, sizeof(path), &mt), 0);
	assert_non_null(strstr(path, "/jeprof.200.0.f.heap"));
	assert_int_equal(mt, 3000LL * 1000000000);
	assert_int_equal(tk_jedump__newest(dir, "jeprof.100.", 0, path, sizeof(path), &mt), 0);
	assert_non_null(strstr(path, "/jeprof.100.1.i1.heap"));
	/* since: only what was written at or after it */
	assert_int_equal(tk_jedump__newest(dir, "jeprof.100.", 1500LL * 1000000000, path,
					   sizeof(path), NULL), 0);
	assert_non_null(strstr(path, "/jeprof.100.1.i1.heap"));
	assert_int_equal(tk_jedump__newest(dir, "jeprof.100.", 2001LL * 1000000000, path,
					   sizeof(path), NULL), -ENOENT);
	assert_int_equal(tk_jedump__newest(dir, "jeprof.300.", 0, path, sizeof(path), NULL),
			 -ENOENT);
	/* the same time: the later name */
	touch_at(fx, "d/jeprof.100.0.i0.heap", 2000);
	assert_int_equal(tk_jedump__newest(dir, "jeprof.100.", 0, path, sizeof(path), NULL), 0);
	assert_non_null(strstr(path, "/jeprof.100.1.i1.heap"));

	assert_int_equal(fx_path(fx, "nope", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__newest(path, NULL, 0, target, sizeof(target), NULL), -ENOENT);
	fx_free(fx);
}

/* ---- the dump request ----------------------------------------------------------------- */

struct fake_agent {
	int fd;
	const char *answer;	/* written after the request line; NULL: close; "": silence */
	char got[PATH_MAX + 8];
	const char *write_to;	/* the dump to write when answering "0" */
};

static void *agent_thread(void *arg)
{
	struct fake_agent *fa = arg;
	size_t off = 0;
	ssize_t n;

	while (off < sizeof(fa->got) - 1 && !memchr(fa->got, '\n', off)) {
		n = read(fa->fd, fa->got + off, sizeof(fa->got) - 1 - off);
		if (n <= 0)
			break;
		off += n;
		fa->got[off] = '\0';
	}
	if (fa->write_to) {
		FILE *f = fopen(fa->write_to, "w");

		if (f) {
			fputs("heap_v2/1\n t*: 0: 0 [0: 0]\n", f);
			fclose(f);
		}
	}
	if (!fa->answer) {
		close(fa->fd);
		fa->fd = -1;
		return NULL;
	}
	if (*fa->answer && write(fa->fd, fa->answer, strlen(fa->answer)) < 0)
		return NULL;
	/* hold the connection until the test closes its end */
	while (read(fa->fd, fa->got + off, 1) > 0)
		;
	return NULL;
}

static int request_with(const char *answer, const char *path, int timeout_ms, char *got,
			size_t got_sz)
{
	struct fake_agent fa = { .answer = answer };
	pthread_t th;
	int sv[2], err;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fa.fd = sv[1];
	assert_int_equal(pthread_create(&th, NULL, agent_thread, &fa), 0);
	err = tk_jedump__request(sv[0], path, timeout_ms);
	close(sv[0]);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (fa.fd >= 0)
		close(fa.fd);
	if (got)
		snprintf(got, got_sz, "%s", fa.got);
	return err;
}

static void test_request(void **state)
{
	char got[PATH_MAX + 8];

	assert_int_equal(request_with("0\n", "/tmp/x/req.1.heap", 2000, got, sizeof(got)), 0);
	assert_string_equal(got, "D /tmp/x/req.1.heap\n");
	/* the answer may come in pieces, the errno of mallctl */
	assert_int_equal(request_with("2\n", "/p", 2000, NULL, 0), -ENOENT);
	assert_int_equal(request_with("14\n", "/p", 2000, NULL, 0), -EFAULT);
	/* no answer, a garbled one, an agent gone */
	assert_int_equal(request_with("", "/p", 200, NULL, 0), -ETIMEDOUT);
	assert_int_equal(request_with("yes\n", "/p", 2000, NULL, 0), -EPROTO);
	assert_int_equal(request_with("-3\n", "/p", 2000, NULL, 0), -EPROTO);
	assert_int_equal(request_with("0123456789012345678901234567890123456789", "/p", 2000,
				      NULL, 0), -EPROTO);
	assert_int_equal(request_with(NULL, "/p", 2000, NULL, 0), -EPIPE);
	/* a path the line protocol cannot carry, a descriptor that is none */
	assert_int_equal(tk_jedump__request(-1, "/p", 100), -EBADF);
	{
		int sv[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		assert_int_equal(tk_jedump__request(sv[0], "/a\nD /b", 100), -EINVAL);
		assert_int_equal(tk_jedump__request(sv[0], "", 100), -EINVAL);
		close(sv[1]);
		/* the peer closed before the request: no SIGPIPE, -EPIPE */
		assert_int_equal(tk_jedump__request(sv[0], "/p", 100), -EPIPE);
		close(sv[0]);
	}
}

/* ---- loading --------------------------------------------------------------------------- */

static void test_load(void **state)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so) };
	struct fx *fx = fx_new();
	struct tk_symbolizer *s;
	struct tk_profile *p = NULL;
	char path[PATH_MAX], corpus[PATH_MAX];
	uint64_t period = 0;

	assert_non_null(fx);
	assert_int_equal(tk_symbolizer__new(&so, &s), 0);
	/* a dump jemalloc 5.3 wrote (tests/fuzz/corpus), for a process long gone */
	snprintf(corpus, sizeof(corpus), "tests/fuzz/corpus/fuzz_jeprof/linked-lg12-accum");
	if (!access(corpus, R_OK)) {
		assert_int_equal(tk_jedump__load(corpus, s, 0x3fffff, "jemalloc", &period, &p), 0);
		assert_int_equal(period, 4096);
		assert_non_null(p);
		assert_int_equal(p->nr_values, 4);
		assert_string_equal(p->value_types[3].type, "inuse_space");
		assert_true(p->nr_samples > 0);
		assert_string_equal(p->backend, "jemalloc");
		tk_profile__free(p);
	} else {
		print_message("no %s here (run from the source tree): skipped that part\n", corpus);
	}

	/* malformed, not a regular file, missing, a symbolic link */
	assert_int_equal(fx_write(fx, "bad.heap", "heap_v2/4096\n t*: 1: 2\n"), 0);
	assert_int_equal(fx_path(fx, "bad.heap", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__load(path, s, 1, "jemalloc", NULL, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(fx_mkdir(fx, "dir.heap"), 0);
	assert_int_equal(fx_path(fx, "dir.heap", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__load(path, s, 1, "jemalloc", NULL, &p), -EINVAL);
	assert_int_equal(fx_path(fx, "none.heap", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__load(path, s, 1, "jemalloc", NULL, &p), -ENOENT);
	assert_int_equal(fx_write(fx, "ok.heap", "heap_v2/1\n t*: 0: 0 [0: 0]\n"), 0);
	assert_int_equal(fx_path(fx, "ok.heap", path, sizeof(path)), 0);
	assert_int_equal(fx_symlink(fx, path, "link.heap"), 0);
	assert_int_equal(fx_path(fx, "link.heap", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__load(path, s, 1, "jemalloc", NULL, &p), -ELOOP);
	assert_int_equal(fx_path(fx, "ok.heap", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__load(path, s, 1, "jemalloc", &period, &p), 0);
	assert_int_equal(period, 1);
	assert_int_equal(p->nr_samples, 0);
	tk_profile__free(p);

	tk_symbolizer__free(s);
	fx_free(fx);
}

/* ---- the program's own jemalloc --------------------------------------------------------- */

static bool workload(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/workloads/%s", tk_test_build_dir(), name);
	if (access(path, R_OK)) {
		print_message("no %s (make the workloads): skipped\n", path);
		return false;
	}
	return true;
}

static void test_program(void **state)
{
	struct tk_jedump_program pr;
	struct fx *fx = fx_new();
	char path[PATH_MAX];

	assert_non_null(fx);
	if (workload("alloc_leak", path, sizeof(path))) {
		assert_int_equal(tk_jedump__program(path, &pr), 0);
		assert_int_equal(pr.linkage, TK_JEDUMP_NONE);
	}
	if (workload("alloc_leak_je", path, sizeof(path))) {
		assert_int_equal(tk_jedump__program(path, &pr), 0);
		assert_int_equal(pr.linkage, TK_JEDUMP_SHARED);
		assert_string_equal(pr.needed, "libjemalloc.so.2");
	}
	if (workload("jemalloc_static", path, sizeof(path))) {
		assert_int_equal(tk_jedump__program(path, &pr), 0);
		assert_int_equal(pr.linkage, TK_JEDUMP_STATIC);
		assert_string_equal(pr.prefix, "");
		assert_string_equal(pr.conf_env, "MALLOC_CONF");
		assert_int_equal(pr.prof_built, 1);	/* Debian's libjemalloc.a has --enable-prof */
	}
	if (workload("fake_rjem", path, sizeof(path))) {
		assert_int_equal(tk_jedump__program(path, &pr), 0);
		print_message("fake_rjem: linkage %d prefix \"%s\" env %s prof %d\n", pr.linkage,
			      pr.prefix, pr.conf_env, pr.prof_built);
		if (pr.linkage == TK_JEDUMP_STATIC) {
			assert_string_equal(pr.prefix, "_rjem_");
			assert_string_equal(pr.conf_env, "_RJEM_MALLOC_CONF");
		}
	}
	/* a script is no ELF file */
	assert_int_equal(fx_write(fx, "script", "#!/bin/sh\nexit 0\n"), 0);
	assert_int_equal(fx_path(fx, "script", path, sizeof(path)), 0);
	assert_int_equal(tk_jedump__program(path, &pr), -ENOEXEC);
	assert_int_equal(pr.linkage, TK_JEDUMP_NONE);
	fx_free(fx);
}

static void test_find_lib(void **state)
{
	char path[PATH_MAX];
	int err;

	setenv("TRACEKIT_LIBJEMALLOC", "/nonexistent/libjemalloc.so.2", 1);
	assert_int_equal(tk_jedump__find_lib(path, sizeof(path)), -ENOENT);
	/* not a jemalloc */
	setenv("TRACEKIT_LIBJEMALLOC", "/proc/self/exe", 1);
	assert_int_equal(tk_jedump__find_lib(path, sizeof(path)), -ENOENT);
	unsetenv("TRACEKIT_LIBJEMALLOC");
	err = tk_jedump__find_lib(path, sizeof(path));
	if (err) {
		print_message("no %s on this machine\n", TK_JEDUMP_LIB);
		return;
	}
	print_message("found %s\n", path);
	assert_non_null(strstr(path, TK_JEDUMP_LIB));
	setenv("TRACEKIT_LIBJEMALLOC", path, 1);
	assert_int_equal(tk_jedump__find_lib(path, sizeof(path)), 0);
	unsetenv("TRACEKIT_LIBJEMALLOC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lg_sample),
		cmocka_unit_test(test_malloc_conf),
		cmocka_unit_test(test_newest),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_program),
		cmocka_unit_test(test_find_lib),
	};

	return cmocka_run_group_tests_name("jedump", tests, NULL, NULL);
}
