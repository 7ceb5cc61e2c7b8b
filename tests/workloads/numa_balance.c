// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A NUMA-balancing workload with a known answer, for the two-node QEMU guests
 * (tests/vm/matrix.sh): MIB MiB (default 64) of base pages (no THP) faulted in
 * while pinned to CPU 0 (node 0 there: first touch places them on node 0),
 * then pinned to CPU 1 (node 1) and touched page by page for SECONDS (default
 * 15). With kernel.numa_balancing on, the scanner's hint faults find every
 * page misplaced and the kernel moves them to node 1: tracepoint reason
 * numa_misplaced, /proc/vmstat numa_pages_migrated.
 *
 * Prints "pid=P" at once, then "pages=N node0_before=N node1_before=N",
 * "node0_after=N node1_after=N rounds=N" (where the pages are, asked with
 * move_pages(2) without nodes). Statically linked: the guests have no libc;
 * raw system calls, so no libnuma.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int usage(const char *prog, int code)
{
	printf("Usage: %s [SECONDS [MIB]]\n"
	       "Fault MIB MiB (default 64) on CPU 0, then touch it from CPU 1 for SECONDS\n"
	       "(default 15) so that NUMA balancing moves it. Prints pid=P and where the\n"
	       "pages were before and after; exits 0, or 1 when pinning or mmap fail.\n",
	       prog);
	return code;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "numa_balance: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* How many of the @n pages at @buf sit on node 0 and node 1. */
static void where(char *buf, size_t n, long psz, size_t *on0, size_t *on1)
{
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	size_t i;

	*on0 = *on1 = 0;
	if (!pages || !status)
		goto out;
	for (i = 0; i < n; i++)
		pages[i] = buf + i * psz;
	/* nodes NULL: only report where each page is */
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		goto out;
	for (i = 0; i < n; i++) {
		*on0 += status[i] == 0;
		*on1 += status[i] == 1;
	}
out:
	free(pages);
	free(status);
}

int main(int argc, char **argv)
{
	double secs = 15, end;
	long mib = 64, psz = sysconf(_SC_PAGESIZE);
	unsigned long rounds = 0;
	size_t n, i, on0, on1;
	volatile char *p;
	char *buf;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(argv[0], 0);
	if (argc > 1 && (secs = atof(argv[1])) <= 0)
		return usage(argv[0], 2);
	if (argc > 2 && (mib = atol(argv[2])) <= 0)
		return usage(argv[0], 2);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);

	n = (size_t)mib * 1024 * 1024 / psz;
	if (pin(0))
		return 1;
	buf = mmap(NULL, n * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "numa_balance: mmap: %s\n", strerror(errno));
		return 1;
	}
	madvise(buf, n * psz, MADV_NOHUGEPAGE);	/* base pages: one migration per page */
	memset(buf, 1, n * psz);
	where(buf, n, psz, &on0, &on1);
	printf("pages=%zu node0_before=%zu node1_before=%zu\n", n, on0, on1);
	fflush(stdout);

	if (pin(1))
		return 1;
	p = buf;
	end = now_s() + secs;
	while (now_s() < end) {
		for (i = 0; i < n; i++)
			p[i * psz]++;
		rounds++;
	}
	where(buf, n, psz, &on0, &on1);
	printf("node0_after=%zu node1_after=%zu rounds=%lu\n", on0, on1, rounds);
	munmap(buf, n * psz);
	return 0;
}
