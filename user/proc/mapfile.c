// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The file a process mapped, by a path that reaches it from here (mapfile.h).
 * A path is never taken on its name alone: the file it opens (as another
 * user's file is opened, core/untrusted.h) must have the device and inode the
 * maps line gives, or the next way is tried; the file found is held open.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/untrusted.h"
#include "proc/mapfile.h"
#include "proc/procinfo_int.h"

#define OVERLAYFS_MAGIC 0x794c7630

const char *tk_mapfile_way__name(enum tk_mapfile_way w)
{
	switch (w) {
	case TK_MAPFILE_MAP_FILES:
		return "map_files";
	case TK_MAPFILE_ROOT:
		return "root";
	case TK_MAPFILE_PATH:
		return "path";
	case TK_MAPFILE_EXE:
		return "exe";
	}
	return "?";
}

/* Is the file @st, open as @fd, the one @id names? */
static bool same_file(int fd, const struct stat *st, const struct tk_file_id *id)
{
	struct statfs sf;

	if (st->st_ino != id->ino)
		return false;
	if (major(st->st_dev) == id->dev_major && minor(st->st_dev) == id->dev_minor)
		return true;
	/* an overlay's st_dev is its own or a pseudo device per layer, not the one maps gives */
	return !fstatfs(fd, &sf) && sf.f_type == OVERLAYFS_MAGIC;
}

/*
 * Open the way @w to @path (out->path already names it for messages): the
 * file is opened as another user's (core/untrusted.h) and checked before it
 * is read — regular, never a FIFO or a device, and the one @id names when
 * @check — and held (out->fd), so what is read later is that very file.
 * 0, -ESTALE (another file), or the open's error.
 */
static int try_way(const char *proc_root, int pid, const char *path, enum tk_mapfile_way w,
		   const struct tk_file_id *id, bool check, bool live, struct tk_mapfile *out)
{
	/* the map_files link is the kernel's own to the mapped file: followed */
	struct tk_open_rules r = { .flags = TK_OPEN_ANY_OWNER | TK_OPEN_ANY_NAME };
	struct stat st;
	char rel[32], root[PATH_MAX];
	int fd, rfd;

	if (w == TK_MAPFILE_ROOT && live) {
		/* the process's own view: no symlink of it followed, no mount over the file */
		snprintf(rel, sizeof(rel), "%d/root", pid);
		if (tk_path_join(root, sizeof(root), proc_root, rel))
			return -ENAMETOOLONG;
		rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rfd < 0)
			return -errno;
		r.flags = TK_OPEN_ANY_OWNER | TK_OPEN_IN_ROOT;
		fd = tk_open_untrusted(rfd, path, &r, &st);
		close(rfd);
	} else if (w == TK_MAPFILE_PATH) {
		/* maps' paths have no symlink in them (the kernel's d_path) */
		r.flags = TK_OPEN_ANY_OWNER;
		fd = tk_open_untrusted_path(path, &r, &st);
	} else {
		/* map_files, exe; a fixture tree's PID/root (nothing there is another user's) */
		fd = tk_open_untrusted(AT_FDCWD, out->path, &r, &st);
	}
	if (fd < 0)
		return fd == -ENODEV || fd == -EISDIR ? -ENOEXEC : fd;
	if (check && !same_file(fd, &st, id)) {
		close(fd);
		return -ESTALE;
	}
	out->way = w;
	out->st = st;
	out->fd = fd;
	snprintf(out->open_path, sizeof(out->open_path), "/proc/self/fd/%d", fd);
	return 0;
}

void tk_mapfile__release(struct tk_mapfile *mf)
{
	if (mf->fd >= 0)
		close(mf->fd);
	mf->fd = -1;
	mf->open_path[0] = '\0';
}

int tk_mapfile__find(const char *proc_root, int pid, uint64_t start, uint64_t end,
		     const char *path, const struct tk_file_id *id, unsigned int flags,
		     struct tk_mapfile *out)
{
	bool known = id && id->ino, live;
	int err = -ENOENT, e, stale = 0;
	char rel[96];

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (!proc_root)
		proc_root = "/proc";
	live = is_live_proc(proc_root);
	if (path[0] != '/')
		return -EINVAL;
	if (end > start) {
		snprintf(rel, sizeof(rel), "%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
		e = tk_path_join(out->path, sizeof(out->path), proc_root, rel);
		if (!e && !(e = try_way(proc_root, pid, path, TK_MAPFILE_MAP_FILES, id,
					live && known, live, out)))
			goto found;
		stale |= e == -ESTALE;
		err = e;
	}
	e = tk_proc_root_path(out->path, sizeof(out->path), proc_root, pid, path);
	if (!e && !(e = try_way(proc_root, pid, path, TK_MAPFILE_ROOT, id, live && known, live,
				out)))
		goto found;
	stale |= e == -ESTALE;
	err = e;
	if (live && known) {
		snprintf(rel, sizeof(rel), "%d/exe", pid);
		e = tk_path_join(out->path, sizeof(out->path), proc_root, rel);
		/* another file than the mapping's is no finding: the next way is tried */
		if (!e && !(e = try_way(proc_root, pid, path, TK_MAPFILE_EXE, id, true, live, out)))
			goto found;
	}
	if (known || (flags & TK_MAPFILE_TRUST_PATH)) {
		copy_str(out->path, sizeof(out->path), path);
		e = try_way(proc_root, pid, path, TK_MAPFILE_PATH, id, known, live, out);
		if (!e)
			goto found;
		stale |= e == -ESTALE;
		err = e;
	}
	out->path[0] = '\0';
	return stale ? -ESTALE : err;
found:
	if (flags & TK_MAPFILE_CHECK_HERE) {
		struct stat st;

		out->same_here = out->way == TK_MAPFILE_PATH ||
				 (!stat(path, &st) && st.st_dev == out->st.st_dev &&
				  st.st_ino == out->st.st_ino);
	}
	return 0;
}
