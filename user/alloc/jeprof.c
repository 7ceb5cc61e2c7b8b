// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jemalloc heap profile dumps. The text jemalloc 5.x writes (prof_data.c:
 * prof_dump_header, prof_dump_gctx, prof_tctx_dump_iter; os_prof_dump_maps):
 *
 *   heap_v2/PERIOD                                  PERIOD = 2^lg_prof_sample
 *     t*: CUR_OBJS: CUR_BYTES [ACCUM_OBJS: ACCUM_BYTES]   all threads
 *     tUID: ... [ ... ][ THREAD_NAME]               one per thread
 *   @ 0xADDR 0xADDR ...                             one backtrace, innermost first
 *     t*: ...                                       its counts, all threads
 *     tUID: ...                                     its counts per thread
 *   ...
 *   (blank line)
 *   MAPPED_LIBRARIES:
 *   /proc/PID/maps, verbatim
 *
 * Counts are of sampled allocations; the ACCUM pair is 0 unless prof_accum.
 * jeprof (Debian's /usr/bin/jeprof, ReadThreadedHeapProfile) reads the "t*"
 * line of each backtrace and scales each pair by 1 / (1 - exp(-avg / PERIOD)),
 * avg = bytes / objects of that pair (AdjustSamples, "remote-heap version 2");
 * so does tk_jeprof__unsample(). A pair with 0 objects stays as it is, as in
 * jeprof (jemalloc 5.3's prof_unbias can write "0: BYTES" when its rounding
 * leaves no whole object).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "alloc/alloc_weight.h"
#include "alloc/jeprof.h"
#include "proc/mapfile.h"
#include "proc/maps.h"
#include "profile/profile_locs.h"

struct stack_priv {
	struct tk_jeprof_stack pub;	/* pub.addrs set once parsing is done */
	size_t first;			/* index of its first address in d->addrs */
};

struct tk_jeprof {
	uint64_t period;
	struct tk_jeprof_counts total;
	bool has_accum;
	uint64_t *addrs;
	size_t nr_addrs, cap_addrs;
	struct stack_priv *stacks;
	size_t nr_stacks, cap_stacks;
	struct tk_jeprof_thread *threads;
	size_t nr_threads, cap_threads;
	struct tk_jeprof_mapping *maps;
	size_t nr_maps, cap_maps;
	char *program;
};

/* Room for @more elements after @nr in *@arr of *@cap. */
static int grow(void **arr, size_t *cap, size_t nr, size_t more, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *n;

	if (nr + more <= *cap)
		return 0;
	while (ncap < nr + more)
		ncap *= 2;
	n = reallocarray(*arr, ncap, elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

/* ---- lexing -------------------------------------------------------------------- */

struct span {
	const char *p, *end;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static void skip_spaces(struct span *s)
{
	while (s->p < s->end && is_space(*s->p))
		s->p++;
}

static bool at_end(struct span *s)
{
	skip_spaces(s);
	return s->p == s->end;
}

static bool eat(struct span *s, char c)
{
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

static bool eat_str(struct span *s, const char *str)
{
	size_t n = strlen(str);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, str, n))
		return false;
	s->p += n;
	return true;
}

/* A decimal count: -EINVAL without digits, -ERANGE above @max. */
static int parse_dec(struct span *s, uint64_t max, uint64_t *v)
{
	const char *start = s->p;

	*v = 0;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
		unsigned int d = *s->p++ - '0';

		if (*v > (max - d) / 10)
			return -ERANGE;
		*v = *v * 10 + d;
	}
	return s->p == start ? -EINVAL : 0;
}

/* "0x1f", "1f" or "0" (what "%#x" makes of 0), ended by a blank or the line's end. */
static int parse_hex(struct span *s, uint64_t *v)
{
	const char *start;

	*v = 0;
	if (s->end - s->p >= 2 && s->p[0] == '0' && (s->p[1] == 'x' || s->p[1] == 'X'))
		s->p += 2;
	start = s->p;
	for (; s->p < s->end && !is_space(*s->p); s->p++) {
		char c = *s->p;
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -EINVAL;
		if (*v >> 60)
			return -ERANGE;
		*v = *v << 4 | d;
	}
	return s->p == start ? -EINVAL : 0;
}

/* "OBJS: BYTES [OBJS: BYTES]"; each count at most INT64_MAX. */
static int parse_counts(struct span *s, struct tk_jeprof_counts *c)
{
	uint64_t *v[4] = { &c->cur_objs, &c->cur_bytes, &c->accum_objs, &c->accum_bytes };
	int i, err;

	for (i = 0; i < 4; i++) {
		skip_spaces(s);
		if (i == 2 && !eat(s, '['))
			return -EINVAL;
		skip_spaces(s);
		err = parse_dec(s, INT64_MAX, v[i]);
		if (err)
			return err;
		skip_spaces(s);
		if ((i % 2 == 0 && !eat(s, ':')) || (i == 3 && !eat(s, ']')))
			return -EINVAL;
	}
	/* objects without bytes: jeprof's scale would divide by zero; jemalloc never writes it */
	if ((c->cur_objs && !c->cur_bytes) || (c->accum_objs && !c->accum_bytes))
		return -EINVAL;
	return 0;
}

enum tline { TLINE_TOTAL, TLINE_THREAD };

/* "t*: COUNTS" or "tUID: COUNTS"; @s is left after the counts. */
static int parse_tline(struct span *s, enum tline *kind, uint64_t *uid,
		       struct tk_jeprof_counts *c)
{
	int err;

	skip_spaces(s);
	if (!eat(s, 't'))
		return -EINVAL;
	if (eat(s, '*')) {
		*kind = TLINE_TOTAL;
		*uid = 0;
	} else {
		*kind = TLINE_THREAD;
		err = parse_dec(s, UINT64_MAX, uid);
		if (err)
			return err;
	}
	if (!eat(s, ':'))
		return -EINVAL;
	return parse_counts(s, c);
}

static bool is_tline(const struct span *line)
{
	struct span s = *line;

	skip_spaces(&s);
	return s.p < s.end && *s.p == 't';
}

/* ---- parsing -------------------------------------------------------------------- */

void tk_jeprof__free(struct tk_jeprof *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr_threads; i++)
		free((char *)d->threads[i].name);
	for (i = 0; i < d->nr_maps; i++)
		free((char *)d->maps[i].path);
	free(d->threads);
	free(d->maps);
	free(d->stacks);
	free(d->addrs);
	free(d->program);
	free(d);
}

static void note_accum(struct tk_jeprof *d, const struct tk_jeprof_counts *c)
{
	if (c->accum_objs || c->accum_bytes)
		d->has_accum = true;
}

/* A header thread line's name: what follows the counts, control bytes as '?'. */
static char *thread_name(struct span *s)
{
	size_t n, i;
	char *name;

	skip_spaces(s);
	n = s->end - s->p;
	while (n && is_space(s->p[n - 1]))
		n--;
	if (n > TK_JEPROF_MAX_NAME - 1)
		n = TK_JEPROF_MAX_NAME - 1;
	name = malloc(n + 1);
	if (!name)
		return NULL;
	for (i = 0; i < n; i++) {
		unsigned char c = s->p[i];

		name[i] = c < 0x20 || c == 0x7f ? '?' : c;
	}
	name[n] = '\0';
	return name;
}

static int add_thread(struct tk_jeprof *d, uint64_t uid, const struct tk_jeprof_counts *c,
		      struct span *rest)
{
	struct tk_jeprof_thread *t;
	int err;

	err = grow((void **)&d->threads, &d->cap_threads, d->nr_threads, 1, sizeof(*t));
	if (err)
		return err;
	t = &d->threads[d->nr_threads];
	t->uid = uid;
	t->counts = *c;
	t->name = thread_name(rest);
	if (!t->name)
		return -ENOMEM;
	d->nr_threads++;
	note_accum(d, c);
	return 0;
}

/* "@ 0xADDR ...": a new stack, waiting for its "t*" line. */
static int add_stack(struct tk_jeprof *d, struct span *s)
{
	struct stack_priv *st;
	uint64_t a;
	int err;

	err = grow((void **)&d->stacks, &d->cap_stacks, d->nr_stacks, 1, sizeof(*st));
	if (err)
		return err;
	st = &d->stacks[d->nr_stacks];
	memset(st, 0, sizeof(*st));
	st->first = d->nr_addrs;
	while (!at_end(s)) {
		if (st->pub.nr_addrs == TK_JEPROF_MAX_FRAMES)
			return -E2BIG;
		err = parse_hex(s, &a);
		if (err)
			return err;
		err = grow((void **)&d->addrs, &d->cap_addrs, d->nr_addrs, 1, sizeof(a));
		if (err)
			return err;
		d->addrs[d->nr_addrs++] = a;
		st->pub.nr_addrs++;
	}
	d->nr_stacks++;
	return 0;
}

static int add_mapping(struct tk_jeprof *d, const struct tk_map *m)
{
	struct tk_jeprof_mapping *jm;
	int err;

	if (!d->program && tk_map__is_file(m)) {
		d->program = strdup(m->path);
		if (!d->program)
			return -ENOMEM;
	}
	if (m->perms[2] != 'x' || m->end <= m->start)
		return 0;
	if (!tk_map__is_file(m) && strcmp(m->path, "[vdso]") && strcmp(m->path, "[vsyscall]"))
		return 0;
	if (d->nr_maps == TK_JEPROF_MAX_MAPPINGS)
		return -E2BIG;
	err = grow((void **)&d->maps, &d->cap_maps, d->nr_maps, 1, sizeof(*jm));
	if (err)
		return err;
	jm = &d->maps[d->nr_maps];
	jm->start = m->start;
	jm->end = m->end;
	jm->offset = m->offset;
	jm->dev_major = m->dev_major;
	jm->dev_minor = m->dev_minor;
	jm->inode = m->inode;
	jm->path = strdup(m->path);
	if (!jm->path)
		return -ENOMEM;
	d->nr_maps++;
	return 0;
}

enum state {
	ST_HEADER,		/* before the header's "t*" line */
	ST_THREADS,		/* the header's thread lines */
	ST_STACK_TOTAL,		/* after "@", before its "t*" line */
	ST_STACK,		/* a stack's thread lines */
	ST_MAPS,		/* MAPPED_LIBRARIES */
};

static int parse_line(struct tk_jeprof *d, enum state *st, struct span *line, struct tk_map *m)
{
	struct tk_jeprof_counts c;
	struct stack_priv *sp;
	struct span s = *line;
	enum tline kind;
	uint64_t uid;
	int err;

	if (*st == ST_MAPS) {
		if (at_end(&s))
			return 0;
		err = tk_maps__parse_line(line->p, line->end - line->p, m);
		if (err)
			return -EINVAL;
		return add_mapping(d, m);
	}
	if (at_end(&s))
		return *st == ST_STACK_TOTAL || *st == ST_HEADER ? -EINVAL : 0;
	if (is_tline(&s)) {
		err = parse_tline(&s, &kind, &uid, &c);
		if (err)
			return err;
		switch (*st) {
		case ST_HEADER:
			if (kind != TLINE_TOTAL || !at_end(&s))
				return -EINVAL;
			d->total = c;
			note_accum(d, &c);
			*st = ST_THREADS;
			return 0;
		case ST_THREADS:
			if (kind != TLINE_THREAD)
				return -EINVAL;
			return add_thread(d, uid, &c, &s);
		case ST_STACK_TOTAL:
			if (kind != TLINE_TOTAL || !at_end(&s))
				return -EINVAL;
			d->stacks[d->nr_stacks - 1].pub.counts = c;
			note_accum(d, &c);
			*st = ST_STACK;
			return 0;
		case ST_STACK:
			if (kind != TLINE_THREAD || !at_end(&s))
				return -EINVAL;
			sp = &d->stacks[d->nr_stacks - 1];
			if (sp->pub.nr_threads < UINT32_MAX)
				sp->pub.nr_threads++;
			return 0;
		case ST_MAPS:
			break;
		}
		return -EINVAL;
	}
	if (*st == ST_HEADER || *st == ST_STACK_TOTAL)
		return -EINVAL;
	if (eat(&s, '@')) {
		if (s.p < s.end && !is_space(*s.p))
			return -EINVAL;
		*st = ST_STACK_TOTAL;
		return add_stack(d, &s);
	}
	if (eat_str(&s, "MAPPED_LIBRARIES:")) {
		if (!at_end(&s))
			return -EINVAL;
		*st = ST_MAPS;
		return 0;
	}
	if (eat_str(&s, "--- Memory map:")) {
		*st = ST_MAPS;
		return 0;
	}
	return -EINVAL;
}

/* "heap_v2/PERIOD" */
static int parse_header(struct tk_jeprof *d, struct span *line)
{
	struct span s = *line;
	int err;

	if (!eat_str(&s, "heap_v2/"))
		return -EINVAL;
	err = parse_dec(&s, UINT64_MAX, &d->period);
	if (err)
		return err;
	return at_end(&s) ? 0 : -EINVAL;
}

int tk_jeprof__parse(const char *text, size_t len, struct tk_jeprof **out)
{
	const char *p = text, *end = text + len;
	enum state st = ST_HEADER;
	struct tk_jeprof *d;
	struct tk_map *m;
	bool first = true;
	size_t i;
	int err = 0;

	*out = NULL;
	if (!text && len)
		return -EINVAL;
	if (len > TK_JEPROF_MAX_LEN)
		return -EFBIG;
	d = calloc(1, sizeof(*d));
	m = malloc(sizeof(*m));
	if (!d || !m) {
		err = -ENOMEM;
		goto out;
	}
	while (!err && p < end) {
		const char *nl = memchr(p, '\n', end - p);
		struct span line = { p, nl ? nl : end };

		p = nl ? nl + 1 : end;
		if (line.end > line.p && line.end[-1] == '\r')
			line.end--;
		if (first)
			err = parse_header(d, &line);
		else
			err = parse_line(d, &st, &line, m);
		first = false;
	}
	/* no header, or a header or stack cut before its "t*" line */
	if (!err && (first || st == ST_HEADER || st == ST_STACK_TOTAL))
		err = -EINVAL;
	if (!err) {
		for (i = 0; i < d->nr_stacks; i++)
			d->stacks[i].pub.addrs = d->addrs ? d->addrs + d->stacks[i].first : NULL;
		*out = d;
		d = NULL;
	}
out:
	free(m);
	tk_jeprof__free(d);
	return err;
}

/* ---- accessors ------------------------------------------------------------------ */

uint64_t tk_jeprof__sample_period(const struct tk_jeprof *d)
{
	return d->period;
}

const struct tk_jeprof_counts *tk_jeprof__total(const struct tk_jeprof *d)
{
	return &d->total;
}

bool tk_jeprof__has_accum(const struct tk_jeprof *d)
{
	return d->has_accum;
}

size_t tk_jeprof__nr_stacks(const struct tk_jeprof *d)
{
	return d->nr_stacks;
}

const struct tk_jeprof_stack *tk_jeprof__stack(const struct tk_jeprof *d, size_t i)
{
	return i < d->nr_stacks ? &d->stacks[i].pub : NULL;
}

size_t tk_jeprof__nr_threads(const struct tk_jeprof *d)
{
	return d->nr_threads;
}

const struct tk_jeprof_thread *tk_jeprof__thread(const struct tk_jeprof *d, size_t i)
{
	return i < d->nr_threads ? &d->threads[i] : NULL;
}

size_t tk_jeprof__nr_mappings(const struct tk_jeprof *d)
{
	return d->nr_maps;
}

const struct tk_jeprof_mapping *tk_jeprof__mapping(const struct tk_jeprof *d, size_t i)
{
	return i < d->nr_maps ? &d->maps[i] : NULL;
}

const char *tk_jeprof__program(const struct tk_jeprof *d)
{
	return d->program;
}

/* ---- unsampling ----------------------------------------------------------------- */

int tk_jeprof__unsample(uint64_t period, uint64_t objs, uint64_t bytes, int64_t *est_objs,
			int64_t *est_bytes)
{
	double scale, o, b;

	if (objs > INT64_MAX || bytes > INT64_MAX || (objs && !bytes))
		return -EINVAL;
	if (!period || !objs) {
		*est_objs = objs;
		*est_bytes = bytes;
		return 0;
	}
	/*
	 * The probability that an allocation of the pair's mean size was
	 * sampled (alloc_weight.h); its inverse scales the pair's counts whole.
	 */
	scale = tk_alloc__sampled_prob((double)bytes / (double)objs, (double)period);
	if (scale == 1.0) {
		/* every such allocation was sampled: exact, even past 2^53 */
		*est_objs = objs;
		*est_bytes = bytes;
		return 0;
	}
	scale = 1.0 / scale;
	o = (double)objs * scale + 0.5;
	b = (double)bytes * scale + 0.5;
	if (!(o < 0x1p63) || !(b < 0x1p63))
		return -ERANGE;
	*est_objs = (int64_t)o;
	*est_bytes = (int64_t)b;
	return 0;
}

int tk_jeprof__estimate(const struct tk_jeprof *d, const struct tk_jeprof_counts *c,
			struct tk_jeprof_estimate *out)
{
	int err;

	err = tk_jeprof__unsample(d->period, c->cur_objs, c->cur_bytes, &out->inuse_objs,
				  &out->inuse_bytes);
	if (!err)
		err = tk_jeprof__unsample(d->period, c->accum_objs, c->accum_bytes,
					  &out->alloc_objs, &out->alloc_bytes);
	return err;
}

/* ---- into the profile model ----------------------------------------------------- */

/* jeprof's list (RemoveUninterestingFrames, heap profiles) and jemalloc's own entries */
static const char *const alloc_entries[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "cfree", "memalign",
	"posix_memalign", "aligned_alloc", "valloc", "pvalloc", "mallocx", "rallocx",
	"xallocx", "dallocx", "sdallocx", "sdallocx_noflags", "malloc_default", "newImpl",
};

static bool is_alloc_entry(const char *name)
{
	static const char *const prefixes[] = { "_rjem_", "je_", "__libc_" };
	size_t i;

	if (!name)
		return false;
	/* operator new and new[], every overload; demangled or not */
	if (!strncmp(name, "_Znwm", 5) || !strncmp(name, "_Znam", 5) ||
	    !strncmp(name, "operator new", 12))
		return true;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (!strncmp(name, prefixes[i], n)) {
			name += n;
			break;
		}
	}
	for (i = 0; i < sizeof(alloc_entries) / sizeof(alloc_entries[0]); i++)
		if (!strcmp(name, alloc_entries[i]))
			return true;
	return false;
}

/* "libjemalloc.so.2", "libc.so": a shared object, by jeprof's test of the name. */
static bool is_shared_object(const char *path)
{
	const char *base = strrchr(path, '/'), *so;

	base = base ? base + 1 : path;
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (so[3] == '\0' || so[3] == '.')
			return true;
	return false;
}

static bool same_module(const struct tk_sym_frame *a, const struct tk_sym_frame *b)
{
	return a->module && b->module && !strcmp(a->module, b->module);
}

/* How many innermost frames belong to the allocator; see tk_jeprof__to_profile(). */
static uint32_t allocator_frames(const struct tk_sym_frame *f, const int *err, uint32_t n)
{
	uint32_t i, cut = 0;

	for (i = 0; i < n; i++)
		if (!err[i] && is_alloc_entry(f[i].function))
			cut = i + 1;
	if (!cut && n && f[0].module && is_shared_object(f[0].module))
		while (cut < n && err[cut] && same_module(&f[cut], &f[0]))
			cut++;
	return cut < n ? cut : 0;
}

static bool is_heap_profile(const struct tk_profile *p)
{
	static const char *const types[] = { "alloc_objects", "alloc_space", "inuse_objects",
					     "inuse_space" };
	int i;

	if (p->nr_values != 4)
		return false;
	for (i = 0; i < 4; i++)
		if (!p->value_types[i].type || strcmp(p->value_types[i].type, types[i]))
			return false;
	return true;
}

struct convert {
	const struct tk_jeprof *d;
	struct tk_symbolizer *s;
	struct tk_profile *p;
	uint32_t pid;
	char comm[16];
	struct tk_sym_frame frames[TK_JEPROF_MAX_FRAMES];
	int errs[TK_JEPROF_MAX_FRAMES];
	uint64_t locs[TK_JEPROF_MAX_FRAMES];
	uint64_t unsymbolized;
	uint64_t jit_unnamed;
};

static int convert_stack(struct convert *c, const struct tk_jeprof_stack *st)
{
	struct tk_jeprof_estimate est;
	int64_t values[TK_PROFILE_MAX_VALUES] = { 0 };
	uint32_t i, cut, n = st->nr_addrs;
	int err;

	err = tk_jeprof__estimate(c->d, &st->counts, &est);
	if (err)
		return err;
	values[0] = est.alloc_objs;
	values[1] = est.alloc_bytes;
	values[2] = est.inuse_objs;
	values[3] = est.inuse_bytes;
	if (!values[0] && !values[1] && !values[2] && !values[3])
		return 0;
	/* jemalloc's backtraces hold return addresses only: each is looked up one byte back */
	for (i = 0; i < n; i++) {
		uint64_t a = st->addrs[i];

		c->errs[i] = tk_symbolizer__user(c->s, c->pid, TK_JEPROF_GEN, a ? a - 1 : a,
						 &c->frames[i]);
	}
	cut = allocator_frames(c->frames, c->errs, n);
	for (i = cut; i < n; i++) {
		uint64_t a = st->addrs[i];

		err = tk_cpu_profile__user_location(c->p, &c->frames[i], c->errs[i], a,
						    a ? a - 1 : a, &c->locs[i - cut]);
		if (err)
			return err;
		if (c->errs[i])
			c->unsymbolized++;
		if (c->errs[i] && c->frames[i].jit)
			c->jit_unnamed++;
	}
	return tk_profile__add_sample(c->p, c->locs, n - cut, values, c->pid, 0, c->comm);
}

int tk_jeprof__to_profile(const struct tk_jeprof *d, struct tk_symbolizer *s, uint32_t pid,
			  struct tk_profile *p)
{
	struct tk_symbolizer_stats ss0, ss1;
	struct convert *c;
	size_t i;
	int err = 0;

	if (!d || !s || !p || !is_heap_profile(p))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->d = d;
	c->s = s;
	c->p = p;
	c->pid = pid;
	if (d->program) {
		const char *base = strrchr(d->program, '/');

		snprintf(c->comm, sizeof(c->comm), "%s", base ? base + 1 : d->program);
	}
	/* a mapping whose file cannot be read stays unknown; only -ENOMEM stops */
	tk_symbolizer__stats(s, &ss0);
	for (i = 0; i < d->nr_maps && err != -ENOMEM; i++) {
		const struct tk_jeprof_mapping *m = &d->maps[i];

		struct tk_file_id id = { m->dev_major, m->dev_minor, m->inode };

		/* the dump's process wrote these paths: only what it may read is read */
		err = tk_symbolizer__add_named_mapping(s, pid, TK_JEPROF_GEN, m->start, m->end,
						       m->offset, m->path, &id);
	}
	if (err == -ENOMEM)
		goto out;
	tk_symbolizer__stats(s, &ss1);
	if (ss1.named_refused > ss0.named_refused &&
	    tk_profile__add_comment(p, "%llu of the files the dump names were not read: not "
				    "files its process maps or could read (their frames stay "
				    "unnamed)", (unsigned long long)(ss1.named_refused -
								  ss0.named_refused)) == -ENOMEM) {
		err = -ENOMEM;
		goto out;
	}
	err = 0;
	for (i = 0; !err && i < d->nr_stacks; i++)
		err = convert_stack(c, &d->stacks[i].pub);
	if (err)
		goto out;
	p->period = d->period > INT64_MAX ? INT64_MAX : (int64_t)d->period;
	tk_profile__set_loss(p, "unsymbolized_frames", c->unsymbolized);
	tk_locs__report_jit(p, s, c->jit_unnamed);
	/* comments are notes: a full comment list is no failure */
	if (tk_profile__add_comment(p, "jemalloc heap profile: one sample per %llu bytes",
				    (unsigned long long)d->period) == -ENOMEM ||
	    (!d->has_accum &&
	     tk_profile__add_comment(p, "jemalloc ran without prof_accum: alloc_objects and "
					"alloc_space are 0") == -ENOMEM))
		err = -ENOMEM;
out:
	free(c);
	return err;
}
