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
 * The file is outside input, and so is where it points: it is opened as
 * another user's file is (core/untrusted.h): inside the process's root, no
 * symlink followed, no mount over it, checked before it is opened (a
 * regular file, owned by root or by the process's user as perf asks, without
 * another name when root's), so a FIFO or a device there is never opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/untrusted.h"
#include "sym/symbolize_state.h"

#define NSEC_PER_SEC 1000000000LL
#define READ_CHUNK (1u << 20)		/* bigger than a line (TK_PERFMAP_MAX_LINE) */
#define READ_MAX (512ull << 20)		/* bytes read of one file, in all */

struct sym_jit {
	struct tk_perfmap *map;		/* NULL: no file seen yet */
	const char *module;		/* "[perf-NSPID.map]", interned */
	int64_t checked_ns;		/* last look at the file */
	uint64_t dev, ino;		/* the file read */
	uint64_t size;			/* its size then */
	uint64_t off;			/* bytes of it parsed (whole lines) */
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

/* Read @p's file if it is new or grew since the last look, at most once a second. */
static void refresh(struct tk_symbolizer *s, struct sym_proc *p, struct sym_jit *j)
{
	int64_t now = now_ns();
	struct stat st;
	int fd;

	if (j->checked_ns && now - j->checked_ns < NSEC_PER_SEC)
		return;
	j->checked_ns = now;
	fd = open_map(s, p, &st);
	if (fd < 0)
		return;
	if (j->map && (st.st_dev != j->dev || st.st_ino != j->ino || (uint64_t)st.st_size < j->off)) {
		/* another file, or one written anew: start over */
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
		s->st.jit_files++;
	}
	j->size = st.st_size;
	read_more(j, fd, j->size);
out:
	close(fd);
}

int tk_symbolizer__jit(struct tk_symbolizer *s, struct sym_proc *p, uint64_t addr,
		       struct tk_sym_frame *out)
{
	struct sym_jit *j = p->jit;
	uint64_t start, size;
	const char *name;
	char mod[48];

	if (!j) {
		tk_symbolizer__learn_ns(s, p);
		if (!p->ns_known)
			return -ESRCH;
		j = calloc(1, sizeof(*j));
		if (!j)
			return -ESRCH;
		snprintf(mod, sizeof(mod), "[perf-%u.map]", p->nspid);
		j->module = tk_strset__intern(&s->strings, mod);
		if (!j->module) {
			free(j);
			return -ESRCH;
		}
		p->jit = j;
	}
	refresh(s, p, j);
	if (!j->map)
		return -ESRCH;
	name = tk_perfmap__find(j->map, addr, &start, &size);
	if (!name)
		return -ESRCH;
	memset(out, 0, sizeof(*out));
	out->function = name;
	out->module = j->module;
	tk_perfmap__span(j->map, &out->map_start, &out->map_limit);
	out->module_offset = addr - out->map_start;
	return 0;
}

void tk_symbolizer__jit_stats(const struct sym_proc *p, struct tk_symbolizer_stats *st)
{
	struct tk_perfmap_stats ps;

	if (!p->jit || !p->jit->map)
		return;
	tk_perfmap__stats(p->jit->map, &ps);
	st->jit_entries += ps.entries;
	st->jit_bad_lines += ps.bad + ps.over_limit;
	st->jit_overlapping += ps.overlapping;
}

void tk_symbolizer__free_jit(struct sym_proc *p)
{
	if (!p->jit)
		return;
	tk_perfmap__free(p->jit->map);
	free(p->jit);
	p->jit = NULL;
}
