/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A small protobuf reader for the pprof tests, written apart from the writer
 * it checks: gunzip, varints, length-delimited fields, repeated integers
 * packed or not, and the messages of profile.proto into plain arrays. A
 * malformed input fails the running cmocka test. Include after <cmocka.h>.
 */
#ifndef __TEST_PPROF_DECODE_H
#define __TEST_PPROF_DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct pb {
	const uint8_t *p, *end;
};

static inline bool pb_varint(struct pb *b, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		uint8_t c = *b->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The next field: its number, and either its varint (@v) or its bytes (@sub). */
static inline bool pb_next(struct pb *b, int *field, int *wire, uint64_t *v, struct pb *sub)
{
	uint64_t key, len;

	if (b->p >= b->end)
		return false;
	assert_true(pb_varint(b, &key));
	*field = key >> 3;
	*wire = key & 7;
	if (*wire == 0) {
		assert_true(pb_varint(b, v));
	} else if (*wire == 2) {
		assert_true(pb_varint(b, &len));
		assert_true(len <= (uint64_t)(b->end - b->p));
		sub->p = b->p;
		sub->end = b->p + len;
		b->p += len;
	} else {
		fail_msg("wire type %d of field %d: profile.proto has none", *wire, *field);
	}
	return true;
}

/* A repeated integer field, packed (wire 2) or not (wire 0), appended to @out. */
static inline void pb_ints(int wire, uint64_t v, struct pb *sub, uint64_t *out, int *nr, int max)
{
	if (wire == 0) {
		assert_true(*nr < max);
		out[(*nr)++] = v;
		return;
	}
	while (sub->p < sub->end) {
		assert_true(*nr < max);
		assert_true(pb_varint(sub, &out[(*nr)++]));
	}
}

#define DEC_MAX 64

struct dec_sample {
	uint64_t locs[DEC_MAX];
	int nr_locs;
	uint64_t values[4];
	int nr_values;
	struct {
		uint64_t key, str, num;
	} labels[4];
	int nr_labels;
};

struct dec_mapping {
	uint64_t id, start, limit, offset, filename, build_id, has_functions;
};

struct dec_location {
	uint64_t id, mapping_id, address, function_id;
	int nr_lines;
};

struct dec_function {
	uint64_t id, name, system_name, filename;
};

struct dec {
	char **strings;
	int nr_strings;
	uint64_t sample_type[4][2];
	int nr_sample_types;
	struct dec_sample *samples;
	int nr_samples;
	struct dec_mapping mappings[DEC_MAX];
	int nr_mappings;
	struct dec_location *locations;
	int nr_locations;
	struct dec_function *functions;
	int nr_functions;
	uint64_t time_nanos, duration_nanos, period, default_sample_type;
	uint64_t period_type[2];
	uint64_t comments[DEC_MAX];
	int nr_comments;
};

static inline void dec_value_type(struct pb *m, uint64_t vt[2])
{
	struct pb sub;
	uint64_t v;
	int field, wire;

	while (pb_next(m, &field, &wire, &v, &sub))
		if (field == 1 || field == 2)
			vt[field - 1] = v;
}

static inline void dec_label(struct pb *m, struct dec_sample *s)
{
	struct pb sub;
	uint64_t v;
	int field, wire;

	assert_true(s->nr_labels < 4);
	while (pb_next(m, &field, &wire, &v, &sub)) {
		if (field == 1)
			s->labels[s->nr_labels].key = v;
		else if (field == 2)
			s->labels[s->nr_labels].str = v;
		else if (field == 3)
			s->labels[s->nr_labels].num = v;
	}
	s->nr_labels++;
}

static inline void dec_sample(struct pb *m, struct dec_sample *s)
{
	struct pb sub;
	uint64_t v;
	int field, wire;

	memset(s, 0, sizeof(*s));
	while (pb_next(m, &field, &wire, &v, &sub)) {
		if (field == 1)
			pb_ints(wire, v, &sub, s->locs, &s->nr_locs, DEC_MAX);
		else if (field == 2)
			pb_ints(wire, v, &sub, s->values, &s->nr_values, 4);
		else if (field == 3)
			dec_label(&sub, s);
	}
}

static inline void dec_mapping(struct pb *m, struct dec_mapping *d)
{
	struct pb sub;
	uint64_t v;
	int field, wire;

	memset(d, 0, sizeof(*d));
	while (pb_next(m, &field, &wire, &v, &sub)) {
		switch (field) {
		case 1:
			d->id = v;
			break;
		case 2:
			d->start = v;
			break;
		case 3:
			d->limit = v;
			break;
		case 4:
			d->offset = v;
			break;
		case 5:
			d->filename = v;
			break;
		case 6:
			d->build_id = v;
			break;
		case 7:
			d->has_functions = v;
			break;
		}
	}
}

static inline void dec_location(struct pb *m, struct dec_location *d)
{
	struct pb sub, inner;
	uint64_t v;
	int field, wire, f, w;

	memset(d, 0, sizeof(*d));
	while (pb_next(m, &field, &wire, &v, &sub)) {
		switch (field) {
		case 1:
			d->id = v;
			break;
		case 2:
			d->mapping_id = v;
			break;
		case 3:
			d->address = v;
			break;
		case 4:
			d->nr_lines++;
			while (pb_next(&sub, &f, &w, &v, &inner))
				if (f == 1)
					d->function_id = v;
			break;
		}
	}
}

static inline void dec_function(struct pb *m, struct dec_function *d)
{
	struct pb sub;
	uint64_t v;
	int field, wire;

	memset(d, 0, sizeof(*d));
	while (pb_next(m, &field, &wire, &v, &sub)) {
		switch (field) {
		case 1:
			d->id = v;
			break;
		case 2:
			d->name = v;
			break;
		case 3:
			d->system_name = v;
			break;
		case 4:
			d->filename = v;
			break;
		}
	}
}

/* Room for one more element of @arr, which holds @nr (doubling at powers of two). */
static inline void *dec_grow(void *arr, int nr, size_t elem)
{
	if (nr == 0 || (nr & (nr - 1)) == 0) {
		arr = realloc(arr, (nr ? nr * 2 : 1) * elem);
		assert_non_null(arr);
	}
	return arr;
}

static inline void dec_profile(const uint8_t *data, size_t len, struct dec *d)
{
	struct pb b = { data, data + len }, sub;
	uint64_t v;
	int field, wire;

	memset(d, 0, sizeof(*d));
	while (pb_next(&b, &field, &wire, &v, &sub)) {
		switch (field) {
		case 1:
			assert_true(d->nr_sample_types < 4);
			dec_value_type(&sub, d->sample_type[d->nr_sample_types++]);
			break;
		case 2:
			d->samples = dec_grow(d->samples, d->nr_samples, sizeof(*d->samples));
			dec_sample(&sub, &d->samples[d->nr_samples++]);
			break;
		case 3:
			assert_true(d->nr_mappings < DEC_MAX);
			dec_mapping(&sub, &d->mappings[d->nr_mappings++]);
			break;
		case 4:
			d->locations = dec_grow(d->locations, d->nr_locations, sizeof(*d->locations));
			dec_location(&sub, &d->locations[d->nr_locations++]);
			break;
		case 5:
			d->functions = dec_grow(d->functions, d->nr_functions, sizeof(*d->functions));
			dec_function(&sub, &d->functions[d->nr_functions++]);
			break;
		case 6:
			assert_int_equal(wire, 2);
			d->strings = dec_grow(d->strings, d->nr_strings, sizeof(*d->strings));
			d->strings[d->nr_strings] = strndup((const char *)sub.p, sub.end - sub.p);
			assert_non_null(d->strings[d->nr_strings++]);
			break;
		case 9:
			d->time_nanos = v;
			break;
		case 10:
			d->duration_nanos = v;
			break;
		case 11:
			dec_value_type(&sub, d->period_type);
			break;
		case 12:
			d->period = v;
			break;
		case 13:
			pb_ints(wire, v, &sub, d->comments, &d->nr_comments, DEC_MAX);
			break;
		case 14:
			d->default_sample_type = v;
			break;
		default:
			fail_msg("unexpected field %d", field);
		}
	}
}

static inline void dec_free(struct dec *d)
{
	int i;

	for (i = 0; i < d->nr_strings; i++)
		free(d->strings[i]);
	free(d->strings);
	free(d->samples);
	free(d->locations);
	free(d->functions);
}

/* String @i of the table; fails the test when there is none. */
static inline const char *dec_str(const struct dec *d, uint64_t i)
{
	assert_true(i < (uint64_t)d->nr_strings);
	return d->strings[i];
}

/* The whole gunzipped content of @path (caller frees); it must be gzip. */
static inline uint8_t *dec_gunzip_file(const char *path, size_t *out_len)
{
	uint8_t in[4096], *out = NULL;
	size_t cap = 0, len = 0;
	z_stream zs = {};
	FILE *f = fopen(path, "rb");
	int zerr = Z_OK;

	assert_non_null(f);
	assert_int_equal(fread(in, 1, 2, f), 2);
	assert_memory_equal(in, "\x1f\x8b", 2);	/* gzip, not zlib or raw deflate */
	rewind(f);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	while (zerr != Z_STREAM_END) {
		size_t n = fread(in, 1, sizeof(in), f);

		assert_true(n > 0);
		zs.next_in = in;
		zs.avail_in = n;
		while (zs.avail_in && zerr != Z_STREAM_END) {
			if (cap - len < 4096) {
				cap = cap ? cap * 2 : 65536;
				out = realloc(out, cap);
				assert_non_null(out);
			}
			zs.next_out = out + len;
			zs.avail_out = cap - len;
			zerr = inflate(&zs, Z_NO_FLUSH);
			assert_true(zerr == Z_OK || zerr == Z_STREAM_END);
			len = cap - zs.avail_out;
		}
	}
	inflateEnd(&zs);
	fclose(f);
	*out_len = len;
	return out;
}

#endif /* __TEST_PPROF_DECODE_H */
