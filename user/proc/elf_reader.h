/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A small read-only ELF reader on libelf: symbols, the GNU build-id, and bytes
 * at a virtual address. Every input is treated as untrusted.
 *
 * (Named elf_reader.h, not elf.h: with -Iuser a user/elf.h would hide the
 * system <elf.h> that <libelf.h> includes.)
 */
#ifndef __TK_ELF_READER_H
#define __TK_ELF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_elf;
struct Elf;	/* libelf's Elf, without including <libelf.h> here */

enum tk_elf_sym_type {
	TK_ELF_SYM_FUNC,	/* STT_FUNC or STT_GNU_IFUNC */
	TK_ELF_SYM_OBJECT,	/* STT_OBJECT or STT_TLS */
	TK_ELF_SYM_OTHER,	/* STT_NOTYPE, only seen for undefined symbols */
};

struct tk_elf_sym {
	const char *name;	/* without "@VERSION"; valid during the callback only */
	uint64_t value;		/* st_value: a virtual address in executables and DSOs */
	uint64_t size;
	enum tk_elf_sym_type type;
	unsigned char bind;	/* STB_LOCAL, STB_GLOBAL, STB_WEAK */
	bool defined;		/* false: imported (SHN_UNDEF) */
	bool dynamic;		/* from .dynsym, else from .symtab */
	bool in_text;		/* defined in an executable section named .text* */
	bool ifunc;		/* STT_GNU_IFUNC: value is the resolver, not the function */
};

/*
 * Called for each defined function or object symbol and each undefined
 * (imported) symbol of .symtab, then of .dynsym. Return 0 to go on; any other
 * value stops the walk and is returned by tk_elf__for_each_sym().
 */
typedef int (*tk_elf_sym_cb)(const struct tk_elf_sym *sym, void *ctx);

/*
 * Open the ELF file at @path. Returns 0, a negative errno from open(2),
 * -EISDIR, or -ENOEXEC when it is not an ELF file or not a regular file.
 */
int tk_elf__open(const char *path, struct tk_elf **elf);

/* Open an ELF image held in memory; @buf is copied. Same returns as tk_elf__open(). */
int tk_elf__open_mem(const void *buf, size_t len, struct tk_elf **elf);

void tk_elf__free(struct tk_elf *elf);

/*
 * The libelf handle of @elf, for readers that build on libelf (libdw's CFI). It stays owned
 * by @elf and lives as long as it does; never elf_end() it.
 */
struct Elf *tk_elf__libelf(struct tk_elf *elf);

/* ET_EXEC, ET_DYN, ... of the header. */
unsigned int tk_elf__type(const struct tk_elf *elf);

/* True when the file has a non-empty .symtab (it is not stripped). */
bool tk_elf__has_symtab(const struct tk_elf *elf);

/* Walk the symbols, see tk_elf_sym_cb. Returns 0, a callback value, or -EINVAL. */
int tk_elf__for_each_sym(struct tk_elf *elf, tk_elf_sym_cb cb, void *ctx);

/*
 * Call @cb with each DT_NEEDED entry of the dynamic section ("libc.so.6"), in
 * order; a non-zero return stops the walk and is returned. A file without a
 * dynamic section has none: 0.
 */
int tk_elf__for_each_needed(struct tk_elf *elf, int (*cb)(const char *name, void *ctx), void *ctx);

/*
 * Write the NT_GNU_BUILD_ID note as lowercase hex into @buf. Returns the
 * build-id length in bytes, -ENOENT when there is none, -ENOSPC when @size
 * cannot hold the hex string and its NUL.
 */
int tk_elf__build_id(struct tk_elf *elf, char *buf, size_t size);

/*
 * Copy up to @len bytes at virtual address @vaddr, as they are in the file
 * (bytes past a segment's file size read as zero). The copy stops at the end
 * of the segment or section holding @vaddr. Returns the byte count (> 0 when
 * @len > 0) or -ENOENT when no loadable part of the file holds @vaddr.
 */
long tk_elf__read_vaddr(struct tk_elf *elf, uint64_t vaddr, void *buf, size_t len);

/*
 * The file offset of virtual address @vaddr through the PT_LOAD segment that
 * holds it in the file (what a uprobe on @vaddr is placed at). Returns 0,
 * -ENOENT when no segment's file part holds it.
 */
int tk_elf__vaddr_to_offset(struct tk_elf *elf, uint64_t vaddr, uint64_t *off);

/*
 * Read the pointer stored at @vaddr (8 or 4 bytes, by ELF class) as the
 * dynamic loader would set it: a RELATIVE or absolute relocation at @vaddr
 * wins over the bytes in the file. Returns 0, -ENOENT when unreadable, or
 * -ENXIO when the pointer is bound to a symbol outside the file.
 */
int tk_elf__read_ptr(struct tk_elf *elf, uint64_t vaddr, uint64_t *val);

/*
 * Read a NUL-terminated string at @vaddr into @buf (truncated to @size - 1).
 * Returns its length or -ENOENT.
 */
long tk_elf__read_str(struct tk_elf *elf, uint64_t vaddr, char *buf, size_t size);

#endif /* __TK_ELF_READER_H */
