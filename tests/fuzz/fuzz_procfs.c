// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the /proc text parsers of the capability snapshot:
 * /proc/PID/cgroup with /proc/PID/mountinfo (the input split at its first NUL
 * byte) and status-style "Name: value" fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/internal.h"

static void check_dir(const char *dir, size_t size)
{
	/* empty, or an absolute path under the sys root that cannot climb out of it */
	if (strnlen(dir, size) >= size)
		abort();
	if (dir[0] && (dir[0] != '/' || strstr(dir, "/../") ||
		       (strlen(dir) >= 3 && !strcmp(dir + strlen(dir) - 3, "/..")) ||
		       !strcmp(dir, "/..")))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fields[] = { "CapEff", "Seccomp", "Pid", "VmRSS", "MemTotal" };
	const char *nul = memchr(data, '\0', size);
	size_t first = nul ? (size_t)(nul - (const char *)data) : size;
	struct tk_cgroup_loc loc;
	char *cg, *mi, val[64];
	size_t i;

	cg = strndup((const char *)data, first);
	mi = nul ? strndup(nul + 1, size - first - 1) : strdup("");
	if (!cg || !mi)
		goto out;
	if (!tk_cgroup__locate(cg, mi, &loc)) {
		check_dir(loc.v2_dir, sizeof(loc.v2_dir));
		check_dir(loc.v1_dir, sizeof(loc.v1_dir));
		if (strnlen(loc.v2_path, sizeof(loc.v2_path)) >= sizeof(loc.v2_path) ||
		    strnlen(loc.v1_path, sizeof(loc.v1_path)) >= sizeof(loc.v1_path))
			abort();
	}
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (tk_status_field(cg, fields[i], val, sizeof(val)) &&
		    strnlen(val, sizeof(val)) >= sizeof(val))
			abort();
out:
	free(cg);
	free(mi);
	return 0;
}
