// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks in user space: the /proc parsers (syscall, stat with a comm
 * chosen to mislead, stack, schedstat, NSpid, --state), what a wait is (an fd's
 * target and the pipe's write end from a fixture /proc tree; glibc mutexes,
 * PI words, condition variables from fake memory), and the writers (grouping,
 * the threads that did not move first, JSON).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixture.h"
#include "stacks/stacks_int.h"

static void test_syscall(void **state)
{
	uint64_t a[6], sp, pc;
	int64_t nr;

	assert_int_equal(stk_parse_syscall("running\n", &nr, a, &sp, &pc), 0);
	assert_int_equal(nr, -2);
	assert_int_equal(stk_parse_syscall("-1 0x7ffc1000 0x55aa20\n", &nr, a, &sp, &pc), 0);
	assert_int_equal(nr, -1);
	assert_int_equal(sp, 0x7ffc1000);
	assert_int_equal(pc, 0x55aa20);
	assert_int_equal(stk_parse_syscall("202 0x55842ef53220 0x80 0x2 0x0 0x0 0x0 "
					   "0x7f1c2a1fee70 0x7f1c2a29a2ec\n", &nr, a, &sp, &pc), 0);
	assert_int_equal(nr, 202);
	assert_int_equal(a[0], 0x55842ef53220);
	assert_int_equal(a[1], 0x80);
	assert_int_equal(a[2], 2);
	assert_int_equal(sp, 0x7f1c2a1fee70);
	assert_int_equal(pc, 0x7f1c2a29a2ec);
	/* short, long, out of range, garbage */
	assert_int_equal(stk_parse_syscall("202 0x1 0x2\n", &nr, a, &sp, &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9\n", &nr, a, &sp,
					   &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("5000 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n", &nr, a, &sp,
					   &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("-2 0x1 0x2\n", &nr, a, &sp, &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("", &nr, a, &sp, &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x11111111111111111\n",
					   &nr, a, &sp, &pc), -EINVAL);
	assert_int_equal(stk_parse_syscall("0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 junk", &nr, a, &sp,
					   &pc), -EINVAL);
}

static void test_stat(void **state)
{
	char comm[16], st;
	uint32_t fl;

	assert_int_equal(stk_parse_stat("31244 (stacks_shape) S 1 2 3 0 -1 4194368 9\n", comm,
					&st, &fl), 0);
	assert_string_equal(comm, "stacks_shape");
	assert_int_equal(st, 'S');
	assert_int_equal(fl, 4194368);
	/* a kernel thread */
	assert_int_equal(stk_parse_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0\n", comm, &st, &fl),
			 0);
	assert_true(fl & STK_PF_KTHREAD);
	/* a comm with ") R (" in it: the last ')' ends it */
	assert_int_equal(stk_parse_stat("7 (a) R (b) D 1 2 3 4 5 64\n", comm, &st, &fl), 0);
	assert_string_equal(comm, "a) R (b");
	assert_int_equal(st, 'D');
	assert_int_equal(fl, 64);
	/* longer than a comm can be: cut, terminated */
	assert_int_equal(stk_parse_stat("7 (0123456789abcdefXYZ) S 1 2 3 4 5 0\n", comm, &st, &fl),
			 0);
	assert_int_equal(strlen(comm), 15);
	assert_int_equal(stk_parse_stat("7 no parens S\n", comm, &st, &fl), -EINVAL);
	assert_int_equal(stk_parse_stat("7 (x)", comm, &st, &fl), -EINVAL);
	assert_int_equal(stk_parse_stat("7 (x) Q 1 2 3 4 5 0", comm, &st, &fl), -EINVAL);
	assert_int_equal(stk_parse_stat(") 7 (", comm, &st, &fl), -EINVAL);
	assert_int_equal(stk_parse_stat("7 (x) S 1 2", comm, &st, &fl), -EINVAL);
}

static void test_kstack(void **state)
{
	struct stk_kframe kf[4];
	int n;

	n = stk_parse_kstack("[<0>] anon_pipe_read+0x4fa/0x5a0\n[<0>] vfs_read+0x397/0x3d0\n\n"
			     "[<0>] \nplain_name\n", kf, 4);
	assert_int_equal(n, 3);
	assert_string_equal(kf[0].name, "anon_pipe_read");
	assert_string_equal(kf[1].name, "vfs_read");
	assert_string_equal(kf[2].name, "plain_name");
	stk_kframes_free(kf, n);
	assert_null(kf[0].name);
	n = stk_parse_kstack("[<0>] a+1/2\n[<0>] b+1/2\n[<0>] c+1/2\n[<0>] d+1/2\n[<0>] e+1/2\n",
			     kf, 4);
	assert_int_equal(n, 4);
	assert_string_equal(kf[3].name, "d");
	stk_kframes_free(kf, n);
	assert_int_equal(stk_parse_kstack("", kf, 4), 0);
	assert_int_equal(stk_parse_kstack("[<0", kf, 4), 0);
}

static void test_small(void **state)
{
	uint64_t v;
	uint32_t m;

	assert_int_equal(stk_parse_schedstat("1234 5678 9\n", &v), 0);
	assert_int_equal(v, 9);
	assert_int_equal(stk_parse_schedstat("1234 5678\n", &v), -EINVAL);
	assert_int_equal(stk_parse_nspid("Name:\tx\nNSpid:\t100\t5\n"), 5);
	assert_int_equal(stk_parse_nspid("NSpid:\t100\n"), 100);
	assert_int_equal(stk_parse_nspid("Name:\tx\n"), 0);
	assert_int_equal(stk_parse_nspid("NSpid:\t100\tx\n"), 0);
	/* a thread's switches, as the task iterator counts them (nvcsw + nivcsw) */
	{
		uint64_t v = 7;

		assert_int_equal(stk_parse_ctxt_switches("Name:\tx\nvoluntary_ctxt_switches:\t"
							 "12\nnonvoluntary_ctxt_switches:\t3\n",
							 &v), 0);
		assert_int_equal(v, 15);
		assert_int_equal(stk_parse_ctxt_switches("voluntary_ctxt_switches:\t12\n", &v),
				 -EINVAL);
		assert_int_equal(stk_parse_ctxt_switches("voluntary_ctxt_switches:\t-1\n"
							 "nonvoluntary_ctxt_switches:\t3\n", &v),
				 -EINVAL);
		assert_int_equal(stk_parse_ctxt_switches("voluntary_ctxt_switches:\t1x\n"
							 "nonvoluntary_ctxt_switches:\t3\n", &v),
				 -EINVAL);
		assert_int_equal(v, 15);
	}
	assert_int_equal(tk_stacks__parse_states("D", &m), 0);
	assert_int_equal(m, TK_STACKS_DISK);
	assert_int_equal(tk_stacks__parse_states("S,D,running", &m), 0);
	assert_int_equal(m, TK_STACKS_DISK | TK_STACKS_SLEEPING | TK_STACKS_RUNNING);
	assert_int_equal(tk_stacks__parse_states("Zombie", &m), 0);
	assert_int_equal(m, TK_STACKS_ZOMBIE);
	assert_int_equal(tk_stacks__parse_states("", &m), -EINVAL);
	assert_int_equal(tk_stacks__parse_states("D,", &m), -EINVAL);
	assert_int_equal(tk_stacks__parse_states("Q", &m), -EINVAL);
	assert_int_equal(tk_stacks__parse_states("d", &m), -EINVAL);
	assert_string_equal(tk_stacks__state_name('D'), "uninterruptible");
	assert_string_equal(tk_stacks__state_name('?'), "unknown");
	assert_int_equal(stk_state_class('t'), TK_STACKS_STOPPED);
	assert_string_equal(stk_syscall_name_of(STK_ARCH_X86_64, 202), "futex");
	assert_null(stk_syscall_name_of(STK_ARCH_X86_64, -1));
	assert_null(stk_syscall_name_of(STK_ARCH_X86_64, 100000));
	assert_null(stk_syscall_name_of(STK_ARCH_X86_64, 5));
}

/* The x86-64 table against the kernel's numbers (on x86-64: arm64's in test_stacks_sysnr.c) */
static void test_x86_64_names(void **state)
{
#if defined(__x86_64__)
	int listed = 0, named = 0;

#define CHECK(n)                                                                                \
	assert_non_null(stk_syscall_name_of(STK_ARCH_X86_64, SYS_##n));                        \
	assert_string_equal(stk_syscall_name_of(STK_ARCH_X86_64, SYS_##n), #n);                \
	listed++;
	CHECK(read) CHECK(write) CHECK(open) CHECK(close) CHECK(poll) CHECK(ioctl)
	CHECK(pread64) CHECK(pwrite64) CHECK(readv) CHECK(writev) CHECK(select)
	CHECK(sched_yield) CHECK(pause) CHECK(nanosleep) CHECK(sendfile) CHECK(connect)
	CHECK(accept) CHECK(sendto) CHECK(recvfrom) CHECK(sendmsg) CHECK(recvmsg) CHECK(clone)
	CHECK(fork) CHECK(vfork) CHECK(execve) CHECK(wait4) CHECK(kill) CHECK(fcntl)
	CHECK(flock) CHECK(fsync) CHECK(fdatasync) CHECK(ptrace) CHECK(rt_sigtimedwait)
	CHECK(rt_sigsuspend) CHECK(futex) CHECK(clock_nanosleep) CHECK(epoll_wait)
	CHECK(waitid) CHECK(openat) CHECK(pselect6) CHECK(ppoll) CHECK(splice)
	CHECK(epoll_pwait) CHECK(accept4) CHECK(recvmmsg) CHECK(sendmmsg)
	CHECK(process_vm_readv) CHECK(process_vm_writev) CHECK(io_uring_setup)
	CHECK(io_uring_enter) CHECK(clone3) CHECK(epoll_pwait2) CHECK(futex_waitv)
#undef CHECK
	for (int64_t nr = 0; nr < 4096; nr++)
		named += stk_syscall_name_of(STK_ARCH_X86_64, nr) != NULL;
	assert_int_equal(named, listed);
	assert_string_equal(stk_syscall_name(SYS_futex), "futex");
#else
	skip();
#endif
}

/* ---- waits ------------------------------------------------------------------------------------ */


struct fake_mem {
	uint64_t addr;
	int32_t w[5];
	bool fail;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *m = ctx;

	if (m->fail || addr < m->addr || addr + len > m->addr + sizeof(m->w))
		return -EFAULT;
	memcpy(buf, (char *)m->w + (addr - m->addr), len);
	return 0;
}

static void test_wait_fd(void **state)
{
	uint64_t args[6] = { 3 };
	struct fx *fx = fx_new();
	struct stk_wait_in in = { .pid = 42, .arch = STK_ARCH_X86_64, .nr = 0, .args = args };
	struct stk_wait_out out;

	assert_non_null(fx);
	in.proc_root = fx->proc;
	assert_int_equal(fx_symlink(fx, "pipe:[42]", "proc/42/fd/3"), 0);
	assert_int_equal(fx_symlink(fx, "pipe:[42]", "proc/42/fd/4"), 0);
	assert_int_equal(fx_symlink(fx, "socket:[7]", "proc/42/fd/5"), 0);
	assert_int_equal(fx_symlink(fx, "/tmp/evil\nname", "proc/42/fd/6"), 0);
	assert_int_equal(fx_write(fx, "proc/42/fdinfo/3", "pos:\t0\nflags:\t00\n"), 0);
	assert_int_equal(fx_write(fx, "proc/42/fdinfo/4", "pos:\t0\nflags:\t01\n"), 0);
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "fd 3 pipe:[42] (its write end is this process's fd 4)");
	/* the write end read-only: no claim */
	assert_int_equal(fx_write(fx, "proc/42/fdinfo/4", "pos:\t0\nflags:\t02000000\n"), 0);
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "fd 3 pipe:[42]");
	args[0] = 5;
	in.nr = 45;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "fd 5 socket:[7]");
	/* a name another user chose: no control characters */
	args[0] = 6;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "fd 6 /tmp/evil?name");
	args[0] = 9;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "fd 9");
	in.nr = -1;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "");
	fx_free(fx);
}

static void test_wait_futex(void **state)
{
	uint64_t args[6] = { 0x1000, 0x80, 2 };
	const char *lll[] = { "__lll_lock_wait", "pthread_mutex_lock", "waiter" };
	const char *full[] = { "__futex_lock_pi64", "__pthread_mutex_lock_full" };
	const char *cond[] = { "__futex_abstimed_wait_common", "pthread_cond_wait@@GLIBC_2.3.2" };
	struct fake_mem m = { .addr = 0x1000, .w = { 2, 0, 1234, 1, 0 } };
	struct stk_wait_in in = { .proc_root = "/nonexistent", .pid = 42, .arch = STK_ARCH_X86_64,
				  .nr = 202, .args = args,
				  .callers = lll, .nr_callers = 3, .mem = fake_read,
				  .mem_ctx = &m };
	struct stk_wait_out out;

	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "mutex 0x1000");
	assert_int_equal(out.holder_ns_tid, 1234);
	/* a word that is not a locked-with-waiters mutex: no holder claimed */
	m.w[0] = 1;
	stk_wait__describe(&in, &out);
	assert_int_equal(out.holder_ns_tid, 0);
	assert_string_equal(out.text, "futex 0x1000 (value 1)");
	/* PI: FUTEX_LOCK_PI_PRIVATE, the word is FUTEX_WAITERS | tid */
	args[1] = 0x86;
	m.w[0] = (int32_t)(0x80000000u | 777);
	in.callers = full;
	in.nr_callers = 2;
	stk_wait__describe(&in, &out);
	assert_int_equal(out.holder_ns_tid, 777);
	m.w[0] = (int32_t)(0xc0000000u | 777);
	stk_wait__describe(&in, &out);
	assert_non_null(strstr(out.text, "owner died"));
	/* a condition variable has no owner */
	args[1] = 0x189;
	in.callers = cond;
	stk_wait__describe(&in, &out);
	assert_int_equal(out.holder_ns_tid, 0);
	assert_string_equal(out.text, "condition variable near 0x1000");
	/* a libc without .symtab (trixie's): only pthread_mutex_lock, exported, is named */
	{
		const char *stripped[] = { NULL, "pthread_mutex_lock", "waiter" };
		const char *none[] = { NULL, NULL, NULL };

		in.callers = stripped;
		in.nr_callers = 3;
		args[1] = 0x80;
		m.w[0] = 2;
		m.w[2] = 31;
		stk_wait__describe(&in, &out);
		assert_int_equal(out.holder_ns_tid, 31);
		assert_false(out.weak);
		/* robust: FUTEX_WAIT on FUTEX_WAITERS | tid */
		m.w[0] = (int32_t)(0x80000000u | 55);
		stk_wait__describe(&in, &out);
		assert_int_equal(out.holder_ns_tid, 55);
		/* no frame named at all: the word's shape, to be checked against the threads */
		in.callers = none;
		m.w[0] = 2;
		stk_wait__describe(&in, &out);
		assert_int_equal(out.holder_ns_tid, 31);
		assert_true(out.weak);
		assert_string_equal(out.alt, "futex 0x1000 (value 2)");
		/* ... and a word of no mutex shape: no holder */
		m.w[0] = 0;
		stk_wait__describe(&in, &out);
		assert_int_equal(out.holder_ns_tid, 0);
		assert_string_equal(out.text, "futex 0x1000 (value 0)");
	}
	/* a wake, and unreadable memory */
	in.callers = NULL;
	in.nr_callers = 0;
	args[1] = 1;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "futex 0x1000 op 1");
	args[1] = 0;
	m.fail = true;
	stk_wait__describe(&in, &out);
	assert_string_equal(out.text, "futex 0x1000");
}

/* ---- writers ---------------------------------------------------------------------------------- */

static const struct tk_stacks_frame kf[] = {
	{ .addr = 0xffffffff81000010, .function = "futex_do_wait", .module = "[kernel.kallsyms]",
	  .kernel = true },
};
static const struct tk_stacks_frame uf[] = {
	{ .addr = 0x7f0000001000, .function = "__lll_lock_wait", .module = "/lib/libc.so.6" },
	{ .addr = 0x555500001000, .function = "worker", .module = "/usr/bin/app" },
	{ .addr = 0x555500002000, .module = "/usr/bin/app", .offset = 0x2000 },
};

static struct tk_stacks_thread th[3] = {
	{ .pid = 10, .tid = 10, .ns_tid = 10, .comm = "app", .state = 'R', .syscall = -2,
	  .off_cpu_ns = -1, .user_note = "running on a CPU: no saved registers", .moved = true },
	{ .pid = 10, .tid = 11, .ns_tid = 11, .comm = "app\x1b[31m", .state = 'S', .syscall = 202,
	  .syscall_name = "futex", .wchan = "futex_do_wait", .wait = "mutex 0x1 held by tid 12",
	  .holder_tid = 12, .off_cpu_ns = 2500000000LL, .kframes = kf, .nr_kframes = 1,
	  .uframes = uf, .nr_uframes = 3, .user_whole = true },
	{ .pid = 10, .tid = 12, .ns_tid = 12, .comm = "app", .state = 'S', .syscall = 202,
	  .syscall_name = "futex", .wchan = "futex_do_wait", .off_cpu_ns = 1000000,
	  .kframes = kf, .nr_kframes = 1, .uframes = uf, .nr_uframes = 3, .user_whole = true,
	  .moved = true },
};

static const struct tk_stacks_loss losses[] = { { "running_no_stack", 1 } };

static char *write_with(int (*fn)(const struct tk_stacks_result *, FILE *),
			const struct tk_stacks_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(r, f), 0);
	fclose(f);
	return buf;
}

static void test_text(void **state)
{
	struct tk_stacks_snapshot sn[2] = { { .threads = th, .nr_threads = 3 },
					    { .threads = th, .nr_threads = 3 } };
	struct tk_stacks_result r = { .backend = TK_BACKEND_PROC, .backend_reason = "asked for",
				      .snapshots = sn, .nr_snapshots = 1, .losses = losses,
				      .nr_losses = 1 };
	char *t = write_with(tk_stacks_result__write_text, &r);

	/* the two waiters are one group, first; the comm's escape is not written */
	assert_non_null(strstr(t, "2 threads: sleeping in futex(), wchan futex_do_wait\n"));
	assert_true(strstr(t, "2 threads:") < strstr(t, "1 thread: running"));
	assert_non_null(strstr(t, "    pid 10 tid 11 app?[31m, off-CPU 2.50 s\n"
				  "      waits for mutex 0x1 held by tid 12\n"));
	assert_non_null(strstr(t, "      k futex_do_wait\n      __lll_lock_wait (libc.so.6)\n"
				  "      worker (app)\n      app+0x2000\n"));
	assert_non_null(strstr(t, "(user stack: running on a CPU: no saved registers)"));
	assert_non_null(strstr(t, "losses: running_no_stack=1\n"));
	assert_null(strstr(t, "\x1b"));
	free(t);
	/* two snapshots: tid 11 did not move, and comes first, in a group of its own */
	r.nr_snapshots = 2;
	t = write_with(tk_stacks_result__write_text, &r);
	assert_non_null(strstr(t, "2 snapshots: 1 thread did not move"));
	assert_true(strstr(t, "1 thread: sleeping in futex(), wchan futex_do_wait, did not move") <
		    strstr(t, "1 thread: sleeping in futex(), wchan futex_do_wait, moved"));
	free(t);
}

static void test_json(void **state)
{
	struct tk_stacks_snapshot sn = { .time_nanos = 5, .threads = th, .nr_threads = 3 };
	struct tk_stacks_result r = { .backend = TK_BACKEND_BPF, .backend_reason = "loaded",
				      .snapshots = &sn, .nr_snapshots = 1, .losses = losses,
				      .nr_losses = 1 };
	char *j = write_with(tk_stacks_result__write_json, &r);

	assert_non_null(strstr(j, "\"schema\": \"tracekit.stacks/1\""));
	assert_non_null(strstr(j, "\"backend\": \"bpf\""));
	assert_non_null(strstr(j, "\"holder_tid\": 12"));
	assert_non_null(strstr(j, "\"off_cpu_ns\": null"));
	assert_non_null(strstr(j, "\"syscall\": null"));
	assert_non_null(strstr(j, "\"name\": \"app+0x2000\""));
	assert_non_null(strstr(j, "\"app\\u001b[31m\""));
	assert_non_null(strstr(j, "\"running_no_stack\": 1"));
	free(j);
}

/*
 * Python frames: "py NAME (FILE:LINE)" in text (a name the process chose, control
 * characters replaced), two threads at other lines of the same function are two groups,
 * JSON says python, file, line, first_line; the thread's python note.
 */
static void test_python_frames(void **state)
{
	static const struct tk_stacks_frame a[] = {
		{ .addr = 0x7f0000001000, .function = "sem_wait", .module = "/lib/libc.so.6" },
		{ .addr = 0xa000000900000001ULL, .function = "Job.run\x1b[2J", .python = true,
		  .file = "/app/job.py", .line = 42, .first_line = 37 },
		{ .addr = 0x401000, .function = "_PyEval_EvalFrameDefault",
		  .module = "/usr/bin/python3.11" },
	};
	static const struct tk_stacks_frame b[] = {
		{ .addr = 0x7f0000001000, .function = "sem_wait", .module = "/lib/libc.so.6" },
		{ .addr = 0xa000000a00000001ULL, .function = "Job.run\x1b[2J", .python = true,
		  .file = "/app/job.py", .line = 43, .first_line = 37 },
		{ .addr = 0x401000, .function = "_PyEval_EvalFrameDefault",
		  .module = "/usr/bin/python3.11" },
	};
	static struct tk_stacks_thread pt[2] = {
		{ .pid = 20, .tid = 21, .ns_tid = 21, .comm = "python3", .state = 'S',
		  .syscall = 202, .syscall_name = "futex", .off_cpu_ns = -1, .uframes = a,
		  .nr_uframes = 3, .user_whole = true },
		{ .pid = 20, .tid = 22, .ns_tid = 22, .comm = "python3", .state = 'S',
		  .syscall = 202, .syscall_name = "futex", .off_cpu_ns = -1, .uframes = b,
		  .nr_uframes = 3, .user_whole = true,
		  .python_note = "ran while its Python frames were read: not shown" },
	};
	struct tk_stacks_snapshot sn = { .threads = pt, .nr_threads = 2 };
	struct tk_stacks_result r = { .backend = TK_BACKEND_PROC, .backend_reason = "asked for",
				      .snapshots = &sn, .nr_snapshots = 1, .losses = losses,
				      .nr_losses = 1 };
	char *t = write_with(tk_stacks_result__write_text, &r);

	assert_non_null(strstr(t, "      sem_wait (libc.so.6)\n"
				  "      py Job.run?[2J (/app/job.py:42)\n"
				  "      _PyEval_EvalFrameDefault (python3.11)\n"));
	assert_non_null(strstr(t, "py Job.run?[2J (/app/job.py:43)\n"));
	assert_null(strstr(t, "2 threads:"));
	assert_non_null(strstr(t, "      (python frames: ran while its Python frames were read: "
				  "not shown)\n"));
	assert_null(strstr(t, "\x1b"));
	free(t);
	t = write_with(tk_stacks_result__write_json, &r);
	assert_non_null(strstr(t, "\"function\": \"Job.run\\u001b[2J\""));
	assert_non_null(strstr(t, "\"python\": true"));
	assert_non_null(strstr(t, "\"file\": \"/app/job.py\""));
	assert_non_null(strstr(t, "\"line\": 42"));
	assert_non_null(strstr(t, "\"first_line\": 37"));
	assert_non_null(strstr(t, "\"python_note\": \"ran while"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syscall),	  cmocka_unit_test(test_stat),
		cmocka_unit_test(test_kstack),	  cmocka_unit_test(test_small),
		cmocka_unit_test(test_wait_fd),	  cmocka_unit_test(test_wait_futex),
		cmocka_unit_test(test_text),	  cmocka_unit_test(test_json),
		cmocka_unit_test(test_python_frames), cmocka_unit_test(test_x86_64_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
