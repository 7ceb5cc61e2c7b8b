// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A syscall-heavy workload: writes to /dev/null and reads from /dev/zero in a
 * loop for SECONDS, so most of its CPU time is in the kernel and a profile must
 * show kernel frames (the write/read paths) above syscall_heavy_loop().
 * The system calls are made inline, not through libc: Debian's libc has no
 * frame pointers, and a frame-pointer walk starting in its read() would skip
 * syscall_heavy_loop (shared/notes/stacks.md).
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void syscall_heavy_loop(double until)
{
	static char buf[65536];
	int wfd = open("/dev/null", O_WRONLY), rfd = open("/dev/zero", O_RDONLY);
	struct timespec ts;

	if (wfd < 0 || rfd < 0)
		exit(1);
	do {
		for (int i = 0; i < 64; i++) {
			if (raw_syscall3(SYS_read, rfd, (long)buf, sizeof(buf)) < 0 ||
			    raw_syscall3(SYS_write, wfd, (long)buf, sizeof(buf)) < 0)
				exit(1);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	close(wfd);
	close(rfd);
}

int main(int argc, char **argv)
{
	struct timespec ts;
	double secs = 2;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [SECONDS]\nread /dev/zero and write /dev/null for SECONDS "
		       "(default 2), then exit 0.\n", argv[0]);
		return 0;
	}
	if (argc > 1)
		secs = atof(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	syscall_heavy_loop(ts.tv_sec + ts.tv_nsec / 1e9 + secs);
	return 0;
}
