// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * perf map files: the names a JIT gives its code, "START SIZE NAME" per line,
 * START and SIZE in hex with or without 0x (what Java's perf-map-agent and
 * -XX:+DumpPerfMapAtExit, Node's --perf-basic-prof and Python 3.12's -X perf
 * write to /tmp/perf-PID.map). The file is outside input, written by the
 * profiled program: lines are bounded (a longer one is skipped whole), so is
 * the number of entries and the bytes of names; a line that does not parse
 * is skipped and counted, never an error.
 *
 * The file grows while the program runs (code is named as it is JITted), so
 * it is fed in pieces: whole lines only, the rest of a line is taken with the
 * next piece. Entries are kept in file order; the lookup table is built on
 * the first lookup after a feed: sorted by start and, where two entries
 * overlap, the later line wins (a JIT reuses the address of code it freed),
 * the earlier is dropped and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/fsutil.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"

#define NAMES_MAX (64u << 20)	/* bytes of names kept, NULs included */

struct pm_ent {
	uint64_t start;
	uint64_t size;
	uint32_t name;		/* offset in names */
};

struct tk_perfmap {
	struct pm_ent *ents;		/* in file order */
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	struct tk_sort_item *index;	/* key start, val entry: sorted, disjoint */
	size_t nr_index;
	uint64_t lo, hi;		/* what the index spans */
	bool dirty;			/* entries added since the index was built */
	bool skip;			/* in the rest of an overlong line */
	struct tk_perfmap_stats st;
};

struct tk_perfmap *tk_perfmap__new(void)
{
	return calloc(1, sizeof(struct tk_perfmap));
}

void tk_perfmap__free(struct tk_perfmap *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->names);
	free(m->index);
	free(m);
}

/* A hex number with an optional 0x; false when there is none or it passes 64 bits. */
static bool parse_hex(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int digits = 0, d;

	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && tk_hexval(p[2]) >= 0)
		p += 2;
	while (p < end && (d = tk_hexval(*p)) >= 0) {
		/* leading zeros are no digits of the value */
		if ((v || d) && ++digits > 16)
			return false;
		v = v << 4 | d;
		p++;
	}
	if (p == *pp)
		return false;
	*pp = p;
	*out = v;
	return true;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* One line of @len bytes, without its newline. */
static int add_line(struct tk_perfmap *m, const char *line, size_t len)
{
	const char *p = line, *end = line + len, *name;
	uint64_t start, size;
	size_t nlen;

	m->st.lines++;
	while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	p = skip_blanks(p, end);
	if (p == end)
		return 0;	/* an empty line is nothing, not garbage */
	if (!parse_hex(&p, end, &start) || p == end || (*p != ' ' && *p != '\t'))
		goto bad;
	p = skip_blanks(p, end);
	if (!parse_hex(&p, end, &size) || p == end || (*p != ' ' && *p != '\t'))
		goto bad;
	name = skip_blanks(p, end);
	nlen = end - name;
	/* no room for nothing, nor code that wraps past the top of the address space */
	if (!size || !nlen || start + size < start)
		goto bad;
	return tk_perfmap__add(m, start, size, name, nlen);
bad:
	m->st.bad++;
	return 0;
}

int tk_perfmap__add(struct tk_perfmap *m, uint64_t start, uint64_t size, const char *name,
		    size_t nlen)
{
	char *dst;
	size_t i;
	int err;

	if (!size || !nlen || start + size < start || nlen >= TK_PERFMAP_MAX_LINE) {
		m->st.bad++;
		return 0;
	}
	if (m->nr >= TK_PERFMAP_MAX_ENTRIES || m->names_len + nlen + 1 > NAMES_MAX) {
		m->st.over_limit++;
		return 0;
	}
	err = tk_grow((void **)&m->ents, &m->cap, m->nr + 1, sizeof(*m->ents), 256);
	if (!err)
		err = tk_grow((void **)&m->names, &m->names_cap, m->names_len + nlen + 1, 1, 4096);
	if (err)
		return err;
	dst = m->names + m->names_len;
	/* names reach text outputs: no control characters (a NUL would cut the name) */
	for (i = 0; i < nlen; i++)
		dst[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	dst[nlen] = '\0';
	m->ents[m->nr++] = (struct pm_ent){ start, size, (uint32_t)m->names_len };
	m->names_len += nlen + 1;
	m->dirty = true;
	return 0;
}

int tk_perfmap__feed(struct tk_perfmap *m, const char *text, size_t len, bool eof, size_t *used)
{
	const char *p = text, *end = text + len, *nl;
	int err = 0;

	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (!nl) {
			/* a line still being written, unless it is already too long */
			if (m->skip || (size_t)(end - p) >= TK_PERFMAP_MAX_LINE) {
				if (!m->skip) {
					m->st.lines++;
					m->st.bad++;
				}
				m->skip = !eof;
				p = end;
			} else if (eof) {
				err = add_line(m, p, end - p);
				if (err)
					goto out;
				p = end;
			}
			break;
		}
		if (m->skip) {
			m->skip = false;
		} else if ((size_t)(nl - p) >= TK_PERFMAP_MAX_LINE) {
			m->st.lines++;
			m->st.bad++;
		} else {
			err = add_line(m, p, nl - p);
			if (err)
				goto out;
		}
		p = nl + 1;
	}
out:
	/* what was added is used, even when memory ran out after it */
	*used = p - text;
	return err;
}

int tk_perfmap__parse(const char *text, size_t len, struct tk_perfmap **out)
{
	struct tk_perfmap *m = tk_perfmap__new();
	size_t used;
	int err;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	err = tk_perfmap__feed(m, text, len, true, &used);
	if (err) {
		tk_perfmap__free(m);
		return err;
	}
	*out = m;
	return 0;
}

/* Sort by start (file order among equal starts) and keep the later of overlapping entries. */
static int build_index(struct tk_perfmap *m)
{
	struct tk_sort_item *ix;
	size_t i, n = 0;
	int err;

	ix = realloc(m->index, (m->nr ? m->nr : 1) * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	m->index = ix;
	for (i = 0; i < m->nr; i++)
		ix[i] = (struct tk_sort_item){ m->ents[i].start, i };
	err = tk_sort_items(ix, m->nr);
	if (err)
		return err;
	m->st.overlapping = 0;
	for (i = 0; i < m->nr; i++) {
		const struct pm_ent *e = &m->ents[ix[i].val];
		const struct pm_ent *last = n ? &m->ents[ix[n - 1].val] : NULL;

		/*
		 * Sorted by start, so @e can overlap only the last one kept: the
		 * one before that ends at or before the last one's start.
		 */
		if (last && e->start < last->start + last->size) {
			m->st.overlapping++;
			if (ix[i].val > ix[n - 1].val)
				ix[n - 1] = ix[i];
			continue;
		}
		ix[n++] = ix[i];
	}
	m->nr_index = n;
	m->lo = m->hi = 0;
	if (n) {
		const struct pm_ent *e = &m->ents[ix[n - 1].val];

		m->lo = ix[0].key;
		m->hi = e->start + e->size;
	}
	m->dirty = false;
	return 0;
}

const char *tk_perfmap__find(struct tk_perfmap *m, uint64_t addr, uint64_t *start,
			     uint64_t *size)
{
	size_t lo = 0, hi;
	const struct pm_ent *e;

	if (m->dirty && build_index(m))
		return NULL;
	hi = m->nr_index;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->index[mid].key <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &m->ents[m->index[lo - 1].val];
	if (addr - e->start >= e->size)
		return NULL;
	if (start)
		*start = e->start;
	if (size)
		*size = e->size;
	return m->names + e->name;
}

void tk_perfmap__span(struct tk_perfmap *m, uint64_t *lo, uint64_t *hi)
{
	if (m->dirty)
		build_index(m);
	*lo = m->lo;
	*hi = m->hi;
}

void tk_perfmap__stats(const struct tk_perfmap *m, struct tk_perfmap_stats *st)
{
	*st = m->st;
	st->entries = m->nr_index;
}
