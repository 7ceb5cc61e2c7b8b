// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outfile.h"

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
		/* a device or a FIFO is written to as it is: there is nothing to rename */
		if (!S_ISREG(st.st_mode)) {
			fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			o->f = fdopen(fd, "w");
			if (!o->f) {
				int err = -errno;

				close(fd);
				return err;
			}
			return 0;
		}
	}
	for (tries = 0; tries < 100; tries++) {
		n = snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%d.%u", path, getpid(), seq++);
		if (n < 0 || n >= (int)sizeof(o->tmp))
			return -ENAMETOOLONG;
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
		/* stdout stays open; a device or FIFO is closed */
		err = fflush(o->f) || ferror(o->f) ? -EIO : 0;
		if (o->f != stdout && fclose(o->f) && !err)
			err = -EIO;
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
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp[0])
		unlink(o->tmp);
	o->f = NULL;
	o->tmp[0] = '\0';
}
