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

#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
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

void tk_unw_store__free(struct tk_unw_store *s)
{
	if (!s)
		return;
	if (s->own)
		free(s->rows);
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
}

/* Where @t's rows start in the store, laying them out the first time: 0, or -ENOSPC. */
static int place(struct tk_unw_store *s, const struct tk_unw_table *t, uint32_t *start)
{
	struct placed *pl;
	bool fits = t->nr <= s->cap - s->nr, found;

	pl = tk_hashmap__insert(&s->placed, table_hash(t), placed_match, NULL, t, &found);
	if (!pl)
		return -ENOMEM;
	if (found) {
		*start = pl->start;
		return pl->start == NOT_PLACED ? -ENOSPC : 0;
	}
	pl->t = t;
	if (!fits) {
		/* remembered, so that it is counted once, however many processes map it */
		pl->start = NOT_PLACED;
		s->st.full++;
		return -ENOSPC;
	}
	memcpy(s->rows + s->nr, t->rows, t->nr * sizeof(*t->rows));
	pl->start = s->nr;
	s->nr += t->nr;
	s->st.tables++;
	s->st.build_ns += t->st.build_ns;
	*start = pl->start;
	return 0;
}

struct proc_ctx {
	struct tk_unw_store *s;
	struct unw_proc *p;
};

static int add_map(const struct tk_sym_map_info *mi, void *ctx)
{
	struct proc_ctx *c = ctx;
	struct unw_map *m;
	uint32_t start;

	if (c->p->nr == UNW_MAX_MAPS)
		return 0;	/* the rest: UNW_C_NO_MAPPING, counted where hit */
	m = &c->p->maps[c->p->nr++];
	memset(m, 0, sizeof(*m));
	m->start = mi->start;
	m->end = mi->end;
	if (!mi->unw || !mi->unw->nr || !mi->have_vaddr) {
		m->flags = UNW_MAP_NO_CFI;
		return 0;
	}
	if (place(c->s, mi->unw, &start)) {
		m->flags = UNW_MAP_PENDING;	/* no room: the table never loads */
		return 0;
	}
	/* address - (start - vaddr) = vaddr; vaddr - base = row pc */
	m->bias = mi->start - mi->vaddr + mi->unw->base;
	m->row_start = start;
	m->row_count = mi->unw->nr;
	return 0;
}

int tk_unw_store__proc(struct tk_unw_store *s, struct tk_symbolizer *sym, uint32_t pid,
		       uint32_t gen, struct unw_proc *p)
{
	struct proc_ctx c = { .s = s, .p = p };

	memset(p, 0, sizeof(*p));
	p->gen = gen;
	return tk_symbolizer__for_each_map(sym, pid, gen, add_map, &c);
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
};

const char *tk_unw__loss_name(enum unw_counter c)
{
	return c < UNW_CNT__COUNT ? loss_names[c] : NULL;
}

void tk_unw__report(struct tk_profile *p, const uint64_t cnt[UNW_CNT__COUNT],
		    const struct tk_unw_info *info)
{
	uint64_t frames = cnt[UNW_CNT_CFI_FRAMES] + cnt[UNW_CNT_FP_FRAMES];
	int i;

	for (i = 0; i < UNW_CNT__COUNT; i++)
		if (loss_names[i])
			tk_profile__set_loss(p, loss_names[i], cnt[i]);
	if (!info)
		return;
	tk_profile__add_comment(p, "unwinding: CFI %s: %" PRIu64 " stacks, %" PRIu64
				" reached their outermost frame; %" PRIu64 " frames, %.1f %% by CFI",
				info->in_kernel ? "in the kernel" : "in user space",
				cnt[UNW_CNT_STACKS], cnt[UNW_CNT_END], frames,
				frames ? 100.0 * cnt[UNW_CNT_CFI_FRAMES] / frames : 0.0);
	tk_profile__add_comment(p, "unwind tables: %" PRIu64 " objects, %" PRIu64 " rows (%.1f of "
				"%.1f MiB), built in %.0f ms; %" PRIu64 " did not fit; %.1f MiB "
				"reserved", info->store.tables, info->store.rows,
				info->store.rows * sizeof(struct unw_row) / 1048576.0,
				info->store.cap * sizeof(struct unw_row) / 1048576.0,
				info->store.build_ns / 1e6, info->store.full,
				info->memory / 1048576.0);
}
