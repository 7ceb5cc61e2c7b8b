/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Finding an allocator's functions in an ELF object and the file offsets
 * uprobes are placed at: glibc (libc.so.6 or linked statically), jemalloc
 * (shared, static, or under a symbol prefix such as "je_" or "_rjem_"), and
 * the two marker functions of libtkalloc.so.
 */
#ifndef __TK_ALLOC_SYMS_H
#define __TK_ALLOC_SYMS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* What a function does with its arguments (the BPF side reads them by this). */
enum tk_afn_kind {
	TK_AFN_MALLOC = 0,	/* size: malloc, valloc, mallocx, operator new */
	TK_AFN_CALLOC,		/* nmemb, size */
	TK_AFN_REALLOC,		/* ptr, size: realloc, rallocx */
	TK_AFN_REALLOCARRAY,	/* ptr, nmemb, size */
	TK_AFN_POSIX_MEMALIGN,	/* void **out, alignment, size */
	TK_AFN_MEMALIGN,	/* alignment, size: memalign, aligned_alloc */
	TK_AFN_PVALLOC,		/* size, rounded up to a page */
	TK_AFN_FREE,		/* ptr: free, cfree, sdallocx, dallocx, operator delete */
	TK_AFN_MARKER_ALLOC,	/* libtkalloc.so: ptr, size */
	TK_AFN_MARKER_FREE,	/* libtkalloc.so: ptr */
	TK_AFN__COUNT,
};

#define TK_ALLOC_MAX_FNS 48

struct tk_alloc_fn {
	char name[64];		/* its symbol, the first of its names found (aliases
				   share the address) */
	enum tk_afn_kind kind;
	uint64_t vaddr;		/* st_value */
	uint64_t size;		/* st_size; 1 when the symbol has none */
	uint64_t offset;	/* in the file: where the uprobe goes */
	bool emulated;		/* the probed instruction is a push, which the kernel
				   emulates (one trap), not single-steps (two) */
};

struct tk_alloc_syms {
	char path[PATH_MAX];	/* the file: for a process, the way to the very file it
				   maps (proc/mapfile.h), for messages */
	/*
	 * For a process: "/proc/self/fd/N" of that file, held open from when it
	 * was found and checked until tk_alloc_syms__release(); its symbols are
	 * read and its uprobes placed through it (tk_alloc_syms__probe), so a
	 * name the process swaps meanwhile (its root is its own) cannot put the
	 * probes, at these offsets, on another file. "" for a path of ours.
	 */
	char probe_path[32];
	int fd;
	bool held;
	char mapped[PATH_MAX];	/* for a process: that file's path in its own root */
	bool other_here;	/* for a process: mapped names another file here */
	struct tk_alloc_fn fns[TK_ALLOC_MAX_FNS];
	int nr;			/* one per address */
	int nr_ifunc;		/* wanted names that were IFUNC resolvers: skipped */
};

/* What is read and probed: the held file of a process, else the path. */
static inline const char *tk_alloc_syms__probe(const struct tk_alloc_syms *s)
{
	return s->probe_path[0] ? s->probe_path : s->path;
}

/* Close the held file (a no-op when none); the functions found stay. */
void tk_alloc_syms__release(struct tk_alloc_syms *s);

enum tk_alloc_syms_flags {
	/* also C++ operator new/delete, when the object itself defines them (jemalloc) */
	TK_ASYMS_CXX = 1 << 0,
	/* libtkalloc.so's two markers instead of the allocator's functions */
	TK_ASYMS_MARKERS = 1 << 1,
};

/*
 * Add the functions of the allocator in the ELF file @path whose C names
 * carry @prefix ("" for none) to @out (which the caller zeroes once; call
 * again for another prefix of the same file). Every address is hooked once,
 * under the first name found for it. Returns the number of functions added,
 * 0 when none was found, or a negative errno (tk_elf__open's, -E2BIG when
 * @out is full, -EINVAL when @path differs from @out->path).
 */
int tk_alloc_syms__find(const char *path, const char *prefix, unsigned int flags,
			struct tk_alloc_syms *out);

/* Does @out hook at least one allocating and one freeing function? */
bool tk_alloc_syms__usable(const struct tk_alloc_syms *out);

struct tk_proc_info;

/*
 * The allocator process @pid uses (procinfo's finding: @known, or read from
 * @proc_root, NULL for "/proc"), hooked whole: its C functions under its
 * prefix, and C++ operators unless it is glibc (libstdc++'s call malloc).
 * Its file is reached as tk_mapfile__find() does, never by a path that names
 * another file here (a container's libc at the host's libc's path): the
 * symbols are read from the file the uprobes go on. Returns 0, or a negative
 * errno with @why set (-ENOENT: nothing to hook; -ESTALE: the file cannot be
 * reached from here).
 */
int tk_alloc_syms__find_process(const char *proc_root, int pid, const struct tk_proc_info *known,
				struct tk_alloc_syms *out, char *why, size_t why_sz);

/*
 * A statically linked command @cmd (found as execvp would), before its exec:
 * every allocator inside it, unprefixed, "je_" and "_rjem_".
 */
int tk_alloc_syms__find_static(const char *cmd, struct tk_alloc_syms *out, char *why,
			       size_t why_sz);

/* "malloc", "free", ... for messages. */
const char *tk_afn_kind__name(enum tk_afn_kind k);

#endif /* __TK_ALLOC_SYMS_H */
