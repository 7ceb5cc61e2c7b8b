// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The profile model: interning of mappings, functions and locations through
 * hash indexes over their arrays (ids are array position + 1), samples,
 * losses and comments; the output format names; the writer dispatch.
 *
 * Building and tk_profile__free() need a profile made by tk_profile__new_cpu(),
 * tk_profile__new_heap() or tk_profile__new_counts() (its indexes live behind
 * the public struct); the writers take any profile whose ids are array
 * position + 1 and refuse others with -EINVAL.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/grow.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "profile/profile_int.h"

#define LOSS_NAME_MAX 48
#define ID_BLOCK 16384		/* location ids (64 KiB) a block of the samples' lists */

/*
 * The samples' location lists, as 32-bit ids (an id is a position + 1 in
 * an index of at most TK_HASHIDX_MAX), one after another in blocks that
 * never move: a malloc'd list of 64-bit ids each cost twice the ids and
 * malloc's header. Not interned: in a whole-system soak 3 % of lists
 * repeat (only threads on one stack, or processes on one kernel-only
 * path, have equal lists), and an index of the rest cost more than those
 * repeats.
 */
struct id_blocks {
	uint32_t **blocks;
	size_t nr, cap;
	size_t used;		/* ids taken in the last block */
};

/* What callers see is the first member; the rest is private. */
struct profile_priv {
	struct tk_profile p;
	size_t cap_mappings;
	size_t cap_functions;
	size_t cap_locations;
	size_t cap_samples;
	struct tk_hashidx mapping_idx;
	struct tk_hashidx function_idx;
	struct tk_hashidx location_idx;
	struct id_blocks location_lists;
	struct tk_strset files;		/* mapping files and build-ids */
	char backend[32];
	char loss_names[TK_PROFILE_MAX_LOSSES][LOSS_NAME_MAX];
};

static struct profile_priv *priv(struct tk_profile *p)
{
	return (struct profile_priv *)p;
}

/* ---- building ----------------------------------------------------------------- */

struct tk_profile *tk_profile__new_cpu(const char *backend, int freq_hz)
{
	struct profile_priv *pp;
	struct tk_profile *p;

	if (freq_hz <= 0) {
		errno = EINVAL;
		return NULL;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	p = &pp->p;
	p->value_types[0] = (struct tk_value_type){ "samples", "count" };
	p->value_types[1] = (struct tk_value_type){ "cpu", "nanoseconds" };
	p->nr_values = 2;
	p->period_type = (struct tk_value_type){ "cpu", "nanoseconds" };
	p->period = 1000000000LL / freq_hz;
	p->freq_hz = freq_hz;
	snprintf(pp->backend, sizeof(pp->backend), "%s", backend ? backend : "unknown");
	p->backend = pp->backend;
	return p;
}

struct tk_profile *tk_profile__new_heap(const char *backend)
{
	struct profile_priv *pp;
	struct tk_profile *p;

	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	p = &pp->p;
	p->value_types[0] = (struct tk_value_type){ "alloc_objects", "count" };
	p->value_types[1] = (struct tk_value_type){ "alloc_space", "bytes" };
	p->value_types[2] = (struct tk_value_type){ "inuse_objects", "count" };
	p->value_types[3] = (struct tk_value_type){ "inuse_space", "bytes" };
	p->nr_values = 4;
	p->period_type = (struct tk_value_type){ "space", "bytes" };
	p->default_sample_type = "inuse_space";
	snprintf(pp->backend, sizeof(pp->backend), "%s", backend ? backend : "unknown");
	p->backend = pp->backend;
	return p;
}

struct tk_profile *tk_profile__new_counts(const char *backend, const char *type, const char *unit)
{
	struct profile_priv *pp;
	struct tk_profile *p;

	if (!type || !unit) {
		errno = EINVAL;
		return NULL;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	p = &pp->p;
	p->value_types[0] = (struct tk_value_type){ type, unit };
	p->nr_values = 1;
	p->period_type = (struct tk_value_type){ type, unit };
	p->period = 1;
	snprintf(pp->backend, sizeof(pp->backend), "%s", backend ? backend : "unknown");
	p->backend = pp->backend;
	return p;
}

void tk_profile__free(struct tk_profile *p)
{
	struct profile_priv *pp;
	size_t i;
	int c;

	if (!p)
		return;
	pp = priv(p);
	for (i = 0; i < p->nr_functions; i++) {
		free(p->functions[i].name);
		free(p->functions[i].filename);
	}
	for (c = 0; c < p->nr_comments; c++)
		free(p->comments[c]);
	free(p->main_file);
	free(p->mappings);
	free(p->functions);
	free(p->locations);
	free(p->samples);
	tk_hashidx__free(&pp->mapping_idx);
	tk_hashidx__free(&pp->function_idx);
	tk_hashidx__free(&pp->location_idx);
	tk_strset__free(&pp->files);
	for (i = 0; i < pp->location_lists.nr; i++)
		free(pp->location_lists.blocks[i]);
	free(pp->location_lists.blocks);
	free(pp);
}

/* Room for one more element in *@arr (of @cap, @nr used). */
static int reserve(void **arr, size_t *cap, size_t nr, size_t elem)
{
	size_t ncap;
	void *n;

	if (nr < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	n = reallocarray(*arr, ncap, elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Duplicate @s into *@dst (NULL stays NULL). */
static int dup_str(char **dst, const char *s)
{
	*dst = NULL;
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

struct mapping_key {
	uint64_t start, limit, offset;
	const char *file, *build_id;
};

static bool mapping_eq(const void *ctx, size_t i, const void *key)
{
	const struct tk_mapping *m = &((const struct tk_profile *)ctx)->mappings[i];
	const struct mapping_key *k = key;

	return m->start == k->start && m->limit == k->limit && m->offset == k->offset &&
	       str_eq(m->file, k->file) && str_eq(m->build_id, k->build_id);
}

uint64_t tk_profile__mapping(struct tk_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			     const char *file, const char *build_id)
{
	struct mapping_key k = { start, limit, offset, file, build_id };
	struct profile_priv *pp = priv(p);
	struct tk_mapping *m;
	uint64_t h;
	size_t i;
	int err;

	h = tk_hash__u64(tk_hash__u64(tk_hash__u64(1, start), limit), offset);
	h = tk_hash__str(tk_hash__str(h, file), build_id);
	i = tk_hashidx__find(&pp->mapping_idx, h, mapping_eq, p, &k);
	if (i != TK_HASHIDX_NONE)
		return p->mappings[i].id;
	err = reserve((void **)&p->mappings, &pp->cap_mappings, p->nr_mappings, sizeof(*m));
	if (err)
		goto fail;
	m = &p->mappings[p->nr_mappings];
	*m = (struct tk_mapping){
		.id = p->nr_mappings + 1,
		.start = start,
		.limit = limit,
		.offset = offset,
		.has_functions = true,
	};
	/* one copy of each: every process maps the same files at its own addresses */
	m->file = tk_strset__intern(&pp->files, file ? file : "");
	m->build_id = build_id ? tk_strset__intern(&pp->files, build_id) : NULL;
	err = !m->file || (build_id && !m->build_id) ? -ENOMEM : 0;
	if (!err)
		err = tk_hashidx__add(&pp->mapping_idx, h, p->nr_mappings);
	if (err)
		goto fail;
	p->nr_mappings++;
	return m->id;
fail:
	errno = -err;
	return 0;
}

struct function_key {
	const char *name, *filename;
	int64_t start_line;
};

static bool function_eq(const void *ctx, size_t i, const void *key)
{
	const struct tk_function *f = &((const struct tk_profile *)ctx)->functions[i];
	const struct function_key *k = key;

	return str_eq(f->name, k->name) && str_eq(f->filename, k->filename) &&
	       f->start_line == k->start_line;
}

uint64_t tk_profile__function(struct tk_profile *p, const char *name, const char *filename)
{
	return tk_profile__function_at(p, name, filename, 0);
}

uint64_t tk_profile__function_at(struct tk_profile *p, const char *name, const char *filename,
				 int64_t start_line)
{
	struct function_key k = { name, filename, start_line };
	struct profile_priv *pp = priv(p);
	struct tk_function *f;
	uint64_t h;
	size_t i;
	int err;

	if (!name) {
		errno = EINVAL;
		return 0;
	}
	h = tk_hash__u64(tk_hash__str(tk_hash__str(2, name), filename), start_line);
	i = tk_hashidx__find(&pp->function_idx, h, function_eq, p, &k);
	if (i != TK_HASHIDX_NONE)
		return p->functions[i].id;
	err = reserve((void **)&p->functions, &pp->cap_functions, p->nr_functions, sizeof(*f));
	if (err)
		goto fail;
	f = &p->functions[p->nr_functions];
	f->id = p->nr_functions + 1;
	f->start_line = start_line;
	err = dup_str(&f->name, name);
	if (!err)
		err = dup_str(&f->filename, filename);
	if (!err)
		err = tk_hashidx__add(&pp->function_idx, h, p->nr_functions);
	if (err) {
		free(f->name);
		free(f->filename);
		goto fail;
	}
	p->nr_functions++;
	return f->id;
fail:
	errno = -err;
	return 0;
}

static bool location_eq(const void *ctx, size_t i, const void *key)
{
	const struct tk_location *l = &((const struct tk_profile *)ctx)->locations[i];
	const struct tk_location *k = key;

	return l->mapping_id == k->mapping_id && l->address == k->address &&
	       l->function_id == k->function_id && l->kernel == k->kernel && l->line == k->line;
}

static uint64_t location(struct tk_profile *p, uint64_t mapping_id, uint64_t address,
			 uint64_t function_id, bool kernel, int64_t line)
{
	struct tk_location k = { 0, mapping_id, address, function_id, kernel, line };
	struct profile_priv *pp = priv(p);
	uint64_t h;
	size_t i;
	int err;

	if (mapping_id > p->nr_mappings || function_id > p->nr_functions) {
		errno = EINVAL;
		return 0;
	}
	h = tk_hash__u64(tk_hash__u64(tk_hash__u64(3, mapping_id), address), function_id);
	h = tk_hash__u64(tk_hash__u64(h, kernel), line);
	i = tk_hashidx__find(&pp->location_idx, h, location_eq, p, &k);
	if (i != TK_HASHIDX_NONE)
		return p->locations[i].id;
	err = reserve((void **)&p->locations, &pp->cap_locations, p->nr_locations,
		      sizeof(*p->locations));
	if (!err)
		err = tk_hashidx__add(&pp->location_idx, h, p->nr_locations);
	if (err) {
		errno = -err;
		return 0;
	}
	k.id = p->nr_locations + 1;
	p->locations[p->nr_locations++] = k;
	/* a location without a function: its mapping is not fully symbolized */
	if (!function_id && mapping_id)
		p->mappings[mapping_id - 1].has_functions = false;
	return k.id;
}

uint64_t tk_profile__location(struct tk_profile *p, uint64_t mapping_id, uint64_t address,
			      uint64_t function_id, bool kernel)
{
	return location(p, mapping_id, address, function_id, kernel, 0);
}

uint64_t tk_profile__location_at(struct tk_profile *p, uint64_t mapping_id, uint64_t address,
				 uint64_t function_id, int64_t line)
{
	return location(p, mapping_id, address, function_id, false, line);
}

/* Room for @n ids: the rest of the last block, or a new one (as long as @n, when longer). */
static uint32_t *ids_take(struct id_blocks *b, size_t n)
{
	uint32_t *ids;

	if (!b->nr || b->used + n > ID_BLOCK) {
		size_t len = n > ID_BLOCK ? n : ID_BLOCK;

		if (tk_grow((void **)&b->blocks, &b->cap, b->nr + 1, sizeof(*b->blocks), 16))
			return NULL;
		ids = malloc(len * sizeof(*ids));
		if (!ids)
			return NULL;
		b->blocks[b->nr++] = ids;
		b->used = 0;
	}
	ids = b->blocks[b->nr - 1] + b->used;
	b->used += n;
	return ids;
}

int tk_profile__add_sample(struct tk_profile *p, const uint64_t *locs, uint32_t nr,
			   const int64_t *values, uint32_t pid, uint32_t tid, const char *comm)
{
	struct profile_priv *pp = priv(p);
	struct tk_sample *s;
	uint32_t i, *ids;
	int err;

	if ((nr && !locs) || !values)
		return -EINVAL;
	for (i = 0; i < nr; i++)
		if (!locs[i] || locs[i] > p->nr_locations)
			return -EINVAL;
	err = reserve((void **)&p->samples, &pp->cap_samples, p->nr_samples, sizeof(*s));
	if (err)
		return err;
	ids = nr ? ids_take(&pp->location_lists, nr) : NULL;
	if (nr && !ids)
		return -ENOMEM;
	for (i = 0; i < nr; i++)
		ids[i] = locs[i];
	s = &p->samples[p->nr_samples];
	memset(s, 0, sizeof(*s));
	s->location_ids = ids;
	s->nr_locations = nr;
	for (i = 0; i < (uint32_t)p->nr_values && i < TK_PROFILE_MAX_VALUES; i++)
		s->values[i] = values[i];
	s->pid = pid;
	s->tid = tid;
	if (comm)
		snprintf(s->comm, sizeof(s->comm), "%s", comm);
	p->nr_samples++;
	return 0;
}

int tk_profile__add_sample_state(struct tk_profile *p, const uint64_t *locs, uint32_t nr,
				 const int64_t *values, uint32_t pid, uint32_t tid,
				 const char *comm, const char *state)
{
	int err = tk_profile__add_sample(p, locs, nr, values, pid, tid, comm);

	if (!err)
		p->samples[p->nr_samples - 1].thread_state = state;
	return err;
}

int tk_profile__add_off_cpu(struct tk_profile *p)
{
	if (p->nr_values != 2 || p->nr_samples)
		return -EINVAL;
	p->value_types[2] = (struct tk_value_type){ "off_cpu", "nanoseconds" };
	p->value_types[3] = (struct tk_value_type){ "off_cpu_count", "count" };
	p->nr_values = 4;
	return 0;
}

void tk_profile__set_loss(struct tk_profile *p, const char *name, uint64_t count)
{
	struct profile_priv *pp = priv(p);
	char key[LOSS_NAME_MAX];
	int i;

	snprintf(key, sizeof(key), "%s", name ? name : "unnamed");
	for (i = 0; i < p->nr_losses; i++) {
		if (strcmp(p->losses[i].name, key) == 0) {
			p->losses[i].count = count;
			return;
		}
	}
	if (p->nr_losses == TK_PROFILE_MAX_LOSSES) {
		/* never dropped: the last counter becomes the sum of the rest */
		i = TK_PROFILE_MAX_LOSSES - 1;
		if (strcmp(p->losses[i].name, "other") != 0) {
			snprintf(pp->loss_names[i], LOSS_NAME_MAX, "other");
			p->losses[i].name = pp->loss_names[i];
		}
		p->losses[i].count += count;
		return;
	}
	i = p->nr_losses++;
	memcpy(pp->loss_names[i], key, sizeof(key));
	p->losses[i].name = pp->loss_names[i];
	p->losses[i].count = count;
}

int tk_profile__set_main_file(struct tk_profile *p, const char *file)
{
	char *dup = NULL;

	if (file && !(dup = strdup(file)))
		return -ENOMEM;
	free(p->main_file);
	p->main_file = dup;
	return 0;
}

int tk_profile__set_main_pid(struct tk_profile *p, const char *proc_root, int pid)
{
	char rel[32], path[4096], exe[4096];
	ssize_t n;

	snprintf(rel, sizeof(rel), "%d/exe", pid);
	if (pid <= 0 || tk_path_join(path, sizeof(path), proc_root ? proc_root : "/proc", rel))
		return 0;
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;	/* gone, or not ours to read: pprof then names the first file */
	exe[n] = '\0';
	return tk_profile__set_main_file(p, exe);
}

int tk_profile__add_comment(struct tk_profile *p, const char *fmt, ...)
{
	const int max = sizeof(p->comments) / sizeof(p->comments[0]);
	va_list ap;
	char *s;
	int n;

	if (p->nr_comments >= max)
		return -ENOSPC;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	p->comments[p->nr_comments++] = s;
	return 0;
}

/* ---- what the writers share ----------------------------------------------------- */

int tk_profile__check(const struct tk_profile *p)
{
	size_t i;
	uint32_t j;

	if (!p || p->nr_values < 0 || p->nr_values > TK_PROFILE_MAX_VALUES)
		return -EINVAL;
	for (i = 0; i < p->nr_mappings; i++)
		if (p->mappings[i].id != i + 1)
			return -EINVAL;
	for (i = 0; i < p->nr_functions; i++)
		if (p->functions[i].id != i + 1 || !p->functions[i].name)
			return -EINVAL;
	for (i = 0; i < p->nr_locations; i++) {
		const struct tk_location *l = &p->locations[i];

		if (l->id != i + 1 || l->mapping_id > p->nr_mappings ||
		    l->function_id > p->nr_functions)
			return -EINVAL;
	}
	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		if (s->nr_locations && !s->location_ids)
			return -EINVAL;
		for (j = 0; j < s->nr_locations; j++)
			if (!s->location_ids[j] || s->location_ids[j] > p->nr_locations)
				return -EINVAL;
	}
	return 0;
}

int64_t tk_profile__total(const struct tk_profile *p)
{
	int64_t total = 0;
	size_t i;

	for (i = 0; i < p->nr_samples; i++)
		total += tk_sample__count(p, &p->samples[i]);
	return total;
}

struct frames_ctx {
	const struct tk_frames *fr;
	enum tk_frames_key key;
};

static bool frame_eq(const void *ctx, size_t i, const void *key)
{
	const struct frames_ctx *c = ctx;
	const struct tk_frame *a = &c->fr->frames[i], *b = key;

	if (strcmp(a->name, b->name) != 0)
		return false;
	if (c->key == TK_FRAMES_BY_NAME)
		return a->kernel == b->kernel;
	return str_eq(a->filename, b->filename);
}

/* The frame of @l, its name made up into *@made when it has no function. */
static int describe(const struct tk_profile *p, const struct tk_location *l, struct tk_frame *f,
		    char **made)
{
	const struct tk_mapping *m = l->mapping_id ? &p->mappings[l->mapping_id - 1] : NULL;
	int n;

	*made = NULL;
	f->kernel = l->kernel;
	f->filename = NULL;
	f->module = NULL;
	if (m && m->file && m->file[0])
		f->module = tk_path_basename(m->file);
	else if (l->kernel)
		f->module = "[kernel.kallsyms]";
	if (l->function_id) {
		f->name = p->functions[l->function_id - 1].name;
		f->filename = p->functions[l->function_id - 1].filename;
		return 0;
	}
	if (m && f->module)
		n = asprintf(made, "%s+0x%llx", f->module,
			     (unsigned long long)(l->address - m->start + m->offset));
	else
		n = asprintf(made, "0x%llx", (unsigned long long)l->address);
	if (n < 0) {
		*made = NULL;
		return -ENOMEM;
	}
	f->name = *made;
	return 0;
}

int tk_frames__build(const struct tk_profile *p, enum tk_frames_key key, struct tk_frames *fr)
{
	struct frames_ctx ctx = { fr, key };
	struct tk_hashidx idx = {};
	size_t i, cap = 0;
	int err;

	memset(fr, 0, sizeof(*fr));
	err = tk_profile__check(p);
	if (err)
		return err;
	fr->of_loc = calloc(p->nr_locations ? p->nr_locations : 1, sizeof(*fr->of_loc));
	fr->owned = calloc(p->nr_locations ? p->nr_locations : 1, sizeof(*fr->owned));
	if (!fr->of_loc || !fr->owned) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nr_locations; i++) {
		struct tk_frame f;
		char *made;
		uint64_t h;
		size_t at;

		err = describe(p, &p->locations[i], &f, &made);
		if (err)
			goto out;
		if (made)
			fr->owned[fr->nr_owned++] = made;
		h = tk_hash__str(4, f.name);
		if (key == TK_FRAMES_BY_NAME)
			h = tk_hash__u64(h, f.kernel);
		else
			h = tk_hash__str(h, f.filename);
		at = tk_hashidx__find(&idx, h, frame_eq, &ctx, &f);
		if (at == TK_HASHIDX_NONE) {
			err = reserve((void **)&fr->frames, &cap, fr->nr, sizeof(f));
			if (!err)
				err = tk_hashidx__add(&idx, h, fr->nr);
			if (err)
				goto out;
			at = fr->nr;
			fr->frames[fr->nr++] = f;
		}
		fr->of_loc[i] = at;
	}
out:
	tk_hashidx__free(&idx);
	if (err)
		tk_frames__free(fr);
	return err;
}

void tk_frames__free(struct tk_frames *fr)
{
	size_t i;

	for (i = 0; i < fr->nr_owned; i++)
		free(fr->owned[i]);
	free(fr->owned);
	free(fr->frames);
	free(fr->of_loc);
	memset(fr, 0, sizeof(*fr));
}

/* ---- formats -------------------------------------------------------------------- */

static const struct {
	const char *name;
	enum tk_format fmt;
} formats[] = {
	{ "text", TK_FORMAT_TEXT },
	{ "pprof", TK_FORMAT_PPROF },
	{ "folded", TK_FORMAT_FOLDED },
	{ "svg", TK_FORMAT_SVG },
	{ "json", TK_FORMAT_JSON },
};

static const struct {
	const char *ext;
	enum tk_format fmt;
} extensions[] = {
	{ ".pb.gz", TK_FORMAT_PPROF },
	{ ".pprof", TK_FORMAT_PPROF },
	{ ".folded", TK_FORMAT_FOLDED },
	{ ".svg", TK_FORMAT_SVG },
	{ ".json", TK_FORMAT_JSON },
	{ ".txt", TK_FORMAT_TEXT },
};

int tk_format__parse(const char *name, enum tk_format *fmt)
{
	size_t i;

	for (i = 0; name && i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(name, formats[i].name) == 0) {
			*fmt = formats[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

/* The index in extensions[] of @path's extension, or -1. */
static int path_ext(const char *path)
{
	const char *base;
	size_t i, n, e;

	if (!path)
		return -1;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	n = strlen(base);
	for (i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++) {
		e = strlen(extensions[i].ext);
		/* a name that is only the extension (".svg") names no format */
		if (n > e && strcasecmp(base + n - e, extensions[i].ext) == 0)
			return i;
	}
	return -1;
}

int tk_format__from_path(const char *path, enum tk_format *fmt)
{
	int i = path_ext(path);

	if (i < 0)
		return -EINVAL;
	*fmt = extensions[i].fmt;
	return 0;
}

size_t tk_format__ext_len(const char *path)
{
	int i = path_ext(path);

	return i < 0 ? 0 : strlen(extensions[i].ext);
}

int tk_profile__write(const struct tk_profile *p, enum tk_format fmt, FILE *f)
{
	switch (fmt) {
	case TK_FORMAT_TEXT:
		return tk_profile__write_text(p, f, 20);
	case TK_FORMAT_PPROF:
		return tk_profile__write_pprof(p, f);
	case TK_FORMAT_FOLDED:
		return tk_profile__write_folded(p, f);
	case TK_FORMAT_SVG:
		return tk_profile__write_svg(p, f, NULL);
	case TK_FORMAT_JSON:
		return tk_profile__write_json(p, f);
	}
	return -EINVAL;
}
