// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The proc backend of tracekit stacks: each thread's /proc/PID/task/TID files.
 * syscall (saved registers and arguments: PTRACE_MODE_ATTACH, no stop: a running
 * thread reads "running" at once, a blocked one is only waited for while it
 * finishes switching out), stat (state), schedstat (switch-ins, to tell a
 * thread that ran while it was read), and for blocked threads stack and wchan
 * (CAP_SYS_ADMIN in the initial user namespace). The user stack is read from
 * /proc/PID/mem by the common code.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/fsutil.h"
#include "stacks/stacks_int.h"

long stk_read_at(int dfd, const char *name, char *buf, size_t size)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	long n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			got = -errno;
			break;
		}
		if (!n)
			break;
		got += n;
	}
	close(fd);
	if (got >= 0)
		buf[got] = 0;
	return got;
}

/* True when @pid lives in another pid namespace than ours (its tids differ). */
static bool other_pidns(const char *proc_root, uint32_t pid)
{
	char path[PATH_MAX], self[PATH_MAX];
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/%u/ns/pid", proc_root, pid);
	snprintf(self, sizeof(self), "%s/self/ns/pid", proc_root);
	if (stat(path, &a) || stat(self, &b))
		return false;
	return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

static bool read_switches(int dfd, uint64_t *v)
{
	char buf[128];

	return stk_read_at(dfd, "schedstat", buf, sizeof(buf)) > 0 && !stk_parse_schedstat(buf, v);
}

/* The registers and syscall of one thread: 0, or -ESRCH when it is gone. */
static int read_regs(int dfd, struct stk_raw *r)
{
	uint64_t sp, pc;
	char buf[512];
	long n;

	n = stk_read_at(dfd, "syscall", buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT || n == -ESRCH ? -ESRCH : (int)n;
	if (stk_parse_syscall(buf, &r->nr, r->args, &sp, &pc))
		return -EINVAL;
	r->have_regs = r->nr != -2 && pc;
	r->ip = pc;
	r->sp = sp;
	r->bp = 0;	/* the file gives no rbp: CFI needs none until a frame restores it */
	return 0;
}

static int read_thread(const char *proc_root, int tdfd, uint32_t pid, uint32_t tid,
		       uint32_t state_mask, bool kernel, bool nspid, struct stk_raw *r,
		       bool *kstack_denied)
{
	uint64_t after = 0;
	uint32_t flags;
	char buf[4096];
	long n;
	int err;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->ns_tid = tid;
	r->nr = -2;
	r->off_cpu_ns = -1;
	n = stk_read_at(tdfd, "stat", buf, sizeof(buf));
	if (n < 0)
		return -ESRCH;
	if (stk_parse_stat(buf, r->comm, &r->state, &flags))
		return -EINVAL;
	r->kthread = flags & STK_PF_KTHREAD;
	if (state_mask && !(state_mask & stk_state_class(r->state)))
		return 1;
	r->have_switches = read_switches(tdfd, &r->switches);
	for (int attempt = 0; attempt < 2; attempt++) {
		/* once more: its state now, beside the registers read now */
		if (attempt) {
			n = stk_read_at(tdfd, "stat", buf, sizeof(buf));
			if (n < 0)
				return -ESRCH;
			if (stk_parse_stat(buf, r->comm, &r->state, &flags))
				return -EINVAL;
		}
		/* a kernel thread has no user registers nor syscall: its kernel stack only */
		err = r->kthread ? 0 : read_regs(tdfd, r);
		if (err == -ESRCH)
			return err;
		if (err == -EACCES || err == -EPERM)
			return err;
		if (kernel && r->state != 'R' && (r->nr != -2 || r->kthread)) {
			stk_kframes_free(r->kf, r->nk);
			r->nk = 0;
			n = stk_read_at(tdfd, "stack", buf, sizeof(buf));
			if (n >= 0) {
				err = stk_parse_kstack(buf, r->kf, STK_MAX_KFRAMES);
				if (err < 0)
					return err;
				r->nk = err;
			} else {
				r->kstack_err = n;
				if (n == -EACCES || n == -EPERM)
					*kstack_denied = true;
			}
			if (stk_read_at(tdfd, "wchan", buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
				snprintf(r->wchan, sizeof(r->wchan), "%s", tk_rstrip(buf));
		}
		if (!r->have_switches || !read_switches(tdfd, &after) || after == r->switches)
			break;
		/* it ran while it was read: once more, else say so */
		r->switches = after;
		r->torn = attempt == 1;
	}
	/*
	 * stat and syscall are two reads: "running" in the later one is the
	 * later word (a sleeper that woke between them is not shown asleep
	 * without a system call)
	 */
	if (!r->kthread && r->nr == -2 && r->state != 'R' && r->state != 'Z' && r->state != 'X')
		r->state = 'R';
	r->on_cpu = r->nr == -2 && r->state == 'R' && !r->kthread;
	if (nspid && stk_read_at(tdfd, "status", buf, sizeof(buf)) > 0)
		r->ns_tid = stk_parse_nspid(buf) ?: tid;
	(void)proc_root;
	return 0;
}

int stk_proc__read(const char *proc_root, uint32_t pid, uint32_t state_mask, bool kernel,
		   struct stk_raws *out, bool *kstack_denied, uint64_t *threads_gone)
{
	char path[PATH_MAX];
	bool nspid = other_pidns(proc_root, pid);
	struct dirent *e;
	int dfd, err = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u/task", proc_root, pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while ((e = readdir(d))) {
		struct stk_raw *r, tmp;
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);
		int tdfd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || !tid || tid > UINT32_MAX)
			continue;
		tdfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (tdfd < 0) {
			(*threads_gone)++;	/* exited meanwhile */
			continue;
		}
		err = read_thread(proc_root, tdfd, pid, tid, state_mask, kernel, nspid, &tmp,
				  kstack_denied);
		close(tdfd);
		if (err == -EACCES || err == -EPERM || err == -ENOMEM) {
			stk_kframes_free(tmp.kf, tmp.nk);
			break;
		}
		if (err) {
			stk_kframes_free(tmp.kf, tmp.nk);
			*threads_gone += err == -ESRCH;
			err = 0;
			continue;
		}
		r = stk_raws__add(out);
		if (!r) {
			stk_kframes_free(tmp.kf, tmp.nk);
			err = -ENOMEM;
			break;
		}
		*r = tmp;
	}
	closedir(d);
	return err;
}
