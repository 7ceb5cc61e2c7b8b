// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * perf_event mmap rings: the reader side of the protocol in
 * include/uapi/linux/perf_event.h. The kernel writes records and advances
 * data_head; we read up to the data_head we loaded (acquire: the records
 * before it are visible) and then store data_tail (release: our reads are
 * done before the kernel may overwrite the space).
 *
 * The records themselves are decoded here too (the layout both users ask
 * for, TK_PERF_SAMPLE_TYPE), and several rings are merged by time into
 * what they say (perf_records.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/arch.h"
#include "cpu/perf_ring.h"

int tk_perf_ring__map(struct tk_perf_ring *r, int fd, unsigned int pages)
{
	long page_size = sysconf(_SC_PAGESIZE);
	void *base;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!pages || (pages & (pages - 1)) || page_size <= 0)
		return -EINVAL;
	r->mmap_len = (size_t)(pages + 1) * page_size;
	base = mmap(NULL, r->mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		r->mmap_len = 0;
		return -errno;
	}
	r->fd = fd;
	r->page = base;
	r->data = (uint8_t *)base + page_size;
	r->data_size = (uint64_t)pages * page_size;
	r->tail = r->page->data_tail;
	r->head = r->tail;
	return 0;
}

void tk_perf_ring__unmap(struct tk_perf_ring *r)
{
	if (r->page)
		munmap(r->page, r->mmap_len);
	free(r->bounce);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void tk_perf_ring__begin(struct tk_perf_ring *r)
{
	if (r->page)
		r->head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
}

const struct perf_event_header *tk_perf_ring__next(struct tk_perf_ring *r)
{
	const struct perf_event_header *h;
	uint64_t off, first;
	void *nb;

	if (!r->page || r->tail >= r->head)
		return NULL;
	/* records are 8-byte aligned and the ring a multiple of 8: a header never wraps */
	off = r->tail & (r->data_size - 1);
	h = (const void *)(r->data + off);
	if (h->size < sizeof(*h) || h->size > r->head - r->tail) {
		/* cannot happen with a sane kernel; skip what is there rather than loop */
		r->tail = r->head;
		return NULL;
	}
	if (off + h->size <= r->data_size)
		return h;
	if (r->bounce_size < h->size) {
		nb = realloc(r->bounce, h->size);
		if (!nb) {
			r->tail += h->size;	/* lose this one record, not the ring */
			return tk_perf_ring__next(r);
		}
		r->bounce = nb;
		r->bounce_size = h->size;
	}
	first = r->data_size - off;
	memcpy(r->bounce, r->data + off, first);
	memcpy((uint8_t *)r->bounce + first, r->data, h->size - first);
	return r->bounce;
}

void tk_perf_ring__advance(struct tk_perf_ring *r)
{
	const struct perf_event_header *h;

	if (!r->page || r->tail >= r->head)
		return;
	h = (const void *)(r->data + (r->tail & (r->data_size - 1)));
	r->tail += h->size;
}

void tk_perf_ring__end(struct tk_perf_ring *r)
{
	if (r->page)
		__atomic_store_n(&r->page->data_tail, r->tail, __ATOMIC_RELEASE);
}

int tk_perf_sample__parse(const struct perf_event_header *h, bool unwind, bool switch_raw,
			  struct tk_perf_sample *s)
{
	const uint64_t *p = (const uint64_t *)(h + 1);
	size_t words = (h->size - sizeof(*h)) / sizeof(uint64_t), size;

	/* ip, pid/tid, time, cpu/res, period, nr, then nr entries */
	if (h->type != PERF_RECORD_SAMPLE || words < 6)
		return -EINVAL;
	s->ip = p[0];
	s->pid = (uint32_t)p[1];
	s->tid = (uint32_t)(p[1] >> 32);
	s->time = p[2];
	s->cpu = (uint32_t)p[3];
	s->period = p[4];
	s->nr = p[5];
	if (s->nr > words - 6)
		return -EINVAL;
	s->ips = p + 6;
	s->regs_abi = PERF_SAMPLE_REGS_ABI_NONE;
	s->stack = NULL;
	s->stack_size = 0;
	s->raw = NULL;
	s->raw_size = 0;
	p += 6 + s->nr;
	words -= 6 + s->nr;
	if (switch_raw && s->period == 1) {
		/* u32 size, then size bytes: 4 + size a whole number of words */
		uint32_t raw_size;

		if (words < 1)
			return -EINVAL;
		memcpy(&raw_size, p, sizeof(raw_size));
		if ((raw_size + 4) % 8 || (raw_size + 4) / 8 > words)
			return -EINVAL;
		s->raw = (const uint8_t *)p + 4;
		s->raw_size = raw_size;
		p += (raw_size + 4) / 8;
		words -= (raw_size + 4) / 8;
	}
	if (!unwind)
		return 0;
	/* regs abi, then (unless NONE: a kernel thread) one word per bit of the mask */
	if (words < 1)
		return -EINVAL;
	s->regs_abi = *p++;
	words--;
	if (s->regs_abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if (words < TK_PERF_REGS_NR)
			return -EINVAL;
		s->regs.bp = p[TK_PERF_REG_BP];
		s->regs.sp = p[TK_PERF_REG_SP];
		s->regs.ip = p[TK_PERF_REG_IP];
#if TK_PERF_REG_LR >= 0
		s->regs.lr = p[TK_PERF_REG_LR];
#else
		s->regs.lr = 0;
#endif
		s->regs.ra_mask = tk_unw_ra_mask(NULL);
		p += TK_PERF_REGS_NR;
		words -= TK_PERF_REGS_NR;
	}
	/* stack size, then (unless 0) that many bytes and what of them was copied */
	if (words < 1)
		return -EINVAL;
	size = *p++;
	words--;
	if (!size)
		return 0;
	if (size % 8 || size / 8 >= words || p[size / 8] > size)
		return -EINVAL;
	s->stack = (const uint8_t *)p;
	s->stack_size = p[size / 8];
	return 0;
}

uint64_t tk_perf_record__time(const struct perf_event_header *h)
{
	const uint64_t *p = (const uint64_t *)(h + 1);
	size_t words = (h->size - sizeof(*h)) / sizeof(uint64_t);

	if (h->type == PERF_RECORD_SAMPLE)
		return words >= 3 ? p[2] : 0;
	/* sample_id_all trailer: pid/tid, time, cpu/res */
	if (h->type >= PERF_RECORD_MAX || words < 3)
		return 0;
	return p[words - 2];
}

uint32_t tk_perf_callchain__split(const uint64_t *ips, uint64_t nr, uint64_t *kernel,
				  uint32_t *nr_kernel, uint64_t *user, uint32_t *nr_user)
{
	uint64_t ctx = PERF_CONTEXT_KERNEL, i;
	uint32_t frames = 0;

	*nr_kernel = 0;
	*nr_user = 0;
	for (i = 0; i < nr; i++) {
		uint64_t ip = ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip;
			continue;
		}
		frames++;
		if (ctx == (uint64_t)PERF_CONTEXT_KERNEL) {
			if (*nr_kernel < TK_MAX_FRAMES)
				kernel[(*nr_kernel)++] = ip;
		} else if (ctx == (uint64_t)PERF_CONTEXT_USER) {
			if (*nr_user < TK_MAX_FRAMES)
				user[(*nr_user)++] = ip;
		}
	}
	return frames;
}

/* ---- records of several rings, in time order --------------------------------- */

static void ring_peek(struct tk_perf_ring *r)
{
	r->cur = tk_perf_ring__next(r);
	r->cur_time = r->cur ? tk_perf_record__time(r->cur) : 0;
}

int tk_perf_rings__consume(struct tk_perf_ring *rings, int nr, uint64_t limit,
			   tk_perf_record_fn fn, void *ctx)
{
	int i, best, err = 0;

	for (i = 0; i < nr; i++) {
		tk_perf_ring__begin(&rings[i]);
		ring_peek(&rings[i]);
	}
	for (;;) {
		best = -1;
		for (i = 0; i < nr; i++)
			if (rings[i].cur && (best < 0 || rings[i].cur_time < rings[best].cur_time))
				best = i;
		if (best < 0 || rings[best].cur_time > limit)
			break;
		err = fn(ctx, rings[best].cur);
		if (err)
			break;
		tk_perf_ring__advance(&rings[best]);
		ring_peek(&rings[best]);
	}
	for (i = 0; i < nr; i++)
		tk_perf_ring__end(&rings[i]);
	return err;
}
