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
	m->name = strndup(name, len);
	if (!m->name)
		return -ENOMEM;
	*out = k->last_mod = k->nr_mods++;
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

/* Of aliases at one address, prefer names without leading underscores, then shorter ones. */
static bool better_ksym(const struct tk_ksyms *k, const struct tk_sort_item *a,
			const struct tk_sort_item *b)
{
	const char *na = k->names + ksym_name(a), *nb = k->names + ksym_name(b);
	size_t ua = strspn(na, "_"), ub = strspn(nb, "_"), la, lb;

	if (ua != ub)
		return ua < ub;
	la = strlen(na);
	lb = strlen(nb);
	if (la != lb)
		return la < lb;
	return strcmp(na, nb) < 0;
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

int tk_ksyms__parse(const char *text, size_t len, struct tk_ksyms **out)
{
	const char *p = text, *end = text + len, *nl;
	struct tk_ksyms *k;
	int err;

	err = ksyms_new(&k);
	if (err)
		return err;
	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		err = add_line(k, p, nl - p);
		if (err) {
			tk_ksyms__free(k);
			return err;
		}
		p = nl + 1;
	}
	err = finish(k);
	if (err) {
		tk_ksyms__free(k);
		return err;
	}
	*out = k;
	return 0;
}

int tk_ksyms__load(const char *proc_root, struct tk_ksyms **out)
{
	char path[4096], *buf;
	size_t have = 0, size = 1 << 18;
	struct tk_ksyms *k;
	bool skip = false;	/* in the rest of an overlong line */
	ssize_t n;
	int fd, err;

	*out = NULL;
	err = tk_path_join(path, sizeof(path), proc_root ? proc_root : "/proc", "kallsyms");
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(size);
	err = buf ? ksyms_new(&k) : -ENOMEM;
	if (err)
		goto out;
	/* streamed: the file is megabytes, only the text symbols are kept */
	for (;;) {
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
	if (!err)
		err = finish(k);
	if (err) {
		tk_ksyms__free(k);
		goto out;
	}
	*out = k;
out:
	free(buf);
	close(fd);
	return err;
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
