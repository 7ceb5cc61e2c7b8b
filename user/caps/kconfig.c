// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Look up one option in the running kernel's config (proc_root/config.gz). */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "core/fsutil.h"
#include "core/internal.h"

int tk_kconfig__lookup(const char *proc_root, const char *name)
{
	char path[4096], line[512], notset[160];
	size_t nlen = strlen(name);
	int ret = -ENOENT;
	gzFile gz;

	if (tk_path_join(path, sizeof(path), proc_root, "config.gz"))
		return -ENAMETOOLONG;
	gz = gzopen(path, "rb");
	if (!gz)
		return -ENOENT;
	snprintf(notset, sizeof(notset), "# %s is not set", name);
	while (gzgets(gz, line, sizeof(line))) {
		if (!strncmp(line, name, nlen) && line[nlen] == '=') {
			ret = (line[nlen + 1] == 'y' || line[nlen + 1] == 'm') ? 1 : 0;
			break;
		}
		if (!strncmp(line, notset, strlen(notset))) {
			ret = 0;
			break;
		}
	}
	gzclose(gz);
	return ret;
}
