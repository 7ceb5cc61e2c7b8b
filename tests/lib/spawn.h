/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Running tracekit and workloads from tests: captured output, optional seccomp. */
#ifndef __TK_TEST_SPAWN_H
#define __TK_TEST_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* $TK_BUILD_DIR, default "build" */
const char *tk_test_build_dir(void);
/* DIR/NAME, from a ring of 16 static buffers (so several can be in use at once). */
const char *tk_test_path(const char *dir, const char *name);
/* $TK_BUILD_DIR/workloads/NAME (from the same ring). */
const char *tk_test_workload(const char *name);

/* In a cmocka test's body (not its setup: cmocka 1.1 counts that an error): root or skip. */
#define NEED_ROOT()                                                               \
	do {                                                                      \
		if (geteuid() != 0) {                                             \
			print_message("skip: this test needs root\n");           \
			skip();                                                   \
		}                                                                 \
	} while (0)

/*
 * Install a seccomp filter in the calling process that answers system call
 * @nr with @err, as container runtimes' profiles do. Returns 0 or -errno.
 */
int tk_test_deny_syscall(int nr, int err);
/* bpf(2) answered with EPERM, as docker's and podman's default profiles do. */
int tk_test_deny_bpf(void);

/*
 * Run build/tracekit ARGS (NULL-terminated) with stdout captured into @out
 * (NUL-terminated, cut at @out_sz - 1) and stderr passed through; with
 * @deny_bpf under tk_test_deny_bpf(). Returns the exit status, or -1 when it
 * did not exit normally.
 */
int tk_test_run_tracekit(char *out, size_t out_sz, bool deny_bpf, char *const args[]);

/* Start build/tracekit ARGS in the background (stdout to /dev/null); its pid. */
pid_t tk_test_start_tracekit(char *const args[]);
/*
 * Wait until tracer @pid has attached: its perf events and BPF links are open
 * and their number held still for 0.3 s (at most @timeout_ms). 0, -ESRCH when
 * it ended first (not reaped), -ETIMEDOUT.
 */
int tk_test_wait_attached(pid_t pid, int timeout_ms);

/*
 * A container as runtimes make one: @argv (argv[0] a path inside @root) runs
 * with @root as its root by pivot_root(2), in mount and pid namespaces of its
 * own (their pid 1, with a /proc of its own), with PATH as its only
 * environment, stdin @in_fd and stdout @out_fd (-1: /dev/null). Returns its
 * pid here, or -errno; *@outer is the process to reap once it is killed.
 */
pid_t tk_test_spawn_in_root(const char *root, char *const argv[], int in_fd, int out_fd,
			    pid_t *outer);

/*
 * Debian's redis-server on loopback port @port, nothing saved, stdout to
 * /dev/null; its pid once it answers PING (at most 5 s), or -errno.
 */
pid_t tk_test_start_redis(int port);

/*
 * Read from @fd up to its first newline (or @sz - 1 bytes, or @timeout_ms
 * without data), then close it; @buf is NUL-terminated. The bytes read.
 */
int tk_test_read_line(int fd, char *buf, size_t sz, int timeout_ms);

/* Run a shell command line and capture its stdout; the exit status, or -1. */
int tk_test_capture(const char *cmdline, char *out, size_t out_sz);

#endif /* __TK_TEST_SPAWN_H */
