// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * SVG flame graph, self-contained: no external script, font or address. The
 * stacks are merged into a tree (all → comm → root … leaf, siblings in name
 * order, as flamegraph.pl draws them), each frame a <g> holding a <title>
 * ("name (N samples, P%)": what hovering shows), a <rect> as wide as its
 * share and a <text> label that fits. The root is at the bottom. Colors come
 * from a hash of the name: warm for user code, aqua for the kernel, grey for
 * "all" and the process names. Frames under 0.1 % of the total are left out;
 * their samples still count in their parent. An inline script adds details
 * on hover and zoom on click; without it the picture is the same.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/json.h"
#include "profile/profile_int.h"

#define IMG_WIDTH 1200
#define XPAD 10
#define FRAME_H 16
#define TOP 60		/* title, subtitle */
#define BOTTOM 34	/* details line */
#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59)
#define MIN_SHARE_DIV 1000	/* frames under total / 1000 are left out */
#define NONE UINT32_MAX

enum node_kind { NODE_ALL, NODE_COMM, NODE_FRAME };

struct node {
	uint32_t parent;
	uint32_t label;		/* a frame index, or a comm index */
	uint8_t kind;
	uint32_t depth;
	uint32_t first_child;
	uint32_t next_sibling;
	int64_t value;
	int64_t x;		/* samples to the left of the frame */
};

struct tree {
	const struct tk_profile *p;
	struct tk_frames fr;
	struct node *nodes;
	size_t nr, cap;
	struct tk_hashidx child_idx;	/* (parent, kind, label) → node */
	const char **comms;		/* distinct process names */
	size_t nr_comms, cap_comms;
	struct tk_hashidx comm_idx;
	uint32_t max_depth;
	int err;
};

static const char *node_name(const struct tree *t, const struct node *n)
{
	switch (n->kind) {
	case NODE_ALL:
		return "all";
	case NODE_COMM:
		return t->comms[n->label];
	}
	return t->fr.frames[n->label].name;
}

static int grow(void **arr, size_t *cap, size_t nr, size_t elem)
{
	size_t ncap;
	void *a;

	if (nr < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	a = reallocarray(*arr, ncap, elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = ncap;
	return 0;
}

static bool comm_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct tree *)ctx)->comms[i], key) == 0;
}

/* The index of process name @comm, added when new; NONE on error. */
static uint32_t comm_index(struct tree *t, const char *comm)
{
	uint64_t h;
	size_t i;
	int err;

	if (!comm[0])
		comm = "[unknown]";
	h = tk_hash__str(7, comm);
	i = tk_hashidx__find(&t->comm_idx, h, comm_eq, t, comm);
	if (i != TK_HASHIDX_NONE)
		return i;
	err = grow((void **)&t->comms, &t->cap_comms, t->nr_comms, sizeof(*t->comms));
	if (!err)
		err = tk_hashidx__add(&t->comm_idx, h, t->nr_comms);
	if (err) {
		t->err = err;
		return NONE;
	}
	t->comms[t->nr_comms] = comm;
	return t->nr_comms++;
}

struct child_key {
	uint32_t parent, label;
	uint8_t kind;
};

static bool child_eq(const void *ctx, size_t i, const void *key)
{
	const struct node *n = &((const struct tree *)ctx)->nodes[i];
	const struct child_key *k = key;

	return n->parent == k->parent && n->label == k->label && n->kind == k->kind;
}

/* The child of @parent for (@kind, @label), made when new; NONE on error. */
static uint32_t child(struct tree *t, uint32_t parent, enum node_kind kind, uint32_t label)
{
	struct child_key k = { parent, label, kind };
	struct node *n;
	uint64_t h;
	size_t i;
	int err;

	if (label == NONE)
		return NONE;
	h = tk_hash__u64(tk_hash__u64(tk_hash__u64(8, parent), label), kind);
	i = tk_hashidx__find(&t->child_idx, h, child_eq, t, &k);
	if (i != TK_HASHIDX_NONE)
		return i;
	err = grow((void **)&t->nodes, &t->cap, t->nr, sizeof(*t->nodes));
	if (!err)
		err = tk_hashidx__add(&t->child_idx, h, t->nr);
	if (err) {
		t->err = err;
		return NONE;
	}
	n = &t->nodes[t->nr];
	*n = (struct node){
		.parent = parent,
		.label = label,
		.kind = kind,
		.depth = t->nodes[parent].depth + 1,
		.first_child = NONE,
		.next_sibling = NONE,
	};
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	return t->nr++;
}

static int build(struct tree *t)
{
	const struct tk_profile *p = t->p;
	size_t i;

	t->err = grow((void **)&t->nodes, &t->cap, 0, sizeof(*t->nodes));
	if (t->err)
		return t->err;
	t->nodes[0] = (struct node){ .parent = NONE, .first_child = NONE, .next_sibling = NONE };
	t->nr = 1;
	for (i = 0; i < p->nr_samples && !t->err; i++) {
		const struct tk_sample *s = &p->samples[i];
		int64_t count = tk_sample__count(p, s);
		uint32_t n, j;

		if (count <= 0)
			continue;
		t->nodes[0].value += count;
		n = child(t, 0, NODE_COMM, comm_index(t, s->comm));
		if (n == NONE)
			break;
		t->nodes[n].value += count;
		for (j = s->nr_locations; j-- > 0;) {
			n = child(t, n, NODE_FRAME, t->fr.of_loc[s->location_ids[j] - 1]);
			if (n == NONE)
				break;
			t->nodes[n].value += count;
		}
	}
	return t->err;
}

static int sibling_cmp(const void *a, const void *b, void *ctx)
{
	const struct tree *t = ctx;
	const struct node *x = &t->nodes[*(const uint32_t *)a];
	const struct node *y = &t->nodes[*(const uint32_t *)b];
	int c = strcmp(node_name(t, x), node_name(t, y));

	if (c)
		return c;
	if (x->kind == NODE_FRAME && y->kind == NODE_FRAME)
		return (int)t->fr.frames[x->label].kernel - (int)t->fr.frames[y->label].kernel;
	return 0;
}

/* Link children in name order and give every node its x (in samples). */
static int layout(struct tree *t)
{
	uint32_t *order, *start, *fill;
	size_t i;
	int err = 0;

	order = malloc(t->nr * sizeof(*order));
	start = calloc(t->nr + 1, sizeof(*start));
	fill = calloc(t->nr + 1, sizeof(*fill));
	if (!order || !start || !fill) {
		err = -ENOMEM;
		goto out;
	}
	/* children of each node side by side in @order, then sorted by name */
	for (i = 1; i < t->nr; i++)
		start[t->nodes[i].parent + 1]++;
	for (i = 0; i < t->nr; i++)
		start[i + 1] += start[i];
	for (i = 1; i < t->nr; i++) {
		uint32_t pa = t->nodes[i].parent;

		order[start[pa] + fill[pa]++] = i;
	}
	for (i = 0; i < t->nr; i++) {
		uint32_t k, nr = start[i + 1] - start[i];

		qsort_r(order + start[i], nr, sizeof(*order), sibling_cmp, t);
		for (k = nr; k-- > 0;) {
			struct node *c = &t->nodes[order[start[i] + k]];

			c->next_sibling = t->nodes[i].first_child;
			t->nodes[i].first_child = order[start[i] + k];
		}
	}
	/* parents come before their children in the array */
	for (i = 0; i < t->nr; i++) {
		int64_t x = t->nodes[i].x;
		uint32_t c;

		for (c = t->nodes[i].first_child; c != NONE; c = t->nodes[c].next_sibling) {
			t->nodes[c].x = x;
			x += t->nodes[c].value;
		}
	}
out:
	free(order);
	free(start);
	free(fill);
	return err;
}

/* ---- drawing -------------------------------------------------------------------- */

/*
 * At most @max code points of @s as XML character data: markup characters
 * escaped, control characters and invalid UTF-8 as '?' (XML allows neither).
 * Returns how many code points were written.
 */
static size_t put_xml(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p && n < max) {
		int len;

		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			if (*p >= 0x80) {
				len = tk_utf8_len(p);
				if (len) {
					fwrite(p, 1, len, f);
					p += len;
					n++;
					continue;
				}
				fputc('?', f);
			} else {
				fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
			}
		}
		p++;
		n++;
	}
	return n;
}

static size_t code_points(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void color(const struct tree *t, const struct node *n, int rgb[3])
{
	uint64_t h = tk_hash__str(9, node_name(t, n));
	double v1 = (double)(h & 0xffff) / 0x10000;
	double v2 = (double)(h >> 16 & 0xffff) / 0x10000;
	double v3 = (double)(h >> 32 & 0xffff) / 0x10000;

	if (n->kind != NODE_FRAME) {
		rgb[0] = rgb[1] = 190 + (int)(20 * v1);
		rgb[2] = rgb[0] + 10;
	} else if (t->fr.frames[n->label].kernel) {
		rgb[0] = 50 + (int)(60 * v1);
		rgb[1] = 165 + (int)(55 * v1);
		rgb[2] = 165 + (int)(55 * v2);
	} else {
		rgb[0] = 205 + (int)(50 * v3);
		rgb[1] = (int)(230 * v1);
		rgb[2] = (int)(55 * v2);
	}
}

static void frame(FILE *f, const struct tree *t, const struct node *n, int64_t total)
{
	const double scale = (double)(IMG_WIDTH - 2 * XPAD) / (double)total;
	double x = XPAD + (double)n->x * scale, w = (double)n->value * scale;
	int y = TOP + (int)(t->max_depth - n->depth) * FRAME_H;
	const char *name = node_name(t, n);
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0, len = code_points(name);
	int rgb[3];

	color(t, n, rgb);
	fputs("<g class=\"f\"><title>", f);
	put_xml(f, name, SIZE_MAX);
	fprintf(f, " (%" PRId64 " sample%s, %.2f%%)</title>", n->value, n->value == 1 ? "" : "s",
		100.0 * (double)n->value / (double)total);
	fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" "
		"rx=\"2\"/>", x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + 10.5);
	if (fit >= 3 && len <= fit) {
		put_xml(f, name, len);
	} else if (fit >= 3) {
		put_xml(f, name, fit - 2);
		fputs("..", f);
	}
	fputs("</text></g>\n", f);
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function () {\n"
	"  var svg = %s, W = " "%d" ", PAD = " "%d" ", CW = %.2f;\n"
	"  var details = svg.querySelector('#%sdetails');\n"
	"  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.f'));\n"
	"  var re = /^(.*) \\(\\d+ samples?, [\\d.]+%%\\)$/;\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    g.ox = parseFloat(r.getAttribute('x')); g.ow = parseFloat(r.getAttribute('width'));\n"
	"    g.oy = parseFloat(r.getAttribute('y'));\n"
	"    var m = re.exec(g.querySelector('title').textContent); g.fname = m ? m[1] : '';\n"
	"    g.addEventListener('mouseover', function () {\n"
	"      details.textContent = g.querySelector('title').textContent; });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"  });\n"
	"  function place(g, x, w) {\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    r.setAttribute('x', x.toFixed(1)); r.setAttribute('width', w.toFixed(1));\n"
	"    t.setAttribute('x', (x + 3).toFixed(1));\n"
	"    var fit = Math.floor((w - 6) / CW), s = g.fname;\n"
	"    t.textContent = fit < 3 ? '' : s.length <= fit ? s : s.slice(0, fit - 2) + '..';\n"
	"  }\n"
	"  function zoom(z) {\n"
	"    var ratio = (W - 2 * PAD) / z.ow;\n"
	"    frames.forEach(function (g) {\n"
	"      var inside = g.ox >= z.ox - 0.05 && g.ox + g.ow <= z.ox + z.ow + 0.05;\n"
	"      if (g.oy > z.oy && g.ox <= z.ox + 0.05 && g.ox + g.ow >= z.ox + z.ow - 0.05) {\n"
	"        g.style.display = ''; g.style.opacity = '0.6'; place(g, PAD, W - 2 * PAD);\n"
	"      } else if (g.oy <= z.oy && inside) {\n"
	"        g.style.display = ''; g.style.opacity = '';\n"
	"        place(g, PAD + (g.ox - z.ox) * ratio, g.ow * ratio);\n"
	"      } else {\n"
	"        g.style.display = 'none';\n"
	"      }\n"
	"    });\n"
	"  }\n"
	"  svg.querySelector('#%sunzoom').addEventListener('click', function () {\n"
	"    frames.forEach(function (g) {\n"
	"      g.style.display = ''; g.style.opacity = ''; place(g, g.ox, g.ow); });\n"
	"  });\n"
	"})();\n"
	"]]></script>\n";

/*
 * @id NULL: a document of its own. Otherwise an <svg> element to place inside an
 * HTML page: no XML declaration, the element's id is @id and its own ids and
 * its script's lookups are prefixed with "@id-", so that several graphs on one
 * page stay apart.
 */
static void draw(FILE *f, const struct tree *t, const char *title, const char *id)
{
	char pre[72], root[96];
	const struct tk_profile *p = t->p;
	int64_t total = t->nodes[0].value;
	int height = TOP + (int)(t->max_depth + 1) * FRAME_H + BOTTOM;
	const struct tk_value_type *vt =
		p->nr_values > 0 ? &p->value_types[tk_profile__display_index(p)] : NULL;
	uint64_t lost = 0;
	size_t i;
	int l;

	for (l = 0; l < p->nr_losses && l < TK_PROFILE_MAX_LOSSES; l++)
		lost += p->losses[l].count;
	if (id) {
		snprintf(pre, sizeof(pre), "%s-", id);
		snprintf(root, sizeof(root), "document.getElementById('%s')", id);
		fprintf(f, "<svg id=\"%s\" ", id);
	} else {
		pre[0] = 0;
		snprintf(root, sizeof(root), "document.documentElement");
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<svg ", f);
	}
	fprintf(f, "xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"%d\">\n",
		IMG_WIDTH, height, IMG_WIDTH, height, FONT_SIZE);
	fprintf(f, "<style>g.f:hover rect { stroke: black; stroke-width: 0.5; } g.f { cursor: "
		"pointer; } #%sunzoom { cursor: pointer; }</style>\n", pre);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f0\"/>\n",
		IMG_WIDTH, height);
	fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">",
		IMG_WIDTH / 2);
	put_xml(f, title ? title : "CPU flame graph", 200);
	fputs("</text>\n", f);
	fprintf(f, "<text x=\"%d\" y=\"44\" text-anchor=\"middle\" fill=\"#555\">%" PRId64,
		IMG_WIDTH / 2, total);
	if (p->freq_hz > 0 || p->nr_values <= 0 || !vt->type) {
		fprintf(f, " samples, %.2f s at %d Hz", (double)p->duration_nanos / 1e9,
			p->freq_hz);
	} else {
		/* not sampled at a frequency (a heap profile): say what is counted */
		fputc(' ', f);
		put_xml(f, vt->type, 32);
		if (vt->unit) {
			fputs(" (", f);
			put_xml(f, vt->unit, 32);
			fputc(')', f);
		}
		fprintf(f, ", %.2f s", (double)p->duration_nanos / 1e9);
	}
	fputs(", backend ", f);
	put_xml(f, p->backend ? p->backend : "unknown", 32);
	fprintf(f, ", %llu lost</text>\n", (unsigned long long)lost);
	fprintf(f, "<text id=\"%sunzoom\" x=\"%d\" y=\"24\">Reset zoom</text>\n", pre, XPAD);
	fprintf(f, "<text id=\"%sdetails\" x=\"%d\" y=\"%d\"> </text>\n", pre, XPAD,
		height - 12);
	if (total > 0) {
		for (i = 0; i < t->nr; i++) {
			/*
			 * Under 0.1 % of the total: left out, and so is all it
			 * holds (its children are narrower still).
			 */
			if (t->nodes[i].value <= 0 || t->nodes[i].value < total / MIN_SHARE_DIV)
				continue;
			frame(f, t, &t->nodes[i], total);
		}
	}
	fprintf(f, script, root, IMG_WIDTH, XPAD, CHAR_W, pre, pre);
	fputs("</svg>\n", f);
}

static int write_svg(const struct tk_profile *p, FILE *f, const char *title, const char *id)
{
	struct tree t = { .p = p };
	int err;

	err = tk_frames__build(p, TK_FRAMES_BY_NAME, &t.fr);
	if (err)
		return err;
	err = build(&t);
	if (!err)
		err = layout(&t);
	if (!err) {
		draw(f, &t, title, id);
		if (fflush(f) || ferror(f))
			err = -EIO;
	}
	free(t.nodes);
	free(t.comms);
	tk_hashidx__free(&t.child_idx);
	tk_hashidx__free(&t.comm_idx);
	tk_frames__free(&t.fr);
	return err;
}

int tk_profile__write_svg(const struct tk_profile *p, FILE *f, const char *title)
{
	return write_svg(p, f, title, NULL);
}

int tk_profile__write_svg_inline(const struct tk_profile *p, FILE *f, const char *title,
				 const char *id)
{
	size_t i;

	/* an id goes into attributes and a script's string: letters, digits, '-', '_' */
	if (!id || !id[0] || strlen(id) > 64)
		return -EINVAL;
	for (i = 0; id[i]; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_')
			return -EINVAL;
	return write_svg(p, f, title, id);
}
