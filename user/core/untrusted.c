// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Opening a file whose name another user controls (untrusted.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/untrusted.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x1000U
#endif

/* openat2 answers EAGAIN when a rename raced a RESOLVE_IN_ROOT/BENEATH walk: try again */
#define RETRIES 8

static int sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = { .flags = (unsigned long long)flags, .resolve = resolve };
	int fd, i;

	for (i = 0; i < RETRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : fd;
}

static unsigned long long root_resolve(unsigned int flags)
{
	return (flags & TK_OPEN_IN_ROOT ? RESOLVE_IN_ROOT : 0) |
	       (flags & TK_OPEN_BENEATH ? RESOLVE_BENEATH : 0);
}

/*
 * With openat2: the directories (no symlink unless FOLLOW, no magic link,
 * mounts allowed), then the last part alone, on the directory's mount. An
 * O_PATH descriptor or -errno; -ENOSYS when the kernel has no openat2.
 */
static int resolve_openat2(int dirfd, const char *path, unsigned int flags)
{
	unsigned long long res = RESOLVE_NO_MAGICLINKS | root_resolve(flags);
	const char *slash = strrchr(path, '/'), *base;
	char dir[PATH_MAX];
	int dfd, fd;

	if (flags & TK_OPEN_FOLLOW)
		return sys_openat2(dirfd, path, O_PATH | O_CLOEXEC, res);
	res |= RESOLVE_NO_SYMLINKS;
	if (!slash) {
		base = path;
		dfd = sys_openat2(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, res);
	} else {
		base = slash + 1;
		if ((size_t)(slash - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		dfd = sys_openat2(dirfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, res);
	}
	if (dfd < 0)
		return dfd;
	if (!*base) {
		/* "dir/": the directory itself */
		return dfd;
	}
	fd = sys_openat2(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV |
			 RESOLVE_BENEATH);
	close(dfd);
	return fd;
}

static int mount_id(int fd, uint64_t *id)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	*id = stx.stx_mnt_id;
	return 0;
}

/*
 * Without openat2: one part at a time, O_PATH|O_NOFOLLOW, so that no symlink
 * is followed at all; ".." is refused (it could leave the root), and the last
 * part must be on its directory's mount. An O_PATH descriptor or -errno.
 */
static int resolve_walk(int dirfd, const char *path, unsigned int flags)
{
	bool rooted = flags & (TK_OPEN_IN_ROOT | TK_OPEN_BENEATH);
	const char *p = path, *end;
	char part[NAME_MAX + 1];
	uint64_t a, b;
	struct stat st;
	int cur, next, err;

	if (*p == '/' && (flags & TK_OPEN_BENEATH))
		return -EXDEV;
	if (*p == '/' && !rooted)
		cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (dirfd == AT_FDCWD)
		cur = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return -errno;
	for (;;) {
		bool last;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			return cur;	/* a directory: the caller refuses it */
		end = strchrnul(p, '/');
		n = end - p;
		last = !*end;
		if (n > NAME_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		p = end;
		if (!strcmp(part, "."))
			continue;
		if (!strcmp(part, "..")) {
			err = -EXDEV;
			goto fail;
		}
		next = openat(cur, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			err = -errno;
			goto fail;
		}
		if (fstat(next, &st)) {
			err = -errno;
			close(next);
			goto fail;
		}
		if (S_ISLNK(st.st_mode) || (!last && !S_ISDIR(st.st_mode))) {
			err = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
			close(next);
			goto fail;
		}
		if (last) {
			err = mount_id(cur, &a) ?: mount_id(next, &b);
			if (!err && a != b)
				err = -EXDEV;
			close(cur);
			if (err && err != -EOPNOTSUPP) {
				close(next);
				return err;
			}
			return next;
		}
		close(cur);
		cur = next;
	}
fail:
	close(cur);
	return err;
}

static bool is_owner(const struct tk_open_rules *r, uid_t uid)
{
	int i;

	for (i = 0; i < r->nr_owners && i < 2; i++)
		if (r->owners[i] == uid)
			return true;
	return false;
}

/* May @st be read under @r? 0 or the negative errno untrusted.h lists. */
static int check(const struct stat *st, const struct tk_open_rules *r)
{
	bool owner = is_owner(r, st->st_uid);

	if (S_ISLNK(st->st_mode))
		return -ELOOP;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -ENODEV;
	if (r->flags & TK_OPEN_READABLE) {
		if (!(owner && (st->st_mode & S_IRUSR)) && !(st->st_mode & S_IROTH))
			return -EPERM;
	} else if (!(r->flags & TK_OPEN_ANY_OWNER) && !owner && st->st_uid != 0) {
		return -EPERM;
	}
	if ((r->flags & TK_OPEN_ONE_LINK) && !owner && st->st_nlink > 1)
		return -EMLINK;
	if (r->max_size && (uint64_t)st->st_size > r->max_size)
		return -EFBIG;
	return 0;
}

int tk_open_untrusted(int dirfd, const char *path, const struct tk_open_rules *r, struct stat *st)
{
	static const struct tk_open_rules none;
	struct stat pst, fst;
	char self[64];
	int pfd, fd, err;

	if (!r)
		r = &none;
	if (!path || !*path ||
	    ((r->flags & (TK_OPEN_IN_ROOT | TK_OPEN_BENEATH)) && dirfd == AT_FDCWD))
		return -EINVAL;
	if (r->flags & TK_OPEN_ANY_NAME) {
		pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			pfd = -errno;
	} else {
		pfd = -ENOSYS;
		if (!(r->flags & TK_OPEN_NO_OPENAT2))
			pfd = resolve_openat2(dirfd, path, r->flags);
		/* no openat2, or a seccomp filter that refuses it (older container runtimes: EPERM) */
		if (pfd == -ENOSYS || pfd == -EPERM)
			pfd = resolve_walk(dirfd, path, r->flags);
	}
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &pst)) {
		err = -errno;
		goto out;
	}
	err = check(&pst, r);
	if (err)
		goto out;
	/* the file checked, never its name again; a regular file: its open does nothing */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (fstat(fd, &fst) || fst.st_dev != pst.st_dev || fst.st_ino != pst.st_ino) {
		close(fd);
		err = -ESTALE;
		goto out;
	}
	close(pfd);
	if (st)
		*st = pst;
	return fd;
out:
	close(pfd);
	return err;
}

int tk_open_untrusted_path(const char *path, const struct tk_open_rules *r, struct stat *st)
{
	if (r && (r->flags & (TK_OPEN_IN_ROOT | TK_OPEN_BENEATH)))
		return -EINVAL;
	if (!path || path[0] != '/')
		return -EINVAL;
	return tk_open_untrusted(AT_FDCWD, path, r, st);
}

int tk_open_regular(const char *path, struct stat *st)
{
	static const struct tk_open_rules r = { .flags = TK_OPEN_ANY_NAME | TK_OPEN_ANY_OWNER };

	return tk_open_untrusted(AT_FDCWD, path, &r, st);
}
