// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Where CPython keeps what the walk reads, per minor version. The table was
 * measured three ways that agree (offsetof against each version's internal
 * headers, _Py_DebugOffsets read from 3.13.0's and Debian 3.14.10's
 * binaries, the type objects' tp_members of live processes); 3.13+ take
 * their offsets from _Py_DebugOffsets, the interpreter's own statement of
 * them, and the table gives what that struct does not carry (the pthread
 * key's place in _PyRuntime). Versions before 3.13 are checked against
 * PyCode_Type's members (and 3.9's PyFrame_Type's) of the running binary
 * and, per process, by finding every thread state back through its key
 * slot (py_detect.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime/py.h"

/* offsets the kernel reads at a variable place in a buffer must lie inside it */
#define MAX_STRUCT_OFF 65536

int tk_py_offsets__table(int minor, struct tk_py_offsets *o)
{
	static const uint32_t tss[] = { 584, 584, 592, 1544, 2160, 2336 };
	static const uint32_t head[] = { 32, 32, 40, 40, 632, 808 };
	static const uint32_t threads[] = { 8, 8, 16, 72, 7344, 7344 };
	static const uint32_t thread_id[] = { 176, 176, 152, 136, 152, 152 };
	static const uint32_t instr[] = { 104, 96, 56, 56, 56, 56 };
	static const uint32_t fsize[] = { 112, 104, 80, 80, 80, 88 };
	static const uint32_t code[] = { 0, 0, 184, 192, 200, 208 };
	int i = minor - TK_PY_MIN_MINOR;

	memset(o, 0, sizeof(*o));
	if (minor < TK_PY_MIN_MINOR || minor > TK_PY_MAX_MINOR)
		return -ENOENT;
	o->minor = minor;
	o->rt_tss = tss[i];
	o->rt_interp_head = head[i];
	o->interp_threads = threads[i];
	o->ts_next = 8;
	o->ts_thread_id = thread_id[i];
	o->fr_instr = instr[i];
	o->fr_size = fsize[i];
	o->co_code = code[i];
	if (minor <= 10) {
		o->ts_frame = 24;
		o->fr_prev = 24;
		o->fr_code = 32;
		o->co_filename = 104;
		o->co_name = 112;
		o->co_linetable = 120;
		o->co_firstlineno = 40;
	} else {
		o->ts_frame = minor <= 12 ? 56 : 72;
		o->via_cframe = minor <= 12;
		o->cf_current = minor == 11 ? 8 : 0;
		o->fr_prev = minor == 11 ? 48 : 8;
		o->fr_code = minor == 11 ? 32 : 0;
		o->fr_entry = minor == 11 ? 68 : 0;
		o->fr_owner = minor == 11 ? 69 : minor <= 13 ? 70 : 74;
		o->co_filename = 112;
		o->co_name = 120;
		o->co_qualname = 128;
		o->co_linetable = 136;
		o->co_firstlineno = minor == 11 ? 72 : 68;
		o->cstack_owner = minor >= 12 ? 3 : 0;
		o->exec_tag = minor >= 14 ? 3 : 0;
	}
	o->str_state = 32;
	o->str_length = 16;
	o->str_ascii = minor <= 11 ? 48 : 40;
	o->str_compact = minor <= 11 ? 72 : 56;
	o->bytes_size = 16;
	o->bytes_data = 32;
	return 0;
}

/* The groups of _Py_DebugOffsets, byte offsets in the struct, per minor version. */
struct debug_layout {
	int minor;
	uint32_t runtime, interp, thread, frame, code, bytes, unicode, sizeof_;
};

static const struct debug_layout layouts[] = {
	{ 13, 24, 48, 152, 224, 272, 512, 536, 584 },
	{ 14, 24, 48, 176, 248, 312, 592, 616, 760 },
};

static uint64_t u64_at(const unsigned char *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

int tk_py_offsets__from_debug(const void *buf, size_t len, int minor, uint64_t *version,
			      struct tk_py_offsets *o, char *why, size_t why_sz)
{
	const struct debug_layout *l = NULL;
	const unsigned char *b = buf;
	uint64_t v[24];
	size_t i;
	int n = 0;

	if (why && why_sz)
		why[0] = '\0';
	if (len < 24 || memcmp(b, "xdebugpy", 8))
		return -ENOENT;
	*version = u64_at(b, 8);
	if ((*version >> 24) != 3 || ((*version >> 16) & 0xff) != (uint64_t)minor) {
		snprintf(why, why_sz, "_Py_DebugOffsets says version %#llx, not 3.%d",
			 (unsigned long long)*version, minor);
		return -ENOTSUP;
	}
	if (u64_at(b, 16)) {
		snprintf(why, why_sz, "a free-threaded build (3.%dt): not walked", minor);
		return -ENOTSUP;
	}
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			l = &layouts[i];
	if (!l) {
		snprintf(why, why_sz, "_Py_DebugOffsets of 3.%d: a layout tracekit does not know",
			 minor);
		return -ENOTSUP;
	}
	if (len < l->sizeof_) {
		snprintf(why, why_sz, "_Py_DebugOffsets cut short (%zu of %u bytes)", len,
			 l->sizeof_);
		return -ENOTSUP;
	}
	if (tk_py_offsets__table(minor, o))
		return -ENOTSUP;
	o->rt_interp_head = v[n++] = u64_at(b, l->runtime + 16);
	o->interp_threads = v[n++] = u64_at(b, l->interp + 24);
	o->ts_next = v[n++] = u64_at(b, l->thread + 16);
	o->ts_frame = v[n++] = u64_at(b, l->thread + 32);
	o->ts_thread_id = v[n++] = u64_at(b, l->thread + 40);
	o->fr_prev = v[n++] = u64_at(b, l->frame + 8);
	o->fr_code = v[n++] = u64_at(b, l->frame + 16);
	o->fr_instr = v[n++] = u64_at(b, l->frame + 24);
	o->fr_owner = v[n++] = u64_at(b, l->frame + 40);
	o->co_filename = v[n++] = u64_at(b, l->code + 8);
	o->co_name = v[n++] = u64_at(b, l->code + 16);
	o->co_qualname = v[n++] = u64_at(b, l->code + 24);
	o->co_linetable = v[n++] = u64_at(b, l->code + 32);
	o->co_firstlineno = v[n++] = u64_at(b, l->code + 40);
	o->co_code = v[n++] = u64_at(b, l->code + 72);
	o->bytes_size = v[n++] = u64_at(b, l->bytes + 8);
	o->bytes_data = v[n++] = u64_at(b, l->bytes + 16);
	o->str_state = v[n++] = u64_at(b, l->unicode + 8);
	o->str_length = v[n++] = u64_at(b, l->unicode + 16);
	o->str_ascii = v[n++] = u64_at(b, l->unicode + 24);
	for (i = 0; i < (size_t)n; i++) {
		if (v[i] >= MAX_STRUCT_OFF) {
			snprintf(why, why_sz, "_Py_DebugOffsets: an offset out of bounds (%llu)",
				 (unsigned long long)v[i]);
			return -ERANGE;
		}
	}
	/* a compact non-ASCII string's data follows PyCompactUnicodeObject: 2 more words */
	o->str_compact = o->str_ascii + 16;
	/* what the kernel reads must lie in its frame buffer and code window */
	o->fr_size = 0;
	for (i = 5; i <= 8; i++)
		if (v[i] + 8 > o->fr_size)
			o->fr_size = v[i] + 8;
	o->fr_size = (o->fr_size + 7) & ~7u;
	if (o->fr_size > UNW_PY_FRAME_BUF || o->ts_frame > 4096 || o->ts_thread_id > 4096 ||
	    o->co_firstlineno < 64 || o->co_firstlineno + 4 > 64 + UNW_PY_CODE_WIN ||
	    o->co_qualname < 64 || o->co_qualname + 8 > 64 + UNW_PY_CODE_WIN ||
	    o->co_linetable < 64 || o->co_linetable + 8 > 64 + UNW_PY_CODE_WIN) {
		snprintf(why, why_sz, "_Py_DebugOffsets: frame or code fields where tracekit "
			 "does not read them");
		return -ERANGE;
	}
	return 0;
}

static const struct tk_py_member *member(const struct tk_py_member *m, size_t nr, const char *name)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (m[i].name && !strcmp(m[i].name, name))
			return &m[i];
	return NULL;
}

static int check_one(const struct tk_py_member *m, size_t nr, const char *type, const char *name,
		     uint64_t want, char *why, size_t why_sz)
{
	const struct tk_py_member *f = member(m, nr, name);

	/* a member the binary does not have is not a disagreement (3.10's f_lasti) */
	if (!f || f->offset == want)
		return 0;
	snprintf(why, why_sz, "%s.%s is at %llu in the binary, %llu in the table", type, name,
		 (unsigned long long)f->offset, (unsigned long long)want);
	return -EINVAL;
}

int tk_py_offsets__check_members(const struct tk_py_offsets *o, const struct tk_py_member *code,
				 size_t nr_code, const struct tk_py_member *frame, size_t nr_frame,
				 char *why, size_t why_sz)
{
	const char *lt = o->minor <= 9 ? "co_lnotab" : "co_linetable";
	int err;

	if (why && why_sz)
		why[0] = '\0';
	if (!member(code, nr_code, "co_filename") || !member(code, nr_code, "co_name")) {
		snprintf(why, why_sz, "PyCode_Type has no co_filename/co_name members");
		return -EINVAL;
	}
	err = check_one(code, nr_code, "code", "co_filename", o->co_filename, why, why_sz);
	if (!err)
		err = check_one(code, nr_code, "code", "co_name", o->co_name, why, why_sz);
	if (!err && o->co_qualname)
		err = check_one(code, nr_code, "code", "co_qualname", o->co_qualname, why, why_sz);
	if (!err)
		err = check_one(code, nr_code, "code", "co_firstlineno", o->co_firstlineno, why,
				why_sz);
	if (!err)
		err = check_one(code, nr_code, "code", lt, o->co_linetable, why, why_sz);
	if (!err && frame && o->minor <= 10) {
		err = check_one(frame, nr_frame, "frame", "f_back", o->fr_prev, why, why_sz);
		if (!err)
			err = check_one(frame, nr_frame, "frame", "f_code", o->fr_code, why,
					why_sz);
		if (!err)
			err = check_one(frame, nr_frame, "frame", "f_lasti", o->fr_instr, why,
					why_sz);
	}
	return err;
}

void tk_py_offsets__to_bpf(const struct tk_py_offsets *o, struct unw_py *out)
{
	uint32_t win = o->minor <= 10 ? 40 : 64;

	out->minor = o->minor;
	out->kind = o->minor <= 10 ? UNW_PY_FRAMEOBJ : o->minor == 11 ? UNW_PY_ENTRYFLAG :
									   UNW_PY_SHIM;
	out->lasti = o->minor == 9 ? UNW_PY_LASTI_BYTES : o->minor == 10 ? UNW_PY_LASTI_UNITS :
									     UNW_PY_LASTI_PTR;
	out->via_cframe = o->via_cframe;
	out->cstack_owner = o->cstack_owner;
	out->exec_tag = o->exec_tag;
	out->ts_thread_id = o->ts_thread_id;
	out->ts_frame = o->ts_frame;
	out->cf_current = o->cf_current;
	out->fr_code = o->fr_code;
	out->fr_prev = o->fr_prev;
	out->fr_instr = o->fr_instr;
	out->fr_owner = o->fr_owner;
	out->fr_entry = o->fr_entry;
	out->fr_size = o->fr_size;
	out->co_code = o->co_code;
	out->co_win = win;
	out->co_first = o->co_firstlineno - win;
	out->co_lines = o->co_linetable - win;
	out->co_name = (o->co_qualname ? o->co_qualname : o->co_name) - win;
}
