// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the ELF reader: open the input as an ELF image, walk
 * its symbols, read code and pointers at their addresses, read the build-id.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/elf_reader.h"
#include "proc/x86_prologue.h"

#define MAX_READS 256

struct walk {
	unsigned int reads;
	size_t names;
};

static int sym_cb(const struct tk_elf_sym *s, void *ctx)
{
	struct tk_elf *elf = ((void **)ctx)[0];
	struct walk *w = ((void **)ctx)[1];
	unsigned char code[64];
	char str[64];
	uint64_t ptr;
	long n;

	w->names += strlen(s->name);
	if (!s->defined || w->reads >= MAX_READS)
		return 0;
	w->reads++;
	if (s->type == TK_ELF_SYM_FUNC) {
		n = tk_elf__read_vaddr(elf, s->value, code, sizeof(code));
		if (n > (long)sizeof(code))
			abort();
		if (n > 0)
			tk_x86__sets_frame_pointer(code, n);
	} else if (s->type == TK_ELF_SYM_OBJECT) {
		if (!tk_elf__read_ptr(elf, s->value, &ptr)) {
			n = tk_elf__read_str(elf, ptr, str, sizeof(str));
			if (n >= (long)sizeof(str) || (n >= 0 && strlen(str) != (size_t)n))
				abort();
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w = { 0 };
	struct tk_elf *elf;
	char id[129], small[9];
	unsigned char buf[16];
	void *ctx[2];
	int n;

	if (tk_elf__open_mem(data, size, &elf))
		return 0;
	ctx[0] = elf;
	ctx[1] = &w;
	tk_elf__type(elf);
	tk_elf__has_symtab(elf);
	tk_elf__for_each_sym(elf, sym_cb, ctx);
	n = tk_elf__build_id(elf, id, sizeof(id));
	if (n > 0 && strlen(id) != 2 * (size_t)n)
		abort();
	tk_elf__build_id(elf, small, sizeof(small));
	tk_elf__read_vaddr(elf, 0, buf, sizeof(buf));
	tk_elf__read_vaddr(elf, 0x400000, buf, sizeof(buf));
	tk_elf__read_vaddr(elf, UINT64_MAX - 4, buf, sizeof(buf));
	tk_elf__free(elf);
	return 0;
}
