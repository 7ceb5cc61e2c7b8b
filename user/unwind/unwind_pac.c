// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * arm64 pointer authentication: the mask that strips a PAC from a user return
 * address before it is looked up (tk_unw_regs.ra_mask, and the BPF walk's
 * unw_ra_mask). The kernel says which bits a PAC takes only through ptrace
 * (PTRACE_GETREGSET NT_ARM_PAC_MASK: GENMASK(54, vabits_actual), the same for
 * every process): 54..48 on a 48-bit VA kernel, 54..52 on a 52-bit one on a CPU
 * with LVA (measured in the TCG guests, -cpu max: 5.10.0-32 0x007f000000000000,
 * 6.12.118 0x0070000000000000). tracekit reads it once from a child of its own
 * that stops itself under PTRACE_TRACEME: no other process is traced or
 * stopped. A user address has bit 55 clear and its top byte ignored (TBI), so
 * the strip keeps the bits below the PAC's. When the mask cannot be read
 * (ptrace refused: Yama ptrace_scope 3, a seccomp filter; or no such regset)
 * it is 48 bits, and the profile says so (tk_unw__report).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "unwind/unwind.h"

#define PAC_FALLBACK ((1ULL << 48) - 1)

uint64_t tk_unw_ra_mask_of(uint64_t insn_mask)
{
	uint64_t low = insn_mask & -insn_mask;

	/* GENMASK(54, b): contiguous up to bit 54, from a bit no lower than 32 */
	if (!insn_mask || insn_mask + low != 1ULL << 55 || low < 1ULL << 32)
		return 0;
	return low - 1;
}

#if defined(__aarch64__)

#define NT_PAC_MASK 0x406		/* NT_ARM_PAC_MASK (elf.h) */

static uint64_t mask;
static char note[160];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The kernel's insn_mask, from a child of our own: 0, or a negative errno with @why said. */
static int read_pac_mask(uint64_t *insn_mask, char *why, size_t why_sz)
{
	struct { uint64_t data_mask, insn_mask; } m = { 0, 0 };
	struct iovec iov = { &m, sizeof(m) };
	int st, err = 0;
	pid_t c, w;

	c = fork();
	if (c < 0) {
		err = -errno;
		snprintf(why, why_sz, "fork: %s", strerror(-err));
		return err;
	}
	if (c == 0) {
		/* only async-signal-safe calls: the parent may have threads */
		if (!ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			raise(SIGSTOP);
		_exit(0);
	}
	do
		w = waitpid(c, &st, __WALL);
	while (w < 0 && errno == EINTR);
	if (w != c) {
		err = -errno;
		snprintf(why, why_sz, "waitpid: %s", strerror(-err));
	} else if (!WIFSTOPPED(st)) {
		err = -EPERM;
		snprintf(why, why_sz, "PTRACE_TRACEME refused");
	} else if (ptrace(PTRACE_GETREGSET, c, (void *)NT_PAC_MASK, &iov)) {
		err = -errno;
		snprintf(why, why_sz, "PTRACE_GETREGSET NT_ARM_PAC_MASK: %s", strerror(-err));
	} else {
		*insn_mask = m.insn_mask;
	}
	/*
	 * Killed only while it is ours: stopped, or not yet waited for. A child that
	 * exited (PTRACE_TRACEME refused) was reaped above, and its pid may already be
	 * another process's; one gone with ECHILD (SIGCHLD ignored by an embedder:
	 * reaped by the kernel) likewise.
	 */
	if ((w == c && WIFSTOPPED(st)) || (w != c && err != -ECHILD)) {
		kill(c, SIGKILL);
		while (waitpid(c, &st, __WALL) < 0 && errno == EINTR)
			;
	}
	return err;
}

static void probe(void)
{
	uint64_t insn = 0;
	char why[128];
	int err;

	if (getenv("TK_UNW_PAC_MASK_OFF")) {	/* tests: as where ptrace is refused */
		err = -EPERM;
		snprintf(why, sizeof(why), "TK_UNW_PAC_MASK_OFF");
	} else {
		err = read_pac_mask(&insn, why, sizeof(why));
	}
	if (!err) {
		mask = tk_unw_ra_mask_of(insn);
		if (!mask)
			snprintf(why, sizeof(why), "NT_ARM_PAC_MASK %#llx is no PAC mask",
				 (unsigned long long)insn);
	}
	if (mask) {
		snprintf(note, sizeof(note), "pointer authentication: return addresses stripped "
			 "to %d bits (the kernel's NT_ARM_PAC_MASK %#llx)",
			 64 - __builtin_clzll(mask), (unsigned long long)insn);
		return;
	}
	mask = PAC_FALLBACK;
	snprintf(note, sizeof(note), "pointer authentication: return addresses stripped to 48 "
		 "bits, the kernel's PAC mask unknown (%s)", why);
}

uint64_t tk_unw_ra_mask(const char **how)
{
	pthread_once(&once, probe);
	if (how)
		*how = note;
	return mask;
}

#else

uint64_t tk_unw_ra_mask(const char **how)
{
	if (how)
		*how = NULL;
	return 0;			/* x86-64: return addresses carry no code */
}

#endif
