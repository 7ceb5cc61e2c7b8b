// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Start-up time of a tracer, measured the same way for every tool.
 *
 *   attach_time N COMMAND...
 *	from fork+exec of COMMAND until it holds at least N perf_event file
 *	descriptors (one sampling event per CPU);
 *   attach_time --settle MS COMMAND...
 *	from fork+exec of COMMAND until its file table first held every event
 *	attachment it holds once nothing has changed for MS milliseconds: perf
 *	events (perf, bpftrace's ioctl-attached probes) and BPF links by their
 *	type (tracekit's raw_tp, perf_event, uprobe_multi, tracing links). A
 *	probe a tool opens and closes while it starts (tracekit's capability
 *	probes) does not count, since the settled set is what it keeps.
 *   attach_time --exit COMMAND...
 *	from fork+exec of COMMAND until it exits (a command that attaches
 *	nothing, such as `tracekit caps`).
 *
 * Prints the milliseconds on stdout, then stops the tracer with SIGINT and
 * waits for it. The tracer's own stdout goes to /dev/null.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_KINDS 16
#define MAX_SNAPS 4096

struct snap {
	double t;
	int n[MAX_KINDS];
};

static char kinds[MAX_KINDS][32];
static int nr_kinds = 1; /* kinds[0]: perf_event fds */
static struct snap snaps[MAX_SNAPS];
static int nr_snaps;

static int kind_of(const char *name)
{
	int i;

	for (i = 1; i < nr_kinds; i++)
		if (!strcmp(kinds[i], name))
			return i;
	if (nr_kinds == MAX_KINDS)
		return -1;
	snprintf(kinds[nr_kinds], sizeof(kinds[0]), "%s", name);
	return nr_kinds++;
}

/* the link's type from its fdinfo ("link_type:\traw_tracepoint"), or "?" */
static void link_type(pid_t pid, const char *fd, char *out, size_t sz)
{
	char path[384], line[128];
	FILE *f;

	snprintf(out, sz, "?");
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "link_type: %31s", out) == 1)
			break;
	fclose(f);
}

/* counts of the process's event attachments into n[]; -1 when it is gone */
static int count_fds(pid_t pid, int *n, int with_links)
{
	char dir[64], path[512], target[128], type[32];
	struct dirent *de;
	DIR *d;

	memset(n, 0, sizeof(int) * MAX_KINDS);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t len;
		int k;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (!strcmp(target, "anon_inode:[perf_event]")) {
			n[0]++;
		} else if (with_links && !strcmp(target, "anon_inode:bpf_link")) {
			link_type(pid, de->d_name, type, sizeof(type));
			k = kind_of(type);
			if (k > 0)
				n[k]++;
		}
	}
	closedir(d);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static pid_t start(char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* only our figure goes to stdout, not what the tracer prints */
		if (null >= 0)
			dup2(null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* SIGINT, as a person stops a capture, again every 2 s (bpftrace can miss one that
 * arrives while it attaches), SIGKILL after 20 s */
static void stop(pid_t pid)
{
	int status, i;

	usleep(300 * 1000);
	for (i = 0; i < 2000; i++) {
		if (i % 200 == 0)
			kill(pid, SIGINT);
		if (waitpid(pid, &status, WNOHANG) == pid)
			return;
		usleep(10 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* the first snapshot holding at least the settled (last) one's attachments */
static double settled_at(void)
{
	const struct snap *last = &snaps[nr_snaps - 1];
	int i, k, any = 0;

	for (k = 0; k < nr_kinds; k++)
		any |= last->n[k] > 0;
	if (!any)
		return -1;
	for (i = 0; i < nr_snaps; i++) {
		for (k = 0; k < nr_kinds; k++)
			if (snaps[i].n[k] < last->n[k])
				break;
		if (k == nr_kinds)
			return snaps[i].t;
	}
	return -1;
}

static int run_settle(double settle, char **argv)
{
	double t0 = now_ms(), t, changed;
	int n[MAX_KINDS], status;
	pid_t pid = start(argv);

	if (pid < 0)
		return perror("fork"), 1;
	changed = 0;
	for (;;) {
		int gone = count_fds(pid, n, 1) < 0 || waitpid(pid, &status, WNOHANG) == pid;

		t = now_ms() - t0;
		if (gone) {
			fprintf(stderr, "attach_time: %s exited before it settled\n", argv[0]);
			return 1;
		}
		if (!nr_snaps || memcmp(n, snaps[nr_snaps - 1].n, sizeof(n))) {
			if (nr_snaps == MAX_SNAPS) {
				fprintf(stderr, "attach_time: %s never settled\n", argv[0]);
				kill(pid, SIGKILL);
				return 1;
			}
			snaps[nr_snaps].t = t;
			memcpy(snaps[nr_snaps++].n, n, sizeof(n));
			changed = t;
		}
		/* nothing attached yet is not settled: a tool may think for seconds first */
		if ((t - changed >= settle && settled_at() >= 0) || t > 60000)
			break;
		usleep(200);
	}
	t = settled_at();
	if (t < 0) {
		fprintf(stderr, "attach_time: %s attached nothing\n", argv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return 1;
	}
	printf("%.1f\n", t);
	fflush(stdout);
	stop(pid);
	return 0;
}

static int run_exit(char **argv)
{
	double t0 = now_ms();
	int status;
	pid_t pid = start(argv);

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return perror("attach_time"), 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "attach_time: %s failed (status %#x)\n", argv[0], status);
		return 1;
	}
	printf("%.1f\n", now_ms() - t0);
	return 0;
}

static int run_perf_fds(int need, char **argv)
{
	double t0 = now_ms(), t;
	int n[MAX_KINDS], status;
	pid_t pid = start(argv);

	for (;;) {
		int r = count_fds(pid, n, 0);

		t = now_ms();
		if (r == 0 && n[0] >= need)
			break;
		if (r < 0 || waitpid(pid, &status, WNOHANG) == pid || t - t0 > 30000) {
			fprintf(stderr, "attach_time: %s never opened %d perf events\n", argv[0],
				need);
			kill(pid, SIGKILL);
			return 1;
		}
		usleep(200);
	}
	printf("%.1f\n", t - t0);
	fflush(stdout);
	stop(pid);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s N_EVENTS COMMAND [ARGS...]\n"
		       "       %s --settle MS COMMAND [ARGS...]\n"
		       "       %s --exit COMMAND [ARGS...]\n"
		       "Print the ms from starting COMMAND until it holds N_EVENTS perf_event fds;\n"
		       "or until it first held every perf event and BPF link it holds once its\n"
		       "file table has not changed for MS ms; or until it exits. Then SIGINT it.\n",
		       argv[0], argv[0], argv[0]);
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "--settle"))
		return run_settle(atof(argv[2]), argv + 3);
	if (argc > 2 && !strcmp(argv[1], "--exit"))
		return run_exit(argv + 2);
	if (argc > 2 && atoi(argv[1]) > 0)
		return run_perf_fds(atoi(argv[1]), argv + 2);
	fprintf(stderr, "Usage: %s N_EVENTS|--settle MS|--exit COMMAND [ARGS...]\n", argv[0]);
	return 2;
}
