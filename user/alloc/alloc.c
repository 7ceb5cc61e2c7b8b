// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Allocation profiling sessions (alloc.h): the backend and hook choice, the
 * command tracekit starts, and the tables every backend feeds.
 *
 * Tables: distinct stacks (per process, exec generation, kind and exact
 * frames, so no two are merged) with the weighted sums of what was allocated
 * at them, and the live table of recorded objects (process, generation,
 * address → stack, size, weight, time). Sampled allocations count with their
 * unbiased weight (alloc_weight.c). In-use figures are the live table's at
 * the moment the profile is built, less what is younger than --min-age. A
 * generation that ends (an exec, the process's end) takes its objects out of
 * the live table, counted: nobody holds them any more.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <elf.h>
#include <unistd.h>

#include "alloc/agent_proto.h"
#include "alloc/alloc_int.h"
#include "alloc/alloc_syms.h"
#include "core/fsutil.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/opts.h"
#include "core/internal.h"
#include "profile/profile_locs.h"
#include "core/spawn_held.h"

#define MIN_CAP 1024

static const char *const loss_names[TK_ALOSS__COUNT] = {
	[TK_ALOSS_RINGBUF] = "ringbuf_reserve_failed",
	[TK_ALOSS_STACK_MAP_FULL] = "stack_map_full",
	[TK_ALOSS_LIVE_MAP_FULL] = "live_map_full",
	[TK_ALOSS_PENDING_MAP_FULL] = "pending_map_full",
	[TK_ALOSS_TRUNCATED] = "truncated_stacks",
	[TK_ALOSS_STACK_ERRORS] = "stack_errors",
	[TK_ALOSS_UNSYMBOLIZED] = "unsymbolized_frames",
	[TK_ALOSS_UNKNOWN_FREE] = "frees_of_unknown_objects",
	[TK_ALOSS_LIVE_REPLACED] = "replaced_live_objects",
	[TK_ALOSS_PROC_MAP_FULL] = "proc_map_full",
	[TK_ALOSS_FOLLOW_MAP_FULL] = "follow_map_full",
	[TK_ALOSS_BRK_MAP_FULL] = "brk_map_full",
	[TK_ALOSS_RELEASED_EXEC] = "released_at_exec",
	[TK_ALOSS_RELEASED_EXEC_BYTES] = "released_at_exec_bytes",
	[TK_ALOSS_RELEASED_EXIT] = "released_at_exit",
	[TK_ALOSS_RELEASED_EXIT_BYTES] = "released_at_exit_bytes",
};

/* Counters that say what happened to objects, not what was lost (tk_alloc__stats) */
static bool is_loss(int l)
{
	return l < TK_ALOSS_RELEASED_EXEC || l > TK_ALOSS_RELEASED_EXIT_BYTES;
}

const char *tk_alloc_loss__name(enum tk_alloc_loss l)
{
	return l < TK_ALOSS__COUNT ? loss_names[l] : "unknown";
}

/* ---- tables ------------------------------------------------------------------------ */

/* Stack kinds: allocations, and the growth kinds after them */
#define KIND_ALLOC 0
#define KIND_GROWTH(k) (1 + (k))

struct astack {
	uint64_t hash;
	uint32_t pid;
	uint32_t gen;			/* pid's exec generation: the image of its frames */
	uint32_t tid;			/* the first thread seen */
	uint32_t kind;
	uint32_t nr;
	bool truncated;
	char comm[16];
	uint64_t *ips;			/* leaf first */
	double alloc_objs;		/* weighted */
	double alloc_bytes;
	double inuse_objs;		/* filled while building */
	double inuse_bytes;
};

struct live_obj {
	uint64_t ptr;			/* key, with pid and gen; never 0 */
	uint32_t pid;
	uint32_t gen;
	uint32_t stack;			/* index into stacks */
	uint64_t size;
	uint64_t ts_ns;
	double weight;
};

struct tk_alloc_live {
	struct astack *stacks;		/* dense */
	size_t nr_stacks, cap_stacks;
	struct tk_hashidx index;	/* over stacks */
	struct tk_hashmap live;		/* struct live_obj by (ptr, pid, gen) */
	uint64_t allocs, frees;
};

/* What a stack is looked up by. */
struct stack_key {
	uint64_t hash;
	uint32_t pid;
	uint32_t gen;
	uint32_t kind;
	const uint64_t *ips;
	uint32_t nr;
};

static inline bool stack_eq(const void *ctx, size_t i, const void *key)
{
	const struct astack *s = &((const struct tk_alloc_live *)ctx)->stacks[i];
	const struct stack_key *k = key;

	return s->hash == k->hash && s->pid == k->pid && s->gen == k->gen && s->kind == k->kind &&
	       s->nr == k->nr &&
	       !memcmp(s->ips, k->ips, k->nr * sizeof(*k->ips));
}

/* The stack's index, added when new; -ENOMEM. */
static long stack_get(struct tk_alloc_live *t, uint32_t pid, uint32_t gen, uint32_t tid,
		      uint32_t kind, const char *comm, const uint64_t *ips, uint32_t nr,
		      bool truncated)
{
	struct stack_key k;
	struct astack *s;
	size_t i;
	int err;

	if (nr > TK_ALLOC_MAX_FRAMES) {
		nr = TK_ALLOC_MAX_FRAMES;
		truncated = true;
	}
	k = (struct stack_key){ .pid = pid, .gen = gen, .kind = kind, .ips = ips, .nr = nr };
	k.hash = tk_hash__words(((uint64_t)pid << 32 | kind) ^ tk_hash__mix64(gen), ips, nr);
	i = tk_hashidx__find(&t->index, k.hash, stack_eq, t, &k);
	if (i != TK_HASHIDX_NONE) {
		t->stacks[i].truncated |= truncated;
		return i;
	}
	if (t->nr_stacks >= UINT32_MAX - 1)
		return -E2BIG;
	if (t->nr_stacks == t->cap_stacks) {
		size_t cap = t->cap_stacks ? t->cap_stacks * 2 : MIN_CAP;
		struct astack *n = realloc(t->stacks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->stacks = n;
		t->cap_stacks = cap;
	}
	s = &t->stacks[t->nr_stacks];
	memset(s, 0, sizeof(*s));
	s->ips = malloc(nr ? nr * sizeof(*ips) : 1);
	if (!s->ips)
		return -ENOMEM;
	err = tk_hashidx__add(&t->index, k.hash, t->nr_stacks);
	if (err) {
		free(s->ips);
		return err;
	}
	memcpy(s->ips, ips, nr * sizeof(*ips));
	s->hash = k.hash;
	s->pid = pid;
	s->gen = gen;
	s->tid = tid;
	s->kind = kind;
	s->nr = nr;
	s->truncated = truncated;
	if (comm)
		snprintf(s->comm, sizeof(s->comm), "%s", comm);
	return t->nr_stacks++;
}

static uint64_t live_hash(uint32_t pid, uint32_t gen, uint64_t ptr)
{
	return tk_hash__mix64(ptr ^ (uint64_t)pid << 48 ^ (uint64_t)gen << 20);
}

static uint64_t live_rec_hash(const void *rec)
{
	const struct live_obj *o = rec;

	return live_hash(o->pid, o->gen, o->ptr);
}

static inline bool live_match(const void *ctx, const void *rec, const void *key)
{
	const struct live_obj *o = rec, *k = key;

	return o->ptr == k->ptr && o->pid == k->pid && o->gen == k->gen;
}

static struct tk_alloc_live *live_new(void)
{
	struct tk_alloc_live *t = calloc(1, sizeof(*t));

	if (t)
		t->live = (struct tk_hashmap)TK_HASHMAP_INIT(struct live_obj, live_rec_hash);
	return t;
}

static void live_free(struct tk_alloc_live *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_stacks; i++)
		free(t->stacks[i].ips);
	free(t->stacks);
	tk_hashidx__free(&t->index);
	tk_hashmap__free(&t->live);
	free(t);
}

/* ---- records from the backends ------------------------------------------------------- */

/*
 * Capture (@pid, @gen)'s maps now (again), and tell the backend (its
 * unwinder). Not when the backend knows that generation is over: /proc would
 * give the next image's maps (or another process's), and names from them
 * would be wrong; its frames stay unsymbolized, and are counted so.
 */
static void capture(struct tk_alloc *a, uint32_t pid, uint32_t gen)
{
	if (a->gen_over && a->gen_over(a, pid, gen))
		return;
	if (!tk_symbolizer__capture(a->sym, pid, gen) && a->captured)
		a->captured(a, pid, gen);
}

static void capture_once(struct tk_alloc *a, uint32_t pid, uint32_t gen)
{
	if (!tk_symbolizer__has(a->sym, pid, gen))
		capture(a, pid, gen);
}

int tk_alloc__on_alloc(struct tk_alloc *a, const struct tk_alloc_rec *r)
{
	struct tk_alloc_live *t = a->live;
	struct live_obj *o, key;
	bool found;
	double w;
	long si;

	capture_once(a, r->pid, r->gen);
	si = stack_get(t, r->pid, r->gen, r->tid, KIND_ALLOC, r->comm, r->ips, r->nr_ips,
		       r->truncated);
	if (si < 0)
		return si;
	w = tk_alloc__weight(r->size, a->sample_bytes);
	t->stacks[si].alloc_objs += w;
	t->stacks[si].alloc_bytes += w * r->size;
	t->allocs++;
	/* an object whose free will not be seen would stay in use for ever */
	if (!r->ptr || r->untracked)
		return 0;
	/*
	 * An address handed out again replaces what it held: that free was not
	 * seen (it came before us, or was lost).
	 */
	key.ptr = r->ptr;
	key.pid = r->pid;
	key.gen = r->gen;
	o = tk_hashmap__insert(&t->live, live_hash(r->pid, r->gen, r->ptr), live_match, NULL, &key,
			       &found);
	if (!o)
		return -errno;
	*o = (struct live_obj){ .ptr = r->ptr, .pid = r->pid, .gen = r->gen, .stack = si,
				.size = r->size, .ts_ns = r->ts_ns, .weight = w };
	return 0;
}

int tk_alloc__on_free(struct tk_alloc *a, uint32_t pid, uint32_t gen, uint64_t ptr)
{
	struct live_obj key = { .ptr = ptr, .pid = pid, .gen = gen }, *o;

	o = tk_hashmap__find(&a->live->live, live_hash(pid, gen, ptr), live_match, NULL, &key);
	if (!o) {
		/* the backend sends frees of objects it knew: this one's allocation never came */
		a->losses[TK_ALOSS_UNKNOWN_FREE]++;
		return 0;
	}
	tk_hashmap__del(&a->live->live, o);
	a->live->frees++;
	return 0;
}

int tk_alloc__on_growth(struct tk_alloc *a, enum tk_growth_kind kind, uint32_t pid, uint32_t gen,
			uint32_t tid, const char *comm, const uint64_t *ips, uint32_t nr_ips,
			bool truncated, uint64_t count, uint64_t bytes)
{
	long si;

	if (kind >= TK_GROWTH__COUNT)
		return -EINVAL;
	capture_once(a, pid, gen);
	si = stack_get(a->live, pid, gen, tid, KIND_GROWTH(kind), comm, ips, nr_ips, truncated);
	if (si < 0)
		return si;
	a->live->stacks[si].alloc_objs += count;
	a->live->stacks[si].alloc_bytes += bytes;
	a->growth_events += count;
	return 0;
}

void tk_alloc__add_loss(struct tk_alloc *a, enum tk_alloc_loss l, uint64_t n)
{
	if (l < TK_ALOSS__COUNT)
		a->losses[l] += n;
}

void tk_alloc__refresh_maps(struct tk_alloc *a, uint32_t pid, uint32_t gen)
{
	capture(a, pid, gen);
}

size_t tk_alloc__release(struct tk_alloc *a, uint32_t pid, uint32_t gen, enum tk_alloc_end why,
			 tk_alloc_drop_fn drop)
{
	double *objs = why == TK_ALLOC_END_EXEC ? &a->released[0].objs : &a->released[1].objs;
	double *bytes = why == TK_ALLOC_END_EXEC ? &a->released[0].bytes : &a->released[1].bytes;
	struct tk_hashmap *live = &a->live->live;
	struct live_obj *o;
	size_t i = 0, n = 0;

	/*
	 * The target's own exit ends the capture: what it held then is what it
	 * never freed, the leak at exit that LeakSanitizer and jemalloc's
	 * prof_leak report, so it stays in use. Every other end (an exec, a
	 * child's exit) lets a capture go on for hours: released, or it would
	 * be "in use" for ever.
	 */
	if (why == TK_ALLOC_END_EXIT && a->pid > 0 && pid == (uint32_t)a->pid)
		return 0;
	while ((o = tk_hashmap__next(live, &i))) {
		if (o->pid != pid || o->gen != gen)
			continue;
		*objs += o->weight;
		*bytes += o->weight * o->size;
		if (drop)
			drop(a, pid, gen, o->ptr);
		tk_hashmap__del(live, o);
		n++;
		/* a deletion may move a later record into this slot: look at it again */
		i--;
	}
	return n;
}

/* ---- the session --------------------------------------------------------------------- */

int tk_alloc__new_bare(const struct tk_alloc_opts *opts, const struct tk_alloc_backend *be,
		       struct tk_alloc **out)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so) };
	struct tk_alloc *a;
	int err;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if (TK_OPTS_COPY(&a->opts, opts)) {
		free(a);
		return -EINVAL;
	}
	a->be = be;
	a->release_fd = a->exec_err_fd = a->agent_fd = -1;
	a->pid = a->opts.pid;
	a->sample_bytes = a->opts.mode == TK_ALLOC_MODE_SAMPLED ?
		(a->opts.sample_bytes ? a->opts.sample_bytes : TK_ALLOC_DEFAULT_SAMPLE_BYTES) : 0;
	a->live = live_new();
	so.proc_root = a->opts.proc_root;
	so.unwind_tables = a->opts.unwind != TK_UNWIND_FP;
	if (!a->live || (err = tk_symbolizer__new(&so, &a->sym))) {
		a->be = NULL;
		tk_alloc__free(a);
		return -ENOMEM;
	}
	a->start_ns = tk_now_ns(CLOCK_REALTIME);
	a->start_mono_ns = tk_now_ns(CLOCK_MONOTONIC);
	*out = a;
	return 0;
}

int tk_alloc__open(const struct tk_alloc_opts *opts, const struct tk_caps *caps,
		   struct tk_alloc **out, char *why, size_t why_sz)
{
	const char *step = "";
	struct tk_alloc *a;
	char dummy[8];
	int err;

	if (!why || !why_sz) {
		why = dummy;
		why_sz = sizeof(dummy);
	}
	why[0] = '\0';
	*out = NULL;
	if (!opts || !caps || (!opts->pid) == (!opts->argv) || opts->mode > TK_ALLOC_MODE_GROWTH) {
		snprintf(why, why_sz, "give a process or a command");
		return -EINVAL;
	}
	err = tk_alloc__new_bare(opts, NULL, &a);
	if (err)
		return err;
	a->caps = caps;
	tk_alloc__find_preload_dir(a);
	step = "choosing a backend";
	err = tk_alloc__choose(a, caps, why, why_sz);
	if (err)
		goto fail;
	if (a->opts.argv) {
		step = "preparing the command's environment";
		if (a->be->prepare_env && (err = a->be->prepare_env(a, why, why_sz)))
			goto fail;
		step = "starting the command";
		err = tk_alloc__start_command(a, why, why_sz);
		if (err)
			goto fail;
	}
	step = "opening the backend";
	err = a->be->open(a, why, why_sz);
	if (err)
		goto fail;
	*out = a;
	return 0;
fail:
	if (!why[0])
		snprintf(why, why_sz, "%s %s: %s", step, a->be ? a->be->name : "", strerror(-err));
	tk_alloc__free(a);
	return err;
}

/* The agent holds the command after ld.so: hook its allocator, then let it go. */
static int agent_hold(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct pollfd pfd = { .fd = a->agent_fd, .events = POLLIN };
	char c = 0;
	int err, n;

	do {
		n = poll(&pfd, 1, 30000);
	} while (n < 0 && errno == EINTR);
	if (n <= 0 || read(a->agent_fd, &c, 1) != 1 || c != TK_AGENT_HELD) {
		snprintf(why, why_sz, "'%s' did not load %s (a setuid program, or one that "
			 "clears LD_PRELOAD?)", a->opts.argv[0], TK_PRELOAD_AGENT);
		return -ETIMEDOUT;
	}
	a->after_exec = true;
	err = a->be->start(a, why, why_sz);
	c = TK_AGENT_GO;
	/* a command gone meanwhile is an error, not a SIGPIPE to the program embedding us */
	if (send(a->agent_fd, &c, 1, MSG_NOSIGNAL) != 1 && !err)
		err = -EPIPE;
	return err;
}

int tk_alloc__start(struct tk_alloc *a, char *why, size_t why_sz)
{
	char dummy[8];
	int err;

	if (!why || !why_sz) {
		why = dummy;
		why_sz = sizeof(dummy);
	}
	why[0] = '\0';
	if (a->started)
		return -EALREADY;
	if (a->pid && !a->child)
		capture(a, a->pid, 0);
	a->start_ns = tk_now_ns(CLOCK_REALTIME);
	a->start_mono_ns = tk_now_ns(CLOCK_MONOTONIC);
	err = a->be->start(a, why, why_sz);
	if (err)
		return err;
	a->started = true;
	if (a->child > 0) {
		err = tk_spawn_release(&a->release_fd, &a->exec_err_fd);
		if (err) {
			snprintf(why, why_sz, "cannot run '%s': %s", a->opts.argv[0],
				 strerror(err > 0 ? err : -err));
			return err > 0 ? -err : err;
		}
		if (a->attach_after_exec && (err = agent_hold(a, why, why_sz)))
			return err;
		if (a->hook != TK_ALLOC_HOOK_PRELOAD)
			capture_once(a, a->child, 0);
		a->running = true;
	}
	return 0;
}

void tk_alloc__set_jit_ask(struct tk_alloc *a, bool on, tk_sym_note_fn note, void *ctx)
{
	tk_symbolizer__set_jit_ask(a->sym, on, note, ctx);
}

int tk_alloc__poll(struct tk_alloc *a, int timeout_ms)
{
	int err = a->be->poll(a, timeout_ms);

	/* JIT code named while its process lives */
	if (a->sym)
		tk_symbolizer__tick(a->sym);
	return err == -EINTR ? 0 : err;
}

void tk_alloc__stats(const struct tk_alloc *a, struct tk_alloc_stats *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->allocs = a->live->allocs;
	st->frees = a->live->frees;
	st->live = a->live->live.used;
	st->growth_events = a->growth_events;
	st->calls = a->calls;
	for (i = 0; i < TK_ALOSS__COUNT; i++)
		if (is_loss(i))
			st->lost += a->losses[i];
}

const char *tk_alloc__backend(const struct tk_alloc *a)
{
	return a->be ? a->be->name : "none";
}

const char *tk_alloc__describe(const struct tk_alloc *a)
{
	return a->describe;
}

int tk_alloc__pid(const struct tk_alloc *a)
{
	return a->pid;
}

static const char *const growth_frames[TK_GROWTH__COUNT] = {
	[TK_GROWTH_FAULT] = "[page fault]",
	[TK_GROWTH_BRK] = "[brk]",
	[TK_GROWTH_MMAP] = "[mmap]",
};

static int64_t to_i64(double v)
{
	if (v >= 9.2e18)
		return INT64_MAX;
	return v > 0 ? (int64_t)llround(v) : 0;
}

static const char *mode_name(enum tk_alloc_mode m)
{
	return m == TK_ALLOC_MODE_FULL ? "full" : m == TK_ALLOC_MODE_GROWTH ? "growth" : "sampled";
}

/* The profile of what the tables hold now. */
static int build_profile(struct tk_alloc *a, uint64_t min_age_ns, struct tk_profile **out)
{
	struct tk_alloc_live *t = a->live;
	int64_t now = tk_now_ns(CLOCK_MONOTONIC);
	struct tk_profile *p;
	struct tk_locs *fr = NULL;
	uint64_t *locs = NULL, hidden = 0;
	struct live_obj *o;
	size_t i;
	int err = -ENOMEM, l;

	p = tk_profile__new_heap(a->be->name);
	if (!p)
		return -ENOMEM;
	p->period = a->sample_bytes ? (int64_t)a->sample_bytes : 1;
	p->time_nanos = a->start_ns;
	p->duration_nanos = now - a->start_mono_ns;
	/* the profiled program's file first in pprof ("File:"), as it was when captured */
	if (a->pid > 0 && tk_symbolizer__exe(a->sym, a->pid))
		err = tk_profile__set_main_file(p, tk_symbolizer__exe(a->sym, a->pid));
	else
		err = tk_profile__set_main_pid(p, a->opts.proc_root, a->pid);
	if (err)
		goto out;
	err = -ENOMEM;
	fr = tk_locs__new(a->sym, p);
	locs = malloc((TK_ALLOC_MAX_FRAMES + 1) * sizeof(*locs));
	if (!fr || !locs)
		goto out;

	for (i = 0; i < t->nr_stacks; i++)
		t->stacks[i].inuse_objs = t->stacks[i].inuse_bytes = 0;
	i = 0;
	while ((o = tk_hashmap__next(&t->live, &i))) {
		if (min_age_ns && (int64_t)(now - o->ts_ns) < (int64_t)min_age_ns) {
			hidden++;
			continue;
		}
		t->stacks[o->stack].inuse_objs += o->weight;
		t->stacks[o->stack].inuse_bytes += o->weight * o->size;
	}
	for (i = 0; i < t->nr_stacks; i++) {
		struct astack *s = &t->stacks[i];
		int64_t v[TK_PROFILE_MAX_VALUES];
		uint32_t n = 0, f;

		if (s->kind == KIND_ALLOC) {
			v[0] = to_i64(s->alloc_objs);
			v[1] = to_i64(s->alloc_bytes);
			v[2] = to_i64(s->inuse_objs);
			v[3] = to_i64(s->inuse_bytes);
		} else {
			/* growth: faults make memory resident; brk and mmap reserve it */
			bool fault = s->kind == KIND_GROWTH(TK_GROWTH_FAULT);

			v[0] = to_i64(s->alloc_objs);
			v[1] = to_i64(s->alloc_bytes);
			v[2] = fault ? v[0] : 0;
			v[3] = fault ? v[1] : 0;
			locs[n] = tk_profile__location(p, 0, 0,
				tk_profile__function(p, growth_frames[s->kind - 1], NULL), false);
			if (!locs[n])
				goto out;
			n++;
		}
		if (!v[0] && !v[1] && !v[2] && !v[3])
			continue;
		for (f = 0; f < s->nr; f++) {
			/*
			 * Allocation stacks start at the return address into the
			 * allocator's caller; a page fault's at the faulting instruction.
			 */
			bool ret = s->kind == KIND_ALLOC || f > 0;

			err = tk_locs__user(fr, s->pid, s->gen, s->ips[f], ret, &locs[n++]);
			if (err)
				goto out;
		}
		err = tk_profile__add_sample(p, locs, n, v, s->pid, s->tid, s->comm);
		if (err)
			goto out;
	}
	a->losses[TK_ALOSS_UNSYMBOLIZED] = tk_locs__unsymbolized(fr);
	a->losses[TK_ALOSS_RELEASED_EXEC] = to_i64(a->released[0].objs);
	a->losses[TK_ALOSS_RELEASED_EXEC_BYTES] = to_i64(a->released[0].bytes);
	a->losses[TK_ALOSS_RELEASED_EXIT] = to_i64(a->released[1].objs);
	a->losses[TK_ALOSS_RELEASED_EXIT_BYTES] = to_i64(a->released[1].bytes);
	for (l = 0; l < TK_ALOSS__COUNT; l++)
		tk_profile__set_loss(p, loss_names[l], a->losses[l]);
	tk_locs__report_jit(p, a->sym, tk_locs__jit_unnamed(fr));
	if (a->be && !strcmp(a->be->name, "bpf")) {
		tk_unw__report(p, a->unwind, a->unwinding ? &a->unw_info : NULL);
		tk_unw_table__report(p, tk_symbolizer__unwind_over_limit(a->sym));
	}
	if (a->unwind_note[0])
		tk_profile__add_comment(p, "%s", a->unwind_note);
	if (a->kernel_note[0])
		tk_profile__add_comment(p, "%s", a->kernel_note);
	if (a->exit_note[0])
		tk_profile__add_comment(p, "%s", a->exit_note);
	tk_profile__add_comment(p, "tracekit alloc: mode %s, backend %s%s%s",
				mode_name(a->opts.mode), a->be->name, a->describe[0] ? ": " : "",
				a->describe);
	if (a->opts.mode == TK_ALLOC_MODE_SAMPLED)
		tk_profile__add_comment(p, "sampled: one allocation per %" PRIu64 " bytes on "
					"average; values are unbiased estimates", a->sample_bytes);
	else if (a->opts.mode == TK_ALLOC_MODE_GROWTH)
		tk_profile__add_comment(p, "growth: page faults (resident memory, in use), brk and "
					"mmap (address space, allocated only); releases are not "
					"seen");
	if (min_age_ns)
		tk_profile__add_comment(p, "in use: objects older than %.3g s only (%" PRIu64
					" younger ones left out)", min_age_ns / 1e9, hidden);
	*out = p;
	p = NULL;
	err = 0;
out:
	free(locs);
	tk_locs__free(fr);
	tk_profile__free(p);
	return err;
}

int tk_alloc__snapshot(struct tk_alloc *a, uint64_t min_age_ns, struct tk_profile **out)
{
	*out = NULL;
	if (a->be->build)
		return a->be->build(a, min_age_ns, false, out);
	return build_profile(a, min_age_ns, out);
}

int tk_alloc__finish(struct tk_alloc *a, uint64_t min_age_ns, struct tk_profile **out)
{
	int err;

	*out = NULL;
	if (!a->finished) {
		a->finished = true;
		err = a->be->drain(a);
		if (err)
			return err;
	}
	if (a->be->build)
		return a->be->build(a, min_age_ns, true, out);
	return build_profile(a, min_age_ns, out);
}

void tk_alloc__free(struct tk_alloc *a)
{
	int i;

	if (!a)
		return;
	if (a->be && a->be->free)
		a->be->free(a);
	if (a->child > 0 && !a->running) {
		/*
		 * Never released, or its start failed after (an exec error, no hold
		 * from the agent, no attach): it must not run untraced, and is
		 * reaped (no zombie). One that runs is the session core's to end.
		 */
		kill(a->child, SIGKILL);
		waitpid(a->child, NULL, 0);
	}
	if (a->release_fd >= 0)
		close(a->release_fd);
	if (a->exec_err_fd >= 0)
		close(a->exec_err_fd);
	if (a->agent_fd >= 0)
		close(a->agent_fd);
	for (i = 0; i < a->nr_env; i++)
		free(a->env[i]);
	live_free(a->live);
	tk_symbolizer__free(a->sym);
	free(a);
}
