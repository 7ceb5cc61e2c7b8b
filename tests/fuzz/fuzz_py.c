// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for what tracekit reads of a CPython process's memory:
 * line tables (user/runtime/py_linetab.c: every format, any bytes, any index)
 * and _Py_DebugOffsets (py_offsets.c: a process may write anything in its
 * _PyRuntime), and the code it decodes of an interpreter and a libc (py_arch.c:
 * arm64's pthread_self and PyGILState_GetThisThreadState, the loop's jumps on
 * both architectures; a container's files are its user's writing). Input: minor
 * version (byte 0), first line (bytes 1-4), then the bytes. A line is never
 * negative; offsets taken from _Py_DebugOffsets always lie where the kernel
 * reads them; a struct pthread size fits the kernel's u16; the jump scan ends.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/py_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_py_offsets o;
	struct unw_py b;
	uint64_t version;
	char why[200];
	int32_t first;
	int minor, line, err;
	uint32_t i;

	if (size < 5)
		return 0;
	minor = 9 + data[0] % 7;	/* 9..15: 15 is not known */
	memcpy(&first, data + 1, 4);
	data += 5;
	size -= 5;
	for (i = 0; i < 2 * size + 8; i++) {
		err = tk_py_line(minor, data, size, first, i, &line);
		if ((err && err != -ENOENT && err != -EINVAL) || line < 0)
			abort();
	}
	tk_py_line(minor, data, size, first, UINT32_MAX, &line);
	{
		static const unsigned int machines[] = { EM_X86_64, EM_AARCH64 };
		uint64_t addr, tgt;
		uint32_t off;
		size_t at, n;

		if (!tk_py__a64_tp_off(data, size, &off) && (off < 0x200 || off > 0xffff))
			abort();
		tk_py__a64_tss_addr(data, size, (uint64_t)first << 12, &addr);
		for (i = 0; i < 2; i++) {
			for (at = 0, n = 0; tk_py__next_jump(machines[i], data, size, &at, 0x400000,
							     &tgt); n++) {
				if (at > size || n > size)
					abort();
			}
		}
	}
	if (!tk_py_offsets__from_debug(data, size, minor, &version, &o, why, sizeof(why))) {
		memset(&b, 0, sizeof(b));
		tk_py_offsets__to_bpf(&o, &b);
		if (b.fr_size > UNW_PY_FRAME_BUF || b.fr_code + 8 > b.fr_size ||
		    b.fr_prev + 8 > b.fr_size || b.fr_instr + 8 > b.fr_size ||
		    b.fr_owner + 1 > b.fr_size || b.co_first + 4 > UNW_PY_CODE_WIN ||
		    b.co_lines + 8 > UNW_PY_CODE_WIN || b.co_name + 8 > UNW_PY_CODE_WIN)
			abort();
	}
	return 0;
}
