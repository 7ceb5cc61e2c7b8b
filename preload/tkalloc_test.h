/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Test-only view of libtkalloc.so's markers. With TK_ALLOC_TEST_COUNTS=1 in
 * the environment, each call of tk_alloc_marker_alloc()/_free() is also
 * appended to the exported tk_alloc_test_log, which a test workload finds with
 * dlsym(RTLD_DEFAULT, TK_ALLOC_TEST_LOG). Without the variable the markers
 * test one global and do nothing else; the log's pages are never touched.
 */
#ifndef __TK_ALLOC_TEST_H
#define __TK_ALLOC_TEST_H

#include <stdint.h>

#define TK_ENV_ALLOC_TEST "TK_ALLOC_TEST_COUNTS"
#define TK_ALLOC_TEST_LOG "tk_alloc_test_log"
#define TK_ALLOC_TEST_EVENTS (1 << 16)

enum tk_alloc_test_kind {
	TK_ALLOC_TEST_ALLOC = 1,
	TK_ALLOC_TEST_FREE = 2,
};

struct tk_alloc_test_event {
	uint64_t ptr;
	uint64_t size;		/* 0 for a free */
	uint64_t caller;	/* the first return address a frame-pointer walk from
				 * the marker's entry finds: the allocation's caller */
	uint32_t kind;		/* enum tk_alloc_test_kind */
	uint32_t tid;
};

struct tk_alloc_test_log {
	uint64_t nr_alloc;	/* marker calls, also past the end of ev[] */
	uint64_t nr_free;
	uint64_t nr;		/* next slot of ev[]; past the end: events lost */
	uint64_t sample_bytes;	/* the mean the library runs with, 0: off */
	uint64_t off;		/* 1 once it turned itself off (its tracer left) */
	struct tk_alloc_test_event ev[TK_ALLOC_TEST_EVENTS];
};

#endif /* __TK_ALLOC_TEST_H */
