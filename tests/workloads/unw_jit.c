// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Code in an anonymous mapping, as a JIT makes it: an executable page
 * (mmap'ed writable, filled, then made read+exec) holds a tiny x86-64
 * function that calls the C function in %rdi with the argument in %rsi:
 *
 *   main → enter_jit → [anonymous code] → after_jit → burn
 *
 * burn has nearly all the CPU. No object maps the page, so no CFI covers it:
 * an unwinder takes the anonymous frame by the frame pointer and counts it;
 * rbp holds no frame here (nothing keeps one), so the walk ends there (the
 * frames below it, enter_jit and main, cannot be had without CFI or frame
 * pointers there).
 * Built without frame pointers and sibling calls (flags.mk).
 */
#include "unw_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define UNW_FN __attribute__((noinline, noclone))

typedef void (*jit_fn)(void (*fn)(unsigned long), unsigned long arg);

volatile unsigned long unw_sink;

/*
 * endbr64; push %rbx (keeps %rsp 16-byte aligned at the call); mov %rdi,%rax;
 * mov %rsi,%rdi; call *%rax; pop %rbx; ret. No frame pointer, no CFI.
 */
static const unsigned char jit_code[] = {
	0xf3, 0x0f, 0x1e, 0xfa,		/* endbr64 */
	0x53,				/* push %rbx */
	0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
	0x48, 0x89, 0xf7,		/* mov %rsi,%rdi */
	0xff, 0xd0,			/* call *%rax */
	0x5b,				/* pop %rbx */
	0xc3,				/* ret */
};

/* One unit is ~1 µs of dependent multiplies. */
UNW_FN void burn(unsigned long units)
{
	unsigned long i, x = unw_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	unw_sink = x;
}

UNW_FN void after_jit(unsigned long units)
{
	burn(units);
	unw_sink++;	/* work after the call */
}

UNW_FN void enter_jit(jit_fn jit, unsigned long units)
{
	jit(after_jit, units);
	unw_sink++;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SECONDS]\n"
	       "Burn CPU for SECONDS (default 2) in burn(), under\n"
	       "  main -> enter_jit -> [anonymous code] -> after_jit -> burn\n"
	       "where the anonymous code is %zu bytes written into an executable\n"
	       "anonymous page. Prints nothing; with -v, \"jit 0xSTART-0xEND\" (the\n"
	       "page) and \"NAME 0xADDRESS\" per function before the run. Exits 0;\n"
	       "1: no executable page; 2: bad usage.\n",
	       prog, sizeof(jit_code));
	return code;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int seed = getpid();
	double secs = 2, end;
	int i, verbose = 0;
	jit_fn jit;
	void *p;

	i = unw_parse_args(argc, argv, &verbose, &secs, 1, 0);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	/* written, then executable: never both (W^X, as JITs under SELinux do) */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p, jit_code, sizeof(jit_code));
	if (mprotect(p, page, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	__builtin___clear_cache(p, (char *)p + sizeof(jit_code));
	jit = (jit_fn)p;
	if (verbose) {
		printf("jit %p-%p\nmain %p\nenter_jit %p\nafter_jit %p\nburn %p\n", p,
		       (void *)((char *)p + page), (void *)main, (void *)enter_jit,
		       (void *)after_jit, (void *)burn);
		fflush(stdout);
	}
	end = unw_now_s() + secs;
	while (unw_now_s() < end)
		enter_jit(jit, 20 + rand_r(&seed) % 40);	/* jitter: 20..59 units */
	unw_sink++;
	return 0;
}
