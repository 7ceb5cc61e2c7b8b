// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * From raw stacks to the profile model: every frame becomes a location in a
 * mapping with a function. A frame the symbols do not cover is named
 * "basename+0xOFFSET" (its file offset) in its mapping; one in no known
 * mapping is "[unknown]"; a kernel frame kallsyms cannot name is
 * "[kernel]+0xADDRESS". Return addresses (every frame but the leaf) are
 * looked up one byte back, so a call that ends a function names that
 * function, but are stored as they are, as pprof expects.
 *
 * A frame seen again in the same process resolves from a cache keyed by
 * (pid, gen, address, leaf or not, kernel or not), sized once before the
 * build from an estimate of the distinct frames (tk_cpu_profile__frames):
 * grown by doubling, it held old and new slots at once four or five times
 * over (9.85 MiB first touched at the end of a busy whole-system capture).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "core/fsutil.h"
#include "core/grow.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile_locs.h"
#include "runtime/py.h"

#define F_USED 1u		/* always: a slot's first word is 0 only when empty */
#define F_KERNEL 2u
#define F_RETURN 4u		/* not the leaf: a return address */
#define F_UNSYM 8u		/* left as module+offset or unknown */
#define F_JIT 16u		/* and in JIT code: no perf map or jitdump names it */
#define F_KEY (F_KERNEL | F_RETURN)

struct loc_slot {
	uint32_t flags;
	uint32_t pid;
	uint64_t addr;
	uint32_t gen;
	uint32_t loc;		/* a location id (24-byte slots: one in 4G is plenty) */
};

struct tk_locs {
	struct tk_symbolizer *s;
	struct tk_profile *p;
	uint64_t unsymbolized;
	uint64_t jit_unnamed;		/* of those, frames of JIT code */
	uint64_t *locs;
	uint64_t short_loc;		/* the frame of off-CPU waits under the minimum */
	struct tk_hashmap cache;	/* struct loc_slot by (pid, gen, addr, flags & F_KEY) */
	uint64_t kernel_unknown;	/* mapping of kernel frames kallsyms cannot name */
};

static uint64_t slot_hash(uint32_t pid, uint32_t gen, uint64_t addr, uint32_t flags)
{
	return tk_hash__mix64(addr ^ ((uint64_t)pid << 32 | gen) * 0x9e3779b97f4a7c15ULL ^ flags);
}

static uint64_t loc_slot_hash(const void *rec)
{
	const struct loc_slot *s = rec;

	return slot_hash(s->pid, s->gen, s->addr, s->flags & F_KEY);
}

static bool loc_slot_match(const void *ctx, const void *rec, const void *key)
{
	const struct loc_slot *s = rec, *k = key;

	return s->addr == k->addr && s->pid == k->pid && s->gen == k->gen &&
	       (s->flags & F_KEY) == k->flags;
}

#define LOC_CACHE_INIT TK_HASHMAP_INIT(struct loc_slot, loc_slot_hash)

/* libstdc++'s demangler (C linkage; the C++ ABI's) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *tk_demangle(const char *name)
{
	int status = 0;
	char *plain;

	/* Itanium C++ ABI names; "_ZL..." (internal linkage) too */
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	plain = __cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(plain);
		return NULL;
	}
	return plain;
}

static int kernel_location(struct tk_locs *b, uint64_t addr, bool ret, uint64_t *loc,
			   bool *unsym)
{
	struct tk_sym_frame f;
	uint64_t mid, fid;
	char name[64];

	*unsym = !addr || tk_symbolizer__kernel(b->s, ret ? addr - 1 : addr, &f);
	if (*unsym) {
		if (!b->kernel_unknown)
			b->kernel_unknown = tk_profile__mapping(b->p, 0, 0, 0, "[kernel.kallsyms]",
								NULL);
		mid = b->kernel_unknown;
		snprintf(name, sizeof(name), "[kernel]+0x%" PRIx64, addr);
		fid = tk_profile__function(b->p, name, NULL);
	} else {
		mid = tk_profile__mapping(b->p, f.map_start, f.map_limit, 0, f.module, NULL);
		fid = tk_profile__function(b->p, f.function, NULL);
	}
	if (!mid || !fid)
		return -ENOMEM;
	*loc = tk_profile__location(b->p, mid, addr, fid, true);
	return *loc ? 0 : -ENOMEM;
}

int tk_cpu_profile__user_location(struct tk_profile *p, const struct tk_sym_frame *f, int err,
				  uint64_t addr, uint64_t look, uint64_t *loc)
{
	uint64_t mid = 0, fid;
	char name[320];

	if (f->module) {
		mid = tk_profile__mapping(p, f->map_start, f->map_limit, f->map_offset, f->module,
					  f->build_id);
		if (!mid)
			return -ENOMEM;
	}
	if (!err && f->function) {
		char *plain = tk_demangle(f->function);

		fid = tk_profile__function(p, plain ? plain : f->function, NULL);
		free(plain);
	} else if (f->module) {
		/* the offset of the address itself, not of the byte looked up */
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, tk_path_basename(f->module),
			 f->module_offset + (addr - look));
		fid = tk_profile__function(p, name, NULL);
	} else {
		fid = tk_profile__function(p, "[unknown]", NULL);
	}
	if (!fid)
		return -ENOMEM;
	*loc = tk_profile__location(p, mid, addr, fid, false);
	return *loc ? 0 : -ENOMEM;
}

/*
 * A Python frame (bpf/unwind_py.h): its qualified name, file and first
 * line as the function, the line executing as the location's line. One
 * whose names could not be read says so, never another function's name.
 */
static int python_location(struct tk_locs *b, uint32_t pid, uint64_t rec, uint64_t *loc,
			   bool *unsym)
{
	struct tk_py *py = tk_symbolizer__py(b->s);
	struct tk_py_frame f = { 0 };
	uint64_t fid;

	*unsym = !py || tk_py__frame(py, pid, rec, &f);
	if (*unsym)
		fid = tk_profile__function(b->p, "[python: code object unnamed]", NULL);
	else
		fid = tk_profile__function_at(b->p, f.name, f.file, f.first_line);
	if (!fid)
		return -ENOMEM;
	*loc = tk_profile__location_at(b->p, 0, 0, fid, f.line);
	return *loc ? 0 : -ENOMEM;
}

static int user_location(struct tk_locs *b, uint32_t pid, uint32_t gen, uint64_t addr,
			 bool ret, uint64_t *loc, bool *unsym, bool *jit)
{
	uint64_t look = ret && addr ? addr - 1 : addr;
	struct tk_sym_frame f;
	int err;

	if (UNW_PY_IS_REC(addr))
		return python_location(b, pid, addr, loc, unsym);
	err = tk_symbolizer__user(b->s, pid, gen, look, &f);
	/* a part gcc split off the interpreter loop has no symbol of its own */
	if (f.module && tk_symbolizer__py_if_any(b->s) &&
	    tk_py__in_loop(tk_symbolizer__py_if_any(b->s), pid, gen, look)) {
		f.function = "_PyEval_EvalFrameDefault";
		err = 0;
	}
	*unsym = err != 0;
	*jit = f.jit;
	return tk_cpu_profile__user_location(b->p, &f, err, addr, look, loc);
}

static int frame_location(struct tk_locs *b, uint32_t pid, uint32_t gen, uint64_t addr,
			  uint32_t flags, uint64_t *loc)
{
	struct loc_slot k, *slot;
	uint64_t h;
	bool unsym, found, jit = false;
	int err;

	if (flags & F_KERNEL)
		pid = gen = 0;
	k = (struct loc_slot){ .flags = flags, .pid = pid, .addr = addr, .gen = gen };
	h = slot_hash(pid, gen, addr, flags);
	slot = tk_hashmap__insert(&b->cache, h, loc_slot_match, NULL, &k, &found);
	if (!slot)
		return -ENOMEM;
	if (!found) {
		if (flags & F_KERNEL)
			err = kernel_location(b, addr, flags & F_RETURN, loc, &unsym);
		else
			err = user_location(b, pid, gen, addr, flags & F_RETURN, loc, &unsym,
					    &jit);
		if (err) {
			tk_hashmap__del(&b->cache, slot);
			return err;
		}
		if (*loc > UINT32_MAX) {
			tk_hashmap__del(&b->cache, slot);
			return -E2BIG;
		}
		*slot = k;
		slot->flags = flags | F_USED | (unsym ? F_UNSYM : 0) | (unsym && jit ? F_JIT : 0);
		slot->loc = (uint32_t)*loc;
	}
	*loc = slot->loc;
	if (slot->flags & F_UNSYM)
		b->unsymbolized++;
	if (slot->flags & F_JIT)
		b->jit_unnamed++;
	return 0;
}

struct tk_locs *tk_locs__new(struct tk_symbolizer *s, struct tk_profile *p)
{
	struct tk_locs *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	tk_symbolizer__settle(s);
	b->s = s;
	b->p = p;
	b->cache = (struct tk_hashmap)LOC_CACHE_INIT;
	return b;
}

int tk_locs__user(struct tk_locs *b, uint32_t pid, uint32_t gen, uint64_t addr, bool ret,
		    uint64_t *loc)
{
	return frame_location(b, pid, gen, addr, ret ? F_RETURN : 0, loc);
}

int tk_locs__kernel(struct tk_locs *b, uint64_t addr, bool ret, uint64_t *loc)
{
	return frame_location(b, 0, 0, addr, F_KERNEL | (ret ? F_RETURN : 0), loc);
}

uint64_t tk_locs__unsymbolized(const struct tk_locs *b)
{
	return b->unsymbolized;
}

uint64_t tk_locs__jit_unnamed(const struct tk_locs *b)
{
	return b->jit_unnamed;
}

void tk_locs__report_jit(struct tk_profile *p, struct tk_symbolizer *s, uint64_t jit_unnamed)
{
	struct tk_symbolizer_stats st;

	tk_profile__set_loss(p, "jit_unnamed_frames", jit_unnamed);
	tk_symbolizer__stats(s, &st);
	if (st.jit_files || st.jitdump_files)
		tk_profile__add_comment(p, "JIT code's names: perf maps: %" PRIu64 " read, %" PRIu64
					" names, %" PRIu64 " lines skipped; jitdumps: %" PRIu64
					" read, %" PRIu64 " names, %" PRIu64 " records skipped%s",
					st.jit_files, st.jit_entries, st.jit_bad_lines,
					st.jitdump_files, st.jitdump_entries,
					st.jitdump_bad_records, st.jitdump_broken ?
					", some read only up to garbage" : "");
	if (st.jvm_asked || st.jvm_ask_failed)
		tk_profile__add_comment(p, "JVMs asked for their perf maps (as 'jcmd PID "
					"Compiler.perfmap', as their users): %" PRIu64 " wrote them, %"
					PRIu64 " not asked or failed%s%s", st.jvm_asked,
					st.jvm_ask_failed, st.jvm_ask_failed ? "; the last: " : "",
					st.jvm_ask_failed ? st.jvm_failure : "");
	if (jit_unnamed)
		tk_profile__add_comment(p, "%" PRIu64 " frames of JIT code were not named "
					"(jit_unnamed_frames): no perf map or jitdump covers them "
					"(node: --perf-basic-prof or --perf-prof; a JVM: tracekit "
					"asks it unless --no-jit-ask)", jit_unnamed);
}

void tk_locs__free(struct tk_locs *b)
{
	if (!b)
		return;
	tk_hashmap__free(&b->cache);
	free(b);
}

const char *tk_cpu_profile__state(enum tk_stack_kind kind)
{
	switch (kind & ~(TK_STACK_OFF_SHORT | TK_STACK_OFF_BEFORE)) {
	case TK_STACK_OFF_RUNNABLE:
		return "preempted";
	case TK_STACK_OFF_SLEEPING:
		return "sleeping";
	case TK_STACK_OFF_UNINTERRUPTIBLE:
		return "uninterruptible";
	case TK_STACK_OFF_OTHER:
		return "other";
	case TK_STACK_OFF_BLOCKED:
		return "blocked";
	default:
		return NULL;
	}
}

/* Off-CPU time of @e: its state as a label; a short wait under one made-up frame. */
static int build_off(struct tk_locs *b, const struct tk_stack_entry *e, uint32_t n)
{
	int64_t values[TK_PROFILE_MAX_VALUES] = { 0 };
	int err;

	if (b->p->nr_values < 4)
		return -EINVAL;
	if (e->kind & TK_STACK_OFF_SHORT) {
		if (!b->short_loc) {
			uint64_t fid = tk_profile__function(b->p, "[off-CPU waits under "
							    "--off-cpu-min]", NULL);

			b->short_loc = fid ? tk_profile__location(b->p, 0, 0, fid, false) : 0;
			if (!b->short_loc)
				return -ENOMEM;
		}
		b->locs[0] = b->short_loc;
		n = 1;
	}
	values[2] = e->count;
	values[3] = e->count2;
	err = tk_profile__add_sample_state(b->p, b->locs, n, values, e->pid, e->tid, e->comm,
					   tk_cpu_profile__state(e->kind));
	if (!err && (e->kind & TK_STACK_OFF_BEFORE))
		b->p->samples[b->p->nr_samples - 1].began_before = true;
	return err;
}

/*
 * The frames of the tracer itself at the top of an off-CPU stack, taken in
 * sched_switch: the BPF program and the tracepoint's call into it.
 */
static bool tracer_frame(const struct tk_profile *p, uint64_t loc)
{
	const struct tk_location *l = &p->locations[loc - 1];
	const char *name = l->function_id ? p->functions[l->function_id - 1].name : NULL;

	return name && (!strncmp(name, "bpf_prog_", 9) || !strncmp(name, "bpf_trace_run", 13) ||
			!strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "__traceiter_", 12));
}

static int build_entry(const struct tk_stack_entry *e, void *ctx)
{
	struct tk_locs *b = ctx;
	int64_t values[TK_PROFILE_MAX_VALUES] = { 0 };
	uint32_t i, n = 0;
	int err;

	for (i = 0; i < e->nr_kernel; i++) {
		err = frame_location(b, e->pid, e->gen, e->kernel[i], F_KERNEL | (i ? F_RETURN : 0),
				     &b->locs[n]);
		if (err)
			return err;
		if (n || e->kind == TK_STACK_ON_CPU || !tracer_frame(b->p, b->locs[n]))
			n++;
	}
	for (i = 0; i < e->nr_user; i++) {
		err = frame_location(b, e->pid, e->gen, e->user[i], i ? F_RETURN : 0,
				     &b->locs[n++]);
		if (err)
			return err;
	}
	if (e->kind != TK_STACK_ON_CPU)
		return build_off(b, e, n);
	values[0] = e->count;
	values[1] = e->count * b->p->period;
	return tk_profile__add_sample(b->p, b->locs, n, values, e->pid, e->tid, e->comm);
}

/*
 * Before the build: the kernel addresses of the stacks, as kernel_location
 * looks them up, and the number of distinct frames (the cache's keys),
 * estimated in a few KiB (HyperLogLog, 4096 registers: within ~2 %).
 */
#define HLL_BITS 12
#define HLL_M (1u << HLL_BITS)

struct prepass {
	uint64_t *v;
	size_t n, cap;
	bool kernel;		/* collect kernel addresses */
	uint8_t reg[HLL_M];
};

static void hll_add(struct prepass *pp, uint64_t h)
{
	uint64_t w = h << HLL_BITS | 1ULL << (HLL_BITS - 1);	/* never 0 */
	uint8_t rank = __builtin_clzll(w) + 1;
	uint32_t i = h >> (64 - HLL_BITS);

	if (rank > pp->reg[i])
		pp->reg[i] = rank;
}

static size_t hll_count(const struct prepass *pp)
{
	double sum = 0, m = HLL_M, e;
	uint32_t i, zeros = 0;

	for (i = 0; i < HLL_M; i++) {
		sum += 1.0 / (double)(1ULL << pp->reg[i]);
		zeros += !pp->reg[i];
	}
	e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
	if (e <= 2.5 * m && zeros)
		e = m * log(m / zeros);
	return (size_t)(e + 0.5);
}

static int prepass_entry(const struct tk_stack_entry *e, void *ctx)
{
	struct prepass *pp = ctx;
	uint32_t i, ret;

	for (i = 0; i < e->nr_kernel; i++) {
		ret = i ? F_RETURN : 0;
		hll_add(pp, slot_hash(0, 0, e->kernel[i], F_KERNEL | ret));
		if (!e->kernel[i] || !pp->kernel)
			continue;
		if (tk_grow((void **)&pp->v, &pp->cap, pp->n + 1, sizeof(*pp->v), 1024))
			return -ENOMEM;
		pp->v[pp->n++] = ret ? e->kernel[i] - 1 : e->kernel[i];
	}
	for (i = 0; i < e->nr_user; i++)
		hll_add(pp, slot_hash(e->pid, e->gen, e->user[i], i ? F_RETURN : 0));
	return 0;
}

size_t tk_cpu_profile__frames(const struct tk_stacks *t)
{
	struct prepass pp = { 0 };

	if (tk_stacks__for_each(t, prepass_entry, &pp))
		return 0;
	return hll_count(&pp);
}

int tk_cpu_profile__build(const struct tk_stacks *t, struct tk_symbolizer *s, struct tk_profile *p,
			  uint64_t *unsymbolized, uint64_t *jit_unnamed)
{
	struct tk_locs b = { .s = s, .p = p, .cache = LOC_CACHE_INIT };
	struct prepass *pp = calloc(1, sizeof(*pp));
	size_t n;
	int err;

	tk_symbolizer__settle(s);
	if (!pp)
		return -ENOMEM;
	pp->kernel = true;
	err = tk_stacks__for_each(t, prepass_entry, pp);
	/* the kernel's symbols in one pass, for these addresses only */
	if (!err)
		err = tk_symbolizer__kernel_prepare(s, pp->v, pp->n);
	/* the cache sized once: an estimate 2 % short only rarely crosses a power of two */
	n = hll_count(pp);
	if (!err && n)
		err = tk_hashmap__reserve(&b.cache, n + n / 16);
	free(pp->v);
	free(pp);
	if (err)
		return err;
	b.locs = malloc(2 * TK_MAX_FRAMES * sizeof(*b.locs));
	if (!b.locs)
		return -ENOMEM;
	err = tk_stacks__for_each(t, build_entry, &b);
	free(b.locs);
	tk_hashmap__free(&b.cache);
	if (unsymbolized)
		*unsymbolized = b.unsymbolized;
	if (jit_unnamed)
		*jit_unnamed = b.jit_unnamed;
	return err;
}
