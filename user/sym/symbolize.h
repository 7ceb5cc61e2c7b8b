/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Addresses to names. A process's mappings are captured while it lives
 * (tk_symbolizer__capture, at its first sample or exec), and the ELF files
 * behind them are opened and indexed at once — through /proc/PID/map_files,
 * then /proc/PID/root/PATH, then PATH — so a process that exits during the
 * capture is still symbolized afterwards. Each ELF is parsed once (cached by
 * device+inode, and build-id) and its .symtab, or .dynsym, or the
 * .gnu_debuglink / build-id debug file under /usr/lib/debug, gives the names.
 * Kernel frames come from /proc/kallsyms. An address in no mapping of a file
 * is looked up in the process's perf map (JIT code: PID/root/tmp/perf-N.map),
 * then, for a live process, in its maps read again (a library dlopen'ed since
 * the capture; at most once a second). Unresolved addresses become
 * "module+0xoffset", never dropped.
 */
#ifndef __TK_SYMBOLIZE_H
#define __TK_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_symbolizer;

struct tk_symbolizer_opts {
	size_t sz;
	const char *proc_root;	/* default "/proc" */
	const char *debug_root;	/* default "/usr/lib/debug" */
	bool unwind_tables;	/* also build each object's unwind rows from its CFI */
};

int tk_symbolizer__new(const struct tk_symbolizer_opts *opts, struct tk_symbolizer **out);

/* A message for people (what was done to a process on the user's behalf); @warn: a failure. */
typedef void (*tk_sym_note_fn)(void *ctx, bool warn, const char *msg);
/*
 * Ask JVMs for their perf maps (proc/jvm.h: HotSpot's attach mechanism, as
 * `jcmd PID Compiler.perfmap`, done as the JVM's user in its root), or not
 * (the default): each JVM asked, or not asked and why, is said once to @note.
 */
void tk_symbolizer__set_jit_ask(struct tk_symbolizer *s, bool on, tk_sym_note_fn note,
				void *ctx);
void tk_symbolizer__free(struct tk_symbolizer *s);

/*
 * Read PID/maps now and index the executable mappings' files under (@pid,
 * @gen), replacing what that pair had (a refresh after dlopen). Returns 0,
 * -ESRCH when the process is gone, or another negative errno.
 */
int tk_symbolizer__capture(struct tk_symbolizer *s, uint32_t pid, uint32_t gen);

/*
 * What process @pid's PID/exe named when it was last captured (its latest
 * generation), or NULL: the main program of a profile of it.
 */
const char *tk_symbolizer__exe(const struct tk_symbolizer *s, uint32_t pid);
/*
 * Build unwind rows with each object indexed from now on, or not (a session
 * whose backend turns out not to walk stacks itself).
 */
void tk_symbolizer__set_unwind(struct tk_symbolizer *s, bool on);
/* True when (@pid, @gen) has been captured. */
bool tk_symbolizer__has(const struct tk_symbolizer *s, uint32_t pid, uint32_t gen);
/*
 * Add one executable mapping learned elsewhere (a perf MMAP2 record); the file
 * is opened by @path (through PID/root when the process lives).
 */
int tk_symbolizer__add_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
			       uint64_t start, uint64_t end, uint64_t pgoff, const char *path);
struct tk_file_id;
/*
 * The same, with the file's identity as the kernel gave it (a MMAP2 record's
 * device and inode; NULL or inode 0: none): only that file is read, never
 * another of that name (the host's, for a process of a container gone since).
 */
int tk_symbolizer__add_mapping_id(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				  uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
				  const struct tk_file_id *id);
/*
 * The same, for a mapping the process wrote down itself (a jemalloc heap
 * dump's MAPPED_LIBRARIES, claiming identity @claimed, may be NULL): its file
 * is read only when the process may have read it — it maps that very file
 * at [@start, @end) now, or the file is one its user could read by mode (its
 * own, or world-readable) in its root, never one only root may read. A file
 * refused is counted (named_refused) and its frames stay unnamed.
 */
int tk_symbolizer__add_named_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				     uint64_t start, uint64_t end, uint64_t pgoff,
				     const char *path, const struct tk_file_id *claimed);

struct tk_sym_frame {
	const char *function;	/* NULL when not resolved */
	const char *module;	/* mapped file, "[kernel.kallsyms]", "[vdso]"; NULL unknown */
	const char *build_id;	/* hex, or NULL */
	uint64_t map_start;	/* the mapping holding the address */
	uint64_t map_limit;
	uint64_t map_offset;	/* its file offset */
	uint64_t module_offset;	/* file offset of the address: "module+0xOFF" */
	bool jit;		/* JIT code: in an executable mapping of no file, or named
				   from a perf map or jitdump */
};

/*
 * Resolve a user address of (@pid, @gen). Returns 0 with a function name
 * (from a perf map: module "[perf-N.map]", from a jitdump "[jit-N.dump]",
 * map_start/map_limit what the file spans), -ENOENT when the mapping is known
 * but no symbol covers the address (module and offsets are filled; JIT code
 * no file names is module "[jit]"), -ESRCH when no mapping holds it (all
 * NULL/0).
 * Strings stay valid until tk_symbolizer__free.
 */
int tk_symbolizer__user(struct tk_symbolizer *s, uint32_t pid, uint32_t gen, uint64_t addr,
			struct tk_sym_frame *out);
/* Resolve a kernel address from kallsyms (loaded on first use); same returns. */
int tk_symbolizer__kernel(struct tk_symbolizer *s, uint64_t addr, struct tk_sym_frame *out);

struct tk_unw_table;

/* One executable mapping of a captured process, for unwinding. */
struct tk_sym_map_info {
	uint64_t start;
	uint64_t end;
	uint64_t offset;		/* file offset of start */
	const char *module;
	bool main_exe;			/* the process's own executable (PID/exe) */
	bool jit;			/* code of no file (JIT): no table, by frame pointer */
	bool have_vaddr;		/* the file's segments say where start is: */
	uint64_t vaddr;			/* the ELF virtual address at start */
	const struct tk_unw_table *unw;	/* NULL: none (not asked for, or the file unreadable) */
};

/*
 * Call @cb for each executable mapping of (@pid, @gen) in address order; a
 * non-zero return stops the walk and is returned. -ESRCH when not captured.
 */
int tk_symbolizer__for_each_map(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				int (*cb)(const struct tk_sym_map_info *m, void *ctx), void *ctx);

struct tk_symbolizer_stats {
	uint64_t elf_opened;	/* distinct files parsed */
	uint64_t elf_cache_hits;
	uint64_t processes;	/* (pid, gen) pairs captured */
	uint64_t capture_failed;	/* processes gone before capture */
	uint64_t unwind_tables;		/* unwind tables built */
	uint64_t unwind_rows;		/* their rows */
	uint64_t unwind_ns;		/* time spent building them */
	uint64_t unwind_failed;		/* objects whose CFI could not be read */
	uint64_t unwind_over_limit;	/* of those, past the ceiling of one build (by rbp) */
	uint64_t recaptures;		/* maps read again for an address in none of them */
	uint64_t recapture_maps;	/* mappings those added (libraries loaded since) */
	uint64_t named_refused;		/* mappings a heap dump named, not read (not the
					   process's to read) */
	uint64_t jit_files;		/* perf map files read (again when rewritten) */
	uint64_t jit_entries;		/* their names in use */
	uint64_t jit_bad_lines;		/* their lines skipped: garbage, too long, too many */
	uint64_t jit_overlapping;	/* their entries dropped for a later one overlapping */
	uint64_t jitdump_files;		/* jitdump files read */
	uint64_t jitdump_entries;	/* their names in use */
	uint64_t jitdump_bad_records;	/* their records skipped */
	uint64_t jitdump_broken;	/* files whose reading stopped at garbage */
	uint64_t jvm_asked;		/* JVMs that wrote their perf map when asked */
	uint64_t jvm_ask_failed;	/* JVMs not asked (not to be signalled) or that failed */
	const char *jvm_failure;	/* the last of those and why ("" when none) */
	uint64_t procs_held;		/* (pid, gen) pairs held now */
	uint64_t procs_pruned;		/* ended ones dropped (tk_symbolizer__prune) */
};
void tk_symbolizer__stats(const struct tk_symbolizer *s, struct tk_symbolizer_stats *st);
/* Objects whose unwind table passed the ceiling of one build (0 for NULL: no symbolizer). */
uint64_t tk_symbolizer__unwind_over_limit(const struct tk_symbolizer *s);

/*
 * Ending processes. A long capture that forgets its results period by
 * period must also forget the processes that ended: @pid's generation @gen
 * has ended (exit, or exec into a newer one) and is queued. The caller
 * takes a mark (tk_symbolizer__retired) once every sample of what was
 * queued so far has been symbolized, or will never be, and later drops
 * what was queued before the mark (tk_symbolizer__prune): its mappings,
 * its perf map. The files' indexes stay, shared by every process. A
 * lookup of a dropped process finds nothing (-ESRCH).
 * retire: 0 or -ENOMEM (the process is then kept).
 */
int tk_symbolizer__retire(struct tk_symbolizer *s, uint32_t pid, uint32_t gen);
/* A mark: how many have been queued so far, since the symbolizer was made. */
uint64_t tk_symbolizer__retired(const struct tk_symbolizer *s);
/* Drop every process queued before @mark; returns how many were held and went. */
size_t tk_symbolizer__prune(struct tk_symbolizer *s, uint64_t mark);

/*
 * Work done while processes live, called from a collector's poll (cheap: at
 * most once a second it looks at the processes with JIT code): their perf
 * maps and jitdumps are read as they grow, so a process that ends before the
 * capture still has its JIT code named.
 */
void tk_symbolizer__tick(struct tk_symbolizer *s);
/*
 * Before symbolizing: wait for the JVMs being asked for their perf maps to
 * answer (TK_JVM_ASK_TIMEOUT_MS at most), so what they wrote names their code,
 * and read what every JIT process's perf map and jitdump hold by now.
 */
void tk_symbolizer__settle(struct tk_symbolizer *s);

/*
 * 0 when kernel frames can be named; -EPERM when kallsyms shows every address
 * as 0 (kptr_restrict: the reader lacks CAP_SYSLOG), or the errno of reading
 * it. Reads kallsyms if not yet read (a pass that keeps no table).
 */
int tk_symbolizer__kernel_status(struct tk_symbolizer *s);

/*
 * The @n kernel addresses (in any order, repeated or not) a build is about to
 * look up: resolved in one pass over kallsyms without keeping its table (a
 * few thousand addresses of a profile against 121k symbols, 7.6 MiB). Any
 * other address is looked up in the table, loaded then. The second call
 * loads the table and keeps it instead (captures that build again and again:
 * one pass over kallsyms each time would cost more). 0 or -ENOMEM; a
 * kallsyms that cannot be read is left to the lookups to report.
 */
int tk_symbolizer__kernel_prepare(struct tk_symbolizer *s, const uint64_t *addrs, size_t n);

struct tk_py;
/*
 * The names of Python frames (runtime/py.h), made on first use: NULL only
 * without memory. _if_any: NULL when no Python frame was ever met.
 */
struct tk_py *tk_symbolizer__py(struct tk_symbolizer *s);
struct tk_py *tk_symbolizer__py_if_any(const struct tk_symbolizer *s);

/* ---- kallsyms (ksyms.c); the symbolizer uses these, tests and fuzzing too -------- */

struct tk_ksyms;

/* Load proc_root/kallsyms (NULL: "/proc"). Returns 0 or a negative errno. */
int tk_ksyms__load(const char *proc_root, struct tk_ksyms **out);
/* Parse @len bytes of kallsyms text (no NUL needed). Returns 0, -ENOMEM or -E2BIG. */
int tk_ksyms__parse(const char *text, size_t len, struct tk_ksyms **out);
void tk_ksyms__free(struct tk_ksyms *k);
/* True when the text had symbols but every address was 0 (kptr_restrict). */
bool tk_ksyms__restricted(const struct tk_ksyms *k);
/* Text symbols kept (t, T, w, W with a non-zero address; one per address). */
size_t tk_ksyms__count(const struct tk_ksyms *k);
/*
 * The symbol holding @addr: 0 with function and module ("[kernel.kallsyms]",
 * "[nf_tables]") filled, map_start/map_limit the module's span and
 * module_offset @addr's distance from its start; -ESRCH when none does.
 */
int tk_ksyms__find(const struct tk_ksyms *k, uint64_t addr, struct tk_sym_frame *out);

/*
 * Only some addresses, in one pass over proc_root/kallsyms (or @len bytes of
 * @text) and without keeping its table (121k symbols, 7.6 MiB): each
 * resolved exactly as tk_ksyms__find would. The addresses need not be
 * sorted or distinct. 0, or a negative errno (kallsyms unreadable, -ENOMEM).
 */
struct tk_ksyms_resolved;
int tk_ksyms__resolve(const char *proc_root, const uint64_t *addrs, size_t n,
		      struct tk_ksyms_resolved **out);
int tk_ksyms__resolve_text(const char *text, size_t len, const uint64_t *addrs, size_t n,
			   struct tk_ksyms_resolved **out);
/* As tk_ksyms__find for an address asked; -ENOENT for one that was not asked. */
int tk_ksyms_resolved__find(const struct tk_ksyms_resolved *r, uint64_t addr,
			    struct tk_sym_frame *out);
bool tk_ksyms_resolved__restricted(const struct tk_ksyms_resolved *r);
/* False when the whole table was built after all (a module's span needed it: never in a kernel's). */
bool tk_ksyms_resolved__streamed(const struct tk_ksyms_resolved *r);
void tk_ksyms_resolved__free(struct tk_ksyms_resolved *r);

/* ---- perf map files (perfmap.c): JIT code's names; tests and fuzzing use these too -- */

struct tk_perfmap;

#define TK_PERFMAP_MAX_LINE 4096		/* a longer line is skipped (bad) */
#define TK_PERFMAP_MAX_ENTRIES (1u << 20)	/* lines past it are over_limit */

struct tk_perfmap_stats {
	uint64_t lines;		/* lines read */
	uint64_t entries;	/* in the lookup table */
	uint64_t bad;		/* skipped: not "START SIZE NAME", size 0, wrapping, too long */
	uint64_t overlapping;	/* dropped: an entry of a later line overlaps them */
	uint64_t over_limit;	/* skipped: past TK_PERFMAP_MAX_ENTRIES or 64 MiB of names */
};

struct tk_perfmap *tk_perfmap__new(void);
/*
 * Parse the whole lines of @len bytes of @text (no NUL needed); with @eof the
 * last line needs no newline. *@used gets the bytes consumed: the rest is a
 * line still being written, to be fed again with what follows it. Returns 0
 * or -ENOMEM; bad lines are counted, never an error.
 */
int tk_perfmap__feed(struct tk_perfmap *m, const char *text, size_t len, bool eof, size_t *used);
/*
 * One entry from elsewhere (a jitdump's record): [@start, @start + @size)
 * named by the @nlen bytes at @name (no NUL needed; control characters
 * become '?'). Bad entries (size 0, wrapping, no name, a name of
 * TK_PERFMAP_MAX_LINE bytes or more) are counted, never an error. 0 or
 * -ENOMEM.
 */
int tk_perfmap__add(struct tk_perfmap *m, uint64_t start, uint64_t size, const char *name,
		    size_t nlen);
/* A new map of all of @text. 0 or -ENOMEM. */
int tk_perfmap__parse(const char *text, size_t len, struct tk_perfmap **out);
/* The name of the entry holding @addr (its start and size), or NULL. */
const char *tk_perfmap__find(struct tk_perfmap *m, uint64_t addr, uint64_t *start,
			     uint64_t *size);
/* From the lowest start to the highest end of the entries looked up (0, 0: none). */
void tk_perfmap__span(struct tk_perfmap *m, uint64_t *lo, uint64_t *hi);
/* The counters as of the last lookup (entries: the table it used). */
void tk_perfmap__stats(const struct tk_perfmap *m, struct tk_perfmap_stats *st);
void tk_perfmap__free(struct tk_perfmap *m);

/* ---- jitdump files (jitdump.c): JIT code's names; tests and fuzzing use these too ---- */

/*
 * The binary format perf's jitdump specification defines (linux
 * tools/perf/Documentation/jitdump-specification.txt): V8's --perf-prof writes
 * jit-PID.dump in its working directory, Python 3.13's -X perf_jit in /tmp;
 * both map it executable, which is how it is found (in PID/maps). A
 * JIT_CODE_LOAD record names [code_addr, code_addr + code_size); a
 * JIT_CODE_MOVE moves a name; the other records are skipped. Outside input:
 * every size is checked against the record's and the file's, a record's fixed
 * part and name are at most TK_JITDUMP_MAX_HEAD bytes, a record at most
 * TK_JITDUMP_MAX_RECORD; a record that does not parse is skipped and counted,
 * one whose size cannot be trusted ends the reading (nothing after it can be
 * found), and so does a header that is not a jitdump's.
 */
struct tk_jitdump;

#define TK_JITDUMP_MAX_HEAD 4096		/* a record's fixed part and name */
#define TK_JITDUMP_MAX_RECORD (256u << 20)	/* one record, its code included */

struct tk_jitdump_stats {
	uint64_t records;	/* records read */
	uint64_t loads;		/* JIT_CODE_LOAD records */
	uint64_t moves;		/* JIT_CODE_MOVE records */
	uint64_t bad;		/* records skipped: a name without its NUL, sizes that do not
				   fit, a move of nothing known; entries the names table refused */
	uint64_t entries;	/* names in the lookup table */
	uint64_t overlapping;	/* dropped: a later record overlaps them */
	bool broken;		/* reading stopped: not a jitdump, another pid, or a record size
				   that cannot be trusted */
};

/* A reader expecting a header of pid @pid (0: any). NULL: no memory. */
struct tk_jitdump *tk_jitdump__new(uint32_t pid);
/*
 * Parse what follows the bytes fed so far: @len bytes at @buf. *@used gets the
 * bytes consumed; the rest is a record not whole yet, to be fed again with
 * what follows it (a record's code need not be: it is skipped as it comes).
 * Returns 0 or -ENOMEM; garbage is counted (stats), never an error.
 */
int tk_jitdump__feed(struct tk_jitdump *d, const void *buf, size_t len, size_t *used);
/* The name of the code holding @addr (its start and size may be NULL), or NULL. */
const char *tk_jitdump__find(struct tk_jitdump *d, uint64_t addr, uint64_t *start,
			     uint64_t *size);
void tk_jitdump__span(struct tk_jitdump *d, uint64_t *lo, uint64_t *hi);
void tk_jitdump__stats(const struct tk_jitdump *d, struct tk_jitdump_stats *st);
void tk_jitdump__free(struct tk_jitdump *d);

#endif /* __TK_SYMBOLIZE_H */
