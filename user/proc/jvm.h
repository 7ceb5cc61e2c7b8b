/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A HotSpot JVM, from outside: what it says of itself (its performance data
 * file: version, arguments, whether it takes attach requests) and, on
 * request, its perf map, asked for as `jcmd PID Compiler.perfmap` asks: the
 * JVM then writes /tmp/perf-NSPID.map (its /tmp, its pid as it knows it),
 * which the symbolizer reads as any perf map.
 *
 * HotSpot's attach mechanism (attachListener_linux.cpp, VirtualMachineImpl):
 * a client that finds no socket /tmp/.java_pidNSPID creates the file
 * /tmp/.attach_pidNSPID and sends SIGQUIT; the JVM's signal handler sees the
 * file, owned by its own user, and starts its attach listener, which makes
 * the socket; a request is "1\0jcmd\0Compiler.perfmap\0\0\0", the reply "0\n"
 * and the command's output. The JVM accepts a peer of its own uid and gid
 * (or root) only.
 *
 * Everything here that touches the JVM's files or signals it is done by a
 * forked child that takes the JVM's root as its own (chroot through
 * /proc/PID/root: its mounts, its /tmp), then the JVM's user and group (no
 * supplementary groups, no capabilities, no new privileges): root creates
 * nothing in another user's /tmp, follows no link they made, and the JVM
 * sees a peer of its own user. A JVM that does not catch SIGQUIT (-Xrs: its
 * default action would end it with a core dump) is never signalled; one
 * whose performance data says attach is disabled (-XX:+DisableAttachMechanism:
 * SIGQUIT would make it print a thread dump) is not either.
 */
#ifndef __TK_PROC_JVM_H
#define __TK_PROC_JVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A JVM as tk_jvm__inspect finds it. */
struct tk_jvm_info {
	uint32_t pid;			/* as we see it */
	uint64_t start_time;		/* its start, in clock ticks since boot (PID/stat) */
	uint32_t nspid;			/* as it sees itself (NSpid's last) */
	uint32_t uid, gid;		/* its effective user and group */
	bool sigquit_caught;		/* SigCgt has SIGQUIT: it can be asked */
	int attach;			/* 1 allowed, 0 disabled, -1 not known (no perf data) */
	bool perf_data;			/* its hsperfdata file was read */
	bool perf_map;			/* /tmp/perf-NSPID.map exists in its root */
	bool listener;			/* its attach socket exists already */
	int preserve_fp;		/* -XX:+PreserveFramePointer: 1 on, 0 off, -1 not known */
	char version[64];		/* java.vm.version, or "" */
	char vm_args[512];		/* java.rt.vmArgs, or "" */
};

/*
 * Read what @pid (a process mapping libjvm.so) says of itself: /proc
 * (NSpid, user, SigCgt, cmdline) and, from a child acting as its user inside
 * its root, its performance data file and whether its perf map and attach
 * socket exist. Signals nothing, writes nothing. 0, -ESRCH (gone), or
 * -errno; @why says what went wrong.
 */
int tk_jvm__inspect(const char *proc_root, uint32_t pid, struct tk_jvm_info *info, char *why,
		    size_t why_sz);

/* Asking for the perf map, without waiting (a capture goes on meanwhile). */
struct tk_jvm_ask;

#define TK_JVM_ASK_TIMEOUT_MS 5000

/*
 * Start asking @pid for its perf map: a child does it (the top of this file)
 * within TK_JVM_ASK_TIMEOUT_MS. 0 with *@out, or -errno with @why: -EPERM
 * when the JVM must not be signalled (it does not catch SIGQUIT, or attach is
 * disabled), -ESRCH when gone.
 */
int tk_jvm_ask__start(const char *proc_root, uint32_t pid, struct tk_jvm_ask **out, char *why,
		      size_t why_sz);
/*
 * Whether the child is done: 0 while it runs (@wait: wait for it), 1 when
 * the JVM wrote its map, or -errno with @why (the child's reason; -ETIMEDOUT
 * when it was killed at the deadline).
 */
int tk_jvm_ask__poll(struct tk_jvm_ask *a, bool wait, char *why, size_t why_sz);
/* The JVM asked (its info at the start). */
const struct tk_jvm_info *tk_jvm_ask__info(const struct tk_jvm_ask *a);
/* Kill the child if it still runs, reap it, free. */
void tk_jvm_ask__free(struct tk_jvm_ask *a);

/*
 * The string entry @name of the performance data @buf of @len bytes into
 * @out (control characters as '?'): 0, -ENOENT when there is none (or the
 * entries stop fitting before it), -EINVAL when @buf is not little-endian
 * performance data. (hsperf.c)
 */
int tk_hsperf__string(const void *buf, size_t len, const char *name, char *out, size_t out_sz);

#endif /* __TK_PROC_JVM_H */
