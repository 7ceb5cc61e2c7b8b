// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process's executable mappings for the symbolizer (symbolize_state.h):
 * captured whole from PID/maps (or a live thread's, when the main thread is
 * gone), or added one at a time as perf's MMAP2 records tell them, the newer
 * mapping cutting away what it overlaps. Each names its module (interned)
 * and the index of its file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/hashmap.h"
#include "core/untrusted.h"
#include "proc/mapfile.h"
#include "proc/maps.h"
#include "sym/symbolize_state.h"

#define MAPS_LIMIT (64u << 20)	/* the largest PID/maps text read */

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

/*
 * What a mapping named @path is: a file, [vdso], [vsyscall], code of no file
 * (anonymous, "[anon:NAME]", perf's "//anon": JIT code, "[jit]"), or nothing
 * we can name.
 */
static int describe_map(struct tk_symbolizer *s, uint32_t pid, uint64_t start, uint64_t end,
			uint64_t offset, const char *path, const struct tk_file_id *id,
			struct sym_map *m)
{
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = offset;
	if (!path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon:", 6)) {
		/* no file offset: frames are "[jit]+0xADDRESS", as a perf map names them */
		m->jit = true;
		m->offset = start;
		path = "[jit]";
	} else if (path[0] == '/' && path[1] == '/') {
		return -ENOENT;	/* perf's other names: "//anon" is the only executable one */
	} else if (path[0] == '/') {
		m->idx = tk_symbolizer__index_mapping(s, pid, start, end, path, id);
	} else if (!strcmp(path, "[vdso]")) {
		m->idx = tk_symbolizer__index_vdso(s, pid, start, end);
	} else if (strcmp(path, "[vsyscall]")) {
		return -ENOENT;	/* [uprobes], an executable [heap] or [stack]: not named */
	}
	m->module = tk_strset__intern(&s->strings, path);
	return m->module ? 0 : -ENOMEM;
}

/* What a capture learns of a process's JIT code besides its mappings. */
struct jit_seen {
	const char *jitdump;		/* a jit-N.dump path it maps, or NULL */
	struct tk_file_id jitdump_id;
	bool jvm;
	uint32_t jit_maps;
};

struct capture_ctx {
	struct tk_symbolizer *s;
	uint32_t pid;
	struct map_list list;
	struct jit_seen jit;
};

static int capture_map(const struct tk_map *m, void *ctx)
{
	struct capture_ctx *c = ctx;
	struct tk_file_id id = tk_map__id(m);
	struct sym_map sm;
	int err;

	if (m->perms[2] != 'x' || m->end <= m->start)
		return 0;
	if (m->path[0] == '/' && !tk_map__is_file(m))
		return 0;
	if (m->path[0] == '/') {
		int what = tk_symbolizer__jit_file(m->path);

		c->jit.jvm |= what == TK_JIT_FILE_JVM;
		if (what == TK_JIT_FILE_JITDUMP) {
			/* names of JIT code, not code: read by symbolize_jit.c */
			c->jit.jitdump = tk_strset__intern(&c->s->strings, m->path);
			c->jit.jitdump_id = id;
			return c->jit.jitdump ? 0 : -ENOMEM;
		}
	}
	err = describe_map(c->s, c->pid, m->start, m->end, m->offset, m->path, &id, &sm);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	c->jit.jit_maps += sm.jit;
	/* one JIT area, however many mappings its permissions cut it into */
	if (sm.jit && c->list.nr && c->list.maps[c->list.nr - 1].jit &&
	    c->list.maps[c->list.nr - 1].end == sm.start) {
		c->list.maps[c->list.nr - 1].end = sm.end;
		return 0;
	}
	return map_list_add(&c->list, &sm);
}

/* What @j saw, into @p. */
static void note_jit(struct sym_proc *p, const struct jit_seen *j)
{
	if (j->jitdump) {
		p->jitdump = j->jitdump;
		p->jitdump_id = j->jitdump_id;
	}
	p->jvm |= j->jvm;
	if (j->jit_maps > p->jit_maps)
		p->jit_maps = j->jit_maps;
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

/*
 * @p's PID/exe, once, while it lives (at its capture, or its first mapping
 * from a perf record), named as its mappings are: without " (deleted)".
 */
static void learn_exe(struct tk_symbolizer *s, struct sym_proc *p)
{
	static const char deleted[] = " (deleted)";
	char rel[32], path[PATH_MAX], exe[PATH_MAX];
	ssize_t n;

	if (p->exe || p->exe_tried)
		return;
	p->exe_tried = true;
	snprintf(rel, sizeof(rel), "%u/exe", p->pid);
	if (tk_path_join(path, sizeof(path), s->proc_root, rel))
		return;
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if ((size_t)n > sizeof(deleted) - 1 && !strcmp(exe + n - (sizeof(deleted) - 1), deleted))
		exe[n - (sizeof(deleted) - 1)] = '\0';
	p->exe = tk_strset__intern(&s->strings, exe);
}

/*
 * PID/maps now: its executable mappings sorted by start, each with its file's
 * index; what it says of JIT code into @jit.
 */
static int read_maps(struct tk_symbolizer *s, uint32_t pid, struct map_list *out,
		     struct jit_seen *jit)
{
	struct capture_ctx c = { .s = s, .pid = pid };
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
	if (err)
		return err == -ENOENT ? -ESRCH : err;
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
	*out = c.list;
	*jit = c.jit;
	return 0;
}

static bool same_image(const struct sym_proc *p, const struct map_list *l);

/* Add to @l (sorted) what @p knew that overlaps nothing in @l; 0 or -ENOMEM. */
static int keep_known(const struct sym_proc *p, struct map_list *l)
{
	size_t i, j, n = l->nr;
	struct sym_map *maps;

	maps = realloc(l->maps, (n + p->nr) * sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	l->maps = maps;
	for (i = 0; i < p->nr; i++) {
		const struct sym_map *o = &p->maps[i];
		bool hit = false;

		for (j = 0; j < n && !hit; j++)
			hit = maps[j].start < o->end && o->start < maps[j].end;
		if (!hit)
			maps[l->nr++] = *o;
	}
	l->cap = n + p->nr;
	if (l->nr > n)
		qsort(l->maps, l->nr, sizeof(*l->maps), cmp_map);
	return 0;
}

int tk_symbolizer__capture(struct tk_symbolizer *s, uint32_t pid, uint32_t gen)
{
	struct map_list l = { 0 };
	struct jit_seen jit;
	struct sym_proc *p;
	int err;

	err = read_maps(s, pid, &l, &jit);
	if (err) {
		if (err == -ESRCH)
			s->st.capture_failed++;
		return err;
	}
	p = tk_symbolizer__get_proc(s, pid, gen);
	if (!p) {
		free(l.maps);
		return -ENOMEM;
	}
	/*
	 * Kept as long as the capture (an exited process is named at the end):
	 * the list's room fitted to what it holds, 4 or 5 mappings for most
	 * processes against the 16 it grows by (0.6 KiB a process in a soak)
	 */
	if (l.nr && l.nr < l.cap) {
		struct sym_map *fit = realloc(l.maps, l.nr * sizeof(*l.maps));

		if (fit)
			l.maps = fit;
	}
	/*
	 * Captured again (a miss, a library loaded since): a process that is
	 * exiting may show only part of its mappings by now (13 of 305 seen), and
	 * its earlier samples still need the rest. So, of the same image, what
	 * was known and overlaps nothing read now is kept, as a recapture does.
	 */
	if (p->captured && p->nr && same_image(p, &l) && keep_known(p, &l)) {
		free(l.maps);
		return -ENOMEM;
	}
	free(p->maps);
	p->maps = l.maps;
	p->nr = l.nr;
	if (!p->captured)
		s->st.processes++;
	p->captured = true;
	note_jit(p, &jit);
	learn_exe(s, p);
	tk_symbolizer__learn_ns(s, p);
	return 0;
}

const char *tk_symbolizer__exe(const struct tk_symbolizer *s, uint32_t pid)
{
	const struct sym_proc *best = NULL;
	struct proc_ent *pe;
	size_t i = 0;

	while ((pe = tk_hashmap__next(&s->procs, &i)))
		if (pe->p->pid == pid && pe->p->exe && (!best || pe->p->gen > best->gen))
			best = pe->p;
	return best ? best->exe : NULL;
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

/* The mapping of @l at @start, or NULL. */
static const struct sym_map *map_at(const struct map_list *l, uint64_t start)
{
	size_t lo = 0, hi = l->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->maps[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nr && l->maps[lo].start == start ? &l->maps[lo] : NULL;
}

/* True when something of @p overlaps [@start, @end). */
static bool overlaps(const struct sym_proc *p, uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		if (p->maps[i].start < end && start < p->maps[i].end)
			return true;
	return false;
}

/*
 * The maps read again are @p's own image when every mapping of its program
 * is still where it was: a process that exec'ed since (the same pid, a new
 * image, a generation the symbolizer may not know yet) has moved them.
 */
static bool same_image(const struct sym_proc *p, const struct map_list *l)
{
	size_t i, same = 0;

	for (i = 0; i < p->nr; i++) {
		const struct sym_map *o = &p->maps[i], *n = map_at(l, o->start);
		bool kept = n && n->end == o->end && n->offset == o->offset && n->module == o->module;

		if (!kept && p->exe && o->module == p->exe)
			return false;
		same += kept;
	}
	return same > 0;
}

int tk_symbolizer__recapture(struct tk_symbolizer *s, struct sym_proc *p)
{
	struct map_list l = { 0 };
	struct jit_seen jit;
	struct timespec ts;
	int64_t now;
	size_t i, added = 0;
	int err = 0;

	if (!p->captured)
		return -ENOENT;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	/* code of no file misses at every lookup: once a second is enough */
	if (now < p->recapture_due_ns)
		return -EAGAIN;
	p->recapture_due_ns = now + 1000000000;
	/* a later generation of the pid is the one living now */
	if (p->gen < UINT32_MAX && tk_symbolizer__has(s, p->pid, p->gen + 1))
		return -ESRCH;
	err = read_maps(s, p->pid, &l, &jit);
	if (err)
		return err;
	s->st.recaptures++;
	if (!same_image(p, &l)) {
		free(l.maps);
		return -ESRCH;
	}
	note_jit(p, &jit);
	/* what is already known stays: an address seen earlier may be of a library closed since */
	for (i = 0; i < l.nr && !err; i++) {
		/* a JIT area grows: the newer one replaces what it overlaps */
		if (!l.maps[i].jit && overlaps(p, l.maps[i].start, l.maps[i].end))
			continue;
		err = insert_map(p, &l.maps[i]);
		added += !err;
	}
	free(l.maps);
	s->st.recapture_maps += added;
	return added ? 0 : -ENOENT;
}

/*
 * The identity of the file a process named itself for [@start, @end) (a
 * heap dump's mapping), when that process may really have read it: the file
 * it maps there now (its map_files link, of the identity it claims), else one
 * its user could read by the mode bits (its own, or world-readable) in its
 * root — never what only root may read. -errno when there is none.
 */
static int named_file(struct tk_symbolizer *s, struct sym_proc *p, uint64_t start,
		      uint64_t end, const char *path, const struct tk_file_id *claimed,
		      struct tk_file_id *id)
{
	struct tk_open_rules r = { .flags = TK_OPEN_READABLE };
	char rel[32], root[PATH_MAX];
	struct tk_mapfile mf;
	struct stat st;
	int fd, rfd;

	if (claimed && claimed->ino &&
	    !tk_mapfile__find(s->proc_root, p->pid, start, end, path, claimed, 0, &mf)) {
		bool mapped = mf.way == TK_MAPFILE_MAP_FILES;

		tk_mapfile__release(&mf);
		if (mapped) {
			*id = *claimed;
			return 0;
		}
	}
	tk_symbolizer__learn_ns(s, p);
	if (p->ns_known) {
		r.owners[0] = p->uid[0];
		r.owners[1] = p->uid[1];
		r.nr_owners = 2;
	}
	snprintf(rel, sizeof(rel), "%u/root", p->pid);
	if (tk_path_join(root, sizeof(root), s->proc_root, rel))
		return -ENAMETOOLONG;
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0) {
		r.flags |= TK_OPEN_IN_ROOT;
		fd = tk_open_untrusted(rfd, path, &r, &st);
		close(rfd);
	} else {
		/* gone: its files as we see them */
		fd = tk_open_untrusted_path(path, &r, &st);
	}
	if (fd < 0)
		return fd;
	close(fd);
	*id = (struct tk_file_id){ major(st.st_dev), minor(st.st_dev), st.st_ino };
	return 0;
}

static int add_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen, uint64_t start,
		       uint64_t end, uint64_t pgoff, const char *path,
		       const struct tk_file_id *given, bool named)
{
	static const char deleted[] = " (deleted)";
	struct tk_file_id id, *idp = NULL;
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
	p = tk_symbolizer__get_proc(s, pid, gen);
	if (!p)
		return -ENOMEM;
	if (named && clean[0] == '/') {
		if (named_file(s, p, start, end, clean, given, &id)) {
			s->st.named_refused++;
			return 0;	/* never read: its frames stay unnamed */
		}
		idp = &id;
	} else if (given && given->ino) {
		id = *given;	/* the kernel's: the file is found only if it is that one */
		idp = &id;
	}
	if (!named && clean[0] == '/') {
		int what = tk_symbolizer__jit_file(clean);

		p->jvm |= what == TK_JIT_FILE_JVM;
		if (what == TK_JIT_FILE_JITDUMP) {
			struct jit_seen j = { .jitdump = tk_strset__intern(&s->strings, clean) };

			if (!j.jitdump)
				return -ENOMEM;
			if (idp)
				j.jitdump_id = *idp;
			note_jit(p, &j);
			return 0;
		}
	}
	err = describe_map(s, pid, start, end, pgoff, clean, idp, &m);
	if (err)
		return err == -ENOENT ? 0 : err;
	p->jit_maps += m.jit;
	learn_exe(s, p);
	return insert_map(p, &m);
}

int tk_symbolizer__add_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
			       uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	return add_mapping(s, pid, gen, start, end, pgoff, path, NULL, false);
}

int tk_symbolizer__add_mapping_id(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				  uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
				  const struct tk_file_id *id)
{
	return add_mapping(s, pid, gen, start, end, pgoff, path, id, false);
}

int tk_symbolizer__add_named_mapping(struct tk_symbolizer *s, uint32_t pid, uint32_t gen,
				     uint64_t start, uint64_t end, uint64_t pgoff,
				     const char *path, const struct tk_file_id *claimed)
{
	return add_mapping(s, pid, gen, start, end, pgoff, path, claimed, true);
}
