// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Memory accounting of a process's cgroup: cgroup v2 (memory.current, .max,
 * .peak) or, when the v2 hierarchy has no memory controller for it, v1's memory
 * controller (memory.usage_in_bytes, .limit_in_bytes, .max_usage_in_bytes).
 *
 * Where the hierarchies are mounted comes from PID/mountinfo; mount points under
 * /sys are looked up under sys_root, so fixture trees work the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/internal.h"

struct cg_mount {
	char root[512];		/* root of the mount inside the hierarchy */
	char point[512];	/* mount point */
	bool found;
};

/*
 * mountinfo line: ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SRC SUPEROPTS
 * For v1 the controller names are in SUPEROPTS.
 */
static void find_mounts(const char *mountinfo, struct cg_mount *v2, struct cg_mount *v1mem)
{
	const char *line = mountinfo;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[2048], root[512], point[512], fstype[64], super[512];
		char *dash;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			dash = strstr(buf, " - ");
			if (dash && sscanf(buf, "%*s %*s %*s %511s %511s", root, point) == 2 &&
			    sscanf(dash + 3, "%63s %*s %511s", fstype, super) == 2) {
				struct cg_mount *m = NULL;

				if (!strcmp(fstype, "cgroup2"))
					m = v2;
				else if (!strcmp(fstype, "cgroup")) {
					char *tok, *save = NULL;

					for (tok = strtok_r(super, ",", &save); tok;
					     tok = strtok_r(NULL, ",", &save))
						if (!strcmp(tok, "memory"))
							m = v1mem;
				}
				if (m && !m->found) {
					snprintf(m->root, sizeof(m->root), "%s", root);
					snprintf(m->point, sizeof(m->point), "%s", point);
					m->found = true;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
}

static bool has_dotdot(const char *path)
{
	const char *p = path;

	while ((p = strstr(p, ".."))) {
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
		p += 2;
	}
	return false;
}

/* The directory of cgroup @cgpath in mount @m, relative to sys_root. */
static int cgroup_dir(const struct cg_mount *m, const char *cgpath, char *out, size_t size)
{
	const char *point = m->point, *rel = cgpath;
	size_t rootlen = strlen(m->root);
	int n;

	/* Only hierarchies mounted under /sys can be found under sys_root. */
	if (strncmp(point, "/sys/", 5) && strcmp(point, "/sys"))
		return -ENOENT;
	point += 4;
	/* Inside a cgroup namespace or a bind mount, the mount shows a subtree. */
	if (strcmp(m->root, "/")) {
		if (strncmp(cgpath, m->root, rootlen) || (cgpath[rootlen] && cgpath[rootlen] != '/'))
			return -ENOENT;
		rel = cgpath + rootlen;
	}
	while (*rel == '/')
		rel++;
	/* the kernel never names a cgroup "..": refuse to climb out of sys_root */
	if (has_dotdot(point) || has_dotdot(rel))
		return -EINVAL;
	n = snprintf(out, size, "%s/%s", point, rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

static bool read_u64_file(const char *sys_root, const char *dir, const char *name, uint64_t *val,
			  bool *unlimited, char *files, size_t files_sz)
{
	char rel[1280], buf[64], *end;
	long n;

	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	n = tk_read_file(sys_root, rel, buf, sizeof(buf));
	if (n < 0)
		return false;
	tk_rstrip(buf);
	if (files[0])
		strncat(files, " ", files_sz - strlen(files) - 1);
	strncat(files, name, files_sz - strlen(files) - 1);
	if (!strcmp(buf, "max")) {
		*val = UINT64_MAX;
		if (unlimited)
			*unlimited = true;
		return true;
	}
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || end == buf || *end)
		return false;
	/* v1 reports "no limit" as a page-rounded LONG_MAX */
	if (unlimited && *val >= (UINT64_MAX >> 2))
		*unlimited = true;
	return true;
}

static bool fill_from(const char *sys_root, const char *dir, bool v2, struct tk_memory *mem)
{
	const char *cur = v2 ? "memory.current" : "memory.usage_in_bytes";
	const char *lim = v2 ? "memory.max" : "memory.limit_in_bytes";
	const char *peak = v2 ? "memory.peak" : "memory.max_usage_in_bytes";

	mem->cgroup_files[0] = '\0';
	mem->has_current = read_u64_file(sys_root, dir, cur, &mem->current_bytes, NULL,
					 mem->cgroup_files, sizeof(mem->cgroup_files));
	if (!mem->has_current)
		return false;
	mem->limit_unlimited = false;
	mem->has_limit = read_u64_file(sys_root, dir, lim, &mem->limit_bytes,
				       &mem->limit_unlimited, mem->cgroup_files,
				       sizeof(mem->cgroup_files));
	mem->has_peak = read_u64_file(sys_root, dir, peak, &mem->peak_bytes, NULL,
				      mem->cgroup_files, sizeof(mem->cgroup_files));
	if (tk_path_join(mem->cgroup_dir, sizeof(mem->cgroup_dir), sys_root, dir))
		mem->cgroup_dir[0] = '\0';
	mem->cgroup = v2 ? TK_CGROUP_V2 : TK_CGROUP_V1;
	return true;
}

int tk_cgroup__locate(const char *cgroup_text, const char *mountinfo_text,
		      struct tk_cgroup_loc *loc)
{
	struct cg_mount v2 = {}, v1mem = {};
	char *cgfile, *line, *save = NULL;

	memset(loc, 0, sizeof(*loc));
	cgfile = strdup(cgroup_text);
	if (!cgfile)
		return -ENOMEM;
	find_mounts(mountinfo_text, &v2, &v1mem);

	/* "0::/path" is v2; "N:ctrl,ctrl:/path" is a v1 hierarchy */
	for (line = strtok_r(cgfile, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		if (!strcmp(line, "0") && c1[1] == '\0') {
			snprintf(loc->v2_path, sizeof(loc->v2_path), "%s", c2 + 1);
		} else {
			char *tok, *s2 = NULL;

			for (tok = strtok_r(c1 + 1, ",", &s2); tok; tok = strtok_r(NULL, ",", &s2))
				if (!strcmp(tok, "memory"))
					snprintf(loc->v1_path, sizeof(loc->v1_path), "%s", c2 + 1);
		}
	}
	free(cgfile);
	if (v2.found && loc->v2_path[0])
		cgroup_dir(&v2, loc->v2_path, loc->v2_dir, sizeof(loc->v2_dir));
	if (v1mem.found && loc->v1_path[0])
		cgroup_dir(&v1mem, loc->v1_path, loc->v1_dir, sizeof(loc->v1_dir));
	return 0;
}

int tk_memcg__read(const char *proc_root, const char *sys_root, const char *pid_dir,
		   struct tk_memory *mem)
{
	char rel[128], *cgfile = NULL, *mountinfo = NULL;
	struct tk_cgroup_loc loc;
	int err;

	mem->cgroup = TK_CGROUP_NONE;
	mem->cgroup_path[0] = mem->cgroup_dir[0] = mem->cgroup_files[0] = '\0';

	snprintf(rel, sizeof(rel), "%s/cgroup", pid_dir);
	err = tk_read_file_alloc(proc_root, rel, 1 << 16, &cgfile, NULL);
	if (err)
		return err == -ENOENT ? 0 : err;	/* a kernel without cgroups */
	snprintf(rel, sizeof(rel), "%s/mountinfo", pid_dir);
	err = tk_read_file_alloc(proc_root, rel, 1 << 20, &mountinfo, NULL);
	if (!err)
		err = tk_cgroup__locate(cgfile, mountinfo, &loc);
	free(cgfile);
	free(mountinfo);
	if (err)
		return err == -ENOENT ? 0 : err;

	/* Prefer v2 when its hierarchy accounts memory for this cgroup. */
	if (loc.v2_dir[0] && fill_from(sys_root, loc.v2_dir, true, mem)) {
		snprintf(mem->cgroup_path, sizeof(mem->cgroup_path), "%s", loc.v2_path);
		return 0;
	}
	if (loc.v1_dir[0] && fill_from(sys_root, loc.v1_dir, false, mem)) {
		snprintf(mem->cgroup_path, sizeof(mem->cgroup_path), "%s", loc.v1_path);
		return 0;
	}
	/* No accounting files for this process: no cgroup split, and no error. */
	mem->cgroup = TK_CGROUP_NONE;
	mem->cgroup_files[0] = '\0';
	snprintf(mem->cgroup_path, sizeof(mem->cgroup_path), "%s",
		 loc.v2_path[0] ? loc.v2_path : loc.v1_path);
	return 0;
}
