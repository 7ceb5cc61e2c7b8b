// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The symbolizer's ELF indexes (symbolize_state.h): one per file, cached by
 * the opened file's device, inode, size and mtime (the path a process mapped
 * is reached several ways, proc/mapfile.h: PID/map_files, PID/root, the path
 * itself), and
 * shared by build-id when one already parsed has names as good; the [vdso]
 * image read from process memory once per size. Every index is owned here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "proc/elf_reader.h"
#include "sym/symbolize_state.h"
#include "unwind/unwind.h"

#define VDSO_MAX (1u << 20)

/* ---- the tables ---------------------------------------------------------------------- */

static uint64_t hash_file(const struct file_key *k)
{
	return tk_hash__u64(tk_hash__u64(tk_hash__u64(tk_hash__u64(0, k->dev), k->ino), k->size),
			    (uint64_t)k->mtime_ns);
}

static uint64_t file_ent_hash(const void *rec)
{
	return hash_file(&((const struct file_ent *)rec)->key);
}

static bool file_match(const void *ctx, const void *rec, const void *key)
{
	return !memcmp(&((const struct file_ent *)rec)->key, key, sizeof(struct file_key));
}

static uint64_t hash_build_id(const char *build_id)
{
	return tk_hash__str(1, build_id);
}

static uint64_t build_id_ent_hash(const void *rec)
{
	return hash_build_id(((const struct build_id_ent *)rec)->idx->build_id);
}

static bool build_id_match(const void *ctx, const void *rec, const void *key)
{
	return !strcmp(((const struct build_id_ent *)rec)->idx->build_id, key);
}

void tk_symbolizer__init_files(struct tk_symbolizer *s)
{
	s->files = (struct tk_hashmap)TK_HASHMAP_INIT(struct file_ent, file_ent_hash);
	s->build_ids = (struct tk_hashmap)TK_HASHMAP_INIT(struct build_id_ent, build_id_ent_hash);
}

void tk_symbolizer__free_files(struct tk_symbolizer *s)
{
	size_t i;

	for (i = 0; i < s->nr_indexes; i++)
		tk_elf_index__free(s->indexes[i]);
	free(s->indexes);
	tk_hashmap__free(&s->files);
	tk_hashmap__free(&s->build_ids);
}

static int own_index(struct tk_symbolizer *s, struct tk_elf_index *idx)
{
	if (s->nr_indexes == s->cap_indexes) {
		size_t cap = s->cap_indexes ? s->cap_indexes * 2 : 64;
		struct tk_elf_index **p = realloc(s->indexes, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->indexes = p;
		s->cap_indexes = cap;
	}
	s->indexes[s->nr_indexes++] = idx;
	return 0;
}

/* ---- indexing ----------------------------------------------------------------------- */

/*
 * The unwind rows of @f, when asked for: from its own CFI, or from its debug
 * file's .debug_frame when it has no .eh_frame. A file whose CFI cannot be
 * read keeps no table (its frames go by the frame pointer) and is counted.
 */
static void add_unwind(struct tk_symbolizer *s, struct tk_elf_file *f, struct tk_elf_index *idx)
{
	struct tk_elf *debug = NULL;
	int err;

	if (!s->unwind || idx->unw)
		return;
	if (idx->debug_path && tk_elf__open(idx->debug_path, &debug))
		debug = NULL;
	err = tk_unw_table__build(f->elf, debug, &idx->unw);
	if (err) {
		idx->unw = NULL;
		s->st.unwind_failed++;
		s->st.unwind_over_limit += err == -E2BIG;
	} else {
		s->st.unwind_tables++;
		s->st.unwind_rows += idx->unw->nr;
		s->st.unwind_ns += idx->unw->st.build_ns;
	}
	tk_elf__free(debug);
}

/*
 * The index of a new file: one already parsed under the same build-id if it
 * has names as good as this file can give, else a fresh parse.
 */
static int index_file(struct tk_symbolizer *s, struct tk_elf_file *f,
		      const struct tk_debug_search *ds, struct tk_elf_index **out)
{
	struct build_id_ent *be = NULL;
	struct tk_elf_index *idx;
	uint64_t h = 0;
	bool found;
	int err;

	if (f->build_id[0]) {
		h = hash_build_id(f->build_id);
		be = tk_hashmap__find(&s->build_ids, h, build_id_match, NULL, f->build_id);
		idx = be ? be->idx : NULL;
		if (idx && (idx->from >= TK_SYMS_SYMTAB || !f->has_symtab)) {
			s->st.elf_cache_hits++;
			*out = idx;
			return 0;
		}
	}
	err = tk_elf_index__build(f, ds, &idx);
	if (err)
		return err;
	add_unwind(s, f, idx);
	err = own_index(s, idx);
	if (err) {
		tk_elf_index__free(idx);
		return err;
	}
	s->st.elf_opened++;
	if (be) {
		be->idx = idx;	/* a better one for the same build-id */
	} else if (f->build_id[0]) {
		be = tk_hashmap__insert(&s->build_ids, h, build_id_match, NULL, f->build_id, &found);
		if (!be)
			return -ENOMEM;
		be->idx = idx;
	}
	*out = idx;
	return 0;
}

/*
 * The index of the file @mf names, the one the process mapped at @orig (its
 * debug files are looked for in the process's root unless it was reached by
 * the path itself). Returns 0 or a negative errno.
 */
static int index_file_at(struct tk_symbolizer *s, const struct tk_mapfile *mf, const char *orig,
			 uint32_t pid, struct tk_elf_index **out)
{
	bool own = mf->way != TK_MAPFILE_PATH;
	struct tk_debug_search ds = {
		.debug_root = s->debug_root,
		.proc_root = own ? s->proc_root : NULL,
		.pid = own ? pid : 0,
		.orig_path = orig,
	};
	struct tk_elf_index *idx = NULL;
	struct tk_elf_file f;
	struct file_ent *e;
	struct file_key k;
	bool found;
	uint64_t h;
	int err;

	memset(&k, 0, sizeof(k));
	k.dev = mf->st.st_dev;
	k.ino = mf->st.st_ino;
	k.size = mf->st.st_size;
	k.mtime_ns = (int64_t)mf->st.st_mtim.tv_sec * 1000000000 + mf->st.st_mtim.tv_nsec;
	h = hash_file(&k);
	e = tk_hashmap__find(&s->files, h, file_match, NULL, &k);
	if (e) {
		s->st.elf_cache_hits++;
		*out = e->idx;
		return 0;
	}
	/* the file found and checked (held by @mf), never its name again */
	err = tk_elf_file__open(&f, mf->open_path);
	if (err == -ENOEXEC || err == -EISDIR) {
		/* not ELF: remember that, with an empty index */
		idx = tk_elf_index__empty();
		if (!idx)
			return -ENOMEM;
		err = own_index(s, idx);
		if (err) {
			tk_elf_index__free(idx);
			return err;
		}
	} else if (err) {
		return err;
	} else {
		err = index_file(s, &f, &ds, &idx);
		tk_elf_file__close(&f);
		if (err)
			return err;
	}
	e = tk_hashmap__insert(&s->files, h, file_match, NULL, &k, &found);
	if (!e)
		return -ENOMEM;
	e->idx = idx;
	e->key = k;
	*out = idx;
	return 0;
}

/*
 * Find the file of a mapping through tk_mapfile__find(): PID/map_files
 * (deleted files, other mount namespaces), PID/root/PATH, then PATH itself,
 * each only when it is the file the maps line names (the host's file of the
 * same name is not the one a process in another root mapped). Mappings from
 * perf records and jemalloc dumps come without an identity: their PATH is
 * trusted, as the last way. NULL when none opens.
 */
struct tk_elf_index *tk_symbolizer__index_mapping(struct tk_symbolizer *s, uint32_t pid,
						  uint64_t start, uint64_t end, const char *path,
						  const struct tk_file_id *id)
{
	struct tk_elf_index *idx = NULL;
	struct tk_mapfile mf;

	if (tk_mapfile__find(s->proc_root, pid, start, end, path, id, TK_MAPFILE_TRUST_PATH, &mf))
		return NULL;
	if (index_file_at(s, &mf, path, pid, &idx))
		idx = NULL;
	tk_mapfile__release(&mf);
	return idx;
}

struct tk_elf_index *tk_symbolizer__index_vdso(struct tk_symbolizer *s, uint32_t pid,
					       uint64_t start, uint64_t end)
{
	uint64_t size = end - start;
	struct tk_elf_index *idx;
	struct tk_elf_file f;
	char path[PATH_MAX];
	void *buf;
	ssize_t n;
	size_t i;
	int fd;

	for (i = 0; i < s->nr_vdso; i++) {
		if (s->vdso[i].size == size)
			return s->vdso[i].idx;
	}
	if (s->nr_vdso == MAX_VDSO || !size || size > VDSO_MAX)
		return NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%u/mem", s->proc_root, pid) >= sizeof(path))
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(size);
	n = buf ? pread(fd, buf, size, start) : -1;
	close(fd);
	idx = NULL;
	if (n == (ssize_t)size && !tk_elf_file__open_mem(&f, buf, size)) {
		if (tk_elf_index__build(&f, NULL, &idx))
			idx = NULL;
		else
			add_unwind(s, &f, idx);
		tk_elf_file__close(&f);
	}
	free(buf);
	if (!idx)
		return NULL;
	if (own_index(s, idx)) {
		tk_elf_index__free(idx);
		return NULL;
	}
	s->st.elf_opened++;
	s->vdso[s->nr_vdso].size = size;
	s->vdso[s->nr_vdso++].idx = idx;
	return idx;
}
