// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tracekit stacks: which processes (-p, a cgroup2 directory and below, or every one). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fsutil.h"
#include "core/session.h"
#include "stacks/stacks_int.h"

int stk_pidset_add(struct stk_pidset *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == pid)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint32_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = pid;
	return 0;
}

static struct stk_pidset *cg_set;
static int cg_err;

static int cg_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char file[PATH_MAX], *text = NULL, *p, *end;
	size_t len;

	if (flag != FTW_D)
		return 0;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	if (tk_read_file_alloc("/", file + 1, 16 << 20, &text, &len))
		return 0;
	for (p = text; *p; p = end) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v && v <= UINT32_MAX && stk_pidset_add(cg_set, v)) {
			cg_err = -ENOMEM;
			free(text);
			return 1;
		}
	}
	free(text);
	return 0;
}

/* The processes of cgroup directory @dir and its descendants (cgroup.procs). */
int stk_cgroup_pids(const char *dir, struct stk_pidset *out, char *why, size_t why_sz)
{
	char real[PATH_MAX];
	struct stat st;

	int err;

	if (!realpath(dir, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, why_sz, "no cgroup directory %s", dir);
		return -ENOENT;
	}
	/* on the cgroup2 file system itself: its cgroup.procs files are the kernel's */
	err = tk_session__check_cgroup(real, why, why_sz);
	if (err)
		return err;
	cg_set = out;
	cg_err = 0;
	nftw(real, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	cg_set = NULL;
	return cg_err;
}

int stk_all_pids(const char *proc_root, struct stk_pidset *out)
{
	DIR *d = opendir(proc_root);
	struct dirent *e;
	int err = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && !err) {
		char *end;
		unsigned long v = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && !*end && v <= UINT32_MAX)
			err = stk_pidset_add(out, v);
	}
	closedir(d);
	return err;
}

