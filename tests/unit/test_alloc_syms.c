// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Finding allocator functions and their uprobe file offsets: glibc's
 * libc.so.6 (checked against where the loader put malloc in this very
 * process), jemalloc shared, static and prefixed (the workloads in
 * $TK_BUILD_DIR/workloads), a static glibc, broken inputs, and a process's
 * allocator reached by its file's identity (fixture /proc trees). Offsets are
 * checked against the program headers, read here without libelf.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc/alloc_syms.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define DEBIAN_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static void workload(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TK_BUILD_DIR");

	snprintf(buf, size, "%s/workloads/%s", dir && *dir ? dir : "build", name);
	if (access(buf, R_OK))
		fail_msg("%s missing: build it first (make %s)", buf, buf);
}

/* The file offset of @vaddr by the PT_LOAD headers, read by hand; -1 if none. */
static int64_t phdr_offset(const char *path, uint64_t vaddr)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i;
	int64_t off = -1;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_memory_equal(eh.e_ident, ELFMAG, SELFMAG);
	for (i = 0; i < eh.e_phnum; i++) {
		assert_int_equal(pread(fd, &ph, sizeof(ph), eh.e_phoff + i * (uint64_t)eh.e_phentsize),
				 sizeof(ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			off = vaddr - ph.p_vaddr + ph.p_offset;
			break;
		}
	}
	close(fd);
	return off;
}

/* A symbol's value as nm prints it (defined ones only); 0 when absent. */
static uint64_t nm_value(const char *path, const char *name, bool dynamic)
{
	char cmd[4200], line[512], sym[256], type;
	unsigned long long v, found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null", dynamic ? "-D" : "",
		 path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) != 3)
			continue;
		sym[strcspn(sym, "@")] = '\0';	/* "malloc@@GLIBC_2.2.5" */
		if (!strcmp(sym, name))
			found = v;
	}
	pclose(f);
	return found;
}

static const struct tk_alloc_fn *by_name(const struct tk_alloc_syms *s, const char *name)
{
	int i;

	for (i = 0; i < s->nr; i++)
		if (!strcmp(s->fns[i].name, name))
			return &s->fns[i];
	return NULL;
}

/* Every hooked address once, every offset where the program headers put it. */
static void check_consistent(const struct tk_alloc_syms *s)
{
	int i, j;

	for (i = 0; i < s->nr; i++) {
		assert_true(s->fns[i].size > 0);
		uint64_t start = phdr_offset(s->path, s->fns[i].vaddr);

		/*
		 * At the function's start, or a few bytes in: past an endbr64 and
		 * a leading NULL test, at a push the kernel emulates.
		 */
		assert_true(s->fns[i].offset >= start && s->fns[i].offset < start + 16);
		if (s->fns[i].offset != start) {
			unsigned char b[2];
			FILE *f = fopen(s->path, "rb");

			assert_non_null(f);
			assert_int_equal(fseek(f, (long)s->fns[i].offset, SEEK_SET), 0);
			assert_int_equal(fread(b, 1, 2, f), 2);
			fclose(f);
			assert_true((b[0] & 0xf8) == 0x50 || (b[0] == 0x41 && (b[1] & 0xf8) == 0x50));
		}
		for (j = 0; j < i; j++)
			assert_true(s->fns[i].vaddr != s->fns[j].vaddr);
	}
}

static void test_glibc(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	const struct tk_alloc_fn *m, *f;
	Dl_info info;
	void *real;
	int n;

	n = tk_alloc_syms__find(LIBC, "", 0, s);
	assert_true(n >= 9);
	assert_true(tk_alloc_syms__usable(s));
	check_consistent(s);
	m = by_name(s, "malloc");
	f = by_name(s, "free");
	assert_non_null(m);
	assert_non_null(f);
	assert_int_equal(m->kind, TK_AFN_MALLOC);
	assert_int_equal(f->kind, TK_AFN_FREE);
	assert_int_equal(by_name(s, "posix_memalign")->kind, TK_AFN_POSIX_MEMALIGN);
	assert_int_equal(by_name(s, "calloc")->kind, TK_AFN_CALLOC);
	assert_int_equal(by_name(s, "realloc")->kind, TK_AFN_REALLOC);
	/* aliases of hooked addresses are not hooked twice */
	assert_null(by_name(s, "__libc_malloc"));
	assert_null(by_name(s, "cfree"));
	assert_null(by_name(s, "__libc_free"));
	/* memalign and aligned_alloc are one function in glibc: hooked once */
	assert_false(by_name(s, "memalign") && by_name(s, "aligned_alloc"));
	/* no C++ in libc, and none asked for */
	assert_null(by_name(s, "_Znwm"));

	/* where the loader put malloc in this process agrees */
	real = dlsym(RTLD_DEFAULT, "malloc");
	assert_non_null(real);
	assert_true(dladdr(real, &info));
	if (strstr(info.dli_fname, "libc.so.6"))
		assert_int_equal((uintptr_t)real - (uintptr_t)info.dli_fbase, m->vaddr);
	assert_int_equal(m->vaddr, nm_value(LIBC, "malloc", true));
	free(s);
}

static void test_glibc_twice_and_mismatch(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	int n;

	n = tk_alloc_syms__find(LIBC, "", 0, s);
	assert_true(n > 0);
	/* the same file once more adds nothing: every address is there already */
	assert_int_equal(tk_alloc_syms__find(LIBC, "", 0, s), 0);
	assert_int_equal(s->nr, n);
	assert_int_equal(tk_alloc_syms__find(DEBIAN_JEMALLOC, "", 0, s), -EINVAL);
	free(s);
}

static void test_debian_jemalloc_cxx(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	const struct tk_alloc_fn *fn;

	if (access(DEBIAN_JEMALLOC, R_OK))
		free(s);
	NEED_DEP(!access(DEBIAN_JEMALLOC, R_OK), "no %s (apt-get install libjemalloc2)\n",
		 DEBIAN_JEMALLOC);
	assert_true(tk_alloc_syms__find(DEBIAN_JEMALLOC, "", TK_ASYMS_CXX, s) > 0);
	assert_true(tk_alloc_syms__usable(s));
	check_consistent(s);
	assert_int_equal(by_name(s, "malloc")->vaddr, nm_value(DEBIAN_JEMALLOC, "malloc", true));
	/* jemalloc's own API and its C++ operators */
	assert_int_equal(by_name(s, "sdallocx")->kind, TK_AFN_FREE);
	assert_int_equal(by_name(s, "mallocx")->kind, TK_AFN_MALLOC);
	fn = by_name(s, "_Znwm");
	if (nm_value(DEBIAN_JEMALLOC, "_Znwm", true)) {
		assert_non_null(fn);
		assert_int_equal(fn->kind, TK_AFN_MALLOC);
		assert_int_equal(by_name(s, "_ZdlPv")->kind, TK_AFN_FREE);
	}
	free(s);
}

static void test_jemalloc_user(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	char path[4096];

	/* linked to libjemalloc.so: the executable itself defines no allocator */
	workload("jemalloc_user", path, sizeof(path));
	assert_int_equal(tk_alloc_syms__find(path, "", TK_ASYMS_CXX, s), 0);
	assert_false(tk_alloc_syms__usable(s));
	free(s);
}

static void test_jemalloc_static(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	char path[4096];

	workload("jemalloc_static", path, sizeof(path));
	assert_true(tk_alloc_syms__find(path, "", 0, s) > 0);
	assert_true(tk_alloc_syms__usable(s));
	check_consistent(s);
	assert_int_equal(by_name(s, "malloc")->vaddr, nm_value(path, "malloc", false));
	assert_int_equal(by_name(s, "free")->vaddr, nm_value(path, "free", false));
	free(s);
}

static void test_fake_rjem(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	const struct tk_alloc_fn *m, *f;
	char path[4096];

	workload("fake_rjem", path, sizeof(path));
	assert_int_equal(tk_alloc_syms__find(path, "_rjem_", 0, s), 2);
	check_consistent(s);
	m = by_name(s, "_rjem_malloc");
	f = by_name(s, "_rjem_free");
	assert_non_null(m);
	assert_non_null(f);
	assert_int_equal(m->vaddr, nm_value(path, "_rjem_malloc", false));
	assert_int_equal(f->vaddr, nm_value(path, "_rjem_free", false));
	/* its own malloc is glibc's, imported: nothing under no prefix */
	memset(s, 0, sizeof(*s));
	assert_int_equal(tk_alloc_syms__find(path, "", 0, s), 0);
	free(s);
}

static void test_static_glibc(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	char path[4096];

	workload("static_glibc", path, sizeof(path));
	assert_true(tk_alloc_syms__find(path, "", 0, s) > 0);
	assert_true(tk_alloc_syms__usable(s));
	check_consistent(s);
	assert_int_equal(by_name(s, "malloc")->vaddr, nm_value(path, "__libc_malloc", false));
	assert_null(by_name(s, "__libc_malloc"));
	free(s);
}

static void test_markers(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	const char *dir = getenv("TK_BUILD_DIR");
	char path[4096];

	snprintf(path, sizeof(path), "%s/libtkalloc.so", dir && *dir ? dir : "build");
	if (access(path, R_OK))
		free(s);
	NEED_DEP(!access(path, R_OK), "no %s (make)\n", path);
	assert_int_equal(tk_alloc_syms__find(path, "", TK_ASYMS_MARKERS, s), 2);
	assert_true(tk_alloc_syms__usable(s));
	check_consistent(s);
	assert_int_equal(by_name(s, "tk_alloc_marker_alloc")->kind, TK_AFN_MARKER_ALLOC);
	assert_int_equal(by_name(s, "tk_alloc_marker_free")->kind, TK_AFN_MARKER_FREE);
	/* the interposed malloc of the sampler is not a marker */
	assert_null(by_name(s, "malloc"));
	free(s);
}

static void test_broken(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	char tmpl[] = "/tmp/tk_alloc_syms_XXXXXX";
	int fd = mkstemp(tmpl);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(tk_alloc_syms__find("/nonexistent/libc.so.6", "", 0, s), -ENOENT);
	assert_int_equal(tk_alloc_syms__find(tmpl, "", 0, s), -ENOEXEC);
	assert_int_equal(tk_alloc_syms__find("/tmp", "", 0, s), -EISDIR);
	assert_int_equal(s->nr, 0);
	assert_false(tk_alloc_syms__usable(s));
	unlink(tmpl);
	assert_string_equal(tk_afn_kind__name(TK_AFN_POSIX_MEMALIGN), "posix_memalign");
	assert_string_equal(tk_afn_kind__name(TK_AFN__COUNT), "?");
	free(s);
}

/* ---- a process's allocator, by its file's identity --------------------------------------- */

/* @dir/proc/42: comm, and a maps line mapping @lib as a file of @st's device, inode + @ino_off. */
static void fixture_proc(const char *dir, const char *lib, const struct stat *st, int ino_off)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "mkdir -p %s/proc/42", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/proc/42/comm", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("ct\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/proc/42/maps", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "7f0000000000-7f0000100000 r-xp 00028000 %02x:%02x %lu %s\n",
		major(st->st_dev), minor(st->st_dev), (unsigned long)st->st_ino + ino_off, lib);
	fclose(f);
}

/*
 * A fixture process mapping libc: its file is taken by its path only when
 * that is the maps line's device and inode; another file of that name (the
 * host's, for a container's process) is refused with a reason, never probed;
 * a PID/root holding another file of that name is that process's.
 */
static void test_process_file_identity(void **state)
{
	struct tk_alloc_syms *s = calloc(1, sizeof(*s));
	char dir[] = "/tmp/tk_alloc_syms_XXXXXX", proc[64], why[512], cmd[PATH_MAX * 2];
	char lib[PATH_MAX];
	struct stat st, cst;

	assert_non_null(s);
	assert_non_null(realpath(LIBC, lib));
	assert_int_equal(stat(lib, &st), 0);
	assert_non_null(mkdtemp(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);

	/* no PID/root, no map_files: the path itself, being that very file */
	fixture_proc(dir, lib, &st, 0);
	assert_int_equal(tk_alloc_syms__find_process(proc, 42, NULL, s, why, sizeof(why)), 0);
	assert_string_equal(s->path, lib);
	assert_string_equal(s->mapped, lib);
	assert_false(s->other_here);
	assert_true(tk_alloc_syms__usable(s));
	/*
	 * the very file found is held and is what is read and probed: a name
	 * swapped afterwards (the process's root is its own) changes nothing
	 */
	{
		struct stat held;

		assert_true(s->held);
		assert_int_equal(strncmp(tk_alloc_syms__probe(s), "/proc/self/fd/", 14), 0);
		assert_int_equal(stat(tk_alloc_syms__probe(s), &held), 0);
		assert_true(held.st_ino == st.st_ino && held.st_dev == st.st_dev);
	}
	tk_alloc_syms__release(s);
	assert_false(s->held);
	assert_string_equal(tk_alloc_syms__probe(s), lib);

	/* another inode: the host's file of that name is not the process's */
	memset(s, 0, sizeof(*s));
	fixture_proc(dir, lib, &st, 1);
	assert_int_equal(tk_alloc_syms__find_process(proc, 42, NULL, s, why, sizeof(why)),
			 -ESTALE);
	assert_non_null(strstr(why, "is not the host's file of that name"));
	assert_int_equal(s->nr, 0);
	assert_string_equal(s->path, "");

	/* its own root has its own file there: that one, and it is another file than here */
	memset(s, 0, sizeof(*s));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/proc/42/root$(dirname %s) && cp %s %s/proc/42/root%s",
		 dir, lib, lib, dir, lib);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/proc/42/root%s", dir, lib);
	assert_int_equal(stat(cmd, &cst), 0);
	fixture_proc(dir, lib, &cst, 0);
	assert_int_equal(tk_alloc_syms__find_process(proc, 42, NULL, s, why, sizeof(why)), 0);
	assert_string_equal(s->path, cmd);
	assert_string_equal(s->mapped, lib);
	assert_true(s->other_here);
	assert_true(tk_alloc_syms__usable(s));
	/* the process swaps its file for a link to the host's: the held copy is still read */
	{
		char moved[PATH_MAX + 16];
		struct stat held;

		snprintf(moved, sizeof(moved), "%s.old", cmd);
		assert_int_equal(rename(cmd, moved), 0);
		assert_int_equal(symlink(lib, cmd), 0);
		assert_int_equal(stat(tk_alloc_syms__probe(s), &held), 0);
		assert_true(held.st_ino == cst.st_ino && held.st_dev == cst.st_dev);
	}
	tk_alloc_syms__release(s);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc),
		cmocka_unit_test(test_glibc_twice_and_mismatch),
		cmocka_unit_test(test_debian_jemalloc_cxx),
		cmocka_unit_test(test_jemalloc_user),
		cmocka_unit_test(test_jemalloc_static),
		cmocka_unit_test(test_fake_rjem),
		cmocka_unit_test(test_static_glibc),
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_broken),
		cmocka_unit_test(test_process_file_identity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
