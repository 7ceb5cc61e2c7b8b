/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * perf_event mmap rings and the records in them (perf_ring.c), and what the
 * records say (perf_records.c), for the perf CPU backend (cpu_perf.c) and the
 * sidecar (sidecar.c); not part of the API.
 *
 * A ring is read in three steps: tk_perf_ring__begin() takes data_head with
 * acquire semantics, __next()/__advance() walk the records up to it (a record
 * that wraps around the end of the ring is copied whole into a bounce buffer,
 * so every record is contiguous), and __end() publishes data_tail with release
 * semantics, giving the space back to the kernel. Records stay valid until the
 * next __advance() of the same ring, so several rings can be merged by time.
 *
 * The records then become stacks in c->stacks (tk_perf_records):
 * - SAMPLE: the callchain split at its context markers into kernel and user
 *   frames, under the (pid, gen) of the process and the comm of the thread.
 *   A chain of sample_max_stack frames or more is marked truncated
 *   (TK_LOSS_TRUNCATED): the limit bounds both sides together. When user
 *   stacks are unwound here (tk_perf_records__set_unwind), samples carry no
 *   user callchain but the user registers and a copy of the user stack
 *   (TK_PERF_SAMPLE_UNWIND), walked with the rows of the process's mappings
 *   (tk_unw__walk over a unw_proc made once per (pid, gen), again after
 *   each MMAP2 of it); the walk's causes go to c->unwind, and a walk cut at
 *   UNW_MAX_FRAMES is truncated too.
 * - COMM with PERF_RECORD_MISC_COMM_EXEC: the next generation of the pid;
 *   FORK of a new process: also the next generation when the pid was used
 *   before, so a (pid, gen) never names two address spaces. gen counts from 0.
 * - MMAP2 (executable, file-backed): kept per process, in a list a forked
 *   child shares (fork copies the address space) until either writes to it.
 *   At the first sample with user frames of a (pid, gen) the symbolizer gets
 *   the list when it is complete (the process exec'd, or was forked by one
 *   that did, during the capture), else the process's /proc maps
 *   (tk_symbolizer__capture: it existed before); a capture that fails (the
 *   process is gone) falls back to what the list holds and counts
 *   TK_LOSS_MAPS_MISSED. Later MMAP2 records of a resolved process go to the
 *   symbolizer at once. A process never sampled costs no ELF work.
 * - LOST, LOST_SAMPLES: TK_LOSS_PERF_LOST. EXIT: the thread's entry goes;
 *   a process's entry stays only when its gen must survive a reuse of the pid.
 * - Comm of a thread: from COMM records, inherited at FORK, or read from
 *   /proc/PID/task/TID/comm the first time an older thread is seen.
 */
#ifndef __TK_PERF_RING_H
#define __TK_PERF_RING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arch.h"
#include "cpu/cpu.h"

struct tk_perf_ring {
	int fd;
	struct perf_event_mmap_page *page;
	uint8_t *data;
	size_t mmap_len;
	uint64_t data_size;	/* a power of two */
	uint64_t head;		/* data_head at __begin */
	uint64_t tail;		/* the next byte to read */
	void *bounce;		/* the current record when it wraps around the end */
	size_t bounce_size;
	const struct perf_event_header *cur;	/* for tk_perf_rings__consume */
	uint64_t cur_time;
};

/* Map 1 + @pages (a power of two) pages of perf event @fd. Returns 0 or -errno. */
int tk_perf_ring__map(struct tk_perf_ring *r, int fd, unsigned int pages);
/* Unmap (the fd is the caller's); safe on a ring never mapped or already unmapped. */
void tk_perf_ring__unmap(struct tk_perf_ring *r);
/* Take data_head: the records written so far are readable. */
void tk_perf_ring__begin(struct tk_perf_ring *r);
/* The record at the read position, contiguous, or NULL at data_head (or when corrupt). */
const struct perf_event_header *tk_perf_ring__next(struct tk_perf_ring *r);
/* Step over the record __next() returned. */
void tk_perf_ring__advance(struct tk_perf_ring *r);
/* Give what was read back to the kernel. */
void tk_perf_ring__end(struct tk_perf_ring *r);

/*
 * The record layout both users ask for: samples carry these fields, and
 * with sample_id_all every other record ends with pid/tid, time and cpu.
 */
#define TK_PERF_SAMPLE_TYPE                                                          \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |      \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

/*
 * What user-space unwinding adds: the user registers the rows need (ABI order,
 * by bit number: bp, sp, ip) and a copy of the user stack from sp up.
 */
#define TK_PERF_SAMPLE_UNWIND (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
/* TK_PERF_REGS_USER: core/arch.h */
#define TK_PERF_STACK_USER 16384	/* bytes of user stack per sample */

struct tk_perf_sample {
	uint32_t pid;
	uint32_t tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
	uint64_t ip;
	uint64_t nr;		/* callchain entries, context markers included */
	const uint64_t *ips;
	/* with TK_PERF_SAMPLE_UNWIND only */
	uint64_t regs_abi;	/* PERF_SAMPLE_REGS_ABI_*: NONE for a kernel thread */
	struct tk_unw_regs regs;	/* when regs_abi is not NONE */
	const uint8_t *stack;	/* the user stack from regs.sp, stack_size bytes */
	uint64_t stack_size;	/* what the kernel could copy (dyn_size) */
	/* with @switch_raw, samples of period 1 (PERF_SAMPLE_RAW); else NULL, 0 */
	const uint8_t *raw;
	uint32_t raw_size;
};

/*
 * Decode a PERF_RECORD_SAMPLE of TK_PERF_SAMPLE_TYPE, or of that and
 * TK_PERF_SAMPLE_UNWIND when @unwind; with @switch_raw, a sample of period 1
 * (the off-CPU switch event's) also has PERF_SAMPLE_RAW after its callchain.
 * Returns 0 or -EINVAL.
 */
int tk_perf_sample__parse(const struct perf_event_header *h, bool unwind, bool switch_raw,
			  struct tk_perf_sample *s);
/* The time of any record of that layout; 0 when it has none. */
uint64_t tk_perf_record__time(const struct perf_event_header *h);

/*
 * Split a callchain at its PERF_CONTEXT_* markers (dropped) into kernel and
 * user frames, leaf first, at most TK_MAX_FRAMES each; other contexts (guest)
 * are dropped. Returns the number of frames seen, markers not counted.
 */
uint32_t tk_perf_callchain__split(const uint64_t *ips, uint64_t nr, uint64_t *kernel,
				  uint32_t *nr_kernel, uint64_t *user, uint32_t *nr_user);

struct tk_perf_filter {
	uint32_t drop_pid;	/* never sample this process (tracekit itself); 0: none */
	/*
	 * Off-CPU switch-outs from the sched:sched_switch tracepoint (period-1
	 * samples carrying PERF_SAMPLE_RAW): prev_state's offset and size in the
	 * raw data; size 0: the context-switches event (no raw data, no state)
	 */
	uint32_t switch_state_off, switch_state_size;
	uint32_t skip_tid;	/* nor this thread (the one running a self-profile); 0: none */
	bool only_pids;		/* only processes in c->opts.pids (not their children) */
	uint32_t max_stack;	/* the callchain limit asked of the kernel */
};

struct tk_perf_records;

/* What records say, kept for @c (its stacks, symbolizer, counters, opts.proc_root). */
struct tk_perf_records *tk_perf_records__new(struct tk_cpu *c, const struct tk_perf_filter *f);
void tk_perf_records__free(struct tk_perf_records *r);
/*
 * Samples carry TK_PERF_SAMPLE_UNWIND, and their user stacks are walked with
 * the rows of @store (which must outlive @r); c->unwinding is set and
 * c->unw_info kept up to date.
 */
void tk_perf_records__set_unwind(struct tk_perf_records *r, struct tk_unw_store *store);
/* --off-cpu: the threads still switched out count their wait until @now (CLOCK_MONOTONIC). */
int tk_perf_records__pending_waits(struct tk_perf_records *r, uint64_t now);
/* Records lost according to the LOST records read so far (not reset with c->losses). */
uint64_t tk_perf_records__lost(const struct tk_perf_records *r);
/*
 * What record @h says (any type; those of no interest are skipped), in time
 * order across all rings. Returns 0 or -ENOMEM.
 */
int tk_perf_records__record(void *r, const struct perf_event_header *h);
/*
 * Read @nr rings, the oldest record first across all of them (their time
 * stamps must share a clock), up to record time @limit: later records stay
 * for the next call. Returns 0 or -ENOMEM.
 */
typedef int (*tk_perf_record_fn)(void *ctx, const struct perf_event_header *h);
int tk_perf_rings__consume(struct tk_perf_ring *rings, int nr, uint64_t limit,
			   tk_perf_record_fn fn, void *ctx);

/* ---- the perf backend's own entry, for the sidecar ----------------------------- */

struct tk_cpu_perf_opts {
	/* per CPU, a power of two; 0: 64 (256 KiB), 128 (512 KiB) when user stacks are copied */
	unsigned int ring_pages;
	int wake_fd;			/* also wake poll() when readable; -1: none */
};

/*
 * tk_cpu_backend_perf.start with other ring sizes and a wake-up fd; the
 * backend's poll/drain/free go on as usual. When c->opts.pids holds this
 * process, the thread calling this is never sampled.
 */
int tk_cpu_perf__start(struct tk_cpu *c, const struct tk_cpu_perf_opts *o);
/* Why kernel frames are missing, when they are ("" otherwise); valid until free. */
const char *tk_cpu_perf__note(const struct tk_cpu *c);
/*
 * In a child forked while sampling: close the events and unmap the rings the
 * child inherited, so they do not keep sampling the parent's threads.
 */
void tk_cpu_perf__close_in_child(struct tk_cpu *c);

#endif /* __TK_PERF_RING_H */
