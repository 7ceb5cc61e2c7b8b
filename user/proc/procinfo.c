// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a process's allocator is and how its main binary was built, read from
 * @proc_root/PID/{comm,exe,maps,environ,map_files,root} and the ELF files.
 *
 * A mapped object is opened, in this order, through
 *   1. @proc_root/PID/map_files/START-END (the very file mapped, even when
 *      deleted or in another mount namespace; needs ptrace access),
 *   2. @proc_root/PID/root/PATH (the process's view of its file system; a
 *      fixture tree makes PID/root a directory or a symlink to one),
 *   3. PATH itself, only when @proc_root is "/proc": this is the caller's view
 *      and can be another file when the process runs in a container.
 * The main binary is always opened through @proc_root/PID/exe.
 *
 * Each executable object (r-xp file mappings, the [vdso] read from PID/mem)
 * is then looked at cheaply: CFI sections present (its own, or in a debug
 * file under /usr/lib/debug found by build-id or .gnu_debuglink), and the
 * same prologue heuristic for frame pointers as for the main binary.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "proc/elf_reader.h"
#include "core/fsutil.h"
#include "proc/maps.h"
#include "proc/procinfo.h"
#include "proc/x86_prologue.h"

#define MAPS_LIMIT (64u << 20)
#define ENVIRON_LIMIT (4u << 20)
#define FP_MAX_CHECKED 200
#define FP_MIN_SIZE 16
#define FP_WINDOW 64
#define FP_MIN_CHECKED 8
#define MAX_PREFIXES 8
#define PREFIX_MAX 32
#define VDSO_MAX (1u << 20)
#define DEBUG_DIR "/usr/lib/debug"

const char *tk_allocator__name(enum tk_allocator a)
{
	switch (a) {
	case TK_ALLOC_GLIBC:
		return "glibc";
	case TK_ALLOC_JEMALLOC:
		return "jemalloc";
	case TK_ALLOC_TCMALLOC:
		return "tcmalloc";
	case TK_ALLOC_MIMALLOC:
		return "mimalloc";
	case TK_ALLOC_UNKNOWN:
	default:
		return "unknown";
	}
}

__attribute__((format(printf, 3, 4)))
static void say(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

static void copy_str(char *dst, size_t size, const char *src)
{
	say(dst, size, "%s", src);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static bool is_live_proc(const char *proc_root)
{
	size_t n = strlen(proc_root);

	while (n > 1 && proc_root[n - 1] == '/')
		n--;
	return n == 5 && !strncmp(proc_root, "/proc", 5);
}

/* --- maps --------------------------------------------------------------- */

struct mapped_obj {
	bool found;
	char path[PATH_MAX];
	uint64_t start, end;
};

struct maps_scan {
	enum tk_allocator alloc;
	struct mapped_obj alloc_obj;
	struct mapped_obj libc;
	unsigned int nmaps;
	struct tk_proc_info *out;	/* its objects list */
	uint64_t dev[TK_PROC_MAX_OBJECTS], inode[TK_PROC_MAX_OBJECTS];
};

static enum tk_allocator allocator_of_lib(const char *name)
{
	if (!strstr(name, ".so"))
		return TK_ALLOC_UNKNOWN;
	if (has_prefix(name, "libjemalloc"))
		return TK_ALLOC_JEMALLOC;
	if (has_prefix(name, "libtcmalloc"))
		return TK_ALLOC_TCMALLOC;
	if (has_prefix(name, "libmimalloc"))
		return TK_ALLOC_MIMALLOC;
	return TK_ALLOC_UNKNOWN;
}

static bool is_glibc(const char *name)
{
	return !strcmp(name, "libc.so.6") ||
	       (has_prefix(name, "libc-2.") && has_suffix(name, ".so"));
}

static void note_obj(struct mapped_obj *o, const struct tk_map *m)
{
	if (o->found)
		return;
	o->found = true;
	copy_str(o->path, sizeof(o->path), m->path);
	o->start = m->start;
	o->end = m->end;
}

/* An executable mapping: a new object for the list, or one more of a listed file. */
static void note_exec(struct maps_scan *s, const struct tk_map *m)
{
	struct tk_proc_info *out = s->out;
	bool vdso = !strcmp(m->path, "[vdso]");
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	struct tk_proc_object *o;
	unsigned int i;

	if (!tk_map__is_file(m) && !vdso) {
		/* [vsyscall] is the kernel's legacy page, not code of the process */
		if (strcmp(m->path, "[vsyscall]"))
			out->anon_exec++;
		return;
	}
	for (i = 0; i < out->nr_objects; i++)
		if (vdso ? !strcmp(out->objects[i].path, "[vdso]")
			 : s->inode[i] == m->inode && s->dev[i] == dev &&
				   !strcmp(out->objects[i].path, m->path))
			return;
	if (out->nr_objects == TK_PROC_MAX_OBJECTS) {
		out->objects_omitted++;
		return;
	}
	s->dev[out->nr_objects] = dev;
	s->inode[out->nr_objects] = m->inode;
	o = &out->objects[out->nr_objects++];
	copy_str(o->path, sizeof(o->path), m->path);
	o->start = m->start;
	o->end = m->end;
	o->deleted = m->deleted;
	o->cfi = TK_CFI_UNKNOWN;
	o->eh_frame_fdes = -1;
	o->frame_pointers = -1;
}

static int scan_map(const struct tk_map *m, void *ctx)
{
	struct maps_scan *s = ctx;
	const char *name;
	enum tk_allocator a;

	s->nmaps++;
	if (m->perms[2] == 'x')
		note_exec(s, m);
	if (m->path[0] != '/')
		return 0;
	name = tk_path_basename(m->path);
	a = allocator_of_lib(name);
	if (a != TK_ALLOC_UNKNOWN && s->alloc == TK_ALLOC_UNKNOWN) {
		s->alloc = a;
		note_obj(&s->alloc_obj, m);
	}
	if (is_glibc(name))
		note_obj(&s->libc, m);
	return 0;
}

/* @proc_root/PID/root + @abs into @buf: the file @abs as the process sees it. */
static int root_path(char *buf, size_t size, const char *proc_root, int pid, const char *abs)
{
	char rel[64];
	size_t n;
	int err;

	snprintf(rel, sizeof(rel), "%d/root", pid);
	err = tk_path_join(buf, size, proc_root, rel);
	if (err)
		return err;
	n = strlen(buf);
	if (n + strlen(abs) >= size)
		return -ENAMETOOLONG;
	strcpy(buf + n, abs);
	return 0;
}

/* Open @o's file (see the top of the file); the path that worked into @used (may be NULL). */
static int open_mapped_at(const char *proc_root, int pid, const struct mapped_obj *o,
			  struct tk_elf **elf, char *used, size_t used_size)
{
	char rel[PATH_MAX + 64], path[PATH_MAX + 64];
	int err;

	snprintf(rel, sizeof(rel), "%d/map_files/%llx-%llx", pid, (unsigned long long)o->start,
		 (unsigned long long)o->end);
	err = tk_path_join(path, sizeof(path), proc_root, rel);
	if (!err && !(err = tk_elf__open(path, elf)))
		goto found;
	err = root_path(path, sizeof(path), proc_root, pid, o->path);
	if (!err && !(err = tk_elf__open(path, elf)))
		goto found;
	if (!is_live_proc(proc_root))
		return err;
	copy_str(path, sizeof(path), o->path);
	err = tk_elf__open(path, elf);
	if (err)
		return err;
found:
	if (used)
		copy_str(used, used_size, path);
	return 0;
}

static int open_mapped(const char *proc_root, int pid, const struct mapped_obj *o,
		       struct tk_elf **elf)
{
	return open_mapped_at(proc_root, pid, o, elf, NULL, 0);
}

/* --- symbols -------------------------------------------------------------- */

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

/* Start-up code from crt*.o, built without the program's flags. */
static bool is_crt_func(const char *name)
{
	static const char *const crt[] = {
		"_start", "_init", "_fini", "__libc_csu_init", "__libc_csu_fini",
		"_dl_relocate_static_pie", "deregister_tm_clones", "register_tm_clones",
		"__do_global_dtors_aux", "frame_dummy",
	};
	size_t i;

	for (i = 0; i < sizeof(crt) / sizeof(crt[0]); i++)
		if (!strcmp(name, crt[i]))
			return true;
	return false;
}

static int collect_sym(const struct tk_elf_sym *sym, void *ctx)
{
	struct sym_facts *f = ctx;
	const char *n = sym->name;
	size_t len = strlen(n);

	if (!strcmp(n, "_Unwind_Backtrace"))
		f->unwind_backtrace = true;
	else if (!strcmp(n, "unw_backtrace"))
		f->unw_backtrace = true;
	else if (!strcmp(n, "backtrace") && !sym->defined)
		f->backtrace = true;
	if (!sym->defined || sym->type != TK_ELF_SYM_FUNC)
		return 0;

	if (len >= 7 && !strcmp(n + len - 7, "mallctl") && len - 7 < PREFIX_MAX) {
		unsigned int i;

		for (i = 0; i < f->n_je; i++)
			if (strlen(f->je_prefix[i]) == len - 7 &&
			    !strncmp(f->je_prefix[i], n, len - 7))
				break;
		if (i == f->n_je && f->n_je < MAX_PREFIXES) {
			memcpy(f->je_prefix[f->n_je], n, len - 7);
			f->je_prefix[f->n_je][len - 7] = '\0';
			f->n_je++;
		}
	} else if (!strcmp(n, "tc_malloc")) {
		f->tc_malloc = true;
	} else if (!strcmp(n, "mi_malloc")) {
		f->mi_malloc = true;
	} else if (!strcmp(n, "__libc_malloc")) {
		f->libc_malloc = true;
	} else if (has_prefix(n, "prof_unwind_callback")) {
		/* a static function, so in .symtab only; LTO may add a suffix */
		f->prof_unwind_callback = true;
	}

	/* .dynsym repeats .symtab's exports: when both exist, .symtab is enough */
	if (sym->dynamic && f->funcs_from_symtab)
		return 0;
	if (!sym->dynamic)
		f->funcs_from_symtab = true;
	if (!sym->in_text || sym->size < FP_MIN_SIZE || is_crt_func(n))
		return 0;
	if (f->nfuncs == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		uint64_t *nf = realloc(f->funcs, cap * sizeof(*nf));

		if (!nf) {
			f->err = -ENOMEM;
			return -ENOMEM;
		}
		f->funcs = nf;
		f->cap = cap;
	}
	f->funcs[f->nfuncs++] = sym->value;
	return 0;
}

static int collect_facts(struct tk_elf *elf, struct sym_facts *f)
{
	memset(f, 0, sizeof(*f));
	return tk_elf__for_each_sym(elf, collect_sym, f);
}

static void free_facts(struct sym_facts *f)
{
	free(f->funcs);
	f->funcs = NULL;
}

struct sym_lookup {
	const char *name;
	bool found;
	bool defined;
	struct tk_elf_sym sym;	/* name not kept */
};

static int lookup_sym_cb(const struct tk_elf_sym *sym, void *ctx)
{
	struct sym_lookup *l = ctx;

	if (!sym->defined || strcmp(sym->name, l->name))
		return 0;
	l->found = true;
	l->sym = *sym;
	l->sym.name = NULL;
	return 1;
}

/* Find the defined symbol @name; false when absent. */
static bool find_defined(struct tk_elf *elf, const char *name, struct tk_elf_sym *out)
{
	struct sym_lookup l = { .name = name };

	tk_elf__for_each_sym(elf, lookup_sym_cb, &l);
	if (l.found && out)
		*out = l.sym;
	return l.found;
}

/*
 * Pick the jemalloc prefix: a PREFIXmallctl that comes with PREFIXmalloc.
 * Returns the index into f->je_prefix or -1.
 */
static int jemalloc_prefix(struct tk_elf *elf, const struct sym_facts *f)
{
	char name[PREFIX_MAX + 16];
	unsigned int i;

	for (i = 0; i < f->n_je; i++) {
		snprintf(name, sizeof(name), "%smalloc", f->je_prefix[i]);
		if (find_defined(elf, name, NULL))
			return i;
	}
	return -1;
}

/* --- jemalloc profiling ---------------------------------------------------- */

/*
 * A jemalloc configured with --enable-prof unwinds with libgcc
 * (_Unwind_Backtrace, callback prof_unwind_callback), libunwind
 * (unw_backtrace) or, in recent versions, frame pointers with backtrace() as
 * fallback. Without --enable-prof none of these is referenced. Symbols such as
 * prof_backtrace exist in every build and prove nothing.
 */
static void jemalloc_prof_built(struct tk_proc_info *out, struct tk_elf *elf,
				const struct sym_facts *f, bool is_static, const char *obj)
{
	const char *name = tk_path_basename(obj);

	out->jemalloc_prof_built = 1;
	if (f->prof_unwind_callback) {
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    "heuristic: %s has jemalloc's prof_unwind_callback (libgcc unwinder)", name);
	} else if (!is_static && f->unwind_backtrace) {
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    "heuristic: %s references _Unwind_Backtrace (prof unwinder)", name);
	} else if (f->unw_backtrace) {
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    "heuristic: %s references unw_backtrace (libunwind prof unwinder)", name);
	} else if (!is_static && f->backtrace) {
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    "heuristic: %s imports backtrace (prof unwinder fallback)", name);
	} else if (is_static && !tk_elf__has_symtab(elf)) {
		/* in a program, the unwinder imports may belong to anything */
		out->jemalloc_prof_built = -1;
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    "%s has no symbol table", name);
	} else {
		out->jemalloc_prof_built = 0;
		say(out->jemalloc_prof_built_evidence, sizeof(out->jemalloc_prof_built_evidence),
		    is_static ? "heuristic: %s has no prof_unwind_callback or unw_backtrace" :
				"heuristic: %s references no unwinder (_Unwind_Backtrace, "
				"unw_backtrace, backtrace)",
		    name);
	}
}

struct conf_state {
	int prof;		/* -1 unset, 0, 1 */
	int prof_active;	/* -1 unset, 0, 1 */
	char prof_from[96];	/* the source that set prof */
};

/*
 * Apply a malloc_conf string ("prof:true,lg_prof_sample:19") from @source;
 * later options win, as in jemalloc. Values other than true/false are ignored.
 */
static void apply_conf(struct conf_state *c, const char *conf, const char *source)
{
	const char *p = conf;

	while (*p) {
		const char *k = p, *colon, *v, *end = strchr(p, ',');
		size_t klen, vlen;
		int val = -1;

		if (!end)
			end = p + strlen(p);
		colon = memchr(k, ':', end - k);
		if (colon) {
			klen = colon - k;
			v = colon + 1;
			vlen = end - v;
			if (vlen == 4 && !strncmp(v, "true", 4))
				val = 1;
			else if (vlen == 5 && !strncmp(v, "false", 5))
				val = 0;
			if (val >= 0 && klen == 4 && !strncmp(k, "prof", 4)) {
				c->prof = val;
				copy_str(c->prof_from, sizeof(c->prof_from), source);
			} else if (val >= 0 && klen == 11 && !strncmp(k, "prof_active", 11)) {
				c->prof_active = val;
			}
		}
		p = *end ? end + 1 : end;
	}
}

/* Find NAME=value in a NUL-separated environment block; @env[@len] is a NUL too. */
static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name), i = 0;

	while (i < len) {
		const char *s = env + i;
		size_t slen = strnlen(s, len - i);

		if (slen > n && !strncmp(s, name, n) && s[n] == '=')
			return s + n + 1;
		i += slen + 1;
	}
	return NULL;
}

static void jemalloc_prof_active(struct tk_proc_info *out, const char *proc_root, int pid,
				 struct tk_elf *exe, const char *prefix)
{
	char name[PREFIX_MAX + 16], rel[PREFIX_MAX + 64], path[PATH_MAX], conf[PATH_MAX + 1];
	char checked[200] = "";
	struct conf_state c = { .prof = -1, .prof_active = -1 };
	struct tk_elf_sym sym;
	size_t elen, i;
	uint64_t ptr;
	char *env;
	ssize_t n;
	int err;

	/* 1. the program's own PREFIXmalloc_conf, compiled in */
	snprintf(name, sizeof(name), "%smalloc_conf", prefix);
	if (exe && find_defined(exe, name, &sym) && sym.type == TK_ELF_SYM_OBJECT) {
		err = tk_elf__read_ptr(exe, sym.value, &ptr);
		if (!err && ptr && tk_elf__read_str(exe, ptr, conf, sizeof(conf)) >= 0)
			apply_conf(&c, conf, name);
		if (err || ptr)
			say(checked, sizeof(checked), "%s", name);
	}

	/* 2. the /etc/PREFIXmalloc.conf symlink, seen from the process */
	snprintf(rel, sizeof(rel), "%d/root/etc/%smalloc.conf", pid, prefix);
	if (!tk_path_join(path, sizeof(path), proc_root, rel)) {
		n = readlink(path, conf, sizeof(conf) - 1);
		if (n >= 0) {
			conf[n] = '\0';
			snprintf(rel, sizeof(rel), "/etc/%smalloc.conf", prefix);
			apply_conf(&c, conf, rel);
		}
	}

	/* 3. the environment, as PREFIX in upper case + MALLOC_CONF */
	for (i = 0; prefix[i] && i < PREFIX_MAX - 1; i++)
		name[i] = toupper((unsigned char)prefix[i]);
	strcpy(name + i, "MALLOC_CONF");
	snprintf(rel, sizeof(rel), "%d/environ", pid);
	err = tk_read_file_alloc(proc_root, rel, ENVIRON_LIMIT, &env, &elen);
	if (!err) {
		const char *v = env_value(env, elen, name);

		if (v)
			apply_conf(&c, v, name);
		free(env);
	}

	if (c.prof >= 0) {
		out->jemalloc_prof_active = c.prof;
		say(out->jemalloc_prof_active_evidence, sizeof(out->jemalloc_prof_active_evidence),
		    "prof:%s in %s%s", c.prof ? "true" : "false", c.prof_from,
		    c.prof == 1 && c.prof_active == 0 ?
			    ", but prof_active:false (off until mallctl prof.active)" : "");
		return;
	}
	out->jemalloc_prof_active = -1;
	say(out->jemalloc_prof_active_evidence, sizeof(out->jemalloc_prof_active_evidence),
	    "no prof option in %s, /etc/%smalloc.conf%s%s%s; build default unknown", name, prefix,
	    checked[0] ? " or " : "", checked,
	    err ? (err == -EACCES ? " (environ unreadable)" : " (no environ)") : "");
}

/* --- frame pointers ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The prologue heuristic on the functions of @elf (@f's): 1 when half of a
 * sample of them set up %rbp, 0 when under a tenth do, else -1 (as when there
 * are too few to tell). The counts into @checked and @with, the why into @ev.
 */
static tk_tristate fp_heuristic(struct tk_elf *elf, struct sym_facts *f, unsigned int *checked,
				unsigned int *with, char *ev, size_t ev_size)
{
	unsigned char code[FP_WINDOW];
	size_t i, n = 0, step_n;

	*checked = *with = 0;
	if (tk_elf__type(elf) != ET_EXEC && tk_elf__type(elf) != ET_DYN) {
		say(ev, ev_size, "not an executable");
		return -1;
	}
	if (f->nfuncs == 0) {
		say(ev, ev_size,
		    tk_elf__has_symtab(elf) ? "no function symbols in .text" : "no symbol table");
		return -1;
	}
	qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), cmp_u64);
	for (i = 0; i < f->nfuncs; i++)
		if (!n || f->funcs[i] != f->funcs[n - 1])
			f->funcs[n++] = f->funcs[i];
	/* spread the sample over the whole text, not just its first objects */
	step_n = n < FP_MAX_CHECKED ? n : FP_MAX_CHECKED;
	for (i = 0; i < step_n; i++) {
		uint64_t addr = f->funcs[(uint64_t)i * n / step_n];
		long got = tk_elf__read_vaddr(elf, addr, code, sizeof(code));

		if (got < 8)
			continue;
		(*checked)++;
		if (tk_x86__sets_frame_pointer(code, got))
			(*with)++;
	}
	if (*checked < FP_MIN_CHECKED) {
		say(ev, ev_size, "only %u function%s of %u bytes or more to check", *checked,
		    *checked == 1 ? "" : "s", FP_MIN_SIZE);
		return -1;
	}
	say(ev, ev_size, "heuristic: %u of %u function prologues set up %%rbp", *with, *checked);
	if (*with * 2 >= *checked)
		return 1;
	return *with * 10 < *checked ? 0 : -1;
}

static void frame_pointers(struct tk_proc_info *out, struct tk_elf *exe, struct sym_facts *f)
{
	out->frame_pointers = fp_heuristic(exe, f, &out->fp_checked, &out->fp_with_frame,
					   out->fp_evidence, sizeof(out->fp_evidence));
}

/* --- executable objects: CFI and frame pointers ---------------------------------------- */

const char *tk_cfi_source__name(enum tk_cfi_source s)
{
	switch (s) {
	case TK_CFI_NONE:
		return "none";
	case TK_CFI_EH_FRAME:
		return "eh_frame";
	case TK_CFI_DEBUG_FRAME:
		return "debug_frame";
	case TK_CFI_DEBUG_FILE:
		return "debug_file";
	case TK_CFI_UNKNOWN:
	default:
		return "unknown";
	}
}

const char *tk_proc_object__unwind(const struct tk_proc_object *o)
{
	switch (o->cfi) {
	case TK_CFI_EH_FRAME:
	case TK_CFI_DEBUG_FRAME:
	case TK_CFI_DEBUG_FILE:
		return o->frame_pointers == 1 ? "cfi+fp" : "cfi";
	case TK_CFI_NONE:
		return o->frame_pointers == 1 ? "fp" : o->frame_pointers == 0 ? "none" : "unknown";
	case TK_CFI_UNKNOWN:
	default:
		return "unknown";
	}
}

struct cfi_facts {
	bool eh_frame;		/* .eh_frame with more than its 4-byte terminator */
	bool debug_frame;	/* .debug_frame (or the old .zdebug_frame) with contents */
	long fdes;		/* .eh_frame_hdr's fde_count, -1 unknown */
	char debuglink[256];	/* .gnu_debuglink's file name, "" when none */
};

/* Bytes of a DW_EH_PE_* value of format @enc (its low four bits); 0 when unknown. */
static size_t eh_pe_size(unsigned char enc)
{
	switch (enc & 0x0f) {
	case 0x00:		/* absptr */
	case 0x04:		/* udata8 */
	case 0x0c:		/* sdata8 */
		return 8;
	case 0x02:		/* udata2 */
	case 0x0a:		/* sdata2 */
		return 2;
	case 0x03:		/* udata4 */
	case 0x0b:		/* sdata4 */
		return 4;
	}
	return 0;
}

/* fde_count of an .eh_frame_hdr (version 1, little-endian), or -1. */
static long eh_frame_hdr_fdes(const unsigned char *b, size_t len)
{
	size_t ptr_size, count_size, i;
	uint64_t v = 0;

	if (len < 4 || b[0] != 1 || b[2] == 0xff || (b[2] & 0x70))
		return -1;
	ptr_size = b[1] == 0xff ? 0 : eh_pe_size(b[1]);
	count_size = eh_pe_size(b[2]);
	if ((!ptr_size && b[1] != 0xff) || !count_size || (b[2] & 0x08) ||
	    len < 4 + ptr_size + count_size)
		return -1;
	for (i = 0; i < count_size; i++)
		v |= (uint64_t)b[4 + ptr_size + i] << (8 * i);
	return v > LONG_MAX ? -1 : (long)v;
}

/* The CFI sections of @e (and its debuglink); headers and small sections only. */
static void scan_sections(Elf *e, struct cfi_facts *c)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t shstrndx;

	memset(c, 0, sizeof(*c));
	c->fdes = -1;
	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame")) {
			c->eh_frame = c->eh_frame || sh.sh_size > 4;
		} else if (!strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame")) {
			c->debug_frame = true;
		} else if (!strcmp(name, ".eh_frame_hdr") &&
			   eh.e_ident[EI_DATA] == ELFDATA2LSB) {
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf)
				c->fdes = eh_frame_hdr_fdes(d->d_buf, d->d_size);
		} else if (!strcmp(name, ".gnu_debuglink")) {
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size) {
				size_t n = strnlen(d->d_buf, d->d_size);

				/* a file name, no directories */
				if (n < d->d_size && n < sizeof(c->debuglink) &&
				    !memchr(d->d_buf, '/', n))
					memcpy(c->debuglink, d->d_buf, n);
			}
		}
	}
}

/* scan_sections() of the file at @path. Returns 0 or a negative errno. */
static int scan_file(const char *path, struct cfi_facts *c)
{
	struct stat st;
	int fd, err = 0;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO put where a library was must not hang us */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto out;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		err = -ENOEXEC;
	else
		scan_sections(e, c);
	elf_end(e);
out:
	close(fd);
	return err;
}

/* Does the ELF file at @path carry a build-id other than @build_id? */
static bool other_build(const char *path, const char *build_id)
{
	char id[2 * 64 + 1];
	struct tk_elf *elf;
	bool other;

	if (tk_elf__open(path, &elf))
		return false;
	other = tk_elf__build_id(elf, id, sizeof(id)) > 0 && strcmp(id, build_id);
	tk_elf__free(elf);
	return other;
}

/*
 * Does a debug file of @o, in /usr/lib/debug as the process sees it (then, on
 * a live system, as we see it), have a .debug_frame? Looked for by build-id
 * (@build_id, may be ""), then by @debuglink in /usr/lib/debug/DIR of the
 * object; a debuglink file of another build-id is not its. Its path, as the
 * process sees it, into o->debug_file.
 */
static bool debug_file_cfi(const char *proc_root, int pid, struct tk_proc_object *o,
			   const char *build_id, const char *debuglink)
{
	char cand[2][sizeof(o->debug_file)], path[PATH_MAX + 64];
	const char *slash = strrchr(o->path, '/');
	struct cfi_facts c;
	int i, k;

	memset(cand, 0, sizeof(cand));
	if (strlen(build_id) > 2 &&
	    (size_t)snprintf(cand[0], sizeof(cand[0]), DEBUG_DIR "/.build-id/%.2s/%s.debug",
			     build_id, build_id + 2) >= sizeof(cand[0]))
		cand[0][0] = '\0';
	if (debuglink[0] && slash &&
	    (size_t)snprintf(cand[1], sizeof(cand[1]), DEBUG_DIR "%.*s/%s",
			     (int)(slash - o->path), o->path, debuglink) >= sizeof(cand[1]))
		cand[1][0] = '\0';
	for (i = 0; i < 2; i++) {
		for (k = 0; cand[i][0] && k < 2; k++) {
			if (k == 0 && root_path(path, sizeof(path), proc_root, pid, cand[i]))
				continue;
			if (k == 1 && !is_live_proc(proc_root))
				break;
			if (k == 1)
				copy_str(path, sizeof(path), cand[i]);
			if (i == 1 && build_id[0] && other_build(path, build_id))
				continue;
			if (scan_file(path, &c) || !c.debug_frame)
				continue;
			copy_str(o->debug_file, sizeof(o->debug_file), cand[i]);
			return true;
		}
	}
	return false;
}

/* The vdso's image from PID/mem into a malloc'ed buffer. */
static int read_vdso(const char *proc_root, int pid, const struct tk_proc_object *o, void **buf,
		     size_t *len)
{
	char rel[64], path[PATH_MAX];
	size_t n = o->end - o->start;
	ssize_t got;
	int fd, err;

	if (o->end <= o->start || n > VDSO_MAX)
		return -E2BIG;
	snprintf(rel, sizeof(rel), "%d/mem", pid);
	err = tk_path_join(path, sizeof(path), proc_root, rel);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*buf = malloc(n);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	got = pread(fd, *buf, n, (off_t)o->start);
	err = got < 0 ? -errno : (size_t)got < n ? -EIO : 0;
	close(fd);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	*len = n;
	return 0;
}

/* Open object @o as a tk_elf, and find its CFI sections. */
static int open_object(const char *proc_root, int pid, struct tk_proc_object *o,
		       struct tk_elf **elf, struct cfi_facts *c)
{
	char used[PATH_MAX + 64];
	struct mapped_obj m = { .start = o->start, .end = o->end };
	void *img = NULL;
	size_t len = 0;
	int err;
	Elf *e;

	if (strcmp(o->path, "[vdso]")) {
		copy_str(m.path, sizeof(m.path), o->path);
		err = open_mapped_at(proc_root, pid, &m, elf, used, sizeof(used));
		/* the main binary is PID/exe too, as a fixture's may only be */
		if (err && o->is_main) {
			char rel[64];

			snprintf(rel, sizeof(rel), "%d/exe", pid);
			if (!tk_path_join(used, sizeof(used), proc_root, rel) &&
			    !tk_elf__open(used, elf))
				err = 0;
		}
		return err ? err : scan_file(used, c);
	}
	err = read_vdso(proc_root, pid, o, &img, &len);
	if (err)
		return err;
	err = tk_elf__open_mem(img, len, elf);
	if (!err) {
		e = elf_memory(img, len);	/* may write to @img: tk_elf has its own copy */
		if (e && elf_kind(e) == ELF_K_ELF)
			scan_sections(e, c);
		else
			err = -ENOEXEC;
		elf_end(e);
	}
	free(img);
	return err;
}

static int scan_object(const char *proc_root, int pid, const struct tk_proc_info *pi,
		       struct tk_proc_object *o)
{
	char build_id[2 * 64 + 1] = "";
	struct sym_facts f = { 0 };
	struct tk_elf *elf = NULL;
	struct cfi_facts c;
	int err;

	o->is_main = pi->exe[0] && !strcmp(o->path, pi->exe);
	err = open_object(proc_root, pid, o, &elf, &c);
	if (err) {
		tk_elf__free(elf);
		o->err = err;
		say(o->fp_evidence, sizeof(o->fp_evidence), "cannot open: %s", strerror(-err));
		return 0;
	}
	o->eh_frame_fdes = c.fdes;
	if (c.eh_frame) {
		o->cfi = TK_CFI_EH_FRAME;
	} else if (c.debug_frame) {
		o->cfi = TK_CFI_DEBUG_FRAME;
	} else {
		if (tk_elf__build_id(elf, build_id, sizeof(build_id)) <= 0)
			build_id[0] = '\0';
		o->cfi = debug_file_cfi(proc_root, pid, o, build_id, c.debuglink) ?
				 TK_CFI_DEBUG_FILE : TK_CFI_NONE;
	}
	if (o->is_main && pi->fp_checked) {
		/* the same file as PID/exe: looked at already */
		o->frame_pointers = pi->frame_pointers;
		o->fp_checked = pi->fp_checked;
		o->fp_with_frame = pi->fp_with_frame;
		copy_str(o->fp_evidence, sizeof(o->fp_evidence), pi->fp_evidence);
	} else {
		err = collect_facts(elf, &f);
		if (err >= 0)
			o->frame_pointers = fp_heuristic(elf, &f, &o->fp_checked,
							 &o->fp_with_frame, o->fp_evidence,
							 sizeof(o->fp_evidence));
		err = err == -ENOMEM ? err : 0;
	}
	free_facts(&f);
	tk_elf__free(elf);
	return err;
}

/* --- the whole ----------------------------------------------------------------- */

static void set_alloc(struct tk_proc_info *out, enum tk_allocator a, const char *obj,
		      bool is_static, const char *prefix)
{
	out->allocator = a;
	copy_str(out->alloc_object, sizeof(out->alloc_object), obj);
	out->alloc_static = is_static;
	copy_str(out->alloc_prefix, sizeof(out->alloc_prefix), prefix);
}

static int read_identity(const char *proc_root, int pid, struct tk_proc_info *out)
{
	char rel[64], path[PATH_MAX];
	ssize_t n;
	long len;

	snprintf(rel, sizeof(rel), "%d/comm", pid);
	len = tk_read_file(proc_root, rel, out->comm, sizeof(out->comm));
	if (len < 0)
		return len;
	tk_rstrip(out->comm);

	snprintf(rel, sizeof(rel), "%d/exe", pid);
	if (tk_path_join(path, sizeof(path), proc_root, rel))
		return -ENAMETOOLONG;
	n = readlink(path, out->exe, sizeof(out->exe) - 1);
	if (n < 0) {
		/* kernel threads have no exe */
		if (errno != ENOENT)
			return -errno;
		n = 0;
	}
	out->exe[n] = '\0';
	return 0;
}

int tk_proc_info__read(const char *proc_root, int pid, struct tk_proc_info *out)
{
	struct sym_facts exe_facts = { 0 }, lib_facts = { 0 };
	struct tk_elf *exe = NULL, *lib = NULL;
	struct maps_scan *ms = NULL;
	char rel[64], path[PATH_MAX];
	const char *prefix = "";
	char *maps = NULL;
	int err, exe_err, lib_err = 0, idx;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->jemalloc_prof_built = -1;
	out->jemalloc_prof_active = -1;
	out->frame_pointers = -1;
	if (!proc_root)
		proc_root = "/proc";
	if (pid <= 0)
		return -EINVAL;

	err = read_identity(proc_root, pid, out);
	if (err)
		return err;
	snprintf(rel, sizeof(rel), "%d/maps", pid);
	err = tk_read_file_alloc(proc_root, rel, MAPS_LIMIT, &maps, NULL);
	if (err)
		return err;
	ms = calloc(1, sizeof(*ms));
	if (!ms) {
		err = -ENOMEM;
		goto out;
	}
	ms->out = out;
	err = tk_maps__parse(maps, scan_map, ms);
	if (err)
		goto out;

	snprintf(rel, sizeof(rel), "%d/exe", pid);
	exe_err = tk_path_join(path, sizeof(path), proc_root, rel);
	if (!exe_err && out->exe[0])
		exe_err = tk_elf__open(path, &exe);
	else if (!exe_err)
		exe_err = -ENOENT;
	if (exe) {
		err = collect_facts(exe, &exe_facts);
		if (err < 0)
			goto out;
		err = 0;
	}

	/* 1. an allocator library is mapped */
	if (ms->alloc != TK_ALLOC_UNKNOWN) {
		set_alloc(out, ms->alloc, ms->alloc_obj.path, false, "");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "%s is mapped",
		    tk_path_basename(ms->alloc_obj.path));
		if (ms->alloc == TK_ALLOC_JEMALLOC) {
			lib_err = open_mapped(proc_root, pid, &ms->alloc_obj, &lib);
			if (lib) {
				err = collect_facts(lib, &lib_facts);
				if (err < 0)
					goto out;
				err = 0;
				idx = jemalloc_prefix(lib, &lib_facts);
				if (idx >= 0)
					copy_str(out->alloc_prefix, sizeof(out->alloc_prefix),
						 lib_facts.je_prefix[idx]);
			}
		}
	/* 2. an allocator is linked into the main binary */
	} else if (exe && (idx = jemalloc_prefix(exe, &exe_facts)) >= 0) {
		char conf[PREFIX_MAX + 16];

		set_alloc(out, TK_ALLOC_JEMALLOC, out->exe, true, exe_facts.je_prefix[idx]);
		snprintf(conf, sizeof(conf), "%smalloc_conf", exe_facts.je_prefix[idx]);
		if (find_defined(exe, conf, NULL))
			say(out->alloc_evidence, sizeof(out->alloc_evidence),
			    "binary defines %smallctl, %smalloc and %s", out->alloc_prefix,
			    out->alloc_prefix, conf);
		else
			say(out->alloc_evidence, sizeof(out->alloc_evidence),
			    "binary defines %smallctl and %smalloc", out->alloc_prefix,
			    out->alloc_prefix);
	} else if (exe && exe_facts.tc_malloc) {
		set_alloc(out, TK_ALLOC_TCMALLOC, out->exe, true, "tc_");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "binary defines tc_malloc");
	} else if (exe && exe_facts.mi_malloc) {
		set_alloc(out, TK_ALLOC_MIMALLOC, out->exe, true, "mi_");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "binary defines mi_malloc");
	/* 3. glibc */
	} else if (ms->libc.found) {
		set_alloc(out, TK_ALLOC_GLIBC, ms->libc.path, false, "");
		say(out->alloc_evidence, sizeof(out->alloc_evidence),
		    "%s is mapped and no other allocator found%s", tk_path_basename(ms->libc.path),
		    exe && !tk_elf__has_symtab(exe) ? " (binary has no symbol table)" : "");
	} else if (exe && exe_facts.libc_malloc) {
		set_alloc(out, TK_ALLOC_GLIBC, out->exe, true, "");
		say(out->alloc_evidence, sizeof(out->alloc_evidence),
		    "binary defines __libc_malloc (static glibc)");
	} else {
		say(out->alloc_evidence, sizeof(out->alloc_evidence),
		    "no known allocator among %u mappings%s", ms->nmaps,
		    exe ? (tk_elf__has_symtab(exe) ? " or the binary's symbols" :
						     "; binary has no symbol table") :
			  "; binary not readable");
	}

	if (out->allocator == TK_ALLOC_JEMALLOC) {
		prefix = out->alloc_prefix;
		if (out->alloc_static)
			jemalloc_prof_built(out, exe, &exe_facts, true, out->exe);
		else if (lib)
			jemalloc_prof_built(out, lib, &lib_facts, false, out->alloc_object);
		else
			say(out->jemalloc_prof_built_evidence,
			    sizeof(out->jemalloc_prof_built_evidence), "cannot open %s: %s",
			    tk_path_basename(out->alloc_object), strerror(-lib_err));
		jemalloc_prof_active(out, proc_root, pid, exe, prefix);
	} else {
		copy_str(out->jemalloc_prof_built_evidence,
			 sizeof(out->jemalloc_prof_built_evidence), "not jemalloc");
		copy_str(out->jemalloc_prof_active_evidence,
			 sizeof(out->jemalloc_prof_active_evidence), "not jemalloc");
	}

	if (exe) {
		out->has_build_id = tk_elf__build_id(exe, out->build_id, sizeof(out->build_id)) > 0;
		if (!out->has_build_id)
			out->build_id[0] = '\0';
		frame_pointers(out, exe, &exe_facts);
	} else {
		say(out->fp_evidence, sizeof(out->fp_evidence), "cannot open the binary: %s",
		    strerror(-exe_err));
	}
	for (idx = 0; idx < (int)out->nr_objects && !err; idx++)
		err = scan_object(proc_root, pid, out, &out->objects[idx]);
out:
	free_facts(&exe_facts);
	free_facts(&lib_facts);
	tk_elf__free(lib);
	tk_elf__free(exe);
	free(ms);
	free(maps);
	return err;
}
