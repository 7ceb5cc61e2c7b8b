// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * NUMA topology from sys_root/devices/system/node — the files libnuma reads
 * (numa_num_configured_nodes(), numa_node_to_cpus(), numa_node_size64()), read
 * here directly so that fixture trees describe any topology; the integration
 * tests check that the two agree on the live system.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/internal.h"

static int cmp_node(const void *a, const void *b)
{
	return ((const struct tk_numa_node *)a)->id - ((const struct tk_numa_node *)b)->id;
}

/* "Node 0 MemTotal:  4548820 kB" */
static uint64_t meminfo_field(const char *text, const char *field)
{
	const char *p = text;
	size_t flen = strlen(field);

	while ((p = strstr(p, field))) {
		if (p[flen] == ':' && (p == text || p[-1] == ' '))
			return strtoull(p + flen + 1, NULL, 10);
		p += flen;
	}
	return 0;
}

int tk_numa__read(const char *sys_root, struct tk_numa_topology *numa)
{
	char path[4096], rel[128], buf[4096];
	struct dirent *de;
	DIR *dir;
	int err;

	numa->nr_nodes = 0;
	err = tk_path_join(path, sizeof(path), sys_root, "devices/system/node");
	if (err)
		return err;
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;	/* no NUMA support: no nodes */
	while ((de = readdir(dir)) && numa->nr_nodes < TK_MAX_NUMA_NODES) {
		struct tk_numa_node *n;
		char *end;
		long id;

		if (strncmp(de->d_name, "node", 4) || !isdigit((unsigned char)de->d_name[4]))
			continue;
		id = strtol(de->d_name + 4, &end, 10);
		if (*end || id < 0)
			continue;
		n = &numa->nodes[numa->nr_nodes++];
		memset(n, 0, sizeof(*n));
		n->id = id;
		snprintf(rel, sizeof(rel), "devices/system/node/node%ld/cpulist", id);
		if (tk_read_file(sys_root, rel, n->cpus, sizeof(n->cpus)) >= 0)
			tk_rstrip(n->cpus);
		snprintf(rel, sizeof(rel), "devices/system/node/node%ld/meminfo", id);
		if (tk_read_file(sys_root, rel, buf, sizeof(buf)) > 0) {
			n->mem_total_kb = meminfo_field(buf, "MemTotal");
			n->mem_free_kb = meminfo_field(buf, "MemFree");
		}
	}
	closedir(dir);
	qsort(numa->nodes, numa->nr_nodes, sizeof(numa->nodes[0]), cmp_node);
	return 0;
}
