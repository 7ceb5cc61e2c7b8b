// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jitdump files (symbolize.h): the names a JIT gives its code, in the binary
 * format of perf's jitdump specification (linux
 * tools/perf/Documentation/jitdump-specification.txt):
 *
 *   header  u32 magic "JiTD" (0x4A695444), u32 version (1), u32 total_size,
 *           u32 elf_mach, u32 pad, u32 pid, u64 timestamp, u64 flags
 *   record  u32 id, u32 total_size (the whole record), u64 timestamp, then
 *     0 JIT_CODE_LOAD  u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size,
 *                      u64 code_index, char name[] (NUL-terminated), code bytes
 *     1 JIT_CODE_MOVE  u32 pid, u32 tid, u64 vma, u64 old_code_addr,
 *                      u64 new_code_addr, u64 code_size, u64 code_index
 *     2 DEBUG_INFO, 3 CLOSE, 4 UNWINDING_INFO, others: skipped
 *
 * Little-endian on x86-64 (a byte-swapped magic is another machine's file:
 * not read). The file grows while the program runs, so it is fed in pieces:
 * a record's fixed part and name must be whole to be read, its code is
 * skipped as it comes. The names go into a perf map's table (perfmap.c),
 * where a later record wins over an earlier one it overlaps (code freed and
 * its address reused).
 *
 * Outside input, written by the profiled program: a record smaller than its
 * own header or larger than TK_JITDUMP_MAX_RECORD ends the reading (no
 * record after it can be found again); a record whose fields do not fit its
 * size, or whose name has no NUL within TK_JITDUMP_MAX_HEAD bytes, is skipped
 * and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sym/symbolize.h"

#define JITDUMP_MAGIC 0x4A695444u
#define HEADER_SIZE 40		/* the header's fields; its total_size may be more */
#define HEADER_MAX 4096		/* a header's total_size past this is not a jitdump's */
#define REC_HEAD 16		/* id, total_size, timestamp */
#define LOAD_FIXED (REC_HEAD + 40)	/* then the name */
#define MOVE_FIXED (REC_HEAD + 48)

enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1 };

struct tk_jitdump {
	struct tk_perfmap *names;
	uint32_t pid;			/* expected in the header; 0: any */
	bool have_header;
	uint64_t skip;			/* bytes of this record (or header) still to skip */
	struct tk_jitdump_stats st;
};

static uint32_t u32_at(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

struct tk_jitdump *tk_jitdump__new(uint32_t pid)
{
	struct tk_jitdump *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->names = tk_perfmap__new();
	if (!d->names) {
		free(d);
		return NULL;
	}
	d->pid = pid;
	return d;
}

void tk_jitdump__free(struct tk_jitdump *d)
{
	if (!d)
		return;
	tk_perfmap__free(d->names);
	free(d);
}

/* The header at @p (HEADER_SIZE bytes): false when it is not a jitdump's of our pid. */
static bool read_header(struct tk_jitdump *d, const unsigned char *p)
{
	uint32_t size = u32_at(p + 8);

	if (u32_at(p) != JITDUMP_MAGIC || u32_at(p + 4) != 1 || size < HEADER_SIZE ||
	    size > HEADER_MAX || (d->pid && u32_at(p + 20) != d->pid))
		return false;
	d->have_header = true;
	d->skip = size - HEADER_SIZE;
	return true;
}

/* A JIT_CODE_LOAD of @size bytes whose first @have (>= LOAD_FIXED) bytes are at @p. */
static int load(struct tk_jitdump *d, const unsigned char *p, size_t have, uint32_t size)
{
	uint64_t vma = u64_at(p + REC_HEAD + 8), addr = u64_at(p + REC_HEAD + 16);
	uint64_t code_size = u64_at(p + REC_HEAD + 24);
	const char *name = (const char *)p + LOAD_FIXED;
	const char *nul = memchr(name, '\0', have - LOAD_FIXED);

	d->st.loads++;
	/* code_addr is where the code runs; vma the same for every writer seen */
	if (!addr)
		addr = vma;
	if (!nul || nul == name || (uint64_t)(nul + 1 - (const char *)p) > size) {
		d->st.bad++;
		return 0;
	}
	return tk_perfmap__add(d->names, addr, code_size, name, nul - name);
}

/* A JIT_CODE_MOVE at @p (MOVE_FIXED bytes): the name at the old address, at the new one. */
static int move(struct tk_jitdump *d, const unsigned char *p)
{
	uint64_t from = u64_at(p + REC_HEAD + 16), to = u64_at(p + REC_HEAD + 24);
	uint64_t code_size = u64_at(p + REC_HEAD + 32), start;
	char name[TK_JITDUMP_MAX_HEAD];
	const char *old;
	size_t n;

	d->st.moves++;
	old = tk_perfmap__find(d->names, from, &start, NULL);
	if (!old || start != from) {
		d->st.bad++;
		return 0;
	}
	/* adding may move the names it points into */
	n = strnlen(old, sizeof(name) - 1);
	memcpy(name, old, n);
	return tk_perfmap__add(d->names, to, code_size, name, n);
}

int tk_jitdump__feed(struct tk_jitdump *d, const void *buf, size_t len, size_t *used)
{
	const unsigned char *base = buf;
	size_t p = 0;
	int err = 0;

	while (!d->st.broken && p < len) {
		const unsigned char *r = base + p;
		size_t left = len - p, need;
		uint32_t id, size;

		if (d->skip) {
			size_t n = d->skip < left ? d->skip : left;

			p += n;
			d->skip -= n;
			continue;
		}
		if (!d->have_header) {
			if (left < HEADER_SIZE)
				break;
			if (!read_header(d, r)) {
				d->st.broken = true;
				break;
			}
			p += HEADER_SIZE;
			continue;
		}
		if (left < REC_HEAD)
			break;
		id = u32_at(r);
		size = u32_at(r + 4);
		if (size < REC_HEAD || size > TK_JITDUMP_MAX_RECORD) {
			/* where the next record starts is not known */
			d->st.broken = true;
			break;
		}
		switch (id) {
		case JIT_CODE_LOAD:
			need = size < LOAD_FIXED + TK_JITDUMP_MAX_HEAD ? size
								 : LOAD_FIXED + TK_JITDUMP_MAX_HEAD;
			break;
		case JIT_CODE_MOVE:
			need = MOVE_FIXED;
			break;
		default:
			need = REC_HEAD;
			break;
		}
		if (need > size) {
			/* too small for its own fields: skipped whole */
			d->st.records++;
			d->st.bad++;
			p += REC_HEAD;
			d->skip = size - REC_HEAD;
			continue;
		}
		if (left < need)
			break;	/* not whole yet: fed again with what follows */
		d->st.records++;
		if (id == JIT_CODE_LOAD)
			err = need < LOAD_FIXED + 1 ? (d->st.bad++, 0) : load(d, r, need, size);
		else if (id == JIT_CODE_MOVE)
			err = move(d, r);
		if (err)
			break;
		p += need;
		d->skip = size - need;
	}
	*used = p;
	return err;
}

const char *tk_jitdump__find(struct tk_jitdump *d, uint64_t addr, uint64_t *start,
			     uint64_t *size)
{
	return tk_perfmap__find(d->names, addr, start, size);
}

void tk_jitdump__span(struct tk_jitdump *d, uint64_t *lo, uint64_t *hi)
{
	tk_perfmap__span(d->names, lo, hi);
}

void tk_jitdump__stats(const struct tk_jitdump *d, struct tk_jitdump_stats *st)
{
	struct tk_perfmap_stats ps;

	*st = d->st;
	tk_perfmap__stats(d->names, &ps);
	st->entries = ps.entries;
	st->overlapping = ps.overlapping;
	st->bad += ps.bad + ps.over_limit;
}
