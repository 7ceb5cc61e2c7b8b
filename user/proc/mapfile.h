/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The file a process mapped, named by a path that reaches that very file
 * from tracekit's own mount namespace. /proc/PID/maps gives a mapping's path
 * as the process sees it, with the device and inode of its file; in another
 * root (a container's) the same path here is often another file, the host's
 * libc where the container has its own. Whatever opens or probes a mapped
 * file goes through here: the symbolizer, the process inspection, and the
 * allocator's uprobes (a uprobe sits on an inode: the host's file would be
 * probed at the container's offsets and never fire).
 */
#ifndef __TK_MAPFILE_H
#define __TK_MAPFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "proc/maps.h"

/* A file's identity as a maps line (or a perf MMAP2 record) gives it. */
struct tk_file_id {
	unsigned int dev_major, dev_minor;
	uint64_t ino;			/* 0: not known, nothing to check against */
};

static inline struct tk_file_id tk_map__id(const struct tk_map *m)
{
	return (struct tk_file_id){ m->dev_major, m->dev_minor, m->inode };
}

enum tk_mapfile_way {
	TK_MAPFILE_MAP_FILES = 1,	/* @proc_root/PID/map_files/START-END */
	TK_MAPFILE_ROOT,		/* @proc_root/PID/root/PATH */
	TK_MAPFILE_PATH,		/* PATH itself */
	TK_MAPFILE_EXE,			/* @proc_root/PID/exe, when it is the file */
};

struct tk_mapfile {
	char path[PATH_MAX + 64];	/* the way that found it: for messages and uprobes */
	/*
	 * Open this: "/proc/self/fd/N" of the file found and checked, held
	 * until tk_mapfile__release(), so that no later open finds another
	 * file (or a FIFO) put at the name meanwhile.
	 */
	char open_path[32];
	int fd;				/* that file, O_RDONLY; -1 when none */
	enum tk_mapfile_way way;
	struct stat st;			/* of path */
	/* with TK_MAPFILE_CHECK_HERE: PATH here is that file too */
	bool same_here;
};

enum tk_mapfile_flags {
	/* no identity known: PATH itself as the last way, unchecked */
	TK_MAPFILE_TRUST_PATH = 1 << 0,
	/* also tell whether PATH here is the same file (out->same_here) */
	TK_MAPFILE_CHECK_HERE = 1 << 1,
};

/*
 * The file @pid maps from @path (as its maps says, without " (deleted)") at
 * [@start, @end) (0, 0: no mapping known), of identity @id (NULL: unknown),
 * tried as
 *   1. @proc_root/PID/map_files/START-END: the very file, even deleted or in
 *      another mount namespace (needs CAP_SYS_ADMIN; a magic link that
 *      open(2), stat(2) and the kernel's uprobe attach all follow),
 *   2. @proc_root/PID/root/PATH: the process's view of its file system,
 *   3. @proc_root/PID/exe when @id is known and it is that file (the
 *      executable: a magic link as map_files, needing only ptrace read access
 *      to the process — what an unprivileged process has to its own, whose
 *      executable may lie below a directory it cannot search, as /root),
 *   4. PATH itself, only when @id is known (or with TK_MAPFILE_TRUST_PATH).
 * Each way counts only when the file it opens (no symlink of the process's
 * followed, no FIFO or device ever opened: core/untrusted.h) is a regular file
 * of @id's device and inode (on overlayfs, of its inode alone: seen on 6.18 with the upper layer
 * on another file system, maps gives a device that neither PID/root's stat,
 * a pseudo device of the lower layer, nor PID/map_files' gives). In a
 * fixture tree (@proc_root not "/proc") the maps line's identity is made up:
 * ways 1 and 2 are taken unchecked. Returns 0 with @out filled, -ESTALE when
 * a file was found but another one (the host's file of that name), or the
 * last error (-ENOENT, -EACCES, -ELOOP, ...). On success the file is held
 * open: call tk_mapfile__release().
 */
int tk_mapfile__find(const char *proc_root, int pid, uint64_t start, uint64_t end,
		     const char *path, const struct tk_file_id *id, unsigned int flags,
		     struct tk_mapfile *out);

/* Close what tk_mapfile__find() holds (out->fd); open_path is no more. */
void tk_mapfile__release(struct tk_mapfile *mf);

/* "map_files", "root", "exe", "path", for messages. */
const char *tk_mapfile_way__name(enum tk_mapfile_way w);

#endif /* __TK_MAPFILE_H */
