// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * preload_check: run under LD_PRELOAD=libtkalloc.so with TK_ALLOC_TEST_COUNTS=1
 * (the markers then log to tk_alloc_test_log), or under libtkagent.so, and
 * report what the library did. Prints key=value lines on stdout; a broken
 * expectation is a "fail: ..." line and exit status 1.
 *
 *   off                 1000 allocations; the marker counts
 *   count N SIZE        N blocks of SIZE kept, then freed: each sampled one
 *                       is freed with exactly one marker, no other one is
 *   estimate N          N blocks, sizes 1 B..64 KiB: the true bytes and the
 *                       estimate from the sampled ones
 *   apis                every interposed function, mean 1 (all sampled)
 *   realloc             realloc/reallocarray of sampled blocks, and failing
 *   errno               errno after successes and failures
 *   frames              the frame above each marker's is the site_* function
 *                       that called the allocator (needs -rdynamic for dladdr)
 *   threads T N SIZE    T threads of `count`; the log stays consistent
 *   fork                a sampled block freed in a forked child, and in the parent
 *   forkstress          forks while another thread samples every allocation
 *   jemalloc            the allocations reach jemalloc (thread.allocated)
 *   agent FD            libtkagent.so: print "main", whether the TK_AGENT_*
 *                       variables are gone and FD is close-on-exec (or
 *                       closed: no dump server), then read
 *                       stdin to EOF and return
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tkalloc_test.h"

static struct tk_alloc_test_log *logp;
static int failures;
void *volatile sink;
/* through a volatile: the compiler cannot see (nor warn about) the sizes that fail */
static volatile size_t huge = SIZE_MAX / 2, size_max = SIZE_MAX;

#define FAIL(...)                                                                 \
	do {                                                                      \
		printf("fail: " __VA_ARGS__);                                     \
		printf("\n");                                                     \
		failures++;                                                       \
	} while (0)

static uint64_t nr_events(void)
{
	return logp ? __atomic_load_n(&logp->nr, __ATOMIC_ACQUIRE) : 0;
}

static const struct tk_alloc_test_event *event(uint64_t i)
{
	return i < TK_ALLOC_TEST_EVENTS ? &logp->ev[i] : NULL;
}

/*
 * Events since @since must be exactly @n: of @kind, for @ptr (and @size for
 * an allocation). @what names the call for the failure message.
 */
static bool expect(const char *what, uint64_t since, int n, uint32_t kind, void *ptr,
		   size_t size)
{
	uint64_t now = nr_events();
	const struct tk_alloc_test_event *e;

	if (now - since != (uint64_t)n) {
		FAIL("%s: %llu marker calls, expected %d", what,
		     (unsigned long long)(now - since), n);
		return false;
	}
	if (!n)
		return true;
	e = event(since);
	if (!e) {
		FAIL("%s: the test log is full", what);
		return false;
	}
	if (e->kind != kind || e->ptr != (uintptr_t)ptr ||
	    (kind == TK_ALLOC_TEST_ALLOC && e->size != size)) {
		FAIL("%s: marker %s(%#llx, %llu), expected %s(%p, %zu)", what,
		     e->kind == TK_ALLOC_TEST_ALLOC ? "alloc" : "free",
		     (unsigned long long)e->ptr, (unsigned long long)e->size,
		     kind == TK_ALLOC_TEST_ALLOC ? "alloc" : "free", ptr, size);
		return false;
	}
	return true;
}

static int need_log(void)
{
	if (!logp || !logp->sample_bytes) {
		FAIL("no sampling: run with LD_PRELOAD=libtkalloc.so, TK_ALLOC_SAMPLE_BYTES "
		     "and TK_ALLOC_TEST_COUNTS=1");
		return -1;
	}
	return 0;
}

static void mode_off(void)
{
	int i;

	for (i = 0; i < 1000; i++) {
		void *p = malloc(4096 + i);

		sink = p;
		free(p);
		p = calloc(1, 100000);
		sink = p;
		p = realloc(p, 200000);
		sink = p;
		free(p);
	}
	printf("log=%d mean=%llu alloc=%llu free=%llu\n", logp != NULL,
	       logp ? (unsigned long long)logp->sample_bytes : 0ull,
	       logp ? (unsigned long long)logp->nr_alloc : 0ull,
	       logp ? (unsigned long long)logp->nr_free : 0ull);
}

/* Keep @n blocks of @size; each sampled one must be freed with one marker. */
static void mode_count(long n, size_t size)
{
	void **blocks = calloc((size_t)n, sizeof(*blocks));
	bool *sampled = calloc((size_t)n, sizeof(*sampled));
	long i, nr_sampled = 0, bad = 0;

	if (!blocks || !sampled || need_log())
		return;
	for (i = 0; i < n; i++) {
		uint64_t before = nr_events();

		blocks[i] = malloc(size);
		if (!blocks[i]) {
			FAIL("malloc(%zu) failed", size);
			return;
		}
		if (nr_events() != before) {
			sampled[i] = true;
			nr_sampled++;
			if (!expect("malloc", before, 1, TK_ALLOC_TEST_ALLOC, blocks[i], size))
				bad++;
		}
	}
	for (i = 0; i < n; i++) {
		uint64_t before = nr_events();

		free(blocks[i]);
		if (!expect(sampled[i] ? "free of a sampled block" : "free of another block",
			    before, sampled[i], TK_ALLOC_TEST_FREE, blocks[i], 0))
			bad++;
	}
	printf("mean=%llu n=%ld size=%zu sampled=%ld alloc=%llu free=%llu bad=%ld\n",
	       (unsigned long long)logp->sample_bytes, n, size, nr_sampled,
	       (unsigned long long)logp->nr_alloc, (unsigned long long)logp->nr_free, bad);
	free(blocks);
	free(sampled);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Sizes 1 B .. 64 KiB, log-uniform; each block freed at once. */
static void mode_estimate(long n)
{
	double mean, truth = 0, est = 0;
	long i, nr_sampled = 0;

	if (need_log())
		return;
	mean = (double)logp->sample_bytes;
	for (i = 0; i < n; i++) {
		uint64_t r = xorshift();
		uint64_t before = __atomic_load_n(&logp->nr_alloc, __ATOMIC_RELAXED);
		size_t size = 1 + (size_t)((r >> 8) & ((UINT64_C(1) << (r % 17)) - 1));
		void *p = malloc(size);

		sink = p;
		truth += (double)size;
		if (__atomic_load_n(&logp->nr_alloc, __ATOMIC_RELAXED) != before) {
			nr_sampled++;
			est += (double)size / (1 - exp(-(double)size / mean));
		}
		free(p);
	}
	printf("mean=%.0f n=%ld sampled=%ld true=%.0f estimate=%.0f\n", mean, n, nr_sampled,
	       truth, est);
}

/* One allocation API: one alloc marker for it, one free marker for its free. */
static void check_block(const char *what, void *p, size_t size, uint64_t before)
{
	if (!p) {
		FAIL("%s returned NULL", what);
		return;
	}
	expect(what, before, 1, TK_ALLOC_TEST_ALLOC, p, size);
	before = nr_events();
	free(p);
	expect(what, before, 1, TK_ALLOC_TEST_FREE, p, 0);
}

static void mode_apis(void)
{
	uint64_t before;
	void *p;
	char *s;
	size_t i;
	int err;

	if (need_log())
		return;
	before = nr_events();
	check_block("malloc", malloc(100), 100, before);
	before = nr_events();
	p = calloc(10, 30);
	for (i = 0; p && i < 300; i++)
		if (((char *)p)[i])
			FAIL("calloc: byte %zu is not zero", i);
	check_block("calloc", p, 300, before);
	before = nr_events();
	p = NULL;
	err = posix_memalign(&p, 256, 1000);
	if (err || (uintptr_t)p % 256)
		FAIL("posix_memalign: %d, %p", err, p);
	check_block("posix_memalign", p, 1000, before);
	before = nr_events();
	p = aligned_alloc(64, 640);
	if ((uintptr_t)p % 64)
		FAIL("aligned_alloc: %p", p);
	check_block("aligned_alloc", p, 640, before);
	before = nr_events();
	p = memalign(128, 500);
	if ((uintptr_t)p % 128)
		FAIL("memalign: %p", p);
	check_block("memalign", p, 500, before);
	before = nr_events();
	p = valloc(300);
	if ((uintptr_t)p % 4096)
		FAIL("valloc: %p", p);
	check_block("valloc", p, 300, before);
	before = nr_events();
	check_block("pvalloc", pvalloc(300), 300, before);
	before = nr_events();
	check_block("reallocarray", reallocarray(NULL, 7, 11), 77, before);
	/* inside glibc: through the PLT, so interposed */
	before = nr_events();
	s = strdup("a string strdup copies, one marker for it");
	check_block("strdup", s, strlen("a string strdup copies, one marker for it") + 1, before);
	/* zero bytes: not sampled */
	before = nr_events();
	p = malloc(0);
	expect("malloc(0)", before, 0, 0, NULL, 0);
	free(p);
	expect("free(malloc(0))", before, 0, 0, NULL, 0);
	before = nr_events();
	free(NULL);
	expect("free(NULL)", before, 0, 0, NULL, 0);
	p = malloc(1000);
	if (malloc_usable_size(p) < 1000)
		FAIL("malloc_usable_size: %zu", malloc_usable_size(p));
	free(p);
	printf("apis=%s\n", failures ? "fail" : "ok");
}

static void mode_realloc(void)
{
	uint64_t before;
	void *p, *q;

	if (need_log())
		return;
	before = nr_events();
	p = malloc(100);
	expect("malloc", before, 1, TK_ALLOC_TEST_ALLOC, p, 100);
	/* a sampled block moved: free(old), then the new block, sampled */
	before = nr_events();
	q = realloc(p, 5000);
	if (!q || !expect("realloc", before, 2, TK_ALLOC_TEST_FREE, p, 0) ||
	    !expect("realloc's new block", before + 1, 1, TK_ALLOC_TEST_ALLOC, q, 5000))
		return;
	/* failing: the old block lives on, still sampled */
	before = nr_events();
	errno = 0;
	p = realloc(q, huge);
	/* errno: glibc sets ENOMEM, jemalloc 5.3 leaves it; the errno test compares */
	if (p)
		FAIL("realloc(huge): %p", p);
	if (!expect("failed realloc", before, 2, TK_ALLOC_TEST_FREE, q, 0) ||
	    !expect("failed realloc keeps", before + 1, 1, TK_ALLOC_TEST_ALLOC, q, 5000))
		return;
	before = nr_events();
	errno = 0;
	p = reallocarray(q, huge, 4);
	if (p || errno != ENOMEM)
		FAIL("reallocarray(overflow): %p errno %d", p, errno);
	expect("reallocarray(overflow)", before, 0, 0, NULL, 0);
	before = nr_events();
	p = reallocarray(q, 3, 1000);
	if (!p || !expect("reallocarray", before, 2, TK_ALLOC_TEST_FREE, q, 0) ||
	    !expect("reallocarray's block", before + 1, 1, TK_ALLOC_TEST_ALLOC, p, 3000))
		return;
	/* glibc: realloc(p, 0) frees p */
	before = nr_events();
	q = realloc(p, 0);
	expect("realloc(p, 0)", before, 1, TK_ALLOC_TEST_FREE, p, 0);
	free(q);
	before = nr_events();
	p = realloc(NULL, 777);
	expect("realloc(NULL)", before, 1, TK_ALLOC_TEST_ALLOC, p, 777);
	before = nr_events();
	free(p);
	expect("free", before, 1, TK_ALLOC_TEST_FREE, p, 0);
	printf("realloc=%s\n", failures ? "fail" : "ok");
}

static void mode_errno(void)
{
	/* what was allocated before main (and kept) is not this test's */
	uint64_t allocs0 = logp ? logp->nr_alloc : 0, frees0 = logp ? logp->nr_free : 0;
	void *p;
	int err;

	errno = 4242;
	p = malloc(64);
	if (!p || errno != 4242)
		FAIL("malloc(64) changed errno to %d", errno);
	free(p);
	if (errno != 4242)
		FAIL("free changed errno to %d", errno);
	p = calloc(3, 64);
	if (!p || errno != 4242)
		FAIL("calloc changed errno to %d", errno);
	p = realloc(p, 10000);
	if (!p || errno != 4242)
		FAIL("realloc changed errno to %d", errno);
	free(p);
	errno = 0;
	p = malloc(huge);
	if (p || errno != ENOMEM)
		FAIL("malloc(huge): %p errno %d", p, errno);
	errno = 0;
	p = malloc(size_max);
	if (p || errno != ENOMEM)
		FAIL("malloc(size_max): %p errno %d", p, errno);
	errno = 0;
	p = calloc(huge, 4);
	if (p || errno != ENOMEM)
		FAIL("calloc(overflow): %p errno %d", p, errno);
	/* its errno is the allocator's (glibc sets ENOMEM): only the answer is checked */
	err = posix_memalign(&p, 64, huge);
	if (err != ENOMEM)
		FAIL("posix_memalign(huge): %d", err);
	err = posix_memalign(&p, 3, 64);
	if (err != EINVAL)
		FAIL("posix_memalign(align 3): %d", err);
	if (logp && logp->nr_alloc - allocs0 != logp->nr_free - frees0)
		FAIL("%llu marker allocs, %llu frees",
		     (unsigned long long)(logp->nr_alloc - allocs0),
		     (unsigned long long)(logp->nr_free - frees0));
	printf("errno=%s\n", failures ? "fail" : "ok");
}

/*
 * Each site calls one function and does something after it (no tail call):
 * the return address a walk from the marker finds is inside the site.
 */
#define SITE(name, call)                                                          \
	__attribute__((noinline)) void *site_##name(void *p, size_t n)            \
	{                                                                         \
		void *r = call;                                                   \
		asm volatile("" : : "r"(r) : "memory");                           \
		return r;                                                         \
	}
SITE(malloc, malloc(n))
SITE(calloc, calloc(1, n))
SITE(realloc, realloc(p, n))
SITE(reallocarray, reallocarray(p, 1, n))
SITE(aligned_alloc, aligned_alloc(64, n))
SITE(memalign, memalign(64, n))
SITE(valloc, valloc(n))
SITE(pvalloc, pvalloc(n))
SITE(posix_memalign, posix_memalign(&p, 64, n) ? NULL : p)
SITE(free, (free(p), NULL))

/* Each of @n events from @since was reported from the function @site. */
static void expect_site(uint64_t since, int n, const char *site)
{
	int i;

	if (nr_events() - since != (uint64_t)n) {
		FAIL("%s: %llu marker calls, expected %d", site,
		     (unsigned long long)(nr_events() - since), n);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct tk_alloc_test_event *e = event(since + i);
		Dl_info info;

		if (!e || !dladdr((void *)(uintptr_t)e->caller, &info) || !info.dli_sname ||
		    strcmp(info.dli_sname, site))
			FAIL("%s: event %d: the frame above the marker is %s+%#lx", site, i,
			     e && info.dli_sname ? info.dli_sname : "?",
			     e ? (unsigned long)(e->caller - (uintptr_t)info.dli_saddr) : 0ul);
	}
}

static void mode_frames(void)
{
	static const struct {
		const char *name;
		void *(*fn)(void *, size_t);
	} sites[] = {
		{ "site_malloc", site_malloc },	    { "site_calloc", site_calloc },
		{ "site_realloc", site_realloc },   { "site_reallocarray", site_reallocarray },
		{ "site_aligned_alloc", site_aligned_alloc },
		{ "site_memalign", site_memalign }, { "site_valloc", site_valloc },
		{ "site_pvalloc", site_pvalloc },   { "site_posix_memalign", site_posix_memalign },
	};
	uint64_t before;
	size_t i;
	void *p;

	if (need_log())
		return;
	for (i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		before = nr_events();
		p = sites[i].fn(NULL, 1000);
		expect_site(before, 1, sites[i].name);
		before = nr_events();
		site_free(p, 0);
		expect_site(before, 1, "site_free");
	}
	/* a sampled block moved: its free and the new block, both from the site */
	p = site_malloc(NULL, 100);
	before = nr_events();
	p = site_realloc(p, 5000);
	expect_site(before, 2, "site_realloc");
	before = nr_events();
	p = site_reallocarray(p, 9000);
	expect_site(before, 2, "site_reallocarray");
	site_free(p, 0);
	printf("frames=%s\n", failures ? "fail" : "ok");
}

struct worker {
	pthread_t t;
	long n;
	size_t size;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	void **blocks = calloc((size_t)w->n, sizeof(*blocks));
	int round;
	long i;

	for (round = 0; blocks && round < 4; round++) {
		for (i = 0; i < w->n; i++)
			blocks[i] = malloc(w->size + (size_t)(i & 7));
		for (i = 0; i < w->n; i++)
			free(blocks[i]);
	}
	free(blocks);
	return NULL;
}

/*
 * The workers' blocks (sizes [@lo, @hi]) in log order: an address is sampled
 * again only after its free marker, and every one is freed in the end. Blocks
 * of glibc's own (a new thread's DTV, kept after it exits) are left out.
 */
static void check_log_pairs(size_t lo, size_t hi, uint64_t *nr_alloc, uint64_t *nr_free)
{
	uint64_t n = nr_events(), i, live = 0;
	size_t cap = 1 << 17, j, mask = cap - 1;
	uint64_t *set = calloc(cap, sizeof(*set));

	if (!set)
		return;
	if (n > TK_ALLOC_TEST_EVENTS) {
		FAIL("the test log is full: %llu events", (unsigned long long)n);
		return;
	}
	for (i = 0; i < n; i++) {
		const struct tk_alloc_test_event *e = event(i);

		for (j = (e->ptr >> 4) & mask; set[j] && set[j] != e->ptr; j = (j + 1) & mask)
			;
		if (e->kind == TK_ALLOC_TEST_ALLOC) {
			if (set[j] == e->ptr)
				FAIL("event %llu: %#llx sampled twice", (unsigned long long)i,
				     (unsigned long long)e->ptr);
			if (e->size < lo || e->size > hi)
				continue;
			set[j] = e->ptr;
			live++;
			++*nr_alloc;
		} else if (set[j] == e->ptr) {
			/* a tombstone: keeps the probe chains whole */
			set[j] = 1;
			live--;
			++*nr_free;
		}
	}
	if (live)
		FAIL("%llu sampled blocks without a free marker", (unsigned long long)live);
	free(set);
}

static void mode_threads(int nr, long n, size_t size)
{
	uint64_t nr_alloc = 0, nr_free = 0;
	struct worker w[64];
	int i;

	if (need_log() || nr < 1 || nr > 64)
		return;
	for (i = 0; i < nr; i++) {
		w[i].n = n;
		w[i].size = size;
		if (pthread_create(&w[i].t, NULL, worker, &w[i])) {
			FAIL("pthread_create");
			return;
		}
	}
	for (i = 0; i < nr; i++)
		pthread_join(w[i].t, NULL);
	check_log_pairs(size, size + 7, &nr_alloc, &nr_free);
	printf("mean=%llu threads=%d allocs=%ld size=%zu alloc=%llu free=%llu\n",
	       (unsigned long long)logp->sample_bytes, nr, 4 * n * nr, size,
	       (unsigned long long)nr_alloc, (unsigned long long)nr_free);
}

static void mode_fork(void)
{
	uint64_t before;
	void *p, *q;
	pid_t pid;
	int status;

	if (need_log())
		return;
	before = nr_events();
	p = malloc(1000);
	expect("malloc", before, 1, TK_ALLOC_TEST_ALLOC, p, 1000);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		FAIL("fork");
		return;
	}
	if (pid == 0) {
		/* the child knows the parent's sampled block, and samples on */
		failures = 0;
		before = nr_events();
		free(p);
		expect("child: free", before, 1, TK_ALLOC_TEST_FREE, p, 0);
		before = nr_events();
		q = malloc(2000);
		expect("child: malloc", before, 1, TK_ALLOC_TEST_ALLOC, q, 2000);
		before = nr_events();
		free(q);
		expect("child: free", before, 1, TK_ALLOC_TEST_FREE, q, 0);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("child: status %#x", status);
	before = nr_events();
	free(p);
	expect("parent: free", before, 1, TK_ALLOC_TEST_FREE, p, 0);
	printf("fork=%s\n", failures ? "fail" : "ok");
}

static volatile int stop;

static void *sampler_thread(void *arg)
{
	while (!stop) {
		void *p = malloc(100);

		sink = p;
		free(p);
	}
	return NULL;
}

/* Fork while another thread holds the set's lock now and then. */
static void mode_forkstress(void)
{
	pthread_t t;
	int i, status;

	if (need_log())
		return;
	if (pthread_create(&t, NULL, sampler_thread, NULL)) {
		FAIL("pthread_create");
		return;
	}
	for (i = 0; i < 200; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			void *p = malloc(100);

			sink = p;
			free(p);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			FAIL("fork %d", i);
			break;
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("forkstress=%s\n", failures ? "fail" : "ok");
}

static void mode_jemalloc(void)
{
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT,
									       "mallctl");
	uint64_t a0 = 0, a1 = 0;
	size_t len = sizeof(a0);
	void *p;

	if (!mallctl) {
		FAIL("no mallctl: jemalloc is not loaded");
		return;
	}
	mallctl("thread.allocated", &a0, &len, NULL, 0);
	p = malloc(1 << 20);
	sink = p;
	len = sizeof(a1);
	mallctl("thread.allocated", &a1, &len, NULL, 0);
	if (a1 - a0 < (1 << 20))
		FAIL("malloc(1 MiB) did not reach jemalloc: thread.allocated %llu -> %llu",
		     (unsigned long long)a0, (unsigned long long)a1);
	free(p);
	printf("jemalloc=%s\n", failures ? "fail" : "ok");
}

static void mode_agent(int fd)
{
	char buf[256];
	int flags = fcntl(fd, F_GETFD);

	printf("main\n");
	printf("env=%s cloexec=%s\n",
	       getenv("TK_AGENT_FD") || getenv("TK_AGENT_HOLD") || getenv("TK_AGENT_JEMALLOC")
		       ? "left" : "gone",
	       flags < 0 ? "closed" : flags & FD_CLOEXEC ? "1" : "0");
	fflush(stdout);
	while (fread(buf, 1, sizeof(buf), stdin) > 0)
		;
	/* the agent's thread, still reading its descriptor, must not hold the exit */
}

static void usage(FILE *f)
{
	fprintf(f, "usage: preload_check off | count N SIZE | estimate N | apis | realloc |\n"
		   "       errno | frames | threads T N SIZE | fork | forkstress | jemalloc |\n"
		   "       agent FD\n"
		   "Run under LD_PRELOAD=libtkalloc.so with TK_ALLOC_SAMPLE_BYTES and\n"
		   "TK_ALLOC_TEST_COUNTS=1, or under libtkagent.so (agent).\n");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	static char outbuf[1 << 16];

	/* stdout's buffer allocated now would be a marker call in the middle of a check */
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	logp = dlsym(RTLD_DEFAULT, TK_ALLOC_TEST_LOG);
	if (!strcmp(mode, "--help") || !strcmp(mode, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(mode, "off") && argc == 2)
		mode_off();
	else if (!strcmp(mode, "count") && argc == 4)
		mode_count(atol(argv[2]), (size_t)atol(argv[3]));
	else if (!strcmp(mode, "estimate") && argc == 3)
		mode_estimate(atol(argv[2]));
	else if (!strcmp(mode, "apis") && argc == 2)
		mode_apis();
	else if (!strcmp(mode, "realloc") && argc == 2)
		mode_realloc();
	else if (!strcmp(mode, "errno") && argc == 2)
		mode_errno();
	else if (!strcmp(mode, "threads") && argc == 5)
		mode_threads(atoi(argv[2]), atol(argv[3]), (size_t)atol(argv[4]));
	else if (!strcmp(mode, "fork") && argc == 2)
		mode_fork();
	else if (!strcmp(mode, "forkstress") && argc == 2)
		mode_forkstress();
	else if (!strcmp(mode, "frames") && argc == 2)
		mode_frames();
	else if (!strcmp(mode, "jemalloc") && argc == 2)
		mode_jemalloc();
	else if (!strcmp(mode, "agent") && argc == 3)
		mode_agent(atoi(argv[2]));
	else {
		usage(stderr);
		return 2;
	}
	return failures ? 1 : 0;
}
