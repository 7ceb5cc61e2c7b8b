// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a process's allocator is and how its main binary was built, read from
 * @proc_root/PID/{comm,exe,maps,environ,map_files,root} and the ELF files.
 *
 * A mapped object is opened through tk_mapfile__find() (proc/mapfile.h):
 * @proc_root/PID/map_files/START-END, @proc_root/PID/root/PATH (a fixture
 * tree makes PID/root a directory or a symlink to one), then PATH itself,
 * each only when it is the file of the maps line's device and inode: PATH
 * here can be another file when the process runs in a container. The main
 * binary is always opened through @proc_root/PID/exe.
 *
 * Here are the readers of /proc and the whole; what the allocator is comes
 * from procinfo_alloc.c, how each executable object can be unwound from
 * procinfo_unwind.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/elf_reader.h"
#include "core/fsutil.h"
#include "proc/maps.h"
#include "proc/procinfo.h"
#include "proc/procinfo_int.h"

#define MAPS_LIMIT (64u << 20)

/* --- maps --------------------------------------------------------------- */

struct maps_scan {
	enum tk_allocator alloc;
	struct mapped_obj alloc_obj;
	struct mapped_obj libc;
	struct mapped_obj exe;		/* the main binary, PID/exe's path */
	char exe_path[PATH_MAX];	/* that path without " (deleted)" */
	unsigned int nmaps;
	struct tk_proc_info *out;	/* its objects list */
	uint64_t dev[TK_PROC_MAX_OBJECTS], inode[TK_PROC_MAX_OBJECTS];
};

static void note_obj(struct mapped_obj *o, const struct tk_map *m)
{
	if (o->found)
		return;
	o->found = true;
	copy_str(o->path, sizeof(o->path), m->path);
	o->start = m->start;
	o->end = m->end;
	o->id = tk_map__id(m);
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
	o->id = tk_map__id(m);
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
	if (s->exe_path[0] && !strcmp(m->path, s->exe_path))
		note_obj(&s->exe, m);
	name = tk_path_basename(m->path);
	a = tk_proc_allocator_of_lib(name);
	if (a != TK_ALLOC_UNKNOWN && s->alloc == TK_ALLOC_UNKNOWN) {
		s->alloc = a;
		note_obj(&s->alloc_obj, m);
	}
	if (tk_proc_is_glibc(name))
		note_obj(&s->libc, m);
	return 0;
}

/* readlink's " (deleted)" off @path, as maps' paths come (tk_map.deleted) */
static void strip_deleted(char *path)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(path), d = sizeof(deleted) - 1;

	if (n > d && !strcmp(path + n - d, deleted))
		path[n - d] = '\0';
}

/* @proc_root/PID/root + @abs into @buf: the file @abs as the process sees it. */
int tk_proc_root_path(char *buf, size_t size, const char *proc_root, int pid, const char *abs)
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
int tk_proc_open_mapped_at(const char *proc_root, int pid, const struct mapped_obj *o,
			   struct tk_elf **elf, char *used, size_t used_size)
{
	struct tk_mapfile mf;
	int err;

	err = tk_mapfile__find(proc_root, pid, o->start, o->end, o->path, &o->id, 0, &mf);
	/* another file of that name here is as good as none (the report says ENOENT) */
	if (err == -ESTALE)
		err = -ENOENT;
	if (!err) {
		/* the very file found and checked, never its name again */
		err = tk_elf__open(mf.open_path, elf);
		tk_mapfile__release(&mf);
	}
	if (err)
		return err;
	if (used)
		copy_str(used, used_size, mf.path);
	return 0;
}

static int open_mapped(const char *proc_root, int pid, const struct mapped_obj *o,
		       struct tk_elf **elf)
{
	return tk_proc_open_mapped_at(proc_root, pid, o, elf, NULL, 0);
}

/* --- the whole ----------------------------------------------------------------- */

static void set_alloc(struct tk_proc_info *out, enum tk_allocator a, const char *obj,
		      const struct mapped_obj *m, bool is_static, const char *prefix)
{
	out->allocator = a;
	copy_str(out->alloc_object, sizeof(out->alloc_object), obj);
	if (m->found) {
		out->alloc_start = m->start;
		out->alloc_end = m->end;
		out->alloc_id = m->id;
	}
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
	copy_str(ms->exe_path, sizeof(ms->exe_path), out->exe);
	strip_deleted(ms->exe_path);
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
		err = tk_proc_collect_facts(exe, &exe_facts);
		if (err < 0)
			goto out;
		err = 0;
	}

	/* 1. an allocator library is mapped */
	if (ms->alloc != TK_ALLOC_UNKNOWN) {
		set_alloc(out, ms->alloc, ms->alloc_obj.path, &ms->alloc_obj, false, "");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "%s is mapped",
		    tk_path_basename(ms->alloc_obj.path));
		if (ms->alloc == TK_ALLOC_JEMALLOC) {
			lib_err = open_mapped(proc_root, pid, &ms->alloc_obj, &lib);
			if (lib) {
				err = tk_proc_collect_facts(lib, &lib_facts);
				if (err < 0)
					goto out;
				err = 0;
				idx = tk_proc_jemalloc_prefix(lib, &lib_facts);
				if (idx >= 0)
					copy_str(out->alloc_prefix, sizeof(out->alloc_prefix),
						 lib_facts.je_prefix[idx]);
			}
		}
	/* 2. an allocator is linked into the main binary */
	} else if (exe && (idx = tk_proc_jemalloc_prefix(exe, &exe_facts)) >= 0) {
		char conf[PREFIX_MAX + 16];

		set_alloc(out, TK_ALLOC_JEMALLOC, out->exe, &ms->exe, true,
			  exe_facts.je_prefix[idx]);
		snprintf(conf, sizeof(conf), "%smalloc_conf", exe_facts.je_prefix[idx]);
		if (tk_proc_find_defined(exe, conf, NULL))
			say(out->alloc_evidence, sizeof(out->alloc_evidence),
			    "binary defines %smallctl, %smalloc and %s", out->alloc_prefix,
			    out->alloc_prefix, conf);
		else
			say(out->alloc_evidence, sizeof(out->alloc_evidence),
			    "binary defines %smallctl and %smalloc", out->alloc_prefix,
			    out->alloc_prefix);
	} else if (exe && exe_facts.tc_malloc) {
		set_alloc(out, TK_ALLOC_TCMALLOC, out->exe, &ms->exe, true, "tc_");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "binary defines tc_malloc");
	} else if (exe && exe_facts.mi_malloc) {
		set_alloc(out, TK_ALLOC_MIMALLOC, out->exe, &ms->exe, true, "mi_");
		say(out->alloc_evidence, sizeof(out->alloc_evidence), "binary defines mi_malloc");
	/* 3. glibc */
	} else if (ms->libc.found) {
		set_alloc(out, TK_ALLOC_GLIBC, ms->libc.path, &ms->libc, false, "");
		say(out->alloc_evidence, sizeof(out->alloc_evidence),
		    "%s is mapped and no other allocator found%s", tk_path_basename(ms->libc.path),
		    exe && !tk_elf__has_symtab(exe) ? " (binary has no symbol table)" : "");
	} else if (exe && exe_facts.libc_malloc) {
		set_alloc(out, TK_ALLOC_GLIBC, out->exe, &ms->exe, true, "");
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
			tk_proc_jemalloc_prof_built(out, exe, &exe_facts, true, out->exe);
		else if (lib)
			tk_proc_jemalloc_prof_built(out, lib, &lib_facts, false, out->alloc_object);
		else
			say(out->jemalloc_prof_built_evidence,
			    sizeof(out->jemalloc_prof_built_evidence), "cannot open %s: %s",
			    tk_path_basename(out->alloc_object), strerror(-lib_err));
		tk_proc_jemalloc_prof_active(out, proc_root, pid, exe, prefix);
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
		tk_proc_frame_pointers(out, exe, &exe_facts);
	} else {
		say(out->fp_evidence, sizeof(out->fp_evidence), "cannot open the binary: %s",
		    strerror(-exe_err));
	}
	for (idx = 0; idx < (int)out->nr_objects && !err; idx++)
		err = tk_proc_scan_object(proc_root, pid, out, &out->objects[idx]);
out:
	tk_proc_free_facts(&exe_facts);
	tk_proc_free_facts(&lib_facts);
	tk_elf__free(lib);
	tk_elf__free(exe);
	free(ms);
	free(maps);
	return err;
}
