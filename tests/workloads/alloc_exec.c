// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process that execs and a child that exits, with known answers.
 *
 *   alloc_exec [--before BYTES] [--after BYTES] [--child BYTES] [--block BYTES]
 *              [-d SECONDS] [--wait-signal]
 *
 * First image: once a second has passed (time to attach to its pid), or
 * with --wait-signal once SIGUSR1 came (at most 30 s), before_exec_site()
 * allocates --before bytes in --block blocks (default 1 MiB in 64 KiB) and
 * keeps them. With --child BYTES, a child then allocates that many in
 * child_site(), keeps them, exits 300 ms later, and is waited for. The
 * child is this program again, spawned (posix_spawn), not a fork of this
 * image (forks under the sampler are test_alloc's test_forking_program,
 * with Debian's perl). Half a second later
 * (a tracer reads a process's mappings through /proc when it first sees it)
 * the process execs itself. The new image allocates --after bytes (default
 * 2 MiB) in after_exec_site(), keeps them, and holds them until SIGTERM or
 * SIGINT, or for -d seconds (default 3), then exits 0.
 *
 * After the exec nobody holds the first image's blocks, nor the child's
 * after its exit: a tracer must show before_exec_site and child_site with
 * nothing in use, and after_exec_site, named from the new image, with all
 * of --after.
 *
 * Prints "before=BYTES blocks=N", "child=BYTES blocks=N" (from the child)
 * and, after the exec, "after=BYTES blocks=N". Exits 0; 2 on a usage error,
 * 1 when an allocation, the fork or the exec fails.
 */
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

/* @bytes in @block blocks, kept (and touched, so they are memory) */
static NOINLINE void **hold(size_t bytes, size_t block, void *(*alloc)(size_t))
{
	size_t n = bytes / block, i;
	void **v = calloc(n + 1, sizeof(*v));

	if (!v)
		exit(1);
	for (i = 0; i < n; i++) {
		v[i] = alloc(block);
		if (!v[i])
			exit(1);
		memset(v[i], 0x5a, block);
		sink += (unsigned long)v[i];
	}
	return v;
}

/*
 * Each site calls malloc itself, so the allocation's first frame, the
 * return address into its caller, is the site.
 */
static NOINLINE void *before_exec_site(size_t n)
{
	void *p = malloc(n);

	asm volatile("" ::: "memory");	/* a call, not a tail call: the site stays a frame */
	return p;
}

static NOINLINE void *after_exec_site(size_t n)
{
	void *p = malloc(n);

	asm volatile("" ::: "memory");
	return p;
}

static NOINLINE void *child_site(size_t n)
{
	void *p = malloc(n);

	asm volatile("" ::: "memory");
	return p;
}

static int usage(FILE *f, const char *argv0, int code)
{
	fprintf(f, "usage: %s [--before BYTES] [--after BYTES] [--child BYTES] "
		"[--block BYTES] [-d SECONDS] [--wait-signal]\n"
		"Once a second has passed (--wait-signal: once SIGUSR1 came), keep --before\n"
		"bytes (default 1 MiB) in before_exec_site(); with --child, a spawned child\n"
		"keeps --child bytes in child_site() and exits; then exec itself and keep\n"
		"--after bytes (default 2 MiB) in after_exec_site() until SIGTERM or SIGINT,\n"
		"or -d seconds (default 3). Exit 0; 2 on a usage error.\n", argv0);
	return code;
}

static void wait_for(int sig, double secs)
{
	struct timespec limit = { .tv_sec = (time_t)secs,
				  .tv_nsec = (long)((secs - (time_t)secs) * 1e9) };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	if (sig == SIGTERM)
		sigaddset(&set, SIGINT);
	sigtimedwait(&set, NULL, &limit);
}

int main(int argc, char **argv)
{
	size_t before = 1 << 20, after = 2 << 20, child = 0, block = 65536;
	bool wait_signal = false, second = false, is_child = false;
	double secs = 3;
	sigset_t set;
	int k;

	/* blocked from the start (and across the exec), so an early signal waits for us */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
			return usage(stdout, argv[0], 0);
		if (!strcmp(argv[k], "--wait-signal")) {
			wait_signal = true;
			continue;
		}
		if (!strcmp(argv[k], "--second-image")) {
			second = true;
			continue;
		}
		if (!strcmp(argv[k], "--child-image")) {
			is_child = true;
			continue;
		}
		if (k + 1 >= argc)
			return usage(stderr, argv[0], 2);
		if (!strcmp(argv[k], "--before"))
			before = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--after"))
			after = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--child"))
			child = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--block"))
			block = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "-d"))
			secs = strtod(argv[++k], NULL);
		else
			return usage(stderr, argv[0], 2);
	}
	if (!block || secs < 0)
		return usage(stderr, argv[0], 2);

	if (is_child) {
		hold(child, block, child_site);
		printf("child=%zu blocks=%zu\n", child / block * block, child / block);
		fflush(stdout);
		usleep(300 * 1000);	/* its maps are read while it lives */
		return 0;
	}
	if (second) {
		hold(after, block, after_exec_site);
		printf("after=%zu blocks=%zu\n", after / block * block, after / block);
		fflush(stdout);
		wait_for(SIGTERM, secs);
		return 0;
	}

	if (wait_signal)
		wait_for(SIGUSR1, 30);
	else
		sleep(1);
	hold(before, block, before_exec_site);
	printf("before=%zu blocks=%zu\n", before / block * block, before / block);
	fflush(stdout);
	if (child) {
		char bytes[32], blk[32];
		char *args[] = { argv[0], "--child-image", "--child", bytes, "--block", blk, NULL };
		extern char **environ;
		int status;
		pid_t pid;

		snprintf(bytes, sizeof(bytes), "%zu", child);
		snprintf(blk, sizeof(blk), "%zu", block);
		if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) ||
		    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	usleep(500 * 1000);
	{
		char *args[argc + 2];

		memcpy(args, argv, argc * sizeof(*args));
		args[argc] = "--second-image";
		args[argc + 1] = NULL;
		execv("/proc/self/exe", args);
	}
	return 1;
}
