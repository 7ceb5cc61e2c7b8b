// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * pprof writer: the profile encoded as perftools.profiles.Profile
 * (github.com/google/pprof/proto/profile.proto), gzipped.
 *
 * Beyond a straight encoding of the model:
 * - kernel locations without a mapping go into a made-up "[kernel.kallsyms]"
 *   mapping spanning their addresses, so pprof never takes them for user code
 *   (nor tries to symbolize them from a local file);
 * - locations without a function get one named as the other writers name
 *   them ("libx.so+0x1234"), so `go tool pprof -top` and the text summary list
 *   the same names;
 * - comments carry the backend, the frequency (of a CPU profile) and every loss counter;
 * - names pprof would rewrite (C++-looking) have no system name; see
 *   pprof_would_rewrite().
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "profile/profile.h"
#include "profile/profile_int.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	LABEL_NUM_UNIT = 4,

	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,

	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

struct pbuf {
	unsigned char *data;
	size_t len, cap;
	int err;
};

static void pb_reserve(struct pbuf *b, size_t n)
{
	size_t cap;
	void *d;

	if (b->err || b->len + n <= b->cap)
		return;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d) {
		b->err = -ENOMEM;
		return;
	}
	b->data = d;
	b->cap = cap;
}

static void pb_bytes(struct pbuf *b, const void *data, size_t n)
{
	pb_reserve(b, n);
	if (b->err)
		return;
	memcpy(b->data + b->len, data, n);
	b->len += n;
}

static void pb_varint(struct pbuf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_bytes(b, tmp, n);
}

static void pb_key(struct pbuf *b, int field, int wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; proto3 leaves out zero values. */
static void pb_uint(struct pbuf *b, int field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_int(struct pbuf *b, int field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

/* A length-delimited field holding @sub, which is emptied for reuse. */
static void pb_message(struct pbuf *b, int field, struct pbuf *sub)
{
	if (sub->err) {
		b->err = b->err ? b->err : sub->err;
		return;
	}
	pb_key(b, field, WIRE_LEN);
	pb_varint(b, sub->len);
	pb_bytes(b, sub->data, sub->len);
	sub->len = 0;
}

static void pb_string(struct pbuf *b, int field, const char *s)
{
	size_t n = strlen(s);

	pb_key(b, field, WIRE_LEN);
	pb_varint(b, n);
	pb_bytes(b, s, n);
}

/* ---- the string table ------------------------------------------------------------- */

struct strtab {
	const char **s;		/* borrowed from the profile and the made-up names */
	size_t nr, cap;
	struct tk_hashidx idx;
	int err;
};

static bool strtab_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct strtab *)ctx)->s[i], key) == 0;
}

/* The index of @s in the table (NULL: 0, the empty string), added when new. */
static int64_t str_id(struct strtab *t, const char *s)
{
	uint64_t h;
	size_t i;
	int err;

	if (!s || !s[0] || t->err)
		return 0;
	h = tk_hash__str(5, s);
	i = tk_hashidx__find(&t->idx, h, strtab_eq, t, s);
	if (i != TK_HASHIDX_NONE)
		return i;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		const char **n = reallocarray(t->s, cap, sizeof(*n));

		if (!n) {
			t->err = -ENOMEM;
			return 0;
		}
		t->s = n;
		t->cap = cap;
	}
	err = tk_hashidx__add(&t->idx, h, t->nr);
	if (err) {
		t->err = err;
		return 0;
	}
	t->s[t->nr] = s;
	return t->nr++;
}

/* ---- encoding ------------------------------------------------------------------- */

struct encoder {
	const struct tk_profile *p;
	struct tk_frames fr;
	struct strtab st;
	struct pbuf out, sub, sub2;
	uint64_t *made_function;	/* by location index: id of its made-up function, or 0 */
	uint64_t kernel_mapping;	/* id of the made-up kernel mapping, 0: none */
	uint64_t kernel_lo, kernel_hi;
	char **comments;		/* made-up comments */
	int nr_comments;
};

static void value_type(struct encoder *e, int field, const struct tk_value_type *vt)
{
	pb_int(&e->sub, VALUE_TYPE_TYPE, str_id(&e->st, vt->type));
	pb_int(&e->sub, VALUE_TYPE_UNIT, str_id(&e->st, vt->unit));
	pb_message(&e->out, field, &e->sub);
}

/* A label; one of value 0 or "" is left out, as pprof would drop it. */
static void label(struct encoder *e, const char *key, const char *str, int64_t num)
{
	if (str ? !str[0] : !num)
		return;
	pb_int(&e->sub2, LABEL_KEY, str_id(&e->st, key));
	if (str)
		pb_int(&e->sub2, LABEL_STR, str_id(&e->st, str));
	else
		pb_int(&e->sub2, LABEL_NUM, num);
	pb_message(&e->sub, SAMPLE_LABEL, &e->sub2);
}

static void samples(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	size_t i;
	uint32_t j;
	int v;

	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		/* packed repeated fields */
		for (j = 0; j < s->nr_locations; j++)
			pb_varint(&e->sub2, s->location_ids[j]);
		if (s->nr_locations)
			pb_message(&e->sub, SAMPLE_LOCATION_ID, &e->sub2);
		for (v = 0; v < p->nr_values; v++)
			pb_varint(&e->sub2, (uint64_t)s->values[v]);
		pb_message(&e->sub, SAMPLE_VALUE, &e->sub2);
		label(e, "pid", NULL, s->pid);
		label(e, "tid", NULL, s->tid);
		label(e, "comm", s->comm, 0);
		if (s->thread_state)
			label(e, "thread_state", s->thread_state, 0);
		if (s->began_before)
			label(e, "off_cpu_began", "before_capture", 0);
		if (s->began_before && s->off_before_ns > 0) {
			pb_int(&e->sub2, LABEL_KEY, str_id(&e->st, "off_cpu_before_ns"));
			pb_int(&e->sub2, LABEL_NUM, s->off_before_ns);
			pb_int(&e->sub2, LABEL_NUM_UNIT, str_id(&e->st, "nanoseconds"));
			pb_message(&e->sub, SAMPLE_LABEL, &e->sub2);
		}
		pb_message(&e->out, PROFILE_SAMPLE, &e->sub);
	}
}

static void mapping(struct encoder *e, uint64_t id, uint64_t start, uint64_t limit,
		    uint64_t offset, const char *file, const char *build_id, bool has_functions)
{
	pb_uint(&e->sub, MAPPING_ID, id);
	pb_uint(&e->sub, MAPPING_MEMORY_START, start);
	pb_uint(&e->sub, MAPPING_MEMORY_LIMIT, limit);
	pb_uint(&e->sub, MAPPING_FILE_OFFSET, offset);
	pb_int(&e->sub, MAPPING_FILENAME, str_id(&e->st, file));
	pb_int(&e->sub, MAPPING_BUILD_ID, str_id(&e->st, build_id));
	pb_uint(&e->sub, MAPPING_HAS_FUNCTIONS, has_functions);
	pb_message(&e->out, PROFILE_MAPPING, &e->sub);
}

static void mappings(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	size_t i;

	int pass;

	/*
	 * pprof calls the first mapping the main binary ("File:"): the profiled
	 * program's first, then the other files, then the kernel, [vdso] and the
	 * like. Ids do not change.
	 */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < p->nr_mappings; i++) {
			const struct tk_mapping *m = &p->mappings[i];
			bool pseudo = !m->file || m->file[0] == '[';
			bool main = !pseudo && p->main_file && !strcmp(m->file, p->main_file);

			if ((pass == 0) != main || (!main && pseudo != (pass == 2)))
				continue;
			mapping(e, m->id, m->start, m->limit, m->offset, m->file, m->build_id,
				m->has_functions);
		}
	}
	if (e->kernel_mapping)
		mapping(e, e->kernel_mapping, e->kernel_lo, e->kernel_hi, 0, "[kernel.kallsyms]",
			NULL, true);
}

/* The function id of location @i: its own, or the one made up after the profile's. */
static uint64_t function_of(const struct encoder *e, size_t i)
{
	const struct tk_location *l = &e->p->locations[i];

	return l->function_id ? l->function_id : e->made_function[i];
}

static int number_made_functions(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	uint64_t next = p->nr_functions + 1;
	size_t i;

	e->made_function = calloc(p->nr_locations ? p->nr_locations : 1, sizeof(uint64_t));
	if (!e->made_function)
		return -ENOMEM;
	for (i = 0; i < p->nr_locations; i++)
		if (!p->locations[i].function_id)
			e->made_function[i] = next++;
	return 0;
}

static void locations(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	size_t i;

	for (i = 0; i < p->nr_locations; i++) {
		const struct tk_location *l = &p->locations[i];
		uint64_t mapping_id = l->mapping_id;

		if (!mapping_id && l->kernel)
			mapping_id = e->kernel_mapping;
		pb_uint(&e->sub, LOCATION_ID, l->id);
		pb_uint(&e->sub, LOCATION_MAPPING_ID, mapping_id);
		pb_uint(&e->sub, LOCATION_ADDRESS, l->address);
		pb_uint(&e->sub2, LINE_FUNCTION_ID, function_of(e, i));
		if (l->line > 0)
			pb_int(&e->sub2, LINE_LINE, l->line);
		pb_message(&e->sub, LOCATION_LINE, &e->sub2);
		pb_message(&e->out, PROFILE_LOCATION, &e->sub);
	}
}

/*
 * pprof rewrites a name equal to its system name when it looks like C++
 * (demangles "_Z…", drops parameters and template arguments), which merges
 * overloads and renames rows. Such names go without a system name, which
 * pprof takes for "already demangled" and shows as written, as the other
 * writers do.
 */
static bool pprof_would_rewrite(const char *name)
{
	return !strncmp(name, "_Z", 2) || strstr(name, "::") || strpbrk(name, "<>[]");
}

static void function(struct encoder *e, uint64_t id, const char *name, const char *filename,
		     int64_t start_line)
{
	int64_t n = str_id(&e->st, name);

	pb_uint(&e->sub, FUNCTION_ID, id);
	pb_int(&e->sub, FUNCTION_NAME, n);
	if (!pprof_would_rewrite(name))
		pb_int(&e->sub, FUNCTION_SYSTEM_NAME, n);
	pb_int(&e->sub, FUNCTION_FILENAME, str_id(&e->st, filename));
	if (start_line > 0)
		pb_int(&e->sub, FUNCTION_START_LINE, start_line);
	pb_message(&e->out, PROFILE_FUNCTION, &e->sub);
}

static void functions(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	size_t i;

	for (i = 0; i < p->nr_functions; i++)
		function(e, p->functions[i].id, p->functions[i].name, p->functions[i].filename,
			 p->functions[i].start_line);
	for (i = 0; i < p->nr_locations; i++) {
		if (p->locations[i].function_id)
			continue;
		function(e, function_of(e, i), e->fr.frames[e->fr.of_loc[i]].name, NULL, 0);
	}
}

static int add_comment(struct encoder *e, char **made, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int add_comment(struct encoder *e, char **made, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(made, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*made = NULL;
		return -ENOMEM;
	}
	e->nr_comments++;
	return 0;
}

/* backend, frequency, every loss counter, then the profile's own comments */
static int comments(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	int i, err;

	e->comments = calloc(2 + TK_PROFILE_MAX_LOSSES, sizeof(*e->comments));
	if (!e->comments)
		return -ENOMEM;
	err = add_comment(e, &e->comments[e->nr_comments], "backend: %s",
			  p->backend ? p->backend : "unknown");
	/* sampling in time (CPU profiles); a heap profile samples bytes: its period says so */
	if (!err && p->freq_hz > 0)
		err = add_comment(e, &e->comments[e->nr_comments], "frequency: %d Hz", p->freq_hz);
	for (i = 0; !err && i < p->nr_losses && i < TK_PROFILE_MAX_LOSSES; i++)
		err = add_comment(e, &e->comments[e->nr_comments], "lost: %s=%llu",
				  p->losses[i].name, (unsigned long long)p->losses[i].count);
	if (err)
		return err;
	for (i = 0; i < e->nr_comments; i++)
		pb_varint(&e->sub, str_id(&e->st, e->comments[i]));
	for (i = 0; i < p->nr_comments; i++)
		pb_varint(&e->sub, str_id(&e->st, p->comments[i]));
	pb_message(&e->out, PROFILE_COMMENT, &e->sub);
	return 0;
}

static void kernel_span(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	size_t i;

	e->kernel_lo = UINT64_MAX;
	e->kernel_hi = 0;
	for (i = 0; i < p->nr_locations; i++) {
		const struct tk_location *l = &p->locations[i];

		if (l->mapping_id || !l->kernel)
			continue;
		e->kernel_mapping = p->nr_mappings + 1;
		if (l->address < e->kernel_lo)
			e->kernel_lo = l->address;
		if (l->address >= e->kernel_hi)
			e->kernel_hi = l->address == UINT64_MAX ? UINT64_MAX : l->address + 1;
	}
}

/*
 * p->default_sample_type when it names a sample type, else the sample type
 * named as the period type ("cpu"), else the last one (what pprof picks
 * when the default names none): never a type the profile lacks.
 */
static const char *default_sample_type(const struct tk_profile *p)
{
	const char *want[2] = { p->default_sample_type, p->period_type.type };
	int w, i;

	for (w = 0; w < 2; w++)
		for (i = 0; want[w] && i < p->nr_values; i++)
			if (p->value_types[i].type && !strcmp(p->value_types[i].type, want[w]))
				return want[w];
	return p->nr_values > 0 ? p->value_types[p->nr_values - 1].type : NULL;
}

static int encode(struct encoder *e)
{
	const struct tk_profile *p = e->p;
	int i, err;

	/* index 0 of the string table is "" */
	e->st.s = calloc(256, sizeof(*e->st.s));
	if (!e->st.s)
		return -ENOMEM;
	e->st.cap = 256;
	e->st.s[e->st.nr++] = "";

	for (i = 0; i < p->nr_values; i++)
		value_type(e, PROFILE_SAMPLE_TYPE, &p->value_types[i]);
	kernel_span(e);
	err = number_made_functions(e);
	if (err)
		return err;
	samples(e);
	mappings(e);
	locations(e);
	functions(e);
	pb_int(&e->out, PROFILE_TIME_NANOS, p->time_nanos);
	pb_int(&e->out, PROFILE_DURATION_NANOS, p->duration_nanos);
	value_type(e, PROFILE_PERIOD_TYPE, &p->period_type);
	pb_int(&e->out, PROFILE_PERIOD, p->period);
	err = comments(e);
	if (err)
		return err;
	pb_int(&e->out, PROFILE_DEFAULT_SAMPLE_TYPE, str_id(&e->st, default_sample_type(p)));
	/* the string table last: every string is known by now */
	for (i = 0; (size_t)i < e->st.nr; i++)
		pb_string(&e->out, PROFILE_STRING_TABLE, e->st.s[i]);
	if (e->st.err)
		return e->st.err;
	if (e->sub.err || e->sub2.err)
		return -ENOMEM;
	return e->out.err;
}

static int gzip_to(FILE *f, const unsigned char *data, size_t len)
{
	unsigned char chunk[16384];
	z_stream zs = {};
	int zerr = Z_OK, err = 0;

	/* windowBits 15 + 16: a gzip header and trailer */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)data;
	do {
		size_t n = len > (1u << 30) ? (1u << 30) : len;
		int flush;

		zs.avail_in = n;
		len -= n;
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		do {
			zs.next_out = chunk;
			zs.avail_out = sizeof(chunk);
			zerr = deflate(&zs, flush);
			if (zerr == Z_STREAM_ERROR) {
				err = -EINVAL;
				goto out;
			}
			n = sizeof(chunk) - zs.avail_out;
			if (n && fwrite(chunk, 1, n, f) != n) {
				err = -EIO;
				goto out;
			}
		} while (zs.avail_out == 0);
	} while (len);
	if (zerr != Z_STREAM_END)
		err = -EIO;
out:
	deflateEnd(&zs);
	return err;
}

int tk_profile__write_pprof(const struct tk_profile *p, FILE *f)
{
	struct encoder e = { .p = p };
	int i, err;

	err = tk_frames__build(p, TK_FRAMES_BY_FUNCTION, &e.fr);
	if (err)
		return err;
	err = encode(&e);
	if (!err)
		err = gzip_to(f, e.out.data, e.out.len);
	if (!err && (fflush(f) || ferror(f)))
		err = -EIO;
	for (i = 0; i < e.nr_comments; i++)
		free(e.comments[i]);
	free(e.comments);
	free(e.made_function);
	free(e.st.s);
	tk_hashidx__free(&e.st.idx);
	free(e.out.data);
	free(e.sub.data);
	free(e.sub2.data);
	tk_frames__free(&e.fr);
	return err;
}
