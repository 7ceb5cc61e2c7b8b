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
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elf.h>

#include "elf_reader.h"
#include "fsutil.h"
#include "maps.h"
#include "procinfo.h"
#include "x86_prologue.h"

#define MAPS_LIMIT (64u << 20)
#define ENVIRON_LIMIT (4u << 20)
#define FP_MAX_CHECKED 200
#define FP_MIN_SIZE 16
#define FP_WINDOW 64
#define FP_MIN_CHECKED 8
#define MAX_PREFIXES 8
#define PREFIX_MAX 32

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

static int scan_map(const struct tk_map *m, void *ctx)
{
	struct maps_scan *s = ctx;
	const char *name;
	enum tk_allocator a;

	s->nmaps++;
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

static int open_mapped(const char *proc_root, int pid, const struct mapped_obj *o,
		       struct tk_elf **elf)
{
	char rel[PATH_MAX + 64], path[PATH_MAX + 64];
	int err;

	snprintf(rel, sizeof(rel), "%d/map_files/%llx-%llx", pid, (unsigned long long)o->start,
		 (unsigned long long)o->end);
	if (!tk_path_join(path, sizeof(path), proc_root, rel) && !tk_elf__open(path, elf))
		return 0;
	snprintf(rel, sizeof(rel), "%d/root", pid);
	err = tk_path_join(path, sizeof(path), proc_root, rel);
	if (!err) {
		size_t n = strlen(path);

		if (n + strlen(o->path) >= sizeof(path))
			return -ENAMETOOLONG;
		strcpy(path + n, o->path);
		err = tk_elf__open(path, elf);
		if (!err)
			return 0;
	}
	if (is_live_proc(proc_root))
		err = tk_elf__open(o->path, elf);
	return err;
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

static void frame_pointers(struct tk_proc_info *out, struct tk_elf *exe, struct sym_facts *f)
{
	unsigned char code[FP_WINDOW];
	size_t i, n = 0, step_n;

	out->frame_pointers = -1;
	if (tk_elf__type(exe) != ET_EXEC && tk_elf__type(exe) != ET_DYN) {
		say(out->fp_evidence, sizeof(out->fp_evidence), "not an executable");
		return;
	}
	if (f->nfuncs == 0) {
		say(out->fp_evidence, sizeof(out->fp_evidence),
		    tk_elf__has_symtab(exe) ? "no function symbols in .text" : "no symbol table");
		return;
	}
	qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), cmp_u64);
	for (i = 0; i < f->nfuncs; i++)
		if (!n || f->funcs[i] != f->funcs[n - 1])
			f->funcs[n++] = f->funcs[i];
	/* spread the sample over the whole text, not just its first objects */
	step_n = n < FP_MAX_CHECKED ? n : FP_MAX_CHECKED;
	for (i = 0; i < step_n; i++) {
		uint64_t addr = f->funcs[(uint64_t)i * n / step_n];
		long got = tk_elf__read_vaddr(exe, addr, code, sizeof(code));

		if (got < 8)
			continue;
		out->fp_checked++;
		if (tk_x86__sets_frame_pointer(code, got))
			out->fp_with_frame++;
	}
	if (out->fp_checked < FP_MIN_CHECKED) {
		say(out->fp_evidence, sizeof(out->fp_evidence),
		    "only %u function%s of %u bytes or more to check", out->fp_checked,
		    out->fp_checked == 1 ? "" : "s", FP_MIN_SIZE);
		return;
	}
	if (out->fp_with_frame * 2 >= out->fp_checked)
		out->frame_pointers = 1;
	else if (out->fp_with_frame * 10 < out->fp_checked)
		out->frame_pointers = 0;
	say(out->fp_evidence, sizeof(out->fp_evidence),
	    "heuristic: %u of %u function prologues set up %%rbp", out->fp_with_frame,
	    out->fp_checked);
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
out:
	free_facts(&exe_facts);
	free_facts(&lib_facts);
	tk_elf__free(lib);
	tk_elf__free(exe);
	free(ms);
	free(maps);
	return err;
}
