// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * stacks_shape: a process of known shape for `tracekit stacks` (issue 25).
 *
 *   main     busy loop bumping shape.progress (read it through /proc/PID/mem:
 *            it must keep moving while the stacks are taken)
 *   holder   locks mtx, then read()s a pipe whose write end this process holds
 *            and never writes
 *   waiter   pthread_mutex_lock(&mtx): futex wait, mtx.__owner is the holder
 *   sleeper  nanosleep(20 ms) loop
 *   dthread  uninterruptible sleep (D): process_vm_readv() of its own page that a
 *            userfaultfd nobody serves registered as missing (whole user stack);
 *            with -v, or where userfaultfd is refused (not root), vfork() of a
 *            child that pause()s without exec (the stack ends at vfork)
 *   -t N     N more threads in pthread_cond_wait (the benchmark's 1000 threads)
 *   -n       no D thread (gdb and eu-stack hang on one: the benchmark's comparison)
 *   -N NAME  the holder thread's name (a hostile one for the readers' escaping)
 *
 * Signals a tracer could send (SIGTRAP, SIGCONT, SIGURG, SIGCHLD) are counted in
 * shape.signals. Prints one line once every thread is blocked:
 *   pid P progress 0xADDR signals 0xADDR main M holder H waiter W sleeper S
 *   dthread D dkind uffd|vfork blocked_ns B
 * (B: CLOCK_MONOTONIC when the holder blocked).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

static struct {
	volatile unsigned long progress;
	volatile unsigned long signals;
} shape;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int pipefd[2];
static volatile pid_t tid_holder, tid_waiter, tid_sleeper, tid_d;
static volatile int holder_locked;
static volatile unsigned long long blocked_ns;
static char *uffd_page;
static const char *holder_name;

static pid_t tid(void)
{
	return syscall(SYS_gettid);
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void on_signal(int sig)
{
	shape.signals++;
}

__attribute__((noinline)) static void holder_read(void)
{
	char c;

	while (read(pipefd[0], &c, 1) >= 0)
		;
	pause();
}

__attribute__((noinline)) static void *holder(void *a)
{
	if (holder_name)
		pthread_setname_np(pthread_self(), holder_name);
	tid_holder = tid();
	pthread_mutex_lock(&mtx);
	blocked_ns = mono_ns();
	holder_locked = 1;
	holder_read();
	return a;
}

__attribute__((noinline)) static void *waiter(void *a)
{
	tid_waiter = tid();
	while (!holder_locked)
		usleep(1000);
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	return a;
}

__attribute__((noinline)) static void *sleeper(void *a)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	tid_sleeper = tid();
	for (;;)
		nanosleep(&ts, NULL);
	return a;
}

__attribute__((noinline)) static void d_vfork(void)
{
	pid_t p = vfork();

	if (p == 0) {
		/* shares our memory: raw syscalls only; dies with us */
		syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		for (;;)
#ifdef SYS_pause
			syscall(SYS_pause);
#else
			/* arm64 has no pause: ppoll of no fds without a timeout, as glibc's */
			syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
#endif
	}
	if (p > 0)
		waitpid(p, NULL, 0);
}

__attribute__((noinline)) static void d_uffd(void)
{
	char buf[64];
	struct iovec l = { buf, sizeof(buf) }, r = { uffd_page, sizeof(buf) };

	process_vm_readv(getpid(), &l, 1, &r, 1, 0);
}

__attribute__((noinline)) static void *dthread(void *a)
{
	tid_d = tid();
	for (;;) {
		if (uffd_page)
			d_uffd();
		else
			d_vfork();
	}
	return a;
}

static int uffd_setup(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	char *p;

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api))
		return -1;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	reg.range.start = (unsigned long)p;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(fd, UFFDIO_REGISTER, &reg))
		return -1;
	uffd_page = p;
	return 0;
}

__attribute__((noinline)) static void *extra(void *a)
{
	pthread_mutex_lock(&cmtx);
	for (;;)
		pthread_cond_wait(&cond, &cmtx);
	return a;
}

int main(int argc, char **argv)
{
	int i, nextra = 0, opt, use_vfork = 0, no_d = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_attr_t at;
	pthread_t t;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: stacks_shape [-t N] [-v] [-n] [-N NAME]\n"
		       "  a process of known shape for tracekit stacks: a busy main thread, a mutex\n"
		       "  holder in read() on a pipe, its waiter, a nanosleep loop, a D thread\n"
		       "  -t N  N more threads in pthread_cond_wait\n"
		       "  -v    the D thread in vfork (default: userfaultfd where allowed)\n"
		       "  -n    no D thread\n"
		       "  -N NAME  the holder thread's name (15 bytes at most)\n");
		return 0;
	}
	while ((opt = getopt(argc, argv, "t:vnN:")) != -1) {
		if (opt == 'N')
			holder_name = optarg;
		else if (opt == 't')
			nextra = atoi(optarg);
		else if (opt == 'n')
			no_d = 1;
		else if (opt == 'v')
			use_vfork = 1;
		else
			return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	sigaction(SIGCONT, &sa, NULL);
	sigaction(SIGURG, &sa, NULL);
	if (pipe(pipefd))
		return 1;
	if (!no_d && !use_vfork && uffd_setup())
		use_vfork = 1;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (pthread_create(&t, &at, holder, NULL) || pthread_create(&t, &at, waiter, NULL) ||
	    pthread_create(&t, &at, sleeper, NULL) ||
	    (!no_d && pthread_create(&t, &at, dthread, NULL)))
		return 1;
	for (i = 0; i < nextra; i++)
		if (pthread_create(&t, &at, extra, NULL)) {
			fprintf(stderr, "stacks_shape: thread %d: cannot create\n", i);
			return 1;
		}
	while (!tid_holder || !tid_waiter || !tid_sleeper || (!no_d && !tid_d))
		usleep(1000);
	usleep(200000);
	/* only signals a tracer would cause are counted from here */
	signal(SIGCHLD, on_signal);
	printf("pid %d progress %p signals %p main %d holder %d waiter %d sleeper %d dthread %d "
	       "dkind %s blocked_ns %llu\n", getpid(), (void *)&shape.progress,
	       (void *)&shape.signals, getpid(), tid_holder, tid_waiter, tid_sleeper, tid_d,
	       no_d ? "none" : uffd_page ? "uffd" : "vfork", blocked_ns);
	fflush(stdout);
	for (;;)
		shape.progress++;
	return 0;
}
