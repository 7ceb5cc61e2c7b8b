// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jemalloc heap dumps as files; see jedump.h. A dump of another process is
 * outside input: it is opened without following a symbolic link, only as a
 * regular file, and read up to TK_JEPROF_MAX_LEN.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc/elf_reader.h"
#include "core/internal.h"
#include "alloc/jedump.h"
#include "core/untrusted.h"
#include "alloc/jeprof.h"

int tk_jedump__lg_sample(uint64_t sample_bytes)
{
	int lg;

	if (!sample_bytes)
		return TK_JEDUMP_DEFAULT_LG_SAMPLE;
	lg = 63 - __builtin_clzll(sample_bytes);
	/* round in the log domain: up from 2^(lg + 1/2) (no libm in the library's links) */
	if ((double)sample_bytes / (double)(1ULL << lg) >= 1.4142135623730951)
		lg++;
	return lg > 62 ? 62 : lg;
}

int tk_jedump__malloc_conf(char *buf, size_t size, int lg_sample, const char *prefix)
{
	int n;

	if (!prefix || !*prefix || strpbrk(prefix, ",:\n") || lg_sample < 0 || lg_sample > 62)
		return -EINVAL;
	n = snprintf(buf, size, "prof:true,prof_active:true,prof_accum:true,lg_prof_sample:%d,"
		     "prof_final:true,prof_prefix:%s", lg_sample, prefix);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int tk_jedump__conf_prefix(const char *conf, char *buf, size_t size)
{
	static const char key[] = "prof_prefix:";
	const char *p = conf, *end, *v;
	bool found = false;
	size_t len = 0;

	while (p && *p) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if ((size_t)(end - p) >= sizeof(key) - 1 && !strncmp(p, key, sizeof(key) - 1)) {
			v = p + sizeof(key) - 1;
			len = end - v;
			if (len >= size)
				return -ENAMETOOLONG;
			memcpy(buf, v, len);
			buf[len] = '\0';
			found = true;
		}
		p = *end ? end + 1 : end;
	}
	return found ? 0 : -ENOENT;
}

static int defines_mallctl(const struct tk_elf_sym *sym, void *ctx)
{
	return sym->defined && sym->type == TK_ELF_SYM_FUNC && !strcmp(sym->name, "mallctl");
}

static bool is_jemalloc_lib(const char *path)
{
	struct tk_elf *elf;
	struct stat st;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || tk_elf__open(path, &elf))
		return false;
	ok = tk_elf__for_each_sym(elf, defines_mallctl, NULL) == 1;
	tk_elf__free(elf);
	return ok;
}

int tk_jedump__find_lib(char *buf, size_t size)
{
	static const char *const dirs[] = {
		"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64",
		"/usr/lib", "/usr/local/lib", "/usr/local/lib64",
	};
	const char *env = getenv("TRACEKIT_LIBJEMALLOC");
	char path[PATH_MAX];
	size_t i;

	if (env && *env) {
		if (!is_jemalloc_lib(env) || strlen(env) >= size)
			return -ENOENT;
		snprintf(buf, size, "%s", env);
		return 0;
	}
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], TK_JEDUMP_LIB);
		if (is_jemalloc_lib(path) && strlen(path) < size) {
			/* LD_PRELOAD splits at ':' and ' ' */
			if (strpbrk(path, ": "))
				continue;
			snprintf(buf, size, "%s", path);
			return 0;
		}
	}
	return -ENOENT;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

int tk_jedump__newest(const char *dir, const char *name_prefix, int64_t since_ns, char *path,
		      size_t size, int64_t *mtime_ns)
{
	size_t plen = name_prefix ? strlen(name_prefix) : 0;
	int64_t best = INT64_MIN, t;
	char best_name[NAME_MAX + 1] = "";
	struct dirent *de;
	struct stat st;
	int dfd, err;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".heap"))
			continue;
		if (plen && strncmp(de->d_name, name_prefix, plen))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		if (t < since_ns)
			continue;
		/* the same time: the later name (jemalloc's sequence numbers grow) */
		if (t > best || (t == best && strcmp(de->d_name, best_name) > 0)) {
			best = t;
			snprintf(best_name, sizeof(best_name), "%s", de->d_name);
		}
	}
	closedir(d);
	if (!best_name[0])
		return -ENOENT;
	if ((size_t)snprintf(path, size, "%s/%s", dir, best_name) >= size)
		return -ENAMETOOLONG;
	if (mtime_ns)
		*mtime_ns = best;
	return 0;
}

int tk_jedump__request(int fd, const char *path, int timeout_ms)
{
	char line[PATH_MAX + 8], reply[32];
	int64_t deadline = tk_now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
	size_t len, off = 0, got = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *end;
	long v;
	int n;

	if (fd < 0)
		return -EBADF;
	if (!path || !*path || strchr(path, '\n'))
		return -EINVAL;
	n = snprintf(line, sizeof(line), "D %s\n", path);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	len = n;
	while (off < len) {
		ssize_t w = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? -EPIPE : -errno;
		}
		off += w;
	}
	/* the answer: one line, "0" or a positive errno */
	for (;;) {
		int64_t left = deadline - tk_now_ns(CLOCK_MONOTONIC);
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(left / 1000000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			continue;
		r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		if (r == 0)
			return -EPIPE;
		got += r;
		reply[got] = '\0';
		end = memchr(reply, '\n', got);
		if (end)
			break;
		if (got == sizeof(reply) - 1)
			return -EPROTO;
	}
	*end = '\0';
	errno = 0;
	v = strtol(reply, &end, 10);
	if (errno || end == reply || *end || v < 0 || v > 4095)
		return -EPROTO;
	return -(int)v;
}

/*
 * The dump at @path, in a directory the process chose (its cwd, its
 * prof_prefix): the directory as named, the dump itself as another user's
 * file (core/untrusted.h) — not a symlink, not a mount over it, a regular
 * file (never a FIFO or a device opened), at most TK_JEPROF_MAX_LEN bytes.
 */
static int open_dump(const char *path, struct stat *st)
{
	struct tk_open_rules r = { .flags = TK_OPEN_BENEATH | TK_OPEN_ANY_OWNER,
				   .max_size = TK_JEPROF_MAX_LEN };
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int dfd, fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
			  path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = tk_open_untrusted(dfd, slash ? slash + 1 : path, &r, st);
	close(dfd);
	return fd == -ENODEV || fd == -EISDIR ? -EINVAL : fd;
}

/* The whole regular file at @path, at most TK_JEPROF_MAX_LEN bytes. */
static int read_dump(const char *path, char **out, size_t *len)
{
	size_t cap, off = 0;
	struct stat st;
	char *buf, *nb;
	ssize_t n;
	int fd, err;

	fd = open_dump(path, &st);
	if (fd < 0)
		return fd;
	cap = st.st_size + 1 > 4096 ? (size_t)st.st_size + 1 : 4096;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto fail_fd;
	}
	for (;;) {
		if (off == cap - 1) {
			/* it grew since fstat */
			if (cap - 1 >= TK_JEPROF_MAX_LEN) {
				err = -EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + off, cap - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		off += n;
	}
	close(fd);
	buf[off] = '\0';
	*out = buf;
	*len = off;
	return 0;
fail:
	free(buf);
fail_fd:
	close(fd);
	return err;
}

int tk_jedump__load(const char *path, struct tk_symbolizer *s, uint32_t pid, const char *backend,
		    uint64_t *period, struct tk_profile **out)
{
	struct tk_jeprof *d = NULL;
	struct tk_profile *p;
	char *text = NULL;
	size_t len = 0;
	int err;

	*out = NULL;
	err = read_dump(path, &text, &len);
	if (err)
		return err;
	err = tk_jeprof__parse(text, len, &d);
	free(text);
	if (err)
		return err;
	p = tk_profile__new_heap(backend);
	if (!p) {
		tk_jeprof__free(d);
		return -ENOMEM;
	}
	err = tk_jeprof__to_profile(d, s, pid, p);
	if (period)
		*period = tk_jeprof__sample_period(d);
	tk_jeprof__free(d);
	if (err) {
		tk_profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}

/* ---- the program's own jemalloc ----------------------------------------------- */

#define MAX_JE_PREFIXES 4

struct prog_syms {
	char prefixes[MAX_JE_PREFIXES][32];	/* of PREFIXmallctl */
	int nr_prefixes;
	bool unwinder;		/* prof_unwind_callback*, unw_backtrace, _Unwind_Backtrace */
};

static int scan_prog_sym(const struct tk_elf_sym *sym, void *ctx)
{
	struct prog_syms *ps = ctx;
	size_t len = strlen(sym->name);
	int i;

	if (!strncmp(sym->name, "prof_unwind_callback", 20) ||
	    !strcmp(sym->name, "unw_backtrace") ||
	    (!sym->defined && !strcmp(sym->name, "_Unwind_Backtrace")))
		ps->unwinder = true;
	if (!sym->defined || sym->type != TK_ELF_SYM_FUNC || len < 7 ||
	    strcmp(sym->name + len - 7, "mallctl") || len - 7 >= sizeof(ps->prefixes[0]))
		return 0;
	for (i = 0; i < ps->nr_prefixes; i++)
		if (strlen(ps->prefixes[i]) == len - 7 && !strncmp(ps->prefixes[i], sym->name, len - 7))
			return 0;
	if (ps->nr_prefixes < MAX_JE_PREFIXES) {
		memcpy(ps->prefixes[ps->nr_prefixes], sym->name, len - 7);
		ps->prefixes[ps->nr_prefixes][len - 7] = '\0';
		ps->nr_prefixes++;
	}
	return 0;
}

struct find_func {
	const char *name;
};

static int find_func_cb(const struct tk_elf_sym *sym, void *ctx)
{
	const struct find_func *f = ctx;

	return sym->defined && sym->type == TK_ELF_SYM_FUNC && !strcmp(sym->name, f->name);
}

static int needed_cb(const char *name, void *ctx)
{
	struct tk_jedump_program *out = ctx;

	if (strncmp(name, "libjemalloc.so", 14))
		return 0;
	snprintf(out->needed, sizeof(out->needed), "%s", name);
	return 1;
}

int tk_jedump__program(const char *path, struct tk_jedump_program *out)
{
	struct prog_syms ps = {};
	struct tk_elf *elf;
	char name[64];
	int err, i, j;

	memset(out, 0, sizeof(*out));
	out->prof_built = -1;
	err = tk_elf__open(path, &elf);
	if (err)
		return err;
	if (tk_elf__for_each_needed(elf, needed_cb, out) == 1) {
		out->linkage = TK_JEDUMP_SHARED;
		goto out;
	}
	tk_elf__for_each_sym(elf, scan_prog_sym, &ps);
	for (i = 0; i < ps.nr_prefixes; i++) {
		struct find_func f = { .name = name };

		snprintf(name, sizeof(name), "%smalloc", ps.prefixes[i]);
		if (tk_elf__for_each_sym(elf, find_func_cb, &f) != 1)
			continue;
		out->linkage = TK_JEDUMP_STATIC;
		snprintf(out->prefix, sizeof(out->prefix), "%s", ps.prefixes[i]);
		for (j = 0; ps.prefixes[i][j] && j < (int)sizeof(out->conf_env) - 12; j++)
			out->conf_env[j] = toupper((unsigned char)ps.prefixes[i][j]);
		snprintf(out->conf_env + j, sizeof(out->conf_env) - j, "MALLOC_CONF");
		if (ps.unwinder)
			out->prof_built = 1;
		else
			out->prof_built = tk_elf__has_symtab(elf) ? 0 : -1;
		break;
	}
out:
	tk_elf__free(elf);
	return 0;
}
