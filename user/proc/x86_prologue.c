// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Does a function set up a frame pointer? Decided from its first bytes with
 * a small x86-64 decoder that knows the instructions compilers put in and
 * around prologues, and gives up (answering no) on anything else.
 */
#include <string.h>

#include "proc/x86_prologue.h"

#define MAX_INSNS 16

/* What an instruction does to the frame pointer question. */
enum insn_kind {
	INSN_PLAIN,		/* touches neither %rsp nor %rbp */
	INSN_PUSH_RBP,
	INSN_MOV_RSP_RBP,
	INSN_JCC,		/* conditional branch: the fall-through goes on */
	INSN_STACK,		/* other push/pop, %rsp arithmetic, call, jmp, ret, leave */
	INSN_WRITES_RBP,	/* %rbp used as an ordinary register */
};

/* Bytes taken by a ModRM operand at @b (the ModRM byte included), 0 if cut. */
static size_t modrm_len(const unsigned char *b, size_t n)
{
	unsigned int mod, rm;
	size_t len = 1;

	if (n < 1)
		return 0;
	mod = b[0] >> 6;
	rm = b[0] & 7;
	if (mod != 3 && rm == 4) {
		if (n < 2)
			return 0;
		len++;
		if (mod == 0 && (b[1] & 7) == 5)
			len += 4;
	}
	if (mod == 0 && rm == 5)
		len += 4;
	else if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len <= n ? len : 0;
}

/* Decode one instruction; returns its length or 0 when not understood. */
static size_t decode_insn(const unsigned char *b, size_t n, enum insn_kind *kind)
{
	size_t i = 0, m, imm = 0;
	unsigned int rex = 0, op, modrm, reg, rm;
	bool opsize = false, rexw, modrm_dst_is_rm = false, has_modrm = false;

	*kind = INSN_PLAIN;
	while (i < n && i < 4 && (b[i] == 0x66 || b[i] == 0x2e || b[i] == 0x3e)) {
		opsize |= b[i] == 0x66;
		i++;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (i >= n)
		return 0;
	rexw = rex & 8;
	op = b[i++];

	if (op >= 0x50 && op <= 0x57) {
		*kind = op == 0x55 && !(rex & 1) ? INSN_PUSH_RBP : INSN_STACK;
		return i;
	}
	if ((op >= 0x58 && op <= 0x5f) || op == 0xc3 || op == 0xc9 || op == 0xe8 || op == 0xe9 ||
	    op == 0xeb) {
		*kind = INSN_STACK;
		return i;
	}
	if (op >= 0x70 && op <= 0x7f) {
		*kind = INSN_JCC;
		return i + 1 <= n ? i + 1 : 0;
	}
	if (op == 0x90)
		return i;
	if (op >= 0xb0 && op <= 0xb7)
		return i + 1 <= n ? i + 1 : 0;
	if (op >= 0xb8 && op <= 0xbf) {
		if ((op & 7) == 5 && !(rex & 1))
			*kind = INSN_WRITES_RBP;
		m = i + (rexw ? 8 : opsize ? 2 : 4);
		return m <= n ? m : 0;
	}
	if (op == 0x0f) {
		if (i >= n)
			return 0;
		op = 0x0f00 | b[i++];
		if (op >= 0x0f80 && op <= 0x0f8f) {
			*kind = INSN_JCC;
			return i + 4 <= n ? i + 4 : 0;
		}
		switch (op) {
		case 0x0f1f:	/* nop r/m */
		case 0x0f10: case 0x0f11: case 0x0f28: case 0x0f29: case 0x0f57: case 0x0fef:
		case 0x0fd6: case 0x0f6f: case 0x0f7f:
			break;
		case 0x0fb6: case 0x0fb7: case 0x0fbe: case 0x0fbf:
			break;
		default:
			return 0;
		}
		has_modrm = true;
	} else {
		switch (op) {
		/* ALU r/m,reg and reg,r/m forms, test, mov, lea, movsxd */
		case 0x00: case 0x01: case 0x08: case 0x09: case 0x20: case 0x21:
		case 0x28: case 0x29: case 0x30: case 0x31: case 0x88: case 0x89:
			modrm_dst_is_rm = true;
			/* fall through */
		case 0x02: case 0x03: case 0x0a: case 0x0b: case 0x22: case 0x23:
		case 0x2a: case 0x2b: case 0x32: case 0x33: case 0x38: case 0x39:
		case 0x3a: case 0x3b: case 0x84: case 0x85: case 0x8a: case 0x8b:
		case 0x8d: case 0x63:
			break;
		case 0x80: case 0x83: case 0xc0: case 0xc1: case 0xc6:
			modrm_dst_is_rm = true;
			imm = 1;
			break;
		case 0x6b:
			imm = 1;
			break;
		case 0x81: case 0xc7:
			modrm_dst_is_rm = true;
			imm = opsize ? 2 : 4;
			break;
		case 0x69:
			imm = opsize ? 2 : 4;
			break;
		default:
			return 0;
		}
		has_modrm = true;
	}
	if (!has_modrm)
		return 0;
	m = modrm_len(b + i, n - i);
	if (!m || i + m + imm > n)
		return 0;
	modrm = b[i];
	reg = ((modrm >> 3) & 7) | (rex & 4 ? 8 : 0);
	rm = (modrm & 7) | (rex & 1 ? 8 : 0);
	if (op == 0x89 && rexw && modrm == 0xe5 && !(rex & 5)) {
		*kind = INSN_MOV_RSP_RBP;
	} else if (op == 0x8b && rexw && modrm == 0xec && !(rex & 5)) {
		*kind = INSN_MOV_RSP_RBP;
	} else if (op == 0x38 || op == 0x39 || op == 0x3a || op == 0x3b || op == 0x84 ||
		   op == 0x85 || (op == 0x80 && reg == 7) || (op == 0x83 && reg == 7) ||
		   (op == 0x81 && reg == 7) || op == 0x0f1f) {
		/* compares, tests and nops write nothing */
	} else if (modrm_dst_is_rm && (modrm >> 6) == 3) {
		if (rm == 4)
			*kind = INSN_STACK;
		else if (rm == 5)
			*kind = INSN_WRITES_RBP;
	} else if (!modrm_dst_is_rm && op < 0x0f00) {
		if (reg == 4)
			*kind = INSN_STACK;
		else if (reg == 5)
			*kind = INSN_WRITES_RBP;
	}
	return i + m + imm;
}

bool tk_x86__sets_frame_pointer(const unsigned char *code, size_t len)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	bool pushed = false;
	size_t pos = 0, step;
	enum insn_kind kind;
	int i;

	if (len >= 4 && !memcmp(code, endbr64, 4))
		pos = 4;
	for (i = 0; i < MAX_INSNS && pos < len; i++, pos += step) {
		step = decode_insn(code + pos, len - pos, &kind);
		if (!step)
			return false;
		switch (kind) {
		case INSN_PLAIN:
			break;
		case INSN_PUSH_RBP:
			if (pushed)
				return false;
			pushed = true;
			break;
		case INSN_MOV_RSP_RBP:
			return pushed;
		case INSN_JCC:
			/* shrink-wrapping: an early exit before the frame is set up */
			if (pushed)
				return false;
			break;
		case INSN_STACK:
		case INSN_WRITES_RBP:
			return false;
		}
	}
	return false;
}
