/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside tk_proc_info__read(): what its parts share. procinfo.c reads /proc
 * and puts the whole together; procinfo_alloc.c finds the allocator (by the
 * libraries mapped and the symbols of the objects) and whether a jemalloc
 * profiles; procinfo_unwind.c looks at how each executable object can be
 * unwound (CFI sections, frame pointers).
 */
#ifndef __TK_PROCINFO_INT_H
#define __TK_PROCINFO_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proc/elf_reader.h"
#include "proc/mapfile.h"
#include "proc/procinfo.h"

#define FP_MIN_SIZE 16
#define MAX_PREFIXES 8
#define PREFIX_MAX 32

/* The evidence strings: formatted or copied, truncated to fit. */
__attribute__((format(printf, 3, 4)))
static inline void say(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

static inline void copy_str(char *dst, size_t size, const char *src)
{
	say(dst, size, "%s", src);
}

/* Is @proc_root the live /proc, not a fixture tree? */
static inline bool is_live_proc(const char *proc_root)
{
	size_t n = strlen(proc_root);

	while (n > 1 && proc_root[n - 1] == '/')
		n--;
	return n == 5 && !strncmp(proc_root, "/proc", 5);
}

/* A mapped object to open: maps' path for it, its first mapping and its file's identity. */
struct mapped_obj {
	bool found;
	char path[PATH_MAX];
	uint64_t start, end;
	struct tk_file_id id;
};

/* What one pass over an object's symbols found (tk_proc_collect_facts). */
struct sym_facts {
	/* jemalloc: defined PREFIXmallctl functions */
	char je_prefix[MAX_PREFIXES][PREFIX_MAX];
	unsigned int n_je;
	bool tc_malloc, mi_malloc, libc_malloc;
	/* unwinders a jemalloc built with --enable-prof uses */
	bool unwind_backtrace, unw_backtrace, backtrace, prof_unwind_callback;
	/* functions for the frame pointer check */
	uint64_t *funcs;
	size_t nfuncs, cap;
	bool funcs_from_symtab;
	int err;
};

/* ---- /proc (procinfo.c) --------------------------------------------------------------- */

/* @proc_root/PID/root + @abs into @buf: the file @abs as the process sees it. */
int tk_proc_root_path(char *buf, size_t size, const char *proc_root, int pid, const char *abs);
/* Open @o's file (tk_mapfile__find's ways); the path used into @used. */
int tk_proc_open_mapped_at(const char *proc_root, int pid, const struct mapped_obj *o,
			   struct tk_elf **elf, char *used, size_t used_size);

/* ---- the allocator (procinfo_alloc.c) --------------------------------------------------- */

/* The allocator a library's file name says (libjemalloc.so...), or TK_ALLOC_UNKNOWN. */
enum tk_allocator tk_proc_allocator_of_lib(const char *name);
/* Is @name glibc's libc (libc.so.6, libc-2.N.so)? */
bool tk_proc_is_glibc(const char *name);
/* One pass over @elf's symbols into @f (zeroed first); tk_proc_free_facts() after. */
int tk_proc_collect_facts(struct tk_elf *elf, struct sym_facts *f);
void tk_proc_free_facts(struct sym_facts *f);
/* Find the defined symbol @name (into @out, may be NULL); false when absent. */
bool tk_proc_find_defined(struct tk_elf *elf, const char *name, struct tk_elf_sym *out);
/* The index of f->je_prefix whose PREFIXmalloc @elf defines, or -1. */
int tk_proc_jemalloc_prefix(struct tk_elf *elf, const struct sym_facts *f);
/* Was the jemalloc in @elf (@obj, linked in when @is_static) built with --enable-prof? */
void tk_proc_jemalloc_prof_built(struct tk_proc_info *out, struct tk_elf *elf,
				 const struct sym_facts *f, bool is_static, const char *obj);
/* Is its profiling on (prof:true in the program, /etc/PREFIXmalloc.conf, the environment)? */
void tk_proc_jemalloc_prof_active(struct tk_proc_info *out, const char *proc_root, int pid,
				  struct tk_elf *exe, const char *prefix);

/* ---- unwinding (procinfo_unwind.c) ------------------------------------------------------ */

/* The frame-pointer heuristic on the main binary @exe (its functions in @f) into @out. */
void tk_proc_frame_pointers(struct tk_proc_info *out, struct tk_elf *exe, struct sym_facts *f);
/* The CFI and frame pointers of the executable object @o of @pi. 0 or -ENOMEM. */
int tk_proc_scan_object(const char *proc_root, int pid, const struct tk_proc_info *pi,
			struct tk_proc_object *o);

#endif /* __TK_PROCINFO_INT_H */
