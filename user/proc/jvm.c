// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A HotSpot JVM from outside (proc/jvm.h): inspected, and asked for its perf
 * map through its attach mechanism, by a child acting as the JVM's user in
 * the JVM's root. The child is forked from a process that may run threads
 * (record, serve, an embedder's): it uses system calls only — everything it
 * needs (paths, the request, the credentials) is prepared before the fork,
 * its messages are constants, and it ends with _exit().
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "proc/jvm.h"

#define SIGQUIT_BIT (1ull << (SIGQUIT - 1))
#define PERF_DATA_MAX (1u << 20)	/* HotSpot's default is 32 KiB (PerfDataMemorySize) */
#define HSPERF_DIRS_MAX 64		/* /tmp/hsperfdata_* directories looked into */
#define LISTENER_WAIT_MS 3000		/* for the socket, after SIGQUIT */
#define REPLY_MAX 65536
#define INSPECT_TIMEOUT_MS 2000

/* What the child says, in one write (under PIPE_BUF: one read gets it whole). */
struct child_result {
	int32_t err;			/* 0, or -errno with msg */
	int32_t attach;			/* as tk_jvm_info.attach */
	uint8_t perf_data, perf_map, listener, pad;
	char version[64];
	char vm_args[512];
	char msg[200];
};

/* What the child needs, made before the fork. */
struct child_args {
	int root_fd;			/* O_PATH of PID/root */
	int out_fd;			/* the pipe's write end */
	int pidfd;			/* the JVM, checked to be the one inspected; -1: none */
	pid_t pid;
	uint32_t uid, gid;
	bool ask, sigquit_caught;
	bool attach_off;		/* its command line disables attach */
	char nspid[16];
	char sock[64];			/* /tmp/.java_pidN */
	char trigger[64];		/* /tmp/.attach_pidN */
	char perf_map[64];		/* /tmp/perf-N.map */
};

struct tk_jvm_ask {
	struct tk_jvm_info info;
	pid_t child;
	int fd;				/* the pipe's read end; -1 once read */
	int64_t deadline_ms;
	bool done;
	int result;
	char why[200];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the child: system calls only ------------------------------------------------- */

static void copy_msg(char *dst, size_t sz, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && i + 1 < sz && src[i]; i++)
		dst[i] = src[i] == '\n' ? ' ' : (unsigned char)src[i] < 0x20 || src[i] == 0x7f ?
			 '?' : src[i];
	dst[i] = '\0';
}

static __attribute__((noreturn)) void child_end(const struct child_args *a,
						struct child_result *r, int err,
						const char *msg)
{
	ssize_t n;

	r->err = err;
	if (msg)
		copy_msg(r->msg, sizeof(r->msg), msg, sizeof(r->msg));
	do
		n = write(a->out_fd, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	_exit(0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Keep @keep[0..@n) and 0-2; close every other descriptor. */
static void close_others(const int *keep, int n)
{
	int fd, hi = 2, i;
	bool kept;

	for (i = 0; i < n; i++)
		if (keep[i] > hi)
			hi = keep[i];
	if (syscall(SYS_close_range, hi + 1, ~0U, 0))
		hi = 65535;
	for (fd = 3; fd <= hi; fd++) {
		for (i = 0, kept = false; i < n; i++)
			kept |= keep[i] == fd;
		if (!kept)
			close(fd);
	}
}

/* No capabilities at all, and none to be had again. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

/* The performance data file @name in the directory @dfd, read into @buf; its length or -1. */
static ssize_t read_perf_file(const struct child_args *a, int dfd, unsigned char *buf,
			      size_t size)
{
	struct stat st, st2;
	ssize_t got;
	int fd;

	/* a file, of its user, looked at before it is opened (never a FIFO) */
	fd = openat(dfd, a->nspid, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != a->uid ||
	    (size_t)st.st_size > size) {
		close(fd);
		return -1;
	}
	close(fd);
	fd = openat(dfd, a->nspid, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st2) || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		close(fd);
		return -1;
	}
	got = read(fd, buf, size);
	close(fd);
	return got;
}

/*
 * Its performance data: the file of @nspid in a /tmp/hsperfdata_* of its
 * user (named after its user as its own passwd says: looked for, not
 * guessed). getdents64 rather than opendir: no allocation in this child.
 */
static void read_perf_data(const struct child_args *a, struct child_result *r)
{
	static unsigned char buf[PERF_DATA_MAX];
	static char ents[16384];
	int tmp, n = 0;
	long len;

	tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmp < 0)
		return;
	while (n < HSPERF_DIRS_MAX &&
	       (len = syscall(SYS_getdents64, tmp, ents, sizeof(ents))) > 0) {
		long off = 0;

		while (off < len && n < HSPERF_DIRS_MAX) {
			struct dirent64 *de = (struct dirent64 *)(ents + off);
			char cap[8];
			ssize_t got;
			int dfd;

			off += de->d_reclen;
			if (!de->d_reclen)
				break;
			if (strncmp(de->d_name, "hsperfdata_", 11))
				continue;
			n++;
			dfd = openat(tmp, de->d_name,
				     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd < 0)
				continue;
			got = read_perf_file(a, dfd, buf, sizeof(buf));
			close(dfd);
			if (got <= 0 || tk_hsperf__string(buf, got, "sun.rt.jvmCapabilities", cap,
							 sizeof(cap)))
				continue;
			r->perf_data = 1;
			/* the first capability is "supports attach" */
			r->attach = cap[0] == '1' ? 1 : 0;
			tk_hsperf__string(buf, got, "java.property.java.vm.version", r->version,
					  sizeof(r->version));
			tk_hsperf__string(buf, got, "java.rt.vmArgs", r->vm_args,
					  sizeof(r->vm_args));
			close(tmp);
			return;
		}
	}
	close(tmp);
}

static bool is_listener(const struct child_args *a)
{
	struct stat st;

	return !lstat(a->sock, &st) && S_ISSOCK(st.st_mode) && st.st_uid == a->uid;
}

/* Create the trigger HotSpot looks for at SIGQUIT, send it, wait for the socket. */
static void start_listener(const struct child_args *a, struct child_result *r)
{
	struct stat st;
	int fd, waited = 0, step = 10;

	if (!a->sigquit_caught)
		child_end(a, r, -EPERM, "it does not catch SIGQUIT (-Xrs), whose default action "
			  "would end it: not signalled");
	fd = open(a->trigger, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && (errno != EEXIST || lstat(a->trigger, &st) || !S_ISREG(st.st_mode) ||
		       st.st_uid != a->uid))
		child_end(a, r, -EEXIST, "its /tmp/.attach_pid file cannot be made (another "
			  "user's is there): not signalled");
	if (fd >= 0)
		close(fd);
	/* through the pidfd when there is one: the very process inspected, never its pid's next */
	if (a->pidfd >= 0 ? syscall(SYS_pidfd_send_signal, a->pidfd, SIGQUIT, NULL, 0) :
	    kill(a->pid, SIGQUIT)) {
		unlink(a->trigger);
		child_end(a, r, -errno, "SIGQUIT could not be sent");
	}
	while (!is_listener(a) && waited < LISTENER_WAIT_MS) {
		sleep_ms(step);
		waited += step;
		if (step < 200)
			step *= 2;
	}
	unlink(a->trigger);
	if (!is_listener(a))
		child_end(a, r, -ETIMEDOUT, "no attach listener started within 3 s of SIGQUIT");
}

/* jcmd's request on the socket; the status line of the reply. */
static void request(const struct child_args *a, struct child_result *r)
{
	static const char req[] = "1\0jcmd\0Compiler.perfmap\0\0\0";
	static char reply[REPLY_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	size_t sent = 0, got = 0;
	int64_t end;
	int s;

	memcpy(sa.sun_path, a->sock, strlen(a->sock) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)))
		child_end(a, r, -errno, "cannot connect to its attach socket");
	/* the JVM itself at the other end, not whoever made a socket of that name */
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.pid != a->pid ||
	    cred.uid != a->uid)
		child_end(a, r, -EACCES, "its attach socket is not the JVM's");
	while (sent < sizeof(req) - 1) {
		ssize_t n = send(s, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			child_end(a, r, -EPIPE, "the request could not be sent");
		sent += n;
	}
	end = now_ms() + TK_JVM_ASK_TIMEOUT_MS - LISTENER_WAIT_MS / 2;
	while (got < sizeof(reply) - 1) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		n = read(s, reply + got, sizeof(reply) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(s);
	reply[got] = '\0';
	if (got >= 2 && reply[0] == '0' && reply[1] == '\n')
		child_end(a, r, 0, NULL);
	if (!got)
		child_end(a, r, -ETIMEDOUT, "no reply from its attach listener");
	/* its status and what it said */
	child_end(a, r, -EPROTO, reply);
}

static __attribute__((noreturn)) void child_main(const struct child_args *a)
{
	struct child_result r;

	memset(&r, 0, sizeof(r));
	r.attach = -1;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close_others((const int[]){ a->root_fd, a->out_fd, a->pidfd }, 3);
	/* its root, then its user: nothing after this is done as root */
	if (fchdir(a->root_fd) || chroot(".") || chdir("/"))
		child_end(a, &r, -errno, "cannot enter its root");
	close(a->root_fd);
	if (setgroups(0, NULL) || setresgid(a->gid, a->gid, a->gid) ||
	    setresuid(a->uid, a->uid, a->uid) || getuid() != a->uid || geteuid() != a->uid ||
	    drop_caps())
		child_end(a, &r, -EPERM, "cannot take its user and group");
	read_perf_data(a, &r);
	r.perf_map = !access(a->perf_map, F_OK);
	r.listener = is_listener(a);
	if (!a->ask)
		child_end(a, &r, 0, NULL);
	if (r.attach == 0 || a->attach_off)
		child_end(a, &r, -EPERM, "attach is disabled in it (-XX:+DisableAttachMechanism): "
			  "not signalled");
	if (!r.listener)
		start_listener(a, &r);
	request(a, &r);
	_exit(0);
}

/* ---- the parent ------------------------------------------------------------------- */

/* The last numbers of a status field ("NSpid:") or its @i-th (0-based). */
static bool status_u32(const char *text, const char *name, int i, bool last, uint32_t *out)
{
	char v[256], *p = v, *end;
	bool found = false;
	int k = 0;

	if (!tk_status_field(text, name, v, sizeof(v)))
		return false;
	for (;;) {
		unsigned long x;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		x = strtoul(p, &end, 10);
		if (x > UINT32_MAX)
			break;
		if (last || k == i) {
			*out = x;
			found = true;
		}
		k++;
		p = end;
	}
	return found;
}

/*
 * -XX:[+-]@flag in @args (NUL- or space-separated, @len bytes): 1 or 0 for the
 * last one, @was when there is none.
 */
static int xx_flag(const char *args, size_t len, const char *flag, int was)
{
	size_t i, fl = strlen(flag);

	for (i = 0; i + 5 + fl <= len; i++) {
		if (memcmp(args + i, "-XX:", 4) || (args[i + 4] != '+' && args[i + 4] != '-') ||
		    memcmp(args + i + 5, flag, fl))
			continue;
		if (i + 5 + fl < len && args[i + 5 + fl] != ' ' && args[i + 5 + fl] != '\0')
			continue;
		was = args[i + 4] == '+';
	}
	return was;
}

/* @pid's start time (clock ticks since boot, /proc/PID/stat's 22nd field), or 0. */
static uint64_t start_time(const char *proc_root, uint32_t pid)
{
	char rel[64], text[1024], *p;
	int field;

	snprintf(rel, sizeof(rel), "%u/stat", pid);
	if (tk_read_file(proc_root, rel, text, sizeof(text)) <= 0)
		return 0;
	/* after the command's ")", which may itself hold spaces and parentheses */
	p = strrchr(text, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* /proc of @pid into @info; 0, -ESRCH, -EINVAL (not readable as expected). */
static int read_proc(const char *proc_root, uint32_t pid, struct tk_jvm_info *info)
{
	char rel[64], text[4096], cmd[8192], v[64];
	uint64_t sigcgt;
	long n;

	memset(info, 0, sizeof(*info));
	info->pid = pid;
	info->attach = -1;
	info->preserve_fp = -1;
	snprintf(rel, sizeof(rel), "%u/status", pid);
	if (tk_read_file(proc_root, rel, text, sizeof(text)) <= 0)
		return -ESRCH;
	info->start_time = start_time(proc_root, pid);
	info->nspid = pid;
	status_u32(text, "NSpid", 0, true, &info->nspid);
	if (!status_u32(text, "Uid", 1, false, &info->uid) ||
	    !status_u32(text, "Gid", 1, false, &info->gid) ||
	    !tk_status_field(text, "SigCgt", v, sizeof(v)))
		return -EINVAL;
	sigcgt = strtoull(v, NULL, 16);
	info->sigquit_caught = sigcgt & SIGQUIT_BIT;
	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	n = tk_read_file(proc_root, rel, cmd, sizeof(cmd));
	if (n > 0) {
		info->preserve_fp = xx_flag(cmd, n, "PreserveFramePointer", -1);
		/* until its performance data says (it may have none: -XX:-UsePerfData) */
		if (xx_flag(cmd, n, "DisableAttachMechanism", 0) == 1)
			info->attach = 0;
	}
	return 0;
}

/* Fork the child for @info (@ask: and ask); 0 with *@child and *@fd, or -errno. */
static int spawn(const char *proc_root, const struct tk_jvm_info *info, bool ask, pid_t *child,
		 int *fd, char *why, size_t why_sz)
{
	struct child_args a = { .pid = info->pid, .uid = info->uid, .gid = info->gid,
				.ask = ask, .sigquit_caught = info->sigquit_caught, .pidfd = -1,
				.attach_off = info->attach == 0 };
	char rel[64], path[4096];
	int p[2], err;
	pid_t c;

	snprintf(a.nspid, sizeof(a.nspid), "%u", info->nspid);
	snprintf(a.sock, sizeof(a.sock), "/tmp/.java_pid%u", info->nspid);
	snprintf(a.trigger, sizeof(a.trigger), "/tmp/.attach_pid%u", info->nspid);
	snprintf(a.perf_map, sizeof(a.perf_map), "/tmp/perf-%u.map", info->nspid);
	snprintf(rel, sizeof(rel), "%u/root", info->pid);
	if (tk_path_join(path, sizeof(path), proc_root, rel))
		return -ENAMETOOLONG;
	/* PID/root is the kernel's link to its root: followed, that is the point */
	a.root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.root_fd < 0) {
		err = -errno;
		snprintf(why, why_sz, "cannot open /proc/%u/root: %s", info->pid, strerror(-err));
		return err == -ENOENT ? -ESRCH : err;
	}
	/*
	 * The process to signal, held by a pidfd (5.3+) taken after what was
	 * read of it and checked to be the same start: a pid that a process of
	 * the same user took since is never signalled
	 */
	if (ask) {
		a.pidfd = syscall(SYS_pidfd_open, info->pid, 0);
		if (a.pidfd >= 0 && start_time(proc_root, info->pid) != info->start_time) {
			close(a.pidfd);
			close(a.root_fd);
			snprintf(why, why_sz, "process %u is gone", info->pid);
			return -ESRCH;
		}
	}
	if (pipe2(p, O_CLOEXEC)) {
		err = -errno;
		close(a.root_fd);
		if (a.pidfd >= 0)
			close(a.pidfd);
		return err;
	}
	a.out_fd = p[1];
	c = fork();
	if (c == 0) {
		close(p[0]);
		child_main(&a);
	}
	err = c < 0 ? -errno : 0;
	close(a.root_fd);
	if (a.pidfd >= 0)
		close(a.pidfd);
	close(p[1]);
	if (err) {
		close(p[0]);
		snprintf(why, why_sz, "fork: %s", strerror(-err));
		return err;
	}
	*child = c;
	*fd = p[0];
	return 0;
}

/* Wait (up to @deadline_ms) for the child's result; reaps it. 0, or -errno. */
static int collect(pid_t child, int fd, int64_t deadline_ms, bool wait, struct child_result *r)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t left = deadline_ms - now_ms();
	ssize_t n;
	int rc;

	rc = poll(&p, 1, !wait ? 0 : left > 0 ? (int)left : 0);
	if (rc == 0 && (!wait && left > 0))
		return -EAGAIN;
	memset(r, 0, sizeof(*r));
	n = rc > 0 ? read(fd, r, sizeof(*r)) : -1;
	if (n != sizeof(*r)) {
		kill(child, SIGKILL);
		r->err = rc == 0 ? -ETIMEDOUT : -EIO;
		snprintf(r->msg, sizeof(r->msg), "%s", rc == 0 ? "it did not answer in time" :
			 "the child asking it ended without a word");
	}
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	r->msg[sizeof(r->msg) - 1] = '\0';
	r->version[sizeof(r->version) - 1] = '\0';
	r->vm_args[sizeof(r->vm_args) - 1] = '\0';
	return 0;
}

static void take(struct tk_jvm_info *info, const struct child_result *r)
{
	info->perf_data = r->perf_data;
	info->perf_map = r->perf_map;
	info->listener = r->listener;
	if (r->perf_data) {
		info->attach = r->attach;
		snprintf(info->version, sizeof(info->version), "%s", r->version);
		snprintf(info->vm_args, sizeof(info->vm_args), "%s", r->vm_args);
		info->preserve_fp = xx_flag(r->vm_args, strlen(r->vm_args), "PreserveFramePointer",
					    info->preserve_fp);
	}
}

int tk_jvm__inspect(const char *proc_root, uint32_t pid, struct tk_jvm_info *info, char *why,
		    size_t why_sz)
{
	struct child_result r;
	pid_t child;
	int err, fd;

	if (why_sz)
		why[0] = '\0';
	if (!proc_root)
		proc_root = "/proc";
	err = read_proc(proc_root, pid, info);
	if (err) {
		snprintf(why, why_sz, "cannot read /proc/%u/status", pid);
		return err;
	}
	err = spawn(proc_root, info, false, &child, &fd, why, why_sz);
	if (err)
		return err;
	collect(child, fd, now_ms() + INSPECT_TIMEOUT_MS, true, &r);
	close(fd);
	if (r.err) {
		snprintf(why, why_sz, "%s", r.msg);
		return r.err;
	}
	take(info, &r);
	return 0;
}

int tk_jvm_ask__start(const char *proc_root, uint32_t pid, struct tk_jvm_ask **out, char *why,
		      size_t why_sz)
{
	struct tk_jvm_ask *a;
	int err;

	*out = NULL;
	if (why_sz)
		why[0] = '\0';
	if (!proc_root)
		proc_root = "/proc";
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	err = read_proc(proc_root, pid, &a->info);
	if (err) {
		snprintf(why, why_sz, "cannot read /proc/%u/status", pid);
		free(a);
		return err;
	}
	err = spawn(proc_root, &a->info, true, &a->child, &a->fd, why, why_sz);
	if (err) {
		free(a);
		return err;
	}
	a->deadline_ms = now_ms() + TK_JVM_ASK_TIMEOUT_MS + 1000;
	*out = a;
	return 0;
}

int tk_jvm_ask__poll(struct tk_jvm_ask *a, bool wait, char *why, size_t why_sz)
{
	struct child_result r;

	if (!a->done) {
		if (collect(a->child, a->fd, a->deadline_ms, wait, &r) == -EAGAIN)
			return 0;
		close(a->fd);
		a->fd = -1;
		a->done = true;
		take(&a->info, &r);
		a->result = r.err ? r.err : 1;
		snprintf(a->why, sizeof(a->why), "%s", r.msg);
	}
	if (why_sz)
		snprintf(why, why_sz, "%s", a->why);
	return a->result;
}

const struct tk_jvm_info *tk_jvm_ask__info(const struct tk_jvm_ask *a)
{
	return &a->info;
}

void tk_jvm_ask__free(struct tk_jvm_ask *a)
{
	if (!a)
		return;
	if (!a->done) {
		kill(a->child, SIGKILL);
		while (waitpid(a->child, NULL, 0) < 0 && errno == EINTR)
			;
		close(a->fd);
	}
	free(a);
}
