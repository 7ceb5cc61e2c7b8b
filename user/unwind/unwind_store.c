// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The unwind store: one array of rows holding the table of every object seen
 * (each laid out once, however many processes map it), and the description
 * of a process's executable mappings that both evaluators read (struct
 * unw_proc). For the BPF backends the array is the BPF rows map itself,
 * mapped into memory: a table is copied in once and is then visible to the
 * programs; processes point at it through their unw_procs entries. Nothing is
 * ever removed: the store is as large as the session asked, and a table that
 * does not fit is counted and its frames go by the frame pointer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "runtime/py.h"
#include "sym/symbolize.h"
#include "unwind/unwind.h"

struct placed {
	const struct tk_unw_table *t;	/* key; never NULL */
	uint32_t start;			/* NOT_PLACED: it did not fit */
};

#define NOT_PLACED UINT32_MAX

struct tk_unw_store {
	struct unw_row *rows;
	bool own;
	size_t cap;
	size_t nr;
	size_t chunk;			/* rows of a chunk; 0: memory whole from the start */
	size_t mapped;			/* rows usable (with chunks) */
	tk_unw_grow_fn grow;
	void *grow_ctx;
	bool release;			/* tables let their rows go once laid out */
	size_t used;			/* rows of the tables laid out (nr: the highest end) */
	uint32_t *fill;			/* with chunks: rows taken from each chunk's start */
	size_t nr_fill, cap_fill;
	struct tk_hashmap placed;	/* struct placed, by table address */
	struct tk_unw_store_stats st;
};

static uint64_t table_hash(const struct tk_unw_table *t)
{
	return tk_hash__mix64((uintptr_t)t);
}

static uint64_t placed_hash(const void *rec)
{
	return table_hash(((const struct placed *)rec)->t);
}

static bool placed_match(const void *ctx, const void *rec, const void *key)
{
	return ((const struct placed *)rec)->t == key;
}

int tk_unw_store__new(struct unw_row *mem, size_t cap, struct tk_unw_store **out)
{
	struct tk_unw_store *s;

	*out = NULL;
	if (!cap || cap > UINT32_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rows = mem;
	if (!mem) {
		s->rows = malloc(cap * sizeof(*s->rows));
		s->own = true;
	}
	s->placed = (struct tk_hashmap)TK_HASHMAP_INIT(struct placed, placed_hash);
	if (!s->rows) {
		tk_unw_store__free(s);
		return -ENOMEM;
	}
	s->cap = cap;
	s->st.cap = cap;
	*out = s;
	return 0;
}

void tk_unw_store__set_grow(struct tk_unw_store *s, size_t chunk, size_t mapped,
			    tk_unw_grow_fn grow, void *ctx)
{
	s->chunk = chunk;
	s->mapped = mapped;
	s->grow = grow;
	s->grow_ctx = ctx;
}

void tk_unw_store__release_rows(struct tk_unw_store *s, bool on)
{
	s->release = on;
}

void tk_unw_store__free(struct tk_unw_store *s)
{
	if (!s)
		return;
	if (s->own)
		free(s->rows);
	free(s->fill);
	tk_hashmap__free(&s->placed);
	free(s);
}

const struct unw_row *tk_unw_store__rows(const struct tk_unw_store *s, size_t *nr)
{
	*nr = s->nr;
	return s->rows;
}

void tk_unw_store__stats(const struct tk_unw_store *s, struct tk_unw_store_stats *st)
{
	*st = s->st;
	st->rows = s->nr;
	st->skipped = s->nr - s->used;
	st->mapped = s->grow ? s->mapped : s->cap;
}

/*
 * Where a table of @n rows goes: after the last one; with chunks, a table
 * that fits in one goes to the first chunk with room at its end, else to a
 * fresh chunk (crossing into the next only when nothing else fits under the
 * ceiling), and a larger one after the last, over consecutive chunks. Its
 * rows made usable; false when they cannot be.
 */
static bool where(struct tk_unw_store *s, size_t n, size_t *at)
{
	size_t c = s->chunk, start = s->nr, i;

	if (n > s->cap)
		return false;
	if (c && n <= c) {
		for (i = 0; i < s->nr_fill; i++)
			if (c - s->fill[i] >= n && i * c + s->fill[i] <= s->cap - n)
				break;
		start = i < s->nr_fill ? i * c + s->fill[i] : s->nr_fill * c;
		if (start > s->cap - n)
			start = s->nr;
	}
	if (start > s->cap - n)
		return false;
	if (c && tk_grow((void **)&s->fill, &s->cap_fill, (start + n - 1) / c + 1,
			 sizeof(*s->fill), 16))
		return false;
	if (s->grow && start + n > s->mapped &&
	    (s->grow(s->grow_ctx, start + n, &s->mapped) || start + n > s->mapped))
		return false;
	*at = start;
	return true;
}

/* Rows [@at, @at + @n) taken (where() made room for the chunks' fill). */
static void take(struct tk_unw_store *s, size_t at, size_t n)
{
	size_t c = s->chunk, j, last, end = at + n;

	if (end > s->nr)
		s->nr = end;
	s->used += n;
	if (!c)
		return;
	last = (end - 1) / c;
	for (; s->nr_fill <= last; s->nr_fill++)
		s->fill[s->nr_fill] = 0;
	for (j = at / c; j <= last; j++)
		if (end - j * c > s->fill[j])
			s->fill[j] = end - j * c > c ? c : end - j * c;
}

int tk_unw_store__place(struct tk_unw_store *s, const struct tk_unw_table *t, uint32_t *start)
{
	struct placed *pl;
	size_t at = 0;
	bool found;

	pl = tk_hashmap__insert(&s->placed, table_hash(t), placed_match, NULL, t, &found);
	if (!pl)
		return -ENOMEM;
	if (found) {
		*start = pl->start;
		return pl->start == NOT_PLACED ? -ENOSPC : 0;
	}
	pl->t = t;
	if (!where(s, t->nr, &at)) {
		/* remembered, so that it is counted once, however many processes map it */
		pl->start = NOT_PLACED;
		s->st.full++;
		return -ENOSPC;
	}
	memcpy(s->rows + at, t->rows, t->nr * sizeof(*t->rows));
	if (s->release) {
		/* the symbolizer's table: only this store read its rows (release_rows) */
		struct tk_unw_table *own = (struct tk_unw_table *)t;

		free(own->rows);
		own->rows = NULL;
	}
	take(s, at, t->nr);
	pl->start = at;
	s->st.tables++;
	s->st.build_ns += t->st.build_ns;
	*start = pl->start;
	return 0;
}

/*
 * Which mappings an entry keeps when a process has more than UNW_MAX_MAPS
 * executable ones. Kept in address order, the highest went first: libc,
 * ld.so, the vdso, and every library loaded early (the interpreter's) sit at
 * the top of the address space, above anything dlopen'ed later. Nearly every
 * stack passes through a few objects, whatever the program does: its own
 * executable (main, _start), libc (__libc_start_main, qsort and the like
 * calling back, __restore_rt under a signal handler, thread starts), ld.so
 * (lazy binding, dlopen), the vdso (clock calls); then the runtimes whose
 * loop or JIT support is under every frame of their programs. Those are
 * named here. Where samples land among the rest is not known when an entry
 * is written (the collectors count stacks in the kernel; a miss says which
 * process, not which address), so the rest go by the size of their code,
 * the best predictor of samples there is then, and by address for equal
 * sizes (the order the maps file gives, so a capture taken again keeps the
 * same ones).
 */

/* Basename prefixes of the objects kept first (rank 0) and of the runtimes (rank 1). */
static const char *const core_objects[] = {
	"libc.so", "libc-2.", "libc.musl", "ld-linux", "ld-musl", "ld.so", "ld64.so",
	"libpthread.so", "libpthread-2.",
};
static const char *const runtimes[] = {
	"libpython", "libruby", "libperl", "libjvm", "libjli", "libnode", "libv8", "libcoreclr",
	"libmonosgen", "libmono-", "libluajit", "liblua", "libphp", "libstdc++",
	"libc++.so", "libc++abi", "libgcc_s",
};

static bool has_prefix_in(const char *name, const char *const *list, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strncmp(name, list[i], strlen(list[i])))
			return true;
	return false;
}

/* 0: every stack passes through it; 1: a runtime's; 2: the rest; 3: JIT code. */
static int map_rank(const struct tk_sym_map_info *mi)
{
	const char *base;

	if (mi->main_exe)
		return 0;
	/*
	 * JIT code has no table: in the entry or left out it goes by the frame
	 * pointer all the same; a file's CFI left out for it would be lost
	 */
	if (mi->jit)
		return 3;
	if (!mi->module)
		return 2;
	if (!strcmp(mi->module, "[vdso]"))
		return 0;
	base = strrchr(mi->module, '/');
	base = base ? base + 1 : mi->module;
	if (has_prefix_in(base, core_objects, sizeof(core_objects) / sizeof(core_objects[0])))
		return 0;
	if (has_prefix_in(base, runtimes, sizeof(runtimes) / sizeof(runtimes[0])))
		return 1;
	return 2;
}

struct pick {
	uint32_t at;		/* index in the capture's order */
	int rank;
	uint64_t size;
};

static int cmp_pick(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

int tk_unw__pick_maps(const struct tk_sym_map_info *maps, size_t nr, bool *keep)
{
	struct pick *pk;
	size_t i, n = 0;

	for (i = 0; i < nr; i++)
		keep[i] = nr <= UNW_MAX_MAPS;
	if (nr <= UNW_MAX_MAPS)
		return (int)nr;
	pk = malloc(nr * sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	for (i = 0; i < nr; i++)
		pk[i] = (struct pick){ i, map_rank(&maps[i]), maps[i].end - maps[i].start };
	qsort(pk, nr, sizeof(*pk), cmp_pick);
	for (n = 0; n < UNW_MAX_MAPS; n++)
		keep[pk[n].at] = true;
	free(pk);
	return (int)n;
}

struct proc_ctx {
	struct tk_sym_map_info *maps;	/* every executable mapping, in address order */
	size_t nr, cap;
};

static int collect_map(const struct tk_sym_map_info *mi, void *ctx)
{
	struct proc_ctx *c = ctx;

	if (tk_grow((void **)&c->maps, &c->cap, c->nr + 1, sizeof(*c->maps), 64))
		return -ENOMEM;
	c->maps[c->nr++] = *mi;
	return 0;
}

static void add_map(struct tk_unw_store *s, struct unw_proc *p, const struct tk_sym_map_info *mi)
{
	struct unw_map *m = &p->maps[p->nr++];
	uint32_t start;

	memset(m, 0, sizeof(*m));
	m->start = mi->start;
	m->end = mi->end;
	if (!mi->unw || !mi->unw->nr || !mi->have_vaddr) {
		m->flags = UNW_MAP_NO_CFI;
		return;
	}
	if (tk_unw_store__place(s, mi->unw, &start)) {
		m->flags = UNW_MAP_PENDING;	/* no room: the table never loads */
		return;
	}
	/* address - (start - vaddr) = vaddr; vaddr - base = row pc */
	m->bias = mi->start - mi->vaddr + mi->unw->base;
	m->row_start = start;
	m->row_count = mi->unw->nr;
}

int tk_unw_store__proc(struct tk_unw_store *s, struct tk_symbolizer *sym, uint32_t pid,
		       uint32_t gen, struct unw_proc *p)
{
	struct proc_ctx c = { 0 };
	bool *keep = NULL;
	size_t i;
	int err;

	memset(p, 0, sizeof(*p));
	p->gen = gen;
	err = tk_symbolizer__for_each_map(sym, pid, gen, collect_map, &c);
	if (!err && c.nr) {
		keep = malloc(c.nr * sizeof(*keep));
		err = keep ? tk_unw__pick_maps(c.maps, c.nr, keep) : -ENOMEM;
	}
	if (err >= 0) {
		err = 0;
		/* in address order, as the searches want them */
		for (i = 0; i < c.nr; i++)
			if (keep[i])
				add_map(s, p, &c.maps[i]);
		if (c.nr > UNW_MAX_MAPS) {
			p->flags |= UNW_PROC_OVERFLOW;
			p->left_out = c.nr - p->nr;
			s->st.overflowed++;
			if (p->left_out > s->st.left_out)
				s->st.left_out = p->left_out;
		}
	}
	free(keep);
	free(c.maps);
	return err;
}

int tk_unwind_mode__parse(const char *str, enum tk_unwind_mode *mode)
{
	if (!strcmp(str, "auto"))
		*mode = TK_UNWIND_AUTO;
	else if (!strcmp(str, "fp"))
		*mode = TK_UNWIND_FP;
	else if (!strcmp(str, "cfi"))
		*mode = TK_UNWIND_CFI;
	else
		return -EINVAL;
	return 0;
}

const char *tk_unwind_mode__name(enum tk_unwind_mode mode)
{
	switch (mode) {
	case TK_UNWIND_FP:
		return "fp";
	case TK_UNWIND_CFI:
		return "cfi";
	default:
		return "auto";
	}
}

static const char *const loss_names[UNW_CNT__COUNT] = {
	[UNW_CNT_FP] = "unwind_fp_no_cfi",
	[UNW_CNT_NOT_LOADED] = "unwind_table_not_loaded",
	[UNW_CNT_NO_ROW] = "unwind_no_cfi_for_address",
	[UNW_CNT_UNSUPPORTED] = "unwind_unsupported_cfi",
	[UNW_CNT_NO_MAPPING] = "unwind_no_mapping",
	[UNW_CNT_NO_PROC] = "unwind_process_unknown",
	[UNW_CNT_READ_FAULT] = "unwind_stack_read_fault",
	[UNW_CNT_DEPTH] = "unwind_depth_limit",
	[UNW_CNT_BAD_FRAME] = "unwind_bad_frame",
	[UNW_CNT_LEFT_OUT] = "unwind_mapping_left_out",
	[UNW_CNT_MISS_RESENT] = "unwind_miss_resent",
	[UNW_CNT_PY_TSTATE] = "python_tstate_not_found",
	[UNW_CNT_PY_READ_FAULT] = "python_frame_read_fault",
	[UNW_CNT_PY_DEPTH] = "python_depth_limit",
	[UNW_CNT_PY_MISALIGNED] = "python_misaligned",
	[UNW_CNT_PY_NO_ID] = "python_no_id",
};

/*
 * Python frames: the kernel's counters above, and what user space counts
 * (runtime/py.h): processes whose CPython it cannot walk, frames it could
 * not name or place on a line, ids past the memory bound, and the perf
 * backend's samples that ran Python code it cannot show.
 */
static void python_report(struct tk_profile *p, const uint64_t cnt[UNW_CNT__COUNT],
			  const struct tk_unw_info *info)
{
	struct tk_py_stats st = { 0 };

	if (info && info->py)
		tk_py__stats(info->py, &st);
	tk_profile__set_loss(p, "python_unknown_version", st.unknown_version);
	tk_profile__set_loss(p, "python_name_unreadable", st.name_unreadable);
	tk_profile__set_loss(p, "python_line_unknown", st.line_unknown);
	tk_profile__set_loss(p, "python_names_dropped", st.names_dropped);
	tk_profile__set_loss(p, "python_frames_unavailable", st.perf_frames_unavailable);
	if (!info)
		return;
	if (st.perf_frames_unavailable)
		tk_profile__add_comment(p, "python: %" PRIu64 " samples ran Python code "
					"(_PyEval_EvalFrameDefault on the stack); the perf_event "
					"backend cannot read Python frames faithfully (they live "
					"in the process heap and change after the sample), so "
					"their Python functions are not shown. The bpf backend "
					"shows them; "
					"with Python 3.12+, '-X perf' names functions (no lines) "
					"through its perf map", st.perf_frames_unavailable);
	if (info->in_kernel && !info->python && info->python_off && st.processes)
		tk_profile__add_comment(p, "python: frames not walked: %s", info->python_off);
	if (st.processes || st.unknown_version || cnt[UNW_CNT_PY_STACKS])
		tk_profile__add_comment(p, "python: %" PRIu64 " processes walked, %" PRIu64
					" not (%s); %" PRIu64 " stacks with Python frames, %"
					PRIu64 " frames; %" PRIu64 " code objects named of %" PRIu64
					"; %" PRIu64 " trampoline frames (-X perf)", st.processes,
					st.unknown_version, st.unknown_version ? st.last_unknown :
					"none refused", cnt[UNW_CNT_PY_STACKS],
					cnt[UNW_CNT_PY_FRAMES], st.names, st.ids,
					cnt[UNW_CNT_PY_TRAMP]);
}

/*
 * The unwinder's memory: the kernel's rows chunks made as tables came (and
 * how much of them is used), its process entries (taken as written, or
 * preallocated whole where the kernel wants that); the perf backend's rows
 * and entries in its own memory.
 */
static void memory_report(struct tk_profile *p, const struct tk_unw_info *info)
{
	const double mib = 1048576.0;
	uint64_t used = (info->store.rows - info->store.skipped) * sizeof(struct unw_row);

	if (!info->in_kernel) {
		tk_profile__add_comment(p, "unwind memory (this process): rows %.1f MiB used of "
					"%.1f MiB at most; process entries %.1f MiB", used / mib,
					info->store.cap * sizeof(struct unw_row) / mib,
					(info->memory > info->store.cap * sizeof(struct unw_row) ?
					 info->memory - info->store.cap * sizeof(struct unw_row) :
					 0) / mib);
		return;
	}
	tk_profile__add_comment(p, "unwind memory (kernel): rows in %" PRIu64 " chunks of %"
				PRIu64 " KiB made as tables came, %.1f MiB reserved of a %.1f MiB "
				"ceiling, %.1f MiB used (%" PRIu64 " rows free at chunk ends); "
				"process entries: %" PRIu64 " written, %.1f MiB %s", info->chunks,
				info->chunk_bytes / 1024, info->chunks * info->chunk_bytes / mib,
				info->chunks_max * info->chunk_bytes / mib, used / mib,
				info->store.skipped, info->procs,
				(info->procs_prealloc ? info->memory :
				 info->procs * sizeof(struct unw_proc)) / mib,
				info->procs_prealloc ? "preallocated (this kernel wants it)" :
				"as written (at most, entries rewritten in place)");
}

const char *tk_unw__loss_name(enum unw_counter c)
{
	return c < UNW_CNT__COUNT ? loss_names[c] : NULL;
}

void tk_unw__report(struct tk_profile *p, const uint64_t cnt[UNW_CNT__COUNT],
		    const struct tk_unw_info *info)
{
	uint64_t frames = cnt[UNW_CNT_CFI_FRAMES] + cnt[UNW_CNT_FP_FRAMES];
	const char *pac;
	int i;

	for (i = 0; i < UNW_CNT__COUNT; i++)
		if (loss_names[i])
			tk_profile__set_loss(p, loss_names[i], cnt[i]);
	tk_profile__set_loss(p, "unwind_miss_dropped", info ? info->misses_dropped : 0);
	python_report(p, cnt, info);
	if (!info)
		return;
	/* arm64: which mask stripped the return addresses' PACs (x86-64: none) */
	if (tk_unw_ra_mask(&pac) && pac)
		tk_profile__add_comment(p, "%s", pac);
	tk_profile__add_comment(p, "unwinding: CFI %s: %" PRIu64 " stacks, %" PRIu64
				" reached their outermost frame; %" PRIu64 " frames, %.1f %% by CFI",
				info->in_kernel ? "in the kernel" : "in user space",
				cnt[UNW_CNT_STACKS], cnt[UNW_CNT_END], frames,
				frames ? 100.0 * cnt[UNW_CNT_CFI_FRAMES] / frames : 0.0);
	tk_profile__add_comment(p, "unwind tables: %" PRIu64 " objects, %" PRIu64 " rows (%.1f of "
				"%.1f MiB), built in %.0f ms; %" PRIu64 " did not fit",
				info->store.tables, info->store.rows - info->store.skipped,
				(info->store.rows - info->store.skipped) * sizeof(struct unw_row) /
					1048576.0,
				info->store.cap * sizeof(struct unw_row) / 1048576.0,
				info->store.build_ns / 1e6, info->store.full);
	memory_report(p, info);
	if (info->in_kernel)
		tk_profile__add_comment(p, "unwind misses: %" PRIu64 " captures taken again for "
					"an address in no mapping; %" PRIu64 " misses found no "
					"room to wait (sent again by the kernel)",
					info->recaptures, info->misses_dropped);
	if (info->store.overflowed)
		tk_profile__add_comment(p, "unwind entries: %" PRIu64 " written for processes with "
					"more than %d executable mappings: the executable, libc, "
					"ld.so, the vdso, runtimes and the largest kept, up to %"
					PRIu64 " left out (by frame pointer there)",
					info->store.overflowed, UNW_MAX_MAPS,
					info->store.left_out);
}
