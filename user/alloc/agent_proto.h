/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What tracekit and the two libraries it preloads into a command it starts
 * (`tracekit alloc -- CMD`) agree on. Header only: included by
 * preload/tkalloc.c, preload/tkagent.c and user/alloc*.c.
 *
 * libtkalloc.so, the in-process sampler: interposes malloc, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
 * free; counts allocated bytes down from a geometric draw with mean
 * TK_ENV_SAMPLE_BYTES (as jemalloc's prof sampling does) and, for a sampled
 * allocation only, calls TK_MARKER_ALLOC(ptr, size) from a slow path that
 * the interposed function jumps to (a tail call), so the slow path's frame
 * stands where the interposed function's was and the frame above the
 * marker's is the allocation's caller. C++ operator new and delete are
 * served the same way (libstdc++ keeps no frame pointer). It remembers
 * sampled pointers and calls TK_MARKER_FREE(ptr) when one is freed (or
 * moved by realloc); other frees cost a lookup in a small filter, not a
 * trap. The markers are a push, a pop and a return (an emulated uprobe
 * site, and one 6.18 does not rewrite into a trampoline call that fork()ed
 * children lack); tracekit places uprobes on the two markers only. With
 * TK_ENV_SAMPLE_PROBED=1 (tracekit sets it; its children inherit it) it
 * samples only while a uprobe is on the alloc marker: at a sample whose
 * marker reads as its own first instruction again (the tracer ended, was
 * killed, or detached) it turns itself off for good, and the command's
 * allocations then cost one compare more than without it.
 *
 * libtkagent.so, no interposition: with TK_ENV_AGENT_FD set it takes the
 * descriptor (and removes the variables from its environment, marking the
 * descriptor close-on-exec, so the command's own children do not inherit
 * the role). Then:
 *  - TK_ENV_AGENT_HOLD=1: in its constructor (ld.so has mapped every library
 *    by then) it writes TK_AGENT_HELD and blocks until it reads
 *    TK_AGENT_GO (or EOF, which also releases it): tracekit places uprobes
 *    on the allocator the command really uses meanwhile.
 *  - TK_ENV_AGENT_JEMALLOC=1: a thread serves heap dump requests: a line
 *    "D PATH\n" is answered by mallctl("prof.dump", ..., PATH) and a line
 *    "0\n" on success or "ERRNO\n" (a positive errno: ENOENT when there is
 *    no mallctl, EFAULT... as mallctl returned) on failure. EOF ends the
 *    thread. With both, the hold comes first on the same descriptor.
 */
#ifndef __TK_AGENT_PROTO_H
#define __TK_AGENT_PROTO_H

#define TK_PRELOAD_SAMPLER "libtkalloc.so"
#define TK_PRELOAD_AGENT "libtkagent.so"

#define TK_ENV_SAMPLE_BYTES "TK_ALLOC_SAMPLE_BYTES"	/* decimal, > 0 */
#define TK_ENV_SAMPLE_PROBED "TK_ALLOC_WHILE_PROBED"	/* "1": sample only while traced */
#define TK_ENV_AGENT_FD "TK_AGENT_FD"			/* decimal descriptor */
#define TK_ENV_AGENT_HOLD "TK_AGENT_HOLD"
#define TK_ENV_AGENT_JEMALLOC "TK_AGENT_JEMALLOC"

#define TK_MARKER_ALLOC "tk_alloc_marker_alloc"	/* void (void *ptr, size_t size) */
#define TK_MARKER_FREE "tk_alloc_marker_free"		/* void (void *ptr) */

#define TK_AGENT_HELD 'H'
#define TK_AGENT_GO 'G'

#endif /* __TK_AGENT_PROTO_H */
