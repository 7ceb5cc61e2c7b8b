// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test fixtures: fake /proc and /sys trees, the fake kernel probe, and a
 * strict JSON checker. Linked into every unit and integration test, so it
 * depends on nothing but libc, zlib, libbpf and tracekit.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <zlib.h>

#include "fixture.h"

/* ---- the tree ----------------------------------------------------------------- */

struct fx *fx_new(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fx *fx;
	int n;

	fx = calloc(1, sizeof(*fx));
	if (!fx)
		return NULL;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = snprintf(fx->root, sizeof(fx->root), "%s/tracekit-fx.XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof(fx->root) - 8) {
		free(fx);
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (!mkdtemp(fx->root)) {
		int err = errno;

		free(fx);
		errno = err;
		return NULL;
	}
	snprintf(fx->proc, sizeof(fx->proc), "%s/proc", fx->root);
	snprintf(fx->sys, sizeof(fx->sys), "%s/sys", fx->root);
	if (mkdir(fx->proc, 0755) || mkdir(fx->sys, 0755)) {
		int err = errno;

		fx_free(fx);
		errno = err;
		return NULL;
	}
	return fx;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	/* keep going on errors: remove as much as can be removed */
	remove(path);
	return 0;
}

static int rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		return -errno;
	return lstat(path, &st) == 0 ? -ENOTEMPTY : 0;
}

void fx_free(struct fx *fx)
{
	if (!fx)
		return;
	if (fx->root[0])
		rm_tree(fx->root);
	free(fx);
}

int fx_path(const struct fx *fx, const char *rel, char *buf, size_t size)
{
	int n;

	while (*rel == '/')
		rel++;
	n = snprintf(buf, size, "%s/%s", fx->root, rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* mkdir -p of @path's first @len bytes */
static int mkdirs(char *path, size_t len)
{
	char saved = path[len];
	size_t i;
	int err = 0;

	path[len] = '\0';
	for (i = 1; i <= len && !err; i++) {
		char c = path[i];

		if (c != '/' && c != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			err = -errno;
		path[i] = c;
	}
	path[len] = saved;
	return err;
}

static int make_parents(char *path)
{
	char *slash = strrchr(path, '/');

	return slash && slash != path ? mkdirs(path, slash - path) : 0;
}

int fx_mkdir(struct fx *fx, const char *rel)
{
	char path[PATH_MAX];
	int err = fx_path(fx, rel, path, sizeof(path));

	return err ?: mkdirs(path, strlen(path));
}

static int write_file(struct fx *fx, const char *rel, const char *text, int flags)
{
	char path[PATH_MAX];
	size_t len = strlen(text), off = 0;
	int fd, err;

	err = fx_path(fx, rel, path, sizeof(path));
	if (!err)
		err = make_parents(path);
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			return err;
		}
		off += n;
	}
	return close(fd) ? -errno : 0;
}

int fx_write(struct fx *fx, const char *rel, const char *text)
{
	return write_file(fx, rel, text, O_TRUNC);
}

int fx_append(struct fx *fx, const char *rel, const char *text)
{
	return write_file(fx, rel, text, O_APPEND);
}

int fx_writef(struct fx *fx, const char *rel, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int err, n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	err = fx_write(fx, rel, text);
	free(text);
	return err;
}

int fx_symlink(struct fx *fx, const char *target, const char *rel)
{
	char path[PATH_MAX];
	int err;

	err = fx_path(fx, rel, path, sizeof(path));
	if (!err)
		err = make_parents(path);
	if (err)
		return err;
	return symlink(target, path) ? -errno : 0;
}

int fx_remove(struct fx *fx, const char *rel)
{
	char path[PATH_MAX];
	int err = fx_path(fx, rel, path, sizeof(path));

	return err ?: rm_tree(path);
}

bool fx_exists(const struct fx *fx, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	return !fx_path(fx, rel, path, sizeof(path)) && lstat(path, &st) == 0;
}

int fx_write_gz(struct fx *fx, const char *rel, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	gzFile gz;
	int err;

	err = fx_path(fx, rel, path, sizeof(path));
	if (!err)
		err = make_parents(path);
	if (err)
		return err;
	gz = gzopen(path, "wb");
	if (!gz)
		return errno ? -errno : -ENOMEM;
	if (len && gzwrite(gz, text, len) != (int)len) {
		gzclose(gz);
		return -EIO;
	}
	return gzclose(gz) == Z_OK ? 0 : -EIO;
}

int fx_write_btf(struct fx *fx, const char *rel, const char *const *typedefs,
		 const char *const *funcs)
{
	char path[PATH_MAX];
	const void *raw;
	struct btf *btf;
	__u32 size;
	int err = 0, int_id, proto_id, fd;

	err = fx_path(fx, rel, path, sizeof(path));
	if (!err)
		err = make_parents(path);
	if (err)
		return err;
	btf = btf__new_empty();
	if (!btf)
		return -errno;
	int_id = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	proto_id = int_id < 0 ? int_id : btf__add_func_proto(btf, int_id);
	if (proto_id < 0) {
		err = proto_id;
		goto out;
	}
	for (; typedefs && *typedefs && !err; typedefs++)
		err = btf__add_typedef(btf, *typedefs, int_id) < 0 ? -EINVAL : 0;
	for (; funcs && *funcs && !err; funcs++)
		err = btf__add_func(btf, *funcs, BTF_FUNC_GLOBAL, proto_id) < 0 ? -EINVAL : 0;
	if (err)
		goto out;
	raw = btf__raw_data(btf, &size);
	if (!raw) {
		err = -ENOMEM;
		goto out;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (write(fd, raw, size) != (ssize_t)size)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
out:
	btf__free(btf);
	return err;
}

/* ---- the baseline ---------------------------------------------------------------- */

int fx_set_status(struct fx *fx, const char *capeff, int seccomp)
{
	return fx_writef(fx, "proc/self/status",
			 "Name:\ttest_caps\n"
			 "Umask:\t0022\n"
			 "State:\tR (running)\n"
			 "Tgid:\t%d\n"
			 "Ngid:\t0\n"
			 "Pid:\t%d\n"
			 "PPid:\t4100\n"
			 "TracerPid:\t0\n"
			 "Uid:\t0\t0\t0\t0\n"
			 "Gid:\t0\t0\t0\t0\n"
			 "VmPeak:\t    3060 kB\n"
			 "VmSize:\t    3060 kB\n"
			 "VmHWM:\t   25004 kB\n"
			 "VmRSS:\t   13928 kB\n"
			 "Threads:\t1\n"
			 "CapInh:\t0000000000000000\n"
			 "CapPrm:\t%s\n"
			 "CapEff:\t%s\n"
			 "CapBnd:\t000001ffffffffff\n"
			 "CapAmb:\t0000000000000000\n"
			 "NoNewPrivs:\t0\n"
			 "Seccomp:\t%d\n"
			 "Seccomp_filters:\t%d\n"
			 "Speculation_Store_Bypass:\tthread vulnerable\n"
			 "Cpus_allowed_list:\t0-1\n",
			 FX_PID, FX_PID, capeff, capeff, seccomp, seccomp == 2 ? 1 : 0);
}

static const char base_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff810a1230 T do_exit\n"
	"ffffffff8166e050 T migrate_misplaced_folio\n"
	"ffffffff8166e3a0 t migrate_misplaced_folio_prepare\n"
	"ffffffff82a1c2c0 D __tracepoint_sched_process_exec\n"
	"ffffffff82a1c320 D __tracepoint_sched_process_exit\n"
	"ffffffff82a1c380 D __tracepoint_sched_move_numa\n"
	"ffffffff82a1c3e0 D __tracepoint_sched_swap_numa\n"
	"ffffffff82a1c440 D __tracepoint_sched_stick_numa\n"
	"ffffffff82a1d100 D __tracepoint_mm_migrate_pages\n"
	"ffffffff82a1d160 D __tracepoint_mm_migrate_pages_start\n"
	"ffffffff82a1e000 D __tracepoint_mm_page_alloc\n"
	"ffffffff82a1e060 D __tracepoint_mm_page_alloc_zone_locked\n"
	"ffffffff82a1e0c0 D __tracepoint_kmalloc\n"
	"ffffffff82a1f000 D __tracepoint_page_fault_user\n"
	"ffffffff82a1f060 D __tracepoint_page_fault_kernel\n"
	"ffffffffc0a01000 t xfs_fs_fill_super\t[xfs]\n";

static const char base_mountinfo[] =
	"22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
	"23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	"24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
	"31 24 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char base_cgroup[] =
	"9:name=systemd:/\n"
	"8:pids:/\n"
	"5:devices:/\n"
	"4:memory:" FX_CGROUP "\n"
	"3:cpuset:/\n"
	"2:cpuacct:/\n"
	"1:cpu:/\n"
	"0::/\n";

int fx_base_host(struct fx *fx)
{
	static const struct {
		const char *rel, *text;
	} files[] = {
		{ "proc/sys/kernel/perf_event_paranoid", "2\n" },
		{ "proc/sys/kernel/kptr_restrict", "0\n" },
		{ "proc/sys/kernel/unprivileged_bpf_disabled", "2\n" },
		{ "proc/sys/kernel/numa_balancing", "0\n" },
		{ "proc/sys/kernel/cap_last_cap", "40\n" },
		{ "proc/sys/kernel/osrelease", FX_RELEASE "\n" },
		{ "proc/meminfo", "MemTotal:       24684092 kB\n"
				  "MemFree:        24227680 kB\n"
				  "MemAvailable:   24336512 kB\n"
				  "Buffers:            2928 kB\n"
				  "Cached:           295436 kB\n"
				  "SwapCached:            0 kB\n"
				  "SwapTotal:             0 kB\n"
				  "SwapFree:              0 kB\n" },
		{ "proc/self/cgroup", base_cgroup },
		{ "proc/self/mountinfo", base_mountinfo },
		{ "proc/kallsyms", base_kallsyms },
		{ "proc/vmstat", "nr_free_pages 6056920\n"
				 "numa_hit 1843512\n"
				 "numa_miss 0\n"
				 "numa_foreign 0\n"
				 "numa_pages_migrated 0\n"
				 "pgmigrate_success 0\n"
				 "pgmigrate_fail 0\n" },
		{ "sys/devices/system/node/node0/cpulist", "0-1\n" },
		{ "sys/devices/system/node/node0/meminfo",
		  "Node 0 MemTotal:        4548820 kB\n"
		  "Node 0 MemFree:         4092208 kB\n"
		  "Node 0 MemUsed:          456612 kB\n" },
		{ "sys/devices/system/node/online", "0\n" },
		{ "sys/devices/system/node/possible", "0\n" },
		{ "sys/devices/system/node/has_cpu", "0\n" },
		{ "sys/devices/system/node/has_memory", "0\n" },
		{ "sys/fs/cgroup/memory" FX_CGROUP "/memory.usage_in_bytes", "14782464\n" },
		{ "sys/fs/cgroup/memory" FX_CGROUP "/memory.limit_in_bytes",
		  "9223372036854771712\n" },
		{ "sys/fs/cgroup/memory" FX_CGROUP "/memory.max_usage_in_bytes", "25600000\n" },
		{ "sys/fs/cgroup/memory" FX_CGROUP "/cgroup.procs", "4242\n" },
		/* the v2 hierarchy exists but has no memory controller */
		{ "sys/fs/cgroup/unified/cgroup.procs", "1\n" },
		{ "sys/fs/cgroup/unified/cgroup.controllers", "" },
		{ "sys/fs/cgroup/unified/cgroup.subtree_control", "" },
	};
	size_t i;
	int err;

	err = fx_set_status(fx, FX_CAPEFF_ROOT, 0);
	for (i = 0; i < sizeof(files) / sizeof(files[0]) && !err; i++)
		err = fx_write(fx, files[i].rel, files[i].text);
	/* kernel BTF that parses, and names nothing the snapshot looks up: kallsyms answers */
	return err ? err : fx_write_btf(fx, "sys/kernel/btf/vmlinux", NULL, NULL);
}

/* ---- the fake probe ---------------------------------------------------------------- */

int fx_probe_result[TK_PROBE__COUNT];
const char *fx_probe_msg[TK_PROBE__COUNT];
struct tk_core_facts fx_probe_core;
bool fx_probe_user_only[TK_PROBE__COUNT];
int fx_probe_calls[TK_PROBE__COUNT];
char fx_probe_btf_path[PATH_MAX];
bool fx_probe_had_btf;

static const char *const probe_names[TK_PROBE__COUNT] = {
	[TK_PROBE_BPF_SYSCALL] = "bpf_syscall",
	[TK_PROBE_RINGBUF] = "ringbuf",
	[TK_PROBE_CORE] = "core",
	[TK_PROBE_PROG_PERF_EVENT] = "prog_perf_event",
	[TK_PROBE_PROG_TRACEPOINT] = "prog_tracepoint",
	[TK_PROBE_PROG_RAW_TP] = "prog_raw_tp",
	[TK_PROBE_PROG_TP_BTF] = "prog_tp_btf",
	[TK_PROBE_PROG_FENTRY] = "prog_fentry",
	[TK_PROBE_PROG_UPROBE] = "prog_uprobe",
	[TK_PROBE_PROG_KPROBE] = "prog_kprobe",
	[TK_PROBE_PERF_CPU_CLOCK] = "perf_cpu_clock",
	[TK_PROBE_PERF_HARDWARE] = "perf_hardware",
	[TK_PROBE_UNWIND] = "unwind",
	[TK_PROBE_MAP_RUNTIME_ALLOC] = "map_runtime_alloc",
	[TK_PROBE_ATTACH_COOKIE] = "attach_cookie",
	[TK_PROBE_UPROBE_SESSION] = "uprobe_session",
	[TK_PROBE_LOAD_CPU] = "load_cpu",
	[TK_PROBE_LOAD_ALLOC] = "load_alloc",
	[TK_PROBE_LOAD_NUMA] = "load_numa",
};

const char *fx_probe_name(enum tk_probe which)
{
	return which < TK_PROBE__COUNT && probe_names[which] ? probe_names[which] : "unknown";
}

void fx_probe_reset(void)
{
	memset(fx_probe_result, 0, sizeof(fx_probe_result));
	memset(fx_probe_msg, 0, sizeof(fx_probe_msg));
	memset(&fx_probe_core, 0, sizeof(fx_probe_core));
	memset(fx_probe_user_only, 0, sizeof(fx_probe_user_only));
	memset(fx_probe_calls, 0, sizeof(fx_probe_calls));
	fx_probe_btf_path[0] = '\0';
	fx_probe_had_btf = false;
}

int fx_probe(enum tk_probe which, struct tk_probe_ctx *ctx)
{
	int ret;

	if (which >= TK_PROBE__COUNT)
		return -EINVAL;
	ret = fx_probe_result[which];
	fx_probe_calls[which]++;
	snprintf(fx_probe_btf_path, sizeof(fx_probe_btf_path), "%s",
		 ctx->btf_path ? ctx->btf_path : "");
	fx_probe_had_btf = ctx->btf != NULL;
	if (fx_probe_msg[which])
		snprintf(ctx->msg, sizeof(ctx->msg), "%s", fx_probe_msg[which]);
	else if (ret)
		snprintf(ctx->msg, sizeof(ctx->msg), "fake %s: %s", fx_probe_name(which),
			 strerror(-ret));
	else
		snprintf(ctx->msg, sizeof(ctx->msg), "fake %s: ok", fx_probe_name(which));
	if (which == TK_PROBE_CORE && !ret)
		ctx->core = fx_probe_core;
	if (!ret) {
		ctx->user_only = fx_probe_user_only[which];
		/* user space only is always own processes only (perf_event_paranoid 2) */
		ctx->own_only = ctx->user_only;
	}
	return ret;
}

/* ---- JSON checker ---------------------------------------------------------------- */

#define JSON_MAX_DEPTH 512

struct jp {
	const unsigned char *p, *start, *end;
	int depth;
	char *err;
	size_t errsz;
	bool failed;
};

static bool jfail(struct jp *j, const char *what)
{
	if (!j->failed && j->err && j->errsz)
		snprintf(j->err, j->errsz, "%s at byte %td", what, j->p - j->start);
	j->failed = true;
	return false;
}

static void jws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jlit(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
		return jfail(j, "bad literal");
	j->p += n;
	return true;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One UTF-8 sequence starting at j->p (not ASCII). */
static bool jutf8(struct jp *j)
{
	unsigned char c = *j->p;
	unsigned int cp, min;
	int n, i;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 1, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 2, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 3, cp = c & 0x07, min = 0x10000;
	} else {
		return jfail(j, "invalid UTF-8 lead byte");
	}
	if (j->end - j->p <= n)
		return jfail(j, "truncated UTF-8");
	for (i = 1; i <= n; i++) {
		if ((j->p[i] & 0xc0) != 0x80)
			return jfail(j, "invalid UTF-8 continuation");
		cp = cp << 6 | (j->p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return jfail(j, "invalid UTF-8 code point");
	j->p += n + 1;
	return true;
}

static bool jhex4(struct jp *j, unsigned int *out)
{
	int i, v;

	*out = 0;
	if (j->end - j->p < 4)
		return jfail(j, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		v = hexval(j->p[i]);
		if (v < 0)
			return jfail(j, "bad \\u escape");
		*out = *out << 4 | v;
	}
	j->p += 4;
	return true;
}

/* A string; @key/@keylen get its raw bytes between the quotes. */
static bool jstring(struct jp *j, const unsigned char **key, size_t *keylen)
{
	const unsigned char *s;

	if (j->p >= j->end || *j->p != '"')
		return jfail(j, "expected string");
	s = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = *j->p;

		if (c < 0x20)
			return jfail(j, "raw control character in string");
		if (c == '\\') {
			unsigned int u, lo;

			if (++j->p >= j->end)
				return jfail(j, "truncated escape");
			c = *j->p++;
			if (c == 'u') {
				if (!jhex4(j, &u))
					return false;
				if (u >= 0xdc00 && u <= 0xdfff)
					return jfail(j, "lone low surrogate");
				if (u >= 0xd800 && u <= 0xdbff) {
					if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
						return jfail(j, "lone high surrogate");
					j->p += 2;
					if (!jhex4(j, &lo))
						return false;
					if (lo < 0xdc00 || lo > 0xdfff)
						return jfail(j, "bad surrogate pair");
				}
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				j->p--;
				return jfail(j, "bad escape");
			}
		} else if (c >= 0x80) {
			if (!jutf8(j))
				return false;
		} else {
			j->p++;
		}
	}
	if (j->p >= j->end)
		return jfail(j, "unterminated string");
	if (key) {
		*key = s;
		*keylen = j->p - s;
	}
	j->p++;
	return true;
}

static bool jdigits(struct jp *j)
{
	const unsigned char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s || jfail(j, "expected digit");
}

static bool jnumber(struct jp *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0') {
		j->p++;
		if (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			return jfail(j, "leading zero");
	} else if (!jdigits(j)) {
		return false;
	}
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jdigits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jdigits(j))
			return false;
	}
	return true;
}

static bool jvalue(struct jp *j);

static bool jobject(struct jp *j)
{
	struct {
		const unsigned char *s;
		size_t n;
	} *keys = NULL, *nk;
	size_t nkeys = 0, cap = 0, i;
	bool ok = false;

	j->p++;
	jws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		const unsigned char *k;
		size_t klen;

		jws(j);
		if (!jstring(j, &k, &klen))
			goto out;
		for (i = 0; i < nkeys; i++)
			if (keys[i].n == klen && !memcmp(keys[i].s, k, klen)) {
				j->p = k;
				jfail(j, "duplicate member name");
				goto out;
			}
		if (nkeys == cap) {
			cap = cap ? cap * 2 : 16;
			nk = realloc(keys, cap * sizeof(*keys));
			if (!nk) {
				jfail(j, "out of memory");
				goto out;
			}
			keys = nk;
		}
		keys[nkeys].s = k;
		keys[nkeys++].n = klen;
		jws(j);
		if (j->p >= j->end || *j->p != ':') {
			jfail(j, "expected ':'");
			goto out;
		}
		j->p++;
		if (!jvalue(j))
			goto out;
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			ok = true;
			goto out;
		}
		jfail(j, "expected ',' or '}'");
		goto out;
	}
out:
	free(keys);
	return ok;
}

static bool jarray(struct jp *j)
{
	j->p++;
	jws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return true;
	}
	for (;;) {
		if (!jvalue(j))
			return false;
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return true;
		}
		return jfail(j, "expected ',' or ']'");
	}
}

static bool jvalue(struct jp *j)
{
	bool ok;

	jws(j);
	if (j->p >= j->end)
		return jfail(j, "expected a value");
	if (++j->depth > JSON_MAX_DEPTH)
		return jfail(j, "nested too deep");
	switch (*j->p) {
	case '{':
		ok = jobject(j);
		break;
	case '[':
		ok = jarray(j);
		break;
	case '"':
		ok = jstring(j, NULL, NULL);
		break;
	case 't':
		ok = jlit(j, "true");
		break;
	case 'f':
		ok = jlit(j, "false");
		break;
	case 'n':
		ok = jlit(j, "null");
		break;
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			ok = jnumber(j);
		else
			ok = jfail(j, "unexpected character");
	}
	j->depth--;
	return ok;
}

int fx_json_check(const char *text, size_t len, char *err, size_t errsz)
{
	struct jp j = {
		.p = (const unsigned char *)text,
		.start = (const unsigned char *)text,
		.end = (const unsigned char *)text + len,
		.err = err,
		.errsz = errsz,
	};

	if (err && errsz)
		err[0] = '\0';
	if (!jvalue(&j))
		return -EINVAL;
	jws(&j);
	if (j.p != j.end) {
		jfail(&j, "trailing data after the value");
		return -EINVAL;
	}
	return 0;
}

size_t fx_longest_line(const char *text, const char **where)
{
	const char *line = text, *best = text;
	size_t longest = 0;

	while (*line) {
		size_t n = strcspn(line, "\n");

		if (n > longest) {
			longest = n;
			best = line;
		}
		line += n;
		if (*line)
			line++;
	}
	if (where)
		*where = best;
	return longest;
}
