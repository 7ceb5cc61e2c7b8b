// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An allocator's functions in an ELF object, by name, and their uprobe file
 * offsets (virtual address → offset through the PT_LOAD segment holding it).
 *
 * Aliases are common: glibc's malloc and __libc_malloc, memalign and
 * aligned_alloc, free and cfree share addresses. A uprobe on one address
 * fires for every name, so each address is hooked once. IFUNC symbols name a
 * resolver, not the function: they are skipped (no allocator here uses one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "alloc/alloc_syms.h"
#include "core/fsutil.h"
#include "proc/elf_reader.h"
#include "proc/mapfile.h"
#include "proc/procinfo.h"

struct wanted {
	const char *name;
	enum tk_afn_kind kind;
};

/* C names, under the allocator's prefix; in order of preference for a shared address */
static const struct wanted c_names[] = {
	{ "malloc", TK_AFN_MALLOC },
	{ "calloc", TK_AFN_CALLOC },
	{ "realloc", TK_AFN_REALLOC },
	{ "reallocarray", TK_AFN_REALLOCARRAY },
	{ "posix_memalign", TK_AFN_POSIX_MEMALIGN },
	{ "aligned_alloc", TK_AFN_MEMALIGN },
	{ "memalign", TK_AFN_MEMALIGN },
	{ "valloc", TK_AFN_MALLOC },
	{ "pvalloc", TK_AFN_PVALLOC },
	{ "free", TK_AFN_FREE },
	{ "cfree", TK_AFN_FREE },
	/* jemalloc's own API (Rust's tikv-jemallocator allocates and frees through it) */
	{ "mallocx", TK_AFN_MALLOC },
	{ "rallocx", TK_AFN_REALLOC },
	{ "sdallocx", TK_AFN_FREE },
	{ "dallocx", TK_AFN_FREE },
};

/* glibc's internal names, unprefixed, for a static glibc without the public ones */
static const struct wanted glibc_names[] = {
	{ "__libc_malloc", TK_AFN_MALLOC },
	{ "__libc_calloc", TK_AFN_CALLOC },
	{ "__libc_realloc", TK_AFN_REALLOC },
	{ "__libc_memalign", TK_AFN_MEMALIGN },
	{ "__libc_valloc", TK_AFN_MALLOC },
	{ "__libc_pvalloc", TK_AFN_PVALLOC },
	{ "__libc_free", TK_AFN_FREE },
};

/* C++ operators (never prefixed), only with TK_ASYMS_CXX */
static const struct wanted cxx_names[] = {
	{ "_Znwm", TK_AFN_MALLOC },
	{ "_Znam", TK_AFN_MALLOC },
	{ "_ZnwmRKSt9nothrow_t", TK_AFN_MALLOC },
	{ "_ZnamRKSt9nothrow_t", TK_AFN_MALLOC },
	{ "_ZnwmSt11align_val_t", TK_AFN_MALLOC },
	{ "_ZnamSt11align_val_t", TK_AFN_MALLOC },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", TK_AFN_MALLOC },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", TK_AFN_MALLOC },
	{ "_ZdlPv", TK_AFN_FREE },
	{ "_ZdaPv", TK_AFN_FREE },
	{ "_ZdlPvm", TK_AFN_FREE },
	{ "_ZdaPvm", TK_AFN_FREE },
	{ "_ZdlPvRKSt9nothrow_t", TK_AFN_FREE },
	{ "_ZdaPvRKSt9nothrow_t", TK_AFN_FREE },
	{ "_ZdlPvSt11align_val_t", TK_AFN_FREE },
	{ "_ZdaPvSt11align_val_t", TK_AFN_FREE },
	{ "_ZdlPvmSt11align_val_t", TK_AFN_FREE },
	{ "_ZdaPvmSt11align_val_t", TK_AFN_FREE },
	{ "_ZdlPvSt11align_val_tRKSt9nothrow_t", TK_AFN_FREE },
	{ "_ZdaPvSt11align_val_tRKSt9nothrow_t", TK_AFN_FREE },
};

static const struct wanted marker_names[] = {
	{ "tk_alloc_marker_alloc", TK_AFN_MARKER_ALLOC },
	{ "tk_alloc_marker_free", TK_AFN_MARKER_FREE },
};

#define NR_C (sizeof(c_names) / sizeof(c_names[0]))
#define NR_GLIBC (sizeof(glibc_names) / sizeof(glibc_names[0]))
#define NR_CXX (sizeof(cxx_names) / sizeof(cxx_names[0]))
#define NR_MARKERS (sizeof(marker_names) / sizeof(marker_names[0]))
#define NR_ALL (NR_C + NR_GLIBC + NR_CXX + NR_MARKERS)

struct found {
	const struct wanted *w;
	uint64_t vaddr;
	uint64_t size;
	bool have;
	bool ifunc;
};

struct walk {
	const char *prefix;
	size_t prefix_len;
	unsigned int flags;
	struct found f[NR_ALL];	/* by wanted index: c, glibc, cxx, markers */
};

static void consider(struct walk *w, size_t base, const struct wanted *tab, size_t n,
		     const char *name, const struct tk_elf_sym *s)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct found *f = &w->f[base + i];

		if (strcmp(name, tab[i].name))
			continue;
		/* .symtab comes first; a later .dynsym entry of the same name agrees */
		if (f->have)
			return;
		f->w = &tab[i];
		f->have = true;
		f->ifunc = s->ifunc;
		f->vaddr = s->value;
		f->size = s->size ? s->size : 1;
		return;
	}
}

static int on_sym(const struct tk_elf_sym *s, void *ctx)
{
	struct walk *w = ctx;

	if (!s->defined || s->type != TK_ELF_SYM_FUNC || !s->value)
		return 0;
	if (w->flags & TK_ASYMS_MARKERS) {
		consider(w, NR_C + NR_GLIBC + NR_CXX, marker_names, NR_MARKERS, s->name, s);
		return 0;
	}
	if (!strncmp(s->name, w->prefix, w->prefix_len))
		consider(w, 0, c_names, NR_C, s->name + w->prefix_len, s);
	if (!w->prefix_len)
		consider(w, NR_C, glibc_names, NR_GLIBC, s->name, s);
	if (w->flags & TK_ASYMS_CXX)
		consider(w, NR_C + NR_GLIBC, cxx_names, NR_CXX, s->name, s);
	return 0;
}

static bool is_push(const unsigned char *b)
{
	return (b[0] & 0xf8) == 0x50 || (b[0] == 0x41 && (b[1] & 0xf8) == 0x50);
}

/*
 * Where on the function's way in to place its uprobe. The kernel emulates a
 * probed push (one trap, ~0.6 us here) but single-steps most other
 * instructions out of line (two traps, ~11 us here: glibc's free starts
 * with "test %rdi,%rdi; je"). So: past an endbr64, and past a leading
 * NULL-pointer test and its branch when a push follows (free(NULL) is then
 * not seen; it frees nothing). Registers and the stack pointer are as at
 * the entry there. Bytes from the file; 0 when unreadable.
 */
static unsigned int probe_skip(struct tk_elf *elf, uint64_t vaddr, bool *push)
{
	unsigned char b[24];
	unsigned int i = 0, j;

	*push = false;
	if (tk_elf__read_vaddr(elf, vaddr, b, sizeof(b)) < (long)sizeof(b))
		return 0;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		i = 4;				/* endbr64 */
	if (is_push(b + i)) {
		*push = true;
		return i;
	}
	if (b[i] == 0x48 && b[i + 1] == 0x85 && b[i + 2] == 0xff) {	/* test %rdi,%rdi */
		j = i + 3;
		if (b[j] == 0x74)		/* je rel8 */
			j += 2;
		else if (b[j] == 0x0f && b[j + 1] == 0x84)	/* je rel32 */
			j += 6;
		else
			return i;
		if (is_push(b + j)) {
			*push = true;
			return j;
		}
	}
	return i;
}

static int add(struct tk_alloc_syms *out, struct tk_elf *elf, const struct found *f,
	       const char *prefix)
{
	struct tk_alloc_fn *fn;
	uint64_t off;
	int i;

	for (i = 0; i < out->nr; i++)
		if (out->fns[i].vaddr == f->vaddr)
			return 0;	/* an alias of one already hooked */
	if (tk_elf__vaddr_to_offset(elf, f->vaddr, &off))
		return 0;		/* not in the file: nothing to place a uprobe on */
	if (out->nr >= TK_ALLOC_MAX_FNS)
		return -E2BIG;
	fn = &out->fns[out->nr++];
	snprintf(fn->name, sizeof(fn->name), "%s%s", prefix, f->w->name);
	fn->kind = f->w->kind;
	fn->vaddr = f->vaddr;
	fn->size = f->size;
	/* markers are tracekit's own: probed where they begin (a nop, see tkalloc.c) */
	if (f->w->kind == TK_AFN_MARKER_ALLOC || f->w->kind == TK_AFN_MARKER_FREE) {
		fn->offset = off;
		fn->emulated = true;
	} else {
		fn->offset = off + probe_skip(elf, f->vaddr, &fn->emulated);
	}
	return 1;
}

int tk_alloc_syms__find(const char *path, const char *prefix, unsigned int flags,
			struct tk_alloc_syms *out)
{
	struct walk *w;
	struct tk_elf *elf;
	int err, added = 0, r;
	size_t i;

	if (out->path[0] && strcmp(out->path, path) && strcmp(out->probe_path, path))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->prefix = prefix ? prefix : "";
	w->prefix_len = strlen(w->prefix);
	w->flags = flags;
	err = tk_elf__open(path, &elf);
	if (err)
		goto out;
	err = tk_elf__for_each_sym(elf, on_sym, w);
	if (err)
		goto out_elf;
	if (!out->path[0])
		snprintf(out->path, sizeof(out->path), "%s", path);
	/* in table order: the public name of an address wins over its aliases */
	for (i = 0; i < NR_ALL; i++) {
		if (!w->f[i].have)
			continue;
		if (w->f[i].ifunc) {
			out->nr_ifunc++;
			continue;
		}
		r = add(out, elf, &w->f[i], i < NR_C ? w->prefix : "");
		if (r < 0) {
			err = r;
			goto out_elf;
		}
		added += r;
	}
	err = added;
out_elf:
	tk_elf__free(elf);
out:
	free(w);
	return err;
}

bool tk_alloc_syms__usable(const struct tk_alloc_syms *out)
{
	bool alloc = false, release = false;
	int i;

	for (i = 0; i < out->nr; i++) {
		if (out->fns[i].kind == TK_AFN_FREE || out->fns[i].kind == TK_AFN_MARKER_FREE)
			release = true;
		else
			alloc = true;
	}
	return alloc && release;
}

/* ---- whole processes and commands ---- */

/*
 * The allocator's file as @pid maps it into @syms->path: by its identity
 * (proc/mapfile.h), so that a process in another root is probed on its own
 * file, not the host's of that name (where its offsets mean nothing and no
 * probe would ever fire).
 */
static int object_path(const char *proc_root, int pid, const struct tk_proc_info *info,
		       struct tk_alloc_syms *syms, char *why, size_t why_sz)
{
	const char *pr = proc_root ? proc_root : "/proc";
	struct tk_mapfile mf;
	int err;

	err = tk_mapfile__find(proc_root, pid, info->alloc_start, info->alloc_end,
			       info->alloc_object, &info->alloc_id, TK_MAPFILE_CHECK_HERE, &mf);
	if (err == -ESTALE) {
		snprintf(why, why_sz, "the allocator in process %d's root (%s) is not the host's "
			 "file of that name and cannot be reached through %s/%d/map_files (which "
			 "needs CAP_SYS_ADMIN) or %s/%d/root", pid, info->alloc_object, pr, pid,
			 pr, pid);
		return err;
	}
	if (err) {
		snprintf(why, why_sz, "cannot reach %s, the allocator of process %d: %s",
			 info->alloc_object, pid, strerror(-err));
		return err;
	}
	/* held: read and probed through it (tk_alloc_syms__probe), released with @syms */
	tk_alloc_syms__release(syms);
	syms->fd = mf.fd;
	syms->held = mf.fd >= 0;
	snprintf(syms->probe_path, sizeof(syms->probe_path), "%s",
		 syms->held ? mf.open_path : "");
	snprintf(syms->path, sizeof(syms->path), "%s", mf.path);
	snprintf(syms->mapped, sizeof(syms->mapped), "%s", info->alloc_object);
	syms->other_here = !mf.same_here;
	return 0;
}

void tk_alloc_syms__release(struct tk_alloc_syms *s)
{
	if (s && s->held)
		close(s->fd);
	if (s) {
		s->held = false;
		s->fd = -1;
		s->probe_path[0] = 0;
	}
}

int tk_alloc_syms__find_process(const char *proc_root, int pid, const struct tk_proc_info *known,
				struct tk_alloc_syms *syms, char *why, size_t why_sz)
{
	struct tk_proc_info *info;
	char path[PATH_MAX];
	unsigned int flags;
	int err;

	info = calloc(1, sizeof(*info));
	if (!info)
		return -ENOMEM;
	if (known)
		*info = *known;
	else if ((err = tk_proc_info__read(proc_root, pid, info))) {
		snprintf(why, why_sz, "cannot read process %d: %s", pid, strerror(-err));
		goto out;
	}
	if (!info->alloc_object[0]) {
		snprintf(why, why_sz, "no known allocator found in process %d (%s)", pid,
			 info->alloc_evidence[0] ? info->alloc_evidence : "no malloc in its objects");
		err = -ENOENT;
		goto out;
	}
	err = object_path(proc_root, pid, info, syms, why, why_sz);
	if (err)
		goto out;
	snprintf(path, sizeof(path), "%s", tk_alloc_syms__probe(syms));
	/* glibc's operator new is libstdc++'s, which calls malloc: hooked already */
	flags = info->allocator == TK_ALLOC_GLIBC ? 0 : TK_ASYMS_CXX;
	err = tk_alloc_syms__find(path, info->alloc_prefix, flags, syms);
	if (err < 0) {
		snprintf(why, why_sz, "cannot read the symbols of %s: %s", syms->path,
			 strerror(-err));
		goto out;
	}
	if (!tk_alloc_syms__usable(syms)) {
		snprintf(why, why_sz, "%s (%s, prefix '%s') has no malloc and free symbols to "
			 "place uprobes on", syms->path, tk_allocator__name(info->allocator),
			 info->alloc_prefix);
		err = -ENOENT;
		goto out;
	}
	err = 0;
out:
	free(info);
	return err;
}

int tk_alloc_syms__find_static(const char *cmd, struct tk_alloc_syms *syms, char *why,
			       size_t why_sz)
{
	static const char *const prefixes[] = { "", "je_", "_rjem_" };
	char exe[PATH_MAX];
	size_t i;
	int err;

	err = tk_find_command(cmd, exe, sizeof(exe));
	if (err) {
		snprintf(why, why_sz, "cannot find '%s': %s", cmd, strerror(-err));
		return err;
	}
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		err = tk_alloc_syms__find(exe, prefixes[i], 0, syms);
		if (err < 0) {
			snprintf(why, why_sz, "cannot read the symbols of %s: %s", exe,
				 strerror(-err));
			return err;
		}
	}
	if (!tk_alloc_syms__usable(syms)) {
		snprintf(why, why_sz, "%s is linked statically and has no malloc and free "
			 "symbols (stripped?)", exe);
		return -ENOENT;
	}
	return 0;
}

const char *tk_afn_kind__name(enum tk_afn_kind k)
{
	static const char *const names[TK_AFN__COUNT] = {
		[TK_AFN_MALLOC] = "malloc",
		[TK_AFN_CALLOC] = "calloc",
		[TK_AFN_REALLOC] = "realloc",
		[TK_AFN_REALLOCARRAY] = "reallocarray",
		[TK_AFN_POSIX_MEMALIGN] = "posix_memalign",
		[TK_AFN_MEMALIGN] = "memalign",
		[TK_AFN_PVALLOC] = "pvalloc",
		[TK_AFN_FREE] = "free",
		[TK_AFN_MARKER_ALLOC] = "marker_alloc",
		[TK_AFN_MARKER_FREE] = "marker_free",
	};

	return k < TK_AFN__COUNT ? names[k] : "?";
}
