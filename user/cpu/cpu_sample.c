// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF CPU backend: loader of bpf/cpu_sample.bpf.c. One cpu-clock perf
 * event per online CPU runs the sampler; stacks and counts are counted in
 * kernel maps and drained into user space every interval (see "Draining");
 * the ring buffer brings the first sample of every (process, generation) so
 * its mappings are captured while it lives.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "cpu/cpu.h"
#include "cpu/cpu_drain.h"
#include "cpu/cpu_mmaps.h"
#include "bpf/cpu_sample.h"
#include "core/kfeat.h"
#include "cpu_sample.skel.h"
#include "core/fsutil.h"
#include "core/grow.h"
#include "core/percpu.h"
#include "core/internal.h"
#include "unwind/unwind_bpf.h"

struct bpf_state {
	struct cpu_sample_bpf *skel;
	struct bpf_link **links;	/* one per CPU */
	int nr_links;
	struct ring_buffer *rb;
	struct cpu_follow_bpf *follow;	/* only with follow_children */
	int cgroup_fd;
	struct tk_unw_bpf *unw;		/* NULL: user stacks by frame pointer */
	struct tk_cpu_mmaps *mmaps;	/* mappings of processes gone before capture; or NULL */
	bool precapture;		/* the -p processes' entries are still to be written */
	/* draining (see below) */
	struct tk_stacks *drained;	/* every epoch before st->epoch - 1 */
	__u32 epoch;			/* the programs' current epoch */
	int drain_ms;
	int64_t next_drain_ns;		/* CLOCK_MONOTONIC */
	useconds_t capture_delay_us;	/* TK_TEST_CAPTURE_DELAY_MS (tests): captures held back */
	bool off_cpu;			/* off_switch_btf or off_switch attached */
	bool one_by_one;		/* drains without the batch commands (cpu_drain.h) */
	uint64_t off_cpu_min_ns;
	char off_raw_why[96];		/* why tp_btf was refused (raw_tp then); "": not */
};

/* The parent of @pid from PID/stat, or -1. */
static int parent_of(const char *proc_root, int pid)
{
	char rel[32], buf[512], *p;
	int ppid;

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	if (tk_read_file(proc_root ? proc_root : "/proc", rel, buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')');	/* the comm may hold anything */
	return p && sscanf(p + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

/*
 * The -p processes are known: their unwind entries at the first poll, with
 * sampling already running and start-up over, rather than at their first
 * sample's event (their first samples go by the frame pointer meanwhile).
 * A command this process started is left to its exec's event: held before
 * its exec, its image is still ours.
 */
static void precapture(struct tk_cpu *c, struct bpf_state *st)
{
	int i;

	st->precapture = false;
	for (i = 0; i < c->opts.nr_pids; i++) {
		int pid = c->opts.pids[i];

		if (parent_of(c->opts.proc_root, pid) == getpid() ||
		    tk_symbolizer__has(c->sym, pid, 0))
			continue;
		if (!tk_symbolizer__capture(c->sym, pid, 0))
			tk_unw_bpf__update(st->unw, c->sym, pid, 0);
	}
}

/* Online CPUs from a cpulist like "0-3,8"; fills @cpus, returns the count or -errno. */
int tk_online_cpus(int *cpus, int max)
{
	char buf[1024], *p, *end;
	int n = 0;
	long err = tk_read_file("/sys", "devices/system/cpu/online", buf, sizeof(buf));

	if (err < 0)
		return err;
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &end, 10), b = a, i;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -EINVAL;
			p = end;
		}
		for (i = a; i <= b && n < max; i++)
			cpus[n++] = i;
		if (*p == ',')
			p++;
	}
	return n;
}

/*
 * (pid, gen) has ended: its procs entry goes, unless the pid already names a
 * newer generation. Its names stay in the symbolizer, its samples in counts;
 * the entry only told later samples which generation they belong to.
 */
static void forget_proc(struct bpf_state *st, __u32 pid, __u32 gen)
{
	int fd = bpf_map__fd(st->skel->maps.procs);
	struct cpu_proc p;

	if (!bpf_map_lookup_elem(fd, &pid, &p) && p.gen == gen)
		bpf_map_delete_elem(fd, &pid);
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct tk_cpu *c = ctx;
	struct bpf_state *st = c->priv;
	const struct cpu_event *e = data;
	int err;

	if (size < sizeof(*e))
		return 0;
	if (e->type == CPU_EV_UNWIND_MISS) {
		tk_unw_bpf__miss(st->unw, e->pid, e->gen);
		return 0;
	}
	if (e->type == CPU_EV_GONE) {
		forget_proc(st, e->pid, e->gen);
		/*
		 * BPF deleted its unwinder entry, but this event's SAMPLED, before
		 * it in the ring, may have written one since (a later process with
		 * this pid writes its own after this)
		 */
		tk_unw_bpf__forget(st->unw, e->pid);
		tk_cpu_mmaps__forget(st->mmaps, e->pid);
		tk_cpu__ended(c, e->pid, e->gen);
		return 0;
	}
	if (e->type == CPU_EV_EXEC) {
		tk_cpu__ended(c, e->pid, e->prev_gen);
		return 0;
	}
	if (e->type != CPU_EV_SAMPLED)
		return 0;
	c->processes++;
	if (st->capture_delay_us)	/* tests: a user space too slow for /proc */
		usleep(st->capture_delay_us);
	err = tk_symbolizer__capture(c->sym, e->pid, e->gen);
	/* gone already: what the MMAP2 records said of it (it needs no unwinder entry) */
	if (err == -ESRCH && st->mmaps &&
	    !tk_cpu_mmaps__give(st->mmaps, c->sym, e->pid, e->gen, e->time)) {
		c->maps_from_records++;
		forget_proc(st, e->pid, e->gen);
		return 0;
	}
	if (err)
		c->maps_missed++;
	else
		tk_unw_bpf__update(st->unw, c->sym, e->pid, e->gen);
	/* sampled at the very end of its exit, after CPU_EV_GONE: the entry is new, and stale */
	if (err == -ESRCH)
		forget_proc(st, e->pid, e->gen);
	return 0;
}

/*
 * Draining. The programs key every count and stack by the epoch in their
 * .bss. Every drain interval user space moves the epoch on and takes what
 * the epochs before the previous one hold into st->drained, deleting it
 * from the maps. The previous epoch is left one more interval: a sample
 * that read the epoch just before it moved may still be writing there
 * (a program runs for microseconds; an interval is at least 100 ms). The
 * maps so hold about three intervals' samples at most, and are sized for
 * that from the CPUs and the rate (size_maps), whatever the duration.
 */
#define DRAIN_MS_MAX 1000
#define DRAIN_MS_MIN 100
#define MAP_MIN_ENTRIES 4096
#define LIVE_INTERVALS 3		/* the current epoch, the previous, the one being drained */

static bool epoch_old(const struct bpf_state *st, __u32 ep, bool all)
{
	return all || (ep != st->epoch && ep != st->epoch - 1);
}

/* One side's stack of a drained count: copied out (0 frames when none). */
static uint32_t lookup_stack(int fd, __u64 hash, __u32 ep, struct cpu_stack *out, bool *missing)
{
	struct cpu_stack_key k = { .hash = hash, .epoch = ep };

	if (hash == CPU_NO_STACK)
		return 0;
	if (bpf_map_lookup_elem(fd, &k, out)) {
		*missing = true;
		return 0;
	}
	return out->nr > CPU_MAX_FRAMES ? CPU_MAX_FRAMES : out->nr;
}

/* Keys collected during a walk, deleted after it (a walk cannot delete as it goes). */
struct keys {
	void *v;
	size_t n, cap, sz;
};

static int keys_push(struct keys *k, const void *key)
{
	if (tk_grow(&k->v, &k->cap, k->n + 1, k->sz, 1024))
		return -ENOMEM;
	memcpy((char *)k->v + k->n++ * k->sz, key, k->sz);
	return 0;
}

static void keys_delete(int fd, struct keys *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		bpf_map_delete_elem(fd, (char *)k->v + i * k->sz);
	k->n = 0;
}

/*
 * A wait of the command before its exec: generation 0 of the command's pid
 * is tracekit's own child, held until the capture starts, not the command.
 */
static bool held_wait(const struct tk_cpu *c, const struct cpu_key *key)
{
	return c->opts.follow_children && c->opts.nr_pids && key->pid == (__u32)c->opts.pids[0] &&
	       key->gen == 0;
}

/* A drained count (@off: an off-CPU one, @n nanoseconds over @waits) into @t. */
static int add_key(struct tk_stacks *t, const struct cpu_key *key, const __u64 *kips, uint32_t nk,
		   const __u64 *uips, uint32_t nu, uint64_t n, uint64_t waits, bool off)
{
	bool trunc = key->flags & (CPU_KSTACK_TRUNCATED | CPU_USTACK_TRUNCATED);

	if (!off)
		return tk_stacks__add(t, key->pid, key->tid, key->gen, key->comm,
				      (const uint64_t *)kips, nk, (const uint64_t *)uips, nu, n,
				      trunc);
	return tk_stacks__add_off(t, key->pid, key->tid, key->gen, key->comm,
				  (const uint64_t *)kips, nk, (const uint64_t *)uips, nu, n, waits,
				  key->state, trunc);
}

/* Copy stack @hash of epoch @from into epoch @to in map @fd (when it is not there yet). */
static void copy_stack(int fd, __u64 hash, __u32 from, __u32 to, struct cpu_stack *buf)
{
	struct cpu_stack_key k = { .hash = hash, .epoch = from };

	if (hash == CPU_NO_STACK || bpf_map_lookup_elem(fd, &k, buf))
		return;
	k.epoch = to;
	bpf_map_update_elem(fd, &k, buf, BPF_NOEXIST);
}

/*
 * A thread switched out in an epoch about to be drained is still waiting:
 * its stacks move into the current epoch, and its entry with them, so that
 * its wait, counted when it comes back, finds them there. A thread that
 * comes back meanwhile counts under the old epoch, drained now or, if it
 * came after this walk, with the next drain (its stacks then missing, and
 * counted as such).
 */
static void rehome_waits(struct tk_cpu *c, struct bpf_state *st,
			 bool (*take)(const struct bpf_state *, __u32, bool), bool all)
{
	int fd = bpf_map__fd(st->skel->maps.offstart);
	int kfd = bpf_map__fd(st->skel->maps.kstacks), ufd = bpf_map__fd(st->skel->maps.ustacks);
	struct cpu_off_start v;
	struct cpu_stack *buf;
	__u64 task, next;	/* offstart's keys: task_struct addresses */
	bool first = true;

	if (all || !(buf = malloc(sizeof(*buf))))
		return;
	while (!bpf_map_get_next_key(fd, first ? NULL : &task, &next)) {
		first = false;
		task = next;
		if (bpf_map_lookup_elem(fd, &task, &v) || !take(st, v.key.epoch, false))
			continue;
		copy_stack(kfd, v.key.kstack, v.key.epoch, st->epoch, buf);
		copy_stack(ufd, v.key.ustack, v.key.epoch, st->epoch, buf);
		v.key.epoch = st->epoch;
		bpf_map_update_elem(fd, &task, &v, BPF_EXIST);
	}
	free(buf);
}

/* At the end: the threads still switched out, each with its wait until now. */
static int pending_waits(struct tk_cpu *c, struct bpf_state *st, struct tk_stacks *t,
			 struct cpu_stack *ks, struct cpu_stack *us)
{
	int fd = bpf_map__fd(st->skel->maps.offstart);
	int kfd = bpf_map__fd(st->skel->maps.kstacks), ufd = bpf_map__fd(st->skel->maps.ustacks);
	uint64_t now = tk_now_ns(CLOCK_MONOTONIC);
	struct cpu_off_start v;
	__u64 task, next;
	bool first = true;
	int err;

	while (!bpf_map_get_next_key(fd, first ? NULL : &task, &next)) {
		bool kmiss = false, umiss = false;
		uint32_t nk, nu;

		first = false;
		task = next;
		if (bpf_map_lookup_elem(fd, &task, &v) || held_wait(c, &v.key))
			continue;
		nk = lookup_stack(kfd, v.key.kstack, v.key.epoch, ks, &kmiss);
		nu = lookup_stack(ufd, v.key.ustack, v.key.epoch, us, &umiss);
		c->drain_missing += kmiss + umiss;
		if (v.ts < now && now - v.ts < st->off_cpu_min_ns) {
			v.key.state |= CPU_OFF_SHORT;
			nk = nu = 0;
		}
		err = add_key(t, &v.key, ks->ips, nk, us->ips, nu,
			      (v.ts < now ? now - v.ts : 0) * (v.weight ? v.weight : 1),
			      v.weight ? v.weight : 1, true);
		if (err)
			return err;
	}
	return 0;
}

struct take_ctx {
	const struct bpf_state *st;
	bool (*take)(const struct bpf_state *, __u32, bool);
	bool all;
};

static bool take_epoch(const void *ctx, __u32 ep)
{
	const struct take_ctx *tc = ctx;

	return tc->take(tc->st, ep, tc->all);
}

/* walk_counts with batched reads and deletes (cpu_drain.h); -EOPNOTSUPP: none done */
static int walk_batched(struct tk_cpu *c, struct bpf_state *st, struct tk_stacks *t,
			bool (*take)(const struct bpf_state *, __u32, bool), bool all, bool del,
			struct cpu_stack *ks, struct cpu_stack *us)
{
	int fds[2] = { bpf_map__fd(st->skel->maps.counts), bpf_map__fd(st->skel->maps.offcounts) };
	int sfds[2] = { bpf_map__fd(st->skel->maps.kstacks), bpf_map__fd(st->skel->maps.ustacks) };
	struct take_ctx tc = { .st = st, .take = take, .all = all };
	struct tk_cpu_drain d;
	int err, side;
	size_t i;

	err = tk_cpu_drain__read(&d, fds[0], st->off_cpu ? fds[1] : -1, sfds[0], sfds[1],
				 take_epoch, &tc, del && all);
	for (side = 0; !err && side < 2; side++) {
		for (i = 0; !err && i < d.keys[side].n; i++) {
			const struct cpu_key *key = (const struct cpu_key *)d.keys[side].v + i;
			const void *val = (const char *)d.vals[side].v + i * d.vals[side].sz;
			struct cpu_off_val ov = { 0 };
			const __u64 *kips, *uips;
			int nk, nu;
			__u64 n = 0;

			if (side)
				memcpy(&ov, val, sizeof(ov));
			else
				memcpy(&n, val, sizeof(n));
			nk = tk_cpu_drain__stack(&d, 0, key->kstack, key->epoch, &kips);
			nu = tk_cpu_drain__stack(&d, 1, key->ustack, key->epoch, &uips);
			c->drain_missing += (nk < 0) + (nu < 0);
			c->drain_entries++;
			err = side && held_wait(c, key) ? 0 :
			      add_key(t, key, kips, nk < 0 ? 0 : nk, uips, nu < 0 ? 0 : nu,
				      side ? ov.ns : n, ov.n, side);
		}
		if (!err && del)
			tk_cpu_drain__delete(&d, fds[side], d.keys[side].v, d.keys[side].n,
					     d.keys[side].sz);
	}
	/* threads still switched out at the end: their wait so far */
	if (!err && del && st->off_cpu && all)
		err = pending_waits(c, st, t, ks, us);
	/* then the stacks of those epochs: every count naming them is gone */
	for (side = 0; !err && del && side < 2; side++)
		tk_cpu_drain__delete(&d, sfds[side], d.skeys[side].v, d.skeys[side].n,
				     d.skeys[side].sz);
	c->drain_calls += d.calls;
	tk_cpu_drain__free(&d);
	return err;
}

/* bpf_map_get_next_key, counted in c->drain_calls */
static int next_key(struct tk_cpu *c, int fd, const void *key, void *next)
{
	c->drain_calls++;
	return bpf_map_get_next_key(fd, key, next);
}

/*
 * Add the counts of the epochs @take selects to @t; with @del, delete them
 * and their stacks from the maps. A count whose stack is not there any more
 * (a sample that wrote after its epoch was drained: not seen here, but
 * counted if it happens) keeps its sample, without that side's frames.
 * The off-CPU counts go the same way (their waits re-homed first); at the
 * end (@all), the waits still going on are counted until now.
 */
static int walk_counts(struct tk_cpu *c, struct bpf_state *st, struct tk_stacks *t,
		       bool (*take)(const struct bpf_state *, __u32, bool), bool all, bool del)
{
	int counts_fd = bpf_map__fd(st->skel->maps.counts);
	int offcounts_fd = bpf_map__fd(st->skel->maps.offcounts);
	int kstacks_fd = bpf_map__fd(st->skel->maps.kstacks);
	int ustacks_fd = bpf_map__fd(st->skel->maps.ustacks);
	struct keys gone = { .sz = sizeof(struct cpu_key) };
	struct keys sgone = { .sz = sizeof(struct cpu_stack_key) };
	struct cpu_key key, next;
	struct cpu_stack_key sk, snext;
	struct cpu_stack *ks, *us;
	bool first = true;
	int err = 0, fd, side;

	ks = malloc(sizeof(*ks));
	us = malloc(sizeof(*us));
	if (!ks || !us) {
		err = -ENOMEM;
		goto out;
	}
	if (st->off_cpu && del)
		rehome_waits(c, st, take, all);
	if (!st->one_by_one) {
		err = walk_batched(c, st, t, take, all, del, ks, us);
		c->drain_batched = err != -EOPNOTSUPP;
		if (c->drain_batched)
			goto out;
		st->one_by_one = true;	/* no batch commands here: nothing was read */
		c->drain_batched = false;
		err = 0;
	}
	for (side = 0; side < (st->off_cpu ? 2 : 1); side++) {
		fd = side ? offcounts_fd : counts_fd;
		first = true;
		while (!next_key(c, fd, first ? NULL : &key, &next)) {
			bool kmiss = false, umiss = false;
			struct cpu_off_val ov = { 0 };
			uint32_t nk, nu;
			__u64 n = 0;

			first = false;
			key = next;
			if (!take(st, key.epoch, all))
				continue;
			c->drain_calls++;
			if (bpf_map_lookup_elem(fd, &key, side ? (void *)&ov : (void *)&n))
				continue;
			c->drain_entries++;
			c->drain_calls += (key.kstack != CPU_NO_STACK) + (key.ustack != CPU_NO_STACK);
			nk = lookup_stack(kstacks_fd, key.kstack, key.epoch, ks, &kmiss);
			nu = lookup_stack(ustacks_fd, key.ustack, key.epoch, us, &umiss);
			c->drain_missing += kmiss + umiss;
			err = side && held_wait(c, &key) ? 0 :
			      add_key(t, &key, ks->ips, nk, us->ips, nu, side ? ov.ns : n, ov.n,
				      side);
			if (!err && del)
				err = keys_push(&gone, &key);
			if (err)
				goto out;
		}
		if (del) {
			c->drain_calls += gone.n;
			keys_delete(fd, &gone);
		}
	}
	if (!del)
		goto out;
	/* threads still switched out at the end: their wait so far */
	if (st->off_cpu && all && (err = pending_waits(c, st, t, ks, us)))
		goto out;
	/* then the stacks of those epochs: every count naming them is gone */
	for (side = 0; side < 2; side++) {
		fd = side ? ustacks_fd : kstacks_fd;
		first = true;
		while (!next_key(c, fd, first ? NULL : &sk, &snext)) {
			first = false;
			sk = snext;
			if (take(st, sk.epoch, all) && (err = keys_push(&sgone, &sk)))
				goto out;
		}
		c->drain_calls += sgone.n;
		keys_delete(fd, &sgone);
	}
out:
	free(gone.v);
	free(sgone.v);
	free(ks);
	free(us);
	return err;
}

/* Move the epoch on and drain the old ones (@all: every epoch; sampling has stopped). */
static int drain(struct tk_cpu *c, struct bpf_state *st, bool all)
{
	if (!all) {
		st->epoch++;
		*(volatile __u32 *)&st->skel->bss->epoch = st->epoch;
	}
	st->next_drain_ns = tk_now_ns(CLOCK_MONOTONIC) + st->drain_ms * 1000000LL;
	/* after the final drain, c->stacks is the drained table */
	return walk_counts(c, st, st->drained ? st->drained : c->stacks, epoch_old, all, true);
}

/*
 * Map sizes for LIVE_INTERVALS drain intervals of samples on @nr_cpus CPUs at
 * the rate asked (every sample may bring a new count and two new stacks),
 * within the ceilings the object declares; where the ceiling is smaller the
 * interval is shorter, down to DRAIN_MS_MIN, and what still does not fit is
 * counted as lost (stack_map_full, count_map_full).
 */
static void size_maps(struct tk_cpu *c, struct bpf_state *st, int nr_cpus)
{
	struct bpf_map *maps[] = { st->skel->maps.kstacks, st->skel->maps.ustacks,
				   st->skel->maps.counts };
	uint64_t per_s = (uint64_t)(nr_cpus > 0 ? nr_cpus : 1) * c->opts.freq_hz, need;
	__u32 ceiling = UINT32_MAX, n;
	size_t i;

	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (bpf_map__max_entries(maps[i]) < ceiling)
			ceiling = bpf_map__max_entries(maps[i]);
	st->drain_ms = DRAIN_MS_MAX;
	if (per_s * LIVE_INTERVALS * DRAIN_MS_MAX / 1000 > ceiling)
		st->drain_ms = ceiling * 1000ULL / (per_s * LIVE_INTERVALS);
	if (st->drain_ms < DRAIN_MS_MIN)
		st->drain_ms = DRAIN_MS_MIN;
	if (getenv("TK_TEST_DRAIN_MS"))	/* tests: many drains in a short capture */
		st->drain_ms = atoi(getenv("TK_TEST_DRAIN_MS")) > 0 ?
			       atoi(getenv("TK_TEST_DRAIN_MS")) : st->drain_ms;
	need = per_s * LIVE_INTERVALS * st->drain_ms / 1000;
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		for (n = MAP_MIN_ENTRIES; n < need && n < bpf_map__max_entries(maps[i]); n *= 2)
			;
		if (n < bpf_map__max_entries(maps[i]))
			bpf_map__set_max_entries(maps[i], n);
	}
}

static void read_counters(struct tk_cpu *c, struct bpf_state *st)
{
	uint64_t sum[CPU_CNT__COUNT];

	tk_percpu__sum(st->skel->bss->counters, CPU_MAX_CPUS, CPU_CNT__COUNT, sum);
	c->samples = sum[CPU_CNT_SAMPLES];
	c->losses[TK_LOSS_RINGBUF] = sum[CPU_CNT_RINGBUF_FULL];
	c->losses[TK_LOSS_STACK_MAP_FULL] = sum[CPU_CNT_STACK_MAP_FULL];
	c->losses[TK_LOSS_COUNT_MAP_FULL] = sum[CPU_CNT_COUNT_MAP_FULL];
	/* samples of untracked processes are kept, under generation 0: maps may mismatch */
	c->losses[TK_LOSS_MAPS_MISSED] = c->maps_missed + sum[CPU_CNT_PROC_MAP_FULL];
	c->losses[TK_LOSS_STACK_ERRORS] = sum[CPU_CNT_STACK_ERRORS];
	c->losses[TK_LOSS_TRUNCATED] = sum[CPU_CNT_TRUNCATED];
	c->losses[TK_LOSS_FOLLOW_MAP_FULL] = tk_cpu_follow__pids_full(st->follow);
	c->losses[TK_LOSS_DRAIN_MISSING] = c->drain_missing;
	c->losses[TK_LOSS_PERF_LOST] = tk_cpu_mmaps__lost(st->mmaps);
	c->losses[TK_LOSS_OFF_START_FULL] = sum[CPU_CNT_OFF_START_FULL];
	c->losses[TK_LOSS_OFF_COUNT_FULL] = sum[CPU_CNT_OFF_COUNT_FULL];
	c->losses[TK_LOSS_OFF_SEED_RACED] = sum[CPU_CNT_OFF_SEED_RACED];
	c->losses[TK_LOSS_OFF_SEED_UNREAD] = c->seed_unread;
	c->losses[TK_LOSS_STACK_ERRORS] += sum[CPU_CNT_OFF_SEED_STACK];
	c->seeded = sum[CPU_CNT_OFF_SEEDED];
	if (st->off_cpu) {
		int i;

		c->off_switches = c->off_thinned = 0;
		for (i = 0; i < CPU_MAX_CPUS; i++) {
			c->off_switches += st->skel->bss->off_rates[i].switches;
			c->off_thinned += st->skel->bss->off_rates[i].thinned;
		}
	}
	if (st->unw) {
		tk_unw_bpf__sum(st->skel->bss->unw_counters, UNW_MAX_CPUS, c->unwind);
		tk_unw_bpf__stats(st->unw, &c->unw_info);
	}
}

static int open_cpu_clock(int cpu, int freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq,
		.freq = 1,
	};
	return tk_perf_event_open(&attr, -1, cpu, 0);
}

static void bpf_free(struct tk_cpu *c)
{
	struct bpf_state *st = c->priv;
	int i;

	if (!st)
		return;
	for (i = 0; i < st->nr_links; i++)
		bpf_link__destroy(st->links[i]);
	free(st->links);
	ring_buffer__free(st->rb);
	tk_unw_bpf__free(st->unw);
	tk_cpu_mmaps__free(st->mmaps);
	tk_cpu_follow__destroy(st->follow);
	cpu_sample_bpf__destroy(st->skel);
	tk_cpu_seed__free(c);
	tk_stacks__free(st->drained);
	if (st->cgroup_fd >= 0)
		close(st->cgroup_fd);
	free(st);
	c->priv = NULL;
}

/* Hash maps as this kernel allows them (core/kfeat.h), and the profile says what that cost. */
static void fit_maps(struct tk_cpu *c, struct bpf_object *obj)
{
	char cut[200];

	if (tk_kfeat__fit_maps(obj, cut, sizeof(cut)))
		snprintf(c->kernel_note, sizeof(c->kernel_note),
			 "this kernel (before 6.1) needs preallocated maps in perf_event programs: "
			 "fewer entries (%s); what does not fit is counted as lost", cut);
}

/* An offset from kernel BTF for the programs; 0 (the feature off) without it. */
static __u32 member_offset(const char *type, const char *member)
{
	int off = tk_kfeat__member_offset(type, member);

	return off > 0 ? off : 0;
}

/*
 * Off-CPU time: the kernel's BTF says how many arguments sched_switch passes
 * and, before 5.18 (no prev_state among them), where prev's state lives in
 * task_struct; the sampler alone needs no BTF.
 */
static int prepare_off_cpu(struct tk_cpu *c, struct bpf_state *st)
{
	int nargs = tk_kfeat__raw_tp_args("sched_switch"), state_off = 0, pid_off;

	if (nargs >= 3 && nargs < 4) {
		state_off = tk_kfeat__member_offset("task_struct", "__state");
		if (state_off < 0)
			state_off = tk_kfeat__member_offset("task_struct", "state");
	}
	if (nargs < 3 || state_off < 0) {
		snprintf(c->start_why, sizeof(c->start_why), "off-CPU time needs the kernel's BTF "
			 "(/sys/kernel/btf/vmlinux) for sched_switch and task_struct: %s",
			 nargs == -ENOENT || state_off == -ENOENT ? "it lacks them" :
			 "it cannot be read here");
		return -EOPNOTSUPP;
	}
	st->skel->rodata->task_state_off = state_off;
	st->skel->rodata->switch_has_state = nargs >= 4;
	st->skel->rodata->off_cpu_min_ns = c->opts.off_cpu_min_ns;
	/* per 10 ms window (bpf's OFF_WINDOW_NS): at least one */
	if (c->opts.off_cpu_stacks != TK_CPU_OFF_CPU_ALL) {
		uint32_t per_s = c->opts.off_cpu_stacks ? c->opts.off_cpu_stacks :
				 TK_CPU_OFF_CPU_STACKS_DEFAULT;

		st->skel->rodata->off_budget = per_s >= 100 ? per_s / 100 : 1;
	}
	st->off_cpu_min_ns = c->opts.off_cpu_min_ns;
	/* tp_btf, raw_tp where that was refused (load_sampler) or task_struct has no pid */
	pid_off = tk_kfeat__member_offset("task_struct", "pid");
	if (getenv("TK_TEST_OFF_RAW_TP") && !st->off_raw_why[0])	/* tests: the fallback */
		snprintf(st->off_raw_why, sizeof(st->off_raw_why), "TK_TEST_OFF_RAW_TP");
	if (pid_off > 0 && !st->off_raw_why[0]) {
		st->skel->rodata->task_pid_off = pid_off;
		bpf_program__set_autoload(st->skel->progs.off_switch_btf, true);
	} else {
		bpf_program__set_autoload(st->skel->progs.off_switch, true);
	}
	tk_cpu_seed__prepare(c, st->skel, bpf_program__autoload(st->skel->progs.off_switch_btf));
	st->off_cpu = true;
	snprintf(c->off_cpu_note, sizeof(c->off_cpu_note), "off-CPU time: sched_switch (%s%s%s), "
		 "stacks at switch-out, %s%s", pid_off > 0 && !st->off_raw_why[0] ? "tp_btf" :
		 "raw_tp", st->off_raw_why[0] ? ": tp_btf refused: " : "", st->off_raw_why,
		 nargs >= 4 ? "prev_state from the tracepoint" :
		 "prev's state from task_struct", c->opts.off_cpu_min_ns ? "; waits under "
		 "--off-cpu-min counted without stacks" : "");
	return 0;
}

/*
 * Open and load the sampler; with @mode not fp, with the CFI unwinder. In
 * auto mode a kernel that refuses the unwinder gets the sampler without it,
 * and the profile says why.
 */
static int load_sampler(struct tk_cpu *c, struct bpf_state *st, enum tk_unwind_mode mode)
{
	const struct tk_cpu_opts *o = &c->opts;
	struct tk_unw_bpf_opts uo = {
		.mode = o->kernel_only ? TK_UNWIND_FP : mode,
		.rows = tk_unw__rows_for(o->unwind_mem),
		.procs = o->nr_pids ? 64 + 4 * o->nr_pids : 1024,
		.prog_type = BPF_PROG_TYPE_PERF_EVENT,
	};
	char why[200];
	int err;

	st->skel = cpu_sample_bpf__open();
	if (!st->skel)
		return -errno;
	st->skel->rodata->filter_pids = o->nr_pids > 0;
	/* not read without -p: no buckets for it */
	if (!o->nr_pids)
		bpf_map__set_max_entries(st->skel->maps.pids, 1);
	st->skel->rodata->filter_cgroup = o->cgroup != NULL;
	st->skel->rodata->kernel_stacks = !o->user_only;
	st->skel->rodata->user_stacks = !o->kernel_only;
	st->skel->rodata->self_tgid = getpid();
	st->skel->rodata->task_signal_off = member_offset("task_struct", "signal");
	st->skel->rodata->signal_live_off = member_offset("signal_struct", "live");
	if (o->off_cpu) {
		err = prepare_off_cpu(c, st);
		if (err)
			return err;
	} else {
		/* not used: as small as a map may be (offstart is preallocated) */
		bpf_map__set_max_entries(st->skel->maps.offstart, 1);
		bpf_map__set_max_entries(st->skel->maps.offcounts, 1);
	}
	size_maps(c, st, c->nr_cpus);
	if (st->off_cpu)
		bpf_map__set_max_entries(st->skel->maps.offcounts,
					 bpf_map__max_entries(st->skel->maps.counts));
	fit_maps(c, st->skel->obj);
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(st->skel);

		err = tk_unw_bpf__prepare(&v, &uo, why, sizeof(why));
		if (err) {
			snprintf(c->unwind_note, sizeof(c->unwind_note), "unwinding: %s", why);
			return err;
		}
		if (why[0])
			snprintf(c->unwind_note, sizeof(c->unwind_note),
				 "unwinding: frame pointers only: %s", why);
		/* tests: a kernel that refuses the task iterator (before 5.8, no BTF for it) */
		if (getenv("TK_TEST_OFF_SEED_REFUSED") &&
		    bpf_program__autoload(st->skel->progs.off_seed))
			err = -EINVAL;
		else
			err = cpu_sample_bpf__load(st->skel);
		if (!err)
			err = tk_unw_bpf__open(&v, &st->unw);
	}
	if (err && st->off_cpu && bpf_program__autoload(st->skel->progs.off_seed)) {
		/* the same object without the seeds, and the profile says what is not seen */
		snprintf(c->seed_why, sizeof(c->seed_why), "this kernel refused the task "
			 "iterator (%s)", strerror(-err));
		tk_unw_bpf__free(st->unw);
		st->unw = NULL;
		cpu_sample_bpf__destroy(st->skel);
		st->skel = NULL;
		return load_sampler(c, st, mode);
	}
	if (err && st->off_cpu && bpf_program__autoload(st->skel->progs.off_switch_btf)) {
		/* the same object with off-CPU time through raw_tp, and the profile says why */
		snprintf(st->off_raw_why, sizeof(st->off_raw_why), "%s", strerror(-err));
		tk_unw_bpf__free(st->unw);
		st->unw = NULL;
		cpu_sample_bpf__destroy(st->skel);
		st->skel = NULL;
		return load_sampler(c, st, mode);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(st->skel);

		if (tk_unw_bpf__refused(&v, uo.mode, err, c->unwind_note,
					sizeof(c->unwind_note))) {
			tk_unw_bpf__free(st->unw);
			st->unw = NULL;
			cpu_sample_bpf__destroy(st->skel);
			st->skel = NULL;
			/* tp_btf may not have been what failed: tried again without the unwinder */
			st->off_raw_why[0] = '\0';
			c->seed_why[0] = '\0';
			return load_sampler(c, st, TK_UNWIND_FP);
		}
	}
	c->unwinding = st->unw != NULL;
	return err;
}

static int bpf_start(struct tk_cpu *c)
{
	const struct tk_cpu_opts *o = &c->opts;
	struct bpf_state *st;
	int cpus[1024], nr_cpus, i, err;
	__u8 one = 1;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->cgroup_fd = -1;
	c->priv = st;
	st->drained = tk_stacks__new();
	if (!st->drained) {
		err = -ENOMEM;
		goto fail;
	}
	nr_cpus = tk_online_cpus(cpus, 1024);
	if (nr_cpus < 0) {
		err = nr_cpus;
		goto fail;
	}
	c->nr_cpus = nr_cpus;
	if (getenv("TK_TEST_CAPTURE_DELAY_MS"))
		st->capture_delay_us = atoi(getenv("TK_TEST_CAPTURE_DELAY_MS")) * 1000;
	/*
	 * Processes that come and go (the whole system, a command's children)
	 * may be gone before their maps are read: the MMAP2 records keep them.
	 * A -p process is read while it lives. Without the records, only names
	 * of such processes are lost, and counted (processes_without_maps).
	 */
	if (!o->nr_pids || o->follow_children) {
		st->mmaps = tk_cpu_mmaps__open(cpus, nr_cpus, getpid());
		if (!st->mmaps)
			snprintf(c->mmaps_note, sizeof(c->mmaps_note), "mappings of processes "
				 "gone before their maps were read are not known: the dummy perf "
				 "event for MMAP2 records failed (%s)", strerror(errno));
	}

	err = load_sampler(c, st, o->unwind);
	if (err)
		goto fail;
	if (o->follow_children && o->nr_pids) {
		st->follow = tk_cpu_follow__attach(bpf_map__fd(st->skel->maps.pids));
		if (!st->follow) {
			err = -errno;
			snprintf(c->start_why, sizeof(c->start_why), "cannot follow the command's "
				 "children (%s): the child's tgid needs task_struct in kernel BTF "
				 "or sched:sched_process_fork's record in a mounted tracefs",
				 strerror(-err));
			goto fail;
		}
	}
	for (i = 0; i < o->nr_pids; i++) {
		/* generation 0, as precapture() captures them (BPF's own are never 0) */
		struct cpu_proc gen0 = {};
		__u32 pid = o->pids[i];

		err = bpf_map__update_elem(st->skel->maps.pids, &pid, sizeof(pid), &one,
					   sizeof(one), BPF_ANY);
		if (!err)
			err = bpf_map__update_elem(st->skel->maps.procs, &pid, sizeof(pid), &gen0,
						   sizeof(gen0), BPF_NOEXIST);
		if (err)
			goto fail;
	}
	if (o->cgroup) {
		__u32 zero = 0;

		st->cgroup_fd = open(o->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st->cgroup_fd < 0) {
			err = -errno;
			goto fail;
		}
		err = bpf_map__update_elem(st->skel->maps.cgroup_map, &zero, sizeof(zero),
					   &st->cgroup_fd, sizeof(st->cgroup_fd), BPF_ANY);
		if (err)
			goto fail;
	}
	err = cpu_sample_bpf__attach(st->skel);
	if (err)
		goto fail;
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.events), handle_event, c, NULL);
	if (!st->rb) {
		err = -errno;
		goto fail;
	}
	err = tk_unw_bpf__add_ring(st->unw, st->rb);
	if (err)
		goto fail;

	st->links = calloc(nr_cpus, sizeof(*st->links));
	if (!st->links) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < nr_cpus; i++) {
		int fd = open_cpu_clock(cpus[i], o->freq_hz);

		if (fd < 0) {
			err = fd;
			goto fail;
		}
		st->links[i] = bpf_program__attach_perf_event(st->skel->progs.cpu_sample, fd);
		if (!st->links[i]) {
			err = -errno;
			close(fd);
			goto fail;
		}
		st->nr_links++;
	}
	st->next_drain_ns = tk_now_ns(CLOCK_MONOTONIC) + st->drain_ms * 1000000LL;
	st->precapture = st->unw && o->nr_pids;
	if (st->off_cpu) {
		/* the waits going on now: their user stacks walk with the -p processes' entries */
		if (st->precapture)
			precapture(c, st);
		tk_cpu_seed__run(c, st->skel, st->unw, st->rb);
	}
	return 0;
fail:
	bpf_free(c);
	return err;
}

static int bpf_poll(struct tk_cpu *c, int timeout_ms)
{
	struct bpf_state *st = c->priv;
	int64_t t0;
	int err;

	if (st->precapture)
		precapture(c, st);
	t0 = tk_now_ns(CLOCK_MONOTONIC);
	err = ring_buffer__poll(st->rb, timeout_ms);
	/* every event from before t0 was in the ring then, and has been handled now */
	if (err >= 0)
		tk_cpu_mmaps__drained(st->mmaps, t0);
	if (st->mmaps && tk_cpu_mmaps__read(st->mmaps))
		return -ENOMEM;
	tk_unw_bpf__retry(st->unw, c->sym);
	if (tk_now_ns(CLOCK_MONOTONIC) >= st->next_drain_ns) {
		int derr = drain(c, st, false);

		if (derr)
			return derr;
	}
	read_counters(c, st);
	return err < 0 && err != -EINTR ? err : 0;
}

static bool epoch_live(const struct bpf_state *st, __u32 ep, bool all)
{
	return !epoch_old(st, ep, all);
}

/* c->stacks becomes everything so far: what was drained, and what the maps hold now. */
static int bpf_collect(struct tk_cpu *c)
{
	struct bpf_state *st = c->priv;
	struct tk_stacks *t;
	int err;

	ring_buffer__consume(st->rb);
	err = drain(c, st, false);
	read_counters(c, st);
	if (err)
		return err;
	t = tk_stacks__new();
	if (!t)
		return -ENOMEM;
	err = tk_stacks__add_diff(t, st->drained ? st->drained : c->stacks, NULL);
	if (!err)
		err = walk_counts(c, st, t, epoch_live, false, false);
	if (err) {
		tk_stacks__free(t);
		return err;
	}
	tk_stacks__free(c->stacks);
	c->stacks = t;
	return 0;
}

static bool epoch_not_current(const struct bpf_state *st, __u32 ep, bool all)
{
	return all || ep != st->epoch;
}

/*
 * A period ends (periods_only): the events so far are handled, the epoch
 * moves on, and every epoch before the new one goes into the period's
 * table. A sample that read the old epoch just before it moved is given
 * a millisecond to finish writing; one still slower stays in the maps and
 * goes with the next period's drains (its stack, if deleted first, is
 * counted in stacks_missing_at_drain).
 */
static int bpf_cut(struct tk_cpu *c)
{
	struct bpf_state *st = c->priv;
	struct tk_stacks *next = tk_stacks__new();
	int err;

	if (!next)
		return -ENOMEM;
	ring_buffer__consume(st->rb);
	st->epoch++;
	*(volatile __u32 *)&st->skel->bss->epoch = st->epoch;
	usleep(1000);
	st->next_drain_ns = tk_now_ns(CLOCK_MONOTONIC) + st->drain_ms * 1000000LL;
	err = walk_counts(c, st, st->drained, epoch_not_current, false, true);
	read_counters(c, st);
	if (err) {
		tk_stacks__free(next);
		return err;
	}
	tk_stacks__free(c->stacks);
	c->stacks = st->drained;
	st->drained = next;
	return 0;
}

static int bpf_drain(struct tk_cpu *c)
{
	struct bpf_state *st = c->priv;
	int i, err;

	/* stop sampling first, then take what the ring and the maps hold */
	for (i = 0; i < st->nr_links; i++)
		bpf_link__destroy(st->links[i]);
	st->nr_links = 0;
	bpf_link__destroy(st->skel->links.off_switch_btf);
	st->skel->links.off_switch_btf = NULL;
	bpf_link__destroy(st->skel->links.off_switch);
	st->skel->links.off_switch = NULL;
	ring_buffer__consume(st->rb);
	err = drain(c, st, true);
	read_counters(c, st);
	if (err)
		return err;
	/* the drained table is the whole run, and from now on c->stacks */
	if (st->drained) {
		tk_stacks__free(c->stacks);
		c->stacks = st->drained;
		st->drained = NULL;
	}
	return 0;
}

const struct tk_cpu_backend tk_cpu_backend_bpf = {
	.name = "bpf",
	.start = bpf_start,
	.poll = bpf_poll,
	.drain = bpf_drain,
	.collect = bpf_collect,
	.cut = bpf_cut,
	.free = bpf_free,
};

/*
 * What `tracekit cpu` would load here, loaded and closed (the capability
 * snapshot's bpf.load.cpu): the sampler as the defaults configure it, and
 * the fork follower a command needs. 0 and what was chosen in @msg, or a
 * negative errno and why.
 */
int tk_cpu_bpf__probe_load(char *msg, size_t msg_sz)
{
	struct tk_cpu *c = calloc(1, sizeof(*c));
	struct bpf_state st = { .cgroup_fd = -1 };
	struct cpu_follow_bpf *follow = NULL;
	char off_why[256] = "";
	int err;

	if (!c)
		return -ENOMEM;
	c->opts.freq_hz = 99;
	c->opts.unwind = TK_UNWIND_AUTO;
	/* with the off-CPU program (--off-cpu) first; without it when that is what fails */
	c->opts.off_cpu = true;
	err = load_sampler(c, &st, TK_UNWIND_AUTO);
	if (err) {
		snprintf(off_why, sizeof(off_why), "%s", err == -EOPNOTSUPP ?
			 "it needs the kernel's BTF" : strerror(-err));
		tk_unw_bpf__free(st.unw);
		cpu_sample_bpf__destroy(st.skel);
		st = (struct bpf_state){ .cgroup_fd = -1 };
		memset(c, 0, sizeof(*c));
		c->opts.freq_hz = 99;
		c->opts.unwind = TK_UNWIND_AUTO;
		err = load_sampler(c, &st, TK_UNWIND_AUTO);
	}
	if (err) {
		snprintf(msg, msg_sz, "the perf_event sampler does not load: %s%s%s",
			 strerror(-err), c->unwind_note[0] ? "; " : "", c->unwind_note);
		goto out;
	}
	follow = tk_cpu_follow__attach(bpf_map__fd(st.skel->maps.pids));
	snprintf(msg, msg_sz, "user stacks by %s; a command's children %s%s; %s%s%s%s",
		 st.unw ? "CFI rows in the kernel" : "frame pointer",
		 follow ? "followed" : "not followable (--backend auto then takes perf)",
		 c->kernel_note[0] ? "; maps preallocated (smaller)" : "",
		 off_why[0] ? "no off-CPU time by BPF (--off-cpu takes the perf backend): " :
		 st.off_raw_why[0] ? "off-CPU time (--off-cpu) by sched_switch (raw_tp; tp_btf "
		 "refused)" : "off-CPU time (--off-cpu) by sched_switch (tp_btf)", off_why,
		 off_why[0] ? "" : c->seed_why[0] ? ", waits begun before the capture not seen: " :
		 ", waits begun before the capture by a task iterator",
		 off_why[0] ? "" : c->seed_why);
out:
	if (follow)
		tk_cpu_follow__destroy(follow);
	tk_unw_bpf__free(st.unw);
	cpu_sample_bpf__destroy(st.skel);
	free(c);
	return err;
}
