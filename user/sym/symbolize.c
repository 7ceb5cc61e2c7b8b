// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The symbolizer: per (pid, gen) the executable mappings of a process, each
 * with the index of its file; ELF indexes cached by the opened file's device,
 * inode, size and mtime, and shared by build-id, so a library is parsed once
 * per run whatever the number of processes or mount namespaces mapping it.
 * The [vdso] image is read from the first process that maps it and shared by
 * all whose vdso has its size. Kernel symbols load on first use.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "proc/maps.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"

#define MAPS_LIMIT (64u << 20)	/* the largest PID/maps text read */
#define VDSO_MAX (1u << 20)
#define MAX_VDSO 4		/* distinct vdso images (64-bit, 32-bit, x32) */

/* ---- state ------------------------------------------------------------------------- */

struct sym_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	const char *module;		/* interned */
	struct tk_elf_index *idx;	/* NULL: nothing to read names from */
};

struct sym_proc {
	uint32_t pid;
	uint32_t gen;
	bool captured;
	struct sym_map *maps;		/* sorted by start, disjoint */
	size_t nr;
};

struct file_key {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_ns;		/* with size: an inode reused by another file is not it */
};

/* Records of the tables (core/hashmap.h): each starts with a pointer, never NULL. */
struct proc_ent {
	struct sym_proc *p;
};

struct file_ent {
	struct tk_elf_index *idx;
	struct file_key key;
};

struct build_id_ent {
	struct tk_elf_index *idx;	/* the best one for its build-id */
};

struct vdso_ent {
	uint64_t size;
	struct tk_elf_index *idx;
};

struct tk_symbolizer {
	char proc_root[PATH_MAX];
	char debug_root[PATH_MAX];
	struct tk_hashmap procs;	/* struct proc_ent, by (pid, gen) */
	struct tk_hashmap files;	/* struct file_ent, by struct file_key */
	struct tk_hashmap build_ids;	/* struct build_id_ent, by build-id */
	struct tk_strset strings;	/* module names */
	struct tk_elf_index **indexes;	/* all of them, owned here */
	size_t nr_indexes;
	size_t cap_indexes;
	struct vdso_ent vdso[MAX_VDSO];
	size_t nr_vdso;
	struct sym_proc *last;		/* the process of the previous lookup */
	struct tk_ksyms *ksyms;
	int ksyms_err;
	bool ksyms_tried;
	bool unwind;			/* build unwind rows with each index */
	struct tk_symbolizer_stats st;
};

/* ---- the tables' hashes and comparisons ---------------------------------------- */

struct proc_key {
	uint32_t pid;
	uint32_t gen;
};

static uint64_t hash_proc(uint32_t pid, uint32_t gen)
{
	return tk_hash__mix64((uint64_t)pid << 32 | gen);
}

static uint64_t proc_ent_hash(const void *rec)
{
	const struct sym_proc *p = ((const struct proc_ent *)rec)->p;

	return hash_proc(p->pid, p->gen);
}

static bool proc_match(const void *ctx, const void *rec, const void *key)
{
	const struct sym_proc *p = ((const struct proc_ent *)rec)->p;
	const struct proc_key *k = key;

	return p->pid == k->pid && p->gen == k->gen;
}

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

int tk_symbolizer__new(const struct tk_symbolizer_opts *opts, struct tk_symbolizer **out)
{
	const char *proc_root = "/proc", *debug_root = "/usr/lib/debug";
	struct tk_symbolizer *s;

	*out = NULL;
	if (opts && opts->sz >= offsetof(struct tk_symbolizer_opts, proc_root) +
				       sizeof(opts->proc_root) && opts->proc_root)
		proc_root = opts->proc_root;
	if (opts && opts->sz >= offsetof(struct tk_symbolizer_opts, debug_root) +
				       sizeof(opts->debug_root) && opts->debug_root)
		debug_root = opts->debug_root;
	if (strlen(proc_root) >= PATH_MAX || strlen(debug_root) >= PATH_MAX)
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	strcpy(s->proc_root, proc_root);
	strcpy(s->debug_root, debug_root);
	s->procs = (struct tk_hashmap)TK_HASHMAP_INIT(struct proc_ent, proc_ent_hash);
	s->files = (struct tk_hashmap)TK_HASHMAP_INIT(struct file_ent, file_ent_hash);
	s->build_ids = (struct tk_hashmap)TK_HASHMAP_INIT(struct build_id_ent, build_id_ent_hash);
	s->unwind = opts && opts->sz >= offsetof(struct tk_symbolizer_opts, unwind_tables) +
					sizeof(opts->unwind_tables) && opts->unwind_tables;
	*out = s;
	return 0;
}

void tk_symbolizer__free(struct tk_symbolizer *s)
{
	struct proc_ent *pe;
	size_t i = 0;

	if (!s)
		return;
	while ((pe = tk_hashmap__next(&s->procs, &i))) {
		free(pe->p->maps);
		free(pe->p);
	}
	for (i = 0; i < s->nr_indexes; i++)
		tk_elf_index__free(s->indexes[i]);
	tk_hashmap__free(&s->procs);
	tk_hashmap__free(&s->files);
	tk_hashmap__free(&s->build_ids);
	tk_strset__free(&s->strings);
	free(s->indexes);
	tk_ksyms__free(s->ksyms);
	free(s);
}

/* ---- processes ---------------------------------------------------------------------- */

static struct sym_proc *find_proc(const struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct proc_key k = { pid, gen };
	struct proc_ent *pe;

	if (s->last && s->last->pid == pid && s->last->gen == gen)
		return s->last;
	pe = tk_hashmap__find(&s->procs, hash_proc(pid, gen), proc_match, NULL, &k);
	return pe ? pe->p : NULL;
}

static struct sym_proc *get_proc(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct proc_key k = { pid, gen };
	struct sym_proc *p = find_proc(s, pid, gen);
	struct proc_ent *pe;
	bool found;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->gen = gen;
	pe = tk_hashmap__insert(&s->procs, hash_proc(pid, gen), proc_match, NULL, &k, &found);
	if (!pe) {
		free(p);
		return NULL;
	}
	pe->p = p;
	return p;
}

void tk_symbolizer__set_unwind(struct tk_symbolizer *s, bool on)
{
	s->unwind = on;
}

bool tk_symbolizer__has(const struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	const struct sym_proc *p = find_proc(s, pid, gen);

	return p && p->captured;
}

/* ---- files --------------------------------------------------------------------------- */

/*
 * The unwind rows of @f, when asked for: from its own CFI, or from its debug
 * file's .debug_frame when it has no .eh_frame. A file whose CFI cannot be
 * read keeps no table (its frames go by the frame pointer) and is counted.
 */
static void add_unwind(struct tk_symbolizer *s, struct tk_elf_file *f, struct tk_elf_index *idx)
{
	struct tk_elf *debug = NULL;

	if (!s->unwind || idx->unw)
		return;
	if (idx->debug_path && tk_elf__open(idx->debug_path, &debug))
		debug = NULL;
	if (tk_unw_table__build(f->elf, debug, &idx->unw)) {
		idx->unw = NULL;
		s->st.unwind_failed++;
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
	if (f->build_id[0]) {
		/* new, or a better one for the same build-id (found again: the table may have moved) */
		be = tk_hashmap__insert(&s->build_ids, h, build_id_match, NULL, f->build_id, &found);
		if (!be)
			return -ENOMEM;
		be->idx = idx;
	}
	*out = idx;
	return 0;
}

/*
 * The index of the file at @path (a candidate way to the file the process
 * mapped at @orig). Returns 0, or a negative errno to try the next way.
 * @want_ino: when not 0, @path must be this inode (the host's file of the same
 * name is not the one a process in another mount namespace mapped).
 */
static int index_path(struct tk_symbolizer *s, const char *path, const char *orig, uint32_t pid,
		      uint64_t want_ino, struct tk_elf_index **out)
{
	struct tk_debug_search ds = {
		.debug_root = s->debug_root,
		.proc_root = pid ? s->proc_root : NULL,
		.pid = pid,
		.orig_path = orig,
	};
	struct tk_elf_index *idx = NULL;
	struct tk_elf_file f;
	struct file_ent *e;
	struct file_key k;
	struct stat st;
	bool found;
	uint64_t h;
	int err;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	if (want_ino && st.st_ino != want_ino)
		return -ESTALE;
	memset(&k, 0, sizeof(k));
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	k.size = st.st_size;
	k.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	h = hash_file(&k);
	e = tk_hashmap__find(&s->files, h, file_match, NULL, &k);
	if (e) {
		s->st.elf_cache_hits++;
		*out = e->idx;
		return 0;
	}
	err = tk_elf_file__open(&f, path);
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
 * Find the file of a mapping: PID/map_files/START-END (deleted files, other
 * mount namespaces), PID/root/PATH, then PATH itself. NULL when none opens.
 */
static struct tk_elf_index *index_mapping(struct tk_symbolizer *s, uint32_t pid, uint64_t start,
					  uint64_t end, const char *path, uint64_t ino)
{
	struct tk_elf_index *idx = NULL;
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s/%u/map_files/%" PRIx64 "-%" PRIx64, s->proc_root,
			     pid, start, end) < sizeof(p) &&
	    !index_path(s, p, path, pid, 0, &idx))
		return idx;
	if ((size_t)snprintf(p, sizeof(p), "%s/%u/root%s", s->proc_root, pid, path) < sizeof(p) &&
	    !index_path(s, p, path, pid, 0, &idx))
		return idx;
	if (!index_path(s, path, path, 0, ino, &idx))
		return idx;
	return NULL;
}

static struct tk_elf_index *index_vdso(struct tk_symbolizer *s, uint32_t pid, uint64_t start,
				       uint64_t end)
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

/* ---- capture ------------------------------------------------------------------------ */

struct map_list {
	struct sym_map *maps;
	size_t nr, cap;
};

static int map_list_add(struct map_list *l, const struct sym_map *m)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct sym_map *p = realloc(l->maps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->maps = p;
		l->cap = cap;
	}
	l->maps[l->nr++] = *m;
	return 0;
}

/* What a mapping named @path is: a file, [vdso], [vsyscall], or nothing we can name. */
static int describe_map(struct tk_symbolizer *s, uint32_t pid, uint64_t start, uint64_t end,
			uint64_t offset, const char *path, uint64_t ino, struct sym_map *m)
{
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = offset;
	if (path[0] == '/' && path[1] == '/')
		return -ENOENT;	/* perf's "//anon" */
	if (path[0] == '/')
		m->idx = index_mapping(s, pid, start, end, path, ino);
	else if (!strcmp(path, "[vdso]"))
		m->idx = index_vdso(s, pid, start, end);
	else if (strcmp(path, "[vsyscall]"))
		return -ENOENT;	/* anonymous: JIT code and the like stay unknown */
	m->module = tk_strset__intern(&s->strings, path);
	return m->module ? 0 : -ENOMEM;
}

struct capture_ctx {
	struct tk_symbolizer *s;
	uint32_t pid;
	struct map_list list;
};

static int capture_map(const struct tk_map *m, void *ctx)
{
	struct capture_ctx *c = ctx;
	struct sym_map sm;
	int err;

	if (m->perms[2] != 'x' || m->end <= m->start)
		return 0;
	if (m->path[0] == '/' && !tk_map__is_file(m))
		return 0;
	err = describe_map(c->s, c->pid, m->start, m->end, m->offset, m->path, m->inode, &sm);
	if (err == -ENOENT)
		return 0;
	return err ? err : map_list_add(&c->list, &sm);
}

static int cmp_map(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* PID/task/TID/maps of the first thread that still has them; -ESRCH when none. */
static int read_thread_maps(struct tk_symbolizer *s, uint32_t pid, char **text, size_t *len)
{
	char path[4096], rel[64];
	struct dirent *de;
	int err = -ESRCH;
	DIR *d;

	snprintf(rel, sizeof(rel), "%u/task", pid);
	if (tk_path_join(path, sizeof(path), s->proc_root, rel))
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d)
		return -ESRCH;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    (unsigned long)atol(de->d_name) == pid)
			continue;
		snprintf(rel, sizeof(rel), "%u/task/%.20s/maps", pid, de->d_name);
		if (tk_read_file_alloc(s->proc_root, rel, MAPS_LIMIT, text, len))
			continue;
		if (*len) {
			err = 0;
			break;
		}
		free(*text);
		*text = NULL;
	}
	closedir(d);
	return err;
}

int tk_symbolizer__capture(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct capture_ctx c = { .s = s, .pid = pid };
	struct sym_proc *p;
	char rel[32], *text;
	size_t len, i;
	int err;

	snprintf(rel, sizeof(rel), "%u/maps", pid);
	err = tk_read_file_alloc(s->proc_root, rel, MAPS_LIMIT, &text, &len);
	if (!err && !len) {
		/* a main thread that exited before its process: ask a live thread */
		free(text);
		text = NULL;
		err = read_thread_maps(s, pid, &text, &len);
	}
	if (err) {
		if (err == -ENOENT || err == -ESRCH) {
			s->st.capture_failed++;
			err = -ESRCH;
		}
		return err;
	}
	err = tk_maps__parse(text, capture_map, &c);
	free(text);
	if (err) {
		free(c.list.maps);
		return err;
	}
	for (i = 1; i < c.list.nr; i++) {
		if (c.list.maps[i].start < c.list.maps[i - 1].end) {
			qsort(c.list.maps, c.list.nr, sizeof(*c.list.maps), cmp_map);
			break;
		}
	}
	p = get_proc(s, pid, gen);
	if (!p) {
		free(c.list.maps);
		return -ENOMEM;
	}
	free(p->maps);
	p->maps = c.list.maps;
	p->nr = c.list.nr;
	if (!p->captured)
		s->st.processes++;
	p->captured = true;
	return 0;
}

/* Put @nm into @p's sorted maps; what it overlaps is cut away (the newer mapping wins). */
static int insert_map(struct sym_proc *p, const struct sym_map *nm)
{
	struct sym_map *maps = malloc((p->nr + 2) * sizeof(*maps));
	bool placed = false;
	size_t i, n = 0;

	if (!maps)
		return -ENOMEM;
	for (i = 0; i < p->nr; i++) {
		struct sym_map m = p->maps[i];

		if (m.end <= nm->start || m.start >= nm->end) {
			if (!placed && m.start >= nm->end) {
				maps[n++] = *nm;
				placed = true;
			}
			maps[n++] = m;
			continue;
		}
		if (m.start < nm->start) {
			maps[n] = m;
			maps[n++].end = nm->start;
		}
		if (!placed) {
			maps[n++] = *nm;
			placed = true;
		}
		if (m.end > nm->end) {
			maps[n] = m;
			maps[n].offset += nm->end - m.start;
			maps[n++].start = nm->end;
		}
	}
	if (!placed)
		maps[n++] = *nm;
	free(p->maps);
	p->maps = maps;
	p->nr = n;
	return 0;
}

int tk_symbolizer__add_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
			       uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	static const char deleted[] = " (deleted)";
	char clean[PATH_MAX];
	struct sym_proc *p;
	struct sym_map m;
	size_t len;
	int err;

	if (!path || end <= start)
		return -EINVAL;
	len = strlen(path);
	if (len >= sizeof(clean))
		return -ENAMETOOLONG;
	memcpy(clean, path, len + 1);
	if (len > sizeof(deleted) - 1 && !strcmp(clean + len - (sizeof(deleted) - 1), deleted))
		clean[len - (sizeof(deleted) - 1)] = '\0';
	err = describe_map(s, pid, start, end, pgoff, clean, 0, &m);
	if (err)
		return err == -ENOENT ? 0 : err;
	p = get_proc(s, pid, gen);
	if (!p)
		return -ENOMEM;
	return insert_map(p, &m);
}

/* ---- resolving ----------------------------------------------------------------------- */

int tk_symbolizer__user(struct tk_symbolizer *s, uint32_t pid, uint32_t gen, uint64_t addr,
			struct tk_sym_frame *out)
{
	const struct sym_map *m;
	struct sym_proc *p;
	size_t lo, hi;
	uint64_t vaddr;

	memset(out, 0, sizeof(*out));
	p = find_proc(s, pid, gen);
	if (!p)
		return -ESRCH;
	s->last = p;
	lo = 0;
	hi = p->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= p->maps[lo - 1].end)
		return -ESRCH;
	m = &p->maps[lo - 1];
	out->module = m->module;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module_offset = addr - m->start + m->offset;
	if (!m->idx)
		return -ENOENT;
	out->build_id = m->idx->build_id;
	if (!tk_elf_index__vaddr(m->idx, out->module_offset, &vaddr))
		return -ENOENT;
	out->function = tk_elf_index__find(m->idx, vaddr);
	return out->function ? 0 : -ENOENT;
}

int tk_symbolizer__for_each_map(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				int (*cb)(const struct tk_sym_map_info *m, void *ctx), void *ctx)
{
	struct sym_proc *p = find_proc(s, pid, gen);
	size_t i;
	int err;

	if (!p || !p->captured)
		return -ESRCH;
	for (i = 0; i < p->nr; i++) {
		const struct sym_map *m = &p->maps[i];
		struct tk_sym_map_info mi = {
			.start = m->start,
			.end = m->end,
			.offset = m->offset,
			.module = m->module,
		};

		if (m->idx) {
			mi.have_vaddr = tk_elf_index__vaddr(m->idx, m->offset, &mi.vaddr);
			mi.unw = m->idx->unw;
		}
		err = cb(&mi, ctx);
		if (err)
			return err;
	}
	return 0;
}

static int load_ksyms(struct tk_symbolizer *s)
{
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		s->ksyms_err = tk_ksyms__load(s->proc_root, &s->ksyms);
		if (!s->ksyms_err && tk_ksyms__restricted(s->ksyms))
			s->ksyms_err = -EPERM;
	}
	return s->ksyms_err;
}

int tk_symbolizer__kernel(struct tk_symbolizer *s, uint64_t addr, struct tk_sym_frame *out)
{
	memset(out, 0, sizeof(*out));
	if (load_ksyms(s) || !s->ksyms)
		return -ESRCH;
	return tk_ksyms__find(s->ksyms, addr, out);
}

int tk_symbolizer__kernel_status(struct tk_symbolizer *s)
{
	return load_ksyms(s);
}

void tk_symbolizer__stats(const struct tk_symbolizer *s, struct tk_symbolizer_stats *st)
{
	*st = s->st;
}
