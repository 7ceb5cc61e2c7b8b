// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Kernel text symbols from /proc/kallsyms: "ADDR TYPE NAME[\t[MODULE]]" per
 * line. Only text symbols are kept (t, T, w, W), sorted by address, one per
 * address; each reaches up to the next one. Module symbols belong to their
 * module ("[nf_tables]", "[bpf]"), the rest to "[kernel.kallsyms]". With
 * kptr_restrict every address reads as 0: the table is then empty and
 * marked restricted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/grow.h"
#include "core/fsutil.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"

/* How far the last symbol of a module reaches when nothing follows it. */
#define KSYM_OPEN_EXTENT 0x10000

#define KERNEL_MODULE "[kernel.kallsyms]"
#define KSYMS_MAX_LINE 4096

/* A symbol is a sort item: key its address, val its module index << 32 | name offset. */
static inline uint32_t ksym_name(const struct tk_sort_item *s)
{
	return (uint32_t)s->val;
}

static inline uint32_t ksym_mod(const struct tk_sort_item *s)
{
	return s->val >> 32;
}

struct kmod {
	char *name;		/* "[kernel.kallsyms]", "[nf_tables]" */
	uint64_t start;		/* lowest and highest symbol address */
	uint64_t last;
};

struct tk_ksyms {
	struct tk_sort_item *syms;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	struct kmod *mods;
	size_t nr_mods;
	size_t last_mod;	/* the module of the previous line, to skip the search */
	size_t nr_lines;	/* text symbol lines seen */
	size_t nr_zero;		/* ... whose address was 0 */
	bool restricted;
	struct kres *res;	/* streaming (tk_ksyms__resolve): no table, only these */
};

/*
 * Streaming: the addresses wanted, sorted, cut the address space into
 * intervals (w[i-1], w[i]] (i = 0..n, the last open). A symbol falls in
 * one; each interval keeps its highest symbol (the best of aliases, by the
 * table's rule: the lowest module index, then the name) and its lowest
 * (with the lowest module index there). The symbol holding w[i] is then
 * the highest of the last interval up to i that has one; the next symbol
 * the lowest of the first non-empty interval after i: exactly what the
 * table's sort, dedup and search give, without keeping 121k names.
 */
struct kint {
	uint64_t hi, lo;	/* highest and lowest symbol address in the interval */
	uint32_t hi_mod, lo_mod;
	bool any;
	char *name;		/* hi's */
	size_t name_cap;
};

/*
 * Module spans come from the symbols each module wins at its address (the
 * lowest module index does): a module's lowest or highest symbol may share
 * its address with a lower-indexed module's, and lose it. Never in a
 * kernel's kallsyms (modules, BPF and ftrace code do not share addresses
 * with the core or each other); when this filter of (address, module)
 * cannot rule it out, the table is built after all.
 */
#define KRES_BLOOM_BITS (1u << 21)

struct kres {
	const uint64_t *w;
	size_t n;
	struct kint *iv;	/* n + 1 */
	uint64_t *bloom;
};

/* Give back what doubling left unused: the table lives as long as the run. */
static void shrink(void **buf, size_t *cap, size_t n, size_t elem)
{
	void *p;

	if (!n || n == *cap)
		return;
	p = realloc(*buf, n * elem);
	if (p) {
		*buf = p;
		*cap = n;
	}
}

static int ksyms_new(struct tk_ksyms **out)
{
	struct tk_ksyms *k = calloc(1, sizeof(*k));

	*out = NULL;
	if (!k)
		return -ENOMEM;
	k->mods = calloc(1, sizeof(*k->mods));
	if (!k->mods || !(k->mods[0].name = strdup(KERNEL_MODULE))) {
		tk_ksyms__free(k);
		return -ENOMEM;
	}
	k->mods[0].start = UINT64_MAX;
	k->nr_mods = 1;
	*out = k;
	return 0;
}

void tk_ksyms__free(struct tk_ksyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->nr_mods; i++)
		free(k->mods[i].name);
	free(k->mods);
	free(k->syms);
	free(k->names);
	free(k);
}

/* The index of module @name (@len bytes, brackets included), added when new. */
static int module_index(struct tk_ksyms *k, const char *name, size_t len, size_t *out)
{
	struct kmod *m;
	size_t i;

	/* @name holds no NUL: a matching name is @len long */
	if (k->last_mod && !strncmp(k->mods[k->last_mod].name, name, len) &&
	    !k->mods[k->last_mod].name[len]) {
		*out = k->last_mod;
		return 0;
	}
	for (i = 1; i < k->nr_mods; i++) {
		if (!strncmp(k->mods[i].name, name, len) && !k->mods[i].name[len]) {
			*out = k->last_mod = i;
			return 0;
		}
	}
	if (k->nr_mods >= UINT32_MAX)
		return -E2BIG;
	m = realloc(k->mods, (k->nr_mods + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	k->mods = m;
	m = &k->mods[k->nr_mods];
	memset(m, 0, sizeof(*m));
	m->start = UINT64_MAX;	/* streaming keeps the span per line; finish() recomputes */
	m->name = strndup(name, len);
	if (!m->name)
		return -ENOMEM;
	*out = k->last_mod = k->nr_mods++;
	return 0;
}

/* Of aliases at one address, prefer names without leading underscores, then shorter ones. */
static bool better_name(const char *na, size_t la, const char *nb, size_t lb)
{
	size_t ua = 0, ub = 0;
	int c;

	while (ua < la && na[ua] == '_')
		ua++;
	while (ub < lb && nb[ub] == '_')
		ub++;
	if (ua != ub)
		return ua < ub;
	if (la != lb)
		return la < lb;
	c = memcmp(na, nb, la);
	return c < 0;
}

static uint64_t bloom_hash(uint64_t addr, uint32_t mod)
{
	uint64_t x = addr ^ ((uint64_t)mod + 1) * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb3f99cd3f53bULL;
	return x ^ (x >> 33);
}

/* Set (@set) or test the filter's three bits of (@addr, @mod). */
static bool bloom(uint64_t *b, uint64_t addr, uint32_t mod, bool set)
{
	uint64_t h = bloom_hash(addr, mod);
	int i;

	for (i = 0; i < 3; i++, h >>= 21) {
		uint32_t bit = h & (KRES_BLOOM_BITS - 1);

		if (set)
			b[bit / 64] |= 1ULL << (bit % 64);
		else if (!(b[bit / 64] & 1ULL << (bit % 64)))
			return false;
	}
	return true;
}

/* A text symbol, streamed: into its interval, its module's span and the filter. */
static int kres_add(struct tk_ksyms *k, uint64_t addr, size_t mi, const char *name, size_t nlen)
{
	struct kres *r = k->res;
	struct kmod *m = &k->mods[mi];
	size_t lo = 0, hi = r->n;
	struct kint *iv;

	if (addr < m->start)
		m->start = addr;
	if (addr > m->last)
		m->last = addr;
	bloom(r->bloom, addr, mi, true);
	while (lo < hi) {	/* the first wanted address >= @addr */
		size_t mid = lo + (hi - lo) / 2;

		if (r->w[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	iv = &r->iv[lo];
	if (!iv->any || addr < iv->lo || (addr == iv->lo && mi < iv->lo_mod)) {
		iv->lo = addr;
		iv->lo_mod = mi;
	}
	if (lo == r->n)		/* past the last address wanted: only ever a next symbol */
		goto done;
	if (!iv->any || addr > iv->hi ||
	    (addr == iv->hi &&
	     (mi < iv->hi_mod ||
	      (mi == iv->hi_mod && better_name(name, nlen, iv->name, strlen(iv->name)))))) {
		if (nlen + 1 > iv->name_cap) {
			char *p = realloc(iv->name, nlen + 1);

			if (!p)
				return -ENOMEM;
			iv->name = p;
			iv->name_cap = nlen + 1;
		}
		memcpy(iv->name, name, nlen);
		iv->name[nlen] = '\0';
		iv->hi = addr;
		iv->hi_mod = mi;
	}
done:
	iv->any = true;
	return 0;
}

/* One line of @len bytes, no newline. Lines that are not text symbols are skipped. */
static int add_line(struct tk_ksyms *k, const char *line, size_t len)
{
	const char *p = line, *end = line + len, *name, *name_end, *mod = NULL;
	size_t nlen, mod_len = 0, mi = 0;
	uint64_t addr = 0;
	int digits = 0, v, err;
	char type;

	while (p < end && (v = tk_hexval(*p)) >= 0) {
		if (++digits > 16)
			return 0;
		addr = addr << 4 | v;
		p++;
	}
	if (!digits || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return 0;
	type = p[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = p + 3;
	for (name_end = name; name_end < end && *name_end != '\t' && *name_end != ' ' &&
			      *name_end != '\0'; name_end++)
		;
	nlen = name_end - name;
	if (!nlen || nlen >= KSYMS_MAX_LINE)
		return 0;
	/* "\t[module]" */
	p = name_end;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	if (p < end && *p == '[') {
		const char *close = memchr(p, ']', end - p);

		if (!close || close - p < 2 || memchr(p, '\0', close - p))
			return 0;
		mod = p;
		mod_len = close - p + 1;
	}
	k->nr_lines++;
	if (!addr) {
		k->nr_zero++;
		return 0;
	}
	if (mod) {
		err = module_index(k, mod, mod_len, &mi);
		if (err)
			return err;
	}
	if (k->res)
		return kres_add(k, addr, mi, name, nlen);
	if (k->names_len > UINT32_MAX - nlen - 1)
		return -E2BIG;
	err = tk_grow((void **)&k->syms, &k->cap, k->nr + 1, sizeof(*k->syms), 4096);
	if (!err)
		err = tk_grow((void **)&k->names, &k->names_cap, k->names_len + nlen + 1, 1, 65536);
	if (err)
		return err;
	memcpy(k->names + k->names_len, name, nlen);
	k->names[k->names_len + nlen] = '\0';
	k->syms[k->nr].key = addr;
	k->syms[k->nr].val = (uint64_t)mi << 32 | k->names_len;
	k->nr++;
	k->names_len += nlen + 1;
	return 0;
}

static bool better_ksym(const struct tk_ksyms *k, const struct tk_sort_item *a,
			const struct tk_sort_item *b)
{
	const char *na = k->names + ksym_name(a), *nb = k->names + ksym_name(b);

	return better_name(na, strlen(na), nb, strlen(nb));
}

/* Sort, keep one symbol per address (the core kernel's, then the best named), span modules. */
static int finish(struct tk_ksyms *k)
{
	size_t i, j, n = 0;
	int err;

	k->restricted = k->nr_lines && k->nr_zero == k->nr_lines;
	if (!k->nr)
		return 0;
	err = tk_sort_items(k->syms, k->nr);
	if (err)
		return err;
	for (i = 0; i < k->nr; i = j) {
		struct tk_sort_item best = k->syms[i];

		for (j = i + 1; j < k->nr && k->syms[j].key == k->syms[i].key; j++) {
			const struct tk_sort_item *s = &k->syms[j];

			if (ksym_mod(s) < ksym_mod(&best) ||
			    (ksym_mod(s) == ksym_mod(&best) && better_ksym(k, s, &best)))
				best = *s;
		}
		k->syms[n++] = best;
	}
	k->nr = n;
	shrink((void **)&k->syms, &k->cap, n, sizeof(*k->syms));
	shrink((void **)&k->names, &k->names_cap, k->names_len, 1);
	for (i = 0; i < k->nr_mods; i++)
		k->mods[i].start = UINT64_MAX;
	for (i = 0; i < n; i++) {
		struct kmod *m = &k->mods[ksym_mod(&k->syms[i])];

		if (k->syms[i].key < m->start)
			m->start = k->syms[i].key;
		if (k->syms[i].key > m->last)
			m->last = k->syms[i].key;
	}
	return 0;
}

/* Every line of @len bytes of text to add_line. */
static int feed_text(struct tk_ksyms *k, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *nl;
	int err;

	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		err = add_line(k, p, nl - p);
		if (err)
			return err;
		p = nl + 1;
	}
	return 0;
}

/* proc_root/kallsyms line by line to add_line: 0, or a negative errno. */
static int feed_file(struct tk_ksyms *k, const char *proc_root)
{
	char path[4096], *buf;
	size_t have = 0, size = 1 << 18;
	bool skip = false;	/* in the rest of an overlong line */
	ssize_t n;
	int fd, err;

	err = tk_path_join(path, sizeof(path), proc_root ? proc_root : "/proc", "kallsyms");
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(size);
	err = buf ? 0 : -ENOMEM;
	/* streamed: the file is megabytes, only the text symbols are kept */
	while (!err) {
		char *p, *nl, *end;

		n = read(fd, buf + have, size - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		end = buf + have + n;
		for (p = buf; (nl = memchr(p, '\n', end - p)); p = nl + 1) {
			if (!skip)
				err = add_line(k, p, nl - p);
			skip = false;
			if (err)
				break;
		}
		if (err)
			break;
		have = end - p;
		if (n == 0) {
			if (have && !skip)
				err = add_line(k, p, have);
			break;
		}
		/* a line longer than the buffer is skipped whole */
		if (have == size) {
			have = 0;
			skip = true;
			continue;
		}
		memmove(buf, p, have);
	}
	free(buf);
	close(fd);
	return err;
}

int tk_ksyms__parse(const char *text, size_t len, struct tk_ksyms **out)
{
	struct tk_ksyms *k;
	int err;

	*out = NULL;
	err = ksyms_new(&k);
	if (err)
		return err;
	err = feed_text(k, text, len) ?: finish(k);
	if (err) {
		tk_ksyms__free(k);
		return err;
	}
	*out = k;
	return 0;
}

int tk_ksyms__load(const char *proc_root, struct tk_ksyms **out)
{
	struct tk_ksyms *k;
	int err;

	*out = NULL;
	err = ksyms_new(&k);
	if (err)
		return err;
	err = feed_file(k, proc_root) ?: finish(k);
	if (err) {
		tk_ksyms__free(k);
		return err;
	}
	*out = k;
	return 0;
}

bool tk_ksyms__restricted(const struct tk_ksyms *k)
{
	return k->restricted;
}

size_t tk_ksyms__count(const struct tk_ksyms *k)
{
	return k->nr;
}

int tk_ksyms__find(const struct tk_ksyms *k, uint64_t addr, struct tk_sym_frame *out)
{
	size_t lo = 0, hi = k->nr;
	const struct tk_sort_item *s, *next;
	const struct kmod *m;
	uint64_t end;

	memset(out, 0, sizeof(*out));
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].key <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ESRCH;
	s = &k->syms[lo - 1];
	next = lo < k->nr ? &k->syms[lo] : NULL;
	end = s->key + KSYM_OPEN_EXTENT;
	if (next && (ksym_mod(next) == ksym_mod(s) || next->key < end))
		end = next->key;
	if (end < s->key)
		end = UINT64_MAX;
	if (addr >= end)
		return -ESRCH;
	m = &k->mods[ksym_mod(s)];
	out->function = k->names + ksym_name(s);
	out->module = m->name;
	out->map_start = m->start;
	out->map_limit = m->last + KSYM_OPEN_EXTENT < m->last ? UINT64_MAX :
			 m->last + KSYM_OPEN_EXTENT;
	out->map_offset = 0;
	out->module_offset = addr - m->start;
	return 0;
}

/* ---- streaming: only the addresses wanted (tk_ksyms__resolve) ---------------------------- */

struct tk_ksyms_resolved {
	uint64_t *w;		/* the addresses, sorted, distinct */
	size_t n;
	struct tk_sym_frame *f;
	bool *found;
	struct tk_ksyms *k;	/* the modules (streamed), or the whole table */
	struct kint *iv;	/* the names (streamed) */
	bool restricted, streamed;
};

void tk_ksyms_resolved__free(struct tk_ksyms_resolved *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; r->iv && i <= r->n; i++)
		free(r->iv[i].name);
	free(r->iv);
	tk_ksyms__free(r->k);
	free(r->w);
	free(r->f);
	free(r->found);
	free(r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Could module @m's lowest or highest symbol have lost its address to a lower-indexed module? */
static bool maybe_shadowed(const struct tk_ksyms *k, const uint64_t *bl, uint32_t m)
{
	uint64_t at[2] = { k->mods[m].start, k->mods[m].last };
	uint32_t i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < m; j++)
			if (k->mods[j].start <= at[i] && at[i] <= k->mods[j].last &&
			    bloom((uint64_t *)bl, at[i], j, false))
				return true;
	return false;
}

/* The frames, from the intervals; -EAGAIN when a module's span needs the table. */
static int kres_frames(struct tk_ksyms_resolved *r, const struct kres *kr)
{
	struct tk_ksyms *k = r->k;
	size_t i, j, floor = SIZE_MAX, *next;
	uint8_t *checked;
	int err = 0;

	next = malloc((r->n + 1) * sizeof(*next));
	checked = calloc(k->nr_mods, 1);
	if (!next || !checked) {
		err = -ENOMEM;
		goto out;
	}
	/* next[i]: the first non-empty interval after i */
	for (j = SIZE_MAX, i = r->n + 1; i-- > 0;) {
		next[i] = j;
		if (kr->iv[i].any)
			j = i;
	}
	for (i = 0; i < r->n; i++) {
		const struct kint *s, *nx;
		const struct kmod *m;
		uint64_t end;

		if (kr->iv[i].any)
			floor = i;
		if (floor == SIZE_MAX)
			continue;
		s = &kr->iv[floor];
		nx = next[i] == SIZE_MAX ? NULL : &kr->iv[next[i]];
		end = s->hi + KSYM_OPEN_EXTENT;
		if (nx && (nx->lo_mod == s->hi_mod || nx->lo < end))
			end = nx->lo;
		if (end < s->hi)
			end = UINT64_MAX;
		if (r->w[i] >= end)
			continue;
		if (s->hi_mod && !checked[s->hi_mod]) {
			checked[s->hi_mod] = 1;
			if (maybe_shadowed(k, kr->bloom, s->hi_mod)) {
				err = -EAGAIN;
				goto out;
			}
		}
		m = &k->mods[s->hi_mod];
		r->found[i] = true;
		r->f[i].function = s->name;
		r->f[i].module = m->name;
		r->f[i].map_start = m->start;
		r->f[i].map_limit = m->last + KSYM_OPEN_EXTENT < m->last ? UINT64_MAX :
				    m->last + KSYM_OPEN_EXTENT;
		r->f[i].module_offset = r->w[i] - m->start;
	}
out:
	free(next);
	free(checked);
	return err;
}

/* One pass over the text (@text, or proc_root/kallsyms when NULL) for r->w. */
static int kres_stream(struct tk_ksyms_resolved *r, const char *proc_root, const char *text,
		       size_t len)
{
	struct kres kr = { .w = r->w, .n = r->n };
	int err;

	err = ksyms_new(&r->k);
	if (err)
		return err;
	kr.iv = calloc(r->n + 1, sizeof(*kr.iv));
	kr.bloom = calloc(KRES_BLOOM_BITS / 64, sizeof(*kr.bloom));
	if (!kr.iv || !kr.bloom) {
		free(kr.iv);
		free(kr.bloom);
		return -ENOMEM;
	}
	r->iv = kr.iv;
	r->k->res = &kr;
	err = text ? feed_text(r->k, text, len) : feed_file(r->k, proc_root);
	r->k->res = NULL;
	r->restricted = r->k->nr_lines && r->k->nr_zero == r->k->nr_lines;
	if (!err)
		err = kres_frames(r, &kr);
	free(kr.bloom);
	r->streamed = !err;
	return err;
}

/* The table after all (a module's span may differ): every address looked up in it. */
static int kres_table(struct tk_ksyms_resolved *r, const char *proc_root, const char *text,
		      size_t len)
{
	size_t i;
	int err;

	tk_ksyms__free(r->k);
	r->k = NULL;
	memset(r->found, 0, r->n * sizeof(*r->found));
	err = text ? tk_ksyms__parse(text, len, &r->k) : tk_ksyms__load(proc_root, &r->k);
	if (err)
		return err;
	r->restricted = r->k->restricted;
	for (i = 0; i < r->n; i++)
		r->found[i] = !tk_ksyms__find(r->k, r->w[i], &r->f[i]);
	return 0;
}

static int resolve(const char *proc_root, const char *text, size_t len, const uint64_t *addrs,
		   size_t n, struct tk_ksyms_resolved **out)
{
	struct tk_ksyms_resolved *r;
	size_t i, d = 0;
	int err;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->w = malloc((n ? n : 1) * sizeof(*r->w));
	r->f = calloc(n ? n : 1, sizeof(*r->f));
	r->found = calloc(n ? n : 1, sizeof(*r->found));
	if (!r->w || !r->f || !r->found) {
		tk_ksyms_resolved__free(r);
		return -ENOMEM;
	}
	if (n)
		memcpy(r->w, addrs, n * sizeof(*r->w));
	qsort(r->w, n, sizeof(*r->w), cmp_u64);
	for (i = 0; i < n; i++)
		if (!d || r->w[i] != r->w[d - 1])
			r->w[d++] = r->w[i];
	r->n = d;
	err = kres_stream(r, proc_root, text, len);
	if (err == -EAGAIN)
		err = kres_table(r, proc_root, text, len);
	if (err) {
		tk_ksyms_resolved__free(r);
		return err;
	}
	*out = r;
	return 0;
}

int tk_ksyms__resolve(const char *proc_root, const uint64_t *addrs, size_t n,
		      struct tk_ksyms_resolved **out)
{
	return resolve(proc_root, NULL, 0, addrs, n, out);
}

int tk_ksyms__resolve_text(const char *text, size_t len, const uint64_t *addrs, size_t n,
			   struct tk_ksyms_resolved **out)
{
	return resolve(NULL, text, len, addrs, n, out);
}

bool tk_ksyms_resolved__restricted(const struct tk_ksyms_resolved *r)
{
	return r->restricted;
}

bool tk_ksyms_resolved__streamed(const struct tk_ksyms_resolved *r)
{
	return r->streamed;
}

int tk_ksyms_resolved__find(const struct tk_ksyms_resolved *r, uint64_t addr,
			    struct tk_sym_frame *out)
{
	size_t lo = 0, hi = r->n;

	memset(out, 0, sizeof(*out));
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->w[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->n || r->w[lo] != addr)
		return -ENOENT;
	if (!r->found[lo])
		return -ESRCH;
	*out = r->f[lo];
	return 0;
}
