// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A gzipped ustar of one flat directory (tar.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/tar.h"

#define BLOCK 512

/* Octal, NUL-terminated, right-aligned in @len bytes (ustar's numeric fields). */
static int put_octal(char *field, size_t len, uint64_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%0*llo", (int)len - 1, (unsigned long long)v);

	if (n < 0 || (size_t)n >= len)
		return -ERANGE;
	memcpy(field, buf, (size_t)n + 1);
	return 0;
}

/* Why gzwrite() failed: write(2)'s errno (ENOSPC, EIO), or -EIO for zlib's own errors. */
static int gz_err(gzFile gz)
{
	int zerr, e = errno;

	gzerror(gz, &zerr);
	return zerr == Z_ERRNO && e ? -e : -EIO;
}

bool tk_tar__name_fits(const char *top, const char *name)
{
	return strlen(top) + 1 + strlen(name) <= TK_TAR_NAME_MAX;
}

static int header(gzFile gz, const char *name, char type, uint64_t size, unsigned int mode,
		  int64_t mtime)
{
	unsigned char h[BLOCK] = {};
	unsigned int sum = 0;
	size_t i;

	if (strlen(name) >= 100)
		return -ENAMETOOLONG;
	memcpy(h, name, strlen(name));
	if (put_octal((char *)h + 100, 8, mode) || put_octal((char *)h + 108, 8, 0) ||
	    put_octal((char *)h + 116, 8, 0) || put_octal((char *)h + 124, 12, size) ||
	    put_octal((char *)h + 136, 12, mtime > 0 ? (uint64_t)mtime : 0))
		return -ERANGE;
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar", 6);	/* magic "ustar\0", version "00" */
	memcpy(h + 263, "00", 2);
	memcpy(h + 265, "root", 4);
	memcpy(h + 297, "root", 4);
	/* the checksum is taken with its own field as eight spaces */
	memset(h + 148, ' ', 8);
	for (i = 0; i < BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	return gzwrite(gz, h, BLOCK) == BLOCK ? 0 : gz_err(gz);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_file(gzFile gz, int dfd, const char *top, const char *name, int64_t mtime)
{
	static const unsigned char zero[BLOCK];
	char entry[256], buf[65536];
	struct stat st;
	uint64_t left;
	ssize_t n;
	int fd, err;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	snprintf(entry, sizeof(entry), "%s/%s", top, name);
	err = header(gz, entry, '0', (uint64_t)st.st_size, 0600, mtime);
	for (left = (uint64_t)st.st_size; !err && left > 0; left -= (uint64_t)n) {
		n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;	/* it shrank while being read */
			break;
		}
		if (gzwrite(gz, buf, (unsigned int)n) != n)
			err = gz_err(gz);
	}
	if (!err && st.st_size % BLOCK &&
	    gzwrite(gz, zero, BLOCK - st.st_size % BLOCK) != BLOCK - st.st_size % BLOCK)
		err = gz_err(gz);
	close(fd);
	return err;
}

int tk_tar__write_dir(int fd, const char *dir, const char *top, int64_t mtime)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (dfd < 0)
		return -errno;
	err = tk_tar__write_dirfd(fd, dfd, top, mtime);
	close(dfd);
	return err;
}

int tk_tar__write_dirfd(int fd, int dir_fd, const char *top, int64_t mtime)
{
	static const unsigned char zero[2 * BLOCK];
	char **names = NULL, topdir[128];
	size_t nr = 0, cap = 0, i;
	struct dirent *de;
	gzFile gz = NULL;
	int dfd, gzfd = -1, err = 0;
	DIR *d;

	if (!top || !top[0] || strchr(top, '/') || strlen(top) >= sizeof(topdir) - 1)
		return -EINVAL;
	/* a descriptor of its own: closedir() closes it, @dir_fd stays the caller's */
	dfd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while ((de = readdir(d))) {
		char **grown;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (nr == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				err = -ENOMEM;
				goto out;
			}
			names = grown;
		}
		if (!(names[nr] = strdup(de->d_name))) {
			err = -ENOMEM;
			goto out;
		}
		nr++;
	}
	if (nr)
		qsort(names, nr, sizeof(*names), cmp_names);
	for (i = 0; i < nr; i++)
		if (!tk_tar__name_fits(top, names[i])) {
			err = -ENAMETOOLONG;
			goto out;
		}
	gzfd = dup(fd);
	if (gzfd < 0) {
		err = -errno;
		goto out;
	}
	gz = gzdopen(gzfd, "wb6");
	if (!gz) {
		close(gzfd);
		err = -ENOMEM;
		goto out;
	}
	snprintf(topdir, sizeof(topdir), "%s/", top);
	err = header(gz, topdir, '5', 0, 0700, mtime);
	for (i = 0; !err && i < nr; i++)
		err = add_file(gz, dirfd(d), top, names[i], mtime);
	/* the end: two zero blocks */
	if (!err && gzwrite(gz, zero, sizeof(zero)) != sizeof(zero))
		err = gz_err(gz);
out:
	if (gz) {
		errno = 0;
		if (gzclose(gz) != Z_OK && !err)
			err = errno ? -errno : -EIO;	/* Z_ERRNO: write(2)'s, ENOSPC */
	}
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return err;
}
