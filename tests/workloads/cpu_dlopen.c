// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A library loaded during a capture: the program sleeps SLEEP seconds (for a
 * profiler to attach), burns 0.3 s in before_dlopen (its first samples: the
 * profiler reads its maps, the program and libc), then dlopen()s
 * libcpulate.so from its own directory and burns for BURN seconds under
 *
 *   main → cpulate_burn → cpulate_hot (both in the library)
 *
 * A symbolizer that knows only the maps it read first has no name for them.
 * Built with frame pointers (flags.mk).
 */
#include "unw_common.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*burn_fn)(unsigned long units);

volatile unsigned long cpu_sink;

__attribute__((noinline)) void before_dlopen(double secs)
{
	double end = unw_now_s() + secs;
	unsigned long i, x = cpu_sink;

	while (unw_now_s() < end)
		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	cpu_sink = x;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SLEEP [BURN]]\n"
	       "Sleep SLEEP seconds (default 1), burn 0.3 s in before_dlopen, then\n"
	       "dlopen libcpulate.so from this program's directory and burn CPU for\n"
	       "BURN seconds (default 3) in its cpulate_hot. Prints nothing; with -v, \"dlopen PATH\" once loaded.\n"
	       "Exits 0; 1: the library cannot be loaded; 2: bad usage.\n",
	       prog);
	return code;
}

/* libcpulate.so next to /proc/self/exe */
static int lib_path(char *buf, size_t size)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return (size_t)snprintf(buf, size, "%s/libcpulate.so", exe) < size ? 0 : -1;
}

int main(int argc, char **argv)
{
	double phase[2] = { 1, 3 }, end;
	unsigned int seed = getpid();
	char path[PATH_MAX];
	struct timespec ts;
	int i, verbose = 0;
	burn_fn burn;
	void *h;

	i = unw_parse_args(argc, argv, &verbose, phase, 2, 1);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (lib_path(path, sizeof(path))) {
		fprintf(stderr, "%s: cannot name libcpulate.so's path\n", argv[0]);
		return 1;
	}
	ts.tv_sec = (time_t)phase[0];
	ts.tv_nsec = (long)((phase[0] - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		;
	before_dlopen(0.3);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	burn = h ? (burn_fn)dlsym(h, "cpulate_burn") : NULL;
	if (!burn) {
		fprintf(stderr, "%s: %s\n", argv[0], dlerror());
		return 1;
	}
	if (verbose) {
		printf("dlopen %s\n", path);
		fflush(stdout);
	}
	end = unw_now_s() + phase[1];
	while (unw_now_s() < end)
		burn(20 + rand_r(&seed) % 40);
	return 0;
}
