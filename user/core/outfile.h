/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Output files written whole or not at all: data goes to a new temporary file
 * beside the target, "PATH.tmp.PID.SEQ" (O_EXCL|O_NOFOLLOW, so no symlink is
 * followed when writing as root; mode 0600, because profiles name paths and
 * command lines; locked while open) and is renamed over the target only once
 * complete. Opening also removes the temporary files of the same target that a
 * killed run left (their pid gone, their lock free, ours). "-" is stdout.
 * A symlink at the target is refused (-ELOOP), never followed nor replaced; a
 * device or FIFO is written to directly (there is nothing to rename): a FIFO
 * nobody reads is -ENXIO at once, never a wait.
 */
#ifndef __TK_OUTFILE_H
#define __TK_OUTFILE_H

#include <limits.h>
#include <stdio.h>

struct tk_outfile {
	FILE *f;			/* write here */
	char path[PATH_MAX];
	char tmp[PATH_MAX];		/* empty for stdout */
};

/* Returns 0 or a negative errno (-EISDIR a directory, -ENXIO a FIFO without a reader). */
int tk_outfile__open(struct tk_outfile *o, const char *path);
/* Flush, sync and rename into place. Returns 0 or a negative errno; on error the target is untouched. */
int tk_outfile__commit(struct tk_outfile *o);
/* Drop the temporary file; the target is untouched. */
void tk_outfile__abort(struct tk_outfile *o);

#endif /* __TK_OUTFILE_H */
