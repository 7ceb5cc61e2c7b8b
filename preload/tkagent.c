// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libtkagent.so: what `tracekit alloc -- CMD` preloads beside (or instead of)
 * the sampler, on the descriptor named by TK_AGENT_FD (user/alloc/agent_proto.h):
 *  - the hold: once ld.so has mapped every library, write 'H' and wait for
 *    'G' (or EOF), while tracekit places uprobes on the allocator the command
 *    really uses;
 *  - the jemalloc dump server: a thread answering "D PATH\n" with
 *    mallctl("prof.dump") and "0\n" or "ERRNO\n".
 * No interposition. It never prints; whatever fails leaves the command
 * running as it would without the library.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc/agent_proto.h"

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
			  size_t newlen);

static bool env_is_1(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

/* A descriptor number, or -1. */
static int parse_fd(const char *s)
{
	long v = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -1;
	}
	return (int)v;
}

/* All of @len bytes; no SIGPIPE when tracekit is gone (a pipe gets write()). */
static int send_all(int fd, const char *buf, size_t len)
{
	bool sock = true;

	while (len) {
		ssize_t n = sock ? send(fd, buf, len, MSG_NOSIGNAL) : write(fd, buf, len);

		if (n < 0 && errno == ENOTSOCK && sock) {
			sock = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write 'H', then wait for 'G'; EOF or an error releases the command too. */
static void hold(int fd)
{
	char c = TK_AGENT_HELD;

	if (send_all(fd, &c, 1))
		return;
	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == TK_AGENT_GO)
			return;
	}
}

/* jemalloc's mallctl under any of the names it is built with; NULL: none. */
static mallctl_fn find_mallctl(void)
{
	static const char *const names[] = { "mallctl", "je_mallctl", "_rjem_mallctl" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *f = dlsym(RTLD_DEFAULT, names[i]);

		if (f)
			return (mallctl_fn)f;
	}
	return NULL;
}

/* Answer one request line (without its newline): 0 or a positive errno. */
static int serve(char *line)
{
	const char *path;
	mallctl_fn mallctl;

	if (line[0] != 'D' || line[1] != ' ' || !line[2])
		return EINVAL;
	path = line + 2;
	mallctl = find_mallctl();
	if (!mallctl)
		return ENOENT;
	return mallctl("prof.dump", NULL, NULL, &path, sizeof(path));
}

/*
 * One request per line; a line longer than PATH_MAX is answered EINVAL once
 * its newline comes. EOF or an error ends the thread.
 */
static void *dump_thread(void *arg)
{
	int fd = (int)(long)arg;
	char line[PATH_MAX + 8], reply[16];
	size_t len = 0;
	bool too_long = false;

	for (;;) {
		char c;
		ssize_t n = read(fd, &c, 1);
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (c != '\n') {
			if (len < sizeof(line) - 1)
				line[len++] = c;
			else
				too_long = true;
			continue;
		}
		line[len] = '\0';
		err = too_long ? EINVAL : serve(line);
		if (err < 0)
			err = -err;
		snprintf(reply, sizeof(reply), "%d\n", err);
		if (send_all(fd, reply, strlen(reply)))
			break;
		len = 0;
		too_long = false;
	}
	close(fd);
	return NULL;
}

/* Detached, every signal blocked: the command's signals go to its own threads. */
static int start_dump_thread(int fd)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int err;

	if (pthread_attr_init(&attr))
		return -1;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &attr, dump_thread, (void *)(long)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err ? -1 : 0;
}

__attribute__((constructor)) static void tk_agent_init(void)
{
	int saved = errno, fd, flags;
	bool want_hold, want_dump;

	fd = parse_fd(getenv(TK_ENV_AGENT_FD));
	if (fd < 0)
		goto out;
	want_hold = env_is_1(TK_ENV_AGENT_HOLD);
	want_dump = env_is_1(TK_ENV_AGENT_JEMALLOC);
	/* the role is this process's, not its children's */
	unsetenv(TK_ENV_AGENT_FD);
	unsetenv(TK_ENV_AGENT_HOLD);
	unsetenv(TK_ENV_AGENT_JEMALLOC);
	flags = fcntl(fd, F_GETFD);
	if (flags < 0)
		goto out;
	fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
	if (want_hold)
		hold(fd);
	if (!want_dump || start_dump_thread(fd))
		close(fd);
out:
	errno = saved;
}
