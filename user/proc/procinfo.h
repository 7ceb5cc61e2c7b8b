/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What tracekit can learn about one process from outside it, read-only:
 * its allocator (by its mappings and the symbols of the mapped objects),
 * whether a jemalloc in it was built with profiling and has it active,
 * whether its main binary carries a build-id and frame pointers, and for each
 * executable object it maps whether its stacks can be unwound by CFI, by frame
 * pointers, both or neither.
 */
#ifndef __TK_PROCINFO_H
#define __TK_PROCINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/mapfile.h"

enum tk_allocator {
	TK_ALLOC_UNKNOWN = 0,
	TK_ALLOC_GLIBC,
	TK_ALLOC_JEMALLOC,
	TK_ALLOC_TCMALLOC,
	TK_ALLOC_MIMALLOC,
};

/* -1 unknown, 0 no, 1 yes */
typedef int tk_tristate;

#define TK_PROC_MAX_OBJECTS 64	/* executable objects listed; the rest are counted */

/* Where an object's call frame information comes from (in this order of preference). */
enum tk_cfi_source {
	TK_CFI_UNKNOWN = 0,	/* the object could not be read */
	TK_CFI_NONE,		/* none: no .eh_frame, .debug_frame or debug file with one */
	TK_CFI_EH_FRAME,	/* its own .eh_frame */
	TK_CFI_DEBUG_FRAME,	/* its own .debug_frame (and no .eh_frame) */
	TK_CFI_DEBUG_FILE,	/* the .debug_frame of its debug file under /usr/lib/debug */
};

/*
 * One object mapped executable: a file (r-xp, once per file) or the [vdso].
 * A cheap look, no tables built: a section counts when it has contents
 * (.eh_frame: more than its 4-byte terminator).
 */
struct tk_proc_object {
	char path[PATH_MAX];		/* as maps names it; "[vdso]" */
	uint64_t start, end;		/* its first executable mapping */
	struct tk_file_id id;		/* its file's, from maps */
	bool deleted;			/* maps says "(deleted)" */
	bool is_main;			/* the main binary (its path is PID/exe's) */
	int err;			/* 0, or why it could not be read (negative errno) */
	enum tk_cfi_source cfi;
	long eh_frame_fdes;		/* FDE count of .eh_frame_hdr; -1 when unknown */
	char debug_file[256];		/* TK_CFI_DEBUG_FILE: the file, as the process sees it */
	tk_tristate frame_pointers;	/* the prologue heuristic, as for the main binary */
	unsigned int fp_checked;
	unsigned int fp_with_frame;
	char fp_evidence[96];
};

struct tk_proc_info {
	int pid;
	char comm[32];
	char exe[PATH_MAX];		/* readlink of /proc/PID/exe */

	enum tk_allocator allocator;
	char alloc_object[PATH_MAX];	/* object that provides malloc */
	bool alloc_static;		/* linked into the main binary */
	char alloc_prefix[32];		/* symbol prefix: "", "je_", "_rjem_" ... */
	char alloc_evidence[256];	/* how it was found, for people */
	/* alloc_object's first mapping and its file, to reach that file (proc/mapfile.h) */
	uint64_t alloc_start, alloc_end;
	struct tk_file_id alloc_id;

	tk_tristate jemalloc_prof_built;	/* built with --enable-prof */
	char jemalloc_prof_built_evidence[256];
	tk_tristate jemalloc_prof_active;	/* prof:true in its configuration */
	char jemalloc_prof_active_evidence[256];

	bool has_build_id;
	char build_id[2 * 64 + 1];	/* hex */

	tk_tristate frame_pointers;	/* heuristic, see fp_* */
	unsigned int fp_checked;	/* function prologues looked at */
	unsigned int fp_with_frame;	/* of those, ones that set up %rbp */
	char fp_evidence[256];

	/* executable objects from maps, in address order, each file once */
	unsigned int nr_objects;
	unsigned int objects_omitted;	/* executable file mappings past the list's end */
	unsigned int anon_exec;		/* executable mappings of no file (JIT code) but the vdso */
	struct tk_proc_object objects[TK_PROC_MAX_OBJECTS];
};

const char *tk_allocator__name(enum tk_allocator a);

/* "eh_frame", "debug_frame", "debug_file", "none", "unknown". */
const char *tk_cfi_source__name(enum tk_cfi_source s);

/*
 * How an object's frames can be unwound: "cfi+fp", "cfi" (CFI; frame pointers
 * unlikely or unknown), "fp" (frame pointers only), "none" (neither), or
 * "unknown" (unreadable, or no CFI and frame pointers unknown).
 */
const char *tk_proc_object__unwind(const struct tk_proc_object *o);

/*
 * Fill @out for @pid, reading @proc_root/PID/{comm,exe,maps,environ,root/...}.
 * @proc_root is "/proc" on a live system (NULL means that too); a fixture tree
 * works the same. Mapped objects are opened through PID/map_files, then
 * PID/root/PATH, then PATH itself, each only when it is the file the maps
 * line names (proc/mapfile.h); the vdso
 * is read from PID/mem, debug files from PID/root/usr/lib/debug, then (live
 * only) /usr/lib/debug. An object that cannot be read is listed with its err.
 * Returns 0, -ENOENT when the process does not exist, -EACCES when it cannot
 * be read, or another negative errno.
 */
int tk_proc_info__read(const char *proc_root, int pid, struct tk_proc_info *out);

#endif /* __TK_PROCINFO_H */
