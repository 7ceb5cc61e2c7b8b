/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Parsing the text of /proc/PID/maps, one mapping at a time. */
#ifndef __TK_MAPS_H
#define __TK_MAPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_map {
	uint64_t start;
	uint64_t end;			/* exclusive */
	uint64_t offset;		/* file offset of start */
	unsigned int dev_major;
	unsigned int dev_minor;
	uint64_t inode;
	char perms[5];			/* "r-xp" */
	bool deleted;			/* path ended in " (deleted)", suffix removed */
	char path[PATH_MAX];		/* file path, "[heap]", "[anon:x]" or "" */
};

static inline bool tk_map__is_file(const struct tk_map *m)
{
	return m->inode != 0 && m->path[0] == '/';
}

/*
 * Called once per mapping, in the order of the text. Return 0 to go on; any
 * other value stops the walk and becomes the return value of tk_maps__parse().
 * @m is valid only during the call.
 */
typedef int (*tk_maps_cb)(const struct tk_map *m, void *ctx);

/*
 * Parse @text (NUL-terminated /proc/PID/maps content). Returns 0, the first
 * non-zero callback value, -EINVAL at a malformed line or -ENAMETOOLONG at a
 * path that does not fit struct tk_map.
 */
int tk_maps__parse(const char *text, tk_maps_cb cb, void *ctx);

/* Parse one line of @len bytes (no newline) into @m. Returns 0 or -EINVAL/-ENAMETOOLONG. */
int tk_maps__parse_line(const char *line, size_t len, struct tk_map *m);

#endif /* __TK_MAPS_H */
