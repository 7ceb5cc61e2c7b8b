/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtkalloc.so: the markers, the functions tracekit's uprobes are put on,
 * and the test log (tkalloc_test.h) a slow path fills beside them.
 *
 * Part of libtkalloc.so's one translation unit: preload/tkalloc.c includes
 * it once, after the macros and the state it uses; it is no header for
 * anything else. One unit, so that the fast paths inline what they read and
 * jump straight to their slow paths. Its definitions stay static, not
 * inline: inline would change the compiler's inlining hints, and so the code.
 */
#ifndef __TK_ALLOC_MARKERS_H
#define __TK_ALLOC_MARKERS_H

/* ---- the markers: tracekit's uprobes ------------------------------------------ */

TK_EXPORT struct tk_alloc_test_log tk_alloc_test_log;

static TK_COLD void tk_test_log(uint32_t kind, void *ptr, size_t size, void **entry_fp)
{
	struct tk_alloc_test_log *log = &tk_alloc_test_log;
	uint64_t n = __atomic_fetch_add(&log->nr, 1, __ATOMIC_RELAXED);

	__atomic_fetch_add(kind == TK_ALLOC_TEST_ALLOC ? &log->nr_alloc : &log->nr_free, 1,
			   __ATOMIC_RELAXED);
	if (n < TK_ALLOC_TEST_EVENTS) {
		log->ev[n].ptr = (uintptr_t)ptr;
		log->ev[n].size = size;
		log->ev[n].tid = gettid();
		log->ev[n].caller = (uintptr_t)entry_fp[1];
		__atomic_store_n(&log->ev[n].kind, kind, __ATOMIC_RELEASE);
	}
}

/*
 * The markers: a push and a pop of rbp and a return, in assembly. A uprobe
 * on a push is emulated by the kernel (~0.6 us a hit here, against ~11 us
 * for an instruction it must single-step). Not a 5-byte nop, which would be
 * cheaper still (~0.25 us): 6.18 rewrites a uprobe on one into a call of a
 * [uprobes-trampoline] mapping that a fork()ed child does not inherit, and
 * the child then dies of SIGSEGV at its next marker (every child of a
 * forking program, measured on 6.18.44). The probe fires before the push,
 * so they keep no frame: a walk from their entry starts at the slow path's
 * frame, whose return address is the allocation's caller (their CFI says so
 * to a walk by CFI, which then sees the slow path as a frame of its own:
 * tracekit drops it). The local aliases are what this library calls, so
 * the calls do not go through its PLT.
 */
#if defined(__x86_64__)
#define TK_MARKER_ASM(name, local)                                                  \
	".text\n"                                                                   \
	".p2align 4\n"                                                              \
	".globl " name "\n"                                                         \
	".type " name ", @function\n"                                               \
	".globl " local "\n"                                                        \
	".hidden " local "\n"                                                       \
	name ":\n"                                                                  \
	local ":\n"                                                                 \
	"	.cfi_startproc\n"                                                   \
	"	push %rbp\n"                                                        \
	"	.cfi_adjust_cfa_offset 8\n"                                         \
	"	pop %rbp\n"                                                         \
	"	.cfi_adjust_cfa_offset -8\n"                                        \
	"	ret\n"                                                              \
	"	.cfi_endproc\n"                                                     \
	".size " name ", .-" name "\n"
#elif defined(__aarch64__)
/*
 * arm64: a lone ret, which the kernel simulates (arch/arm64/kernel/probes/
 * decode-insn.c: branches are simulated, not stepped). The marker keeps no frame
 * either: the return address is in x30 and x29 is the slow path's frame record,
 * as on x86. Measured in an arm64 6.12 guest (issue 26): alloc -- alloc_leak (dynamic)
 * through the sampler found the 16 MiB leak whole at main;work;leak_site.
 */
#define TK_MARKER_ASM(name, local)                                                  \
	".text\n"                                                                   \
	".p2align 4\n"                                                              \
	".globl " name "\n"                                                         \
	".type " name ", %function\n"                                               \
	".globl " local "\n"                                                        \
	".hidden " local "\n"                                                       \
	name ":\n"                                                                  \
	local ":\n"                                                                 \
	"	.cfi_startproc\n"                                                   \
	"	ret\n"                                                              \
	"	.cfi_endproc\n"                                                     \
	".size " name ", .-" name "\n"
#else
#error "tkalloc markers: x86-64 or arm64"
#endif
__asm__(TK_MARKER_ASM("tk_alloc_marker_alloc", "tk_marker_alloc_local")
	TK_MARKER_ASM("tk_alloc_marker_free", "tk_marker_free_local"));

void tk_marker_alloc_local(void *ptr, size_t size);
void tk_marker_free_local(void *ptr);

/*
 * Call a marker from a slow path (a macro: the frame read for the test log
 * is the slow path's, as a walk from the marker's entry sees it).
 */
#define marker_alloc(ptr, size)                                                    \
	do {                                                                       \
		if (unlikely(test_log_on))                                         \
			tk_test_log(TK_ALLOC_TEST_ALLOC, (ptr), (size),            \
				    (void **)__builtin_frame_address(0));          \
		tk_marker_alloc_local((ptr), (size));                              \
	} while (0)
#define marker_free(ptr)                                                           \
	do {                                                                       \
		if (unlikely(test_log_on))                                         \
			tk_test_log(TK_ALLOC_TEST_FREE, (ptr), 0,                  \
				    (void **)__builtin_frame_address(0));          \
		tk_marker_free_local(ptr);                                         \
	} while (0)

#endif /* __TK_ALLOC_MARKERS_H */
