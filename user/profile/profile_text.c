// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Text summary within 80 columns: a header, every loss counter (even at 0),
 * and the top functions by self samples. Functions are grouped as pprof
 * groups them (name and file name), self is the leaf's count and total counts
 * a function once per sample however often it recurses, and the rows are in
 * pprof's order (self, then name, then total), so `go tool pprof -top
 * -sample_index=samples` lists the same counts for the same names.
 *
 *   CPU profile: 106 samples in 1.00 s at 99 Hz, backend bpf
 *   losses: stack_map_full=3, truncated_stacks=0
 *       self   self%  total%  function                            module
 *         75   70.8%   70.8%  hot                                 app
 *          4    3.8%    3.8%  ksys_write                          [kernel.kallsyms]
 *          0    0.0%  100.0%  main                                app
 *
 * Names and modules too long for their column end in "...".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "profile/profile.h"
#include "profile/profile_int.h"

#define WIDTH 80
#define COL_SELF 8
#define COL_FUNC 34
#define COL_MODULE 18

struct row {
	size_t frame;
	int64_t self;
	int64_t total;
};

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct row *x = a, *y = b;
	const struct tk_frames *fr = ctx;
	int c;

	/* as go tool pprof -top orders them: self, then name */
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	c = strcmp(fr->frames[x->frame].name, fr->frames[y->frame].name);
	if (c)
		return c;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/*
 * Write @s in at most @width columns: control characters as '?', cut with
 * "..." when longer, padded with spaces to @width when @pad. Columns are counted in code points
 * and a cut never splits a UTF-8 sequence.
 */
static void put_cell(FILE *f, const char *s, int width, bool pad)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int cols = 0, n = 0, cut = width - 3;
	size_t i, cut_at = 0;

	for (i = 0; p[i]; i++) {
		if ((p[i] & 0xc0) == 0x80)
			continue;
		if (n == cut)
			cut_at = i;
		n++;
	}
	if (n <= width)
		cut_at = i;
	for (i = 0; i < cut_at; i++) {
		if ((p[i] & 0xc0) != 0x80)
			cols++;
		fputc(p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i], f);
	}
	if (n > width) {
		fputs("...", f);
		cols += 3;
	}
	for (; pad && cols < width; cols++)
		fputc(' ', f);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* @v in at most COL_SELF columns: bytes as 512B, 12.3K, 1.0G (binary units); or a time */
enum unit { PLAIN, BYTES, TIME_NS };

static const char *cell_value(char *buf, size_t size, int64_t v, enum unit bytes)
{
	static const char units[] = "KMGTPE";
	double x = (double)v;
	int u = -1;

	if (bytes == TIME_NS)
		return tk_fmt_ns(buf, size, x);
	if (!bytes || (v < 10000 && v > -10000)) {
		snprintf(buf, size, bytes ? "%" PRId64 "B" : "%" PRId64, v);
		return buf;
	}
	while ((x >= 1024 || x <= -1024) && u < 5) {
		x /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", x, units[u]);
	return buf;
}

/* How the value shown is counted: bytes and nanoseconds are written as such */
static enum unit value_unit(const struct tk_profile *p)
{
	const struct tk_value_type *vt = &p->value_types[tk_profile__display_index(p)];

	if (!p->nr_values || !vt->unit)
		return PLAIN;
	return !strcmp(vt->unit, "bytes") ? BYTES : !strcmp(vt->unit, "nanoseconds") ? TIME_NS :
									PLAIN;
}

static void header(const struct tk_profile *p, FILE *f, int64_t total)
{
	int i, col;

	const struct tk_value_type *vt = &p->value_types[tk_profile__display_index(p)];

	if (p->nr_values && vt->type && strcmp(vt->type, "samples"))
		/* a heap profile: what is counted is named, not called samples */
	{
		char human[32];

		fprintf(f, "Profile: %" PRId64 " %.24s (%.16s%s%s) in %.2f s, backend %.20s\n",
			total, vt->type, vt->unit ? vt->unit : "", value_unit(p) ? ", " : "",
			value_unit(p) ? cell_value(human, sizeof(human), total, value_unit(p)) : "",
			(double)p->duration_nanos / 1e9, p->backend ? p->backend : "unknown");
	}
	else
		fprintf(f, "CPU profile: %" PRId64 " samples in %.2f s at %d Hz, backend %.20s\n",
			total, (double)p->duration_nanos / 1e9, p->freq_hz,
			p->backend ? p->backend : "unknown");
	/* every counter, wrapped at 80 columns; nothing lost is left unsaid */
	col = fprintf(f, "losses:");
	if (!p->nr_losses)
		fprintf(f, " none counted");
	for (i = 0; i < p->nr_losses && i < TK_PROFILE_MAX_LOSSES; i++) {
		char item[80];
		int n;

		n = snprintf(item, sizeof(item), " %.48s=%llu%s", p->losses[i].name,
			     (unsigned long long)p->losses[i].count,
			     i + 1 < p->nr_losses ? "," : "");
		if (n >= (int)sizeof(item))
			n = sizeof(item) - 1;
		if (col + n > WIDTH) {
			col = fprintf(f, "\n       ");
			col--;
		}
		col += fprintf(f, "%s", item);
	}
	fputc('\n', f);
}

int tk_profile__write_text(const struct tk_profile *p, FILE *f, int top)
{
	struct tk_frames fr;
	struct row *rows = NULL;
	size_t *stamp = NULL;
	int64_t total;
	size_t i, nr, shown;
	enum unit bytes;
	int err;

	err = tk_frames__build(p, TK_FRAMES_BY_FUNCTION, &fr);
	if (err)
		return err;
	rows = calloc(fr.nr ? fr.nr : 1, sizeof(*rows));
	stamp = calloc(fr.nr ? fr.nr : 1, sizeof(*stamp));
	if (!rows || !stamp) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < fr.nr; i++)
		rows[i].frame = i;
	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];
		int64_t count = tk_sample__count(p, s);
		uint32_t j;

		if (!s->nr_locations)
			continue;
		rows[fr.of_loc[s->location_ids[0] - 1]].self += count;
		for (j = 0; j < s->nr_locations; j++) {
			size_t k = fr.of_loc[s->location_ids[j] - 1];

			if (stamp[k] == i + 1)
				continue;
			stamp[k] = i + 1;
			rows[k].total += count;
		}
	}
	qsort_r(rows, fr.nr, sizeof(*rows), row_cmp, &fr);

	total = tk_profile__total(p);
	bytes = value_unit(p);
	header(p, f, total);
	fprintf(f, "%*s  %6s  %6s  ", COL_SELF, "self", "self%", "total%");
	put_cell(f, "function", COL_FUNC, true);
	fprintf(f, "  module\n");
	nr = top > 0 && (size_t)top < fr.nr ? (size_t)top : fr.nr;
	for (i = 0, shown = 0; i < fr.nr && shown < nr; i++) {
		const struct tk_frame *fm = &fr.frames[rows[i].frame];

		/* a function only on stacks whose value is 0 (sorted among the others by name) */
		if (!rows[i].self && !rows[i].total)
			continue;
		shown++;
		char cell[32];

		fprintf(f, "%*s  %5.1f%%  %5.1f%%  ", COL_SELF,
			cell_value(cell, sizeof(cell), rows[i].self, bytes),
			pct(rows[i].self, total), pct(rows[i].total, total));
		put_cell(f, fm->name, COL_FUNC, true);
		fputs("  ", f);
		put_cell(f, fm->module ? fm->module : "-", COL_MODULE, false);
		fputc('\n', f);
	}
	if (!total)
		fprintf(f, "(no samples)\n");
	if (fflush(f) || ferror(f))
		err = -EIO;
out:
	free(stamp);
	free(rows);
	tk_frames__free(&fr);
	return err;
}
