// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * a64_high_code: code above 2^48 on the stack (arm64; a kernel with 52-bit user
 * addresses gives them to a mapping asked there: Debian's 6.12 on a CPU with LVA).
 * A worker thread runs run() → stub → spin_leaf(), where stub is five
 * instructions (stp x29, x30, [sp, #-16]!; mov x29, sp; blr x0; ldp; ret) copied
 * into an anonymous executable mapping asked at 2^50, so spin_leaf's return
 * address, in LR, points above 2^48. A PAC strip of 48 bits cuts it to a low
 * address of nothing; the kernel's mask keeps it: tracekit cpu's stacks read
 * spin_leaf;[jit];run. Prints "high 0xADDR" (or "low 0xADDR": no address above
 * 2^48 here), then spins SECONDS.
 *   a64_high_code SECONDS
 * Exits 0 (and --help); 2 on a usage error or elsewhere than arm64; 1 when the
 * mapping fails.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__aarch64__)
static volatile unsigned long sink;

__attribute__((noinline)) void spin_leaf(void)
{
	for (;;)
		sink++;
}

static void (*stub)(void (*fn)(void));

__attribute__((noinline)) void run(void)
{
	stub(spin_leaf);
	sink--;				/* not a tail call */
}

static void *worker(void *a)
{
	run();
	return a;
}

int main(int argc, char **argv)
{
	static const uint32_t code[] = {
		0xa9bf7bfd,		/* stp x29, x30, [sp, #-16]! */
		0x910003fd,		/* mov x29, sp */
		0xd63f0000,		/* blr x0 */
		0xa8c17bfd,		/* ldp x29, x30, [sp], #16 */
		0xd65f03c0,		/* ret */
	};
	pthread_t t;
	void *p;
	int secs;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		printf("usage: a64_high_code SECONDS (arm64)\n");
		return 0;
	}
	if (argc != 2 || (secs = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: a64_high_code SECONDS\n");
		return 2;
	}
	p = mmap((void *)(1UL << 50), 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	__builtin___clear_cache((char *)p, (char *)p + sizeof(code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return 1;
	stub = (void (*)(void (*)(void)))p;
	printf("%s %p\n", (uintptr_t)p >> 48 ? "high" : "low", p);
	fflush(stdout);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	sleep(secs);
	return 0;
}
#else
int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--help")) {
		printf("usage: a64_high_code SECONDS (arm64; elsewhere it exits 2)\n");
		return 0;
	}
	fprintf(stderr, "a64_high_code: arm64 only\n");
	return 2;
}
#endif
