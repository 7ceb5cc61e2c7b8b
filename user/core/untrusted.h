/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Opening, as root, a file whose name another user controls: a path inside a
 * process's root (/proc/PID/root/...), in /tmp, or named by the process itself
 * (a perf map, a library path in a heap dump, a debug file next to a
 * library). Such a name may be a symlink to /etc/shadow, a FIFO whose writer
 * waits for a reader, a device that acts when opened (/dev/watchdog arms), a
 * bind mount of a file the user could not read, or any of these swapped in
 * between a check and an open. tk_open_untrusted() is the one way tracekit
 * opens them:
 *
 *   1. the name is resolved to an O_PATH descriptor (which opens nothing: no
 *      FIFO end, no device's open) by openat2(2) with RESOLVE_NO_MAGICLINKS
 *      and, unless TK_OPEN_FOLLOW, RESOLVE_NO_SYMLINKS; with a root,
 *      RESOLVE_IN_ROOT or RESOLVE_BENEATH. The directories may cross mounts
 *      (a /tmp or a container's volume of its own); the file itself may not
 *      (RESOLVE_NO_XDEV for the last part: a bind mount over the name is
 *      refused);
 *   2. that descriptor is checked with fstat(2): a regular file, whose owner
 *      is one the caller expects (or root), at most the size asked;
 *   3. only then is it opened for reading, through /proc/self/fd/N:
 *      O_RDONLY|O_NOCTTY|O_NONBLOCK|O_CLOEXEC — the very file checked, never
 *      the name again.
 *
 * Kernels without openat2 (before 5.6; tracekit supports 5.8 and later, but
 * a seccomp filter may refuse it, with ENOSYS or, in older container
 * runtimes' profiles, EPERM): the name is walked one part at
 * a time with O_PATH|O_NOFOLLOW, so no symlink is followed at all (with
 * TK_OPEN_FOLLOW too), ".." is refused, and the file's mount is compared with
 * its directory's (statx STATX_MNT_ID, 5.8+).
 */
#ifndef __TK_UNTRUSTED_H
#define __TK_UNTRUSTED_H

#include <stdint.h>
#include <sys/stat.h>

enum tk_open_flags {
	/* @dirfd is the root: "/" and ".." stay inside it (RESOLVE_IN_ROOT) */
	TK_OPEN_IN_ROOT = 1 << 0,
	/* the name may not leave @dirfd at all (RESOLVE_BENEATH) */
	TK_OPEN_BENEATH = 1 << 1,
	/*
	 * Symlinks are followed (never magic links, never out of the root with
	 * TK_OPEN_IN_ROOT or TK_OPEN_BENEATH); the last part may then be on
	 * another mount. Without it any symlink is -ELOOP.
	 */
	TK_OPEN_FOLLOW = 1 << 2,
	/* any owner (the caller checked the file's identity otherwise) */
	TK_OPEN_ANY_OWNER = 1 << 3,
	/*
	 * Not root's say but the owners': a file one of @owners could read by
	 * its mode bits — theirs with S_IRUSR, or anyone's with S_IROTH. Root's
	 * private files are refused.
	 */
	TK_OPEN_READABLE = 1 << 4,
	/* a file of another owner than @owners with other names (hard links) is refused */
	TK_OPEN_ONE_LINK = 1 << 5,
	/* tests: the walk of kernels without openat2 */
	TK_OPEN_NO_OPENAT2 = 1 << 6,
	/*
	 * The name is the caller's, not another user's (a /proc/PID/map_files
	 * link, /proc/PID/exe, a path given on the command line): resolved as
	 * open(2) resolves it, magic links too. Only the file is checked: still
	 * never a FIFO, a device or a socket.
	 */
	TK_OPEN_ANY_NAME = 1 << 7,
};

struct tk_open_rules {
	unsigned int flags;		/* enum tk_open_flags */
	uint32_t owners[2];		/* the owners accepted (besides root, unless READABLE) */
	int nr_owners;
	uint64_t max_size;		/* 0: any */
};

/*
 * Open @path (relative to @dirfd, or inside it with TK_OPEN_IN_ROOT /
 * TK_OPEN_BENEATH; AT_FDCWD allowed without them) for reading, as the top of
 * this file says, under @r (NULL: symlinks refused, root's files only). The
 * file's stat into @st (may be NULL). Returns the descriptor, or a negative
 * errno: -ELOOP a symlink (or a magic link), -EXDEV a mount crossed by the
 * file or a name leaving the root, -EISDIR a directory, -ENODEV not a regular
 * file (a FIFO, device or socket: never opened), -EPERM an owner not
 * accepted, -EMLINK other names (TK_OPEN_ONE_LINK), -EFBIG larger than
 * @r->max_size, or what openat2(2) and open(2) say (-ENOENT, -EACCES...).
 */
int tk_open_untrusted(int dirfd, const char *path, const struct tk_open_rules *r, struct stat *st);

/*
 * An absolute @path as-is, under @r (TK_OPEN_IN_ROOT and TK_OPEN_BENEATH make
 * no sense here and are refused: -EINVAL). Same returns.
 */
int tk_open_untrusted_path(const char *path, const struct tk_open_rules *r, struct stat *st);

/*
 * A regular file at @path, whatever its owner, resolved as open(2) does
 * (TK_OPEN_ANY_NAME | TK_OPEN_ANY_OWNER): for a name the caller chose, or
 * whose identity it checks, that must still never open a FIFO or a device.
 * Same returns.
 */
int tk_open_regular(const char *path, struct stat *st);

#endif /* __TK_UNTRUSTED_H */
