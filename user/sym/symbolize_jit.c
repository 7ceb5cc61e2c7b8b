// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * JIT code's names for the symbolizer (symbolize_state.h): an address of a
 * process in no mapping of a file is looked up in the perf map file its JIT
 * writes, /tmp/perf-PID.map (perfmap.c parses it). The file is the process's
 * own: read through PID/root, as a process in a container writes its own
 * /tmp, and named by the pid the process knows (NSpid's last field). It grows
 * while the program runs, so it is read again when its size changed, at most
 * once a second, from where the last read stopped. Java's DumpPerfMapAtExit
 * writes it as the process exits: a process whose root was ours gets its
 * file from our /tmp once PID/root is gone.
 *
 * A jitdump file (jitdump.c: V8's --perf-prof, Python 3.13's -X perf_jit) is
 * found in the process's maps, since both runtimes map it executable; it is
 * read the same way, and its names are looked up after the perf map's.
 *
 * JIT code is also named while the process lives, not only when a sample is
 * symbolized (tk_symbolizer__tick, from the collectors' polls): a command
 * that exits before the capture ends, in a mount namespace of its own, would
 * otherwise leave only a /tmp no one can reach any more.
 *
 * The files are outside input, and so is where they point: they are opened
 * as another user's file is (core/untrusted.h): inside the process's root, no
 * symlink followed, no mount over it, checked before it is opened (a
 * regular file, owned by root or by the process's user as perf asks, without
 * another name when root's), so a FIFO or a device there is never opened;
 * a jitdump must also be the very file the maps line names (device, inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include "core/fsutil.h"
#include "core/untrusted.h"
#include "sym/symbolize_state.h"

#define NSEC_PER_SEC 1000000000LL
#define READ_CHUNK (1u << 20)		/* bigger than a line (TK_PERFMAP_MAX_LINE) */
#define READ_MAX (512ull << 20)		/* bytes read of one file, in all */
#define MISS_REFRESH_NS (NSEC_PER_SEC / 10)	/* a name not found: the files looked at again */

struct sym_jit {
	struct tk_perfmap *map;		/* NULL: no file seen yet */
	const char *module;		/* "[perf-NSPID.map]", interned */
	int64_t checked_ns;		/* last look at the file */
	uint64_t dev, ino;		/* the file read */
	uint64_t size;			/* its size then */
	uint64_t off;			/* bytes of it parsed (whole lines) */
	char head[64];			/* its first bytes, as read: the same file still? */
	size_t head_len;
	/* its jitdump, once its maps named one */
	struct tk_jitdump *dump;
	const char *dump_module;	/* "[jit-N.dump]", interned */
	const char *dump_path;		/* the one being read */
	uint64_t dump_size;
	uint64_t dump_off;		/* bytes of it parsed (whole records, skips) */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The last number of a "NSpid:" or the first two of a "Uid:" value. */
static int parse_ids(const char *v, uint32_t *ids, int max, bool last)
{
	int n = 0;
	char *end;

	for (;;) {
		unsigned long x;

		while (*v == ' ' || *v == '\t')
			v++;
		if (*v < '0' || *v > '9')
			break;
		x = strtoul(v, &end, 10);
		if (x > UINT32_MAX)
			break;
		if (last)
			ids[0] = x, n = 1;
		else if (n < max)
			ids[n++] = x;
		v = end;
	}
	return n;
}

void tk_symbolizer__learn_ns(struct tk_symbolizer *s, struct sym_proc *p)
{
	char rel[64], path[PATH_MAX], text[4096], v[256];
	struct stat st, root;

	if (p->ns_known)
		return;
	snprintf(rel, sizeof(rel), "%u/status", p->pid);
	if (tk_read_file(s->proc_root, rel, text, sizeof(text)) <= 0)
		return;
	if (!tk_status_field(text, "Uid", v, sizeof(v)) || parse_ids(v, p->uid, 2, false) != 2)
		return;
	/* before 4.1 there is no NSpid: one namespace's pid */
	p->nspid = p->pid;
	if (tk_status_field(text, "NSpid", v, sizeof(v)))
		parse_ids(v, &p->nspid, 1, true);
	/* its "/" and its mounts are ours: then so is its /tmp */
	snprintf(rel, sizeof(rel), "%u/root", p->pid);
	p->own_root = !tk_path_join(path, sizeof(path), s->proc_root, rel) && !stat(path, &st) &&
		      !stat("/", &root) && st.st_dev == root.st_dev && st.st_ino == root.st_ino;
	snprintf(rel, sizeof(rel), "%u/ns/mnt", p->pid);
	p->own_root = p->own_root && !tk_path_join(path, sizeof(path), s->proc_root, rel) &&
		      !stat(path, &st) && !stat("/proc/self/ns/mnt", &root) &&
		      st.st_dev == root.st_dev && st.st_ino == root.st_ino;
	p->ns_known = true;
}

/*
 * @rel inside the root @dirfd, as another user's file is opened
 * (core/untrusted.h): no symlink, no mount over it, a regular file owned by
 * root or the process's user (real or effective, as perf asks), and no other
 * name when it is root's (a hard link of a root-only file). -errno otherwise.
 */
static int open_in_root(int dirfd, const struct sym_proc *p, const char *rel, struct stat *st)
{
	struct tk_open_rules r = {
		.flags = TK_OPEN_IN_ROOT | TK_OPEN_ONE_LINK,
		.owners = { p->uid[0], p->uid[1] },
		.nr_owners = 2,
	};

	return tk_open_untrusted(dirfd, rel, &r, st);
}

/* @p's perf map file, or -errno. */
static int open_map(struct tk_symbolizer *s, const struct sym_proc *p, struct stat *st)
{
	char rel[64], path[PATH_MAX];
	int dirfd, fd;

	snprintf(rel, sizeof(rel), "%u/root", p->pid);
	if (tk_path_join(path, sizeof(path), s->proc_root, rel))
		return -ENAMETOOLONG;
	snprintf(rel, sizeof(rel), "tmp/perf-%u.map", p->nspid);
	/* PID/root is the kernel's link to its root: followed, that is the point */
	dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0) {
		fd = open_in_root(dirfd, p, rel, st);
		close(dirfd);
		return fd;
	}
	if (!p->own_root)
		return -ESRCH;
	/* gone: its "/" was ours */
	dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = open_in_root(dirfd, p, rel, st);
	close(dirfd);
	return fd;
}

/* Parse what @fd holds past what was parsed, up to @size. */
static int read_more(struct sym_jit *j, int fd, uint64_t size)
{
	char *buf = malloc(READ_CHUNK);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (j->off < size && j->off < READ_MAX) {
		size_t want = size - j->off < READ_CHUNK ? size - j->off : READ_CHUNK, used;
		ssize_t n = pread(fd, buf, want, j->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		err = tk_perfmap__feed(j->map, buf, n, false, &used);
		j->off += used;
		if (err || !used)
			break;	/* !used: a last line still being written */
	}
	free(buf);
	return err;
}

/* Whether @fd still begins with what the file read began with. */
static bool same_head(const struct sym_jit *j, int fd)
{
	char now[sizeof(j->head)];

	if (!j->head_len)
		return true;
	return pread(fd, now, j->head_len, 0) == (ssize_t)j->head_len &&
	       !memcmp(now, j->head, j->head_len);
}

/* Read @p's perf map if it is new or grew since the last look. */
static void refresh_map(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jit *j)
{
	struct stat st;
	int fd;

	fd = open_map(s, p, &st);
	if (fd < 0)
		return;
	if (j->map && (st.st_dev != j->dev || st.st_ino != j->ino ||
		       (uint64_t)st.st_size < j->off || !same_head(j, fd))) {
		/*
		 * another file, or one written anew: start over (a file left by an
		 * earlier process of the same pid, truncated and written again by
		 * this one, may already be longer than what was read of it)
		 */
		tk_perfmap__free(j->map);
		j->map = NULL;
	}
	if (j->map && (uint64_t)st.st_size == j->size)
		goto out;
	if (!j->map) {
		j->map = tk_perfmap__new();
		if (!j->map)
			goto out;
		j->dev = st.st_dev;
		j->ino = st.st_ino;
		j->off = 0;
		j->head_len = 0;
		s->st.jit_files++;
	}
	j->size = st.st_size;
	read_more(j, fd, j->size);
	if (!j->head_len) {
		ssize_t n = pread(fd, j->head, sizeof(j->head), 0);

		j->head_len = n > 0 ? n : 0;
	}
out:
	close(fd);
}

/*
 * @p's jitdump @path, the very file its maps named (@id), inside its root
 * (or ours, once it is gone, when its root was ours); -errno.
 */
static int open_dump(struct tk_symbolizer *s, const struct sym_proc *p, const char *path,
		     const struct tk_file_id *id, struct stat *st)
{
	char rel[64], root[PATH_MAX];
	int dirfd, fd;

	snprintf(rel, sizeof(rel), "%u/root", p->pid);
	if (tk_path_join(root, sizeof(root), s->proc_root, rel))
		return -ENAMETOOLONG;
	dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 && p->own_root)
		dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -ESRCH;
	while (*path == '/')
		path++;	/* inside the root */
	fd = open_in_root(dirfd, p, path, st);
	close(dirfd);
	if (fd >= 0 && id->ino && (major(st->st_dev) != id->dev_major ||
				   minor(st->st_dev) != id->dev_minor || st->st_ino != id->ino)) {
		close(fd);
		return -ESTALE;	/* not the file it maps: another put in its place */
	}
	return fd;
}

/* Parse what @p's jitdump holds past what was parsed. */
static void refresh_dump(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jit *j)
{
	struct stat st;
	unsigned char *buf;
	int fd;

	if (!p->jitdump)
		return;
	if (j->dump && j->dump_path != p->jitdump) {
		/* another one: its names from now on */
		tk_jitdump__free(j->dump);
		j->dump = NULL;
	}
	fd = open_dump(s, p, p->jitdump, &p->jitdump_id, &st);
	if (fd < 0)
		return;
	if (!j->dump) {
		char mod[PATH_MAX + 2];

		j->dump = tk_jitdump__new(p->nspid);
		snprintf(mod, sizeof(mod), "[%s]", tk_path_basename(p->jitdump));
		j->dump_module = tk_strset__intern(&s->strings, mod);
		if (!j->dump || !j->dump_module) {
			tk_jitdump__free(j->dump);
			j->dump = NULL;
			goto out;
		}
		j->dump_path = p->jitdump;
		j->dump_off = j->dump_size = 0;
		s->st.jitdump_files++;
	}
	if ((uint64_t)st.st_size == j->dump_size)
		goto out;
	j->dump_size = st.st_size;
	buf = malloc(READ_CHUNK);
	if (!buf)
		goto out;
	while (j->dump_off < j->dump_size && j->dump_off < READ_MAX) {
		uint64_t left = j->dump_size - j->dump_off;
		ssize_t n = pread(fd, buf, left < READ_CHUNK ? left : READ_CHUNK, j->dump_off);
		size_t used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || tk_jitdump__feed(j->dump, buf, n, &used))
			break;
		j->dump_off += used;
		if (!used)
			break;	/* a record not whole yet */
	}
	free(buf);
out:
	close(fd);
}

/* @p's JIT state, made at the first need; NULL when its namespaces cannot be learnt. */
static struct sym_jit *jit_of(struct tk_symbolizer *s, struct sym_proc *p)
{
	struct sym_jit *j = p->jit;
	char mod[48];

	if (j)
		return j;
	tk_symbolizer__learn_ns(s, p);
	if (!p->ns_known)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	snprintf(mod, sizeof(mod), "[perf-%u.map]", p->nspid);
	j->module = tk_strset__intern(&s->strings, mod);
	if (!j->module) {
		free(j);
		return NULL;
	}
	p->jit = j;
	return j;
}

/* Read @p's perf map and jitdump if new or grown, at most once a second (or now: @force). */
static void refresh(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jit *j, bool force)
{
	int64_t now = now_ns();

	if (!force && j->checked_ns && now - j->checked_ns < NSEC_PER_SEC)
		return;
	j->checked_ns = now;
	refresh_map(s, p, j);
	refresh_dump(s, p, j);
}

int tk_symbolizer__jit(struct tk_symbolizer *s, struct sym_proc *p, uint64_t addr,
		       struct tk_sym_frame *out)
{
	struct sym_jit *j = jit_of(s, p);
	const char *name = NULL;
	uint64_t start, size;

	if (!j)
		return -ESRCH;
	refresh(s, p, j, false);
	memset(out, 0, sizeof(*out));
	name = j->map ? tk_perfmap__find(j->map, addr, &start, &size) : NULL;
	if (!name && !(j->dump && tk_jitdump__find(j->dump, addr, NULL, NULL)) &&
	    now_ns() - j->checked_ns >= MISS_REFRESH_NS) {
		/* written since the last look (a runtime that buffers, flushed as it exits) */
		refresh(s, p, j, true);
		name = j->map ? tk_perfmap__find(j->map, addr, &start, &size) : NULL;
	}
	/* a JVM's code no map names yet: ask it for its map now, while it lives */
	if (!name && p->jvm && tk_symbolizer__jvm_ask_now(s, p) && j->map)
		name = tk_perfmap__find(j->map, addr, &start, &size);
	if (name) {
		out->module = j->module;
		tk_perfmap__span(j->map, &out->map_start, &out->map_limit);
	} else if (j->dump && (name = tk_jitdump__find(j->dump, addr, &start, &size))) {
		out->module = j->dump_module;
		tk_jitdump__span(j->dump, &out->map_start, &out->map_limit);
	}
	if (!name)
		return -ESRCH;
	out->function = name;
	out->jit = true;
	out->module_offset = addr - out->map_start;
	return 0;
}

void tk_symbolizer__jit_reread(struct tk_symbolizer *s, struct sym_proc *p)
{
	struct sym_jit *j = jit_of(s, p);

	if (!j)
		return;
	/* written anew where it was (a JVM truncates and writes it): parsed from its start */
	tk_perfmap__free(j->map);
	j->map = NULL;
	refresh(s, p, j, true);
}

void tk_symbolizer__jit_refresh(struct tk_symbolizer *s, struct sym_proc *p, bool force)
{
	struct sym_jit *j;

	if (!p->jit_maps && !p->jitdump)
		return;
	j = jit_of(s, p);
	if (j)
		refresh(s, p, j, force);
}

int tk_symbolizer__jit_file(const char *path)
{
	const char *base = tk_path_basename(path);
	size_t n;

	if (!strcmp(base, "libjvm.so"))
		return TK_JIT_FILE_JVM;
	if (strncmp(base, "jit-", 4))
		return 0;
	n = strspn(base + 4, "0123456789");
	return n && n <= 10 && !strcmp(base + 4 + n, ".dump") ? TK_JIT_FILE_JITDUMP : 0;
}

void tk_symbolizer__jit_stats(const struct sym_proc *p, struct tk_symbolizer_stats *st)
{
	struct tk_jitdump_stats ds;
	struct tk_perfmap_stats ps;

	if (!p->jit)
		return;
	if (p->jit->map) {
		tk_perfmap__stats(p->jit->map, &ps);
		st->jit_entries += ps.entries;
		st->jit_bad_lines += ps.bad + ps.over_limit;
		st->jit_overlapping += ps.overlapping;
	}
	if (p->jit->dump) {
		tk_jitdump__stats(p->jit->dump, &ds);
		st->jitdump_entries += ds.entries;
		st->jitdump_bad_records += ds.bad;
		st->jitdump_broken += ds.broken;
	}
}

void tk_symbolizer__free_jit(struct sym_proc *p)
{
	if (!p->jit)
		return;
	tk_perfmap__free(p->jit->map);
	tk_jitdump__free(p->jit->dump);
	free(p->jit);
	p->jit = NULL;
}
