// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A program linked with the shared libjemalloc. With --wait it allocates,
 * prints "ready opt.prof=N" (what jemalloc itself says about profiling) and
 * then waits until its standard input is closed, so that a test can read its
 * /proc/PID meanwhile.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

static int opt_prof(void)
{
	bool prof = false;
	size_t sz = sizeof(prof);

	if (mallctl("opt.prof", &prof, &sz, NULL, 0))
		return -1;
	return prof;
}

int main(int argc, char **argv)
{
	void *keep[64];
	char c;
	int i;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: %s [--wait]\n"
		       "Allocates with jemalloc and prints opt.prof; with --wait, prints\n"
		       "\"ready opt.prof=N\" and waits for standard input to close.\n", argv[0]);
		return 0;
	}
	for (i = 0; i < 64; i++)
		keep[i] = malloc(1024 * (i + 1));
	printf("%sopt.prof=%d\n", argc > 1 && !strcmp(argv[1], "--wait") ? "ready " : "",
	       opt_prof());
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "--wait"))
		while (read(0, &c, 1) > 0)
			;
	for (i = 0; i < 64; i++)
		free(keep[i]);
	return 0;
}
