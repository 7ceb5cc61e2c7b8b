// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks' system call numbers on arm64, wherever the tests run: every name
 * of the arm64 table (user/stacks/stacks_sysnr.c) against the kernel's own
 * include/uapi/asm-generic/unistd.h (arm64's numbering; the header is the same on
 * every architecture's linux-libc-dev), and what a wait is when an arm64 thread's
 * registers give the number: read 63 on a pipe, futex 98 on a mutex, accept 202
 * (x86-64's futex), wait4 260, waitid 95, ppoll 73, glibc's vfork as clone. The
 * x86-64 table is checked against <sys/syscall.h> in test_stacks_parse.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixture.h"
#include "stacks/stacks_int.h"

/*
 * arm64's numbers, as arch/arm64/include/uapi/asm/unistd.h includes them (its wants);
 * nothing here includes the host's <asm/unistd.h>
 */
#define __ARCH_WANT_RENAMEAT
#define __ARCH_WANT_NEW_STAT
#define __ARCH_WANT_SET_GET_RLIMIT
#define __ARCH_WANT_TIME32_SYSCALLS
#define __ARCH_WANT_SYS_CLONE3
#define __ARCH_WANT_MEMFD_SECRET
#include <asm-generic/unistd.h>

#define ARM64_NAMES(X)                                                                        \
	X(epoll_pwait) X(fcntl) X(ioctl) X(flock) X(openat) X(close) X(read) X(write) X(readv) \
	X(writev) X(pread64) X(pwrite64) X(sendfile) X(pselect6) X(ppoll) X(splice) X(fsync) \
	X(fdatasync) X(waitid) X(futex) X(nanosleep) X(clock_nanosleep) X(ptrace)            \
	X(sched_yield) X(kill) X(rt_sigsuspend) X(rt_sigtimedwait) X(accept) X(connect)      \
	X(sendto) X(recvfrom) X(sendmsg) X(recvmsg) X(clone) X(execve) X(accept4)            \
	X(recvmmsg) X(wait4) X(sendmmsg) X(process_vm_readv) X(process_vm_writev)           \
	X(io_uring_setup) X(io_uring_enter) X(clone3) X(epoll_pwait2) X(futex_waitv)

static void test_arm64_names(void **state)
{
	int listed = 0, named = 0;

#define CHECK(n)                                                                                \
	assert_non_null(stk_syscall_name_of(STK_ARCH_ARM64, __NR_##n));                        \
	assert_string_equal(stk_syscall_name_of(STK_ARCH_ARM64, __NR_##n), #n);                \
	listed++;
	ARM64_NAMES(CHECK)
#undef CHECK
	/* nothing in the table the list above does not check */
	for (int64_t nr = 0; nr < 4096; nr++)
		named += stk_syscall_name_of(STK_ARCH_ARM64, nr) != NULL;
	assert_int_equal(named, listed);
	/* what arm64 does not have: x86-64's numbers of them name other calls, or none */
	assert_null(stk_syscall_name_of(STK_ARCH_ARM64, 7));		/* x86 poll */
	assert_null(stk_syscall_name_of(STK_ARCH_ARM64, 58));		/* x86 vfork */
	assert_null(stk_syscall_name_of(STK_ARCH_ARM64, 0));		/* x86 read */
	assert_string_equal(stk_syscall_name_of(STK_ARCH_ARM64, 202), "accept");
	assert_string_equal(stk_syscall_name_of(STK_ARCH_X86_64, 202), "futex");
	assert_null(stk_syscall_name_of(STK_ARCH_ARM64, -1));
	assert_null(stk_syscall_name_of(STK_ARCH_ARM64, 1 << 20));
	assert_null(stk_syscall_name_of((enum stk_arch)7, 63));
	/* this build's own numbering */
#if defined(__aarch64__)
	assert_string_equal(stk_syscall_name(__NR_futex), "futex");
#else
	assert_string_equal(stk_syscall_name(202), "futex");
	assert_string_equal(stk_syscall_name_of(STK_ARCH_HOST, 0), "read");
#endif
}

struct fake_mem {
	uint64_t addr;
	int32_t w[5];
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *m = ctx;

	if (addr < m->addr || addr + len > m->addr + sizeof(m->w))
		return -EFAULT;
	memcpy(buf, (char *)m->w + (addr - m->addr), len);
	return 0;
}

static const char *describe(struct stk_wait_in *in, enum stk_arch arch, int64_t nr)
{
	static struct stk_wait_out out;

	in->arch = arch;
	in->nr = nr;
	stk_wait__describe(in, &out);
	return out.text;
}

static void test_arm64_waits(void **state)
{
	uint64_t args[6] = { 3 };
	struct fx *fx = fx_new();
	struct stk_fdcache fds = { 0 };
	struct stk_wait_in in = { .pid = 42, .args = args, .fds = &fds };
	const char *lll[] = { "__lll_lock_wait", "pthread_mutex_lock", "waiter" };
	struct fake_mem m = { .addr = 0x1000, .w = { 2, 0, 1234, 1, 0 } };
	struct stk_wait_out out;

	assert_non_null(fx);
	in.proc_root = fx->proc;
	assert_int_equal(fx_symlink(fx, "pipe:[42]", "proc/42/fd/3"), 0);
	assert_int_equal(fx_symlink(fx, "pipe:[42]", "proc/42/fd/4"), 0);
	assert_int_equal(fx_symlink(fx, "socket:[7]", "proc/42/fd/5"), 0);
	assert_int_equal(fx_write(fx, "proc/42/fdinfo/3", "pos:\t0\nflags:\t00\n"), 0);
	assert_int_equal(fx_write(fx, "proc/42/fdinfo/4", "pos:\t0\nflags:\t01\n"), 0);

	/* read(3) and readv(3) on a pipe: its write end named */
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_read),
			    "fd 3 pipe:[42] (its write end is this process's fd 4)");
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_readv),
			    "fd 3 pipe:[42] (its write end is this process's fd 4)");
	/* write(3): the fd, no write end claimed */
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_write), "fd 3 pipe:[42]");
	/* 63 is x86-64's uname, 0 arm64's io_setup: no fd */
	assert_string_equal(describe(&in, STK_ARCH_X86_64, __NR_read), "");
	assert_string_equal(describe(&in, STK_ARCH_ARM64, 0), "");
	/* 202 is arm64's accept: an fd, not a futex */
	args[0] = 5;
	assert_string_equal(describe(&in, STK_ARCH_ARM64, 202), "fd 5 socket:[7]");
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_epoll_pwait), "fd 5 socket:[7]");
	stk_fdcache__free(&fds);

	/* futex 98 on a glibc mutex: its owner at +8 */
	args[0] = 0x1000;
	args[1] = 0x80;
	args[2] = 2;
	in.callers = lll;
	in.nr_callers = 3;
	in.mem = fake_read;
	in.mem_ctx = &m;
	in.arch = STK_ARCH_ARM64;
	in.nr = __NR_futex;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "mutex 0x1000");
	assert_int_equal(out.holder_ns_tid, 1234);
	/* 98 on x86-64 is getrusage: nothing */
	in.arch = STK_ARCH_X86_64;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "");
	assert_int_equal(out.holder_ns_tid, 0);
	in.callers = NULL;
	in.nr_callers = 0;

	/* wait4(pid, ...) and waitid(idtype, id, ...) */
	args[0] = 77;
	args[1] = 88;
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_wait4), "a child (wait4 77)");
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_waitid), "a child (waitid 88)");
	/* ppoll(fds, nfds, ...) */
	args[1] = 3;
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_ppoll), "3 fds");
	/* glibc's vfork on arm64: clone(CLONE_VM | CLONE_VFORK | SIGCHLD, 0, ...) */
	args[0] = 0x4111;
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_clone),
			    "its vfork child (to exec or exit)");
	/* a clone without CLONE_VFORK returns at once: nothing to wait for */
	args[0] = 0x11;
	assert_string_equal(describe(&in, STK_ARCH_ARM64, __NR_clone), "");
	/* x86-64's vfork, 58, is arm64's vhangup: nothing */
	assert_string_equal(describe(&in, STK_ARCH_ARM64, 58), "");
	assert_string_equal(describe(&in, STK_ARCH_X86_64, 58),
			    "its vfork child (to exec or exit)");
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arm64_names),
		cmocka_unit_test(test_arm64_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
