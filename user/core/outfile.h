/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Output files written whole or not at all: data goes to a new temporary file
 * beside the target, "PATH.tmp.PID.SEQ" (SEQ starting at a random number;
 * O_EXCL|O_NOFOLLOW, so no symlink, FIFO or file another user put at that
 * name is ever written; mode 0600, because profiles name paths and command
 * lines; locked while open) and is renamed over the target only once
 * complete. The target's directory is opened once and held: the temporary
 * file and the rename are in that directory even if its name is swapped
 * meanwhile. The rename replaces whatever another user put at the name in the
 * meantime (a FIFO with a reader, a symlink), never writes through it.
 * Opening also removes the temporary files of the same target that a killed
 * run left (their pid gone, their lock free, ours). "-" is stdout. A symlink
 * at the target is refused (-ELOOP), never followed nor replaced; a device or
 * FIFO is written to directly (there is nothing to rename) only when it is
 * the caller's or root's (-EPERM otherwise: another user's FIFO in /tmp would
 * hand them the profile): a FIFO nobody reads is -ENXIO at once, never a wait.
 */
#ifndef __TK_OUTFILE_H
#define __TK_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

struct tk_outfile {
	FILE *f;			/* write here */
	char path[PATH_MAX];
	char tmp[PATH_MAX];		/* empty for stdout, a FIFO or a device */
	/* inside: the directory held, the target's and the temporary file's names in it */
	int dfd;
	bool has_dir;			/* dfd is ours to close (a zeroed struct holds none) */
	char name[NAME_MAX + 1];
	char tmp_name[NAME_MAX + 1];
};

/*
 * Returns 0 or a negative errno (-EISDIR a directory, -ELOOP a symlink,
 * -EPERM a FIFO or device of another user, -ENXIO a FIFO without a reader).
 */
int tk_outfile__open(struct tk_outfile *o, const char *path);
/*
 * The same for @name (no '/') in the directory @dirfd (which stays the
 * caller's; a copy is held): what `record` writes into its bundle's directory,
 * held open by descriptor. @shown (may be NULL: @name) names it in messages.
 */
int tk_outfile__openat(struct tk_outfile *o, int dirfd, const char *name, const char *shown);
/* Flush, sync and rename into place. Returns 0 or a negative errno; on error the target is untouched. */
int tk_outfile__commit(struct tk_outfile *o);
/* Drop the temporary file; the target is untouched. */
void tk_outfile__abort(struct tk_outfile *o);

#endif /* __TK_OUTFILE_H */
