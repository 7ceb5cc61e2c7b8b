// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"

int tk_path_join(char *buf, size_t size, const char *root, const char *rel)
{
	int n;

	while (*rel == '/')
		rel++;
	if (!root || !*root)
		root = "/";
	n = snprintf(buf, size, "%s%s%s", root, root[strlen(root) - 1] == '/' ? "" : "/", rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

long tk_read_file(const char *root, const char *rel, char *buf, size_t size)
{
	char path[4096];
	size_t off = 0;
	int fd, err;

	if (size == 0)
		return -EINVAL;
	buf[0] = '\0';
	err = tk_path_join(path, sizeof(path), root, rel);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < size - 1) {
		ssize_t n = read(fd, buf + off, size - 1 - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			buf[0] = '\0';
			return err;
		}
		if (n == 0)
			break;
		off += n;
	}
	buf[off] = '\0';
	close(fd);
	return off;
}

int tk_read_file_alloc(const char *root, const char *rel, size_t limit, char **out, size_t *len)
{
	char path[4096];
	size_t cap = 4096, off = 0;
	char *buf, *nb;
	int fd, err;

	*out = NULL;
	if (len)
		*len = 0;
	err = tk_path_join(path, sizeof(path), root, rel);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (off + 1 >= cap) {
			if (cap >= limit) {
				/* a cut file would be misread: say it is too big */
				err = -EFBIG;
				goto fail;
			}
			cap = cap * 2 > limit ? limit : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + off, cap - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		off += n;
	}
	close(fd);
	buf[off] = '\0';
	*out = buf;
	if (len)
		*len = off;
	return 0;
fail:
	close(fd);
	free(buf);
	return err;
}

int tk_read_long(const char *root, const char *rel, long *val)
{
	char buf[64], *end;
	long n = tk_read_file(root, rel, buf, sizeof(buf));

	if (n < 0)
		return n;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -EINVAL;
	return 0;
}

bool tk_path_exists(const char *root, const char *rel)
{
	char path[4096];

	if (tk_path_join(path, sizeof(path), root, rel))
		return false;
	return access(path, F_OK) == 0;
}

const char *tk_path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

char *tk_rstrip(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

bool tk_status_field(const char *text, const char *name, char *out, size_t size)
{
	size_t nlen = strlen(name);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, name, nlen) && p[nlen] == ':') {
			const char *v = p + nlen + 1, *e;

			while (*v == ' ' || *v == '\t')
				v++;
			e = strchr(v, '\n');
			snprintf(out, size, "%.*s", e ? (int)(e - v) : (int)strlen(v), v);
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

int tk_find_command(const char *cmd, char *buf, size_t size)
{
	const char *path, *p;

	if (strchr(cmd, '/')) {
		if (snprintf(buf, size, "%s", cmd) >= (int)size)
			return -ENAMETOOLONG;
		return access(buf, X_OK) ? -errno : 0;
	}
	path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p;) {
		const char *end = strchrnul(p, ':');
		int n = (int)(end - p);

		/* an empty entry is the current directory, as for execvp */
		if (snprintf(buf, size, "%.*s/%s", n ? n : 1, n ? p : ".", cmd) < (int)size &&
		    !access(buf, X_OK))
			return 0;
		p = *end ? end + 1 : end;
	}
	return -ENOENT;
}

void tk_remove_flat_dir_at(int parent_fd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd;

	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(fd, de->d_name, 0);
	closedir(d);
	unlinkat(parent_fd, name, AT_REMOVEDIR);
}
