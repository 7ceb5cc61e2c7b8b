// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Folded stacks, as flamegraph.pl and speedscope read them: one line per
 * distinct stack, "comm;root;...;leaf COUNT", lines sorted, equal stacks
 * merged. A ';' inside a name becomes ':' and control characters '?', so a
 * name never adds a frame or a line; spaces stay (readers split on the last
 * one). Kernel frames end in "_[k]", flamegraph.pl's convention.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "profile/profile_int.h"

struct line {
	char *text;
	int64_t count;
};

struct folded {
	struct line *lines;
	size_t nr, cap;
	struct tk_hashidx idx;
	char *buf;		/* the line being built */
	size_t len, bufcap;
	int err;
};

static void put(struct folded *fo, const char *s, size_t n)
{
	if (fo->err)
		return;
	if (fo->len + n + 1 > fo->bufcap) {
		size_t cap = fo->bufcap ? fo->bufcap : 256;
		char *b;

		while (cap < fo->len + n + 1)
			cap *= 2;
		b = realloc(fo->buf, cap);
		if (!b) {
			fo->err = -ENOMEM;
			return;
		}
		fo->buf = b;
		fo->bufcap = cap;
	}
	memcpy(fo->buf + fo->len, s, n);
	fo->len += n;
	fo->buf[fo->len] = '\0';
}

/* @name with ';' as ':' and control characters as '?'; "[unknown]" when empty. */
static void put_name(struct folded *fo, const char *name)
{
	const unsigned char *p;
	size_t start = fo->len, i;

	if (!name || !name[0]) {
		put(fo, "[unknown]", 9);
		return;
	}
	put(fo, name, strlen(name));
	if (fo->err)
		return;
	p = (const unsigned char *)fo->buf + start;
	for (i = 0; start + i < fo->len; i++) {
		if (p[i] == ';')
			fo->buf[start + i] = ':';
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fo->buf[start + i] = '?';
	}
}

static bool line_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct folded *)ctx)->lines[i].text, key) == 0;
}

static void add_line(struct folded *fo, int64_t count)
{
	uint64_t h = tk_hash__str(6, fo->buf);
	size_t i = tk_hashidx__find(&fo->idx, h, line_eq, fo, fo->buf);
	struct line *l;
	int err;

	if (i != TK_HASHIDX_NONE) {
		fo->lines[i].count += count;
		return;
	}
	if (fo->nr == fo->cap) {
		size_t cap = fo->cap ? fo->cap * 2 : 64;

		l = reallocarray(fo->lines, cap, sizeof(*l));
		if (!l) {
			fo->err = -ENOMEM;
			return;
		}
		fo->lines = l;
		fo->cap = cap;
	}
	l = &fo->lines[fo->nr];
	l->text = strdup(fo->buf);
	l->count = count;
	err = l->text ? tk_hashidx__add(&fo->idx, h, fo->nr) : -ENOMEM;
	if (err) {
		free(l->text);
		fo->err = err;
		return;
	}
	fo->nr++;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

int tk_profile__write_folded(const struct tk_profile *p, FILE *f)
{
	struct folded fo = {};
	struct tk_frames fr;
	size_t i;
	int err;

	err = tk_frames__build(p, TK_FRAMES_BY_NAME, &fr);
	if (err)
		return err;
	for (i = 0; i < p->nr_samples && !fo.err; i++) {
		const struct tk_sample *s = &p->samples[i];
		uint32_t j;

		fo.len = 0;
		put_name(&fo, s->comm);
		for (j = s->nr_locations; j-- > 0;) {
			const struct tk_frame *fm = tk_frames__at(&fr, s, j);

			put(&fo, ";", 1);
			put_name(&fo, fm->name);
			if (fm->kernel)
				put(&fo, "_[k]", 4);
		}
		if (!fo.err)
			add_line(&fo, tk_sample__count(p, s));
	}
	err = fo.err;
	if (!err) {
		if (fo.nr)
			qsort(fo.lines, fo.nr, sizeof(*fo.lines), line_cmp);
		for (i = 0; i < fo.nr; i++)
			if (fo.lines[i].count)
				fprintf(f, "%s %" PRId64 "\n", fo.lines[i].text, fo.lines[i].count);
		if (fflush(f) || ferror(f))
			err = -EIO;
	}
	for (i = 0; i < fo.nr; i++)
		free(fo.lines[i].text);
	free(fo.lines);
	free(fo.buf);
	tk_hashidx__free(&fo.idx);
	tk_frames__free(&fr);
	return err;
}
