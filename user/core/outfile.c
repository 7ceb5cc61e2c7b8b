// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outfile.h"

/* Digits only, no sign, no leading zero (as "%d"/"%u" print them); the end in *@end. */
static bool parse_decimal(const char *s, unsigned long long *v, const char **end)
{
	const char *p = s;

	if (!isdigit((unsigned char)*p) || (*p == '0' && isdigit((unsigned char)p[1])))
		return false;
	*v = 0;
	for (; isdigit((unsigned char)*p); p++) {
		*v = *v * 10 + (*p - '0');
		if (*v > 0xffffffffULL)
			return false;
	}
	*end = p;
	return true;
}

/* The writer's pid when @name is exactly "@base.tmp.PID.SEQ" (our own naming), else 0. */
static pid_t temp_name_pid(const char *name, const char *base, size_t base_len)
{
	unsigned long long pid, seq;
	const char *p;

	if (strncmp(name, base, base_len) || strncmp(name + base_len, ".tmp.", 5))
		return 0;
	p = name + base_len + 5;
	if (!parse_decimal(p, &pid, &p) || *p != '.' || !pid || pid > 0x7fffffff)
		return 0;
	if (!parse_decimal(p + 1, &seq, &p) || *p)
		return 0;
	return (pid_t)pid;
}

/*
 * Remove what a killed run (SIGKILL, a crash, a power cut) left of @path:
 * files named exactly as tk_outfile__open names them, regular, ours (uid),
 * whose writer is gone (kill(PID, 0) says ESRCH) and whose lock nobody holds.
 * The lock covers a writer whose pid this namespace cannot see: a live writer
 * holds it until its commit or abort. Anything else is left alone.
 */
static void remove_stale_temps(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base;
	struct dirent *de;
	size_t base_len;
	DIR *d;
	int dfd;

	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
		base = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = path;
	}
	base_len = strlen(base);
	if (!base_len)
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		pid_t pid = temp_name_pid(de->d_name, base, base_len);
		struct stat st, fst;
		int fd;

		if (!pid || pid == getpid() || !kill(pid, 0) || errno != ESRCH)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!fstat(fd, &fst) && fst.st_ino == st.st_ino && fst.st_dev == st.st_dev &&
		    !flock(fd, LOCK_EX | LOCK_NB))
			unlinkat(dfd, de->d_name, 0);
		close(fd);
	}
	closedir(d);
}

/*
 * A device or a FIFO is written to as it is: there is nothing to rename.
 * O_NONBLOCK first, because open(2) of a FIFO for writing waits for a reader,
 * forever if none comes: without one it fails at once with ENXIO. Writing
 * then blocks again, so a slow reader gets everything instead of EAGAIN.
 */
static int open_special(struct tk_outfile *o, const char *path)
{
	int fd, fl;

	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		int err = -errno;

		close(fd);
		return err;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = -errno;

		close(fd);
		return err;
	}
	return 0;
}

int tk_outfile__open(struct tk_outfile *o, const char *path)
{
	static unsigned int seq;
	struct stat st;
	int fd, tries, n;

	memset(o, 0, sizeof(*o));
	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		snprintf(o->path, sizeof(o->path), "-");
		return 0;
	}
	if (snprintf(o->path, sizeof(o->path), "%s", path) >= (int)sizeof(o->path))
		return -ENAMETOOLONG;
	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		/* never write through a link as root, and never replace one (/dev/stdout) */
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return open_special(o, path);
	}
	remove_stale_temps(path);
	for (tries = 0; tries < 100; tries++) {
		n = snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%d.%u", path, getpid(), seq++);
		if (n < 0 || n >= (int)sizeof(o->tmp))
			return -ENAMETOOLONG;
		/* 0600: profiles name paths and command lines; the rename keeps the mode */
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST) {
			int err = -errno;

			o->tmp[0] = '\0';
			return err;
		}
	}
	if (fd < 0) {
		o->tmp[0] = '\0';
		return -EEXIST;
	}
	/* held until commit or abort: a next run leaves a locked temporary file alone */
	flock(fd, LOCK_EX | LOCK_NB);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = -errno;

		close(fd);
		unlink(o->tmp);
		o->tmp[0] = '\0';
		return err;
	}
	return 0;
}

int tk_outfile__commit(struct tk_outfile *o)
{
	int err = 0;

	if (!o->f)
		return -EINVAL;
	if (!o->tmp[0]) {
		/* stdout stays open; a device or FIFO is closed. -EPIPE: its reader has gone */
		errno = 0;
		if (fflush(o->f) || ferror(o->f))
			err = errno ? -errno : -EIO;
		if (o->f != stdout && fclose(o->f) && !err)
			err = errno ? -errno : -EIO;
		o->f = NULL;
		return err;
	}
	errno = 0;
	if (fflush(o->f) || ferror(o->f) || fsync(fileno(o->f)))
		err = errno ? -errno : -EIO;
	if (fclose(o->f) && !err)
		err = errno ? -errno : -EIO;
	o->f = NULL;
	/* rename(2) replaces a symlink at the target; it never writes through it */
	if (!err && rename(o->tmp, o->path))
		err = -errno;
	if (err)
		unlink(o->tmp);
	o->tmp[0] = '\0';
	return err;
}

void tk_outfile__abort(struct tk_outfile *o)
{
	if (o->tmp[0])
		unlink(o->tmp);
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	o->tmp[0] = '\0';
}
