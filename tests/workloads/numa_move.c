// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Page migrations with a known count, for the two-node QEMU guests: MIB MiB
 * (default 64) of base pages (MADV_NOHUGEPAGE) bound to node 0 with
 * mbind(MPOL_BIND) and touched, then every page moved to node 1 with one
 * move_pages(2) call: mm_migrate_pages, reason syscall_or_cpuset, in this
 * process, pages succeeded = pages moved (16384 for 64 MiB of 4 KiB pages).
 *
 * Prints "pid=P pages=N" once the pages are in place, then "moved=N failed=N"
 * (from move_pages' status array), then sleeps SLEEP seconds (default 1) so a
 * tracer sees the process still alive. Statically linked (the guests have no
 * libc); raw system calls, so no libnuma. Exits 0 when every page moved, 1
 * otherwise, 2 on a bad argument.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_BIND 2
#define MPOL_MF_MOVE (1 << 1)

int main(int argc, char **argv)
{
	long mib, sleep_s;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long node0 = 1;
	size_t len, n, i, moved = 0, failed = 0;
	void **pages;
	int *nodes, *status;
	char *buf;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s [MIB [SLEEP]]\nMIB MiB (default 64) bound to node 0, then "
		       "moved to node 1 with move_pages(2); prints pid=, pages=, moved=.\n",
		       argv[0]);
		return 0;
	}
	mib = argc > 1 ? strtol(argv[1], NULL, 10) : 64;
	sleep_s = argc > 2 ? strtol(argv[2], NULL, 10) : 1;
	if (mib <= 0 || sleep_s < 0) {
		fprintf(stderr, "usage: %s [MIB [SLEEP]]\n", argv[0]);
		return 2;
	}
	len = (size_t)mib << 20;
	n = len / page;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (madvise(buf, len, MADV_NOHUGEPAGE))
		perror("madvise(MADV_NOHUGEPAGE)");
	if (syscall(SYS_mbind, buf, len, MPOL_BIND, &node0, sizeof(node0) * 8, 0)) {
		perror("mbind(node 0)");
		return 1;
	}
	for (i = 0; i < len; i += page)
		buf[i] = 1;
	pages = calloc(n, sizeof(*pages));
	nodes = calloc(n, sizeof(*nodes));
	status = calloc(n, sizeof(*status));
	if (!pages || !nodes || !status) {
		perror("calloc");
		return 1;
	}
	for (i = 0; i < n; i++) {
		pages[i] = buf + i * page;
		nodes[i] = 1;
	}
	printf("pid=%d pages=%zu\n", getpid(), n);
	fflush(stdout);
	if (syscall(SYS_move_pages, 0, n, pages, nodes, status, MPOL_MF_MOVE) < 0) {
		fprintf(stderr, "move_pages: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (status[i] == 1)
			moved++;
		else
			failed++;
	}
	printf("moved=%zu failed=%zu\n", moved, failed);
	fflush(stdout);
	sleep(sleep_s);
	return failed ? 1 : 0;
}
