/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What tracekit can learn about one process from outside it, read-only:
 * its allocator (by its mappings and the symbols of the mapped objects),
 * whether a jemalloc in it was built with profiling and has it active,
 * and whether its main binary carries a build-id and frame pointers.
 */
#ifndef __TK_PROCINFO_H
#define __TK_PROCINFO_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

enum tk_allocator {
	TK_ALLOC_UNKNOWN = 0,
	TK_ALLOC_GLIBC,
	TK_ALLOC_JEMALLOC,
	TK_ALLOC_TCMALLOC,
	TK_ALLOC_MIMALLOC,
};

/* -1 unknown, 0 no, 1 yes */
typedef int tk_tristate;

struct tk_proc_info {
	int pid;
	char comm[32];
	char exe[PATH_MAX];		/* readlink of /proc/PID/exe */

	enum tk_allocator allocator;
	char alloc_object[PATH_MAX];	/* object that provides malloc */
	bool alloc_static;		/* linked into the main binary */
	char alloc_prefix[32];		/* symbol prefix: "", "je_", "_rjem_" ... */
	char alloc_evidence[256];	/* how it was found, for people */

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
};

const char *tk_allocator__name(enum tk_allocator a);

/*
 * Fill @out for @pid, reading @proc_root/PID/{comm,exe,maps,environ,root/...}.
 * @proc_root is "/proc" on a live system (NULL means that too); a fixture tree
 * works the same. Mapped libraries are opened through PID/map_files, then
 * PID/root/PATH, then PATH itself (only when @proc_root is "/proc").
 * Returns 0, -ENOENT when the process does not exist, -EACCES when it cannot
 * be read, or another negative errno.
 */
int tk_proc_info__read(const char *proc_root, int pid, struct tk_proc_info *out);

#endif /* __TK_PROCINFO_H */
