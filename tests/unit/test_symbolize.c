// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The symbolizer on real processes: workloads from $TK_BUILD_DIR/workloads
 * print the addresses of their functions and sleep; each test captures the
 * process, kills and reaps it, and only then resolves, so names must survive
 * the exit. PIE, non-PIE, stripped (module+offset), a shared library, a
 * deleted executable (through map_files), debug files found by .gnu_debuglink
 * (next to the file, under debug_root, CRC checked) and by build-id, mappings
 * added by hand, a fixture maps file, the vdso and libc of this process, and
 * tk_cpu_profile__build on top. Timings are printed, not asserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "proc/elf_reader.h"
#include "proc/maps.h"
#include "profile/profile.h"
#include "cpu/stacks.h"
#include "sym/symbolize.h"
#include "sym/symbolize_int.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

/* ---- helpers ---------------------------------------------------------------------- */

static void workload(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TK_BUILD_DIR");
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/workloads/%s", dir && *dir ? dir : "build", name);
	if (!realpath(rel, buf) || access(buf, X_OK))
		fail_msg("%s missing: build it first (make %s)", rel, rel);
	(void)size;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#define MAX_NAMES 16

struct child {
	pid_t pid;
	int nr;
	char names[MAX_NAMES][32];
	uint64_t addrs[MAX_NAMES];
};

/* Start @path, read its "NAME 0xADDRESS" lines up to "ready". */
static void spawn(const char *path, struct child *c)
{
	char line[256];
	int fds[2];
	FILE *f;

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[32];
		unsigned long long a;

		if (!strcmp(line, "ready\n"))
			break;
		if (sscanf(line, "%31s %llx", name, &a) == 2 && c->nr < MAX_NAMES) {
			strcpy(c->names[c->nr], name);
			c->addrs[c->nr++] = a;
		}
	}
	fclose(f);
	if (!c->nr)
		fail_msg("%s printed no addresses", path);
}

static uint64_t addr_of(const struct child *c, const char *name)
{
	int i;

	for (i = 0; i < c->nr; i++) {
		if (!strcmp(c->names[i], name))
			return c->addrs[i];
	}
	fail_msg("no address for %s", name);
	return 0;
}

static void reap(struct child *c)
{
	int status;

	kill(c->pid, SIGKILL);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	/* gone: nothing more can be read from /proc */
	assert_int_equal(kill(c->pid, 0), -1);
}

static struct tk_symbolizer *sym_new(const char *proc_root, const char *debug_root)
{
	struct tk_symbolizer_opts o = {
		.sz = sizeof(o),
		.proc_root = proc_root,
		.debug_root = debug_root,
	};
	struct tk_symbolizer *s;

	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	return s;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static void expect_name(struct tk_symbolizer *s, uint32_t pid, uint64_t addr, const char *name)
{
	struct tk_sym_frame f;
	int err = tk_symbolizer__user(s, pid, 0, addr, &f);

	if (err || strcmp(f.function, name))
		fail_msg("0x%" PRIx64 ": want %s, got %d %s (module %s)", addr, name, err,
			 f.function ? f.function : "(null)", f.module ? f.module : "(null)");
}

static void file_build_id(const char *path, char *buf, size_t size)
{
	struct tk_elf *e;

	assert_int_equal(tk_elf__open(path, &e), 0);
	assert_true(tk_elf__build_id(e, buf, size) > 0);
	tk_elf__free(e);
}

/* Run a shell command quietly; its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void make_tmpdir(char *buf, size_t size)
{
	snprintf(buf, size, "%s/tk-sym-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(buf));
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- the workloads' own functions --------------------------------------------------- */

/* Names of the sym_* workloads, checked after the process is gone. */
static void check_sym_names(struct tk_symbolizer *s, const struct child *c, const char *module)
{
	static const char *const fns[] = { "sym_hot", "sym_caller", "sym_ends_in_call", "main",
					    "sym_wait" };
	struct tk_sym_frame f;
	size_t i;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		expect_name(s, c->pid, addr_of(c, fns[i]), fns[i]);
		expect_name(s, c->pid, addr_of(c, fns[i]) + 3, fns[i]);
	}
	/* the call ending sym_ends_in_call: its return address looked up one byte back */
	expect_name(s, c->pid, addr_of(c, "sym_wait_ret") - 1, "sym_ends_in_call");
	assert_int_equal(tk_symbolizer__user(s, c->pid, 0, addr_of(c, "sym_hot"), &f), 0);
	assert_non_null(f.module);
	assert_true(ends_with(f.module, module));
	assert_true(f.map_start <= addr_of(c, "sym_hot") && addr_of(c, "sym_hot") < f.map_limit);
	assert_int_equal(f.module_offset, addr_of(c, "sym_hot") - f.map_start + f.map_offset);
	/* not captured under another generation */
	assert_int_equal(tk_symbolizer__user(s, c->pid, 1, addr_of(c, "sym_hot"), &f), -ESRCH);
	assert_null(f.module);
}

static void test_pie_names_survive_exit(void **state)
{
	char path[PATH_MAX], bid[TK_BUILD_ID_HEX];
	struct tk_symbolizer_stats st;
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct child c;

	workload("sym_target", path, sizeof(path));
	s = sym_new(NULL, NULL);
	spawn(path, &c);
	assert_false(tk_symbolizer__has(s, c.pid, 0));
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	assert_true(tk_symbolizer__has(s, c.pid, 0));
	reap(&c);
	check_sym_names(s, &c, "/sym_target");
	file_build_id(path, bid, sizeof(bid));
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, addr_of(&c, "main"), &f), 0);
	assert_non_null(f.build_id);
	assert_string_equal(f.build_id, bid);
	assert_string_equal(f.module, path);
	/* capturing a process that is gone */
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 1), -ESRCH);
	assert_false(tk_symbolizer__has(s, c.pid, 1));
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.capture_failed, 1);
	assert_true(st.elf_opened >= 2);	/* sym_target, libc, ld.so, vdso */
	tk_symbolizer__free(s);
}

static void test_nopie(void **state)
{
	struct tk_symbolizer *s;
	char path[PATH_MAX];
	struct child c;

	workload("sym_nopie", path, sizeof(path));
	s = sym_new(NULL, NULL);
	spawn(path, &c);
	/* a fixed-address executable: its functions sit where the file says */
	assert_true(addr_of(&c, "main") < 0x10000000);
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	reap(&c);
	check_sym_names(s, &c, "/sym_nopie");
	tk_symbolizer__free(s);
}

struct find_map {
	uint64_t addr;
	struct tk_map m;
	bool found;
};

static int find_map_cb(const struct tk_map *m, void *ctx)
{
	struct find_map *fm = ctx;

	if (fm->addr >= m->start && fm->addr < m->end) {
		fm->m = *m;
		fm->found = true;
	}
	return 0;
}

/* The mapping of live process @pid that holds @addr, from its maps. */
static void live_map(pid_t pid, uint64_t addr, struct tk_map *m)
{
	struct find_map fm = { .addr = addr };
	char path[64], *text = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(getdelim(&text, &len, '\0', f) > 0);
	fclose(f);
	assert_int_equal(tk_maps__parse(text, find_map_cb, &fm), 0);
	free(text);
	assert_true(fm.found);
	*m = fm.m;
}

static void test_stripped_module_offset(void **state)
{
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	char path[PATH_MAX];
	struct tk_map m;
	struct child c;
	uint64_t a;

	workload("sym_stripped", path, sizeof(path));
	s = sym_new(NULL, NULL);
	spawn(path, &c);
	a = addr_of(&c, "sym_hot");
	live_map(c.pid, a, &m);
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	reap(&c);
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, a, &f), -ENOENT);
	assert_null(f.function);
	assert_string_equal(f.module, path);
	assert_int_equal(f.map_start, m.start);
	assert_int_equal(f.map_limit, m.end);
	assert_int_equal(f.map_offset, m.offset);
	assert_int_equal(f.module_offset, a - m.start + m.offset);
	assert_non_null(f.build_id);
	tk_symbolizer__free(s);
}

static void test_shared_library(void **state)
{
	char path[PATH_MAX], lib[PATH_MAX];
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct child c;

	workload("sym_shlib", path, sizeof(path));
	snprintf(lib, sizeof(lib), "%.*s/libsymhot.so", (int)(strrchr(path, '/') - path), path);
	s = sym_new(NULL, NULL);
	spawn(path, &c);
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	reap(&c);
	check_sym_names(s, &c, "/sym_shlib");
	/* exported, and static (only in the library's .symtab) */
	expect_name(s, c.pid, addr_of(&c, "symhot_spin") + 2, "symhot_spin");
	expect_name(s, c.pid, addr_of(&c, "symhot_inner") + 2, "symhot_inner");
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, addr_of(&c, "symhot_spin"), &f), 0);
	assert_string_equal(f.module, lib);
	assert_int_equal(f.module_offset, addr_of(&c, "symhot_spin") - f.map_start + f.map_offset);
	tk_symbolizer__free(s);
}

/* An executable deleted while it runs: only /proc/PID/map_files still opens it. */
static void test_deleted_executable(void **state)
{
	char src[PATH_MAX], dir[PATH_MAX], copy[PATH_MAX + 16];
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct child c;

	workload("sym_target", src, sizeof(src));
	make_tmpdir(dir, sizeof(dir));
	snprintf(copy, sizeof(copy), "%s/sym_deleted", dir);
	assert_int_equal(run("cp '%s' '%s'", src, copy), 0);
	s = sym_new(NULL, NULL);
	spawn(copy, &c);
	assert_int_equal(unlink(copy), 0);
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	reap(&c);
	check_sym_names(s, &c, "/sym_deleted");
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, addr_of(&c, "main"), &f), 0);
	assert_string_equal(f.module, copy);	/* without " (deleted)" */
	tk_symbolizer__free(s);
	rm_tree(dir);
}

/* ---- debug files --------------------------------------------------------------------- */

struct dbg_fixture {
	char dir[PATH_MAX];
	char root[PATH_MAX + 16];	/* debug_root */
	char src[PATH_MAX];		/* sym_target */
};

static void dbg_setup(struct dbg_fixture *d)
{
	workload("sym_target", d->src, sizeof(d->src));
	if (run("objcopy --version"))
		skip();
	make_tmpdir(d->dir, sizeof(d->dir));
	snprintf(d->root, sizeof(d->root), "%s/debugroot", d->dir);
	assert_int_equal(mkdir(d->root, 0755), 0);
}

static bool has_symtab(const char *path)
{
	struct tk_elf *e;
	bool r;

	assert_int_equal(tk_elf__open(path, &e), 0);
	r = tk_elf__has_symtab(e);
	tk_elf__free(e);
	return r;
}

/* Run @path, capture it with a fresh symbolizer on @debug_root, reap it, check names. */
static void check_debug_names(const char *path, const char *debug_root, bool want_names)
{
	struct tk_symbolizer *s = sym_new(NULL, debug_root);
	struct tk_sym_frame f;
	struct child c;

	spawn(path, &c);
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	reap(&c);
	if (want_names) {
		check_sym_names(s, &c, strrchr(path, '/'));
	} else {
		assert_int_equal(tk_symbolizer__user(s, c.pid, 0, addr_of(&c, "sym_hot"), &f),
				 -ENOENT);
		assert_string_equal(f.module, path);
	}
	tk_symbolizer__free(s);
}

static void test_debuglink(void **state)
{
	char exe[PATH_MAX + 16], dbg[PATH_MAX + 16], sub[3 * PATH_MAX];
	struct dbg_fixture d;

	dbg_setup(&d);
	snprintf(exe, sizeof(exe), "%s/sym_dbg", d.dir);
	snprintf(dbg, sizeof(dbg), "%s/sym_dbg.debug", d.dir);
	assert_int_equal(run("objcopy --only-keep-debug '%s' '%s'", d.src, dbg), 0);
	assert_int_equal(run("objcopy --strip-all --add-gnu-debuglink='%s' '%s' '%s'", dbg, d.src,
			     exe), 0);
	assert_false(has_symtab(exe));

	/* the debug file next to the executable */
	check_debug_names(exe, d.root, true);
	/* under debug_root + the executable's directory */
	snprintf(sub, sizeof(sub), "%s%s", d.root, d.dir);
	assert_int_equal(run("mkdir -p '%s' && mv '%s' '%s/'", sub, dbg, sub), 0);
	check_debug_names(exe, d.root, true);
	/* nowhere: module+offset */
	assert_int_equal(run("rm -r '%s'/*", d.root), 0);
	check_debug_names(exe, d.root, false);
	rm_tree(d.dir);
}

static void test_debug_build_id(void **state)
{
	char exe[PATH_MAX + 16], dbg[3 * PATH_MAX], bid[TK_BUILD_ID_HEX];
	struct dbg_fixture d;

	dbg_setup(&d);
	snprintf(exe, sizeof(exe), "%s/sym_bid", d.dir);
	assert_int_equal(run("objcopy --strip-all '%s' '%s'", d.src, exe), 0);
	file_build_id(exe, bid, sizeof(bid));
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s", d.root, bid);
	assert_int_equal(run("mkdir -p '%s'", dbg), 0);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", d.root, bid, bid + 2);
	assert_int_equal(run("objcopy --only-keep-debug '%s' '%s'", d.src, dbg), 0);
	check_debug_names(exe, d.root, true);
	rm_tree(d.dir);
}

/* Without build-ids only the CRC-32 of .gnu_debuglink tells a debug file from another. */
static void test_debuglink_crc(void **state)
{
	char full[PATH_MAX + 16], exe[PATH_MAX + 16], dbg[PATH_MAX + 16], other[PATH_MAX + 16];
	char nopie[PATH_MAX];
	struct dbg_fixture d;

	dbg_setup(&d);
	workload("sym_nopie", nopie, sizeof(nopie));
	snprintf(full, sizeof(full), "%s/full", d.dir);
	snprintf(exe, sizeof(exe), "%s/sym_crc", d.dir);
	snprintf(dbg, sizeof(dbg), "%s/sym_crc.debug", d.dir);
	snprintf(other, sizeof(other), "%s/other", d.dir);
	assert_int_equal(run("objcopy --remove-section=.note.gnu.build-id '%s' '%s'", d.src, full),
			 0);
	assert_int_equal(run("objcopy --only-keep-debug '%s' '%s'", full, dbg), 0);
	assert_int_equal(run("objcopy --strip-all --add-gnu-debuglink='%s' '%s' '%s'", dbg, full,
			     exe), 0);
	check_debug_names(exe, d.root, true);
	/* another program's debug file under the same name: refused */
	assert_int_equal(run("objcopy --remove-section=.note.gnu.build-id '%s' '%s'", nopie,
			     other), 0);
	assert_int_equal(run("objcopy --only-keep-debug '%s' '%s'", other, dbg), 0);
	check_debug_names(exe, d.root, false);
	rm_tree(d.dir);
}

/* ---- this process: libc, the vdso, timings ------------------------------------------ */

static void test_self_libc_and_vdso(void **state)
{
	struct tk_symbolizer *s = sym_new(NULL, NULL);
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct tk_elf_index *vidx;
	struct tk_elf_file vf;
	struct tk_sym_frame f;
	struct tk_map m;
	size_t i;
	void *p;

	assert_int_equal(tk_symbolizer__capture(s, getpid(), 0), 0);
	p = dlsym(RTLD_DEFAULT, "pause");
	assert_non_null(p);
	assert_int_equal(tk_symbolizer__user(s, getpid(), 0, (uint64_t)p + 1, &f), 0);
	assert_string_equal(f.function, "pause");
	assert_true(ends_with(f.module, "/libc.so.6"));
	assert_non_null(f.build_id);
	/* our own code */
	assert_int_equal(tk_symbolizer__user(s, getpid(), 0, (uint64_t)test_self_libc_and_vdso,
					     &f), 0);
	assert_string_equal(f.function, "test_self_libc_and_vdso");

	/* the vdso: its first function, by our own reading of the image */
	if (!base)
		skip();
	live_map(getpid(), base, &m);
	assert_string_equal(m.path, "[vdso]");
	assert_int_equal(tk_elf_file__open_mem(&vf, (void *)base, m.end - m.start), 0);
	assert_int_equal(tk_elf_index__build(&vf, NULL, &vidx), 0);
	tk_elf_file__close(&vf);
	assert_true(vidx->nr_syms > 0);
	for (i = 0; i < vidx->nr_syms; i++) {
		uint64_t vaddr, a = base + vidx->syms[i].addr;

		/* mapped whole from offset 0, one segment: offset = vaddr */
		assert_true(tk_elf_index__vaddr(vidx, vidx->syms[i].addr, &vaddr));
		assert_int_equal(vaddr, vidx->syms[i].addr);
		assert_int_equal(tk_symbolizer__user(s, getpid(), 0, a, &f), 0);
		assert_string_equal(f.module, "[vdso]");
		assert_string_equal(f.function, vidx->names + vidx->syms[i].name);
	}
	tk_elf_index__free(vidx);
	tk_symbolizer__free(s);
}

static void test_timings(void **state)
{
	struct tk_debug_search ds = { .debug_root = "/usr/lib/debug" };
	struct tk_symbolizer_stats st0, st1;
	struct tk_symbolizer *s;
	struct tk_elf_index *idx;
	struct tk_elf_file f;
	struct tk_sym_frame fr;
	char path[PATH_MAX];
	struct child c;
	double t0, cold, warm, self;
	uint64_t a[4];
	int i, n = 1000000;
	void *p;

	/* libc: one parse, with its debug file when installed */
	if (!access(LIBC, R_OK)) {
		t0 = now_us();
		assert_int_equal(tk_elf_file__open(&f, LIBC), 0);
		assert_int_equal(tk_elf_index__build(&f, &ds, &idx), 0);
		t0 = now_us() - t0;
		tk_elf_file__close(&f);
		print_message("ELF index of libc: %.0f us, %zu functions from %s%s\n", t0,
			      idx->nr_syms,
			      idx->from == TK_SYMS_DEBUG_FILE ? "debug file " :
			      idx->from == TK_SYMS_SYMTAB ? ".symtab" : ".dynsym",
			      idx->debug_path ? idx->debug_path : "");
		tk_elf_index__free(idx);
	}

	workload("sym_shlib", path, sizeof(path));
	s = sym_new(NULL, NULL);
	/* libc, ld.so and the vdso cached by this process */
	assert_int_equal(tk_symbolizer__capture(s, getpid(), 0), 0);
	spawn(path, &c);
	tk_symbolizer__stats(s, &st0);
	t0 = now_us();
	assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	cold = now_us() - t0;
	tk_symbolizer__stats(s, &st1);
	/* only the program and its library are new */
	assert_int_equal(st1.elf_opened - st0.elf_opened, 2);
	t0 = now_us();
	for (i = 0; i < 100; i++)
		assert_int_equal(tk_symbolizer__capture(s, c.pid, 0), 0);
	warm = (now_us() - t0) / 100;
	tk_symbolizer__stats(s, &st0);
	assert_int_equal(st0.elf_opened, st1.elf_opened);
	assert_int_equal(st0.processes, 2);
	t0 = now_us();
	for (i = 0; i < 100; i++)
		assert_int_equal(tk_symbolizer__capture(s, getpid(), 0), 0);
	self = (now_us() - t0) / 100;
	reap(&c);
	print_message("capture: sym_shlib with libc cached %.0f us, all cached %.0f us; "
		      "this test (10 libraries) all cached %.0f us\n", cold, warm, self);

	p = dlsym(RTLD_DEFAULT, "pause");
	a[0] = addr_of(&c, "sym_hot") + 1;
	a[1] = addr_of(&c, "symhot_inner") + 1;
	a[2] = addr_of(&c, "main") + 1;
	a[3] = (uint64_t)p;
	t0 = now_us();
	for (i = 0; i < n; i++) {
		if (tk_symbolizer__user(s, (i & 3) == 3 ? getpid() : c.pid, 0, a[i & 3], &fr))
			fail();
	}
	print_message("resolve: %.0f ns per address (4 addresses, 2 processes)\n",
		      (now_us() - t0) * 1e3 / n);
	tk_symbolizer__free(s);
}

/* ---- mappings added by hand, fixture maps ---------------------------------------------- */

static void test_add_mapping(void **state)
{
	char path[PATH_MAX], deleted[PATH_MAX + 16];
	struct tk_symbolizer *s = sym_new(NULL, NULL);
	struct tk_sym_frame f;
	struct tk_map m;
	struct child c;
	uint64_t a;

	workload("sym_target", path, sizeof(path));
	spawn(path, &c);
	a = addr_of(&c, "sym_hot");
	live_map(c.pid, a, &m);
	/* as a perf MMAP2 record gives it, " (deleted)" and all */
	snprintf(deleted, sizeof(deleted), "%s (deleted)", path);
	assert_int_equal(tk_symbolizer__add_mapping(s, c.pid, 0, m.start, m.end, m.offset,
						    deleted), 0);
	reap(&c);
	assert_false(tk_symbolizer__has(s, c.pid, 0));	/* added, not captured */
	expect_name(s, c.pid, a, "sym_hot");
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, a, &f), 0);
	assert_string_equal(f.module, path);

	/* a newer mapping over the middle of it wins there, the rest stays */
	assert_int_equal(tk_symbolizer__add_mapping(s, c.pid, 0, a & ~0xfffull,
						    (a & ~0xfffull) + 0x1000, 0, "[vdso]"), 0);
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, a, &f), -ENOENT);
	assert_string_equal(f.module, "[vdso]");
	/* the parts around it keep their file, the part after it at its own offset */
	if ((a & ~0xfffull) > m.start) {
		tk_symbolizer__user(s, c.pid, 0, m.start, &f);
		assert_non_null(f.module);
		assert_string_equal(f.module, path);
		assert_int_equal(f.map_offset, m.offset);
	}
	if ((a & ~0xfffull) + 0x1000 < m.end) {
		tk_symbolizer__user(s, c.pid, 0, (a & ~0xfffull) + 0x1000, &f);
		assert_non_null(f.module);
		assert_string_equal(f.module, path);
		assert_int_equal(f.map_start, (a & ~0xfffull) + 0x1000);
		assert_int_equal(f.map_offset, m.offset + (f.map_start - m.start));
		assert_int_equal(f.map_limit, m.end);
	}
	/* anonymous executable memory is JIT code: a mapping, no names of a file */
	assert_int_equal(tk_symbolizer__add_mapping(s, c.pid, 0, 0x1000, 0x2000, 0, "//anon"), 0);
	assert_int_equal(tk_symbolizer__user(s, c.pid, 0, 0x1800, &f), -ENOENT);
	assert_string_equal(f.module, "[jit]");
	assert_true(f.jit);
	assert_null(f.function);
	assert_int_equal(tk_symbolizer__add_mapping(s, c.pid, 0, 0x2000, 0x1000, 0, path), -EINVAL);
	tk_symbolizer__free(s);
}

/*
 * Ended processes go at a prune, and only those queued before its mark:
 * the others, and the files' indexes, stay. A process retired twice, or
 * never added, drops nothing.
 */
static void test_retire_prune(void **state)
{
	struct tk_symbolizer *s = sym_new(NULL, NULL);
	struct tk_symbolizer_stats st;
	char path[PATH_MAX];
	struct tk_sym_frame f;
	uint64_t mark;
	uint32_t pid;

	workload("sym_target", path, sizeof(path));
	for (pid = 1000; pid < 1010; pid++)
		assert_int_equal(tk_symbolizer__add_mapping(s, pid, 7, 0x400000, 0x401000, 0, path),
				 0);
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.procs_held, 10);
	assert_int_equal(tk_symbolizer__retired(s), 0);
	/* 1000..1003 end; 1003 twice; 4242 was never there */
	for (pid = 1000; pid < 1004; pid++)
		assert_int_equal(tk_symbolizer__retire(s, pid, 7), 0);
	assert_int_equal(tk_symbolizer__retire(s, 1003, 7), 0);
	assert_int_equal(tk_symbolizer__retire(s, 4242, 0), 0);
	mark = tk_symbolizer__retired(s);
	assert_int_equal(mark, 6);
	/* queued after the mark: stays at this prune */
	assert_int_equal(tk_symbolizer__retire(s, 1004, 7), 0);
	/* the lookup cache points at one that goes */
	assert_int_equal(tk_symbolizer__user(s, 1002, 7, 0x400010, &f) == -ESRCH, false);
	assert_int_equal(tk_symbolizer__prune(s, mark), 4);
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.procs_held, 6);
	assert_int_equal(st.procs_pruned, 4);
	assert_int_equal(tk_symbolizer__user(s, 1002, 7, 0x400010, &f), -ESRCH);
	assert_int_equal(tk_symbolizer__user(s, 1000, 7, 0x400010, &f), -ESRCH);
	assert_int_not_equal(tk_symbolizer__user(s, 1004, 7, 0x400010, &f), -ESRCH);
	assert_int_not_equal(tk_symbolizer__user(s, 1009, 7, 0x400010, &f), -ESRCH);
	assert_non_null(f.module);
	assert_string_equal(f.module, path);
	/* an old mark again: nothing; then the rest of the queue */
	assert_int_equal(tk_symbolizer__prune(s, mark), 0);
	assert_int_equal(tk_symbolizer__prune(s, tk_symbolizer__retired(s)), 1);
	assert_int_equal(tk_symbolizer__user(s, 1004, 7, 0x400010, &f), -ESRCH);
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.procs_held, 5);
	tk_symbolizer__free(s);
}

/* The executable segment of @path: its file offset and virtual address, page-aligned. */
static void exec_segment(const char *path, uint64_t *offset, uint64_t *vaddr, uint64_t *size)
{
	GElf_Phdr ph;
	size_t n, i;
	Elf *e;
	int fd;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getphdrnum(e, &n), 0);
	for (i = 0; i < n; i++) {
		assert_non_null(gelf_getphdr(e, i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			break;
	}
	assert_true(i < n);
	*offset = ph.p_offset & ~0xfffull;
	*vaddr = ph.p_vaddr & ~0xfffull;
	*size = ((ph.p_offset + ph.p_filesz + 0xfff) & ~0xfffull) - *offset;
	elf_end(e);
	close(fd);
}

struct sym_find {
	const char *name;
	uint64_t value;
};

static int sym_find_cb(const struct tk_elf_sym *sym, void *ctx)
{
	struct sym_find *sf = ctx;

	if (sym->defined && !strcmp(sym->name, sf->name)) {
		sf->value = sym->value;
		return 1;
	}
	return 0;
}

static uint64_t sym_value(const char *path, const char *name)
{
	struct sym_find sf = { name, 0 };
	struct tk_elf *e;

	assert_int_equal(tk_elf__open(path, &e), 0);
	assert_int_equal(tk_elf__for_each_sym(e, sym_find_cb, &sf), 1);
	tk_elf__free(e);
	return sf.value;
}

/*
 * A maps file in a fixture /proc with no map_files and no root: the file is
 * opened by its path only when its device and inode are the maps line's.
 */
static void test_fixture_maps(void **state)
{
	const uint64_t bias = 0x555555554000, other = 0x7f1234560000;
	char dir[PATH_MAX], proc[PATH_MAX + 16], rel[PATH_MAX * 2], path[PATH_MAX];
	uint64_t off, vaddr, size, hot;
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct stat st;
	FILE *fp;

	workload("sym_target", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	exec_segment(path, &off, &vaddr, &size);
	hot = sym_value(path, "sym_hot");
	make_tmpdir(dir, sizeof(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(rel, sizeof(rel), "%s/4242", proc);
	assert_int_equal(run("mkdir -p '%s'", rel), 0);
	snprintf(rel, sizeof(rel), "%s/4242/maps", proc);
	fp = fopen(rel, "w");
	assert_non_null(fp);
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r--p 00000000 %02x:%02x %lu %s\n", bias, bias + vaddr,
		major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, path);
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n", bias + vaddr,
		bias + vaddr + size, off, major(st.st_dev), minor(st.st_dev),
		(unsigned long)st.st_ino, path);
	/* the same path, another inode: a different file of that name */
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n", other,
		other + size, off, major(st.st_dev), minor(st.st_dev),
		(unsigned long)st.st_ino + 1, path);
	/* that inode on another device: a different file too */
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n",
		other + 0x100000, other + 0x100000 + size, off, major(st.st_dev) + 1,
		minor(st.st_dev), (unsigned long)st.st_ino, path);
	fprintf(fp, "7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n");
	fprintf(fp, "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n");
	fclose(fp);

	s = sym_new(proc, "/nonexistent");
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_true(tk_symbolizer__has(s, 4242, 0));
	expect_name(s, 4242, bias + hot, "sym_hot");
	/* the other inode: the file is not opened, the frame stays module+offset */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, other + hot - vaddr, &f), -ENOENT);
	assert_string_equal(f.module, path);
	assert_int_equal(f.module_offset, hot - vaddr + off);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, other + 0x100000 + hot - vaddr, &f),
			 -ENOENT);
	/* JIT code in anonymous memory: a mapping of JIT code, unnamed */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000800, &f), -ENOENT);
	assert_string_equal(f.module, "[jit]");
	assert_true(f.jit);
	/* the vsyscall page: a module, no function */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0xffffffffff600400, &f), -ENOENT);
	assert_string_equal(f.module, "[vsyscall]");
	assert_int_equal(f.module_offset, 0x400);
	/* not executable: not kept */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, bias + 0x10, &f), -ESRCH);
	/*
	 * Captured again while it exits: its maps show only the program now. What
	 * the first capture knew of the same image stays (the vsyscall page).
	 */
	fp = fopen(rel, "w");
	assert_non_null(fp);
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n", bias + vaddr,
		bias + vaddr + size, off, major(st.st_dev), minor(st.st_dev),
		(unsigned long)st.st_ino, path);
	fclose(fp);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	expect_name(s, 4242, bias + hot, "sym_hot");
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0xffffffffff600400, &f), -ENOENT);
	assert_string_equal(f.module, "[vsyscall]");
	/* another image at the same pid (an exec the capture was not told of): replaced */
	fp = fopen(rel, "w");
	assert_non_null(fp);
	fprintf(fp, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n",
		bias + 0x100000 + vaddr, bias + 0x100000 + vaddr + size, off, major(st.st_dev),
		minor(st.st_dev), (unsigned long)st.st_ino, path);
	fclose(fp);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0xffffffffff600400, &f), -ESRCH);
	expect_name(s, 4242, bias + 0x100000 + hot, "sym_hot");
	/* a process the fixture does not have */
	assert_int_equal(tk_symbolizer__capture(s, 4343, 0), -ESRCH);
	tk_symbolizer__free(s);
	rm_tree(dir);
}

/* ---- tk_cpu_profile__build ------------------------------------------------------------- */

static const char *loc_function(const struct tk_profile *p, uint64_t loc)
{
	const struct tk_location *l = &p->locations[loc - 1];

	assert_true(l->function_id > 0);
	return p->functions[l->function_id - 1].name;
}

static const struct tk_sample *sample_of(const struct tk_profile *p, uint32_t pid, uint32_t tid)
{
	size_t i;

	for (i = 0; i < p->nr_samples; i++) {
		if (p->samples[i].pid == pid && p->samples[i].tid == tid)
			return &p->samples[i];
	}
	fail_msg("no sample of %u/%u", pid, tid);
	return NULL;
}

/*
 * The cache of a profile build is sized once from tk_cpu_profile__frames:
 * 24000 distinct user frames of 40 processes and 500 kernel ones, each in
 * many stacks (leaf and return addresses apart), estimated within 5 %.
 */
static void test_profile_frames(void **state)
{
	uint64_t k[4], u[6];
	struct tk_stacks *t = tk_stacks__new();
	size_t est, want = 0, i, j;

	assert_non_null(t);
	assert_int_equal(tk_cpu_profile__frames(t), 0);
	for (i = 0; i < 8000; i++) {
		uint32_t pid = 1000 + i % 40;

		for (j = 0; j < 6; j++)
			u[j] = 0x400000 + ((i / 40) * 6 + j) * 16;	/* 200 × 6 per pid */
		for (j = 0; j < 4; j++)
			k[j] = 0xffffffff81000000 + ((i + j) % 125) * 64;
		/* each stack three times, from three threads */
		for (j = 0; j < 3; j++)
			assert_int_equal(tk_stacks__add(t, pid, pid + j, 0, "w", k, 4, u, 6, 1,
							false), 0);
	}
	/* user: 40 pids × 1200 addresses, the first of each stack a leaf: 6 keys a stack */
	want += 40 * 200 * 6;
	/* kernel: 125 addresses, each as a leaf and as a return address */
	want += 125 * 2;
	est = tk_cpu_profile__frames(t);
	print_message("distinct frames %zu, estimated %zu\n", want, est);
	assert_true(est > want - want / 20 && est < want + want / 20);
	tk_stacks__free(t);
}

static void test_profile_build(void **state)
{
	static const char kallsyms[] = "ffffffff81000000 T _stext\n"
				       "ffffffff81000100 T kfunc_a\n"
				       "ffffffff81000200 t kfunc_b\n"
				       "ffffffff81000300 T kfunc_c\n"
				       "ffffffff81000400 D some_data\n";
	char dir[PATH_MAX], proc[PATH_MAX + 16], rel[PATH_MAX * 2], target[PATH_MAX];
	char stripped[PATH_MAX], want[PATH_MAX];
	const char *names1[] = { "kfunc_a", "kfunc_b", "[kernel]+0x0", "sym_hot",
				 "sym_ends_in_call", "main" };
	uint64_t k1[3], u1[3], u2[3], unsym = 0, mid;
	const struct tk_sample *sm;
	struct tk_symbolizer *s;
	struct tk_stacks *t;
	struct tk_profile *p;
	struct child c1, c2;
	struct tk_map m2;
	size_t i;
	FILE *fp;

	workload("sym_target", target, sizeof(target));
	workload("sym_stripped", stripped, sizeof(stripped));
	make_tmpdir(dir, sizeof(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	assert_int_equal(mkdir(proc, 0755), 0);
	snprintf(rel, sizeof(rel), "%s/kallsyms", proc);
	fp = fopen(rel, "w");
	assert_non_null(fp);
	fputs(kallsyms, fp);
	fclose(fp);

	/* the processes' own /proc entries under a fixture root that has its own kallsyms */
	spawn(target, &c1);
	spawn(stripped, &c2);
	snprintf(rel, sizeof(rel), "%s/%d", proc, (int)c1.pid);
	snprintf(want, sizeof(want), "/proc/%d", (int)c1.pid);
	assert_int_equal(symlink(want, rel), 0);
	snprintf(rel, sizeof(rel), "%s/%d", proc, (int)c2.pid);
	snprintf(want, sizeof(want), "/proc/%d", (int)c2.pid);
	assert_int_equal(symlink(want, rel), 0);
	live_map(c2.pid, addr_of(&c2, "sym_hot"), &m2);
	s = sym_new(proc, NULL);
	assert_int_equal(tk_symbolizer__capture(s, c1.pid, 0), 0);
	assert_int_equal(tk_symbolizer__capture(s, c2.pid, 0), 0);
	reap(&c1);
	reap(&c2);

	k1[0] = 0xffffffff81000110;		/* leaf in kfunc_a */
	k1[1] = 0xffffffff81000300;		/* kfunc_b's call returns to kfunc_c's start */
	k1[2] = 0;
	u1[0] = addr_of(&c1, "sym_hot") + 3;
	u1[1] = addr_of(&c1, "sym_wait_ret");	/* the call that ends sym_ends_in_call */
	u1[2] = addr_of(&c1, "main") + 1;
	u2[0] = addr_of(&c2, "sym_hot");	/* stripped: module+offset */
	u2[1] = 0x10;				/* nothing mapped there */
	u2[2] = u1[0];				/* c1's address, in c2: another location */
	t = tk_stacks__new();
	assert_non_null(t);
	assert_int_equal(tk_stacks__add(t, c1.pid, c1.pid, 0, "sym_target", k1, 3, u1, 3, 3, false),
			 0);
	assert_int_equal(tk_stacks__add(t, c1.pid, c1.pid + 1, 0, "sym_target", k1, 3, u1, 3, 1,
					false), 0);
	assert_int_equal(tk_stacks__add(t, c2.pid, c2.pid, 0, "sym_stripped", NULL, 0, u2, 3, 2,
					false), 0);
	p = tk_profile__new_cpu("test", 100);
	assert_non_null(p);
	assert_int_equal(tk_cpu_profile__build(t, s, p, &unsym, NULL), 0);
	assert_int_equal(p->nr_samples, 3);
	/* "[kernel]+0x0" twice; the stripped frame and two unknown ones */
	assert_int_equal(unsym, 5);
	{
		struct tk_sym_frame f;

		/*
		 * kallsyms was read once for the stacks' own kernel addresses, its
		 * table not kept: with the file gone, those still resolve, another
		 * does not
		 */
		snprintf(rel, sizeof(rel), "%s/kallsyms", proc);
		assert_int_equal(unlink(rel), 0);
		assert_int_equal(tk_symbolizer__kernel_status(s), 0);
		assert_int_equal(tk_symbolizer__kernel(s, k1[0], &f), 0);
		assert_string_equal(f.function, "kfunc_a");
		assert_int_equal(tk_symbolizer__kernel(s, k1[1] - 1, &f), 0);
		assert_string_equal(f.function, "kfunc_b");
		assert_int_equal(tk_symbolizer__kernel(s, 0xffffffff81000210, &f), -ESRCH);
	}

	sm = sample_of(p, c1.pid, c1.pid);
	assert_int_equal(sm->values[0], 3);
	assert_int_equal(sm->values[1], 3 * p->period);
	assert_string_equal(sm->comm, "sym_target");
	assert_int_equal(sm->nr_locations, 6);
	for (i = 0; i < 6; i++) {
		const struct tk_location *l = &p->locations[sm->location_ids[i] - 1];

		assert_string_equal(loc_function(p, sm->location_ids[i]), names1[i]);
		/* addresses as sampled, return addresses included */
		assert_int_equal(l->address, i < 3 ? k1[i] : u1[i - 3]);
		assert_int_equal(l->kernel, i < 3);
	}
	mid = p->locations[sm->location_ids[0] - 1].mapping_id;
	assert_true(mid > 0);
	assert_string_equal(p->mappings[mid - 1].file, "[kernel.kallsyms]");
	mid = p->locations[sm->location_ids[3] - 1].mapping_id;
	assert_true(mid > 0);
	assert_string_equal(p->mappings[mid - 1].file, target);
	assert_non_null(p->mappings[mid - 1].build_id);
	/* the other thread: the same locations */
	assert_memory_equal(sample_of(p, c1.pid, c1.pid + 1)->location_ids, sm->location_ids,
			    6 * sizeof(*sm->location_ids));

	sm = sample_of(p, c2.pid, c2.pid);
	assert_int_equal(sm->values[0], 2);
	assert_int_equal(sm->nr_locations, 3);
	snprintf(want, sizeof(want), "sym_stripped+0x%" PRIx64,
		 addr_of(&c2, "sym_hot") - m2.start + m2.offset);
	assert_string_equal(loc_function(p, sm->location_ids[0]), want);
	assert_string_equal(loc_function(p, sm->location_ids[1]), "[unknown]");
	assert_string_equal(loc_function(p, sm->location_ids[2]), "[unknown]");
	assert_int_equal(p->locations[sm->location_ids[1] - 1].address, 0x10);
	/* the same address in two processes: two locations */
	assert_int_not_equal(sm->location_ids[2], sample_of(p, c1.pid, c1.pid)->location_ids[3]);

	tk_profile__free(p);
	tk_stacks__free(t);
	tk_symbolizer__free(s);
	rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie_names_survive_exit),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_stripped_module_offset),
		cmocka_unit_test(test_shared_library),
		cmocka_unit_test(test_deleted_executable),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_debug_build_id),
		cmocka_unit_test(test_debuglink_crc),
		cmocka_unit_test(test_self_libc_and_vdso),
		cmocka_unit_test(test_timings),
		cmocka_unit_test(test_add_mapping),
		cmocka_unit_test(test_retire_prune),
		cmocka_unit_test(test_fixture_maps),
		cmocka_unit_test(test_profile_build),
		cmocka_unit_test(test_profile_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
