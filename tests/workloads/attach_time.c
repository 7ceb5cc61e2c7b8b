// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Start-up time of a sampling tracer, measured the same way for every tool:
 * from fork+exec of the command to the moment it holds at least N perf_event
 * file descriptors (one sampling event per CPU: what tracekit, perf record and
 * bpftrace's profile probe all open). Prints the milliseconds, then stops the
 * tracer with SIGINT and waits for it.
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

static int perf_fds(pid_t pid)
{
	char dir[64], path[512], target[128];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += !strcmp(target, "anon_inode:[perf_event]");
		}
	}
	closedir(d);
	return n;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double t0, t;
	int need, status;
	pid_t pid;

	if (argc < 3 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("Usage: %s N_EVENTS COMMAND [ARGS...]\nPrint the ms from starting COMMAND "
		       "until it holds N_EVENTS perf_event fds; then SIGINT it.\n", argv[0]);
		return argc < 3 && !(argc > 1 && !strcmp(argv[1], "--help")) ? 2 : 0;
	}
	need = atoi(argv[1]);
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* only our figure goes to stdout, not what the tracer prints at exit */
		if (null >= 0)
			dup2(null, 1);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	for (;;) {
		int n = perf_fds(pid);

		t = now_ms();
		if (n >= need)
			break;
		if (n < 0 || waitpid(pid, &status, WNOHANG) == pid || t - t0 > 30000) {
			fprintf(stderr, "attach_time: %s never opened %d perf events\n", argv[2],
				need);
			kill(pid, SIGKILL);
			return 1;
		}
		usleep(200);
	}
	printf("%.1f\n", t - t0);
	fflush(stdout);
	usleep(300 * 1000);
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	return 0;
}
