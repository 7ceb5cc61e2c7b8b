// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * JIT code with a name, as Java, Node and Python 3.12 give theirs: a hot loop
 * copied into an anonymous executable page (written, then made read+exec),
 * named "jitted_hot" in /tmp/perf-PID.map (PID as this process knows itself,
 * in its own pid namespace), then run for SECONDS:
 *
 *   main → [anonymous code: jitted_hot]
 *
 * jitted_hot, a leaf loop, has nearly all the CPU. The map file is left
 * behind, as a JIT's is (a profiler reads it after the exit); -v says where.
 */
#include "unw_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void (*hot_fn)(unsigned long iterations);

/* endbr64; mov %rdi,%rax; 1: dec %rax; jnz 1b; ret (@rdi > 0) */
static const unsigned char hot_code[] = {
	0xf3, 0x0f, 0x1e, 0xfa,		/* endbr64 */
	0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
	0x48, 0xff, 0xc8,		/* dec %rax */
	0x75, 0xfb,			/* jnz -5 */
	0xc3,				/* ret */
};

#define COLD_OFF 0x100	/* a second name, of code never run */

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SECONDS]\n"
	       "Burn CPU for SECONDS (default 3) in a loop copied into an anonymous\n"
	       "executable page and named jitted_hot in /tmp/perf-PID.map, which is\n"
	       "left behind. Prints nothing; with -v, \"perfmap PATH\" and\n"
	       "\"jitted_hot 0xADDRESS\" before the run. Exits 0; 1: no page or no\n"
	       "map file; 2: bad usage.\n",
	       prog);
	return code;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	double secs = 3, end;
	char path[64];
	int i, verbose = 0;
	hot_fn hot;
	FILE *f;
	void *p;

	i = unw_parse_args(argc, argv, &verbose, &secs, 1, 0);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	/* written, then executable: never both */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p, hot_code, sizeof(hot_code));
	memcpy((char *)p + COLD_OFF, hot_code, sizeof(hot_code));
	if (mprotect(p, page, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	__builtin___clear_cache(p, (char *)p + page);
	hot = (hot_fn)p;

	/* the names, as a JIT writes them: "START SIZE NAME", hex without 0x */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx jitted_hot\n", (unsigned long)p, sizeof(hot_code));
	fprintf(f, "%lx %zx jitted_cold\n", (unsigned long)p + COLD_OFF, sizeof(hot_code));
	if (fclose(f)) {
		perror(path);
		return 1;
	}
	if (verbose) {
		printf("perfmap %s\njitted_hot %p\n", path, p);
		fflush(stdout);
	}
	end = unw_now_s() + secs;
	while (unw_now_s() < end)
		hot(1000000);	/* ~0.3 ms */
	return 0;
}
