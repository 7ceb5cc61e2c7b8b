// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of allocation sessions: reading what its programs record.
 * The ring buffer's records (allocations, frees, unwinder misses, execs), the
 * per-CPU counters into calls and losses, exec'd processes' maps captured
 * again, growth counts delivered as deltas; the backend's poll and drain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "alloc/alloc_int.h"
#include "alloc/alloc_trace_int.h"
#include "bpf/alloc_trace.h"
#include "alloc_trace.skel.h"
#include "unwind/unwind_bpf.h"
#include "core/hash.h"
#include "core/internal.h"
#include "core/percpu.h"

/* ---- records ---------------------------------------------------------------------------- */

/*
 * A process exec'd: ld.so maps its libraries after the exec event, so the
 * new generation's maps are captured again once it has had STALE_NS to do
 * that (or at drain). The symbolizer keeps one capture per (process,
 * generation): the last one names everything that image did.
 */
#define STALE_NS 100000000LL

static void refresh_stale(struct tk_alloc *a, struct at_state *st, bool all)
{
	int64_t now = tk_now_ns(CLOCK_MONOTONIC);
	int i;

	for (i = 0; i < st->nr_stale;) {
		if (all || now - st->stale[i].exec_ns >= STALE_NS) {
			tk_alloc__refresh_maps(a, st->stale[i].pid, st->stale[i].gen);
			st->stale[i] = st->stale[--st->nr_stale];
		} else {
			i++;
		}
	}
}

/* Not to be captured again: (pid, gen) has ended, another generation may have the maps. */
static void drop_stale(struct at_state *st, uint32_t pid)
{
	int i;

	for (i = 0; i < st->nr_stale;) {
		if (st->stale[i].pid == pid)
			st->stale[i] = st->stale[--st->nr_stale];
		else
			i++;
	}
}

/* A released object's live entry in BPF (its generation's heap is gone). */
static void drop_live(struct tk_alloc *a, uint32_t pid, uint32_t gen, uint64_t ptr)
{
	struct at_state *st = a->priv;
	struct {
		__u32 pid;
		__u32 gen;
		__u64 ptr;
	} k = { pid, gen, ptr };

	bpf_map__delete_elem(st->skel->maps.live, &k, sizeof(k), 0);
}

/*
 * Generation @e->gen of @e->pid ended (exec, or its last thread's exit): what
 * it held leaves the in-use figures, its live entries leave BPF's map, and
 * the unwinder's rows of it go (a capture read before the event may have
 * written them after BPF deleted its entry; the next generation's come with
 * its capture). After an exec the new generation's maps are read again soon.
 */
static void on_end(struct tk_alloc *a, struct at_state *st, const struct at_proc_event *e)
{
	bool exec = e->type == AT_REC_EXEC;

	if (e->gen != AT_GEN_NONE)
		tk_alloc__release(a, e->pid, e->gen, exec ? TK_ALLOC_END_EXEC : TK_ALLOC_END_EXIT,
				  st->skel->rodata->track_live ? drop_live : NULL);
	tk_unw_bpf__forget(st->unw, e->pid);
	drop_stale(st, e->pid);
	if (!exec)
		return;
	if (st->nr_stale == MAX_STALE)
		refresh_stale(a, st, true);
	st->stale[st->nr_stale].pid = e->pid;
	st->stale[st->nr_stale].gen = e->next_gen;
	st->stale[st->nr_stale++].exec_ns = tk_now_ns(CLOCK_MONOTONIC);
}

int tk_alloc_bpf__handle_event(void *ctx, void *data, size_t size)
{
	struct tk_alloc *a = ctx;
	struct at_state *st = a->priv;
	const struct at_alloc *r = data;
	const struct at_free *f = data;
	const struct at_proc_event *e = data;
	struct tk_alloc_rec rec = {};
	char comm[sizeof(r->comm) + 1];
	int err = 0;

	if (size < sizeof(__u32))
		return 0;
	switch (r->type) {
	case AT_REC_ALLOC:
		if (size < offsetof(struct at_alloc, ips) ||
		    r->nr_ips > (size - offsetof(struct at_alloc, ips)) / sizeof(__u64))
			return 0;
		memcpy(comm, r->comm, sizeof(r->comm));
		comm[sizeof(r->comm)] = '\0';
		rec.pid = r->pid;
		rec.gen = r->gen;
		rec.tid = r->tid;
		rec.ptr = r->ptr;
		rec.size = r->size;
		rec.ts_ns = r->ts_ns;
		rec.ips = (const uint64_t *)r->ips;
		rec.nr_ips = r->nr_ips > TK_ALLOC_MAX_FRAMES ? TK_ALLOC_MAX_FRAMES : r->nr_ips;
		rec.truncated = r->flags & AT_F_TRUNCATED;
		rec.untracked = r->flags & AT_F_UNTRACKED;
		rec.comm = comm;
		err = tk_alloc__on_alloc(a, &rec);
		break;
	case AT_REC_FREE:
		if (size >= sizeof(*f))
			err = tk_alloc__on_free(a, f->pid, f->gen, f->ptr);
		break;
	case AT_REC_UNWIND_MISS:
		if (size >= sizeof(*f))
			tk_unw_bpf__miss(st->unw, f->pid, f->gen);
		break;
	case AT_REC_EXEC:
	case AT_REC_GONE:
		if (size >= sizeof(*e))
			on_end(a, st, e);
		break;
	}
	if (err && !st->err)
		st->err = err;
	return 0;
}

static void read_counters(struct tk_alloc *a, struct at_state *st)
{
	static const struct {
		enum at_counter c;
		enum tk_alloc_loss l;
	} losses[] = {
		{ AT_CNT_RINGBUF_FULL, TK_ALOSS_RINGBUF },
		{ AT_CNT_STACK_MAP_FULL, TK_ALOSS_STACK_MAP_FULL },
		{ AT_CNT_LIVE_MAP_FULL, TK_ALOSS_LIVE_MAP_FULL },
		{ AT_CNT_PENDING_MAP_FULL, TK_ALOSS_PENDING_MAP_FULL },
		{ AT_CNT_TRUNCATED, TK_ALOSS_TRUNCATED },
		{ AT_CNT_STACK_ERRORS, TK_ALOSS_STACK_ERRORS },
		{ AT_CNT_UNKNOWN_FREE, TK_ALOSS_UNKNOWN_FREE },
		{ AT_CNT_LIVE_REPLACED, TK_ALOSS_LIVE_REPLACED },
		{ AT_CNT_PROC_MAP_FULL, TK_ALOSS_PROC_MAP_FULL },
		{ AT_CNT_FOLLOW_MAP_FULL, TK_ALOSS_FOLLOW_MAP_FULL },
		{ AT_CNT_BRK_MAP_FULL, TK_ALOSS_BRK_MAP_FULL },
	};
	uint64_t sum[AT_CNT__COUNT];
	size_t i;

	tk_percpu__sum(st->skel->bss->counters, AT_MAX_CPUS, AT_CNT__COUNT, sum);
	/* with the markers, libtkalloc.so sees the calls, not BPF */
	if (a->hook == TK_ALLOC_HOOK_UPROBES)
		a->calls += sum[AT_CNT_ALLOC_CALLS] + sum[AT_CNT_FREE_CALLS] -
			    st->seen[AT_CNT_ALLOC_CALLS] - st->seen[AT_CNT_FREE_CALLS];
	for (i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		tk_alloc__add_loss(a, losses[i].l, sum[losses[i].c] - st->seen[losses[i].c]);
	memcpy(st->seen, sum, sizeof(sum));
	if (st->unw) {
		tk_unw_bpf__sum(st->skel->bss->unw_counters, UNW_MAX_CPUS, a->unwind);
		tk_unw_bpf__stats(st->unw, &a->unw_info);
	}
}

/* ---- growth: deltas of the kernel's counts ------------------------------------------------ */

static uint64_t key_hash(const struct at_growth_key *k)
{
	return tk_hash__bytes(0, k, sizeof(*k));
}

static uint64_t growth_hash(const void *rec)
{
	return key_hash(&((const struct growth_seen *)rec)->key);
}

static bool growth_match(const void *ctx, const void *rec, const void *key)
{
	return !memcmp(&((const struct growth_seen *)rec)->key, key,
		       sizeof(struct at_growth_key));
}

static struct growth_seen *growth_slot(struct at_state *st, const struct at_growth_key *k)
{
	struct growth_seen *g;
	bool found;

	if (!st->growth.esz)
		st->growth = (struct tk_hashmap)TK_HASHMAP_INIT(struct growth_seen, growth_hash);
	g = tk_hashmap__insert(&st->growth, key_hash(k), growth_match, NULL, k, &found);
	if (g && !found) {
		g->used = 1;
		g->key = *k;
	}
	return g;
}

static int deliver_growth(struct tk_alloc *a, struct at_state *st)
{
	int gfd = bpf_map__fd(st->skel->maps.growth), sfd = bpf_map__fd(st->skel->maps.stacks);
	struct at_growth_key key, next;
	struct at_growth_val v;
	struct growth_seen *g;
	struct at_stack *stack;
	bool first = true;
	int err = 0;

	stack = malloc(sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	while (!bpf_map_get_next_key(gfd, first ? NULL : &key, &next)) {
		char comm[sizeof(key.comm) + 1];
		uint32_t nr = 0;

		first = false;
		key = next;
		if (bpf_map_lookup_elem(gfd, &key, &v))
			continue;
		g = growth_slot(st, &key);
		if (!g) {
			err = -ENOMEM;
			break;
		}
		if (v.count <= g->val.count)
			continue;
		if (key.stack && !bpf_map_lookup_elem(sfd, &key.stack, stack))
			nr = stack->nr > AT_MAX_FRAMES ? AT_MAX_FRAMES : stack->nr;
		memcpy(comm, key.comm, sizeof(key.comm));
		comm[sizeof(key.comm)] = '\0';
		err = tk_alloc__on_growth(a, key.kind, key.pid, key.gen, key.tid, comm,
					  (const uint64_t *)stack->ips, nr,
					  key.flags & AT_F_TRUNCATED, v.count - g->val.count,
					  v.bytes - g->val.bytes);
		if (err)
			break;
		g->val = v;
	}
	free(stack);
	return err;
}

/* ---- poll and drain ---------------------------------------------------------------------- */

int tk_alloc_bpf__poll(struct tk_alloc *a, int timeout_ms)
{
	struct at_state *st = a->priv;
	int err = 0;

	if (!st->rb) {
		if (timeout_ms > 0)
			usleep(timeout_ms * 1000);
		return 0;
	}
	err = ring_buffer__poll(st->rb, timeout_ms);
	/*
	 * BPF wakes us only once a quarter of the ring waits (rb_flags()): take
	 * what came meanwhile too, so a process's maps are read while it lives.
	 */
	if (err >= 0 || err == -EINTR) {
		int n = ring_buffer__consume(st->rb);

		if (n < 0 && n != -EINTR)
			err = n;
	}
	read_counters(a, st);
	refresh_stale(a, st, false);
	tk_unw_bpf__retry(st->unw, a->sym);
	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		int gerr = deliver_growth(a, st);

		if (gerr)
			return gerr;
	}
	if (st->err) {
		err = st->err;
		st->err = 0;
		return err;
	}
	return err < 0 && err != -EINTR ? err : 0;
}

int tk_alloc_bpf__drain(struct tk_alloc *a)
{
	struct at_state *st = a->priv;
	int err = 0;

	if (!st)
		return 0;
	tk_alloc_bpf__detach(st);
	if (st->rb)
		ring_buffer__consume(st->rb);
	read_counters(a, st);
	refresh_stale(a, st, true);
	if (a->opts.mode == TK_ALLOC_MODE_GROWTH)
		err = deliver_growth(a, st);
	if (!err && st->err)
		err = st->err;
	st->err = 0;
	return err;
}
