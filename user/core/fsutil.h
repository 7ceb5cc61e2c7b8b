/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Reading small files under a root ("/proc", "/sys", or a fixture tree). */
#ifndef __TK_FSUTIL_H
#define __TK_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Join @root and @rel ("/proc" + "sys/kernel/x") into @buf. Returns 0 or
 * -ENAMETOOLONG.
 */
int tk_path_join(char *buf, size_t size, const char *root, const char *rel);

/*
 * Read at most @size - 1 bytes of @root/@rel into @buf and NUL-terminate it.
 * Returns the byte count or a negative errno (-ENOENT, -EACCES, ...).
 */
long tk_read_file(const char *root, const char *rel, char *buf, size_t size);

/*
 * Read a whole file of unknown size (for /proc files that report st_size 0)
 * into a malloc'ed NUL-terminated buffer, at most @limit bytes. Returns 0 or a
 * negative errno (-EFBIG when the file is larger than @limit); *@len gets the
 * length without the NUL.
 */
int tk_read_file_alloc(const char *root, const char *rel, size_t limit, char **out, size_t *len);

/* Read a file holding one integer (sysctl style). Returns 0 or a negative errno. */
int tk_read_long(const char *root, const char *rel, long *val);

/* True when @root/@rel exists (any type). */
bool tk_path_exists(const char *root, const char *rel);

/*
 * Copy the value of field "@name:" of a /proc status-style text (one
 * "Name:<spaces or tabs>value" per line) into @out. Returns false if absent.
 */
bool tk_status_field(const char *text, const char *name, char *out, size_t size);

/* Base name of a path ("/a/b.so" → "b.so"); the path itself when it ends in '/'. */
const char *tk_path_basename(const char *path);

/* Strip trailing whitespace in place; return @s. */
char *tk_rstrip(char *s);

/*
 * @cmd as execvp would find it (through $PATH, or as given when it holds a
 * '/') into @buf. Returns 0, -ENOENT, -ENAMETOOLONG or access(2)'s errno.
 */
int tk_find_command(const char *cmd, char *buf, size_t size);

/*
 * Remove the directory @name under @parent_fd (AT_FDCWD: a path) and the files
 * directly in it; nothing below is followed (a private directory of ours that
 * holds files only). Errors are ignored: what remains stays.
 */
void tk_remove_flat_dir_at(int parent_fd, const char *name);

/* The value of hex digit @c, or -1 (the parsers of /proc's and kallsyms' addresses). */
static inline int tk_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif /* __TK_FSUTIL_H */
