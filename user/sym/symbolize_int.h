/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Between the symbolizer's modules (symbolize*.c, ksyms.c); not part
 * of the API. An ELF index is what symbolization keeps of a file: its PT_LOAD
 * segments (file offset → ELF virtual address), its build-id, and its
 * function symbols sorted by address, from .symtab, a debug file's .symtab,
 * or .dynsym.
 */
#ifndef __TK_SYMBOLIZE_INT_H
#define __TK_SYMBOLIZE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_elf;
struct tk_unw_table;

#define TK_BUILD_ID_HEX 129	/* 64 bytes of build-id as hex, and the NUL */

/* Where function names came from, worst to best. */
enum tk_elf_syms_from {
	TK_SYMS_NONE = 0,	/* not an ELF file, or no function symbols */
	TK_SYMS_DYNSYM,
	TK_SYMS_SYMTAB,		/* the file's own .symtab */
	TK_SYMS_DEBUG_FILE,	/* .symtab of a build-id or .gnu_debuglink debug file */
};

struct tk_elf_seg {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct tk_elf_fsym {
	uint64_t addr;
	uint32_t size;		/* the symbol's, or up to the next one */
	uint32_t name;		/* offset in names */
};

struct tk_elf_index {
	char *build_id;		/* hex, or NULL */
	struct tk_elf_seg *segs;
	size_t nr_segs;
	struct tk_elf_fsym *syms;
	size_t nr_syms;
	char *names;
	enum tk_elf_syms_from from;
	char *debug_path;	/* the debug file used, or NULL */
	struct tk_unw_table *unw;	/* unwind rows from its CFI, when asked for; or NULL */
};

/* An ELF file opened for indexing: what decides whether the cache already has it. */
struct tk_elf_file {
	struct tk_elf *elf;
	const char *path;	/* NULL: an image in memory */
	const void *mem;
	size_t mem_len;
	char build_id[TK_BUILD_ID_HEX];	/* "" when none */
	bool has_symtab;
};

/* Where debug files are looked for, for a file that has no .symtab. */
struct tk_debug_search {
	const char *debug_root;	/* "/usr/lib/debug" */
	const char *proc_root;	/* for PID/root/DIR/NAME; NULL: not tried */
	uint32_t pid;
	const char *orig_path;	/* the path the process mapped, for debuglink's directories */
};

/* Returns 0 or a negative errno (that of open(2), or -ENOEXEC). */
int tk_elf_file__open(struct tk_elf_file *f, const char *path);
/* @buf must outlive @f. */
int tk_elf_file__open_mem(struct tk_elf_file *f, const void *buf, size_t len);
void tk_elf_file__close(struct tk_elf_file *f);

/* Index @f (segments, build-id, symbols; a debug file per @ds). 0 or -ENOMEM. */
int tk_elf_index__build(struct tk_elf_file *f, const struct tk_debug_search *ds,
			struct tk_elf_index **out);
/* An index with nothing in it, remembered for files that could not be parsed. */
struct tk_elf_index *tk_elf_index__empty(void);
void tk_elf_index__free(struct tk_elf_index *idx);

/* The ELF virtual address at file offset @off; false when no segment holds it. */
bool tk_elf_index__vaddr(const struct tk_elf_index *idx, uint64_t off, uint64_t *vaddr);
/* The function at ELF virtual address @vaddr, or NULL. */
const char *tk_elf_index__find(const struct tk_elf_index *idx, uint64_t vaddr);

/* Sorting symbols: a key and what it belongs to. */
struct tk_sort_item {
	uint64_t key;
	uint64_t val;
};

/* Sort @a by key, stably (a radix sort: symbol tables are large). 0 or -ENOMEM. */
int tk_sort_items(struct tk_sort_item *a, size_t n);

/* The CRC-32 .gnu_debuglink uses, of the file at @path. 0 or a negative errno. */
int tk_file_crc32(const char *path, uint32_t *crc);

#endif /* __TK_SYMBOLIZE_INT_H */
