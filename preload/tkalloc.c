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
 * is sampled. With TK_ALLOC_WHILE_PROBED=1 sampling ends for good at the
 * first sample after the last uprobe left the alloc marker (markers_probed).
 * The library never prints, never aborts, and leaves errno as the allocator
 * set it.
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
static bool while_probed;		/* TK_ENV_SAMPLE_PROBED: sample only while traced */
static bool sampler_off;		/* the tracer left: off for good */

/* ---- per thread ----------------------------------------------------------- */

struct tk_thread {
	uint64_t left;			/* bytes until the next sample; 0: draw first */
	uint64_t rng;			/* splitmix64 state; 0: not seeded */
};
static __thread struct tk_thread tk_thr __attribute__((tls_model("initial-exec")));

/*
 * The blocks it must know, the markers, the set-up: in headers of their own,
 * included here, after the state they use, so that this stays one
 * translation unit (the fast paths below inline the filter's test).
 */
#include "tkalloc_blocks.h"
#include "tkalloc_markers.h"
#include "tkalloc_setup.h"

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

/*
 * Whether a tracer still listens: a uprobe on the alloc marker is a
 * breakpoint the kernel wrote into this process's copy of the page, so the
 * marker's first byte reads as int3 (0xcc) while one is attached, and as its
 * own push %rbp (0x55) once the last one went: tracekit ended, was killed,
 * or its session was freed. One load, at each sample only.
 */
static bool markers_probed(void)
{
	return *(volatile const uint8_t *)(uintptr_t)tk_marker_alloc_local != 0x55;
}

/*
 * Nobody takes the samples any more: sample nothing from now on. Each
 * thread's next slow path sets its countdown out of reach, and from then its
 * allocations cost one compare more than the allocator's; a free, one
 * byte read (a block sampled before still reaches its marker, now a no-op).
 */
static TK_COLD void turn_off(void)
{
	__atomic_store_n(&sampler_off, true, __ATOMIC_RELAXED);
	__atomic_store_n(&sample_mean, 0, __ATOMIC_RELAXED);
	if (test_log_on) {
		tk_alloc_test_log.sample_bytes = 0;
		__atomic_store_n(&tk_alloc_test_log.off, 1, __ATOMIC_RELEASE);
	}
}

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
	if (mean && while_probed && !markers_probed()) {
		turn_off();
		mean = 0;
	}
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
