// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Which JIT runtime a process runs, and what it was started with
 * (proc/jit_runtime.h). A JVM is a process mapping libjvm.so; node one whose
 * executable is named node or nodejs, or that maps libnode.so (Debian's node
 * is a small executable over libnode.so.N). node's version is read from its
 * file (the release URL every official and Debian build carries); a JVM's from
 * its performance data (proc/jvm.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/untrusted.h"
#include "proc/jit_runtime.h"
#include "proc/mapfile.h"
#include "proc/maps.h"

#define MAPS_MAX (16u << 20)
#define SCAN_CHUNK (1u << 20)
#define SCAN_MAX (512ull << 20)		/* bytes of node's file looked through */

static const char release_url[] = "https://nodejs.org/download/release/";

int tk_jit_runtime__node_version(const char *buf, size_t len, char *out, size_t out_sz)
{
	size_t ul = sizeof(release_url) - 1;
	const char *p = buf, *end = buf + len;

	while ((p = memmem(p, end - p, release_url, ul))) {
		const char *v = p + ul, *e = v;
		size_t n;

		while (e < end && e - v < 32 &&
		       (*e == 'v' || *e == '.' || (*e >= '0' && *e <= '9')))
			e++;
		n = e - v;
		if (e < end && *e == '/' && n >= 6 && v[0] == 'v' && n < out_sz) {
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = v;
	}
	return -ENOENT;
}

struct scan {
	struct tk_jit_runtime *rt;
	uint64_t start, end;		/* the node object's first mapping */
	struct tk_file_id id;
	char path[PATH_MAX];
};

static bool base_is(const char *path, const char *name, bool prefix)
{
	const char *b = tk_path_basename(path);

	return prefix ? !strncmp(b, name, strlen(name)) : !strcmp(b, name);
}

static int on_map(const struct tk_map *m, void *ctx)
{
	struct scan *sc = ctx;
	struct tk_jit_runtime *rt = sc->rt;
	const char *b;

	if (!tk_map__is_file(m))
		return 0;
	b = tk_path_basename(m->path);
	if (!strncmp(b, "jit-", 4) && strstr(b, ".dump"))
		rt->jitdump = true;
	if (rt->kind == TK_JIT_NONE && base_is(m->path, "libjvm.so", false)) {
		rt->kind = TK_JIT_JVM;
		snprintf(rt->object, sizeof(rt->object), "%s", m->path);
	}
	if ((rt->kind == TK_JIT_NONE || (rt->kind == TK_JIT_NODE && !base_is(rt->object,
									"libnode.so", true))) &&
	    (base_is(m->path, "node", false) || base_is(m->path, "nodejs", false) ||
	     base_is(m->path, "libnode.so", true))) {
		/* libnode over the small executable: the version is in the library */
		rt->kind = TK_JIT_NODE;
		snprintf(rt->object, sizeof(rt->object), "%s", m->path);
		snprintf(sc->path, sizeof(sc->path), "%s", m->path);
		sc->start = m->start;
		sc->end = m->end;
		sc->id = tk_map__id(m);
	}
	return 0;
}

/* node's version from its file, reached as the symbolizer reaches it (proc/mapfile.h). */
static void node_version(const char *proc_root, uint32_t pid, struct scan *sc)
{
	struct tk_mapfile mf;
	uint64_t off = 0;
	char *buf;

	if (tk_mapfile__find(proc_root, pid, sc->start, sc->end, sc->path, &sc->id, 0, &mf))
		return;
	buf = malloc(SCAN_CHUNK + TK_NODE_VERSION_OVERLAP);
	while (buf && off < SCAN_MAX) {
		ssize_t n = pread(mf.fd, buf, SCAN_CHUNK + TK_NODE_VERSION_OVERLAP, off);

		if (n <= 0 || !tk_jit_runtime__node_version(buf, n, sc->rt->version,
							    sizeof(sc->rt->version)))
			break;
		off += SCAN_CHUNK;
	}
	free(buf);
	tk_mapfile__release(&mf);
}

/* node's own options (before its script) on its command line. */
static void node_flags(const char *proc_root, uint32_t pid, struct tk_jit_runtime *rt)
{
	char rel[64], cmd[16384], arg[64];
	long n, i = 0;

	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	n = tk_read_file(proc_root, rel, cmd, sizeof(cmd));
	/* argv[0], then options up to the first word that is not one */
	i = n > 0 ? (long)strnlen(cmd, n) + 1 : n;
	while (i > 0 && i < n && cmd[i] == '-') {
		size_t k, len = strnlen(cmd + i, n - i);

		/* V8 takes --a_b as --a-b */
		for (k = 0; k < len && k < sizeof(arg) - 1; k++)
			arg[k] = cmd[i + k] == '_' ? '-' : cmd[i + k];
		arg[k] = '\0';
		if (!strcmp(arg, "--perf-basic-prof") ||
		    !strcmp(arg, "--perf-basic-prof-only-functions"))
			rt->perf_basic_prof = true;
		else if (!strcmp(arg, "--perf-prof"))
			rt->perf_prof = true;
		else if (!strcmp(arg, "--interpreted-frames-native-stack"))
			rt->interpreted_native = true;
		i += len + 1;
	}
}

/* Whether /tmp/perf-NSPID.map exists inside its root, as a file of its user or root. */
static bool has_perf_map(const char *proc_root, uint32_t pid, uint32_t nspid, uint32_t uid)
{
	struct tk_open_rules r = { .flags = TK_OPEN_IN_ROOT, .owners = { uid, uid },
				   .nr_owners = 2 };
	char rel[64], path[PATH_MAX];
	struct stat st;
	int dirfd, fd;

	snprintf(rel, sizeof(rel), "%u/root", pid);
	if (tk_path_join(path, sizeof(path), proc_root, rel))
		return false;
	dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return false;
	snprintf(rel, sizeof(rel), "tmp/perf-%u.map", nspid);
	fd = tk_open_untrusted(dirfd, rel, &r, &st);
	close(dirfd);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int tk_jit_runtime__detect(const char *proc_root, uint32_t pid, struct tk_jit_runtime *rt)
{
	struct scan sc = { .rt = rt };
	char rel[64], *text, status[4096], v[256];
	uint32_t uid = 0;
	size_t len;
	int err;

	memset(rt, 0, sizeof(*rt));
	if (!proc_root)
		proc_root = "/proc";
	snprintf(rel, sizeof(rel), "%u/maps", pid);
	err = tk_read_file_alloc(proc_root, rel, MAPS_MAX, &text, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	err = tk_maps__parse(text, on_map, &sc);
	free(text);
	if (err)
		return err;
	rt->nspid = pid;
	snprintf(rel, sizeof(rel), "%u/status", pid);
	if (tk_read_file(proc_root, rel, status, sizeof(status)) > 0) {
		char *p = v, *end;

		/* NSpid's last number: its pid as it sees it */
		if (tk_status_field(status, "NSpid", v, sizeof(v))) {
			for (;;) {
				unsigned long x = strtoul(p, &end, 10);

				if (end == p)
					break;
				rt->nspid = x;
				p = end;
			}
		}
		if (tk_status_field(status, "Uid", v, sizeof(v)))
			sscanf(v, "%*u %u", &uid);
	}
	switch (rt->kind) {
	case TK_JIT_JVM:
		rt->jvm_err = tk_jvm__inspect(proc_root, pid, &rt->jvm, rt->jvm_why,
					      sizeof(rt->jvm_why));
		snprintf(rt->version, sizeof(rt->version), "%s", rt->jvm.version);
		rt->perf_map = rt->jvm.perf_map || has_perf_map(proc_root, pid, rt->nspid, uid);
		break;
	case TK_JIT_NODE:
		node_version(proc_root, pid, &sc);
		node_flags(proc_root, pid, rt);
		rt->perf_map = has_perf_map(proc_root, pid, rt->nspid, uid);
		break;
	default:
		break;
	}
	return 0;
}
