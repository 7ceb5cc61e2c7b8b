// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

const char *tk_test_build_dir(void)
{
	const char *b = getenv("TK_BUILD_DIR");

	return b && *b ? b : "build";
}

int tk_test_deny_syscall(int nr, int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

int tk_test_deny_bpf(void)
{
	return tk_test_deny_syscall(__NR_bpf, EPERM);
}

static void exec_tracekit(char *const args[])
{
	char path[512], *argv[64] = { path };
	int i;

	snprintf(path, sizeof(path), "%s/tracekit", tk_test_build_dir());
	for (i = 0; args[i] && i < 62; i++)
		argv[i + 1] = args[i];
	execv(path, argv);
	_exit(121);
}

/*
 * waitpid with a bound: a hung tracekit is killed after TK_TEST_TIMEOUT seconds
 * (default 180) rather than outliving its test. Returns 0, or -1 when killed.
 */
static int wait_bounded(pid_t pid, int *status)
{
	const char *env = getenv("TK_TEST_TIMEOUT");
	long limit = env ? atol(env) : 180, waited_ms = 0;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited_ms >= limit * 1000) {
			fprintf(stderr, "spawn: pid %d still running after %ld s: killed\n", pid,
				limit);
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -1;
		}
		usleep(20 * 1000);
		waited_ms += 20;
	}
}

int tk_test_run_tracekit(char *out, size_t out_sz, bool deny_bpf, char *const args[])
{
	int pipefd[2], status;
	size_t off = 0;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		if (deny_bpf && tk_test_deny_bpf())
			_exit(120);
		exec_tracekit(args);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], out + off, out_sz - 1 - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
		if (off == out_sz - 1) {
			char sink[4096];

			/* keep draining so the child never blocks on a full pipe */
			while (read(pipefd[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	out[off] = '\0';
	close(pipefd[0]);
	return wait_bounded(pid, &status) ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t tk_test_start_tracekit(char *const args[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 1);
		exec_tracekit(args);
	}
	return pid;
}

/* How many of @pid's fds are perf events or BPF links; -1 when it is gone. */
static int attach_fds(pid_t pid)
{
	char dir[64], path[320], link[128];
	struct dirent *e;
	int n = 0, seen = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		seen++;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		n += strstr(link, "perf_event") || strstr(link, "bpf_link") ||
		     strstr(link, "bpf-link");
	}
	closedir(d);
	return seen ? n : -1;	/* a zombie has no fds at all */
}

int tk_test_wait_attached(pid_t pid, int timeout_ms)
{
	int last = -1, same = 0, n, waited;

	for (waited = 0; waited < timeout_ms; waited += 100) {
		n = attach_fds(pid);
		if (n < 0)	/* gone, or a zombie (its fd directory is empty then) */
			return -ESRCH;
		/* attached: its events are open and their number has stopped growing */
		if (n > 0 && n == last && ++same >= 3)
			return 0;
		if (n != last)
			same = 0;
		last = n;
		usleep(100000);
	}
	return -ETIMEDOUT;
}

int tk_test_capture(const char *cmdline, char *out, size_t out_sz)
{
	FILE *p = popen(cmdline, "r");
	size_t off = 0, n;
	int status;

	if (!p)
		return -1;
	while (off < out_sz - 1 && (n = fread(out + off, 1, out_sz - 1 - off, p)) > 0)
		off += n;
	out[off] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tk_test_path(const char *dir, const char *name)
{
	static char buf[16][512];
	static int i;

	i = (i + 1) % 16;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

const char *tk_test_workload(const char *name)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/workloads", tk_test_build_dir());
	return tk_test_path(dir, name);
}

/* In the container's pid 1: @root becomes "/", as runc does it. 0 or -1. */
static int enter_root(const char *root)
{
	/* nothing of what follows may reach the host's mounts */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	/* pivot_root wants a mount point */
	if (mount(root, root, NULL, MS_BIND | MS_REC, NULL) || chdir(root))
		return -1;
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -1;
	/* the old root stacks under the new one at ".", and is detached from there */
	if (syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) || chdir("/"))
		return -1;
	return 0;
}

pid_t tk_test_spawn_in_root(const char *root, char *const argv[], int in_fd, int out_fd,
			    pid_t *outer)
{
	static char *const env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	char abs[PATH_MAX];
	pid_t mid, pid = -1;
	int p[2], null;

	if (!realpath(root, abs) || pipe2(p, O_CLOEXEC))
		return -errno;
	mid = fork();
	if (mid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (!mid) {
		/* the new pid namespace is for the children: the next fork makes its pid 1 */
		if (unshare(CLONE_NEWNS | CLONE_NEWPID))
			_exit(120);
		pid = fork();
		if (!pid) {
			null = open("/dev/null", O_RDWR);
			dup2(in_fd >= 0 ? in_fd : null, 0);
			dup2(out_fd >= 0 ? out_fd : null, 1);
			if (enter_root(abs)) {
				perror("tk_test_spawn_in_root");
				_exit(122);
			}
			execve(argv[0], argv, env);
			_exit(127);
		}
		if (write(p[1], &pid, sizeof(pid)) != sizeof(pid) || pid < 0)
			_exit(121);
		/* hold none of the test's pipes: the program must see their ends close */
		syscall(SYS_close_range, 0, ~0U, 0);
		waitpid(pid, NULL, 0);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &pid, sizeof(pid)) != sizeof(pid) || pid <= 0) {
		close(p[0]);
		waitpid(mid, NULL, 0);
		return -ECHILD;
	}
	close(p[0]);
	*outer = mid;
	return pid;
}

pid_t tk_test_start_redis(int port)
{
	char portarg[16], cmd[128], out[64];
	pid_t pid;
	int i;

	snprintf(portarg, sizeof(portarg), "%d", port);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		execl("/usr/bin/redis-server", "redis-server", "--port", portarg, "--bind",
		      "127.0.0.1", "--save", "", "--appendonly", "no", (char *)NULL);
		_exit(127);
	}
	snprintf(cmd, sizeof(cmd), "redis-cli -p %d ping 2>/dev/null", port);
	for (i = 0; i < 50; i++) {
		if (tk_test_capture(cmd, out, sizeof(out)) == 0 && strstr(out, "PONG"))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -ECHILD;
		usleep(100 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -ETIMEDOUT;
}

int tk_test_read_line(int fd, char *buf, size_t sz, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;
	ssize_t r;

	while (n + 1 < sz && poll(&p, 1, timeout_ms) == 1) {
		r = read(fd, buf + n, sz - 1 - n);
		if (r <= 0)
			break;
		n += r;
		if (memchr(buf, '\n', n))
			break;
	}
	close(fd);
	if (sz)
		buf[n] = 0;
	return (int)n;
}
