// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Threads on a CPU when the stacks were read have no saved user registers. Each
 * gets one perf sample of its own (research §6.4): a task-clock event on that
 * thread alone, firing after 1 ms of its own CPU time, with its user registers
 * and 16 KiB of its stack, as the perf backend's samples. A sampling interrupt,
 * as any profiler's: nothing is stopped or signalled. A thread that does not run
 * within the deadline keeps no stack (running_no_stack).
 */
#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include "core/arch.h"
#include "core/internal.h"
#include "stacks/stacks_int.h"

#define ONCPU_STACK 16384
#define ONCPU_DATA_PAGES 8		/* 32 KiB: one sample with its stack fits */

struct ring {
	int fd;
	void *base;
	size_t len;
};

static int open_one(uint32_t tid, struct ring *r, long page)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_TASK_CLOCK,	/* counts only while it runs */
		.sample_period = 1000000,		/* 1 ms of its CPU time */
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		.sample_regs_user = TK_PERF_REGS_USER,
		.sample_stack_user = ONCPU_STACK,
		.exclude_hv = 1,
		.exclude_kernel = 1,			/* its user registers are what is needed;
							   and allowed at perf_event_paranoid 2 */
		.wakeup_events = 1,
	};

	r->fd = tk_perf_event_open(&a, tid, -1, 0);
	if (r->fd < 0)
		return r->fd;
	r->len = (1 + ONCPU_DATA_PAGES) * page;
	r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		close(r->fd);
		r->fd = -1;
		return -errno;
	}
	return 0;
}

/* Copy @len bytes at ring offset @off (wrapping) into @dst. */
static void ring_copy(const struct ring *r, long page, uint64_t off, void *dst, size_t len)
{
	const uint8_t *data = (const uint8_t *)r->base + page;
	size_t size = ONCPU_DATA_PAGES * page, at = off % size, n = len < size - at ? len : size - at;

	memcpy(dst, data + at, n);
	if (n < len)
		memcpy((uint8_t *)dst + n, data, len - n);
}

/* The first sample in the ring, into @q: true when it had user registers and a stack. */
static bool read_sample(const struct ring *r, long page, struct stk_oncpu *q)
{
	struct perf_event_mmap_page *mp = r->base;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
	struct perf_event_header h;
	uint8_t *rec = NULL;
	bool ok = false;

	while (tail + sizeof(h) <= head && !ok) {
		ring_copy(r, page, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			uint64_t abi, regs[TK_PERF_REGS_NR], size, dyn;
			size_t at = sizeof(h) + 8;	/* pid, tid */

			rec = malloc(h.size);
			if (!rec)
				break;
			ring_copy(r, page, tail, rec, h.size);
			if (at + 8 > h.size)
				break;
			memcpy(&abi, rec + at, 8);
			at += 8;
			if (abi == PERF_SAMPLE_REGS_ABI_64 && at + sizeof(regs) + 8 <= h.size) {
				memcpy(regs, rec + at, sizeof(regs));
				at += sizeof(regs);
				memcpy(&size, rec + at, 8);
				at += 8;
				if (size && size <= ONCPU_STACK && at + size + 8 <= h.size) {
					memcpy(&dyn, rec + at + size, 8);
					if (dyn > size)
						dyn = size;
					q->bp = regs[TK_PERF_REG_BP];
					q->sp = regs[TK_PERF_REG_SP];
					q->ip = regs[TK_PERF_REG_IP];
#if TK_PERF_REG_LR >= 0
					q->lr = regs[TK_PERF_REG_LR];
#else
					q->lr = 0;
#endif
					q->len = dyn;
					q->stack = malloc(dyn ? dyn : 1);
					if (q->stack) {
						memcpy(q->stack, rec + at, dyn);
						ok = true;
					}
				}
			}
			free(rec);
			rec = NULL;
		}
		tail += h.size;
	}
	free(rec);
	return ok;
}

int stk_oncpu__sample(struct stk_oncpu *q, size_t n, int timeout_ms)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ring *r = calloc(n ? n : 1, sizeof(*r));
	struct pollfd *p = calloc(n ? n : 1, sizeof(*p));
	size_t open = 0, left;
	int64_t end;
	int err = 0;

	if (!r || !p) {
		free(r);
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		q[i].ok = false;
		r[i].fd = -1;
		if (!open_one(q[i].tid, &r[i], page))
			open++;
		else if (!err)
			err = -errno;
	}
	end = tk_now_ns(CLOCK_MONOTONIC) + timeout_ms * 1000000LL;
	left = open;
	while (left) {
		int64_t now = tk_now_ns(CLOCK_MONOTONIC);
		size_t k = 0;

		if (now >= end)
			break;
		for (size_t i = 0; i < n; i++) {
			if (r[i].fd < 0 || q[i].ok)
				continue;
			p[k].fd = r[i].fd;
			p[k].events = POLLIN;
			p[k].revents = 0;
			k++;
		}
		if (poll(p, k, (end - now) / 1000000 + 1) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < n; i++) {
			if (r[i].fd < 0 || q[i].ok)
				continue;
			if (read_sample(&r[i], page, &q[i])) {
				q[i].ok = true;
				left--;
				/* one sample is all: stop counting at once */
				ioctl(r[i].fd, PERF_EVENT_IOC_DISABLE, 0);
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (r[i].base)
			munmap(r[i].base, r[i].len);
		if (r[i].fd >= 0)
			close(r[i].fd);
	}
	free(r);
	free(p);
	return open ? 0 : err;
}
