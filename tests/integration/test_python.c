// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Python frames, as a user reads them back with go tool pprof, on every
 * CPython at hand: Debian bookworm's 3.11 (the host's), bullseye's 3.9,
 * trixie's 3.13 and sid's 3.14 (container roots tests/lib/mkroot.sh makes
 * with python3-minimal: TK_PY_ROOTS, default build/roots/SUITE-py; required
 * under CI) and the pyenv --enable-shared builds under ~/.pyenv/versions
 * (skipped when absent). One run of tests/workloads/py/pywork.py mix per
 * interpreter (tracekit cpu --off-cpu) checks:
 *
 *  - the 3:1 split between leaf_hot and leaf_cold (0.75 +- 0.05), under
 *    each of its two drivers;
 *  - >= 97 % of leaf_hot's samples carry the whole chain: drive_X, handler,
 *    the interpreter's native frames, up to _start;
 *  - the executing line: >= 95 % of leaf_hot's samples on its body's lines,
 *    each of the three lines of its loop >= 15 % (a stale instruction
 *    pointer or a wrong line table would not spread so);
 *  - a method by its qualified name (Shape.area; co_qualname is 3.11+);
 *  - a Python function called back from C (sorted(key=keyfn)) below the C
 *    frames that called it, those below sort_driver;
 *  - every thread, by its native id, with its Python frames;
 *  - a thread waiting on a lock (off-CPU): its Python frames, names and
 *    lines, are those the interpreter's own sys._current_frames() gave at a
 *    moment it waited there.
 *
 * Then, on the host's 3.11: allocations of a Python function (alloc -p,
 * sampled and growth), a process that exits during the capture (its frames
 * keep their names), the perf_event backend (says it cannot show Python
 * frames and counts the samples), and TK_UNWIND_NO_PYTHON=1, the walk
 * without Python frames, which must fail the checks above.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"
#include "spawn.h"

static char tmpdir[] = "/tmp/tk-python-test.XXXXXX";
static char out[4 << 20];
static char script[4096];	/* tests/workloads/py/pywork.py, absolute */

#define path_in_tmp(name) tk_test_path(tmpdir, name)

struct interp {
	const char *label;
	const char *root;	/* NULL: the host's */
	const char *exe;	/* inside root */
	int minor;
	bool required;		/* a Debian one: a failure under CI when missing */
};

static bool fabs_ok(double v, double want, double tol)
{
	return v >= want - tol && v <= want + tol;
}

static int run(char **args)
{
	return tk_test_run_tracekit(out, sizeof(out), false, args);
}

/* "def NAME" in the workload: its line */
static int def_line(const char *name)
{
	char line[512], want[128];
	FILE *f = fopen(script, "r");
	int n = 0;

	assert_non_null(f);
	snprintf(want, sizeof(want), "def %s(", name);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want) == line || strstr(line, want) == line + 4) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("no def %s in %s", name, script);
	return 0;
}

/* ---- folded stacks ------------------------------------------------------------------ */

/* a frame of a folded line: ";NAME;" or ";NAME" at the end */
static bool has_frame(const char *line, const char *name)
{
	size_t n = strlen(name);
	const char *p = line;

	while ((p = strstr(p, name))) {
		if ((p == line || p[-1] == ';') && (p[n] == ';' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* frames @a, @b, @c in this order, rootward first (<= 3.10 has native frames between) */
static bool in_order(const char *line, const char *a, const char *b, const char *c)
{
	const char *p = strstr(line, a);

	return p && (p = strstr(p, b)) && strstr(p, c);
}

struct folded_counts {
	unsigned long total, hot, cold, hot_chain, hot_a, hot_b, cold_a, cold_b;
	unsigned long method, bare_method, keyfn, keyfn_under_c;
	int nr_cut;
};

/* the part of @line between frames @a and @b (a before b), or NULL */
static bool between(const char *line, const char *a, const char *b, int *frames)
{
	const char *p = strstr(line, a), *q;

	if (!p)
		return false;
	q = strstr(p, b);
	if (!q)
		return false;
	*frames = 0;
	for (p += strlen(a); p < q; p++)
		*frames += *p == ';';
	return true;
}

static void read_folded(const char *file, struct folded_counts *c)
{
	static char line[1 << 16];
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		unsigned long n;
		int frames;

		assert_non_null(sp);
		n = strtoul(sp + 1, NULL, 10);
		*sp = '\0';
		c->total += n;
		if (has_frame(line, "leaf_hot")) {
			c->hot += n;
			/* the whole chain: Python callers, the interpreter, up to _start */
			if (strstr(line, ";_start;") && strstr(line, ";Py_BytesMain;") &&
			    strstr(line, "_PyEval_EvalFrameDefault;") &&
			    (in_order(line, ";drive_a;", ";handler;", ";leaf_hot") ||
			     in_order(line, ";drive_b;", ";handler;", ";leaf_hot")))
				c->hot_chain += n;
			else if (c->nr_cut++ < 3)	/* for a failure's message */
				print_message("  not whole (%lu): %.600s\n", n, line);
			c->hot_a += has_frame(line, "drive_a") ? n : 0;
			c->hot_b += has_frame(line, "drive_b") ? n : 0;
		}
		if (has_frame(line, "leaf_cold")) {
			c->cold += n;
			c->cold_a += has_frame(line, "drive_a") ? n : 0;
			c->cold_b += has_frame(line, "drive_b") ? n : 0;
		}
		c->method += has_frame(line, "Shape.area") ? n : 0;
		c->bare_method += has_frame(line, "area") ? n : 0;
		if (has_frame(line, "keyfn")) {
			c->keyfn += n;
			/* keyfn below the C frames of sorted(), those below sort_driver */
			if (between(line, ";sort_driver;", ";keyfn", &frames) && frames >= 2 &&
			    strstr(strstr(line, ";sort_driver;"), "_PyEval_EvalFrameDefault;keyfn"))
				c->keyfn_under_c += n;
		}
	}
	fclose(f);
}

/* ---- go tool pprof -traces -lines ----------------------------------------------------- */

#define MAX_TRACES 20000
#define MAX_FRAMES 160

struct trace {
	long tid;
	double value;		/* the trace's weight, as pprof prints it (any unit) */
	int nr;
	char *frame[MAX_FRAMES];	/* leaf first: "name" or "name file:line" */
};

static struct trace traces[MAX_TRACES];
static int nr_traces;

static double pprof_value(const char *s)
{
	static const struct {
		const char *unit;
		double mul;
	} units[] = { { "ns", 1e-3 }, { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 }, { "B", 1 },
		      { "kB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 } };
	char *end;
	double v = strtod(s, &end);
	size_t i, n = strcspn(end, " ");

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (n == strlen(units[i].unit) && !strncmp(end, units[i].unit, n))
			return v * units[i].mul;
	return v;
}

static void free_traces(void)
{
	int i, j;

	for (i = 0; i < nr_traces; i++)
		for (j = 0; j < traces[i].nr; j++)
			free(traces[i].frame[j]);
	nr_traces = 0;
}

/* Parse `go tool pprof -traces -lines -sample_index=@index @pb` into traces[]. */
static void read_traces(const char *pb, const char *index)
{
	char cmd[1024], *line, *save = NULL;
	struct trace *t = NULL;
	long tid = -1;

	free_traces();
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -traces -lines "
		 "-sample_index=%s %s 2>/dev/null", index, pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line;

		if (!strncmp(line, "-----------+", 12)) {
			t = NULL;
			tid = -1;
			continue;
		}
		while (*p == ' ')
			p++;
		if (!strncmp(p, "tid:", 4)) {
			tid = strtol(p + 4, NULL, 10);
			continue;
		}
		if (p == line || !*p || p[strcspn(p, " ") - 1] == ':')
			continue;	/* the header; comm:, pid: and other labels */
		if (!t && isdigit((unsigned char)*p) && nr_traces < MAX_TRACES) {
			t = &traces[nr_traces++];
			memset(t, 0, sizeof(*t));
			t->tid = tid;
			t->value = pprof_value(p);
			p += strcspn(p, " ");
			while (*p == ' ')
				p++;
		}
		if (t && t->nr < MAX_FRAMES && (t->frame[t->nr] = strdup(p)))
			t->nr++;
	}
}

/* The line of Python frame @f ("name file:line"), 0 when @f is a native frame. */
static int frame_line(const char *f, char *name, size_t name_sz)
{
	const char *sp = strchr(f, ' '), *colon = strrchr(f, ':');

	if (!sp || !colon || colon < sp || !isdigit((unsigned char)colon[1]))
		return 0;
	snprintf(name, name_sz, "%.*s", (int)(sp - f), f);
	return atoi(colon + 1);
}

/* ---- the interpreters --------------------------------------------------------------- */

static const char *roots_dir(void)
{
	static char d[512];
	const char *e = getenv("TK_PY_ROOTS");

	snprintf(d, sizeof(d), "%s", e ? e : tk_test_path(tk_test_build_dir(), "roots"));
	return d;
}

/* The workload's path as the interpreter sees it (copied into a root); its dump's. */
static void place(const struct interp *in, char *spath, size_t ssz, char *dump, size_t dsz,
		  char *dump_host, size_t dhsz)
{
	char cmd[2048];

	if (!in->root) {
		snprintf(spath, ssz, "%s", script);
		snprintf(dump, dsz, "%s", path_in_tmp("dump.txt"));
		snprintf(dump_host, dhsz, "%s", dump);
		unlink(dump_host);
		return;
	}
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/tmp/tk-pytest && cp %s %s/tmp/tk-pytest/",
		 in->root, script, in->root);
	assert_int_equal(system(cmd), 0);
	snprintf(spath, ssz, "/tmp/tk-pytest/pywork.py");
	snprintf(dump, dsz, "/tmp/tk-pytest/dump.txt");
	snprintf(dump_host, dhsz, "%s/tmp/tk-pytest/dump.txt", in->root);
	unlink(dump_host);
}

static bool available(const struct interp *in)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s%s", in->root ? in->root : "", in->exe);
	return !access(p, X_OK);
}

/* ---- one run per interpreter ---------------------------------------------------------- */

/* The waiter's Python frames in its heaviest off-CPU trace equal the interpreter's dump. */
static void check_known_moment(const struct interp *in, const char *dump_host, const char *pb)
{
	char line[4096], name[256], *tok, *save = NULL;
	char want_name[64][128];
	int want_line[64], nw = 0, i, j, nm = 0;
	long wtid = -1;
	struct trace *best = NULL;
	FILE *f = fopen(dump_host, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "waiter ", 7))
			continue;
		line[strcspn(line, "\n")] = '\0';
		strtok_r(line, " ", &save);
		wtid = strtol(strtok_r(NULL, " ", &save), NULL, 10);
		while ((tok = strtok_r(NULL, " ", &save)) && nw < 64) {
			char *c = strrchr(tok, ':');

			*c = '\0';
			snprintf(want_name[nw], sizeof(want_name[nw]), "%s", tok);
			want_line[nw++] = atoi(c + 1);
		}
	}
	fclose(f);
	assert_true(wtid > 0 && nw >= 3);
	read_traces(pb, "off_cpu");
	for (i = 0; i < nr_traces; i++)
		if (traces[i].tid == wtid && (!best || traces[i].value > best->value))
			best = &traces[i];
	assert_non_null(best);
	/* its Python frames, leaf first, against the dump's, outermost first */
	j = nw - 1;
	for (i = 0; i < best->nr; i++) {
		int ln = frame_line(best->frame[i], name, sizeof(name));
		const char *dot = strrchr(name, '.');

		if (!ln)
			continue;
		print_message("  %s waiter frame %s:%d, interpreter's %s:%d\n", in->label, name,
			      ln, j >= 0 ? want_name[j] : "-", j >= 0 ? want_line[j] : 0);
		/* the interpreter's traceback names co_name; ours co_qualname where it is */
		assert_true(j >= 0);
		assert_string_equal(dot ? dot + 1 : name, want_name[j]);
		assert_int_equal(ln, want_line[j]);
		j--;
		nm++;
	}
	assert_int_equal(j, -1);
	assert_int_equal(nm, nw);
}

/* Every thread of the dump has traces with frames of the workload, under its native id. */
static void check_threads(const char *dump_host)
{
	char line[4096];
	FILE *f = fopen(dump_host, "r");
	int threads = 0, i, j;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		long tid = strtol(strchr(line, ' ') + 1, NULL, 10);
		bool seen = false;

		for (i = 0; i < nr_traces && !seen; i++)
			for (j = 0; j < traces[i].nr && traces[i].tid == tid; j++)
				seen |= strstr(traces[i].frame[j], "pywork.py:") != NULL;
		assert_true(seen);
		threads++;
	}
	fclose(f);
	assert_int_equal(threads, 4);
}

/* leaf_hot's samples by line: body and loop lines (from the cpu traces just read). */
static void check_lines(const struct interp *in)
{
	double body = 0, all = 0, loop[3] = { 0 };
	int def = def_line("leaf_hot"), i, j;
	char name[256];

	for (i = 0; i < nr_traces; i++) {
		for (j = 0; j < traces[i].nr; j++) {
			int ln = frame_line(traces[i].frame[j], name, sizeof(name));

			if (!ln || strcmp(name, "leaf_hot"))
				continue;
			all += traces[i].value;
			if (ln > def && ln <= def + 6)
				body += traces[i].value;
			if (ln >= def + 3 && ln <= def + 5)
				loop[ln - def - 3] += traces[i].value;
			break;
		}
	}
	print_message("  %s leaf_hot lines: %.1f %% in its body; a+=1 %.1f %%, b+=2 %.1f %%, "
		      "c+=3 %.1f %%\n", in->label, 100 * body / all, 100 * loop[0] / all,
		      100 * loop[1] / all, 100 * loop[2] / all);
	assert_true(all > 0);
	assert_true(body >= 0.95 * all);
	for (i = 0; i < 3; i++)
		assert_true(loop[i] >= 0.15 * all);
}

static void check_interp(const struct interp *in)
{
	const char *folded = path_in_tmp("mix.folded"), *pb = path_in_tmp("mix.pb.gz");
	char spath[1024], dump[1024], dump_host[1024];
	struct folded_counts c;
	double split;

	if (!available(in)) {
		if (in->required)
			NEED_DEP(false, "%s (%s%s; tests/lib/mkroot.sh SUITE DIR "
				 "python3-minimal)\n",
				 in->label, in->root ? in->root : "", in->exe);
		print_message("skip: no %s\n", in->label);
		skip();
	}
	place(in, spath, sizeof(spath), dump, sizeof(dump), dump_host, sizeof(dump_host));
	{
		char *args[] = { "cpu", "--backend", "bpf", "--off-cpu", "-F", "999",
				 "-o", (char *)folded, "-o", (char *)pb, "--",
				 in->root ? "chroot" : (char *)in->exe,
				 in->root ? (char *)in->root : spath,
				 in->root ? (char *)in->exe : "mix",
				 in->root ? spath : "4",
				 in->root ? "mix" : dump,
				 in->root ? "4" : NULL, in->root ? dump : NULL, NULL };

		assert_int_equal(run(args), 0);
	}
	read_folded(folded, &c);
	split = (double)c.hot / (c.hot + c.cold);
	print_message("%s: %lu samples; leaf_hot %lu, leaf_cold %lu: %.3f; whole chain %.1f %%; "
		      "drive_a %.3f, drive_b %.3f; method %lu (bare %lu); keyfn %lu, under "
		      "sorted %lu\n", in->label, c.total, c.hot, c.cold, split,
		      100.0 * c.hot_chain / (c.hot ? c.hot : 1),
		      (double)c.hot_a / (c.hot_a + c.cold_a + !c.hot_a),
		      (double)c.hot_b / (c.hot_b + c.cold_b + !c.hot_b), c.method, c.bare_method,
		      c.keyfn, c.keyfn_under_c);
	assert_true(c.hot > 200);
	assert_true(split >= 0.70 && split <= 0.80);
	assert_true(c.hot_chain >= 0.97 * c.hot);
	/* the split holds under each driver */
	assert_true(c.hot_a > c.hot / 4 && c.hot_b > c.hot / 4);
	assert_true(fabs_ok((double)c.hot_a / (c.hot_a + c.cold_a), 0.75, 0.07));
	assert_true(fabs_ok((double)c.hot_b / (c.hot_b + c.cold_b), 0.75, 0.07));
	if (in->minor >= 11)
		assert_true(c.method > 50);
	else
		assert_true(c.bare_method > 50);
	assert_true(c.keyfn > 50);
	assert_true(c.keyfn_under_c >= 0.9 * c.keyfn);
	read_traces(pb, "samples");
	check_lines(in);
	check_threads(dump_host);
	check_known_moment(in, dump_host, pb);
}

/* ---- the interpreters' tests ---------------------------------------------------------- */

static void root_interp(const char *suite, const char *exe, int minor, const char *label)
{
	char root[1024];
	struct interp in = { label, root, exe, minor, true };

	NEED_ROOT();
	snprintf(root, sizeof(root), "%s/%s-py", roots_dir(), suite);
	check_interp(&in);
}

static void test_bookworm_311(void **state)
{
	struct interp in = { "bookworm 3.11", NULL, "/usr/bin/python3.11", 11, true };

	NEED_ROOT();
	check_interp(&in);
}

static void test_bullseye_39(void **state)
{
	root_interp("bullseye", "/usr/bin/python3.9", 9, "bullseye 3.9");
}

static void test_trixie_313(void **state)
{
	root_interp("trixie", "/usr/bin/python3.13", 13, "trixie 3.13");
}

static void test_sid_314(void **state)
{
	root_interp("sid", "/usr/bin/python3.14", 14, "sid 3.14");
}

/* Every ~/.pyenv/versions/3.9-3.14 (--enable-shared: libpython is the interpreter). */
static void test_pyenv(void **state)
{
	const char *home = getenv("HOME");
	char dir[1024], exe[1300], label[64];
	struct dirent *e;
	int n = 0, minor;
	DIR *d;

	NEED_ROOT();
	snprintf(dir, sizeof(dir), "%s/.pyenv/versions", home ? home : "/root");
	d = opendir(dir);
	if (!d) {
		print_message("skip: no pyenv (%s)\n", dir);
		skip();
	}
	while ((e = readdir(d))) {
		if (sscanf(e->d_name, "3.%d", &minor) != 1 || minor < 9 || minor > 14)
			continue;
		snprintf(exe, sizeof(exe), "%s/%s/bin/python3.%d", dir, e->d_name, minor);
		snprintf(label, sizeof(label), "pyenv %s", e->d_name);
		{
			struct interp in = { label, NULL, exe, minor, false };

			if (!available(&in))
				continue;
			check_interp(&in);
			n++;
		}
	}
	closedir(d);
	if (!n) {
		print_message("skip: no pyenv CPython 3.9-3.14 in %s\n", dir);
		skip();
	}
}

/*
 * -X perf (3.12+): every Python call through a trampoline of no file and no
 * frame pointer; the walk takes its frame by its layout (CFA = sp + 16) and
 * the chain stays whole. Without that rule it ends at the first trampoline.
 */
static void check_trampolines(const struct interp *in)
{
	const char *folded = path_in_tmp("perf.folded"), *pb = path_in_tmp("tramp.pb.gz");
	char spath[1024], dump[1024], dump_host[1024], cmd[1024], *p;
	struct folded_counts c;
	long tramp;

	place(in, spath, sizeof(spath), dump, sizeof(dump), dump_host, sizeof(dump_host));
	snprintf(cmd, sizeof(cmd), "touch %s", path_in_tmp("mark"));
	assert_int_equal(system(cmd), 0);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded,
				 "-o", (char *)pb, "--",
				 in->root ? "chroot" : (char *)in->exe,
				 in->root ? (char *)in->root : "-X",
				 in->root ? (char *)in->exe : "perf",
				 in->root ? "-X" : spath,
				 in->root ? "perf" : "mix",
				 in->root ? spath : "3",
				 in->root ? "mix" : NULL, in->root ? "3" : NULL, NULL };

		assert_int_equal(run(args), 0);
	}
	/* the perf maps this interpreter wrote */
	snprintf(cmd, sizeof(cmd), "find %s/tmp -maxdepth 1 -name 'perf-*.map' -newer %s -delete",
		 in->root ? in->root : "", path_in_tmp("mark"));
	assert_int_equal(system(cmd), 0);
	read_folded(folded, &c);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -comments %s 2>&1", pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	p = strstr(out, " trampoline frames");
	while (p && p > out && isdigit((unsigned char)p[-1]))
		p--;
	tramp = p ? strtol(p, NULL, 10) : 0;
	print_message("%s -X perf: leaf_hot %lu, whole chain %.1f %%; %ld trampoline frames\n",
		      in->label, c.hot, 100.0 * c.hot_chain / (c.hot ? c.hot : 1), tramp);
	assert_true(c.hot > 100);
	assert_true(c.hot_chain >= 0.97 * c.hot);
	assert_true(tramp > (long)c.hot);
}

/*
 * The same on the perf backend, which walks a copy of the stack in user space: the
 * trampolines by the same rule (their code read from the live process), so a sample deep in
 * leaf_hot has its four interpreter frames (<module>, drive_X, handler, leaf_hot: -X perf
 * gives each call its own) and reaches _start. Without the rule the walk ends at the first.
 */
static void check_trampolines_perf(const struct interp *in)
{
	const char *folded = path_in_tmp("tperf.folded");
	char spath[1024], dump[1024], dump_host[1024], cmd[1024], line[1 << 14];
	unsigned long in_loop = 0, whole = 0;
	FILE *f;

	place(in, spath, sizeof(spath), dump, sizeof(dump), dump_host, sizeof(dump_host));
	snprintf(cmd, sizeof(cmd), "touch %s", path_in_tmp("mark"));
	assert_int_equal(system(cmd), 0);
	{
		char *args[] = { "cpu", "--backend", "perf", "-F", "499", "-o", (char *)folded, "--",
				 in->root ? "chroot" : (char *)in->exe,
				 in->root ? (char *)in->root : "-X",
				 in->root ? (char *)in->exe : "perf",
				 in->root ? "-X" : spath,
				 in->root ? "perf" : "work",
				 in->root ? spath : "25",
				 in->root ? "work" : NULL, in->root ? "25" : NULL, NULL };

		assert_int_equal(run(args), 0);
	}
	snprintf(cmd, sizeof(cmd), "find %s/tmp -maxdepth 1 -name 'perf-*.map' -newer %s -delete",
		 in->root ? in->root : "", path_in_tmp("mark"));
	assert_int_equal(system(cmd), 0);
	f = fopen(folded, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' '), *p = line;
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;
		int evals = 0;

		while ((p = strstr(p, ";_PyEval_EvalFrameDefault"))) {
			evals++;
			p++;
		}
		if (!evals)
			continue;
		in_loop += n;
		if (strstr(line, ";_start;") && evals >= 4)
			whole += n;
	}
	fclose(f);
	print_message("%s -X perf, perf backend: %lu samples in the loop, %lu of them whole with "
		      "their four interpreter frames\n", in->label, in_loop, whole);
	assert_true(in_loop > 200);
	assert_true(whole >= 0.8 * in_loop);
}

static void test_trampolines(void **state)
{
	const char *home = getenv("HOME");
	char exe[1024], root[1024];
	int n = 0, v;
	static const char *const pyenv[] = { "3.12.1", "3.13.0" };

	NEED_ROOT();
	snprintf(root, sizeof(root), "%s/sid-py", roots_dir());
	{
		struct interp in = { "sid 3.14", root, "/usr/bin/python3.14", 14, true };

		if (available(&in)) {
			check_trampolines(&in);
			check_trampolines_perf(&in);
			n++;
		} else {
			NEED_DEP(false, "sid 3.14 (%s)\n", root);
		}
	}
	for (v = 0; v < 2; v++) {
		snprintf(exe, sizeof(exe), "%s/.pyenv/versions/%s/bin/python3.%d",
			 home ? home : "/root", pyenv[v], 12 + v);
		{
			struct interp in = { pyenv[v], NULL, exe, 12 + v, false };

			if (!available(&in))
				continue;
			check_trampolines(&in);
			check_trampolines_perf(&in);
			n++;
		}
	}
	assert_true(n > 0);
}

/* ---- the other collectors and backends, on the host's 3.11 ------------------------------- */

#define HOST_PY "/usr/bin/python3.11"

static pid_t start_py(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* The heaviest function of pprof's -top for @index, among Python frames named @want. */
static double share_of(const char *pb, const char *index, const char *want)
{
	double all = 0, with = 0;
	int i, j;

	read_traces(pb, index);
	for (i = 0; i < nr_traces; i++) {
		all += traces[i].value;
		for (j = 0; j < traces[i].nr; j++) {
			if (!strncmp(traces[i].frame[j], want, strlen(want)) &&
			    traces[i].frame[j][strlen(want)] == ' ') {
				with += traces[i].value;
				break;
			}
		}
	}
	print_message("  %s %s: %d traces, %.3g of %.3g under %s\n", pb, index, nr_traces, with,
		      all, want);
	return all ? with / all : 0;
}

/* alloc -p: the Python function that allocates and holds, sampled and growth. */
static void test_alloc_python(void **state)
{
	const char *pb = path_in_tmp("alloc.pb.gz"), *pbg = path_in_tmp("growth.pb.gz");
	char *argv[] = { HOST_PY, script, "alloc", "8", NULL };
	char spid[16];
	double hold, leak;
	pid_t pid;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	pid = start_py(argv);
	assert_true(pid > 0);
	usleep(700000);		/* past its start-up */
	snprintf(spid, sizeof(spid), "%d", pid);
	{
		char *args[] = { "alloc", "-p", spid, "-d", "3", "-o", (char *)pb, NULL };

		assert_int_equal(run(args), 0);
	}
	{
		char *args[] = { "alloc", "-p", spid, "--mode", "growth", "-d", "2", "-o",
				 (char *)pbg, NULL };

		assert_int_equal(run(args), 0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	hold = share_of(pb, "alloc_space", "hold_memory");
	leak = share_of(pbg, "inuse_space", "leak_memory") + share_of(pbg, "inuse_space",
								       "hold_memory");
	print_message("alloc -p: %.1f %% of the bytes sampled under hold_memory; growth: %.1f %% "
		      "under leak_memory or hold_memory\n", 100 * hold, 100 * leak);
	assert_true(hold >= 0.5);
	assert_true(leak >= 0.5);
}

/* alloc -- CMD: the in-process sampler's markers, whose stacks the kernel walks. */
static void test_alloc_python_command(void **state)
{
	const char *pb = path_in_tmp("allocc.pb.gz");
	double hold;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	{
		char *args[] = { "alloc", "-o", (char *)pb, "--", HOST_PY, script, "alloc", "2",
				 NULL };

		assert_int_equal(run(args), 0);
	}
	{
		char cmd[1024];

		/* the plan the profile states: the sampler's markers, not uprobes on malloc */
		snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -raw %s 2>/dev/null | "
			 "grep -c 'in-process sampler'", pb);
		assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
		assert_true(atoi(out) >= 1);
	}
	hold = share_of(pb, "alloc_space", "hold_memory");
	print_message("alloc -- python: %.1f %% of the bytes sampled under hold_memory\n",
		      100 * hold);
	assert_true(hold >= 0.5);
}

static uint64_t vmstat_of(const char *name)
{
	char line[256];
	uint64_t v = 0;
	size_t n = strlen(name);
	FILE *f = fopen("/proc/vmstat", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ')
			v = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/*
 * numa --stacks: the pages a Python function's compaction migrated (it writes
 * /proc/sys/vm/compact_memory, the kernel compacts in its context) are under
 * that function. How many pages move is the kernel's business: none moved on
 * the whole machine is a skip, pages moved and none under compact_here a
 * failure.
 */
static void test_numa_python(void **state)
{
	const char *pb = path_in_tmp("numa.pb.gz");
	char *argv[] = { HOST_PY, script, "compact", "4", NULL };
	uint64_t before, after;
	char spid[16];
	double under;
	pid_t pid;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	if (access("/proc/sys/vm/compact_memory", W_OK)) {
		print_message("skip: no /proc/sys/vm/compact_memory\n");
		skip();
	}
	before = vmstat_of("pgmigrate_success");
	pid = start_py(argv);
	assert_true(pid > 0);
	usleep(300000);
	snprintf(spid, sizeof(spid), "%d", pid);
	{
		char *args[] = { "numa", "--backend", "bpf", "--stacks", "-p", spid, "-d", "3",
				 "-o", (char *)pb, NULL };

		assert_int_equal(run(args), 0);
	}
	after = vmstat_of("pgmigrate_success");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	read_traces(pb, "pages");
	if (!nr_traces && after == before) {
		print_message("skip: compaction moved no page anywhere\n");
		skip();
	}
	{
		char cmd[1024];

		/* walked by the CFI unwinder; nothing blamed on it (a refused fentry load was) */
		snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -raw %s 2>/dev/null | "
			 "grep -c 'refused the CFI unwinder'", pb);
		tk_test_capture(cmd, out, sizeof(out));
		assert_int_equal(atoi(out), 0);
	}
	under = share_of(pb, "pages", "compact_here");
	print_message("numa --stacks: pgmigrate_success +%llu; %.1f %% of the pages traced under "
		      "compact_here\n", (unsigned long long)(after - before), 100 * under);
	assert_true(nr_traces > 0);
	assert_true(under >= 0.95);
}

/* A process that exits during the capture keeps the names of its Python frames. */
static void test_exit_during_capture(void **state)
{
	const char *folded = path_in_tmp("exit.folded"), *pb = path_in_tmp("exit.pb.gz");
	char cmd[2048];
	struct folded_counts c;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	snprintf(cmd, sizeof(cmd), "%s %s exit 1.5; sleep 2", HOST_PY, script);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded,
				 "-o", (char *)pb, "--", "/bin/sh", "-c", cmd, NULL };

		assert_int_equal(run(args), 0);
	}
	read_folded(folded, &c);
	print_message("exited: leaf_hot %lu, leaf_cold %lu samples\n", c.hot, c.cold);
	assert_true(c.hot > 100 && c.cold > 30);
	read_traces(pb, "samples");
	check_lines(&(struct interp){ "exited 3.11", NULL, HOST_PY, 11, true });
}

/* The perf_event backend says it cannot show Python frames, and counts the samples. */
static void test_perf_backend_says_so(void **state)
{
	const char *folded = path_in_tmp("perf.folded"), *pb = path_in_tmp("perf.pb.gz");
	char cmd[1024], *p;
	struct folded_counts c;
	long n;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	{
		char *args[] = { "cpu", "--backend", "perf", "-F", "499", "-o", (char *)folded,
				 "-o", (char *)pb, "--", HOST_PY, script, "mix", "2", NULL };

		assert_int_equal(run(args), 0);
	}
	read_folded(folded, &c);
	assert_int_equal(c.hot + c.cold + c.keyfn, 0);	/* never a guess */
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} go tool pprof -comments %s 2>&1", pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	p = strstr(out, "lost: python_frames_unavailable=");
	assert_non_null(p);
	n = strtol(p + strlen("lost: python_frames_unavailable="), NULL, 10);
	print_message("perf backend: %ld samples ran Python code, of %lu\n", n, c.total);
	assert_true(n >= (long)(c.total * 0.8));
	assert_non_null(strstr(out, "cannot read Python frames faithfully"));
}

/* caps -p names the CPython a process runs, and says its frames are walked; none for others. */
static void test_caps_names_python(void **state)
{
	char *argv[] = { HOST_PY, script, "mix", "5", NULL };
	char spid[16], *p;
	pid_t pid;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	pid = start_py(argv);
	assert_true(pid > 0);
	usleep(700000);
	snprintf(spid, sizeof(spid), "%d", pid);
	{
		char *args[] = { "caps", "-p", spid, "--json", NULL };

		assert_int_equal(run(args), 0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	p = strstr(out, "\"process.python\"");
	assert_non_null(p);
	assert_non_null(strstr(p, "\"status\": \"supported\""));
	assert_non_null(strstr(p, "CPython 3.11."));
	assert_non_null(strstr(p, "/usr/bin/python3.11"));
	assert_non_null(strstr(p, "thread states found"));
	snprintf(spid, sizeof(spid), "%d", getpid());
	{
		char *args[] = { "caps", "-p", spid, "--json", NULL };

		assert_int_equal(run(args), 0);
	}
	p = strstr(out, "\"process.python\"");
	assert_non_null(p);
	assert_non_null(strstr(p, "\"value\": \"none\""));
}

/* Without Python frames (as without the kernel's BTF) the checks above fail. */
static void test_without_python_frames(void **state)
{
	const char *folded = path_in_tmp("nopy.folded");
	struct folded_counts c;

	NEED_ROOT();
	NEED_DEP(!access(HOST_PY, X_OK), "%s\n", HOST_PY);
	setenv("TK_UNWIND_NO_PYTHON", "1", 1);
	{
		char *args[] = { "cpu", "--backend", "bpf", "-F", "499", "-o", (char *)folded,
				 "--", HOST_PY, script, "mix", "2", NULL };

		assert_int_equal(run(args), 0);
	}
	unsetenv("TK_UNWIND_NO_PYTHON");
	read_folded(folded, &c);
	assert_true(c.total > 300);
	assert_int_equal(c.hot + c.cold + c.keyfn + c.method, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bookworm_311),
		cmocka_unit_test(test_bullseye_39),
		cmocka_unit_test(test_trixie_313),
		cmocka_unit_test(test_sid_314),
		cmocka_unit_test(test_pyenv),
		cmocka_unit_test(test_trampolines),
		cmocka_unit_test(test_alloc_python),
		cmocka_unit_test(test_alloc_python_command),
		cmocka_unit_test(test_numa_python),
		cmocka_unit_test(test_exit_during_capture),
		cmocka_unit_test(test_perf_backend_says_so),
		cmocka_unit_test(test_caps_names_python),
		cmocka_unit_test(test_without_python_frames),
	};
	char cwd[2048];
	int ret;

	if (!mkdtemp(tmpdir) || !getcwd(cwd, sizeof(cwd)))
		return 1;
	snprintf(script, sizeof(script), "%s/tests/workloads/py/pywork.py", cwd);
	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	free_traces();
	snprintf(cwd, sizeof(cwd), "%s", getenv("TK_TEST_KEEP") ? "true" : "rm -rf ");
	strncat(cwd, getenv("TK_TEST_KEEP") ? "" : tmpdir, sizeof(cwd) - strlen(cwd) - 1);
	if (system(cwd))
		ret = ret ? ret : 1;
	return ret;
}
