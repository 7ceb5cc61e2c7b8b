// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a process's allocator is: by the libraries it maps (their file names),
 * else by the symbols of its main binary (a jemalloc, tcmalloc, mimalloc or
 * glibc linked in); and for a jemalloc, whether it was built with profiling
 * and has it on. The one pass over an object's symbols also lists its
 * functions for the frame-pointer heuristic (procinfo_unwind.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/elf_reader.h"
#include "core/fsutil.h"
#include "proc/procinfo.h"
#include "proc/procinfo_int.h"

#define ENVIRON_LIMIT (4u << 20)

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

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* --- libraries ---------------------------------------------------------- */

enum tk_allocator tk_proc_allocator_of_lib(const char *name)
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

bool tk_proc_is_glibc(const char *name)
{
	return !strcmp(name, "libc.so.6") ||
	       (has_prefix(name, "libc-2.") && has_suffix(name, ".so"));
}

/* --- symbols -------------------------------------------------------------- */

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

int tk_proc_collect_facts(struct tk_elf *elf, struct sym_facts *f)
{
	memset(f, 0, sizeof(*f));
	return tk_elf__for_each_sym(elf, collect_sym, f);
}

void tk_proc_free_facts(struct sym_facts *f)
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
bool tk_proc_find_defined(struct tk_elf *elf, const char *name, struct tk_elf_sym *out)
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
int tk_proc_jemalloc_prefix(struct tk_elf *elf, const struct sym_facts *f)
{
	char name[PREFIX_MAX + 16];
	unsigned int i;

	for (i = 0; i < f->n_je; i++) {
		snprintf(name, sizeof(name), "%smalloc", f->je_prefix[i]);
		if (tk_proc_find_defined(elf, name, NULL))
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
void tk_proc_jemalloc_prof_built(struct tk_proc_info *out, struct tk_elf *elf,
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

void tk_proc_jemalloc_prof_active(struct tk_proc_info *out, const char *proc_root, int pid,
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
	if (exe && tk_proc_find_defined(exe, name, &sym) && sym.type == TK_ELF_SYM_OBJECT) {
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
