// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waits that span the capture, the user-space parts (user/cpu/cpu_seed.c):
 * how long a thread had been off the CPU from the scheduler's fields, the
 * threads of a cgroup tree, the stack image the walk reads (from memory
 * through /proc/self/mem, its ends included), and the task_struct offsets
 * of members of members from the kernel's BTF.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/kfeat.h"
#include "cpu/cpu_seed.h"

static void test_before_ns(void **state)
{
	/* blocked at 1000 after a 300 ns slice that began at 700; now 5000 */
	assert_int_equal(tk_cpu_seed__before_ns(5000, 700, 10300, 10000), 4000);
	/* never ran a slice since it was picked: off since it arrived */
	assert_int_equal(tk_cpu_seed__before_ns(5000, 700, 10000, 10000), 4300);
	/* just now */
	assert_int_equal(tk_cpu_seed__before_ns(5000, 4000, 11000, 10000), 0);
	/* the kernel does not tell (no CONFIG_SCHED_INFO): unknown */
	assert_int_equal(tk_cpu_seed__before_ns(5000, 0, 10300, 10000), -1);
	/* a clock ahead of now, a slice longer than the time since, fields torn */
	assert_int_equal(tk_cpu_seed__before_ns(5000, 6000, 10300, 10000), -1);
	assert_int_equal(tk_cpu_seed__before_ns(5000, 4000, 12000, 10000), -1);
	assert_int_equal(tk_cpu_seed__before_ns(5000, 700, 9000, 10000), -1);
	/* no overflow at the ends of the range */
	assert_int_equal(tk_cpu_seed__before_ns(UINT64_MAX, 1, UINT64_MAX, 0), -1);
	assert_true(tk_cpu_seed__before_ns(INT64_MAX, 1, 0, 0) == INT64_MAX - 1);
	assert_int_equal(tk_cpu_seed__before_ns(UINT64_MAX, 1, 0, 0), -1);
}

static char root[] = "/tmp/tk-seed-test.XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0700), 0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The threads of the directory and of every cgroup below; what is not a
 * number, and 0, is skipped; a directory without cgroup.threads holds none
 * (and neither does what is below it); a missing root is an error.
 */
static void test_cgroup_tids(void **state)
{
	uint32_t *tids = NULL, want[] = { 1, 2, 3, 4, 7 };
	size_t nr = 0, cap = 0;
	char cmd[600], path[512];

	assert_non_null(mkdtemp(root));
	put("cgroup.threads", "1\n2\n");
	dir("a");
	put("a/cgroup.threads", "3\n");
	dir("a/b");
	put("a/b/cgroup.threads", "4\nnot-a-tid\n0\n99999999999\n");
	dir("c");				/* no cgroup.threads */
	dir("c/d");
	put("c/d/cgroup.threads", "5\n");
	dir("e");
	put("e/cgroup.threads", "");
	put("x", "6\n");			/* a file, not a cgroup */
	dir(".hidden");
	put(".hidden/cgroup.threads", "8\n");
	dir("f");
	put("f/cgroup.threads", "7");		/* no newline at the end */
	assert_int_equal(tk_cpu_seed__cgroup_tids(root, &tids, &nr, &cap), 0);
	assert_int_equal(nr, 5);
	qsort(tids, nr, sizeof(*tids), cmp_u32);
	assert_memory_equal(tids, want, sizeof(want));
	/* appended to what is there */
	assert_int_equal(tk_cpu_seed__cgroup_tids(root, &tids, &nr, &cap), 0);
	assert_int_equal(nr, 10);
	snprintf(path, sizeof(path), "%s/nope", root);
	assert_int_equal(tk_cpu_seed__cgroup_tids(path, &tids, &nr, &cap), -ENOENT);
	assert_int_equal(nr, 10);
	free(tids);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

/* The parser alone: 32-bit ids, nothing read past the length given */
static void test_parse_tids(void **state)
{
	const char text[] = "4294967295\n4294967296\n99999999999999999999999\n12 13\t\n0\n7x8\n55";
	uint32_t *tids = NULL, want[] = { 4294967295u, 12, 13, 7, 8, 5 };
	size_t nr = 0, cap = 0;

	/* the last number cut by the length: "5" of "55" */
	assert_int_equal(tk_cpu_seed__parse_tids(text, sizeof(text) - 2, &tids, &nr, &cap), 0);
	assert_int_equal(nr, 6);
	assert_memory_equal(tids, want, sizeof(want));
	free(tids);
}

/*
 * The image holds what the mapping has from sp on (a short one where the
 * mapping ends); reads inside it come from it, further ones from memory,
 * and none past the mapping's end or where nothing is mapped succeeds.
 */
static void test_seed_image(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct tk_seed_image *img = malloc(sizeof(*img));
	uint8_t *m, buf[64];
	uint64_t v;
	int fd, i;

	assert_non_null(img);
	/* 8 pages, the last 2 unmapped: an image from page 4 holds 2 pages */
	m = mmap(NULL, 8 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	for (i = 0; i < 6 * pg; i++)
		m[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(munmap(m + 6 * pg, 2 * pg), 0);
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);

	assert_int_equal(tk_seed_image__load(img, fd, (uint64_t)(uintptr_t)(m + 4 * pg + 8)), 0);
	assert_int_equal(img->len, 2 * pg - 8);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)(m + 4 * pg + 8), buf, 8),
			 0);
	assert_memory_equal(buf, m + 4 * pg + 8, 8);
	/* the last 8 bytes of the image, and not one past it */
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)(m + 6 * pg - 8), &v, 8),
			 0);
	assert_memory_equal(&v, m + 6 * pg - 8, 8);
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)(m + 6 * pg - 4), &v, 8),
			 -EFAULT);
	/* below the image (a caller's frame is never there, but memory is): read */
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)(m + 8), buf, 16), 0);
	assert_memory_equal(buf, m + 8, 16);
	/* nothing mapped; addresses no pread offset can be */
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)(m + 7 * pg), &v, 8),
			 -EFAULT);
	assert_int_equal(tk_seed_image__read(img, UINT64_MAX - 3, &v, 8), -EFAULT);
	assert_int_equal(tk_seed_image__read(img, (uint64_t)INT64_MAX + 1, &v, 8), -EFAULT);
	/* the whole buffer when the mapping is long enough */
	assert_int_equal(tk_seed_image__load(img, fd, (uint64_t)(uintptr_t)m), 0);
	assert_int_equal(img->len, pg * 4 < TK_SEED_IMAGE ? pg * 4 : TK_SEED_IMAGE);
	assert_memory_equal(img->buf, m, img->len);
	/* nothing there at all */
	assert_int_equal(tk_seed_image__load(img, fd, (uint64_t)(uintptr_t)(m + 6 * pg)), -EFAULT);
	assert_int_equal(img->len, 0);
	/* without memory to read from, the image alone */
	assert_int_equal(tk_seed_image__load(img, fd, (uint64_t)(uintptr_t)m), 0);
	img->fd = -1;
	assert_int_equal(tk_seed_image__read(img, (uint64_t)(uintptr_t)m + img->len, &v, 8),
			 -EFAULT);
	close(fd);
	munmap(m, 6 * pg);
	free(img);
}

/* Members of members, from the running kernel's BTF: their offsets add up. */
static void test_member_paths(void **state)
{
	const char *names[] = { "se.sum_exec_runtime", "se", "se.nope", "comm.x", "se.", "",
				"sched_info.last_arrival", "sched_info" };
	int off[8], inner;

	if (tk_kfeat__member_offset("task_struct", "pid") < 0) {
		print_message("skip: no kernel BTF here\n");
		skip();
	}
	assert_int_equal(tk_kfeat__member_offsets("task_struct", names, off, 8), 0);
	inner = tk_kfeat__member_offset("sched_entity", "sum_exec_runtime");
	assert_true(inner >= 0 && off[1] > 0);
	assert_int_equal(off[0], off[1] + inner);
	assert_int_equal(tk_kfeat__member_offset("task_struct", "se.sum_exec_runtime"), off[0]);
	assert_int_equal(off[2], -ENOENT);
	assert_int_equal(off[3], -ENOENT);	/* an array has no members */
	assert_int_equal(off[4], -ENOENT);
	assert_int_equal(off[5], -ENOENT);
	if (off[7] >= 0)
		assert_int_equal(off[6], off[7] + tk_kfeat__member_offset("sched_info",
									   "last_arrival"));
	/* a type that is not there: every member unknown, not an error */
	assert_int_equal(tk_kfeat__member_offsets("no_such_struct_here", names, off, 2), 0);
	assert_int_equal(off[0], -ENOENT);
	assert_int_equal(off[1], -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_ns),
		cmocka_unit_test(test_parse_tids),
		cmocka_unit_test(test_cgroup_tids),
		cmocka_unit_test(test_seed_image),
		cmocka_unit_test(test_member_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
