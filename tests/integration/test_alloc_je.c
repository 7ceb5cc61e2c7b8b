// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The jemalloc backend's pieces against real processes (jedump.h): a command
 * run the way the backend runs it (LD_PRELOAD of the system's libjemalloc
 * unless the program has its own, the MALLOC_CONF tk_jedump__malloc_conf()
 * builds, a private directory) leaves its final dump (prof_final) where the
 * backend looks for it, and that dump read into a heap profile puts the
 * leaked bytes on leak_site (alloc_leak's known answer) and ~nothing in use
 * on churn, with alloc_* filled (prof_accum). The whole `tracekit alloc
 * --backend jemalloc` run is tested end to end elsewhere.
 *
 * Needs build/workloads (alloc_leak, alloc_leak_je, jemalloc_static) and
 * libjemalloc2; skips, saying which, without them.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "need.h"

#include "spawn.h"
#include "alloc/jedump.h"
#include "profile/profile.h"
#include "sym/symbolize.h"

#define LEAK_BYTES (4 << 20)
#define LEAK_BLOCK (64 * 1024)

struct run {
	char dir[64];			/* the private directory */
	char out[4096];			/* the workload's stdout */
	int pid;
	uint64_t usable;		/* what alloc_leak says it leaked */
};

static void workload_or_skip(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/workloads/%s", tk_test_build_dir(), name);
	NEED_DEP(!access(path, X_OK), "no %s (make the workloads)\n", path);
}

/*
 * Run @exe as the backend runs a command: fork, environment, exec; wait.
 * @preload: the libjemalloc to preload, or NULL.
 */
static void run_like_backend(const char *exe, const char *preload, const char *conf_env,
			     struct run *r)
{
	char conf[PATH_MAX + 256], prefix[PATH_MAX], leak[32], block[32];
	int pipefd[2], status;
	ssize_t n, off = 0;
	pid_t pid;

	snprintf(r->dir, sizeof(r->dir), "/tmp/tk-je-test.XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	snprintf(prefix, sizeof(prefix), "%s/jeprof", r->dir);
	assert_int_equal(tk_jedump__malloc_conf(conf, sizeof(conf),
						 tk_jedump__lg_sample(16 * 1024), prefix), 0);
	snprintf(leak, sizeof(leak), "%d", LEAK_BYTES);
	snprintf(block, sizeof(block), "%d", LEAK_BLOCK);
	assert_int_equal(pipe(pipefd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		setenv(conf_env, conf, 1);
		execl(exe, exe, "-d", "1", "--leak-bytes", leak, "--leak-block", block,
		      (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (off < (ssize_t)sizeof(r->out) - 1 &&
	       (n = read(pipefd[0], r->out + off, sizeof(r->out) - 1 - off)) > 0)
		off += n;
	r->out[off] = '\0';
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	print_message("%s", r->out);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	r->pid = pid;
	{
		const char *u = strstr(r->out, "usable=");

		r->usable = u ? strtoull(u + 7, NULL, 10) : 0;
	}
}

static void cleanup(struct run *r)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
	if (system(cmd) != 0)
		print_message("cannot remove %s\n", r->dir);
}

/* Sum of value @vi over samples whose stack holds function @fn. */
static int64_t value_under(const struct tk_profile *p, const char *fn, int vi)
{
	int64_t sum = 0;
	size_t i, j;

	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		for (j = 0; j < s->nr_locations; j++) {
			const struct tk_location *l = &p->locations[s->location_ids[j] - 1];

			if (l->function_id &&
			    !strcmp(p->functions[l->function_id - 1].name, fn)) {
				sum += s->values[vi];
				break;
			}
		}
	}
	return sum;
}

/* The backend's pick after the command exited: its own final dump. */
static void check_final_dump(struct run *r)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so) };
	struct tk_symbolizer *s;
	struct tk_profile *p;
	char name[64], path[PATH_MAX];
	int64_t leak_inuse, leak_alloc, churn_inuse, churn_alloc;
	uint64_t period = 0;

	snprintf(name, sizeof(name), "jeprof.%d.", r->pid);
	assert_int_equal(tk_jedump__newest(r->dir, name, 0, path, sizeof(path), NULL), 0);
	print_message("final dump: %s\n", path);
	assert_non_null(strstr(path, ".f.heap"));

	assert_int_equal(tk_symbolizer__new(&so, &s), 0);
	assert_int_equal(tk_jedump__load(path, s, r->pid, "jemalloc", &period, &p), 0);
	assert_int_equal(period, 16 * 1024);
	leak_inuse = value_under(p, "leak_site", 3);
	leak_alloc = value_under(p, "leak_site", 1);
	churn_inuse = value_under(p, "churn", 3);
	churn_alloc = value_under(p, "churn", 1);
	print_message("leak_site inuse %lld alloc %lld (usable %llu); churn inuse %lld alloc "
		      "%lld\n", (long long)leak_inuse, (long long)leak_alloc,
		      (unsigned long long)r->usable, (long long)churn_inuse, (long long)churn_alloc);
	assert_true(r->usable >= LEAK_BYTES);
	/* 64 KiB blocks under 16 KiB sampling: nearly every block sampled, unbiased */
	assert_true(leak_inuse >= (int64_t)r->usable * 85 / 100 &&
		    leak_inuse <= (int64_t)r->usable * 115 / 100);
	assert_true(leak_alloc >= leak_inuse);
	/* prof_accum: churn allocated much, keeps ~nothing */
	assert_true(churn_alloc > 0);
	assert_true(churn_inuse < (int64_t)r->usable / 8);
	tk_profile__free(p);
	tk_symbolizer__free(s);
}

static void test_preloaded_glibc_program(void **state)
{
	struct tk_jedump_program pr;
	char exe[PATH_MAX], lib[PATH_MAX];
	struct run r = {};

	workload_or_skip("alloc_leak", exe, sizeof(exe));
	NEED_DEP(!tk_jedump__find_lib(lib, sizeof(lib)), "no %s (apt-get install libjemalloc2)\n",
		 TK_JEDUMP_LIB);
	assert_int_equal(tk_jedump__program(exe, &pr), 0);
	assert_int_equal(pr.linkage, TK_JEDUMP_NONE);	/* so the backend preloads one */
	run_like_backend(exe, lib, "MALLOC_CONF", &r);
	check_final_dump(&r);
	cleanup(&r);
}

static void test_program_with_own_jemalloc(void **state)
{
	struct tk_jedump_program pr;
	char exe[PATH_MAX];
	struct run r = {};

	workload_or_skip("alloc_leak_je", exe, sizeof(exe));
	assert_int_equal(tk_jedump__program(exe, &pr), 0);
	assert_int_equal(pr.linkage, TK_JEDUMP_SHARED);	/* no second jemalloc */
	run_like_backend(exe, NULL, "MALLOC_CONF", &r);
	check_final_dump(&r);
	cleanup(&r);
}

/* No dump at all: what the backend reports when the command left none. */
static void test_no_dump_without_profiling(void **state)
{
	char exe[PATH_MAX], path[PATH_MAX];
	struct run r = {};

	workload_or_skip("alloc_leak", exe, sizeof(exe));
	/* glibc's malloc ignores MALLOC_CONF: nothing is written */
	run_like_backend(exe, NULL, "MALLOC_CONF", &r);
	assert_int_equal(tk_jedump__newest(r.dir, NULL, 0, path, sizeof(path), NULL), -ENOENT);
	cleanup(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preloaded_glibc_program),
		cmocka_unit_test(test_program_with_own_jemalloc),
		cmocka_unit_test(test_no_dump_without_profiling),
	};

	return cmocka_run_group_tests_name("alloc_je", tests, NULL, NULL);
}
