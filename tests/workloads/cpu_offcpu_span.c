// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waits that span the capture, with a known answer: before it prints
 * "ready", one thread takes a mutex and blocks in read() on a pipe nobody
 * writes (in blocked_read()), another blocks on that mutex (in
 * blocked_lock()); neither runs again. With "d", a third blocks in D state
 * (uninterruptible, killable) in blocked_d(): process_vm_readv() of a page
 * of its own registered with a userfaultfd nobody serves. The main thread
 * spins in on_spin() for SECONDS, then the process exits.
 *
 *   cpu_offcpu_span SECONDS [d] [N]
 *
 * N: N more threads, each waiting in blocked_cond() on a condition variable
 * nobody signals (the benchmark's many blocked threads).
 * Prints "ready pid=P reader=T1 locker=T2 [dstate=T3]" once they are blocked
 * (their /proc state is S, D). Exits 0; 2 on a usage error, 1 when a thread
 * never blocks (or, with "d", no userfaultfd: run as root).
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile int tids[3];
static void *uffd_page;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t never_mtx = PTHREAD_MUTEX_INITIALIZER;
static volatile int waiting;
static volatile unsigned long sink;

__attribute__((noinline)) void blocked_read(void)
{
	char c;

	/* nobody writes: this never returns (the process exits under it) */
	while (read(pipefd[0], &c, 1) <= 0)
		;
	sink += c;
}

static void *reader(void *arg)
{
	pthread_mutex_lock(&mtx);
	tids[0] = syscall(SYS_gettid);
	blocked_read();
	pthread_mutex_unlock(&mtx);
	return NULL;
}

__attribute__((noinline)) void blocked_lock(void)
{
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
}

static void *locker(void *arg)
{
	tids[1] = syscall(SYS_gettid);
	blocked_lock();
	return NULL;
}

__attribute__((noinline)) void blocked_cond(void)
{
	pthread_mutex_lock(&never_mtx);
	waiting++;
	for (;;)
		pthread_cond_wait(&never, &never_mtx);
}

static void *condthread(void *arg)
{
	blocked_cond();
	return NULL;
}

__attribute__((noinline)) void blocked_d(void)
{
	char buf[8];
	struct iovec l = { buf, sizeof(buf) }, r = { uffd_page, sizeof(buf) };

	/* the kernel's own fault on the page waits for an answer that never comes */
	process_vm_readv(getpid(), &l, 1, &r, 1, 0);
}

static void *dthread(void *arg)
{
	tids[2] = syscall(SYS_gettid);
	blocked_d();
	return NULL;
}

/* A page whose first touch waits for a userfaultfd nobody reads; 0 or -1. */
static int uffd_setup(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api))
		return -1;
	uffd_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (uffd_page == MAP_FAILED)
		return -1;
	reg.range.start = (unsigned long)uffd_page;
	reg.range.len = 4096;
	return ioctl(fd, UFFDIO_REGISTER, &reg) ? -1 : 0;
}

__attribute__((noinline)) void on_spin(double until)
{
	unsigned long x = sink;
	struct timespec ts;

	do {
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	sink = x;
}

/* Thread @tid's state letter from /proc, or '?' */
static char state_of(int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

int main(int argc, char **argv)
{
	pthread_t a, b, c;
	struct timespec ts;
	double secs;
	int i, d = 0, n = 0, ai;

	if (argc < 2 || argc > 4 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: cpu_offcpu_span SECONDS [d] [N]\n");
		return 2;
	}
	for (ai = 2; ai < argc; ai++) {
		if (!strcmp(argv[ai], "d") && !d) {
			d = 1;
		} else if (argv[ai][0] >= '0' && argv[ai][0] <= '9' &&
			   (n = atoi(argv[ai])) >= 0 && n <= 100000) {
			continue;
		} else {
			fprintf(stderr, "usage: cpu_offcpu_span SECONDS [d] [N]\n");
			return 2;
		}
	}
	for (i = 0; i < n; i++) {
		pthread_t t;
		pthread_attr_t at;

		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 64 * 1024);
		if (pthread_create(&t, &at, condthread, NULL))
			return 1;
		pthread_attr_destroy(&at);
	}
	if (d && (uffd_setup() || pthread_create(&c, NULL, dthread, NULL)))
		return 1;
	if (pipe(pipefd) || pthread_create(&a, NULL, reader, NULL))
		return 1;
	while (!tids[0])
		usleep(1000);
	if (pthread_create(&b, NULL, locker, NULL))
		return 1;
	for (i = 0; i < 2000; i++) {
		if (tids[1] && state_of(tids[0]) == 'S' && state_of(tids[1]) == 'S' &&
		    __atomic_load_n(&waiting, __ATOMIC_SEQ_CST) == n &&
		    (!d || (tids[2] && state_of(tids[2]) == 'D')))
			break;
		usleep(1000);
	}
	if (i == 2000)
		return 1;
	/* settled: both have switched out for good */
	usleep(50000);
	if (d)
		printf("ready pid=%d reader=%d locker=%d dstate=%d\n", getpid(), tids[0], tids[1],
		       tids[2]);
	else
		printf("ready pid=%d reader=%d locker=%d\n", getpid(), tids[0], tids[1]);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	on_spin(ts.tv_sec + ts.tv_nsec / 1e9 + secs);
	_exit(0);
}
