// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * System call numbers by architecture: a thread's saved registers give the number
 * of the call it waits in (x86-64's orig_ax, arm64's syscallno; /proc/PID/syscall's
 * first field), in its architecture's numbering. This file is the only place that
 * knows a number: what a wait is (stacks_wait.c) goes by the name. Both tables are
 * built on every architecture, so the unit tests check each (against the kernel's
 * own headers) wherever they run.
 *
 * x86-64: arch/x86/entry/syscalls/syscall_64.tbl. arm64: include/uapi/asm-generic/
 * unistd.h, which has no open, poll, select, pause, fork, vfork nor epoll_wait (glibc
 * calls openat, ppoll, pselect6, ppoll, clone, clone and epoll_pwait for them).
 */
#include "stacks/stacks_int.h"

static const char *const x86_64[] = {
	[0] = "read", [1] = "write", [2] = "open", [3] = "close", [7] = "poll",
	[16] = "ioctl", [17] = "pread64", [18] = "pwrite64", [19] = "readv", [20] = "writev",
	[23] = "select", [24] = "sched_yield", [34] = "pause", [35] = "nanosleep",
	[40] = "sendfile", [42] = "connect", [43] = "accept", [44] = "sendto",
	[45] = "recvfrom", [46] = "sendmsg", [47] = "recvmsg", [56] = "clone", [57] = "fork",
	[58] = "vfork", [59] = "execve", [61] = "wait4", [62] = "kill", [72] = "fcntl",
	[73] = "flock", [74] = "fsync", [75] = "fdatasync", [101] = "ptrace",
	[128] = "rt_sigtimedwait", [130] = "rt_sigsuspend", [202] = "futex",
	[230] = "clock_nanosleep", [232] = "epoll_wait", [247] = "waitid", [257] = "openat",
	[270] = "pselect6", [271] = "ppoll", [275] = "splice", [281] = "epoll_pwait",
	[288] = "accept4", [299] = "recvmmsg", [307] = "sendmmsg", [310] = "process_vm_readv",
	[311] = "process_vm_writev", [425] = "io_uring_setup", [426] = "io_uring_enter",
	[435] = "clone3", [441] = "epoll_pwait2", [449] = "futex_waitv",
};

static const char *const arm64[] = {
	[22] = "epoll_pwait", [25] = "fcntl", [29] = "ioctl", [32] = "flock", [56] = "openat",
	[57] = "close", [63] = "read", [64] = "write", [65] = "readv", [66] = "writev",
	[67] = "pread64", [68] = "pwrite64", [71] = "sendfile", [72] = "pselect6",
	[73] = "ppoll", [76] = "splice", [82] = "fsync", [83] = "fdatasync", [95] = "waitid",
	[98] = "futex", [101] = "nanosleep", [115] = "clock_nanosleep", [117] = "ptrace",
	[124] = "sched_yield", [129] = "kill", [133] = "rt_sigsuspend",
	[137] = "rt_sigtimedwait", [202] = "accept", [203] = "connect", [206] = "sendto",
	[207] = "recvfrom", [211] = "sendmsg", [212] = "recvmsg", [220] = "clone",
	[221] = "execve", [242] = "accept4", [243] = "recvmmsg", [260] = "wait4",
	[269] = "sendmmsg", [270] = "process_vm_readv", [271] = "process_vm_writev",
	[425] = "io_uring_setup", [426] = "io_uring_enter", [435] = "clone3",
	[441] = "epoll_pwait2", [449] = "futex_waitv",
};

#define LEN(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

const char *stk_syscall_name_of(enum stk_arch arch, int64_t nr)
{
	if (arch == STK_ARCH_HOST)
#if defined(__aarch64__)
		arch = STK_ARCH_ARM64;
#else
		arch = STK_ARCH_X86_64;
#endif
	if (nr < 0)
		return NULL;
	if (arch == STK_ARCH_X86_64)
		return nr < LEN(x86_64) ? x86_64[nr] : NULL;
	if (arch == STK_ARCH_ARM64)
		return nr < LEN(arm64) ? arm64[nr] : NULL;
	return NULL;
}

const char *stk_syscall_name(int64_t nr)
{
	return stk_syscall_name_of(STK_ARCH_HOST, nr);
}
