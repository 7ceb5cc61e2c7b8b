// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CPython's line tables and offsets (user/runtime/py_linetab.c, py_offsets.c):
 * the decoders against what each interpreter itself says of every code unit
 * (test_py_fixtures.h), broken and cut tables (a table is read from a
 * process's memory: any bytes), the offset table per minor version,
 * _Py_DebugOffsets as 3.13 and 3.14 ship it and as a process could forge
 * it, and the check against a binary's tp_members.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/py.h"
#include "test_py_fixtures.h"

#define NR(a) (sizeof(a) / sizeof((a)[0]))

/* Every code unit of every fixture: the interpreter's own line. */
static void test_line_tables(void **state)
{
	size_t f;

	for (f = 0; f < NR(lt_fixtures); f++) {
		const struct lt_fixture *x = &lt_fixtures[f];
		unsigned int i, far = 0;
		int line;

		for (i = 0; i < x->units; i++) {
			assert_int_equal(tk_py_line(x->minor, x->table, x->len, x->first, i, &line),
					 0);
			if (line != x->lines[i])
				fail_msg("3.%d unit %u: line %d, the interpreter says %d", x->minor,
					 i, line, x->lines[i]);
			far += line > 300;
		}
		/* the gap of 300 lines was crossed: deltas past one byte were decoded */
		assert_true(far > 0);
		print_message("3.%d: %u code units, all on the interpreter's lines\n", x->minor,
			      x->units);
	}
}

/* Past the end of a table: -ENOENT (3.10+), the last line (3.9's lnotab has no end). */
static void test_past_the_end(void **state)
{
	size_t f;
	int line;

	for (f = 0; f < NR(lt_fixtures); f++) {
		const struct lt_fixture *x = &lt_fixtures[f];
		int err = tk_py_line(x->minor, x->table, x->len, x->first, x->units + 50, &line);

		if (x->minor == 9)
			assert_true(!err && line == x->lines[x->units - 1]);
		else
			assert_int_equal(err, -ENOENT);
	}
	assert_int_equal(tk_py_line(8, lt_fixtures[0].table, 4, 1, 0, &line), -EINVAL);
	assert_int_equal(tk_py_line(15, lt_fixtures[0].table, 4, 1, 0, &line), -EINVAL);
	/* no table at all */
	assert_int_equal(tk_py_line(13, NULL, 100, 7, 0, &line), -ENOENT);
	assert_int_equal(tk_py_line(9, NULL, 100, 7, 3, &line), 0);
	assert_int_equal(line, 7);
}

/* Every prefix of every table, and each with bytes flipped: no read past, no crash. */
static void test_cut_and_broken_tables(void **state)
{
	uint8_t buf[512];
	size_t f, len;
	int line;

	for (f = 0; f < NR(lt_fixtures); f++) {
		const struct lt_fixture *x = &lt_fixtures[f];

		assert_true(x->len <= sizeof(buf));
		for (len = 0; len <= x->len; len++) {
			/* a heap copy of exactly len bytes: ASan sees any read past it */
			uint8_t *t = malloc(len ? len : 1);
			unsigned int i;

			memcpy(t, x->table, len);
			for (i = 0; i < x->units + 2; i += 3)
				tk_py_line(x->minor, t, len, x->first, i, &line);
			if (len) {
				t[len / 2] ^= 0xff;
				t[len - 1] = 0xff;	/* a varint that never ends */
				for (i = 0; i < x->units + 2; i += 3)
					tk_py_line(x->minor, t, len, x->first, i, &line);
			}
			free(t);
		}
	}
	/* 3.11+: an entry's first byte without bit 7 is a broken table, not a line */
	buf[0] = 0x10;
	assert_int_equal(tk_py_line(12, buf, 1, 5, 0, &line), -ENOENT);
	/* code 15: no location, line 0 */
	buf[0] = 0x80 | 15 << 3;
	assert_int_equal(tk_py_line(12, buf, 1, 5, 0, &line), 0);
	assert_int_equal(line, 0);
	/* 3.10: -128 is "no line" */
	buf[0] = 10;
	buf[1] = 0x80;
	assert_int_equal(tk_py_line(10, buf, 2, 5, 2, &line), 0);
	assert_int_equal(line, 0);
}

/* The table: what was measured per minor version (research issue24 §2.3-2.5). */
static void test_offset_table(void **state)
{
	struct tk_py_offsets o;
	struct unw_py b;
	int minor;

	assert_int_equal(tk_py_offsets__table(8, &o), -ENOENT);
	assert_int_equal(tk_py_offsets__table(15, &o), -ENOENT);
	for (minor = 9; minor <= 14; minor++) {
		assert_int_equal(tk_py_offsets__table(minor, &o), 0);
		assert_true(o.fr_size <= UNW_PY_FRAME_BUF);
		memset(&b, 0, sizeof(b));
		tk_py_offsets__to_bpf(&o, &b);
		/* what the kernel reads lies in its buffers */
		assert_true(b.fr_code + 8 <= b.fr_size && b.fr_prev + 8 <= b.fr_size);
		assert_true(b.fr_instr + 4 <= b.fr_size);
		assert_true(b.co_first + 4 <= UNW_PY_CODE_WIN &&
			    b.co_lines + 8 <= UNW_PY_CODE_WIN &&
			    b.co_name + 8 <= UNW_PY_CODE_WIN);
		assert_int_equal(b.kind, minor <= 10 ? UNW_PY_FRAMEOBJ :
					 minor == 11 ? UNW_PY_ENTRYFLAG : UNW_PY_SHIM);
	}
	tk_py_offsets__table(9, &o);
	assert_int_equal(o.rt_tss, 584);
	assert_int_equal(o.ts_thread_id, 176);
	assert_int_equal(o.fr_instr, 104);
	assert_int_equal(o.co_linetable, 120);
	tk_py_offsets__table(11, &o);
	assert_int_equal(o.rt_tss, 592);
	assert_true(o.via_cframe);
	assert_int_equal(o.cf_current, 8);
	assert_int_equal(o.fr_entry, 68);
	assert_int_equal(o.co_firstlineno, 72);
	tk_py_offsets__table(12, &o);
	assert_int_equal(o.rt_tss, 1544);
	assert_int_equal(o.ts_thread_id, 136);
	assert_int_equal(o.co_code, 192);
	tk_py_offsets__table(14, &o);
	assert_int_equal(o.rt_tss, 2336);
	assert_int_equal(o.fr_owner, 74);
	assert_int_equal(o.exec_tag, 3);
	assert_int_equal(o.str_ascii, 40);
}

/* _Py_DebugOffsets as 3.13.0 and 3.14.10 ship it: the table's values, every one. */
static void test_debug_offsets(void **state)
{
	const uint8_t *bins[] = { debug_313, debug_314 };
	struct tk_py_offsets d, t;
	uint64_t version;
	char why[200];
	int i;

	for (i = 0; i < 2; i++) {
		int minor = 13 + i;

		assert_int_equal(tk_py_offsets__from_debug(bins[i], 800, minor, &version, &d, why,
							   sizeof(why)), 0);
		assert_int_equal(version >> 16, 0x0300 | minor);
		tk_py_offsets__table(minor, &t);
		assert_int_equal(d.rt_interp_head, t.rt_interp_head);
		assert_int_equal(d.interp_threads, t.interp_threads);
		assert_int_equal(d.ts_next, t.ts_next);
		assert_int_equal(d.ts_thread_id, t.ts_thread_id);
		assert_int_equal(d.ts_frame, t.ts_frame);
		assert_int_equal(d.fr_prev, t.fr_prev);
		assert_int_equal(d.fr_code, t.fr_code);
		assert_int_equal(d.fr_instr, t.fr_instr);
		assert_int_equal(d.fr_owner, t.fr_owner);
		assert_int_equal(d.co_filename, t.co_filename);
		assert_int_equal(d.co_name, t.co_name);
		assert_int_equal(d.co_qualname, t.co_qualname);
		assert_int_equal(d.co_linetable, t.co_linetable);
		assert_int_equal(d.co_firstlineno, t.co_firstlineno);
		assert_int_equal(d.co_code, t.co_code);
		assert_int_equal(d.str_ascii, t.str_ascii);
		assert_int_equal(d.str_compact, t.str_compact);
		assert_int_equal(d.str_state, t.str_state);
		assert_int_equal(d.bytes_data, t.bytes_data);
		assert_true(d.fr_size <= t.fr_size);
		/* the key is not in _Py_DebugOffsets: the table's */
		assert_int_equal(d.rt_tss, t.rt_tss);
	}
}

/* What a process could put there instead: refused with a reason, never used. */
static void test_debug_offsets_forged(void **state)
{
	struct tk_py_offsets d;
	uint8_t b[800];
	uint64_t version, v;
	char why[200];

	memcpy(b, debug_313, sizeof(b));
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 14, &version, &d, why, sizeof(why)),
			 -ENOTSUP);	/* says 3.13, the binary 3.14 */
	assert_non_null(strstr(why, "version"));
	assert_int_equal(tk_py_offsets__from_debug(b, 500, 13, &version, &d, why, sizeof(why)),
			 -ENOTSUP);	/* cut short */
	assert_int_equal(tk_py_offsets__from_debug(b, 20, 13, &version, &d, why, sizeof(why)),
			 -ENOENT);
	b[0] = 'X';
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 13, &version, &d, why, sizeof(why)),
			 -ENOENT);
	memcpy(b, debug_313, sizeof(b));
	b[16] = 1;	/* free-threaded */
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 13, &version, &d, why, sizeof(why)),
			 -ENOTSUP);
	assert_non_null(strstr(why, "free-threaded"));
	/* a frame field past the kernel's buffer */
	memcpy(b, debug_313, sizeof(b));
	v = 200;
	memcpy(b + 224 + 24, &v, 8);	/* interpreter_frame.instr_ptr */
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 13, &version, &d, why, sizeof(why)),
			 -ERANGE);
	/* any offset out of bounds */
	memcpy(b, debug_313, sizeof(b));
	v = 1ULL << 40;
	memcpy(b + 48 + 24, &v, 8);	/* interpreter_state.threads_head */
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 13, &version, &d, why, sizeof(why)),
			 -ERANGE);
	/* a code field outside the stamp's window */
	memcpy(b, debug_314, sizeof(b));
	v = 8;
	memcpy(b + 312 + 40, &v, 8);	/* code_object.firstlineno */
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 14, &version, &d, why, sizeof(why)),
			 -ERANGE);
	/* 3.15's layout is not known */
	memcpy(b, debug_314, sizeof(b));
	v = 0x030f00a0;
	memcpy(b + 8, &v, 8);
	assert_int_equal(tk_py_offsets__from_debug(b, 800, 15, &version, &d, why, sizeof(why)),
			 -ENOTSUP);
}

/* The table against a binary's own members: agreement, and the first disagreement said. */
static void test_members(void **state)
{
	struct tk_py_member code39[] = { { "co_argcount", 16 }, { "co_filename", 104 },
					 { "co_name", 112 }, { "co_firstlineno", 40 },
					 { "co_lnotab", 120 } };
	struct tk_py_member frame39[] = { { "f_back", 24 }, { "f_code", 32 }, { "f_lasti", 104 } };
	struct tk_py_member code312[] = { { "co_filename", 112 }, { "co_name", 120 },
					  { "co_qualname", 128 }, { "co_firstlineno", 68 },
					  { "co_linetable", 136 } };
	struct tk_py_offsets o;
	char why[200];

	tk_py_offsets__table(9, &o);
	assert_int_equal(tk_py_offsets__check_members(&o, code39, NR(code39), frame39, NR(frame39),
						      why, sizeof(why)), 0);
	frame39[2].offset = 100;
	assert_int_equal(tk_py_offsets__check_members(&o, code39, NR(code39), frame39, NR(frame39),
						      why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "f_lasti"));
	tk_py_offsets__table(12, &o);
	assert_int_equal(tk_py_offsets__check_members(&o, code312, NR(code312), NULL, 0, why,
						      sizeof(why)), 0);
	/* the 3.11 table against a 3.12 binary: co_firstlineno moved */
	tk_py_offsets__table(11, &o);
	assert_int_equal(tk_py_offsets__check_members(&o, code312, NR(code312), NULL, 0, why,
						      sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "co_firstlineno"));
	/* no members at all: not a check that passed */
	assert_int_equal(tk_py_offsets__check_members(&o, NULL, 0, NULL, 0, why, sizeof(why)),
			 -EINVAL);
}

/* The frame record: told apart from every user address, kernel address and marker. */
static void test_record(void **state)
{
	uint64_t r = UNW_PY_REC(0x1234567, 0x7654321);

	assert_true(UNW_PY_IS_REC(r));
	assert_int_equal(UNW_PY_REC_ID(r), 0x1234567);
	assert_int_equal(UNW_PY_REC_IDX(r), 0x7654321);
	assert_false(UNW_PY_IS_REC(0x00007fffffffffffULL));
	assert_false(UNW_PY_IS_REC(0xffffffff81000000ULL));
	assert_false(UNW_PY_IS_REC((uint64_t)-2));
	assert_int_equal(UNW_PY_REC_IDX(UNW_PY_REC(1, UNW_PY_IDX_UNKNOWN)), UNW_PY_IDX_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_tables),
		cmocka_unit_test(test_past_the_end),
		cmocka_unit_test(test_cut_and_broken_tables),
		cmocka_unit_test(test_offset_table),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_debug_offsets_forged),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
