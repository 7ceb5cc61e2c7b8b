/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The body of the symbolizer's workloads (sym_target, sym_nopie,
 * sym_stripped, sym_shlib): the same functions built as PIE, non-PIE,
 * stripped, and calling into a shared library. Each prints "NAME 0xADDRESS"
 * for its functions, then "ready", and sleeps until killed; a test reads the
 * addresses, captures the process, kills it and resolves them afterwards.
 * "sym_wait_ret" is a return address that ends sym_ends_in_call: the caller
 * must be found by looking one byte back. With --spin MS it burns CPU in
 * sym_hot (or the library's hot function) for MS milliseconds and exits.
 */
#ifndef __SYM_COMMON_H
#define __SYM_COMMON_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* external linkage and no cloning: the names stay as written, no ".constprop.0" */
#define SYM_FN __attribute__((noinline, noclone))

volatile unsigned long sym_sink;

int main(int argc, char **argv);

SYM_FN unsigned long sym_hot(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 100000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sym_sink += x;
	return x;
}

SYM_FN unsigned long sym_caller(unsigned long x)
{
	unsigned long r = sym_hot(x);

	sym_sink += r;	/* work after the call: no tail call */
	return r + 1;
}

SYM_FN __attribute__((noreturn)) void sym_wait(void)
{
	printf("sym_wait %p\n", (void *)sym_wait);
	printf("sym_wait_ret %p\n", __builtin_return_address(0));
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

SYM_FN __attribute__((noreturn)) void sym_ends_in_call(void)
{
	sym_sink++;
	sym_wait();
}

static double sym_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#ifndef SYM_SPIN
#define SYM_SPIN() sym_caller(sym_sink)
#endif
#ifndef SYM_REPORT
#define SYM_REPORT()
#endif

static int sym_main(int argc, char **argv, const char *what)
{
	double end;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: %s [--spin MS]\n%s\n"
		       "Prints its functions' addresses, then sleeps until killed;\n"
		       "with --spin MS burns CPU for MS milliseconds instead.\n",
		       argv[0], what);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--spin")) {
		end = sym_now_ms() + atof(argv[2]);
		while (sym_now_ms() < end)
			SYM_SPIN();
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "%s: unknown argument %s (try --help)\n", argv[0], argv[1]);
		return 2;
	}
	printf("sym_hot %p\n", (void *)sym_hot);
	printf("sym_caller %p\n", (void *)sym_caller);
	printf("sym_ends_in_call %p\n", (void *)sym_ends_in_call);
	printf("main %p\n", (void *)main);
	SYM_REPORT();
	sym_ends_in_call();
}

#endif /* __SYM_COMMON_H */
