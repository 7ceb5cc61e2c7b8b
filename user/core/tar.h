/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A gzipped tar (POSIX ustar) of one flat directory: what `tracekit record
 * --tar` writes, so that a capture is one file to copy off a host. Only what
 * is needed: a directory entry and its regular files, sorted by name.
 */
#ifndef __TK_TAR_H
#define __TK_TAR_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Write the regular files directly inside @dir (subdirectories, symlinks and
 * the like are refused: -EINVAL) to @fd as a gzip-compressed tar whose
 * entries are "@top/" and "@top/NAME", dated @mtime (unix seconds), mode
 * 0700 and 0600, owner 0. @top and every NAME must fit ustar's 100-byte name
 * field together (-ENAMETOOLONG). @fd stays open. 0 or a negative errno.
 */
int tk_tar__write_dir(int fd, const char *dir, const char *top, int64_t mtime);
/* The same, of the directory open as @dirfd (which stays open). */
int tk_tar__write_dirfd(int fd, int dirfd, const char *top, int64_t mtime);

/* The longest member name ustar's 100-byte name field holds (NUL-terminated). */
#define TK_TAR_NAME_MAX 99
/* Does the member "@top/@name" fit? (Checked before a capture, so none is lost for it.) */
bool tk_tar__name_fits(const char *top, const char *name);

#endif /* __TK_TAR_H */
