/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtkalloc.so: its set-up, once: the next definitions resolved with
 * dlsym(RTLD_NEXT) (valloc and pvalloc made to match the allocator), the
 * environment read, the fork handlers installed.
 *
 * Part of libtkalloc.so's one translation unit: preload/tkalloc.c includes
 * it once, after the macros and the state it uses; it is no header for
 * anything else. One unit, so that the fast paths inline what they read and
 * jump straight to their slow paths. Its definitions stay static, not
 * inline: inline would change the compiler's inlining hints, and so the code.
 */
#ifndef __TK_ALLOC_SETUP_H
#define __TK_ALLOC_SETUP_H

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
	const char *t = getenv(TK_ENV_ALLOC_TEST), *p = getenv(TK_ENV_SAMPLE_PROBED);

	if (__atomic_load_n(&sampler_off, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&sample_mean, parse_bytes(getenv(TK_ENV_SAMPLE_BYTES)), __ATOMIC_RELAXED);
	while_probed = p && !strcmp(p, "1");
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

#endif /* __TK_ALLOC_SETUP_H */
