// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What finding CPython's frames takes that differs per architecture (x86-64,
 * arm64), chosen by the interpreter file's ELF machine, so that both are
 * tested on either host.
 *
 * glibc's struct pthread: a pthread key's value of a thread lies at
 * pthread_t + 0x118 + 16 * key on arm64 (x86-64: 0x318), its kernel thread
 * id at pthread_t + 0xd0 (x86-64: 0x2d0): the same struct after a header of
 * 192 bytes instead of x86-64's 704 (tcbhead_t). Measured in bookworm's
 * libc6:arm64 2.36: pthread_getspecific reads tp - 0x630 + 16 * key + 8 with
 * pthread_self = tp - 0x740; pthread_getcpuclockid loads the tid at [x0, #208].
 *
 * The thread pointer: x86-64's fsbase is the pthread_t itself. arm64's
 * TPIDR_EL0 (the kernel's task_struct.thread.uw.tp_value) points at the TCB
 * after struct pthread (TLS variant I): pthread_t = tp - sizeof(struct
 * pthread) (TLS_PRE_TCB_SIZE), a size that changes between glibc versions, so
 * it is read from the process's own libc: pthread_self is "mrs x0, tpidr_el0;
 * sub x0, x0, #size; ret" (after a bti or paciasp hint where glibc is built
 * with branch protection).
 *
 * The interpreter loop's jumps to the parts a compiler split off (py_detect.c,
 * loop_ranges): x86-64's jmp/jcc rel32, arm64's b, b.cond, cbz/cbnz, tbz/tbnz.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc/elf_reader.h"
#include "runtime/py_int.h"

int tk_py__glibc_layout(unsigned int machine, struct tk_py_glibc *out)
{
	switch (machine) {
	case EM_X86_64:
		out->tsd_off = 0x310 + 8;	/* specific_1stblock[key].data */
		out->tsd_stride = 16;
		out->tid_off = 0x2d0;
		return 0;
	case EM_AARCH64:
		out->tsd_off = 0x110 + 8;
		out->tsd_stride = 16;
		out->tid_off = 0xd0;
		return 0;
	default:
		return -ENOTSUP;
	}
}

static uint32_t word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* hint instructions (nop, bti, paciasp, ...): hint #imm is d503201f | imm << 5 */
static bool a64_hint(uint32_t w)
{
	return (w & 0xfffff01f) == 0xd503201f;
}

int tk_py__a64_tp_off(const uint8_t *code, size_t len, uint32_t *off)
{
	uint32_t w, rt, imm;
	size_t i = 0;

	while (i + 4 <= len && i < 16 && a64_hint(word(code + i)))
		i += 4;
	if (i + 12 > len)
		return -ENOTSUP;
	/* mrs xT, tpidr_el0 */
	w = word(code + i);
	if ((w & 0xffffffe0) != 0xd53bd040)
		return -ENOTSUP;
	rt = w & 31;
	/* sub x0, xT, #imm{, lsl #12} (64-bit, no flags) */
	w = word(code + i + 4);
	if ((w & 0xff800000) != 0xd1000000 || ((w >> 5) & 31) != rt || (w & 31) != 0)
		return -ENOTSUP;
	imm = (w >> 10) & 0xfff;
	if (w & (1u << 22))
		imm <<= 12;
	/* ret (x30), or after autiasp */
	w = word(code + i + 8);
	if (w != 0xd65f03c0 && !(a64_hint(w) && i + 16 <= len && word(code + i + 12) == 0xd65f03c0))
		return -ENOTSUP;
	/* struct pthread: more than its 0x118-byte head, and within the key's u16 */
	if (imm < 0x200 || imm > 0xffff)
		return -ENOTSUP;
	*off = imm;
	return 0;
}

struct self_sym {
	uint64_t value;
};

static int self_cb(const struct tk_elf_sym *s, void *ctx)
{
	struct self_sym *y = ctx;

	if (s->defined && s->type == TK_ELF_SYM_FUNC && !strcmp(s->name, "pthread_self")) {
		y->value = s->value;
		return 1;
	}
	return 0;
}

int tk_py__libc_tp_off(const char *path, uint32_t *off, char *why, size_t why_sz)
{
	struct self_sym y = { 0 };
	struct tk_elf *elf;
	uint8_t code[16];
	long got;
	int err;

	err = tk_elf__open(path, &elf);
	if (err) {
		snprintf(why, why_sz, "its libc is unreadable (%s)", strerror(-err));
		return err;
	}
	err = tk_elf__for_each_sym(elf, self_cb, &y);
	if (err < 0 || !y.value) {
		snprintf(why, why_sz, "its libc has no pthread_self (not glibc)");
		err = -ENOTSUP;
		goto out;
	}
	got = tk_elf__read_vaddr(elf, y.value, code, sizeof(code));
	err = got > 0 ? tk_py__a64_tp_off(code, got, off) : -ENOTSUP;
	if (err)
		snprintf(why, why_sz, "its libc's pthread_self is not glibc's arm64 one "
			 "(mrs tpidr_el0; sub; ret): struct pthread's place unknown");
out:
	tk_elf__free(elf);
	return err;
}

/*
 * arm64: the Py_tss_t that PyGILState_GetThisThreadState reads, from its code at @pc:
 * addresses built by adrp/add are followed to the call that ends it, whose argument is
 * the key (ldr w0, [xN, #off]: pthread_getspecific, the Py_tss_t 4 bytes before) or the
 * Py_tss_t itself (x0 an address: PyThread_tss_get). Measured shapes: Debian 3.9 and 3.11
 * (adrp; add; [add;] ldr x1; cbz; ldr w0; b pthread_getspecific), 3.13 (bti first, ldr w1)
 * and 3.14 (bti; adrp; ldr w0; cbz; adrp x0; add x0; b PyThread_tss_get).
 */
int tk_py__a64_tss_addr(const uint8_t *code, size_t len, uint64_t pc, uint64_t *addr)
{
	uint64_t reg[32], key = 0;	/* reg[31]: sp or xzr, never known */
	uint32_t known = 0, w, d, n, imm;
	size_t i;

	for (i = 0; i + 4 <= len && i < 64; i += 4) {
		known &= ~(1u << 31);
		w = word(code + i);
		d = w & 31;
		n = (w >> 5) & 31;
		if (a64_hint(w) || (w & 0x7e000000) == 0x34000000)
			continue;	/* bti, paciasp; cbz/cbnz: the fall-through is the path */
		if ((w & 0x9f000000) == 0x90000000) {
			/* adrp xd, page */
			uint64_t imm21 = ((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3);
			int64_t page = (int64_t)(imm21 << 43) >> 31;

			reg[d] = (pc + i) / 4096 * 4096 + page;
			known |= 1u << d;
		} else if ((w & 0xff800000) == 0x91000000) {
			/* add xd, xn, #imm{, lsl 12} */
			imm = (w >> 10) & 0xfff;
			if (w & (1u << 22))
				imm <<= 12;
			if (n == 31 || !(known & 1u << n)) {
				known &= ~(1u << d);
				continue;
			}
			reg[d] = reg[n] + imm;
			known |= 1u << d;
		} else if ((w & 0xbfc00000) == 0xb9400000) {
			/* ldr wt / xt, [xn, #imm] */
			imm = ((w >> 10) & 0xfff) << (w & (1u << 30) ? 3 : 2);
			key = d == 0 && !(w & (1u << 30)) && n != 31 && (known & 1u << n) ?
				      reg[n] + imm : (d == 0 ? 0 : key);
			known &= ~(1u << d);
		} else if ((w & 0x7c000000) == 0x14000000) {
			/* b or bl: the call */
			if (known & 1)
				*addr = reg[0];
			else if (key >= 4)
				*addr = key - 4;
			else
				return -ENOTSUP;
			return 0;
		} else {
			return -ENOTSUP;
		}
	}
	return -ENOTSUP;
}

/* x86-64: jmp rel32 (e9), jcc rel32 (0f 8x); byte by byte, as they may start anywhere */
static bool x86_next_jump(const uint8_t *code, size_t len, size_t *at, uint64_t start,
			  uint64_t *tgt)
{
	size_t i, n;
	int32_t rel;

	for (i = *at; i + 6 <= len; i++) {
		if (code[i] == 0xe9) {
			n = 5;
			memcpy(&rel, code + i + 1, 4);
		} else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80) {
			n = 6;
			memcpy(&rel, code + i + 2, 4);
		} else {
			continue;
		}
		*tgt = start + i + n + (int64_t)rel;
		*at = i + 1;
		return true;
	}
	*at = len;
	return false;
}

/* arm64: b (imm26), b.cond, cbz/cbnz (imm19), tbz/tbnz (imm14); not bl (a call) */
static bool a64_next_jump(const uint8_t *code, size_t len, size_t *at, uint64_t start,
			  uint64_t *tgt)
{
	int64_t rel;
	uint32_t w;
	size_t i;

	for (i = (*at + 3) & ~(size_t)3; i + 4 <= len; i += 4) {
		w = word(code + i);
		if ((w & 0xfc000000) == 0x14000000)
			rel = (int64_t)((int32_t)(w << 6) >> 6) * 4;
		else if ((w & 0xff000010) == 0x54000000 || (w & 0x7e000000) == 0x34000000)
			rel = (int64_t)((int32_t)(w << 8) >> 13) * 4;
		else if ((w & 0x7e000000) == 0x36000000)
			rel = (int64_t)((int32_t)(w << 13) >> 18) * 4;
		else
			continue;
		*tgt = start + i + rel;
		*at = i + 4;
		return true;
	}
	*at = len;
	return false;
}

bool tk_py__next_jump(unsigned int machine, const uint8_t *code, size_t len, size_t *at,
		      uint64_t start, uint64_t *tgt)
{
	if (machine == EM_X86_64)
		return x86_next_jump(code, len, at, start, tgt);
	if (machine == EM_AARCH64)
		return a64_next_jump(code, len, at, start, tgt);
	*at = len;
	return false;
}
