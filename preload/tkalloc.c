// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libtkalloc.so: the in-process allocation sampler that `tracekit alloc`
 * preloads into a command (the contract is user/alloc/agent_proto.h).
 *
 * Every allocation function forwards to the next definition in the lookup
 * order (dlsym(RTLD_NEXT)), so a program linked with a shared jemalloc keeps
 * jemalloc. Each thread counts allocated bytes down from an exponential draw
 * with mean TK_ALLOC_SAMPLE_BYTES, as jemalloc's prof sampling does: bytes
 * are points of a Poisson process, and an allocation is sampled when a point
 * falls inside it, with probability 1 - exp(-size / mean). What is left of
 * the countdown after an unsampled allocation carries over to the next one;
 * after a sampled one the next point is drawn afresh from its end, which is
 * exact because the process is memoryless (further points inside the same
 * allocation would not sample it twice).
 *
 * The common path is one thread-local compare and subtract, then a jump to
 * the allocator: no frame, no call. Otherwise the interposed function jumps
 * (a tail call the compiler must make) to its slow path, whose frame thus
 * takes the interposed function's place right under the allocation's
 * caller. A sampled allocation is remembered (a counting filter read without
 * a lock, and an exact set under a mutex) and reported by the slow path
 * itself to tk_alloc_marker_alloc(): a frame-pointer walk from the marker's
 * entry finds the allocation's caller first. A free looks at one byte of the
 * filter; only a maybe there takes the mutex.
 *
 * Not covered: a C++ operator new that does not call malloc (tcmalloc's,
 * for one); libstdc++'s calls malloc and is seen here. An allocator whose
 * own functions call each other through the PLT (calloc calling malloc) is
 * counted twice; glibc's and jemalloc's do not.
 *
 * Without a valid TK_ALLOC_SAMPLE_BYTES everything is forwarded and nothing
 * is sampled. The library never prints, never aborts, and leaves errno as
 * the allocator set it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "alloc/agent_proto.h"
#include "tkalloc_test.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define TK_EXPORT __attribute__((visibility("default")))
#define TK_INLINE static inline __attribute__((always_inline))
#define TK_COLD __attribute__((noinline, cold))

/* ---- the next definitions ------------------------------------------------- */

/* glibc's own entry points: the fallback when RTLD_NEXT finds nothing. */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));
extern void *__libc_valloc(size_t) __attribute__((weak));
extern void *__libc_pvalloc(size_t) __attribute__((weak));

static void tk_free_boot(void *ptr);

/*
 * Read straight from this library's data (no GOT): the forward is one
 * indirect call. Set once by tk_init(); every caller but free() reaches
 * them only after tk_slow() made sure of that, and free() starts with a
 * stub that knows the bootstrap arena.
 */
static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	/* C++: only for what malloc cannot do (bad_alloc, the new-handler) */
	void *(*new_)(size_t);
	void *(*new_array)(size_t);
	void *(*new_nothrow)(size_t, const void *);
	void *(*new_array_nothrow)(size_t, const void *);
} real = { .free = tk_free_boot };

enum { TK_INIT_NONE, TK_INIT_BUSY, TK_INIT_DONE };
static int init_state;
static uint64_t sample_mean;		/* 0: sample nothing */
static bool test_log_on;

/* ---- per thread ----------------------------------------------------------- */

struct tk_thread {
	uint64_t left;			/* bytes until the next sample; 0: draw first */
	uint64_t rng;			/* splitmix64 state; 0: not seeded */
};
static __thread struct tk_thread tk_thr __attribute__((tls_model("initial-exec")));

/* ---- the bootstrap arena: dlsym's own allocations while we resolve -------- */

#define TK_ARENA_SIZE (256 << 10)
#define TK_ARENA_HDR 16
static char arena[TK_ARENA_SIZE] __attribute__((aligned(4096)));
static size_t arena_used;

static bool in_arena(const void *ptr)
{
	return (uintptr_t)ptr - (uintptr_t)arena < TK_ARENA_SIZE;
}

/* ---- the filter: one byte per hash bucket, read without a lock ------------ */

#define TK_FILTER_BITS 15
#define TK_FILTER_STICKY 255		/* saturated: never decremented again */
static uint8_t filter[1 << TK_FILTER_BITS];

TK_INLINE size_t filter_hash(const void *ptr)
{
	return ((uintptr_t)ptr * 0x9e3779b97f4a7c15ull) >> (64 - TK_FILTER_BITS);
}

TK_INLINE bool filter_maybe(const void *ptr)
{
	return __atomic_load_n(&filter[filter_hash(ptr)], __ATOMIC_RELAXED);
}

/* Under set_lock, or for the sticky arena marks (a store of a constant). */
static void filter_add(const void *ptr, bool sticky)
{
	uint8_t *c = &filter[filter_hash(ptr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	if (v != TK_FILTER_STICKY)
		__atomic_store_n(c, sticky ? TK_FILTER_STICKY : v + 1, __ATOMIC_RELAXED);
}

static void filter_del(const void *ptr)
{
	uint8_t *c = &filter[filter_hash(ptr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	if (v && v != TK_FILTER_STICKY)
		__atomic_store_n(c, v - 1, __ATOMIC_RELAXED);
}

static void *arena_alloc(size_t size, size_t align)
{
	size_t off, start;

	if (align < TK_ARENA_HDR)
		align = TK_ARENA_HDR;
	if (align & (align - 1) || align > 4096) {
		errno = EINVAL;
		return NULL;
	}
	off = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
	do {
		start = (off + TK_ARENA_HDR + align - 1) & ~(align - 1);
		if (size > TK_ARENA_SIZE || start + size > TK_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&arena_used, &off, start + size, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	memcpy(arena + start - sizeof(size_t), &size, sizeof(size));
	/* its free and realloc leave the fast path and are never forwarded */
	filter_add(arena + start, true);
	return arena + start;
}

static size_t arena_size(const void *ptr)
{
	size_t size;

	memcpy(&size, (const char *)ptr - sizeof(size_t), sizeof(size));
	return size;
}

static void tk_free_boot(void *ptr)
{
	/* before tk_init() every pointer came from the arena: nothing to do */
}

/* ---- the exact set of sampled pointers, under set_lock --------------------- */

struct tk_slot {
	uintptr_t ptr;			/* 0: empty */
	size_t size;
};

static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tk_slot *set_slots;
static size_t set_cap;			/* a power of two, or 0 */
static size_t set_nr;
static unsigned int set_shift;

static size_t set_home(uintptr_t ptr)
{
	return (ptr * 0x9e3779b97f4a7c15ull) >> set_shift;
}

/* The slot of @ptr, or the empty one where it would go. */
static struct tk_slot *set_probe(uintptr_t ptr)
{
	size_t mask = set_cap - 1, i = set_home(ptr);

	while (set_slots[i].ptr && set_slots[i].ptr != ptr)
		i = (i + 1) & mask;
	return &set_slots[i];
}

/* mmap, not malloc: this runs inside malloc. */
static bool set_grow(void)
{
	size_t cap = set_cap ? set_cap * 2 : 4096, old_cap = set_cap, i;
	struct tk_slot *old = set_slots, *slots;

	slots = mmap(NULL, cap * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return false;
	set_slots = slots;
	set_cap = cap;
	set_shift = 64 - __builtin_ctzl(cap);
	for (i = 0; i < old_cap; i++)
		if (old[i].ptr)
			*set_probe(old[i].ptr) = old[i];
	if (old)
		munmap(old, old_cap * sizeof(*old));
	return true;
}

/* Remember a sampled block; false when there is no memory to (not sampled then). */
static TK_COLD bool tk_remember(void *ptr, size_t size)
{
	int saved = errno;
	struct tk_slot *s;
	bool ok = true;

	pthread_mutex_lock(&set_lock);
	if ((set_nr + 1) * 2 > set_cap && !set_grow()) {
		ok = false;
		goto out;
	}
	s = set_probe((uintptr_t)ptr);
	if (!s->ptr) {
		/* else a free we did not see: the new block takes its place */
		s->ptr = (uintptr_t)ptr;
		set_nr++;
		filter_add(ptr, false);
	}
	s->size = size;
out:
	pthread_mutex_unlock(&set_lock);
	errno = saved;
	return ok;
}

enum { TK_PLAIN, TK_SAMPLED, TK_IN_ARENA };

/* After a maybe from the filter: was @ptr sampled? It is forgotten then. */
static TK_COLD int tk_forget(void *ptr, size_t *size)
{
	size_t mask, i, j, home;
	struct tk_slot *s;
	int ret = TK_PLAIN;

	if (!ptr)
		return TK_PLAIN;
	if (in_arena(ptr))
		return TK_IN_ARENA;
	pthread_mutex_lock(&set_lock);
	if (!set_nr)
		goto out;
	s = set_probe((uintptr_t)ptr);
	if (!s->ptr)
		goto out;
	if (size)
		*size = s->size;
	ret = TK_SAMPLED;
	filter_del(ptr);
	set_nr--;
	/* backward-shift deletion keeps every probe chain unbroken */
	mask = set_cap - 1;
	i = s - set_slots;
	for (j = (i + 1) & mask; set_slots[j].ptr; j = (j + 1) & mask) {
		home = set_home(set_slots[j].ptr);
		/* slot j may move to i when its home is not within (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			set_slots[i] = set_slots[j];
			i = j;
		}
	}
	set_slots[i].ptr = 0;
out:
	pthread_mutex_unlock(&set_lock);
	return ret;
}

static void tk_fork_prepare(void)
{
	pthread_mutex_lock(&set_lock);
}

static void tk_fork_parent(void)
{
	pthread_mutex_unlock(&set_lock);
}

static void tk_fork_child(void)
{
	pthread_mutex_unlock(&set_lock);
	/* the child keeps every sampled block; it draws its own points from here */
	tk_thr.left = 0;
	tk_thr.rng = 0;
}

/* ---- the markers: tracekit's uprobes ------------------------------------------ */

TK_EXPORT struct tk_alloc_test_log tk_alloc_test_log;

static TK_COLD void tk_test_log(uint32_t kind, void *ptr, size_t size, void **entry_fp)
{
	struct tk_alloc_test_log *log = &tk_alloc_test_log;
	uint64_t n = __atomic_fetch_add(&log->nr, 1, __ATOMIC_RELAXED);

	__atomic_fetch_add(kind == TK_ALLOC_TEST_ALLOC ? &log->nr_alloc : &log->nr_free, 1,
			   __ATOMIC_RELAXED);
	if (n < TK_ALLOC_TEST_EVENTS) {
		log->ev[n].ptr = (uintptr_t)ptr;
		log->ev[n].size = size;
		log->ev[n].tid = gettid();
		log->ev[n].caller = (uintptr_t)entry_fp[1];
		__atomic_store_n(&log->ev[n].kind, kind, __ATOMIC_RELEASE);
	}
}

/*
 * The markers: a 5-byte nop and a return, in assembly. A uprobe on a
 * 5-byte nop is the cheapest kind: the kernel emulates it, and since 6.18
 * (x86) rewrites it into a call of a uprobe trampoline, no trap at all
 * (~0.25 us a hit here, against ~0.6 us for an emulated push and ~11 us
 * for an instruction it must single-step). They keep no frame: a walk from
 * their entry starts at the slow path's frame, whose return address is the
 * allocation's caller (their CFI says so to a walk by CFI, which then sees
 * the slow path as a frame of its own: tracekit drops it). The local aliases are what this library calls, so
 * the calls do not go through its PLT.
 */
#define TK_MARKER_ASM(name, local)                                                  \
	".text\n"                                                                   \
	".p2align 4\n"                                                              \
	".globl " name "\n"                                                         \
	".type " name ", @function\n"                                               \
	".globl " local "\n"                                                        \
	".hidden " local "\n"                                                       \
	name ":\n"                                                                  \
	local ":\n"                                                                 \
	"	.cfi_startproc\n"                                                   \
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"	/* nopl 0x0(%rax,%rax,1) */   \
	"	ret\n"                                                              \
	"	.cfi_endproc\n"                                                     \
	".size " name ", .-" name "\n"
__asm__(TK_MARKER_ASM("tk_alloc_marker_alloc", "tk_marker_alloc_local")
	TK_MARKER_ASM("tk_alloc_marker_free", "tk_marker_free_local"));

void tk_marker_alloc_local(void *ptr, size_t size);
void tk_marker_free_local(void *ptr);

/*
 * Call a marker from a slow path (a macro: the frame read for the test log
 * is the slow path's, as a walk from the marker's entry sees it).
 */
#define marker_alloc(ptr, size)                                                    \
	do {                                                                       \
		if (unlikely(test_log_on))                                         \
			tk_test_log(TK_ALLOC_TEST_ALLOC, (ptr), (size),            \
				    (void **)__builtin_frame_address(0));          \
		tk_marker_alloc_local((ptr), (size));                              \
	} while (0)
#define marker_free(ptr)                                                           \
	do {                                                                       \
		if (unlikely(test_log_on))                                         \
			tk_test_log(TK_ALLOC_TEST_FREE, (ptr), 0,                  \
				    (void **)__builtin_frame_address(0));          \
		tk_marker_free_local(ptr);                                         \
	} while (0)

/* ---- set-up ---------------------------------------------------------------------- */

/* Decimal, > 0, nothing else; no strtoull (it may set errno). */
static uint64_t parse_bytes(const char *s)
{
	uint64_t v = 0;

	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_C(1) << 62) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static void read_env(void)
{
	const char *t = getenv(TK_ENV_ALLOC_TEST);

	__atomic_store_n(&sample_mean, parse_bytes(getenv(TK_ENV_SAMPLE_BYTES)), __ATOMIC_RELAXED);
	test_log_on = t && !strcmp(t, "1");
	if (test_log_on)
		tk_alloc_test_log.sample_bytes = sample_mean;
}

#define RESOLVE(name, fallback)                                                   \
	do {                                                                      \
		void *f_ = dlsym(RTLD_NEXT, #name);                               \
		real.name = f_ ? (__typeof__(real.name))f_ : (fallback);          \
	} while (0)

static bool same_object(void *a, void *b)
{
	Dl_info ia, ib;

	return a && b && dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

static size_t page_size(void)
{
	static size_t size;

	if (!size)
		size = (size_t)sysconf(_SC_PAGESIZE);
	return size;
}

static void *valloc_by_memalign(size_t size)
{
	return real.memalign(page_size(), size);
}

static void *pvalloc_by_memalign(size_t size)
{
	size_t page = page_size();

	if (size > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	return real.memalign(page, size ? (size + page - 1) & ~(page - 1) : page);
}

/*
 * An allocator that does not define valloc or pvalloc (jemalloc has no
 * pvalloc) leaves glibc's to RTLD_NEXT: its blocks would be freed by the
 * other allocator. Without us the program would crash on that free; with us
 * it gets a block of the allocator it uses.
 */
static void fix_strays(void)
{
	if (!same_object(real.memalign, real.malloc))
		return;
	if (!same_object(real.valloc, real.malloc))
		real.valloc = valloc_by_memalign;
	if (!same_object(real.pvalloc, real.malloc))
		real.pvalloc = pvalloc_by_memalign;
}

/*
 * Resolve the next definitions once. False while that is under way (on this
 * thread: dlsym allocating; or on another): the caller uses the arena.
 */
static bool tk_init(void)
{
	int state = TK_INIT_NONE, saved = errno;

	if (!__atomic_compare_exchange_n(&init_state, &state, TK_INIT_BUSY, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return state == TK_INIT_DONE;
	RESOLVE(malloc, __libc_malloc);
	RESOLVE(calloc, __libc_calloc);
	RESOLVE(realloc, __libc_realloc);
	RESOLVE(posix_memalign, NULL);
	RESOLVE(aligned_alloc, __libc_memalign);
	RESOLVE(memalign, __libc_memalign);
	RESOLVE(valloc, __libc_valloc);
	RESOLVE(pvalloc, __libc_pvalloc);
	RESOLVE(malloc_usable_size, NULL);
	real.new_ = dlsym(RTLD_NEXT, "_Znwm");
	real.new_array = dlsym(RTLD_NEXT, "_Znam");
	real.new_nothrow = dlsym(RTLD_NEXT, "_ZnwmRKSt9nothrow_t");
	real.new_array_nothrow = dlsym(RTLD_NEXT, "_ZnamRKSt9nothrow_t");
	/* last: free() forwards as soon as this is set */
	RESOLVE(free, __libc_free);
	fix_strays();
	read_env();
	__atomic_store_n(&init_state, TK_INIT_DONE, __ATOMIC_RELEASE);
	errno = saved;
	return true;
}

__attribute__((constructor)) static void tk_ctor(void)
{
	int saved = errno;

	tk_init();
	/* an allocation made before libc's environment was set read nothing */
	read_env();
	tk_thr.left = 0;
	pthread_atfork(tk_fork_prepare, tk_fork_parent, tk_fork_child);
	errno = saved;
}

/* ---- the countdown ---------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Bytes to the next point, counting the byte it falls on: floor(X) + 1 with
 * X = -ln(u) * mean, u uniform in (0, 1]. An allocation of @size bytes is
 * sampled when size >= left, that is when X < size.
 */
static uint64_t draw(struct tk_thread *t, uint64_t mean)
{
	double u, x;

	if (!t->rng) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		t->rng = ((uint64_t)gettid() << 32) ^ (uint64_t)ts.tv_nsec ^
			 ((uint64_t)ts.tv_sec << 20) ^ (uintptr_t)t;
	}
	u = (double)((splitmix64(&t->rng) >> 11) + 1) * 0x1.0p-53;
	x = -log(u) * (double)mean;
	if (x >= 0x1.0p62)
		return UINT64_C(1) << 62;
	return (uint64_t)x + 1;
}

enum { TK_FORWARD, TK_SAMPLE, TK_ARENA };

/* The countdown ran out (or was never drawn): sample this allocation? */
static TK_COLD int tk_slow(size_t size)
{
	struct tk_thread *t = &tk_thr;
	uint64_t mean;
	int saved;

	if (unlikely(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != TK_INIT_DONE) &&
	    !tk_init())
		return TK_ARENA;
	mean = __atomic_load_n(&sample_mean, __ATOMIC_RELAXED);
	if (!mean) {
		t->left = UINT64_MAX;
		return TK_FORWARD;
	}
	saved = errno;
	if (!t->left)
		t->left = draw(t, mean);
	if (size < t->left) {
		t->left -= size;
		errno = saved;
		return TK_FORWARD;
	}
	t->left = draw(t, mean);
	errno = saved;
	return size ? TK_SAMPLE : TK_FORWARD;
}

/* ---- the interposed functions ------------------------------------------------- */

/*
 * Every function returning a new block is a fast path that forwards, and a
 * slow path NAME_sampled() with the same arguments that it jumps to: a tail
 * call the compiler must make (musttail), so the slow path's frame replaces
 * the interposed function's, and its return address is the allocation's
 * caller's. The slow path keeps a frame pointer and calls the marker itself:
 * the frame above the marker's is the allocation's caller, as if the marker
 * were called from the interposed function, and the fast path pushes nothing.
 */
#define TK_FAST(size, fwd, slow, ...)                                             \
	do {                                                                      \
		uint64_t left_ = tk_thr.left;                                     \
                                                                                  \
		if (likely((size) < left_)) {                                     \
			tk_thr.left = left_ - (size);                             \
			return fwd;                                               \
		}                                                                 \
		__attribute__((musttail)) return slow(__VA_ARGS__);               \
	} while (0)

/* The slow path's body: @fwd forwards, @boot serves the bootstrap. */
#define TK_SLOW(size, fwd, boot)                                                  \
	do {                                                                      \
		void *p_;                                                         \
                                                                                  \
		switch (tk_slow(size)) {                                          \
		case TK_FORWARD:                                                  \
			return fwd;                                               \
		case TK_ARENA:                                                    \
			return boot;                                              \
		}                                                                 \
		p_ = fwd;                                                         \
		if (p_ && tk_remember(p_, size))                                  \
			marker_alloc(p_, size);                                   \
		return p_;                                                        \
	} while (0)

#define TK_SLOWPATH __attribute__((noinline, disable_tail_calls))

static TK_SLOWPATH void *malloc_sampled(size_t size)
{
	TK_SLOW(size, real.malloc(size), arena_alloc(size, 16));
}

TK_EXPORT void *malloc(size_t size)
{
	TK_FAST(size, real.malloc(size), malloc_sampled, size);
}

static TK_SLOWPATH void *calloc_sampled(size_t nmemb, size_t size)
{
	size_t bytes = __builtin_mul_overflow(nmemb, size, &bytes) ? SIZE_MAX : bytes;

	/* the arena is never reused: still zero */
	TK_SLOW(bytes, real.calloc(nmemb, size), arena_alloc(bytes, 16));
}

TK_EXPORT void *calloc(size_t nmemb, size_t size)
{
	size_t bytes;

	/* an overflow goes the slow way, and the real calloc fails it */
	if (__builtin_mul_overflow(nmemb, size, &bytes))
		bytes = SIZE_MAX;
	TK_FAST(bytes, real.calloc(nmemb, size), calloc_sampled, nmemb, size);
}

static TK_SLOWPATH void free_sampled(void *ptr)
{
	switch (tk_forget(ptr, NULL)) {
	case TK_IN_ARENA:
		return;
	case TK_SAMPLED:
		/* before the real free: the address may be handed out again after it */
		marker_free(ptr);
		break;
	}
	real.free(ptr);
}

TK_EXPORT void free(void *ptr)
{
	if (likely(!filter_maybe(ptr)))
		return real.free(ptr);
	__attribute__((musttail)) return free_sampled(ptr);
}

/* An arena block moves to the real allocator (or to more arena). */
static TK_COLD void *arena_realloc(void *old, size_t size)
{
	size_t old_size = arena_size(old);
	void *p;

	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == TK_INIT_DONE)
		p = size ? real.malloc(size) : NULL;
	else
		p = arena_alloc(size, 16);
	if (p)
		memcpy(p, old, old_size < size ? old_size : size);
	return p;
}

/*
 * The slow path of realloc and reallocarray (ours, not the next one: glibc's
 * calls realloc through the PLT, which would count the block twice). Always
 * inlined: the markers are called from the slow path's own frame.
 */
TK_INLINE void *tk_realloc_slow(void *old, size_t size)
{
	size_t old_size = 0;
	int old_kind = TK_PLAIN, path = TK_FORWARD;
	void *p;

	if (filter_maybe(old)) {
		old_kind = tk_forget(old, &old_size);
		if (old_kind == TK_IN_ARENA)
			return arena_realloc(old, size);
		/* gone before the real realloc: the address may be reused after it */
		if (old_kind == TK_SAMPLED)
			marker_free(old);
	}
	if (likely(size < tk_thr.left))
		tk_thr.left -= size;
	else
		path = tk_slow(size);
	if (path == TK_ARENA)
		/* only before tk_init() is done, when every block is the arena's */
		return arena_alloc(size, 16);
	p = real.realloc(old, size);
	if (old_kind == TK_SAMPLED && !p && size) {
		/* it failed: the old block lives on, still sampled */
		if (tk_remember(old, old_size))
			marker_alloc(old, old_size);
	}
	if (path == TK_SAMPLE && p && size && tk_remember(p, size))
		marker_alloc(p, size);
	return p;
}

static TK_SLOWPATH void *realloc_sampled(void *old, size_t size)
{
	return tk_realloc_slow(old, size);
}

TK_EXPORT void *realloc(void *old, size_t size)
{
	uint64_t left = tk_thr.left;

	if (likely(!filter_maybe(old) && size < left)) {
		tk_thr.left = left - size;
		return real.realloc(old, size);
	}
	__attribute__((musttail)) return realloc_sampled(old, size);
}

static TK_SLOWPATH void *reallocarray_sampled(void *old, size_t nmemb, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(nmemb, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return tk_realloc_slow(old, bytes);
}

TK_EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
	uint64_t left = tk_thr.left;
	size_t bytes;

	if (likely(!__builtin_mul_overflow(nmemb, size, &bytes) && !filter_maybe(old) &&
		   bytes < left)) {
		tk_thr.left = left - bytes;
		return real.realloc(old, bytes);
	}
	__attribute__((musttail)) return reallocarray_sampled(old, nmemb, size);
}

static TK_SLOWPATH int posix_memalign_sampled(void **memptr, size_t alignment, size_t size)
{
	int err;

	switch (tk_slow(size)) {
	case TK_FORWARD:
		return real.posix_memalign ? real.posix_memalign(memptr, alignment, size) : ENOMEM;
	case TK_ARENA: {
		int saved = errno;
		void *p = arena_alloc(size, alignment);

		err = p ? 0 : errno;
		errno = saved;
		if (p)
			*memptr = p;
		return err;
	}
	}
	if (!real.posix_memalign)
		return ENOMEM;
	err = real.posix_memalign(memptr, alignment, size);
	if (!err && *memptr && tk_remember(*memptr, size))
		marker_alloc(*memptr, size);
	return err;
}

TK_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	uint64_t left = tk_thr.left;

	if (likely(size < left && real.posix_memalign)) {
		tk_thr.left = left - size;
		return real.posix_memalign(memptr, alignment, size);
	}
	__attribute__((musttail)) return posix_memalign_sampled(memptr, alignment, size);
}

static TK_SLOWPATH void *aligned_alloc_sampled(size_t alignment, size_t size)
{
	TK_SLOW(size, real.aligned_alloc(alignment, size), arena_alloc(size, alignment));
}

TK_EXPORT void *aligned_alloc(size_t alignment, size_t size)
{
	TK_FAST(size, real.aligned_alloc(alignment, size), aligned_alloc_sampled, alignment, size);
}

static TK_SLOWPATH void *memalign_sampled(size_t alignment, size_t size)
{
	TK_SLOW(size, real.memalign(alignment, size), arena_alloc(size, alignment));
}

TK_EXPORT void *memalign(size_t alignment, size_t size)
{
	TK_FAST(size, real.memalign(alignment, size), memalign_sampled, alignment, size);
}

static TK_SLOWPATH void *valloc_sampled(size_t size)
{
	TK_SLOW(size, real.valloc(size), arena_alloc(size, 4096));
}

TK_EXPORT void *valloc(size_t size)
{
	TK_FAST(size, real.valloc(size), valloc_sampled, size);
}

static TK_SLOWPATH void *pvalloc_sampled(size_t size)
{
	TK_SLOW(size, real.pvalloc(size), arena_alloc(size, 4096));
}

TK_EXPORT void *pvalloc(size_t size)
{
	TK_FAST(size, real.pvalloc(size), pvalloc_sampled, size);
}

TK_EXPORT size_t malloc_usable_size(void *ptr)
{
	if (!ptr)
		return 0;
	if (in_arena(ptr))
		return arena_size(ptr);
	return real.malloc_usable_size ? real.malloc_usable_size(ptr) : 0;
}

/*
 * C++ operator new and delete (the replaceable global ones). libstdc++'s new
 * calls malloc, which is interposed already; but libstdc++ keeps no frame
 * pointer, so a walk from inside malloc would skip the function that said
 * `new` and name its caller. Here new is served by the allocator's malloc
 * directly, sampled as malloc is, so the frame above the marker's is the
 * code that said `new`. Only a failure goes to the real operator new, for
 * its new-handler loop and std::bad_alloc (it calls malloc again: the retry
 * is counted once more, on a path that is failing anyway). Aligned new
 * (C++17 align_val_t) is left to libstdc++, which calls aligned_alloc.
 * A program whose own operator new does not call malloc (tcmalloc's) is
 * not seen.
 */
static void *new_fwd(size_t size, void *(*fail)(size_t))
{
	void *p = real.malloc(size ? size : 1);

	if (p || !fail)
		return p;
	return fail(size);
}

static void *new_nothrow_fwd(size_t size, const void *tag, void *(*fail)(size_t, const void *))
{
	void *p = real.malloc(size ? size : 1);

	if (p || !fail)
		return p;
	return fail(size, tag);
}

static TK_SLOWPATH void *new_sampled(size_t size)
{
	TK_SLOW(size, new_fwd(size, real.new_), arena_alloc(size ? size : 1, 16));
}

TK_EXPORT void *_Znwm(size_t size)
{
	TK_FAST(size, new_fwd(size, real.new_), new_sampled, size);
}

static TK_SLOWPATH void *new_array_sampled(size_t size)
{
	TK_SLOW(size, new_fwd(size, real.new_array), arena_alloc(size ? size : 1, 16));
}

TK_EXPORT void *_Znam(size_t size)
{
	TK_FAST(size, new_fwd(size, real.new_array), new_array_sampled, size);
}

static TK_SLOWPATH void *new_nothrow_sampled(size_t size, const void *tag)
{
	TK_SLOW(size, new_nothrow_fwd(size, tag, real.new_nothrow),
		arena_alloc(size ? size : 1, 16));
}

TK_EXPORT void *_ZnwmRKSt9nothrow_t(size_t size, const void *tag)
{
	TK_FAST(size, new_nothrow_fwd(size, tag, real.new_nothrow), new_nothrow_sampled, size,
		tag);
}

static TK_SLOWPATH void *new_array_nothrow_sampled(size_t size, const void *tag)
{
	TK_SLOW(size, new_nothrow_fwd(size, tag, real.new_array_nothrow),
		arena_alloc(size ? size : 1, 16));
}

TK_EXPORT void *_ZnamRKSt9nothrow_t(size_t size, const void *tag)
{
	TK_FAST(size, new_nothrow_fwd(size, tag, real.new_array_nothrow),
		new_array_nothrow_sampled, size, tag);
}

/* delete, delete[], and their sized forms: free (blocks from new above are malloc's) */
TK_EXPORT void _ZdlPv(void *ptr)
{
	if (likely(!filter_maybe(ptr)))
		return real.free(ptr);
	__attribute__((musttail)) return free_sampled(ptr);
}

TK_EXPORT void _ZdaPv(void *ptr)
{
	if (likely(!filter_maybe(ptr)))
		return real.free(ptr);
	__attribute__((musttail)) return free_sampled(ptr);
}

TK_EXPORT void _ZdlPvm(void *ptr, size_t size)
{
	if (likely(!filter_maybe(ptr)))
		return real.free(ptr);
	return free_sampled(ptr);
}

TK_EXPORT void _ZdaPvm(void *ptr, size_t size)
{
	if (likely(!filter_maybe(ptr)))
		return real.free(ptr);
	return free_sampled(ptr);
}
