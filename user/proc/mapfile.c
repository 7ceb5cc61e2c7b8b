// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The file a process mapped, by a path that reaches it from here (mapfile.h).
 * A path is never taken on its name alone: stat() must find the device and
 * inode the maps line gives, or the next way is tried.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "core/fsutil.h"
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
	}
	return "?";
}

/* Is the file @st at @path the one @id names? */
static bool same_file(const char *path, const struct stat *st, const struct tk_file_id *id)
{
	struct statfs sf;

	if (st->st_ino != id->ino)
		return false;
	if (major(st->st_dev) == id->dev_major && minor(st->st_dev) == id->dev_minor)
		return true;
	/* an overlay's st_dev is its own or a pseudo device per layer, not the one maps gives */
	return !statfs(path, &sf) && sf.f_type == OVERLAYFS_MAGIC;
}

/*
 * Take @p as the way @w when it is a regular file and, when @check, @id's.
 * 0, -ESTALE (another file), or stat's error.
 */
static int try_way(const char *p, enum tk_mapfile_way w, const struct tk_file_id *id, bool check,
		   struct tk_mapfile *out)
{
	struct stat st;

	if (stat(p, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	if (check && !same_file(p, &st, id))
		return -ESTALE;
	if (p != out->path)
		copy_str(out->path, sizeof(out->path), p);
	out->way = w;
	out->st = st;
	return 0;
}

int tk_mapfile__find(const char *proc_root, int pid, uint64_t start, uint64_t end,
		     const char *path, const struct tk_file_id *id, unsigned int flags,
		     struct tk_mapfile *out)
{
	bool known = id && id->ino, live;
	int err = -ENOENT, e, stale = 0;
	char rel[96];

	memset(out, 0, sizeof(*out));
	if (!proc_root)
		proc_root = "/proc";
	live = is_live_proc(proc_root);
	if (path[0] != '/')
		return -EINVAL;
	if (end > start) {
		snprintf(rel, sizeof(rel), "%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
		e = tk_path_join(out->path, sizeof(out->path), proc_root, rel);
		if (!e && !(e = try_way(out->path, TK_MAPFILE_MAP_FILES, id, live && known, out)))
			goto found;
		stale |= e == -ESTALE;
		err = e;
	}
	e = tk_proc_root_path(out->path, sizeof(out->path), proc_root, pid, path);
	if (!e && !(e = try_way(out->path, TK_MAPFILE_ROOT, id, live && known, out)))
		goto found;
	stale |= e == -ESTALE;
	err = e;
	if (known || (flags & TK_MAPFILE_TRUST_PATH)) {
		e = try_way(path, TK_MAPFILE_PATH, id, known, out);
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
