// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Output files written whole or not at all: the target appears only on
 * commit, abort leaves nothing behind, a symlink at the target (or at the
 * temporary name) is never written through, and errors leave no files. Files
 * are 0600, a FIFO nobody reads is an error at once, another user's FIFO is
 * refused, a FIFO put at the name meanwhile is replaced (never written), the
 * directory is held (a swap for a link is not followed), and what a killed
 * run left of the same target (and only that) goes at the next open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "core/outfile.h"

struct t {
	struct fx *fx;
	struct tk_outfile o;
	char path[PATH_MAX];	/* fx root/out.txt */
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || fx_path(t->fx, "out.txt", t->path, sizeof(t->path))) {
		fx_free(t->fx);
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	tk_outfile__abort(&t->o);
	fx_free(t->fx);
	free(t);
	return 0;
}

/* The whole content of @path, or NULL when it cannot be read (caller frees). */
static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");
	ssize_t n;

	if (!f)
		return NULL;
	n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return strdup("");
	}
	return buf;
}

static void assert_file_is(const char *path, const char *want)
{
	char *got = slurp(path);

	if (!got) {
		print_error("%s: cannot read\n", path);
		fail();
	}
	assert_string_equal(got, want);
	free(got);
}

/* The names in the fixture root, sorted and space separated ("" when empty). */
static void list_root(struct t *t, char *buf, size_t size)
{
	struct dirent **names;
	int n, i;

	buf[0] = '\0';
	n = scandir(t->fx->root, &names, NULL, alphasort);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		const char *name = names[i]->d_name;

		/* the fixture's own proc/ and sys/ are not output */
		if (strcmp(name, ".") && strcmp(name, "..") && strcmp(name, "proc") &&
		    strcmp(name, "sys")) {
			if (buf[0])
				strncat(buf, " ", size - strlen(buf) - 1);
			strncat(buf, name, size - strlen(buf) - 1);
		}
		free(names[i]);
	}
	free(names);
}

static void assert_root_holds(struct t *t, const char *want)
{
	char names[4096];

	list_root(t, names, sizeof(names));
	assert_string_equal(names, want);
}

static void test_commit_writes_whole_file(void **state)
{
	struct t *t = *state;
	struct stat st;

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	assert_non_null(t->o.f);
	assert_string_equal(t->o.path, t->path);
	/* the data goes to a temporary file beside the target */
	assert_true(t->o.tmp[0]);
	assert_int_equal(strncmp(t->o.tmp, t->path, strlen(t->path)), 0);
	assert_int_equal(fprintf(t->o.f, "line one\nline two\n"), 18);
	assert_int_equal(lstat(t->path, &st), -1);
	assert_int_equal(errno, ENOENT);

	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_null(t->o.f);
	assert_file_is(t->path, "line one\nline two\n");
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_root_holds(t, "out.txt");
}

static void test_commit_replaces_existing_file(void **state)
{
	struct t *t = *state;

	assert_int_equal(fx_write(t->fx, "out.txt", "old content that is longer\n"), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("new\n", t->o.f);
	/* until the commit, the old file is whole */
	assert_file_is(t->path, "old content that is longer\n");
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_file_is(t->path, "new\n");
	assert_root_holds(t, "out.txt");
}

static void test_commit_empty_output(void **state)
{
	struct t *t = *state;

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_file_is(t->path, "");
}

static void test_abort_leaves_nothing(void **state)
{
	struct t *t = *state;
	char tmp[PATH_MAX];
	struct stat st;

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	snprintf(tmp, sizeof(tmp), "%s", t->o.tmp);
	fputs("half a report", t->o.f);
	assert_int_equal(lstat(tmp, &st), 0);
	tk_outfile__abort(&t->o);
	assert_null(t->o.f);
	assert_int_equal(lstat(tmp, &st), -1);
	assert_int_equal(lstat(t->path, &st), -1);
	assert_root_holds(t, "");
	/* abort twice, and commit after abort, are harmless */
	tk_outfile__abort(&t->o);
	assert_int_equal(tk_outfile__commit(&t->o), -EINVAL);
	assert_root_holds(t, "");
}

static void test_abort_keeps_existing_target(void **state)
{
	struct t *t = *state;

	assert_int_equal(fx_write(t->fx, "out.txt", "previous run\n"), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("broken", t->o.f);
	tk_outfile__abort(&t->o);
	assert_file_is(t->path, "previous run\n");
	assert_root_holds(t, "out.txt");
}

/* A symlink at the target is refused: never written through, never replaced. */
static void test_symlink_target_refused(void **state)
{
	struct t *t = *state;
	char victim[PATH_MAX];
	struct stat st;

	assert_int_equal(fx_write(t->fx, "victim", "precious\n"), 0);
	assert_int_equal(fx_path(t->fx, "victim", victim, sizeof(victim)), 0);
	assert_int_equal(fx_symlink(t->fx, victim, "out.txt"), 0);

	assert_int_equal(tk_outfile__open(&t->o, t->path), -ELOOP);
	assert_null(t->o.f);
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_file_is(victim, "precious\n");
	assert_root_holds(t, "out.txt victim");
}

static void test_dangling_symlink_target_refused(void **state)
{
	struct t *t = *state;
	char victim[PATH_MAX];
	struct stat st;

	assert_int_equal(fx_path(t->fx, "created-through-link", victim, sizeof(victim)), 0);
	assert_int_equal(fx_symlink(t->fx, victim, "out.txt"), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), -ELOOP);
	assert_int_equal(lstat(victim, &st), -1);
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_root_holds(t, "out.txt");
}

/* A device (here /dev/null) is written as it is, and stays a device. */
static void test_device_target_written_in_place(void **state)
{
	struct tk_outfile o;
	struct stat st;

	assert_int_equal(tk_outfile__open(&o, "/dev/null"), 0);
	assert_non_null(o.f);
	assert_string_equal(o.tmp, "");
	fputs("report\n", o.f);
	assert_int_equal(tk_outfile__commit(&o), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* A symlink planted where the temporary file will be is skipped, not written through. */
static void test_symlink_at_temporary_name_not_followed(void **state)
{
	struct t *t = *state;
	char victim[PATH_MAX], tmp[PATH_MAX], planted[PATH_MAX + 32];
	unsigned int seq;
	const char *dot;
	int i;

	/* learn the naming: PATH.tmp.PID.SEQ */
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	snprintf(tmp, sizeof(tmp), "%s", t->o.tmp);
	tk_outfile__abort(&t->o);
	dot = strrchr(tmp, '.');
	assert_non_null(dot);
	seq = strtoul(dot + 1, NULL, 10);

	assert_int_equal(fx_write(t->fx, "victim", "precious\n"), 0);
	assert_int_equal(fx_path(t->fx, "victim", victim, sizeof(victim)), 0);
	for (i = 1; i <= 3; i++) {
		snprintf(planted, sizeof(planted), "%.*s.%u", (int)(dot - tmp), tmp, seq + i);
		assert_int_equal(symlink(victim, planted), 0);
	}
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("report\n", t->o.f);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_file_is(victim, "precious\n");
	assert_file_is(t->path, "report\n");
	for (i = 1; i <= 3; i++) {
		struct stat st;

		snprintf(planted, sizeof(planted), "%.*s.%u", (int)(dot - tmp), tmp, seq + i);
		assert_int_equal(lstat(planted, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
		unlink(planted);
	}
	assert_root_holds(t, "out.txt victim");
}

static void test_directory_target(void **state)
{
	struct t *t = *state;

	assert_int_equal(fx_mkdir(t->fx, "out.txt"), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), -EISDIR);
	assert_null(t->o.f);
	assert_false(t->o.tmp[0]);
	assert_root_holds(t, "out.txt");
	assert_true(fx_exists(t->fx, "out.txt/."));
}

/* A symlink to a directory is replaced like any other symlink; the directory stays. */
static void test_symlink_to_directory_target(void **state)
{
	struct t *t = *state;
	char dir[PATH_MAX];
	struct stat st;

	assert_int_equal(fx_mkdir(t->fx, "dir"), 0);
	assert_int_equal(fx_path(t->fx, "dir", dir, sizeof(dir)), 0);
	assert_int_equal(fx_symlink(t->fx, dir, "out.txt"), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), -ELOOP);
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_root_holds(t, "dir out.txt");
}

static void test_stdout(void **state)
{
	struct t *t = *state;

	assert_int_equal(tk_outfile__open(&t->o, "-"), 0);
	assert_ptr_equal(t->o.f, stdout);
	assert_false(t->o.tmp[0]);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_null(t->o.f);
	/* abort on stdout does not close it */
	assert_int_equal(tk_outfile__open(&t->o, "-"), 0);
	tk_outfile__abort(&t->o);
	assert_int_not_equal(fflush(stdout), EOF);
	assert_int_equal(fcntl(fileno(stdout), F_GETFD) >= 0, 1);
	assert_root_holds(t, "");
}

static void test_missing_directory(void **state)
{
	struct t *t = *state;
	char path[PATH_MAX];

	assert_int_equal(fx_path(t->fx, "no/such/dir/out.txt", path, sizeof(path)), 0);
	assert_int_equal(tk_outfile__open(&t->o, path), -ENOENT);
	assert_null(t->o.f);
	assert_false(t->o.tmp[0]);
	assert_root_holds(t, "");
}

static void test_bad_paths(void **state)
{
	struct t *t = *state;
	char *longpath;

	assert_int_equal(tk_outfile__open(&t->o, ""), -EINVAL);
	assert_int_equal(tk_outfile__open(&t->o, NULL), -EINVAL);
	longpath = malloc(PATH_MAX + 16);
	assert_non_null(longpath);
	memset(longpath, 'a', PATH_MAX + 15);
	longpath[PATH_MAX + 15] = '\0';
	assert_int_equal(tk_outfile__open(&t->o, longpath), -ENAMETOOLONG);
	free(longpath);
	assert_null(t->o.f);
	assert_int_equal(tk_outfile__commit(&t->o), -EINVAL);
}

/* When the rename fails, commit says so and leaves no temporary file. */
static void test_commit_error_leaves_no_temporary(void **state)
{
	struct t *t = *state;
	struct stat st;

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("report\n", t->o.f);
	/* something else makes the target a non-empty directory meanwhile */
	assert_int_equal(fx_write(t->fx, "out.txt/keep", "x"), 0);
	assert_true(tk_outfile__commit(&t->o) < 0);
	assert_null(t->o.f);
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_true(fx_exists(t->fx, "out.txt/keep"));
	assert_root_holds(t, "out.txt");
}

/* Profiles name paths and command lines: the file is the owner's only, like perf.data. */
static void test_private_mode(void **state)
{
	struct t *t = *state;
	struct stat st;
	mode_t old = umask(0);

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	umask(old);
	assert_int_equal(fstat(fileno(t->o.f), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* and a target that was 0644 before is replaced by a private file */
	assert_int_equal(chmod(t->path, 0644), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* A FIFO nobody reads: -ENXIO at once, where open(O_WRONLY) would wait forever. */
static void test_fifo_without_reader(void **state)
{
	struct t *t = *state;

	assert_int_equal(mkfifo(t->path, 0600), 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), -ENXIO);
	assert_null(t->o.f);
	assert_root_holds(t, "out.txt");
}

/* With a reader it is written as it is, blocking, so a slow reader loses nothing. */
static void test_fifo_with_reader(void **state)
{
	struct t *t = *state;
	static char chunk[65536];
	int rfd, fl, i, status;
	long total = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(mkfifo(t->path, 0600), 0);
	rfd = open(t->path, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	assert_false(t->o.tmp[0]);
	fl = fcntl(fileno(t->o.f), F_GETFL);
	assert_true(fl >= 0 && !(fl & O_NONBLOCK));
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* more than a pipe holds: the writer must wait for this reader, not fail */
		fclose(t->o.f);
		fcntl(rfd, F_SETFL, 0);
		usleep(200000);
		while ((n = read(rfd, chunk, sizeof(chunk))) > 0)
			total += n;
		_exit(total == 16 * (long)sizeof(chunk) ? 0 : 1);
	}
	close(rfd);
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 16; i++)
		assert_int_equal(fwrite(chunk, 1, sizeof(chunk), t->o.f), sizeof(chunk));
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Another user's FIFO at the name, its reader waiting (what a user does in
 * /tmp to read root's profile): refused with -EPERM, nothing reaches it.
 * Needs root (a FIFO of uid 65534).
 */
static void test_fifo_of_another_user(void **state)
{
	struct t *t = *state;
	char buf[16];
	int rfd;

	if (geteuid()) {
		print_message("  skipped: needs root (a FIFO of another user)\n");
		skip();
	}
	assert_int_equal(mkfifo(t->path, 0666), 0);
	assert_int_equal(lchown(t->path, 65534, 65534), 0);
	rfd = open(t->path, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(tk_outfile__open(&t->o, t->path), -EPERM);
	assert_null(t->o.f);
	/* no writer ever came: nothing to read */
	assert_int_equal(read(rfd, buf, sizeof(buf)), 0);
	close(rfd);
	/* ours: written as before */
	assert_int_equal(lchown(t->path, 0, 0), 0);
	rfd = open(t->path, O_RDONLY | O_NONBLOCK);
	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("x", t->o.f);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_int_equal(read(rfd, buf, sizeof(buf)), 1);
	close(rfd);
}

/*
 * A FIFO put at the name after the open, before the commit (the window of a
 * capture): the rename replaces it; its reader gets nothing.
 */
static void test_fifo_put_meanwhile_is_replaced(void **state)
{
	struct t *t = *state;
	struct stat st;
	char buf[16];
	int rfd;

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	assert_int_equal(mkfifo(t->path, 0666), 0);
	rfd = open(t->path, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	fputs("report\n", t->o.f);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	assert_int_equal(read(rfd, buf, sizeof(buf)), 0);	/* no writer ever came */
	close(rfd);
	assert_int_equal(lstat(t->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_file_is(t->path, "report\n");
}

/*
 * The directory swapped for a symlink between the open and the commit (a
 * directory others can write into, without the sticky bit): the file goes
 * into the directory held, never through the link.
 */
static void test_directory_swapped_meanwhile(void **state)
{
	struct t *t = *state;
	char dir[PATH_MAX], moved[PATH_MAX], victim[PATH_MAX], path[PATH_MAX + 16];
	struct tk_outfile o;

	assert_int_equal(fx_mkdir(t->fx, "d"), 0);
	assert_int_equal(fx_mkdir(t->fx, "victim"), 0);
	fx_path(t->fx, "d", dir, sizeof(dir));
	fx_path(t->fx, "moved", moved, sizeof(moved));
	fx_path(t->fx, "victim", victim, sizeof(victim));
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	assert_int_equal(tk_outfile__open(&o, path), 0);
	assert_int_equal(rename(dir, moved), 0);
	assert_int_equal(symlink(victim, dir), 0);
	fputs("report\n", o.f);
	assert_int_equal(tk_outfile__commit(&o), 0);
	snprintf(path, sizeof(path), "%s/out.txt", victim);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/out.txt", moved);
	assert_file_is(path, "report\n");
}

/* A pid that is not alive: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* What a SIGKILL'd run left of this target goes; anything else stays. */
static void test_stale_temporaries_removed(void **state)
{
	struct t *t = *state;
	char name[8][128], path[PATH_MAX + 128];
	pid_t dead = dead_pid();
	int i, lfd;

	snprintf(name[0], sizeof(name[0]), "out.txt.tmp.%d.0", (int)dead);	/* stale */
	snprintf(name[1], sizeof(name[1]), "out.txt.tmp.%d.7", (int)dead);	/* stale */
	snprintf(name[2], sizeof(name[2]), "out.txt.tmp.%d.0", (int)getppid()); /* alive */
	snprintf(name[3], sizeof(name[3]), "out.txt.tmp.%d.0.bak", (int)dead);
	snprintf(name[4], sizeof(name[4]), "out.txt.tmp.%d", (int)dead);
	snprintf(name[5], sizeof(name[5]), "other.txt.tmp.%d.0", (int)dead);
	snprintf(name[6], sizeof(name[6]), "out.txt.tmp.0%d.0", (int)dead);
	snprintf(name[7], sizeof(name[7]), "out.txt.tmp.%d.1", (int)dead);	/* locked */
	for (i = 0; i < 8; i++)
		assert_int_equal(fx_write(t->fx, name[i], "partial"), 0);
	/* a writer this pid namespace cannot see holds its lock */
	assert_int_equal(fx_path(t->fx, name[7], path, sizeof(path)), 0);
	lfd = open(path, O_RDONLY);
	assert_true(lfd >= 0);
	assert_int_equal(flock(lfd, LOCK_EX), 0);
	/* a symlink of the same shape is not ours to remove */
	snprintf(path, sizeof(path), "%s/out.txt.tmp.%d.2", t->fx->root, (int)dead);
	assert_int_equal(symlink("/nonexistent", path), 0);

	assert_int_equal(tk_outfile__open(&t->o, t->path), 0);
	fputs("whole\n", t->o.f);
	assert_int_equal(tk_outfile__commit(&t->o), 0);
	close(lfd);
	assert_false(fx_exists(t->fx, name[0]));
	assert_false(fx_exists(t->fx, name[1]));
	for (i = 2; i < 8; i++)
		assert_true(fx_exists(t->fx, name[i]));
	assert_int_equal(lstat(path, &(struct stat){}), 0);
	assert_file_is(t->path, "whole\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_commit_writes_whole_file),
		T(test_commit_replaces_existing_file),
		T(test_commit_empty_output),
		T(test_abort_leaves_nothing),
		T(test_abort_keeps_existing_target),
		T(test_symlink_target_refused),
		T(test_dangling_symlink_target_refused),
		cmocka_unit_test(test_device_target_written_in_place),
		T(test_symlink_at_temporary_name_not_followed),
		T(test_directory_target),
		T(test_symlink_to_directory_target),
		T(test_stdout),
		T(test_missing_directory),
		T(test_bad_paths),
		T(test_commit_error_leaves_no_temporary),
		T(test_private_mode),
		T(test_fifo_without_reader),
		T(test_fifo_with_reader),
		T(test_fifo_of_another_user),
		T(test_fifo_put_meanwhile_is_replaced),
		T(test_directory_swapped_meanwhile),
		T(test_stale_temporaries_removed),
#undef T
	};

	return cmocka_run_group_tests_name("outfile", tests, NULL, NULL);
}
