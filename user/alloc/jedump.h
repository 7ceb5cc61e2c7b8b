/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * jemalloc heap dumps as files: the MALLOC_CONF that makes jemalloc write
 * them, where a process writes them (its prof_prefix), asking libtkagent.so
 * for one (agent_proto.h), finding the newest, and reading one into a heap
 * profile (jeprof.h does the parsing). Shared by the jemalloc backend of
 * `tracekit alloc` (alloc_je.c) and the sidecar's periodic heap profiles.
 */
#ifndef __TK_JEDUMP_H
#define __TK_JEDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sym/symbolize.h"

#define TK_JEDUMP_DEFAULT_LG_SAMPLE 19		/* 512 KiB, jemalloc's own default */
#define TK_JEDUMP_REQUEST_TIMEOUT_MS 5000
#define TK_JEDUMP_LIB "libjemalloc.so.2"

/* round(log2(@sample_bytes)) within jemalloc's range [0, 62]; 0 bytes: the default, 19. */
int tk_jedump__lg_sample(uint64_t sample_bytes);

/*
 * "prof:true,prof_active:true,prof_accum:true,lg_prof_sample:K,prof_final:true,
 * prof_prefix:PREFIX" into @buf. Returns 0, -EINVAL when @prefix holds a ','
 * or ':' (jemalloc's option syntax has no quoting), -ENAMETOOLONG.
 */
int tk_jedump__malloc_conf(char *buf, size_t size, int lg_sample, const char *prefix);

/*
 * The value of the last prof_prefix option in a malloc_conf string, into
 * @buf. Returns 0 or -ENOENT when it has none (jemalloc's default is "jeprof").
 */
int tk_jedump__conf_prefix(const char *conf, char *buf, size_t size);

/*
 * A shared libjemalloc (TK_JEDUMP_LIB) to preload: $TRACEKIT_LIBJEMALLOC when
 * set, else the first of the usual library directories (Debian's multiarch
 * directory first) holding an ELF file that defines mallctl. Returns 0 or
 * -ENOENT.
 */
int tk_jedump__find_lib(char *buf, size_t size);

/*
 * The newest regular file in @dir named @name_prefix*.heap (all of them when
 * @name_prefix is NULL or "") and modified at or after @since_ns (unix ns; 0:
 * any). Its path into @path and its modification time into *@mtime_ns (may
 * be NULL). Returns 0, -ENOENT when there is none, or the error of opening
 * @dir.
 */
int tk_jedump__newest(const char *dir, const char *name_prefix, int64_t since_ns, char *path,
		      size_t size, int64_t *mtime_ns);

/*
 * Ask libtkagent.so on @fd (a connected stream socket) for a dump into
 * @path: writes "D PATH\n" and waits up to @timeout_ms for the answer.
 * Returns 0 when the dump was written, the agent's error as a negative errno
 * (-ENOENT: no mallctl in the process), -EPIPE when the agent is gone (the
 * process exited or exec'd), -ETIMEDOUT, -EPROTO for an answer that is not
 * one, -EINVAL for a path with a newline.
 */
int tk_jedump__request(int fd, const char *path, int timeout_ms);

/*
 * Read the dump at @path (at most TK_JEPROF_MAX_LEN bytes), parse it and add
 * it to a new heap profile of @backend for @pid, symbolized by @s (see
 * tk_jeprof__to_profile). *@period gets the dump's sample period (may be
 * NULL). Returns 0 or a negative errno (the parser's for a malformed dump).
 */
int tk_jedump__load(const char *path, struct tk_symbolizer *s, uint32_t pid, const char *backend,
		    uint64_t *period, struct tk_profile **out);

/* How a program file has jemalloc. */
enum tk_jedump_linkage {
	TK_JEDUMP_NONE = 0,	/* not linked (it may still dlopen one) */
	TK_JEDUMP_SHARED,	/* a DT_NEEDED libjemalloc */
	TK_JEDUMP_STATIC,	/* linked in: defines PREFIXmallctl and PREFIXmalloc */
};

struct tk_jedump_program {
	enum tk_jedump_linkage linkage;
	char needed[128];	/* SHARED: the DT_NEEDED entry ("libjemalloc.so.2") */
	char prefix[32];	/* STATIC: the symbol prefix ("", "je_", "_rjem_") */
	char conf_env[48];	/* STATIC: the variable it reads ("MALLOC_CONF", "_RJEM_MALLOC_CONF") */
	int prof_built;		/* STATIC: built with --enable-prof? -1 unknown (no .symtab), 0, 1 */
};

/*
 * What the ELF file at @path links of jemalloc (read with elf_reader.h: the
 * dynamic section's DT_NEEDED, the symbols; the profiling heuristic is
 * procinfo_alloc.c's: an unwinder referenced). Returns 0, or the error of opening
 * it (-ENOEXEC for a script or anything not ELF).
 */
int tk_jedump__program(const char *path, struct tk_jedump_program *out);

#endif /* __TK_JEDUMP_H */
