// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An object that is mapped after the start: for BEFORE seconds the CPU goes
 * to a loop in main itself; then the program dlopen()s libunwlate.so (from
 * its own directory, no frame pointers) and for AFTER seconds burns under
 *
 *   main → late_caller (here) → late_outer (libunwlate.so) → late_hot (there)
 *
 * An unwinder that read the process's mappings at the start knows nothing of
 * the library: its frames must still come out whole once it has looked again.
 * Built without frame pointers and sibling calls (flags.mk).
 */
#include "unw_common.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNW_FN __attribute__((noinline, noclone))

typedef void (*late_fn)(unsigned long units);

volatile unsigned long unw_sink;

UNW_FN void late_caller(late_fn fn, unsigned long units)
{
	fn(units);
	unw_sink++;	/* work after the call: no tail call */
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [BEFORE [AFTER]]\n"
	       "Burn CPU in main for BEFORE seconds (default 1), then dlopen\n"
	       "libunwlate.so from this program's directory and burn for AFTER seconds\n"
	       "(default 2) under main -> late_caller -> late_outer -> late_hot (both in\n"
	       "the library). Prints nothing; with -v, \"dlopen PATH\" and\n"
	       "\"late_outer 0xADDRESS\" once the library is loaded. Exits 0; 1: the\n"
	       "library cannot be loaded; 2: bad usage.\n",
	       prog);
	return code;
}

/*
 * libunwlate.so next to /proc/self/exe. The buffers are static: main's frame
 * stays small, so that an unwinder that copies 8 KiB of stack (perf's dwarf
 * mode, a BPF program's) still reaches main's caller.
 */
static int lib_path(char *buf, size_t size)
{
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return (size_t)snprintf(buf, size, "%s/libunwlate.so", exe) < size ? 0 : -1;
}

int main(int argc, char **argv)
{
	double phase[2] = { 1, 2 }, end;
	unsigned int seed = getpid();
	unsigned long x = seed;
	int i, verbose = 0;
	static char path[PATH_MAX];
	late_fn late_outer;
	void *h;

	i = unw_parse_args(argc, argv, &verbose, phase, 2, 1);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (lib_path(path, sizeof(path))) {
		fprintf(stderr, "%s: cannot name libunwlate.so's path\n", argv[0]);
		return 1;
	}

	/* phase 1: in main itself, with nothing but the program and libc mapped */
	end = unw_now_s() + phase[0];
	do {
		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		unw_sink = x;
	} while (unw_now_s() < end);

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s: dlopen: %s\n", argv[0], dlerror());
		return 1;
	}
	late_outer = (late_fn)dlsym(h, "late_outer");
	if (!late_outer) {
		fprintf(stderr, "%s: dlsym late_outer: %s\n", argv[0], dlerror());
		return 1;
	}
	if (verbose) {
		printf("dlopen %s\nlate_outer %p\n", path, (void *)late_outer);
		fflush(stdout);
	}

	/* phase 2: the library's chain */
	end = unw_now_s() + phase[1];
	while (unw_now_s() < end)
		late_caller(late_outer, 20 + rand_r(&seed) % 40);
	unw_sink++;
	return 0;
}
