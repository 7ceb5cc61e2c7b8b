// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tk_proc_info__read() on fixture proc trees (PID/comm, PID/maps, PID/environ,
 * symlinks PID/exe and PID/root into the real file system) covering each
 * allocator case, the executable objects (CFI sections, debug files, frame
 * pointers) of fixtures and of shared libraries built here, then on live
 * processes: a child linked with jemalloc and run with MALLOC_CONF=prof:true,
 * ourselves, and the unwinding workloads (unw_chain, fp_yes, unw_mixed,
 * unw_jit, unw_dlopen).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procinfo.h"
#include "proc/x86_prologue.h"

#define DEBIAN_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define PID 4321

/* ---- fixture tree --------------------------------------------------------------- */

struct fixture {
	char proc[PATH_MAX];	/* a mkdtemp directory, given as proc_root */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->proc, sizeof(f->proc), "%s/tk-procinfo-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->proc)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	nftw(f->proc, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void fx_path(const struct fixture *f, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fx_path(const struct fixture *f, char *buf, size_t size, const char *fmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if ((size_t)snprintf(buf, size, "%s/%s", f->proc, rel) >= size)
		fail_msg("path too long");
}

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX], *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", tmp, strerror(errno));
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", tmp, strerror(errno));
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void make_symlink(const char *target, const char *path)
{
	unlink(path);
	if (symlink(target, path))
		fail_msg("symlink %s -> %s: %s", path, target, strerror(errno));
}

static void workload(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TK_BUILD_DIR");
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/workloads/%s", dir && *dir ? dir : "build", name);
	if (!realpath(rel, buf) || strlen(buf) >= size)
		fail_msg("%s missing: build it first (make %s)", rel, rel);
}

enum root_kind {
	ROOT_NONE,	/* no PID/root at all */
	ROOT_SLASH,	/* PID/root -> / */
	ROOT_DIR,	/* PID/root is a directory: usr -> /usr, maybe etc/malloc.conf */
};

struct proc_spec {
	const char *comm;
	const char *exe;		/* workload name, or NULL for no PID/exe */
	const char *const *libs;	/* extra mapped paths, NULL-terminated */
	const char *environ;		/* "A=b\0C=d\0", with its length */
	size_t environ_len;
	enum root_kind root;
	const char *etc_conf;		/* target of PID/root/etc/<prefix>malloc.conf */
	const char *etc_conf_name;	/* "malloc.conf" unless set */
	const char *maps;		/* whole maps text instead of generated */
};

/* Build proc/PID for @s; returns the workload path in @exe. */
static void make_proc(struct fixture *f, int pid, const struct proc_spec *s, char *exe,
		      size_t exe_size)
{
	char path[PATH_MAX], maps[16384], exe_buf[PATH_MAX];
	size_t off = 0;
	int i;

	if (!exe) {
		exe = exe_buf;
		exe_size = sizeof(exe_buf);
	}

	fx_path(f, path, sizeof(path), "%d", pid);
	mkdirs(path);
	fx_path(f, path, sizeof(path), "%d/comm", pid);
	write_bytes(path, s->comm, strlen(s->comm));
	exe[0] = '\0';
	if (s->exe) {
		workload(s->exe, exe, exe_size);
		fx_path(f, path, sizeof(path), "%d/exe", pid);
		make_symlink(exe, path);
		off += snprintf(maps + off, sizeof(maps) - off,
				"55d000000000-55d000001000 r--p 00000000 08:01 1001   %s\n"
				"55d000001000-55d000002000 r-xp 00001000 08:01 1001   %s\n",
				exe, exe);
	}
	off += snprintf(maps + off, sizeof(maps) - off,
			"55d000100000-55d000200000 rw-p 00000000 00:00 0      [heap]\n");
	for (i = 0; s->libs && s->libs[i]; i++)
		off += snprintf(maps + off, sizeof(maps) - off,
				"7f%04x000000-7f%04x001000 r--p 00000000 08:01 %d   %s\n"
				"7f%04x001000-7f%04x002000 r-xp 00001000 08:01 %d   %s\n",
				i, i, 2000 + i, s->libs[i], i, i, 2000 + i, s->libs[i]);
	off += snprintf(maps + off, sizeof(maps) - off,
			"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n");
	assert_true(off < sizeof(maps));
	fx_path(f, path, sizeof(path), "%d/maps", pid);
	if (s->maps)
		write_bytes(path, s->maps, strlen(s->maps));
	else
		write_bytes(path, maps, off);
	fx_path(f, path, sizeof(path), "%d/environ", pid);
	write_bytes(path, s->environ ? s->environ : "", s->environ ? s->environ_len : 0);

	fx_path(f, path, sizeof(path), "%d/root", pid);
	if (s->root == ROOT_SLASH) {
		make_symlink("/", path);
	} else if (s->root == ROOT_DIR) {
		mkdirs(path);
		fx_path(f, path, sizeof(path), "%d/root/usr", pid);
		make_symlink("/usr", path);
		if (s->etc_conf) {
			fx_path(f, path, sizeof(path), "%d/root/etc", pid);
			mkdirs(path);
			fx_path(f, path, sizeof(path), "%d/root/etc/%s", pid,
				s->etc_conf_name ? s->etc_conf_name : "malloc.conf");
			make_symlink(s->etc_conf, path);
		}
	}
}

#define ENV(lit) .environ = lit, .environ_len = sizeof(lit) - 1

static void read_info(struct fixture *f, int pid, struct tk_proc_info *pi)
{
	int err = tk_proc_info__read(f->proc, pid, pi);

	if (err)
		fail_msg("tk_proc_info__read: %s", strerror(-err));
	assert_int_equal(pi->pid, pid);
}

static void assert_contains(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

static void need_debian_jemalloc(void)
{
	NEED_DEP(!access(DEBIAN_JEMALLOC, R_OK), "no %s (apt-get install libjemalloc2)\n",
		 DEBIAN_JEMALLOC);
}

/*
 * The build-id as binutils sees it, not as the ELF reader under test does:
 * the "    Build ID: 8586...d5" line of `readelf -n FILE`. False when it has none.
 */
static bool readelf_build_id(const char *path, char *id, size_t size)
{
	char cmd[PATH_MAX + 64], line[512];
	bool found = false;
	int status;
	FILE *p;

	if (strchr(path, '\''))
		fail_msg("cannot quote %s for the shell", path);
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>&1", path);
	p = popen(cmd, "r");
	if (!p)
		fail_msg("popen %s: %s", cmd, strerror(errno));
	while (fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "Build ID: ");
		size_t n;

		if (!s || found)
			continue;
		s += strlen("Build ID: ");
		n = strspn(s, "0123456789abcdef");
		if (n && n < size && (s[n] == '\n' || !s[n])) {
			memcpy(id, s, n);
			id[n] = '\0';
			found = true;
		}
	}
	status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s failed (status %#x): is binutils installed?", cmd, status);
	return found;
}

static void expect_build_id(const char *exe, const struct tk_proc_info *pi)
{
	char id[129];

	if (!readelf_build_id(exe, id, sizeof(id)))
		fail_msg("readelf finds no build-id in %s", exe);
	/* GCC and the Debian toolchain default to a 160-bit SHA-1 build-id */
	assert_int_equal(strlen(id), 40);
	assert_true(pi->has_build_id);
	assert_string_equal(pi->build_id, id);
}

/* ---- allocators ------------------------------------------------------------------ */

static void test_glibc(void **state)
{
	static const char *const libs[] = { LIBC, "/usr/lib/x86_64-linux-gnu/libm.so.6", NULL };
	struct proc_spec s = { .comm = "fp_yes\n", .exe = "fp_yes", .libs = libs,
			       .root = ROOT_SLASH };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_string_equal(pi.comm, "fp_yes");
	assert_string_equal(pi.exe, exe);
	assert_int_equal(pi.allocator, TK_ALLOC_GLIBC);
	assert_string_equal(tk_allocator__name(pi.allocator), "glibc");
	assert_string_equal(pi.alloc_object, LIBC);
	assert_false(pi.alloc_static);
	assert_contains(pi.alloc_evidence, "libc.so.6");
	assert_int_equal(pi.jemalloc_prof_built, -1);
	assert_int_equal(pi.jemalloc_prof_active, -1);
	assert_string_equal(pi.jemalloc_prof_active_evidence, "not jemalloc");
	expect_build_id(exe, &pi);
	/* built with -fno-omit-frame-pointer */
	assert_int_equal(pi.frame_pointers, 1);
	assert_true(pi.fp_checked >= 8);
	assert_true(pi.fp_with_frame * 2 >= pi.fp_checked);
	assert_contains(pi.fp_evidence, "heuristic");
}

static void test_no_frame_pointers(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_no", .exe = "fp_no", .libs = libs };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_GLIBC);
	assert_int_equal(pi.frame_pointers, 0);
	assert_true(pi.fp_checked >= 8);
	assert_true(pi.fp_with_frame * 10 < pi.fp_checked);
}

static void test_stripped(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "stripped", .exe = "stripped", .libs = libs };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_GLIBC);
	assert_contains(pi.alloc_evidence, "no symbol table");
	assert_int_equal(pi.frame_pointers, -1);
	assert_string_equal(pi.fp_evidence, "no symbol table");
	assert_int_equal(pi.fp_checked, 0);
	expect_build_id(exe, &pi);
}

static void test_shared_jemalloc_prof_env(void **state)
{
	static const char *const libs[] = { DEBIAN_JEMALLOC, LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = ROOT_DIR,
			       ENV("HOME=/root\0MALLOC_CONF=prof:true,lg_prof_sample:19\0"
				   "PATH=/bin\0") };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	need_debian_jemalloc();
	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_string_equal(tk_allocator__name(pi.allocator), "jemalloc");
	assert_string_equal(pi.alloc_object, DEBIAN_JEMALLOC);
	assert_false(pi.alloc_static);
	assert_string_equal(pi.alloc_prefix, "");
	assert_contains(pi.alloc_evidence, "libjemalloc.so.2");
	/* Debian's libjemalloc.so.2 is built with --enable-prof, libgcc unwinder */
	assert_int_equal(pi.jemalloc_prof_built, 1);
	assert_contains(pi.jemalloc_prof_built_evidence, "heuristic");
	assert_contains(pi.jemalloc_prof_built_evidence, "_Unwind_Backtrace");
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "MALLOC_CONF");
	expect_build_id(exe, &pi);
}

static void test_shared_jemalloc_prof_off(void **state)
{
	static const char *const libs[] = { LIBC, DEBIAN_JEMALLOC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = ROOT_DIR, ENV("MALLOC_CONF=prof:true,prof:false\0") };
	struct tk_proc_info pi;

	need_debian_jemalloc();
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_int_equal(pi.jemalloc_prof_built, 1);
	/* the last setting wins */
	assert_int_equal(pi.jemalloc_prof_active, 0);
	assert_contains(pi.jemalloc_prof_active_evidence, "prof:false");
}

static void test_shared_jemalloc_no_conf(void **state)
{
	static const char *const libs[] = { DEBIAN_JEMALLOC, LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = ROOT_DIR,
			       /* prof_prefix is not prof; MALLOC_CONFX is not MALLOC_CONF */
			       ENV("MALLOC_CONFX=prof:true\0"
				   "MALLOC_CONF=prof_prefix:x,narenas:2\0") };
	struct tk_proc_info pi;

	need_debian_jemalloc();
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_int_equal(pi.jemalloc_prof_active, -1);
	assert_contains(pi.jemalloc_prof_active_evidence, "MALLOC_CONF");
	assert_contains(pi.jemalloc_prof_active_evidence, "/etc/malloc.conf");
}

static void test_shared_jemalloc_etc_conf(void **state)
{
	static const char *const libs[] = { DEBIAN_JEMALLOC, LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = ROOT_DIR, .etc_conf = "prof:true,lg_prof_interval:30" };
	struct tk_proc_info pi;

	need_debian_jemalloc();
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "/etc/malloc.conf");

	/* the environment is read after /etc/malloc.conf and wins */
	s.environ = "MALLOC_CONF=prof:false";
	s.environ_len = strlen(s.environ) + 1;
	make_proc(*state, PID + 1, &s, NULL, 0);
	read_info(*state, PID + 1, &pi);
	assert_int_equal(pi.jemalloc_prof_active, 0);
	assert_contains(pi.jemalloc_prof_active_evidence, "MALLOC_CONF");
}

/* Without PID/root the library cannot be opened: a fixture never falls back to the host path. */
static void test_shared_jemalloc_unreadable(void **state)
{
	static const char *const libs[] = { DEBIAN_JEMALLOC, LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = ROOT_NONE, ENV("MALLOC_CONF=prof:true\0") };
	struct tk_proc_info pi;

	need_debian_jemalloc();
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_int_equal(pi.jemalloc_prof_built, -1);
	assert_contains(pi.jemalloc_prof_built_evidence, "cannot open");
	assert_int_equal(pi.jemalloc_prof_active, 1);
}

static void test_static_prefixed_jemalloc(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fake_rjem", .exe = "fake_rjem", .libs = libs,
			       .root = ROOT_DIR, ENV("_RJEM_MALLOC_CONF=prof:true\0") };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	/* found in the binary, although libc.so.6 is mapped */
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_true(pi.alloc_static);
	assert_string_equal(pi.alloc_object, exe);
	assert_string_equal(pi.alloc_prefix, "_rjem_");
	assert_contains(pi.alloc_evidence, "_rjem_mallctl");
	assert_contains(pi.alloc_evidence, "_rjem_malloc_conf");
	/* no prof unwinder in it */
	assert_int_equal(pi.jemalloc_prof_built, 0);
	assert_contains(pi.jemalloc_prof_built_evidence, "heuristic");
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "_RJEM_MALLOC_CONF");
	expect_build_id(exe, &pi);
}

static void test_static_prefixed_wrong_env(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fake_rjem", .exe = "fake_rjem", .libs = libs,
			       .root = ROOT_DIR, .etc_conf = "prof:true",
			       /* what an unprefixed jemalloc would read, not this one */
			       ENV("MALLOC_CONF=prof:true\0") };
	struct tk_proc_info pi;

	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_string_equal(pi.alloc_prefix, "_rjem_");
	assert_int_equal(pi.jemalloc_prof_active, -1);
	assert_contains(pi.jemalloc_prof_active_evidence, "_RJEM_MALLOC_CONF");
	assert_contains(pi.jemalloc_prof_active_evidence, "/etc/_rjem_malloc.conf");

	/* its own /etc/_rjem_malloc.conf counts */
	s.etc_conf_name = "_rjem_malloc.conf";
	s.environ = NULL;
	make_proc(*state, PID + 1, &s, NULL, 0);
	read_info(*state, PID + 1, &pi);
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "/etc/_rjem_malloc.conf");
}

static void test_static_jemalloc_compiled_conf(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_static", .exe = "jemalloc_static",
			       .libs = libs, .root = ROOT_DIR };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_true(pi.alloc_static);
	assert_string_equal(pi.alloc_prefix, "");
	assert_string_equal(pi.alloc_object, exe);
	/* Debian's libjemalloc.a: the libgcc unwinder callback is in .symtab */
	assert_int_equal(pi.jemalloc_prof_built, 1);
	assert_contains(pi.jemalloc_prof_built_evidence, "prof_unwind_callback");
	/* malloc_conf = "prof:true,..." compiled into the program */
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "malloc_conf");

	/* MALLOC_CONF overrides the compiled-in string */
	s.environ = "MALLOC_CONF=prof:false";
	s.environ_len = strlen(s.environ) + 1;
	make_proc(*state, PID + 1, &s, NULL, 0);
	read_info(*state, PID + 1, &pi);
	assert_int_equal(pi.jemalloc_prof_active, 0);
	assert_contains(pi.jemalloc_prof_active_evidence, "MALLOC_CONF");
}

static void test_tcmalloc(void **state)
{
	static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4", LIBC,
					    NULL };
	struct proc_spec s = { .comm = "server", .exe = "fp_yes", .libs = libs };
	struct tk_proc_info pi;

	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_TCMALLOC);
	assert_string_equal(tk_allocator__name(pi.allocator), "tcmalloc");
	assert_string_equal(pi.alloc_object, libs[0]);
	assert_false(pi.alloc_static);
	assert_contains(pi.alloc_evidence, "libtcmalloc.so.4");
	assert_int_equal(pi.jemalloc_prof_built, -1);
}

static void test_tcmalloc_minimal_and_mimalloc(void **state)
{
	static const char *const tc[] = { LIBC, "/opt/x/lib/libtcmalloc_minimal.so.4.5.9", NULL };
	static const char *const mi[] = { LIBC, "/usr/local/lib/libmimalloc.so.2.1", NULL };
	struct proc_spec s = { .comm = "server", .exe = "fp_no", .libs = tc };
	struct tk_proc_info pi;

	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_TCMALLOC);

	s.libs = mi;
	make_proc(*state, PID + 1, &s, NULL, 0);
	read_info(*state, PID + 1, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_MIMALLOC);
	assert_string_equal(tk_allocator__name(pi.allocator), "mimalloc");
	assert_string_equal(pi.alloc_object, mi[1]);
	assert_contains(pi.alloc_evidence, "libmimalloc.so.2.1");
}

static void test_static_glibc(void **state)
{
	struct proc_spec s = { .comm = "static_glibc", .exe = "static_glibc" };
	struct tk_proc_info pi;
	char exe[PATH_MAX];

	make_proc(*state, PID, &s, exe, sizeof(exe));
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_GLIBC);
	assert_true(pi.alloc_static);
	assert_string_equal(pi.alloc_object, exe);
	assert_contains(pi.alloc_evidence, "__libc_malloc");
}

static void test_unknown(void **state)
{
	/* a glibc program whose maps (here) show no libc: nothing to go by */
	static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/libfoo.so.1", NULL };
	struct proc_spec s = { .comm = "odd", .exe = "fp_no", .libs = libs };
	struct tk_proc_info pi;

	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_int_equal(pi.allocator, TK_ALLOC_UNKNOWN);
	assert_string_equal(tk_allocator__name(pi.allocator), "unknown");
	assert_string_equal(pi.alloc_object, "");
	assert_contains(pi.alloc_evidence, "no known allocator");
	assert_int_equal(pi.frame_pointers, 0);
}

static void test_kernel_thread(void **state)
{
	struct proc_spec s = { .comm = "kworker/0:1", .maps = "" };
	struct tk_proc_info pi;

	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, &pi);
	assert_string_equal(pi.comm, "kworker/0:1");
	assert_string_equal(pi.exe, "");
	assert_int_equal(pi.allocator, TK_ALLOC_UNKNOWN);
	assert_false(pi.has_build_id);
	assert_int_equal(pi.frame_pointers, -1);
}

static void test_errors(void **state)
{
	struct proc_spec s = { .comm = "bad", .exe = "fp_yes", .maps = "not a maps file\n" };
	struct fixture *f = *state;
	struct tk_proc_info pi;

	assert_int_equal(tk_proc_info__read(f->proc, 999999, &pi), -ENOENT);
	assert_int_equal(pi.pid, 999999);
	assert_int_equal(tk_proc_info__read(f->proc, 0, &pi), -EINVAL);
	make_proc(f, PID, &s, NULL, 0);
	assert_int_equal(tk_proc_info__read(f->proc, PID, &pi), -EINVAL);
	assert_int_equal(tk_proc_info__read("/nonexistent-proc-root", 1, &pi), -ENOENT);
}

/* ---- executable objects: CFI and frame pointers ----------------------------------------- */

/* The object of @pi whose path ends in @suffix ("/libc.so.6", "[vdso]"), or NULL. */
static const struct tk_proc_object *find_obj(const struct tk_proc_info *pi, const char *suffix)
{
	size_t n = strlen(suffix);
	unsigned int i;

	for (i = 0; i < pi->nr_objects; i++) {
		size_t m = strlen(pi->objects[i].path);

		if (m >= n && !strcmp(pi->objects[i].path + m - n, suffix))
			return &pi->objects[i];
	}
	return NULL;
}

static const struct tk_proc_object *need_obj(const struct tk_proc_info *pi, const char *suffix)
{
	const struct tk_proc_object *o = find_obj(pi, suffix);
	unsigned int i;

	if (!o) {
		for (i = 0; i < pi->nr_objects; i++)
			print_message("object %u: %s\n", i, pi->objects[i].path);
		fail_msg("no object ending in %s among %u", suffix, pi->nr_objects);
	}
	return o;
}

/* Our own vdso's image and its size (a real one, for a fixture's PID/mem). */
static size_t self_vdso(const void **img)
{
	char line[512];
	unsigned long start = 0, end = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &start, &end) == 2)
			break;
	fclose(f);
	if (!end) {
		print_message("skip: this process has no [vdso]\n");
		skip();
	}
	*img = (const void *)start;
	return end - start;
}

/* Write @len bytes at offset @off of a (sparse) file. */
static void write_at(const char *path, off_t off, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

/*
 * A fixture process mapping fp_no (twice executable), libc, an anonymous
 * executable page, a named anonymous one, the vdso (PID/mem holds a real one)
 * and the vsyscall page.
 */
static void test_objects(void **state)
{
	struct fixture *f = *state;
	struct proc_spec s = { .comm = "fp_no", .exe = "fp_no", .root = ROOT_SLASH };
	const struct tk_proc_object *o;
	char exe[PATH_MAX], maps[4096], path[PATH_MAX];
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const void *vdso;
	size_t vdso_len = self_vdso(&vdso);

	assert_non_null(pi);
	workload("fp_no", exe, sizeof(exe));
	snprintf(maps, sizeof(maps),
		 "10000000-%08zx r-xp 00000000 00:00 0      [vdso]\n"
		 "55d000000000-55d000001000 r--p 00000000 08:01 1001   %s\n"
		 "55d000001000-55d000002000 r-xp 00001000 08:01 1001   %s\n"
		 "55d000003000-55d000004000 r-xp 00003000 08:01 1001   %s\n"
		 "7f0000000000-7f0000001000 r-xp 00001000 08:01 2000   " LIBC "\n"
		 "7f0000100000-7f0000101000 rwxp 00000000 00:00 0\n"
		 "7f0000200000-7f0000201000 r-xp 00000000 00:00 0      [anon:jit]\n"
		 "7f0000300000-7f0000301000 rw-p 00000000 00:00 0      [heap]\n"
		 "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n",
		 0x10000000 + vdso_len, exe, exe, exe);
	s.maps = maps;
	make_proc(f, PID, &s, NULL, 0);
	fx_path(f, path, sizeof(path), "%d/mem", PID);
	write_at(path, 0x10000000, vdso, vdso_len);
	read_info(f, PID, pi);

	/* the program once, though mapped executable twice; in maps' order */
	assert_int_equal(pi->nr_objects, 3);
	assert_int_equal(pi->objects_omitted, 0);
	assert_int_equal(pi->anon_exec, 2);
	assert_string_equal(pi->objects[0].path, "[vdso]");
	assert_string_equal(pi->objects[1].path, exe);
	assert_string_equal(pi->objects[2].path, LIBC);

	o = &pi->objects[1];
	assert_true(o->is_main);
	assert_int_equal(o->err, 0);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_true(o->eh_frame_fdes >= 10);
	/* the main binary's own verdict, -fomit-frame-pointer */
	assert_int_equal(o->frame_pointers, 0);
	assert_int_equal(o->fp_checked, pi->fp_checked);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");
	assert_int_equal(o->start, 0x55d000001000ULL);
	assert_int_equal(o->end, 0x55d000002000ULL);

	/* Debian's libc: .eh_frame, no frame pointers */
	o = &pi->objects[2];
	assert_false(o->is_main);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_true(o->eh_frame_fdes > 1000);
	assert_int_not_equal(o->frame_pointers, 1);
	assert_true(o->fp_checked >= 8);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");
	assert_string_equal(o->debug_file, "");

	/* the vdso, read from PID/mem at its address */
	o = &pi->objects[0];
	assert_int_equal(o->err, 0);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_string_equal(tk_cfi_source__name(o->cfi), "eh_frame");
	free(pi);
}

/* Mapped objects that cannot be read are listed, with why. */
static void test_objects_unreadable(void **state)
{
	static const char *const libs[] = { LIBC, "/opt/gone/libgone.so.1", NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs,
			       .root = ROOT_NONE };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;

	assert_non_null(pi);
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, pi);
	assert_int_equal(pi->nr_objects, 3);
	/* no PID/root, no map_files: a fixture never falls back to the host's files */
	o = need_obj(pi, "/libgone.so.1");
	assert_int_equal(o->err, -ENOENT);
	assert_int_equal(o->cfi, TK_CFI_UNKNOWN);
	assert_int_equal(o->frame_pointers, -1);
	assert_string_equal(tk_proc_object__unwind(o), "unknown");
	assert_string_equal(tk_cfi_source__name(o->cfi), "unknown");
	assert_contains(o->fp_evidence, "cannot open");
	assert_int_equal(need_obj(pi, "/libc.so.6")->err, -ENOENT);
	/* the main binary still is PID/exe: built with frame pointers */
	o = need_obj(pi, "/fp_yes");
	assert_true(o->is_main);
	assert_int_equal(o->err, 0);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_int_equal(o->frame_pointers, 1);
	assert_string_equal(tk_proc_object__unwind(o), "cfi+fp");
	free(pi);
}

/* More executable objects than the list holds: the first are listed, the rest counted. */
static void test_objects_bounded(void **state)
{
	struct proc_spec s = { .comm = "many", .maps = NULL };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	size_t size = 80 * 128, off = 0;
	char *maps = malloc(size);
	int i;

	assert_non_null(pi);
	assert_non_null(maps);
	for (i = 0; i < TK_PROC_MAX_OBJECTS + 6; i++)
		off += snprintf(maps + off, size - off,
				"7f%04x000000-7f%04x001000 r-xp 0 08:01 %d /opt/l/lib%d.so\n",
				i, i, 3000 + i, i);
	assert_true(off < size);
	s.maps = maps;
	make_proc(*state, PID, &s, NULL, 0);
	read_info(*state, PID, pi);
	assert_int_equal(pi->nr_objects, TK_PROC_MAX_OBJECTS);
	assert_int_equal(pi->objects_omitted, 6);
	assert_string_equal(pi->objects[0].path, "/opt/l/lib0.so");
	assert_string_equal(pi->objects[TK_PROC_MAX_OBJECTS - 1].path, "/opt/l/lib63.so");
	free(maps);
	free(pi);
}

/* Run a shell command; fail the test when it fails. */
static void run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_cmd(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	status = system(cmd);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s failed (status %#x)", cmd, status);
}

static void need_toolchain(void)
{
	NEED_DEP(!system("command -v gcc >/dev/null 2>&1 && command -v objcopy >/dev/null 2>&1"),
		 "no gcc or objcopy to build shared libraries with\n");
}

/* Twelve functions that use the stack and call on: enough for the prologue heuristic. */
static const char lib_src[] =
	"#include <stdio.h>\n"
	"volatile unsigned long s;\n"
	"#define F(n, next) __attribute__((noinline)) unsigned long f##n(unsigned long x)\\\n"
	"	{ char b[40]; snprintf(b, sizeof(b), \"%lu\", x); s += b[1];\\\n"
	"	  return next(x + 1) + b[0]; }\n"
	"__attribute__((noinline)) unsigned long f13(unsigned long x) { return x * 3; }\n"
	"F(12, f13) F(11, f12) F(10, f11) F(9, f10) F(8, f9) F(7, f8) F(6, f7) F(5, f6)\n"
	"F(4, f5) F(3, f4) F(2, f3) F(1, f2)\n";

/*
 * Build PID/root/opt/lib/NAME from lib_src with gcc @flags, map it in a
 * fixture process beside fp_no, and read the process into @pi. With @debug,
 * its debug information moves to a separate file: @debug "link" puts it at
 * /usr/lib/debug/opt/lib/NAME.debug named by .gnu_debuglink, "build-id" at
 * /usr/lib/debug/.build-id/xx/yyyy.debug.
 */
static const struct tk_proc_object *lib_object(struct fixture *f, int pid, const char *name,
					       const char *flags, const char *debug,
					       struct tk_proc_info *pi)
{
	static const char *libs[2];
	char lib_path[PATH_MAX], dir[PATH_MAX], src[PATH_MAX], dbg[PATH_MAX], id[129];
	char mapped[PATH_MAX];
	struct proc_spec s = { .comm = "libuser", .exe = "fp_no", .libs = libs,
			       .root = ROOT_DIR };

	snprintf(mapped, sizeof(mapped), "/opt/lib/%s", name);
	libs[0] = mapped;
	make_proc(f, pid, &s, NULL, 0);
	fx_path(f, dir, sizeof(dir), "%d/root/opt/lib", pid);
	mkdirs(dir);
	fx_path(f, src, sizeof(src), "%d/root/opt/lib/%s.c", pid, name);
	write_bytes(src, lib_src, strlen(lib_src));
	fx_path(f, lib_path, sizeof(lib_path), "%d/root%s", pid, mapped);
	run_cmd("gcc -O2 -fPIC -shared %s -o '%s' '%s'", flags, lib_path, src);
	if (debug && !strcmp(debug, "link")) {
		fx_path(f, dir, sizeof(dir), "%d/root/usr/lib/debug/opt/lib", pid);
		mkdirs(dir);
		snprintf(dbg, sizeof(dbg), "%s/%s.debug", dir, name);
		run_cmd("objcopy --only-keep-debug '%s' '%s' && strip --strip-debug '%s' && "
			"cd '%s' && objcopy --add-gnu-debuglink='%s.debug' '%s'",
			lib_path, dbg, lib_path, dir, name, lib_path);
	} else if (debug) {
		if (!readelf_build_id(lib_path, id, sizeof(id)))
			fail_msg("%s has no build-id", lib_path);
		fx_path(f, dir, sizeof(dir), "%d/root/usr/lib/debug/.build-id/%.2s", pid, id);
		mkdirs(dir);
		snprintf(dbg, sizeof(dbg), "%s/%s.debug", dir, id + 2);
		run_cmd("objcopy --only-keep-debug '%s' '%s' && strip --strip-debug '%s'",
			lib_path, dbg, lib_path);
	}
	read_info(f, pid, pi);
	return need_obj(pi, mapped);
}

/* The CFI's source and the frame pointer verdict of shared libraries built here. */
static void test_objects_cfi_sources(void **state)
{
	/* -fno-asynchronous-unwind-tables -fno-unwind-tables: no .eh_frame of their own */
	static const char nocfi[] = "-fno-asynchronous-unwind-tables -fno-unwind-tables";
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;
	char flags[256];
	int pid = PID;

	assert_non_null(pi);
	need_toolchain();

	/* gcc's default: .eh_frame, no frame pointers */
	o = lib_object(*state, pid++, "libdefault.so", "-fomit-frame-pointer", NULL, pi);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_true(o->eh_frame_fdes >= 13);	/* f1..f13, and what crt*.o bring */
	assert_int_equal(o->frame_pointers, 0);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");

	/* .eh_frame and frame pointers */
	o = lib_object(*state, pid++, "libboth.so", "-fno-omit-frame-pointer", NULL, pi);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_int_equal(o->frame_pointers, 1);
	assert_string_equal(tk_proc_object__unwind(o), "cfi+fp");

	/* neither: .eh_frame is nothing but the 4-byte terminator the linker adds */
	snprintf(flags, sizeof(flags), "%s -fomit-frame-pointer", nocfi);
	o = lib_object(*state, pid++, "libneither.so", flags, NULL, pi);
	assert_int_equal(o->cfi, TK_CFI_NONE);
	assert_int_equal(o->frame_pointers, 0);
	assert_string_equal(tk_proc_object__unwind(o), "none");

	/* frame pointers only */
	snprintf(flags, sizeof(flags), "%s -fno-omit-frame-pointer", nocfi);
	o = lib_object(*state, pid++, "libfp.so", flags, NULL, pi);
	assert_int_equal(o->cfi, TK_CFI_NONE);
	assert_int_equal(o->frame_pointers, 1);
	assert_string_equal(tk_proc_object__unwind(o), "fp");

	/* -g without unwind tables: its own .debug_frame */
	snprintf(flags, sizeof(flags), "%s -g -fomit-frame-pointer", nocfi);
	o = lib_object(*state, pid++, "libdebug.so", flags, NULL, pi);
	assert_int_equal(o->cfi, TK_CFI_DEBUG_FRAME);
	assert_int_equal(o->eh_frame_fdes, -1);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");

	/* the .debug_frame moved to a debug file named by .gnu_debuglink */
	snprintf(flags, sizeof(flags), "%s -g -Wl,--build-id=none", nocfi);
	o = lib_object(*state, pid++, "liblink.so", flags, "link", pi);
	assert_int_equal(o->cfi, TK_CFI_DEBUG_FILE);
	assert_string_equal(o->debug_file, "/usr/lib/debug/opt/lib/liblink.so.debug");
	assert_string_equal(tk_cfi_source__name(o->cfi), "debug_file");
	assert_string_equal(tk_proc_object__unwind(o), "cfi");

	/* ... or found by build-id */
	snprintf(flags, sizeof(flags), "%s -g -Wl,--build-id=sha1", nocfi);
	o = lib_object(*state, pid++, "libbyid.so", flags, "build-id", pi);
	assert_int_equal(o->cfi, TK_CFI_DEBUG_FILE);
	assert_true(!strncmp(o->debug_file, "/usr/lib/debug/.build-id/", 25));
	assert_true(strlen(o->debug_file) == 25 + 2 + 1 + 38 + 6);
	assert_contains(o->debug_file, ".debug");

	/* a debuglink file of another build is not its debug file */
	snprintf(flags, sizeof(flags), "%s -g -Wl,--build-id=sha1", nocfi);
	o = lib_object(*state, pid, "libother.so", flags, "link", pi);
	assert_int_equal(o->cfi, TK_CFI_DEBUG_FILE);	/* its own, at first */
	{
		char lib_path[PATH_MAX], other[PATH_MAX], src[PATH_MAX];
		struct fixture *f = *state;

		fx_path(f, lib_path, sizeof(lib_path), "%d/root/opt/lib/libother.so", pid);
		fx_path(f, src, sizeof(src), "%d/root/opt/lib/libother.so.c", pid);
		fx_path(f, other, sizeof(other), "%d/root/usr/lib/debug/opt/lib/libother.so.debug",
			pid);
		/* another build (one more function), its debug part put in place */
		run_cmd("(cat '%s'; echo 'int other(void) { return 1; }') > '%s.2.c' && "
			"gcc -O2 -fPIC -shared %s -o '%s.2' '%s.2.c' && "
			"objcopy --only-keep-debug '%s.2' '%s'", src, src, flags, lib_path, src,
			lib_path, other);
		read_info(f, pid, pi);
		o = need_obj(pi, "/opt/lib/libother.so");
		assert_int_equal(o->cfi, TK_CFI_NONE);
		assert_string_equal(o->debug_file, "");
	}
	free(pi);
}

/* ---- the prologue classifier --------------------------------------------------------- */

static void test_prologues(void **state)
{
	static const unsigned char plain[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10 };
	static const unsigned char endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5 };
	static const unsigned char alt_mov[] = { 0x55, 0x48, 0x8b, 0xec, 0xc3 };
	/* GCC -O2: push %rbp; mov %rdi,%rcx; lea 0xd79(%rip),%rdx; mov $0x40,%esi;
	 * xor %eax,%eax; mov %rsp,%rbp */
	static const unsigned char scheduled[] = { 0x55, 0x48, 0x89, 0xf9, 0x48, 0x8d, 0x15,
						   0x79, 0x0d, 0x00, 0x00, 0xbe, 0x40, 0x00,
						   0x00, 0x00, 0x31, 0xc0, 0x48, 0x89, 0xe5 };
	/* shrink-wrapped: cmpb $0,0x2e75(%rip); jne; push %rbp; mov %rsp,%rbp */
	static const unsigned char wrapped[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x80, 0x3d, 0x75, 0x2e,
						 0x00, 0x00, 0x00, 0x75, 0x2b, 0x55, 0x48, 0x89,
						 0xe5 };
	/* -fomit-frame-pointer: push %rbp; mov %rdi,%rcx; mov $0x20,%esi; push %rbx;
	 * xor %eax,%eax; mov %rdi,%rbx; sub $0x28,%rsp; mov %rsp,%rbp (%rbp = a buffer) */
	static const unsigned char omitted[] = { 0x55, 0x48, 0x89, 0xf9, 0xbe, 0x20, 0x00, 0x00,
						 0x00, 0x53, 0x31, 0xc0, 0x48, 0x89, 0xfb, 0x48,
						 0x83, 0xec, 0x28, 0x48, 0x89, 0xe5 };
	/* push %rbp; mov %rdi,%rbp: %rbp as an ordinary register */
	static const unsigned char gpr[] = { 0x55, 0x48, 0x89, 0xfd, 0x48, 0x89, 0xe5 };
	/* push %r15; push %rbp; mov %rsp,%rbp */
	static const unsigned char other_push[] = { 0x41, 0x57, 0x55, 0x48, 0x89, 0xe5 };
	static const unsigned char leaf[] = { 0x8d, 0x04, 0x3f, 0xc3 };	/* lea (%rdi,%rdi),%eax */
	static const unsigned char undecodable[] = { 0x55, 0x0f, 0x0b, 0x48, 0x89, 0xe5 }; /* ud2 */

	assert_true(tk_x86__sets_frame_pointer(plain, sizeof(plain)));
	assert_true(tk_x86__sets_frame_pointer(endbr, sizeof(endbr)));
	assert_true(tk_x86__sets_frame_pointer(alt_mov, sizeof(alt_mov)));
	assert_true(tk_x86__sets_frame_pointer(scheduled, sizeof(scheduled)));
	assert_true(tk_x86__sets_frame_pointer(wrapped, sizeof(wrapped)));
	assert_false(tk_x86__sets_frame_pointer(omitted, sizeof(omitted)));
	assert_false(tk_x86__sets_frame_pointer(gpr, sizeof(gpr)));
	assert_false(tk_x86__sets_frame_pointer(other_push, sizeof(other_push)));
	assert_false(tk_x86__sets_frame_pointer(leaf, sizeof(leaf)));
	assert_false(tk_x86__sets_frame_pointer(undecodable, sizeof(undecodable)));
	/* cut short */
	assert_false(tk_x86__sets_frame_pointer(plain, 3));
	assert_false(tk_x86__sets_frame_pointer(scheduled, 10));
	assert_false(tk_x86__sets_frame_pointer(plain, 0));
}

/* ---- live processes ------------------------------------------------------------------ */

/* Run build/workloads/jemalloc_user --wait with MALLOC_CONF=prof:true and read it. */
static void test_live_jemalloc_child(void **state)
{
	char exe[PATH_MAX], line[128] = "", base[64];
	int in[2], out[2], status;
	struct tk_proc_info pi;
	ssize_t n, got = 0;
	pid_t pid;
	int err;

	need_debian_jemalloc();
	workload("jemalloc_user", exe, sizeof(exe));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { exe, "--wait", NULL };
		char *envp[] = { "MALLOC_CONF=prof:true,lg_prof_sample:20", "PATH=/usr/bin:/bin",
				 NULL };

		dup2(in[0], 0);
		dup2(out[1], 1);
		execve(exe, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* "ready opt.prof=1\n": jemalloc is up and says what it thinks itself */
	while (got < (ssize_t)sizeof(line) - 1 && !strchr(line, '\n')) {
		n = read(out[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += n;
		line[got] = '\0';
	}
	err = tk_proc_info__read("/proc", pid, &pi);
	close(in[1]);	/* the child exits */
	close(out[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);

	assert_string_equal(line, "ready opt.prof=1\n");
	assert_int_equal(err, 0);
	assert_string_equal(pi.comm, "jemalloc_user");
	assert_string_equal(pi.exe, exe);
	assert_int_equal(pi.allocator, TK_ALLOC_JEMALLOC);
	assert_false(pi.alloc_static);
	snprintf(base, sizeof(base), "%s", strrchr(pi.alloc_object, '/') + 1);
	assert_string_equal(base, "libjemalloc.so.2");
	assert_int_equal(pi.jemalloc_prof_built, 1);
	/* agrees with the child's own opt.prof */
	assert_int_equal(pi.jemalloc_prof_active, 1);
	assert_contains(pi.jemalloc_prof_active_evidence, "MALLOC_CONF");
	expect_build_id(exe, &pi);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_live_self(void **state)
{
	struct tk_proc_info pi;
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(tk_proc_info__read("/proc", getpid(), &pi), 0);
	assert_string_equal(pi.exe, exe);
	assert_string_equal(pi.comm, "test_procinfo");
	/* cmocka and glibc, no other allocator */
	assert_int_equal(pi.allocator, TK_ALLOC_GLIBC);
	assert_contains(pi.alloc_object, "libc.so.6");
	expect_build_id(exe, &pi);
	/* our own executable objects: this test, cmocka, libelf, libc, ... */
	assert_true(pi.nr_objects >= 5);
	assert_true(need_obj(&pi, "/test_procinfo")->is_main);
	assert_int_equal(need_obj(&pi, "/test_procinfo")->cfi, TK_CFI_EH_FRAME);
	assert_int_equal(need_obj(&pi, "/libc.so.6")->cfi, TK_CFI_EH_FRAME);
	/* NULL means /proc */
	assert_int_equal(tk_proc_info__read(NULL, getpid(), &pi), 0);
	assert_string_equal(pi.exe, exe);
}

/* ---- executable objects of live processes ---------------------------------------------- */

struct child {
	pid_t pid;
	int out;	/* its stdout */
};

/* Start workload @name with @args (NULL-terminated, after argv[0]); its stdout in c->out. */
static void start_child(struct child *c, const char *name, const char *const *args)
{
	char exe[PATH_MAX], *argv[8], byte;
	int out[2], exec_done[2], i;

	workload(name, exe, sizeof(exe));
	argv[0] = exe;
	for (i = 0; args[i] && i < 6; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(exec_done, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(out[1], 1);
		execv(exe, argv);
		_exit(127);
	}
	close(out[1]);
	close(exec_done[1]);
	/* EOF once the exec closed it: from here on, the maps are the workload's */
	assert_int_equal(read(exec_done[0], &byte, 1), 0);
	close(exec_done[0]);
	c->out = out[0];
}

/* Read the child's stdout up to a line starting with @prefix (up to 5 s). */
static void wait_line(struct child *c, const char *prefix)
{
	char buf[4096];
	size_t got = 0;
	int i;

	for (i = 0; i < 500; i++) {
		struct pollfd p = { .fd = c->out, .events = POLLIN };
		char *l;
		ssize_t n;

		buf[got] = '\0';
		for (l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (!strncmp(l, prefix, strlen(prefix)) && strchr(l, '\n'))
				return;
		if (poll(&p, 1, 10) <= 0)
			continue;
		n = read(c->out, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += n;
	}
	fail_msg("no line \"%s...\" from the workload", prefix);
}

/* Wait (up to 5 s) until the child's maps show @what: the dynamic loader has run. */
static void wait_mapped(struct child *c, const char *what)
{
	char rel[64], *maps;
	int i;

	snprintf(rel, sizeof(rel), "/proc/%d/maps", (int)c->pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(rel, "r");
		size_t n = 0;
		bool found = false;

		maps = NULL;
		if (f) {
			while (getline(&maps, &n, f) > 0 && !found)
				found = strstr(maps, what);
			fclose(f);
		}
		free(maps);
		if (found)
			return;
		usleep(10000);
	}
	fail_msg("%s never mapped in process %d", what, (int)c->pid);
}

static void stop_child(struct child *c)
{
	int status;

	kill(c->pid, SIGKILL);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	close(c->out);
}

/* A program without frame pointers: CFI for itself and for libc, from a live process. */
static void test_live_objects_nofp(void **state)
{
	static const char *const args[] = { "10", NULL };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;
	struct child c;
	int err;

	assert_non_null(pi);
	start_child(&c, "unw_chain", args);
	wait_mapped(&c, "/libc.so.6");
	err = tk_proc_info__read("/proc", c.pid, pi);
	stop_child(&c);
	assert_int_equal(err, 0);
	o = need_obj(pi, "/unw_chain");
	assert_true(o->is_main);
	assert_int_equal(o->err, 0);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_int_not_equal(o->frame_pointers, 1);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");
	o = need_obj(pi, "/libc.so.6");
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");
	o = need_obj(pi, "[vdso]");
	assert_int_equal(o->err, 0);
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_non_null(find_obj(pi, "/ld-linux-x86-64.so.2"));
	assert_int_equal(pi->anon_exec, 0);
	free(pi);
}

/* A program with frame pointers: "cfi+fp"; libc stays "cfi". */
static void test_live_objects_fp(void **state)
{
	static const char *const args[] = { "1000000000", NULL };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;
	struct child c;
	int err;

	assert_non_null(pi);
	start_child(&c, "fp_yes", args);
	wait_mapped(&c, "/libc.so.6");
	err = tk_proc_info__read("/proc", c.pid, pi);
	stop_child(&c);
	assert_int_equal(err, 0);
	o = need_obj(pi, "/fp_yes");
	assert_int_equal(o->frame_pointers, 1);
	assert_string_equal(tk_proc_object__unwind(o), "cfi+fp");
	assert_string_equal(tk_proc_object__unwind(need_obj(pi, "/libc.so.6")), "cfi");
	free(pi);
}

/* unw_mixed's library is there with its CFI; unw_jit's code page is counted, not listed. */
static void test_live_objects_mixed_and_jit(void **state)
{
	static const char *const args[] = { "-v", "10", NULL };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;
	struct child c;
	unsigned int i;
	int err;

	assert_non_null(pi);
	start_child(&c, "unw_mixed", args);
	wait_line(&c, "burn ");
	err = tk_proc_info__read("/proc", c.pid, pi);
	stop_child(&c);
	assert_int_equal(err, 0);
	o = need_obj(pi, "/libunwfp.so");
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_false(o->is_main);
	/* one function: too few for the prologue heuristic to say */
	assert_int_equal(o->frame_pointers, -1);
	assert_string_equal(tk_proc_object__unwind(need_obj(pi, "/unw_mixed")), "cfi");

	start_child(&c, "unw_jit", args);
	wait_line(&c, "burn ");
	err = tk_proc_info__read("/proc", c.pid, pi);
	stop_child(&c);
	assert_int_equal(err, 0);
	assert_int_equal(pi->anon_exec, 1);
	for (i = 0; i < pi->nr_objects; i++)
		assert_true(pi->objects[i].path[0] == '/' ||
			    !strcmp(pi->objects[i].path, "[vdso]"));
	free(pi);
}

/* unw_dlopen's library is listed once it is loaded, not before. */
static void test_live_objects_dlopen(void **state)
{
	static const char *const args[] = { "-v", "0.5", "10", NULL };
	struct tk_proc_info *pi = calloc(1, sizeof(*pi));
	const struct tk_proc_object *o;
	struct child c;
	int err, err2;

	assert_non_null(pi);
	start_child(&c, "unw_dlopen", args);
	wait_mapped(&c, "/libc.so.6");
	err = tk_proc_info__read("/proc", c.pid, pi);
	if (!err && find_obj(pi, "/libunwlate.so"))
		fail_msg("libunwlate.so mapped before the dlopen");
	wait_line(&c, "late_outer ");
	err2 = tk_proc_info__read("/proc", c.pid, pi);
	stop_child(&c);
	assert_int_equal(err, 0);
	assert_int_equal(err2, 0);
	o = need_obj(pi, "/libunwlate.so");
	assert_int_equal(o->cfi, TK_CFI_EH_FRAME);
	assert_string_equal(tk_proc_object__unwind(o), "cfi");
	free(pi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_glibc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_frame_pointers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stripped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_jemalloc_prof_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_jemalloc_prof_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_jemalloc_no_conf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_jemalloc_etc_conf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_jemalloc_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_static_prefixed_jemalloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_static_prefixed_wrong_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_static_jemalloc_compiled_conf, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tcmalloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcmalloc_minimal_and_mimalloc, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_static_glibc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects_cfi_sources, setup, teardown),
		cmocka_unit_test(test_prologues),
		cmocka_unit_test(test_live_jemalloc_child),
		cmocka_unit_test(test_live_self),
		cmocka_unit_test(test_live_objects_nofp),
		cmocka_unit_test(test_live_objects_fp),
		cmocka_unit_test(test_live_objects_mixed_and_jit),
		cmocka_unit_test(test_live_objects_dlopen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
