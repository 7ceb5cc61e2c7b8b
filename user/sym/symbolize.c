// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The symbolizer: per (pid, gen) the executable mappings of a process, each
 * with the index of its file; ELF indexes cached by the opened file's device,
 * inode, size and mtime, and shared by build-id, so a library is parsed once
 * per run whatever the number of processes or mount namespaces mapping it
 * (symbolize_files.c). The [vdso] image is read from the first process that
 * maps it and shared by all whose vdso has its size. Mappings come from
 * /proc or one by one (symbolize_maps.c). Kernel symbols load on first use.
 *
 * This part: the session, its table of processes, and the lookups.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "core/grow.h"
#include "runtime/py.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"
#include "sym/symbolize_state.h"

/* ---- the processes' table ----------------------------------------------------------- */

struct proc_key {
	uint32_t pid;
	uint32_t gen;
};

static uint64_t hash_proc(uint32_t pid, uint32_t gen)
{
	return tk_hash__mix64((uint64_t)pid << 32 | gen);
}

static uint64_t proc_ent_hash(const void *rec)
{
	const struct sym_proc *p = ((const struct proc_ent *)rec)->p;

	return hash_proc(p->pid, p->gen);
}

static bool proc_match(const void *ctx, const void *rec, const void *key)
{
	const struct sym_proc *p = ((const struct proc_ent *)rec)->p;
	const struct proc_key *k = key;

	return p->pid == k->pid && p->gen == k->gen;
}

/* ---- the session ------------------------------------------------------------------- */

int tk_symbolizer__new(const struct tk_symbolizer_opts *opts, struct tk_symbolizer **out)
{
	const char *proc_root = "/proc", *debug_root = "/usr/lib/debug";
	struct tk_symbolizer *s;

	*out = NULL;
	if (opts && opts->sz >= offsetof(struct tk_symbolizer_opts, proc_root) +
				       sizeof(opts->proc_root) && opts->proc_root)
		proc_root = opts->proc_root;
	if (opts && opts->sz >= offsetof(struct tk_symbolizer_opts, debug_root) +
				       sizeof(opts->debug_root) && opts->debug_root)
		debug_root = opts->debug_root;
	if (strlen(proc_root) >= PATH_MAX || strlen(debug_root) >= PATH_MAX)
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	strcpy(s->proc_root, proc_root);
	strcpy(s->debug_root, debug_root);
	s->procs = (struct tk_hashmap)TK_HASHMAP_INIT(struct proc_ent, proc_ent_hash);
	tk_symbolizer__init_files(s);
	s->unwind = opts && opts->sz >= offsetof(struct tk_symbolizer_opts, unwind_tables) +
					sizeof(opts->unwind_tables) && opts->unwind_tables;
	*out = s;
	return 0;
}

void tk_symbolizer__free(struct tk_symbolizer *s)
{
	struct proc_ent *pe;
	size_t i = 0;

	if (!s)
		return;
	while ((pe = tk_hashmap__next(&s->procs, &i))) {
		tk_symbolizer__free_jit(pe->p);
		tk_symbolizer__free_jvm(pe->p);
		free(pe->p->maps);
		free(pe->p);
	}
	tk_hashmap__free(&s->procs);
	free(s->retired);
	tk_symbolizer__free_files(s);
	tk_strset__free(&s->strings);
	tk_ksyms__free(s->ksyms);
	tk_ksyms_resolved__free(s->kres);
	tk_py__free(s->py);
	free(s);
}

struct tk_py *tk_symbolizer__py(struct tk_symbolizer *s)
{
	if (!s->py)
		s->py = tk_py__new();
	return s->py;
}

struct tk_py *tk_symbolizer__py_if_any(const struct tk_symbolizer *s)
{
	return s ? s->py : NULL;
}

/* ---- processes ---------------------------------------------------------------------- */

static struct sym_proc *find_proc(const struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct proc_key k = { pid, gen };
	struct proc_ent *pe;

	if (s->last && s->last->pid == pid && s->last->gen == gen)
		return s->last;
	pe = tk_hashmap__find(&s->procs, hash_proc(pid, gen), proc_match, NULL, &k);
	return pe ? pe->p : NULL;
}

struct sym_proc *tk_symbolizer__get_proc(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct proc_key k = { pid, gen };
	struct sym_proc *p = find_proc(s, pid, gen);
	struct proc_ent *pe;
	bool found;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->gen = gen;
	pe = tk_hashmap__insert(&s->procs, hash_proc(pid, gen), proc_match, NULL, &k, &found);
	if (!pe) {
		free(p);
		return NULL;
	}
	pe->p = p;
	return p;
}

void tk_symbolizer__set_unwind(struct tk_symbolizer *s, bool on)
{
	s->unwind = on;
}

bool tk_symbolizer__has(const struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	const struct sym_proc *p = find_proc(s, pid, gen);

	return p && p->captured;
}

/* ---- resolving ----------------------------------------------------------------------- */

/* The mapping of @p holding @addr, or NULL. */
static const struct sym_map *map_of(const struct sym_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

int tk_symbolizer__user(struct tk_symbolizer *s, uint32_t pid, uint32_t gen, uint64_t addr,
			struct tk_sym_frame *out)
{
	const struct sym_map *m;
	struct sym_proc *p;
	uint64_t vaddr;

	memset(out, 0, sizeof(*out));
	p = find_proc(s, pid, gen);
	if (!p)
		return -ESRCH;
	s->last = p;
	m = map_of(p, addr);
	/*
	 * In no mapping of a file: JIT code, named by the process's perf map or
	 * jitdump; or a library loaded since the capture, found by reading its
	 * maps again while it lives.
	 */
	if ((!m || m->jit) && !tk_symbolizer__jit(s, p, addr, out))
		return 0;
	if (!m && !tk_symbolizer__recapture(s, p))
		m = map_of(p, addr);
	if (!m)
		return -ESRCH;
	out->module = m->module;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module_offset = addr - m->start + m->offset;
	out->jit = m->jit;
	if (!m->idx)
		return -ENOENT;
	out->build_id = m->idx->build_id;
	if (!tk_elf_index__vaddr(m->idx, out->module_offset, &vaddr))
		return -ENOENT;
	out->function = tk_elf_index__find(m->idx, vaddr);
	return out->function ? 0 : -ENOENT;
}

int tk_symbolizer__for_each_map(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				int (*cb)(const struct tk_sym_map_info *m, void *ctx), void *ctx)
{
	struct sym_proc *p = find_proc(s, pid, gen);
	size_t i;
	int err;

	if (!p || !p->captured)
		return -ESRCH;
	for (i = 0; i < p->nr; i++) {
		const struct sym_map *m = &p->maps[i];
		struct tk_sym_map_info mi = {
			.start = m->start,
			.end = m->end,
			.offset = m->offset,
			.module = m->module,
			.main_exe = p->exe && m->module && !strcmp(p->exe, m->module),
			.jit = m->jit,
		};

		if (m->idx) {
			mi.have_vaddr = tk_elf_index__vaddr(m->idx, m->offset, &mi.vaddr);
			mi.unw = m->idx->unw;
		}
		err = cb(&mi, ctx);
		if (err)
			return err;
	}
	return 0;
}

static int load_ksyms(struct tk_symbolizer *s)
{
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		s->ksyms_err = tk_ksyms__load(s->proc_root, &s->ksyms);
		if (!s->ksyms_err && tk_ksyms__restricted(s->ksyms))
			s->ksyms_err = -EPERM;
	}
	return s->ksyms_err;
}

int tk_symbolizer__kernel(struct tk_symbolizer *s, uint64_t addr, struct tk_sym_frame *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (s->kres && (err = tk_ksyms_resolved__find(s->kres, addr, out)) != -ENOENT)
		return err;
	if (load_ksyms(s) || !s->ksyms)
		return -ESRCH;
	return tk_ksyms__find(s->ksyms, addr, out);
}

int tk_symbolizer__kernel_status(struct tk_symbolizer *s)
{
	int err;

	/* a pass that keeps nothing says as much as the table would */
	if (!s->kres && !s->ksyms_tried) {
		err = tk_ksyms__resolve(s->proc_root, NULL, 0, &s->kres);
		if (err) {
			s->ksyms_tried = true;
			s->ksyms_err = err;
		}
	}
	if (s->kres && !s->ksyms_tried)
		return tk_ksyms_resolved__restricted(s->kres) ? -EPERM : 0;
	return load_ksyms(s);
}

int tk_symbolizer__kernel_prepare(struct tk_symbolizer *s, const uint64_t *addrs, size_t n)
{
	int err;

	tk_ksyms_resolved__free(s->kres);
	s->kres = NULL;
	if (s->ksyms_tried || !n)
		return 0;
	if (s->kres_done) {
		load_ksyms(s);
		return 0;
	}
	s->kres_done = true;
	err = tk_ksyms__resolve(s->proc_root, addrs, n, &s->kres);
	return err == -ENOMEM ? err : 0;
}

void tk_symbolizer__stats(const struct tk_symbolizer *s, struct tk_symbolizer_stats *st)
{
	struct proc_ent *pe;
	size_t i = 0;

	*st = s->st;
	st->jvm_failure = s->jvm_failure;
	st->procs_held = 0;
	while ((pe = tk_hashmap__next(&s->procs, &i))) {
		tk_symbolizer__jit_stats(pe->p, st);
		st->procs_held++;
	}
}

void tk_symbolizer__tick(struct tk_symbolizer *s)
{
	struct timespec ts;
	struct proc_ent *pe;
	int64_t now;
	size_t i = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (now < s->tick_due_ns)
		return;
	s->tick_due_ns = now + 1000000000;
	while ((pe = tk_hashmap__next(&s->procs, &i))) {
		if (!pe->p->captured)
			continue;
		tk_symbolizer__jvm_tick(s, pe->p);
		if (pe->p->jit_maps || pe->p->jitdump)
			tk_symbolizer__jit_refresh(s, pe->p, false);
	}
}

void tk_symbolizer__settle(struct tk_symbolizer *s)
{
	struct proc_ent *pe;
	size_t i = 0;

	while ((pe = tk_hashmap__next(&s->procs, &i))) {
		tk_symbolizer__jvm_settle(s, pe->p);
		/*
		 * what was written since the last look (a runtime that buffers
		 * writes the rest as it exits): a later record may rename code at
		 * an address an earlier one named, so a name found is no proof
		 */
		if (pe->p->captured && (pe->p->jit_maps || pe->p->jitdump))
			tk_symbolizer__jit_refresh(s, pe->p, true);
	}
}

uint64_t tk_symbolizer__unwind_over_limit(const struct tk_symbolizer *s)
{
	return s ? s->st.unwind_over_limit : 0;
}

/* ---- ending processes ----------------------------------------------------------------- */

int tk_symbolizer__retire(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	if (tk_grow((void **)&s->retired, &s->cap_retired, s->nr_retired + 1,
		    sizeof(*s->retired), 64))
		return -ENOMEM;
	s->retired[s->nr_retired].pid = pid;
	s->retired[s->nr_retired].gen = gen;
	s->nr_retired++;
	return 0;
}

uint64_t tk_symbolizer__retired(const struct tk_symbolizer *s)
{
	return s->retired_base + s->nr_retired;
}

/* Drop (@pid, @gen): what its perf map counted stays in the totals. */
static bool drop_proc(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct proc_key k = { pid, gen };
	struct proc_ent *pe;
	struct sym_proc *p;

	pe = tk_hashmap__find(&s->procs, hash_proc(pid, gen), proc_match, NULL, &k);
	if (!pe)
		return false;
	p = pe->p;
	tk_hashmap__del(&s->procs, pe);
	if (s->last == p)
		s->last = NULL;
	tk_symbolizer__jit_stats(p, &s->st);
	tk_symbolizer__free_jit(p);
	tk_symbolizer__free_jvm(p);
	free(p->maps);
	free(p);
	return true;
}

size_t tk_symbolizer__prune(struct tk_symbolizer *s, uint64_t mark)
{
	size_t i, n, dropped = 0;

	if (mark <= s->retired_base)
		return 0;
	n = mark - s->retired_base;
	if (n > s->nr_retired)
		n = s->nr_retired;
	for (i = 0; i < n; i++)
		dropped += drop_proc(s, s->retired[i].pid, s->retired[i].gen);
	memmove(s->retired, s->retired + n, (s->nr_retired - n) * sizeof(*s->retired));
	s->nr_retired -= n;
	s->retired_base += n;
	s->st.procs_pruned += dropped;
	return dropped;
}
