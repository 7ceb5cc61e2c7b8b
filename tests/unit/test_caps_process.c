// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The process.* entries of the capability snapshot (tracekit caps -p PID) as a
 * user reads them: a fixture proc tree whose PID/exe points at a real
 * workload binary (or one built here), PID/maps naming the mapped libraries,
 * PID/environ with its MALLOC_CONF; the allocator collector's backend that
 * follows; the JSON "process" object and the text "Process" section, with
 * the executable objects' table (CFI, frame pointers, both or neither).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cmocka.h>

#include "need.h"

#include "../lib/caps_expect.h"
#include "../lib/fixture.h"
#include "caps/caps.h"

#define TPID 4343
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define DEBIAN_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

struct t {
	struct fx *fx;
	struct tk_caps_opts opts;
	struct tk_caps caps;
	char *out;		/* writer output */
	size_t outlen;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || fx_base_host(t->fx)) {
		fx_free(t->fx);
		free(t);
		return -1;
	}
	fx_probe_reset();
	t->opts.sz = TK_OPTS_SZ(tk_caps_opts);
	t->opts.proc_root = t->fx->proc;
	t->opts.sys_root = t->fx->sys;
	
	t->opts.pid = TPID;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	fx_free(t->fx);
	free(t->out);
	free(t);
	return 0;
}

#define FX(call) assert_int_equal((call), 0)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the target process ------------------------------------------------------- */

static void workload(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TK_BUILD_DIR");
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/workloads/%s", dir && *dir ? dir : "build", name);
	if (!realpath(rel, buf) || strlen(buf) >= size)
		fail_msg("%s missing: build it first (make %s)", rel, rel);
}

struct proc_spec {
	const char *comm;
	const char *exe;		/* a workload name, or an absolute path */
	const char *const *libs;	/* mapped libraries, NULL-terminated */
	const char *environ;		/* "A=b\0C=d\0" with its length */
	size_t environ_len;
	bool root;			/* PID/root: a directory with usr -> /usr */
	const char *extra_maps;		/* more lines of PID/maps, after the libraries */
};

#define ENV(lit) .environ = lit, .environ_len = sizeof(lit) - 1

static void write_raw(struct t *t, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	FX(fx_path(t->fx, rel, path, sizeof(path)));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* (Re)build proc/TPID for @s; the binary PID/exe points at goes into @exe. */
static void make_proc(struct t *t, const struct proc_spec *s, char *exe, size_t exe_size)
{
	char rel[128], maps[16384];
	size_t off = 0;
	int i;

	snprintf(rel, sizeof(rel), "proc/%d", TPID);
	if (fx_exists(t->fx, rel))
		FX(fx_remove(t->fx, rel));
	if (s->exe[0] == '/')
		snprintf(exe, exe_size, "%s", s->exe);
	else
		workload(s->exe, exe, exe_size);
	snprintf(rel, sizeof(rel), "proc/%d/comm", TPID);
	FX(fx_writef(t->fx, rel, "%s\n", s->comm));
	snprintf(rel, sizeof(rel), "proc/%d/status", TPID);
	FX(fx_writef(t->fx, rel, "Name:\t%s\nPid:\t%d\nVmHWM:\t    9000 kB\n"
			"VmRSS:\t    8000 kB\n", s->comm, TPID));
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", TPID);
	FX(fx_write(t->fx, rel, "4:memory:" FX_CGROUP "\n0::/\n"));
	snprintf(rel, sizeof(rel), "proc/%d/exe", TPID);
	FX(fx_symlink(t->fx, exe, rel));

	off += snprintf(maps + off, sizeof(maps) - off,
			"55d000000000-55d000001000 r--p 00000000 08:01 1001   %s\n"
			"55d000001000-55d000002000 r-xp 00001000 08:01 1001   %s\n"
			"55d000100000-55d000200000 rw-p 00000000 00:00 0      [heap]\n",
			exe, exe);
	for (i = 0; s->libs && s->libs[i]; i++)
		off += snprintf(maps + off, sizeof(maps) - off,
				"7f%04x000000-7f%04x001000 r--p 00000000 08:01 %d   %s\n"
				"7f%04x001000-7f%04x002000 r-xp 00001000 08:01 %d   %s\n",
				i, i, 2000 + i, s->libs[i], i, i, 2000 + i, s->libs[i]);
	off += snprintf(maps + off, sizeof(maps) - off, "%s%s",
			s->extra_maps ? s->extra_maps : "",
			"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n");
	assert_true(off < sizeof(maps));
	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_write(t->fx, rel, maps));

	snprintf(rel, sizeof(rel), "proc/%d/environ", TPID);
	write_raw(t, rel, s->environ ? s->environ : "", s->environ ? s->environ_len : 0);
	if (s->root) {
		snprintf(rel, sizeof(rel), "proc/%d/root/usr", TPID);
		FX(fx_symlink(t->fx, "/usr", rel));
	}
}

static void need_debian_jemalloc(void)
{
	NEED_DEP(!access(DEBIAN_JEMALLOC, R_OK), "no %s (apt-get install libjemalloc2)\n",
		 DEBIAN_JEMALLOC);
}

/*
 * Compile @src into the fixture root as @name with gcc and @flags; skip the
 * test, saying why, when there is no gcc.
 */
static void build_program(struct t *t, const char *name, const char *src, const char *flags,
			  char *out, size_t size)
{
	char rel[64], cpath[PATH_MAX], cmd[3 * PATH_MAX];
	int status;

	NEED_DEP(!system("command -v gcc >/dev/null 2>&1"), "no gcc to build %s with %s\n", name,
		 flags);
	snprintf(rel, sizeof(rel), "%s.c", name);
	FX(fx_write(t->fx, rel, src));
	FX(fx_path(t->fx, rel, cpath, sizeof(cpath)));
	FX(fx_path(t->fx, name, out, size));
	snprintf(cmd, sizeof(cmd), "gcc -O2 %s -o '%s' '%s' 2>&1", flags, out, cpath);
	status = system(cmd);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s failed (status %#x)", cmd, status);
}

/*
 * The build-id as binutils sees it (the "    Build ID: 8586...d5" line of
 * `readelf -n FILE`), not as the ELF reader under test does. False: none.
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

/* ---- checks ---------------------------------------------------------------------- */

static struct tk_caps *snap(struct t *t)
{
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps), 0);
	return &t->caps;
}

static void expect_no_cap(const struct tk_caps *caps, enum tk_cap_id id)
{
	if (caps->caps[id].present)
		fail_msg("%s is present (%s: %s), want absent", tk_cap__id_name(id),
			 tk_status__name(caps->caps[id].status), caps->caps[id].value);
}

/* What container runtimes' seccomp profiles do: bpf(2) answers EPERM. */
static void deny_bpf(void)
{
	fx_probe_result[TK_PROBE_BPF_SYSCALL] = -EPERM;
}

enum fmt { JSON, TEXT };

static const char *render(struct t *t, enum fmt fmt)
{
	FILE *f;

	free(t->out);
	t->out = NULL;
	f = open_memstream(&t->out, &t->outlen);
	assert_non_null(f);
	if (fmt == JSON)
		assert_int_equal(tk_caps__write_json(&t->caps, f), 0);
	else
		assert_int_equal(tk_caps__write_text(&t->caps, f), 0);
	assert_int_equal(fclose(f), 0);
	return t->out;
}

/* The top-level "process" member's value (an object), copied into @buf. */
static void json_process_object(const char *json, char *buf, size_t size)
{
	const char *start = strstr(json, "\n  \"process\": {"), *p;
	bool in_str = false;
	int depth = 0;

	if (!start)
		fail_msg("no top-level \"process\" object in:\n%s", json);
	start = strchr(start, '{');
	for (p = start; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
		} else if (*p == '"') {
			in_str = true;
		} else if (*p == '{') {
			depth++;
		} else if (*p == '}' && !--depth) {
			break;
		}
	}
	assert_int_equal(*p, '}');
	assert_true((size_t)(p + 1 - start) < size);
	snprintf(buf, size, "%.*s", (int)(p + 1 - start), start);
}

/*
 * The JSON document is valid, has every present process.* entry, and its
 * "process" object holds each '|'-separated fragment of @want.
 */
static void check_json(struct t *t, const char *want, const char *file, int line)
{
	static const enum tk_cap_id ids[] = { TK_CAP_PROC_ALLOCATOR, TK_CAP_PROC_JEMALLOC_PROF,
					      TK_CAP_PROC_BUILD_ID, TK_CAP_PROC_FRAME_POINTERS };
	const char *out = render(t, JSON);
	static char obj[1 << 17];	/* up to TK_PROC_MAX_OBJECTS objects */
	char why[128], key[160], missing[256];
	size_t i;

	if (fx_json_check(out, t->outlen, why, sizeof(why))) {
		print_error("invalid JSON (%s):\n%s\n", why, out);
		_fail(file, line);
	}
	snprintf(key, sizeof(key), "\n  \"pid\": %d,\n", TPID);
	if (!strstr(out, key)) {
		print_error("no top-level pid %d:\n%s\n", TPID, out);
		_fail(file, line);
	}
	for (i = 0; i < N(ids); i++) {
		snprintf(key, sizeof(key), "\"%s\": {", tk_cap__id_name(ids[i]));
		if (!t->caps.caps[ids[i]].present != !strstr(out, key)) {
			print_error("entry %s: %s in the report, %s in JSON\n", key,
				    t->caps.caps[ids[i]].present ? "present" : "absent",
				    strstr(out, key) ? "written" : "not written");
			_fail(file, line);
		}
	}
	json_process_object(out, obj, sizeof(obj));
	if (!has_words(obj, want, missing, sizeof(missing))) {
		print_error("the process object lacks %s:\n%s\n", missing, obj);
		_fail(file, line);
	}
}

#define expect_json(t, want) check_json(t, want, __FILE__, __LINE__)

/* The text report fits 80 columns and has the "Process PID (comm)" section. */
static void check_text(struct t *t, const char *comm, const char *file, int line)
{
	const char *out = render(t, TEXT), *where;
	size_t longest = fx_longest_line(out, &where);
	char head[128];

	if (longest > 80) {
		print_error("a line of %zu columns:\n%.*s\n", longest, (int)longest, where);
		_fail(file, line);
	}
	snprintf(head, sizeof(head), "\nProcess %d (%s)\n  exe       ", TPID, comm);
	if (!strstr(out, head)) {
		print_error("no \"%s\" section:\n%s\n", head + 1, out);
		_fail(file, line);
	}
}

#define expect_text(t, comm) check_text(t, comm, __FILE__, __LINE__)

/* ---- allocators ------------------------------------------------------------------ */

static void test_glibc(void **state)
{
	static const char *const libs[] = { LIBC, "/usr/lib/x86_64-linux-gnu/libm.so.6", NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], id[129], want[512];
	struct tk_caps *caps;

	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	assert_int_equal(caps->pid, TPID);
	assert_int_equal(caps->proc.pid, TPID);
	assert_string_equal(caps->proc.comm, "fp_yes");
	assert_string_equal(caps->proc.exe, exe);
	/* the memory figures are the target's, not ours */
	assert_int_equal(caps->memory.rss_pid, TPID);
	assert_int_equal(caps->memory.rss_kb, 8000);

	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "glibc",
		   "libc.so.6 is mapped|no other allocator", "");
	assert_string_equal(caps->caps[TK_CAP_PROC_ALLOCATOR].value, "glibc");
	expect_no_cap(caps, TK_CAP_PROC_JEMALLOC_PROF);
	assert_true(readelf_build_id(exe, id, sizeof(id)));
	expect_cap(caps, TK_CAP_PROC_BUILD_ID, TK_SUPPORTED, id, "", "");
	assert_string_equal(caps->caps[TK_CAP_PROC_BUILD_ID].value, id);
	/* fp_yes is built with -fno-omit-frame-pointer */
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_SUPPORTED, "likely",
		   "heuristic|function prologues set up %rbp", "");
	/* everything works: uprobes on glibc's malloc */
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, "uprobes on the allocator");
	assert_null(strstr(caps->backends[TK_COLLECT_ALLOC].reason, "in-process"));

	snprintf(want, sizeof(want),
		 "\"pid\": %d|\"comm\": \"fp_yes\"|\"exe\": \"%s\"|"
		 "\"allocator\": {\n      \"name\": \"glibc\",\n      \"object\": \"" LIBC "\",\n"
		 "      \"static\": false,\n      \"prefix\": \"\"|"
		 "\"jemalloc_prof\": null|\"build_id\": \"%s\"|\"likely\": true",
		 TPID, exe, id);
	expect_json(t, want);
	expect_text(t, "fp_yes");
	assert_non_null(strstr(t->out, exe));
	/* supported: under "Works", nothing needs attention for the process */
	assert_null(strstr(t->out, "allocator: "));
	assert_non_null(strstr(strstr(t->out, "\nWorks ("), "\n  allocator "));
}

static void test_glibc_bpf_denied(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX];
	struct tk_caps *caps;

	make_proc(t, &s, exe, sizeof(exe));
	deny_bpf();
	caps = snap(t);
	expect_cap(caps, TK_CAP_BPF_SYSCALL, TK_UNSUPPORTED, NULL, NULL, NULL);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "glibc", NULL, NULL);
	/* no uprobes, and glibc has no heap profiler of its own */
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE,
		       "bpf.syscall is|does not use a jemalloc with profiling");
	expect_json(t, "\"name\": \"glibc\"");
	expect_text(t, "fp_yes");
	assert_non_null(strstr(t->out, "\n  alloc  none     "));
}

/*
 * The allocation-only scope (alloc's own snapshot): the allocator and the
 * parts of its backend choice, no object loaded (the session loads it next),
 * nothing of the other collectors.
 */
static void test_alloc_scope(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	static const enum tk_probe never[] = {
		TK_PROBE_LOAD_CPU, TK_PROBE_LOAD_ALLOC,	   TK_PROBE_LOAD_NUMA, TK_PROBE_LOAD_STACKS,
		TK_PROBE_CORE,	   TK_PROBE_PROG_TP_BTF,   TK_PROBE_PROG_FENTRY, TK_PROBE_UNWIND,
		TK_PROBE_PERF_HARDWARE,
	};
	struct t *t = *state;
	char exe[PATH_MAX];
	struct tk_caps *caps;
	size_t i;

	make_proc(t, &s, exe, sizeof(exe));
	t->opts.scope = TK_CAPS_ALLOC;
	caps = snap(t);
	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (fx_probe_calls[never[i]])
			fail_msg("probe %s ran in the allocation scope", fx_probe_name(never[i]));
	assert_int_equal(fx_probe_calls[TK_PROBE_PROG_UPROBE], 1);
	assert_int_equal(fx_probe_calls[TK_PROBE_RINGBUF], 1);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "glibc", NULL, NULL);
	expect_no_cap(caps, TK_CAP_LOAD_ALLOC);
	expect_no_cap(caps, TK_CAP_TP_SCHED_PROCESS_EXEC);
	expect_no_cap(caps, TK_CAP_PROC_PYTHON);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, "uprobes on the allocator");
	expect_backend(caps, TK_COLLECT_NUMA, TK_BACKEND_NONE, "not assessed");
	expect_backend(caps, TK_COLLECT_CPU, TK_BACKEND_NONE, "not assessed");

	/* no uprobes here: the same answer as the whole snapshot's */
	fx_probe_reset();
	fx_probe_result[TK_PROBE_PROG_UPROBE] = -EINVAL;
	caps = snap(t);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE,
		       "bpf.prog.uprobe is|does not use a jemalloc with profiling");
}

static void test_jemalloc_prof_active(void **state)
{
	static const char *const libs[] = { DEBIAN_JEMALLOC, LIBC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = true,
			       ENV("HOME=/root\0MALLOC_CONF=prof:true,lg_prof_sample:19\0") };
	struct t *t = *state;
	char exe[PATH_MAX], id[129], want[512];
	struct tk_caps *caps;

	need_debian_jemalloc();
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "jemalloc",
		   "libjemalloc.so.2 is mapped", "");
	assert_string_equal(caps->caps[TK_CAP_PROC_ALLOCATOR].value, "jemalloc");
	/* Debian's jemalloc is built with --enable-prof (libgcc unwinder) */
	expect_cap(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_SUPPORTED, "built, active",
		   "heuristic|_Unwind_Backtrace|prof:true in MALLOC_CONF", "");
	assert_string_equal(caps->caps[TK_CAP_PROC_JEMALLOC_PROF].value, "built, active");
	assert_true(readelf_build_id(exe, id, sizeof(id)));
	expect_cap(caps, TK_CAP_PROC_BUILD_ID, TK_SUPPORTED, id, NULL, "");
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_BPF, "uprobes");

	snprintf(want, sizeof(want),
		 "\"name\": \"jemalloc\",\n      \"object\": \"" DEBIAN_JEMALLOC "\"|"
		 "\"jemalloc_prof\": {\n      \"built\": true,|\"active\": true,|"
		 "\"build_id\": \"%s\"", id);
	expect_json(t, want);
	expect_text(t, "jemalloc_user");

	/* without bpf(2), jemalloc's own heap profiles */
	deny_bpf();
	caps = snap(t);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "bpf.syscall is|the target's jemalloc heap profiles");
	assert_null(strstr(caps->backends[TK_COLLECT_ALLOC].reason, "must be active"));
	expect_json(t, "\"name\": \"jemalloc\"");
	expect_text(t, "jemalloc_user");
	assert_non_null(strstr(t->out, "\n  alloc  jemalloc "));
}

static void test_jemalloc_prof_not_active(void **state)
{
	static const char *const libs[] = { LIBC, DEBIAN_JEMALLOC, NULL };
	struct proc_spec s = { .comm = "jemalloc_user", .exe = "jemalloc_user", .libs = libs,
			       .root = true, ENV("PATH=/bin\0") };
	struct t *t = *state;
	char exe[PATH_MAX];
	struct tk_caps *caps;

	need_debian_jemalloc();
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	/* nothing says prof:true: built, but not known to be on */
	expect_cap(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_DISABLED, "built, not known active",
		   "no prof option in MALLOC_CONF", "MALLOC_CONF=prof:true");
	expect_json(t, "\"built\": true,|\"active\": null,");
	expect_text(t, "jemalloc_user");
	assert_non_null(strstr(t->out, "  disabled     jemalloc profiling: built, not known"));
	assert_non_null(strstr(t->out, "fix: start it with MALLOC_CONF=prof:true"));

	/* explicitly off */
	s.environ = "MALLOC_CONF=prof:false";
	s.environ_len = strlen(s.environ) + 1;
	make_proc(t, &s, exe, sizeof(exe));
	deny_bpf();
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_DISABLED, "built, inactive",
		   "prof:false in MALLOC_CONF", "MALLOC_CONF=prof:true");
	/* the profiles need profiling on: the backend says so */
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "jemalloc heap profiles|(profiling must be active)");
	expect_json(t, "\"active\": false,");
	expect_text(t, "jemalloc_user");
}

static void test_static_prefixed_jemalloc(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fake_rjem", .exe = "fake_rjem", .libs = libs,
			       .root = true, ENV("_RJEM_MALLOC_CONF=prof:true\0") };
	struct t *t = *state;
	char exe[PATH_MAX], want[512];
	struct tk_caps *caps;

	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED,
		   "jemalloc|static|prefix _rjem_", "binary defines _rjem_mallctl", "");
	assert_string_equal(caps->caps[TK_CAP_PROC_ALLOCATOR].value,
			    "jemalloc (static) prefix _rjem_");
	/* fake_rjem has none of a profiling jemalloc's unwinders */
	expect_cap(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_UNSUPPORTED, "not built",
		   "heuristic|fake_rjem", "--enable-prof");
	deny_bpf();
	caps = snap(t);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE,
		       "does not use a jemalloc with profiling");
	snprintf(want, sizeof(want),
		 "\"object\": \"%s\",\n      \"static\": true,\n      \"prefix\": \"_rjem_\"|"
		 "\"built\": false,", exe);
	expect_json(t, want);
	expect_text(t, "fake_rjem");
	/* supported, so under "Works" */
	assert_non_null(strstr(t->out, "\nWorks ("));
	assert_non_null(strstr(strstr(t->out, "\nWorks ("), " jemalloc (static) prefix _rjem_\n"));
}

/*
 * A statically linked, prefixed jemalloc built with profiling (its
 * prof_unwind_callback is in .symtab) that nothing turns on: the remedy names
 * the variable this jemalloc reads, _RJEM_MALLOC_CONF, not MALLOC_CONF.
 */
static void test_static_prefixed_jemalloc_prof_built(void **state)
{
	static const char src[] =
		"#include <stdlib.h>\n"
		"__attribute__((weak, used)) const char *_rjem_malloc_conf;\n"
		"__attribute__((used, noinline)) static int prof_unwind_callback(void *c,\n"
		"	void *a) { return c != a; }\n"
		"__attribute__((used, noinline)) void *_rjem_malloc(size_t n)\n"
		"{ return malloc(n); }\n"
		"__attribute__((used, noinline)) int _rjem_mallctl(const char *n, void *o,\n"
		"	size_t *ol, void *nw, size_t nl) { return n && o ? 0 : 22; }\n"
		"int main(void) { return !_rjem_malloc(8); }\n";
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "rjem_prof", .libs = libs, .root = true,
			       /* what an unprefixed jemalloc would read, not this one */
			       ENV("MALLOC_CONF=prof:true\0") };
	struct t *t = *state;
	char exe[PATH_MAX], bin[PATH_MAX];
	struct tk_caps *caps;

	build_program(t, "rjem_prof", src, "", bin, sizeof(bin));
	s.exe = bin;
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "jemalloc (static) prefix _rjem_",
		   NULL, "");
	expect_cap(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_DISABLED, "built, not known active",
		   "prof_unwind_callback|_RJEM_MALLOC_CONF", "_RJEM_MALLOC_CONF=prof:true");
	deny_bpf();
	caps = snap(t);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_JEMALLOC,
		       "(profiling must be active)");
	expect_json(t, "\"prefix\": \"_rjem_\"|\"built\": true,|\"active\": null,");
	expect_text(t, "rjem_prof");
}

static void test_unknown_allocator(void **state)
{
	/* no libc in the maps, no allocator symbols in the binary */
	static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/libfoo.so.1", NULL };
	struct proc_spec s = { .comm = "odd", .exe = "fp_no", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX];
	struct tk_caps *caps;

	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_UNSUPPORTED, "unknown",
		   "no known allocator among|mappings", "");
	expect_no_cap(caps, TK_CAP_PROC_JEMALLOC_PROF);
	/* bpf(2) works, but there is nothing to put uprobes on */
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE, "allocator is unknown");
	expect_json(t, "\"name\": \"unknown\",\n      \"object\": null,|\"jemalloc_prof\": null");
	expect_text(t, "odd");
	assert_non_null(strstr(t->out, "  unsupported  allocator: unknown\n"));

	deny_bpf();
	caps = snap(t);
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE,
		       "bpf.syscall is|does not use a jemalloc with profiling");
	expect_text(t, "odd");
}

/* ---- a process that cannot be read ------------------------------------------------ */

static const enum tk_cap_id unreadable_ids[] = { TK_CAP_PROC_ALLOCATOR, TK_CAP_PROC_BUILD_ID,
						 TK_CAP_PROC_FRAME_POINTERS };

static void expect_unreadable(struct t *t, int err, enum tk_status st, const char *remedy)
{
	struct tk_caps *caps;
	struct tk_proc_info pi;
	char reason[160];
	size_t i;

	/* what the process reader says, and so what the snapshot must report */
	assert_int_equal(tk_proc_info__read(t->fx->proc, TPID, &pi), err);
	caps = snap(t);
	snprintf(reason, sizeof(reason), "cannot read /proc/%d/maps or exe: %s", TPID,
		 strerror(-err));
	for (i = 0; i < N(unreadable_ids); i++)
		expect_cap(caps, unreadable_ids[i], st, "unknown", reason, remedy);
	expect_no_cap(caps, TK_CAP_PROC_JEMALLOC_PROF);
	assert_int_equal(caps->proc.pid, TPID);
	assert_string_equal(caps->proc.comm, "fp_yes");
	/* an unknown allocator: no uprobes to place */
	expect_backend(caps, TK_COLLECT_ALLOC, TK_BACKEND_NONE, "allocator is unknown");
	expect_json(t, "\"comm\": \"fp_yes\"|\"name\": \"unknown\"|\"build_id\": null|"
		       "\"likely\": null|\"objects\": []|\"objects_omitted\": 0");
	expect_text(t, "fp_yes");
	/* nothing known of its objects: no table of them */
	assert_null(strstr(t->out, "  objects   "));
}

/* PID/maps is a directory: read() fails with EISDIR, not ENOENT (which means "gone"). */
static void test_maps_unreadable_eisdir(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], rel[64];

	make_proc(t, &s, exe, sizeof(exe));
	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_remove(t->fx, rel));
	snprintf(rel, sizeof(rel), "proc/%d/maps/x", TPID);
	FX(fx_mkdir(t->fx, rel));
	expect_unreadable(t, -EISDIR, TK_UNSUPPORTED, "");
}

/* PID/maps is a symlink loop: ELOOP. */
static void test_maps_unreadable_eloop(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], rel[64];

	make_proc(t, &s, exe, sizeof(exe));
	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_remove(t->fx, rel));
	FX(fx_symlink(t->fx, "maps", rel));
	expect_unreadable(t, -ELOOP, TK_UNSUPPORTED, "");
}

/* A dangling PID/maps reads as ENOENT: the process is taken to have exited. */
static void test_maps_dangling_is_gone(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], rel[64];
	struct tk_proc_info pi;

	make_proc(t, &s, exe, sizeof(exe));
	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_remove(t->fx, rel));
	FX(fx_symlink(t->fx, "no-such-file", rel));
	assert_int_equal(tk_proc_info__read(t->fx->proc, TPID, &pi), -ENOENT);
	assert_int_equal(tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps), -ESRCH);
}

/* Set the effective CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from @on; the old set in @old. */
static int set_dac_caps(bool on, __u32 *old)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	__u32 bits = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH;

	if (syscall(SYS_capget, &h, d))
		return -errno;
	if (old)
		*old = d[0].effective & bits;
	d[0].effective = (d[0].effective & ~bits) | (on ? d[0].permitted & bits : 0);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static void restore_dac_caps(__u32 old)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	d[0].effective |= old;
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

/*
 * PID/maps of mode 000, read without the capabilities that bypass file modes
 * (as a process the caller may not ptrace): EACCES, so the entries are
 * disabled and the remedy is about ptrace access.
 */
static void test_maps_unreadable_eacces(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_yes", .exe = "fp_yes", .libs = libs };
	struct t *t = *state;
	struct tk_proc_info pi;
	char exe[PATH_MAX], rel[64], path[PATH_MAX];
	struct tk_caps *caps;
	__u32 old = 0;
	int err, snap_err, i;

	make_proc(t, &s, exe, sizeof(exe));
	snprintf(rel, sizeof(rel), "proc/%d/maps", TPID);
	FX(fx_path(t->fx, rel, path, sizeof(path)));
	assert_int_equal(chmod(path, 0), 0);
	err = set_dac_caps(false, &old);
	if (err) {
		print_message("skip: cannot drop CAP_DAC_OVERRIDE: %s\n", strerror(-err));
		skip();
	}
	err = tk_proc_info__read(t->fx->proc, TPID, &pi);
	snap_err = tk_caps__snapshot_probe(&t->opts, fx_probe, &t->caps);
	restore_dac_caps(old);
	assert_int_equal(err, -EACCES);
	assert_int_equal(snap_err, 0);
	caps = &t->caps;
	for (i = 0; i < (int)N(unreadable_ids); i++)
		expect_cap(caps, unreadable_ids[i], TK_DISABLED, "unknown",
			   "maps or exe: Permission denied", "ptrace|CAP_SYS_PTRACE|ptrace_scope");
	expect_json(t, "\"comm\": \"fp_yes\"|\"name\": \"unknown\"");
	expect_text(t, "fp_yes");
	assert_non_null(strstr(t->out, "  disabled     allocator: unknown\n"));
}

/* ---- build-id and frame pointers -------------------------------------------------- */

static void test_no_build_id(void **state)
{
	static const char src[] = "#include <stdio.h>\n"
				  "int main(int argc, char **argv)\n"
				  "{ printf(\"%d\\n\", argc); return 0; }\n";
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "no_build_id", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], bin[PATH_MAX], id[129];
	struct tk_caps *caps;

	build_program(t, "no_build_id", src, "-Wl,--build-id=none", bin, sizeof(bin));
	/* the oracle agrees that there is none */
	assert_false(readelf_build_id(bin, id, sizeof(id)));
	s.exe = bin;
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_BUILD_ID, TK_UNSUPPORTED, "none",
		   "no GNU build-id note|matched by path", "-Wl,--build-id");
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "glibc", NULL, "");
	expect_json(t, "\"build_id\": null");
	expect_text(t, "no_build_id");
	assert_non_null(strstr(t->out, "  unsupported  build-id: none\n"));
	assert_non_null(strstr(t->out, "fix: link with -Wl,--build-id"));

	/* the same program with one: the report shows what binutils reads */
	build_program(t, "with_build_id", src, "-Wl,--build-id=sha1", bin, sizeof(bin));
	assert_true(readelf_build_id(bin, id, sizeof(id)));
	s.exe = bin;
	make_proc(t, &s, exe, sizeof(exe));
	expect_cap(snap(t), TK_CAP_PROC_BUILD_ID, TK_SUPPORTED, id, "", "");
}

static void test_frame_pointers(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_no", .exe = "fp_no", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX];
	struct tk_caps *caps;

	/* -fomit-frame-pointer */
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_UNSUPPORTED, "unlikely",
		   "heuristic|function prologues set up %rbp", "-fno-omit-frame-pointer");
	assert_true(caps->proc.fp_checked >= 8);
	assert_true(caps->proc.fp_with_frame * 10 < caps->proc.fp_checked);
	expect_json(t, "\"likely\": false,");
	expect_text(t, "fp_no");
	assert_non_null(strstr(t->out, "  unsupported  frame pointers: unlikely\n"));

	/* -fno-omit-frame-pointer */
	s.comm = s.exe = "fp_yes";
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_SUPPORTED, "likely", "heuristic", "");
	assert_true(caps->proc.fp_with_frame * 2 >= caps->proc.fp_checked);
	expect_json(t, "\"likely\": true,");
	expect_text(t, "fp_yes");

	/* stripped: no symbols to find function starts by */
	s.comm = s.exe = "stripped";
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_UNSUPPORTED, "unknown", "no symbol table",
		   "-fno-omit-frame-pointer");
	expect_cap(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED, "glibc", "no symbol table", "");
	expect_json(t, "\"likely\": null,");
	expect_text(t, "stripped");
}

/* ---- executable objects ---------------------------------------------------------------- */

/* The objects table's line for the object at @path (as far as it goes), or fail. */
static const char *object_line(const char *out, const char *path)
{
	const char *l = strstr(out, "\n  unwind  cfi"), *end;
	static char line[512];

	if (!l)
		fail_msg("no objects table in:\n%s", out);

	while ((l = strstr(l, path))) {
		const char *start = l;

		while (start > out && start[-1] != '\n')
			start--;
		end = strchr(l, '\n');
		if (end && !strncmp(start, "  ", 2) && (size_t)(end - start) < sizeof(line)) {
			snprintf(line, sizeof(line), "%.*s", (int)(end - start), start);
			return line;
		}
		l += strlen(path);
	}
	fail_msg("no line for %s in:\n%s", path, out);
	return NULL;
}

/*
 * A program without frame pointers and libc: CFI for both ("cfi"), in the
 * snapshot, its JSON and its text; one built with them: "cfi+fp".
 */
static void test_objects(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "fp_no", .exe = "fp_no", .libs = libs, .root = true };
	struct t *t = *state;
	char exe[PATH_MAX], want[1024];
	struct tk_caps *caps;

	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	assert_int_equal(caps->proc.nr_objects, 2);
	assert_true(caps->proc.objects[0].is_main);
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_UNSUPPORTED, "unlikely",
		   "heuristic|CFI in 2 of 2 executable objects", "-fno-omit-frame-pointer");
	snprintf(want, sizeof(want),
		 "\"objects\": [\n      {\n        \"path\": \"%s\",\n"
		 "        \"start\": \"0x55d000001000\",\n        \"end\": \"0x55d000002000\",\n"
		 "        \"main\": true,\n        \"deleted\": false,\n"
		 "        \"unwind\": \"cfi\",\n        \"cfi\": \"eh_frame\",|"
		 "\"path\": \"" LIBC "\",|\"frame_pointers\": false,|\"fp_checked\": 200,|"
		 "\"debug_file\": null,|\"error\": null|"
		 "\"objects_omitted\": 0,\n    \"anon_exec_mappings\": 0\n", exe);
	expect_json(t, want);
	expect_text(t, "fp_no");
	assert_non_null(strstr(t->out, "\n  objects   2 executable; fp: prologues that set up "
				       "%rbp, of those checked\n"
				       "  unwind  cfi         fp          object\n"));
	assert_true(!strncmp(object_line(t->out, LIBC), "  cfi     eh_frame    no ", 25));
	assert_true(!strncmp(object_line(t->out, exe), "  cfi     eh_frame    no ", 25));

	s.comm = s.exe = "fp_yes";
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_SUPPORTED, "likely",
		   "CFI in 2 of 2 executable objects", "");
	expect_json(t, "\"unwind\": \"cfi+fp\",\n        \"cfi\": \"eh_frame\",|"
		       "\"frame_pointers\": true,");
	expect_text(t, "fp_yes");
	assert_true(!strncmp(object_line(t->out, exe), "  cfi+fp  eh_frame    yes ", 26));
	assert_true(!strncmp(object_line(t->out, LIBC), "  cfi     eh_frame    no ", 25));
}

/*
 * Objects that cannot be read, more than the list holds, and code of no
 * file: said as such, and still within 80 columns.
 */
static void test_objects_unreadable_and_many(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "many", .exe = "fp_no", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], *extra;
	size_t size = 100 * 128, off = 0;
	struct tk_caps *caps;
	int i;

	extra = malloc(size);
	assert_non_null(extra);
	for (i = 0; i < 70; i++)
		off += snprintf(extra + off, size - off,
				"7e%04x000000-7e%04x001000 r-xp 0 08:01 %d /opt/l/lib%d.so\n",
				i, i, 5000 + i, i);
	off += snprintf(extra + off, size - off,
			"7d0000000000-7d0000001000 rwxp 00000000 00:00 0\n");
	assert_true(off < size);
	s.extra_maps = extra;
	make_proc(t, &s, exe, sizeof(exe));
	caps = snap(t);
	free(extra);
	assert_int_equal(caps->proc.nr_objects, TK_PROC_MAX_OBJECTS);
	/* the program, libc and 70 libraries: 72 */
	assert_int_equal(caps->proc.objects_omitted, 72 - TK_PROC_MAX_OBJECTS);
	assert_int_equal(caps->proc.anon_exec, 1);
	/* no PID/root: libc cannot be opened in a fixture, the program is PID/exe */
	expect_cap(caps, TK_CAP_PROC_FRAME_POINTERS, TK_UNSUPPORTED, "unlikely",
		   "CFI in 1 of 64 executable objects", NULL);
	expect_json(t, "\"path\": \"" LIBC "\",|\"unwind\": \"unknown\",\n        \"cfi\": null,|"
		       "\"error\": \"No such file or directory\"|\"objects_omitted\": 8,|"
		       "\"anon_exec_mappings\": 1");
	expect_text(t, "many");
	assert_string_equal(object_line(t->out, LIBC),
			    "  unknown -           -           " LIBC " (No such");
	assert_non_null(strstr(t->out, "\n  objects   72 executable;"));
	assert_non_null(strstr(t->out, "\n  ... and 8 more not listed\n"));
	assert_non_null(strstr(t->out, "\n  anonymous 1 executable mapping of no file (JIT "
				       "code?): no CFI\n"));
}

/* ---- the writers -------------------------------------------------------------------- */

/* A long exe path and comm: the text still fits 80 columns, the JSON is whole. */
static void test_long_names(void **state)
{
	static const char *const libs[] = { LIBC, NULL };
	struct proc_spec s = { .comm = "a-thirty-one-character-comm-xx", .libs = libs };
	struct t *t = *state;
	char exe[PATH_MAX], real[PATH_MAX], rel[PATH_MAX], link[PATH_MAX];
	int i;

	workload("fp_yes", real, sizeof(real));
	snprintf(rel, sizeof(rel), "opt");
	for (i = 0; i < 6; i++)
		strcat(rel, "/a-rather-long-directory-name-as-deployments-have");
	strcat(rel, "/fp_yes");
	FX(fx_symlink(t->fx, real, rel));
	FX(fx_path(t->fx, rel, link, sizeof(link)));
	s.exe = link;
	make_proc(t, &s, exe, sizeof(exe));
	expect_cap(snap(t), TK_CAP_PROC_FRAME_POINTERS, TK_SUPPORTED, "likely", NULL, NULL);
	assert_string_equal(t->caps.proc.exe, link);
	expect_json(t, "\"comm\": \"a-thirty-one-character-comm-xx\"|fp_yes\"");
	expect_text(t, "a-thirty-one-character-comm-xx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_glibc),
		T(test_glibc_bpf_denied),
		T(test_alloc_scope),
		T(test_jemalloc_prof_active),
		T(test_jemalloc_prof_not_active),
		T(test_static_prefixed_jemalloc),
		T(test_static_prefixed_jemalloc_prof_built),
		T(test_unknown_allocator),
		T(test_maps_unreadable_eisdir),
		T(test_maps_unreadable_eloop),
		T(test_maps_dangling_is_gone),
		T(test_maps_unreadable_eacces),
		T(test_no_build_id),
		T(test_frame_pointers),
		T(test_objects),
		T(test_objects_unreadable_and_many),
		T(test_long_names),
#undef T
	};

	return cmocka_run_group_tests_name("caps_process", tests, NULL, NULL);
}
