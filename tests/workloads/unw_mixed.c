// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A stack that mixes frames with and without frame pointers, with a known
 * chain: main → outer (no fp) → lib_middle (fp, libunwfp.so, found through an
 * $ORIGIN rpath) → callback_inner (no fp, back in this program) → burn (no fp),
 * which has nearly all the CPU. This program is built with
 * -fomit-frame-pointer, the library with -fno-omit-frame-pointer, neither
 * with sibling calls (flags.mk). A frame-pointer walk from burn starts from
 * an %rbp that is not a frame pointer at all; a CFI walk crosses all five.
 */
#include "unw_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/unwfp.h"

#define UNW_FN __attribute__((noinline, noclone))

volatile unsigned long unw_sink;

int main(int argc, char **argv);

/* One unit is ~1 µs of dependent multiplies. */
UNW_FN void burn(unsigned long units)
{
	unsigned long i, x = unw_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	unw_sink = x;
}

UNW_FN void callback_inner(unsigned long units)
{
	burn(units);
	unw_sink++;	/* work after the call */
}

UNW_FN void outer(unsigned long units)
{
	lib_middle(callback_inner, units);
	unw_sink++;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SECONDS]\n"
	       "Burn CPU for SECONDS (default 2) in burn(), under\n"
	       "  main -> outer -> lib_middle (libunwfp.so) -> callback_inner -> burn\n"
	       "where only lib_middle has a frame pointer. Prints nothing; with -v,\n"
	       "\"NAME 0xADDRESS\" per function before the run. Exits 0; 2: bad usage.\n",
	       prog);
	return code;
}

int main(int argc, char **argv)
{
	unsigned int seed = getpid();
	double secs = 2, end;
	int i, verbose = 0;

	i = unw_parse_args(argc, argv, &verbose, &secs, 1, 0);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (verbose) {
		printf("main %p\nouter %p\nlib_middle %p\ncallback_inner %p\nburn %p\n",
		       (void *)main, (void *)outer, (void *)lib_middle, (void *)callback_inner,
		       (void *)burn);
		fflush(stdout);
	}
	end = unw_now_s() + secs;
	while (unw_now_s() < end)
		outer(20 + rand_r(&seed) % 40);	/* jitter: 20..59 units a round */
	unw_sink++;
	return 0;
}
