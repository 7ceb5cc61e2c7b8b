// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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
static void remove_stale_temps(int dirfd, const char *base)
{
	size_t base_len = strlen(base);
	struct dirent *de;
	DIR *d;
	int dfd;

	if (!base_len)
		return;
	dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
 * A device or a FIFO is written to as it is: there is nothing to rename. But
 * only one of the caller's (or root's): a FIFO another user made at the name
 * (in /tmp, say) with its reader waiting is refused (-EPERM), since writing
 * there would hand the profile to that user (protected_fifos covers only
 * O_CREAT opens). It is looked at without being opened (O_PATH), then opened
 * through /proc/self/fd: the very file checked. O_NONBLOCK first, because
 * open(2) of a FIFO for writing waits for a reader, forever if none comes:
 * without one it fails at once with ENXIO. Writing then blocks again, so a
 * slow reader gets everything instead of EAGAIN. 1: it is a regular file
 * after all (it changed meanwhile): the caller takes the temporary file way.
 */
static int open_special(struct tk_outfile *o)
{
	char self[64];
	struct stat st;
	int pfd, fd, fl, err;

	pfd = openat(o->dfd, o->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 1 : -errno;
	if (fstat(pfd, &st)) {
		err = -errno;
		goto out;
	}
	err = S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR :
	      S_ISREG(st.st_mode) ? 1 : st.st_uid != geteuid() && st.st_uid ? -EPERM : 0;
	if (err)
		goto out;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		err = -errno;
		close(fd);
		goto out;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		err = -errno;
		close(fd);
	}
out:
	close(pfd);
	return err;
}

/* A number to start the temporary names at: not guessable, so not taken in advance. */
static unsigned int first_seq(void)
{
	unsigned int v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (unsigned int)getpid() * 2654435761u ^ (unsigned int)time(NULL);
	return v % 1000000000u;
}

static void close_dir(struct tk_outfile *o)
{
	if (o->has_dir)
		close(o->dfd);
	o->has_dir = false;
	o->dfd = -1;
}

/* The target o->name in the directory o->dfd (held); o->path names it in messages. */
static int open_in_dir(struct tk_outfile *o)
{
	static unsigned int seq;
	static bool seq_set;
	struct stat st;
	int fd = -1, tries, err;

	if (fstatat(o->dfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		err = 0;
		if (S_ISDIR(st.st_mode)) {
			err = -EISDIR;
		} else if (S_ISLNK(st.st_mode)) {
			/* never write through a link as root, nor replace one (/dev/stdout) */
			err = -ELOOP;
		} else if (!S_ISREG(st.st_mode)) {
			err = open_special(o);
			if (!err)
				return 0;	/* a FIFO or device of ours, open and held */
			if (err == 1)
				err = 0;	/* a regular file after all */
		}
		if (err) {
			close_dir(o);
			return err;
		}
	}
	remove_stale_temps(o->dfd, o->name);
	if (!seq_set) {
		seq = first_seq();
		seq_set = true;
	}
	for (tries = 0; tries < 100; tries++) {
		if (snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%d.%u", o->path, getpid(), seq) >=
		    (int)sizeof(o->tmp) ||
		    snprintf(o->tmp_name, sizeof(o->tmp_name), "%s.tmp.%d.%u", o->name, getpid(),
			     seq++) >= (int)sizeof(o->tmp_name)) {
			o->tmp[0] = '\0';
			close_dir(o);
			return -ENAMETOOLONG;
		}
		/* 0600: profiles name paths and command lines; the rename keeps the mode */
		fd = openat(o->dfd, o->tmp_name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST) {
			err = -errno;
			o->tmp[0] = '\0';
			close_dir(o);
			return err;
		}
	}
	if (fd < 0) {
		o->tmp[0] = '\0';
		close_dir(o);
		return -EEXIST;
	}
	/* held until commit or abort: a next run leaves a locked temporary file alone */
	flock(fd, LOCK_EX | LOCK_NB);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		err = -errno;
		close(fd);
		unlinkat(o->dfd, o->tmp_name, 0);
		o->tmp[0] = '\0';
		close_dir(o);
		return err;
	}
	return 0;
}

int tk_outfile__open(struct tk_outfile *o, const char *path)
{
	const char *slash;
	char dir[PATH_MAX];

	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		snprintf(o->path, sizeof(o->path), "-");
		return 0;
	}
	if (snprintf(o->path, sizeof(o->path), "%s", path) >= (int)sizeof(o->path))
		return -ENAMETOOLONG;
	slash = strrchr(path, '/');
	if (slash && !slash[1])
		return -EISDIR;
	if (snprintf(o->name, sizeof(o->name), "%s", slash ? slash + 1 : path) >=
	    (int)sizeof(o->name))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
		 slash ? path : ".");
	/* the directory is held: the file, its temporary and the rename are all in this one */
	o->dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->dfd < 0)
		return -errno;
	o->has_dir = true;
	return open_in_dir(o);
}

int tk_outfile__openat(struct tk_outfile *o, int dirfd, const char *name, const char *shown)
{
	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (snprintf(o->name, sizeof(o->name), "%s", name) >= (int)sizeof(o->name) ||
	    snprintf(o->path, sizeof(o->path), "%s", shown ? shown : name) >= (int)sizeof(o->path))
		return -ENAMETOOLONG;
	o->dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (o->dfd < 0)
		return -errno;
	o->has_dir = true;
	return open_in_dir(o);
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
		close_dir(o);
		return err;
	}
	errno = 0;
	if (fflush(o->f) || ferror(o->f) || fsync(fileno(o->f)))
		err = errno ? -errno : -EIO;
	if (fclose(o->f) && !err)
		err = errno ? -errno : -EIO;
	o->f = NULL;
	/*
	 * In the directory held since the open. renameat(2) replaces whatever
	 * is at the name now (a symlink, a FIFO another user put there
	 * meanwhile, a file of theirs): it never writes through it.
	 */
	if (!err && renameat(o->dfd, o->tmp_name, o->dfd, o->name))
		err = -errno;
	if (err)
		unlinkat(o->dfd, o->tmp_name, 0);
	o->tmp[0] = '\0';
	close_dir(o);
	return err;
}

void tk_outfile__abort(struct tk_outfile *o)
{
	if (o->tmp[0] && o->has_dir)
		unlinkat(o->dfd, o->tmp_name, 0);
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	o->tmp[0] = '\0';
	close_dir(o);
}
