// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a blocked thread waits for, from its syscall (by name: stacks_sysnr.c knows
 * each architecture's numbers) and first argument: an fd's target (readlink of
 * /proc/PID/fd/N: nothing is opened), and for a futex the lock it belongs to and,
 * where glibc's layout says it, the thread holding it (research §3.1, layouts
 * unchanged in glibc 2.31-2.42):
 *   __lll_lock_wait (normal, recursive, errorcheck mutexes): owner at uaddr + 8;
 *   FUTEX_LOCK_PI, or __pthread_mutex_lock_full (PI, robust): the word's TID bits;
 *   pthread_cond_*, sem_wait: no owner.
 * The owner is the process's own word: a TID as the process sees it, checked by
 * the caller against the process's threads. glibc's mutex layout is the generic one
 * on x86-64 and arm64 alike.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "stacks/stacks_int.h"

/* System calls whose first argument is the fd they wait on (or act on). */
static bool fd_syscall(const char *name)
{
	static const char *const fd_calls[] = {
		"read", "write", "ioctl", "pread64", "pwrite64", "readv", "writev", "sendfile",
		"connect", "accept", "sendto", "recvfrom", "sendmsg", "recvmsg", "fcntl", "flock",
		"fsync", "fdatasync", "epoll_wait", "splice", "epoll_pwait", "accept4",
		"recvmmsg", "sendmmsg", "io_uring_enter", "epoll_pwait2",
	};

	for (size_t i = 0; i < sizeof(fd_calls) / sizeof(fd_calls[0]); i++)
		if (!strcmp(name, fd_calls[i]))
			return true;
	return false;
}

static bool called_from(const struct stk_wait_in *in, const char *fn)
{
	for (int i = 0; i < in->nr_callers; i++)
		if (in->callers[i] && !strcmp(in->callers[i], fn))
			return true;
	return false;
}

static bool called_from_prefix(const struct stk_wait_in *in, const char *prefix)
{
	for (int i = 0; i < in->nr_callers; i++)
		if (in->callers[i] && !strncmp(in->callers[i], prefix, strlen(prefix)))
			return true;
	return false;
}

/* "pipe:[123]", "socket:[4]", "/var/log/x" of fd @fd of the process; false when none. */
static bool fd_link(const struct stk_wait_in *in, long fd, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/fd/%ld", in->proc_root, in->pid, fd);
	n = readlink(path, buf, size - 1);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* the target is a name another user may have chosen: printable bytes only */
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return true;
}

void stk_fdcache__free(struct stk_fdcache *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* "pipe:[123]" → 123; 0 when not a pipe. */
static uint64_t pipe_ino(const char *link)
{
	char *end;
	uint64_t v;

	if (strncmp(link, "pipe:[", 6))
		return 0;
	v = strtoull(link + 6, &end, 10);
	return *end == ']' && !end[1] ? v : 0;
}

/* The process's pipe fds and whether each is open for writing: its fd directory, once. */
static void build_fds(const struct stk_wait_in *in, struct stk_fdcache *c)
{
	char path[PATH_MAX], link[64], info[512], flags[32];
	struct dirent *e;
	size_t cap = 0;
	DIR *d;

	c->built = true;
	snprintf(path, sizeof(path), "%s/%u/fd", in->proc_root, in->pid);
	d = opendir(path);
	while (d && (e = readdir(d)) && c->n < 65536) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		uint64_t ino;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end ||
		    !fd_link(in, fd, link, sizeof(link)) || !(ino = pipe_ino(link)))
			continue;
		if (c->n == cap) {
			struct stk_fd_ent *v = realloc(c->v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!v)
				break;
			c->v = v;
		}
		snprintf(path, sizeof(path), "%u/fdinfo/%ld", in->pid, fd);
		c->v[c->n].fd = fd;
		c->v[c->n].pipe_ino = ino;
		c->v[c->n].wronly = tk_read_file(in->proc_root, path, info, sizeof(info)) > 0 &&
				    tk_status_field(info, "flags", flags, sizeof(flags)) &&
				    (strtoul(flags, NULL, 8) & 3) == 1;	/* O_WRONLY */
		c->n++;
	}
	if (d)
		closedir(d);
}

/* The lowest other fd of the process open on the same pipe for writing; -1 none. */
static long pipe_writer(const struct stk_wait_in *in, long fd, const char *target)
{
	struct stk_fdcache local = { 0 }, *c = in->fds ? in->fds : &local;
	uint64_t ino = pipe_ino(target);
	long found = -1;

	if (!c->built)
		build_fds(in, c);
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].fd != fd && c->v[i].pipe_ino == ino && c->v[i].wronly &&
		    (found < 0 || c->v[i].fd < found))
			found = c->v[i].fd;
	stk_fdcache__free(&local);
	return found;
}

static void describe_fd(const struct stk_wait_in *in, const char *name,
			struct stk_wait_out *out)
{
	long fd = (long)(int)in->args[0], w;
	char link[PATH_MAX];

	if (fd < 0 || !fd_link(in, fd, link, sizeof(link)) ) {
		snprintf(out->text, sizeof(out->text), "fd %ld", fd);
		return;
	}
	if (!strncmp(link, "pipe:", 5) && (!strcmp(name, "read") || !strcmp(name, "readv")) &&
	    (w = pipe_writer(in, fd, link)) >= 0)
		snprintf(out->text, sizeof(out->text),
			 "fd %ld %s (its write end is this process's fd %ld)", fd, link, w);
	else
		snprintf(out->text, sizeof(out->text), "fd %ld %.160s", fd, link);
}

static bool mutex_caller(const struct stk_wait_in *in)
{
	return called_from_prefix(in, "__lll_lock_wait") ||
	       called_from(in, "pthread_mutex_lock") || called_from(in, "__pthread_mutex_lock") ||
	       called_from_prefix(in, "pthread_mutex_timedlock") ||
	       called_from_prefix(in, "pthread_mutex_clocklock") ||
	       called_from_prefix(in, "__pthread_mutex_lock_full");
}

/* No frame of the wait is named (a libc without symbols): nothing says what the word is. */
static bool unnamed_callers(const struct stk_wait_in *in)
{
	for (int i = 0; i < in->nr_callers; i++)
		if (in->callers[i])
			return false;
	return true;
}

/* A mutex word: __lock 2 (locked, waiters) and __owner, or FUTEX_WAITERS | the owner's TID. */
static bool mutex_owner(const int32_t w[5], uint32_t *tid, bool *died)
{
	uint32_t word = w[0];

	*died = false;
	if (word == 2 && w[2] > 0) {
		*tid = w[2];
		return true;
	}
	if ((word & 0x80000000u) && (word & 0x3fffffff)) {
		*tid = word & 0x3fffffff;	/* FUTEX_TID_MASK */
		*died = word & 0x40000000;	/* FUTEX_OWNER_DIED */
		return true;
	}
	return false;
}

static void describe_futex(const struct stk_wait_in *in, struct stk_wait_out *out)
{
	unsigned long long uaddr = in->args[0];
	int op = in->args[1] & 127;	/* FUTEX_CMD_MASK: without PRIVATE and CLOCK_REALTIME */
	bool died, pi = op == 6 || op == 13;
	uint32_t tid;
	int32_t w[5];

	if (op != 0 && op != 9 && !pi) {	/* WAIT, WAIT_BITSET, LOCK_PI(2) */
		snprintf(out->text, sizeof(out->text), "futex %#llx op %d", uaddr, op);
		return;
	}
	if (pi || mutex_caller(in) || unnamed_callers(in)) {
		/*
		 * PI: the word is FUTEX_WAITERS | the owner's TID. __lll_lock_wait (normal,
		 * recursive, errorcheck): __lock 2, __owner at +8. Robust: the TID in the word.
		 * With no frame named, only a word of that shape, and the caller checks that
		 * the TID is one of the process's threads.
		 */
		if (!in->mem(in->mem_ctx, uaddr, w, pi ? 4 : sizeof(w)) &&
		    (pi ? ((tid = w[0] & 0x3fffffff), (died = w[0] & 0x40000000), tid != 0) :
			  mutex_owner(w, &tid, &died))) {
			out->holder_ns_tid = tid;
			out->weak = !pi && !mutex_caller(in);
			snprintf(out->text, sizeof(out->text), "mutex %#llx%s", uaddr,
				 died ? " (its owner died)" : "");
			if (out->weak)
				snprintf(out->alt, sizeof(out->alt), "futex %#llx (value %d)", uaddr,
					 w[0]);
			return;
		}
	} else if (called_from_prefix(in, "pthread_cond_") ||
		   called_from_prefix(in, "__pthread_cond_")) {
		snprintf(out->text, sizeof(out->text), "condition variable near %#llx", uaddr);
		return;
	} else if (called_from_prefix(in, "pthread_rwlock_") ||
		   called_from_prefix(in, "__pthread_rwlock_")) {
		snprintf(out->text, sizeof(out->text), "rwlock near %#llx", uaddr);
		return;
	} else if (called_from_prefix(in, "__new_sem_wait") || called_from_prefix(in, "sem_")) {
		snprintf(out->text, sizeof(out->text), "semaphore %#llx", uaddr);
		return;
	}
	if (!in->mem(in->mem_ctx, uaddr, w, 4))
		snprintf(out->text, sizeof(out->text), "futex %#llx (value %d)", uaddr, w[0]);
	else
		snprintf(out->text, sizeof(out->text), "futex %#llx", uaddr);
}

#define CLONE_VFORK_FLAG 0x00004000	/* CLONE_VFORK: the same on every architecture */

void stk_wait__describe(const struct stk_wait_in *in, struct stk_wait_out *out)
{
	const char *name = stk_syscall_name_of(in->arch, in->nr);

	out->text[0] = 0;
	out->alt[0] = 0;
	out->holder_ns_tid = 0;
	out->weak = false;
	if (!name)
		return;
	if (fd_syscall(name)) {
		describe_fd(in, name, out);
	} else if (!strcmp(name, "futex")) {
		describe_futex(in, out);
	} else if (!strcmp(name, "vfork") ||
		   (!strcmp(name, "clone") && (in->args[0] & CLONE_VFORK_FLAG))) {
		/* arm64 has no vfork: glibc's is clone(CLONE_VM | CLONE_VFORK | SIGCHLD) */
		snprintf(out->text, sizeof(out->text), "its vfork child (to exec or exit)");
	} else if (!strcmp(name, "wait4") || !strcmp(name, "waitid")) {
		/* wait4(pid, ...), waitid(idtype, id, ...) */
		snprintf(out->text, sizeof(out->text), "a child (%s %lld)", name,
			 (long long)(int)in->args[name[4] == '4' ? 0 : 1]);
	} else if (!strcmp(name, "poll") || !strcmp(name, "ppoll")) {
		snprintf(out->text, sizeof(out->text), "%llu fds",
			 (unsigned long long)in->args[1]);
	}
}
