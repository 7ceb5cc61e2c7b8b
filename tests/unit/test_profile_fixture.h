/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A CPU profile built by hand, shared by the profile writer tests, with
 * stacks whose numbers every output must show:
 *
 *   app;main;caller;hot                75  (70 from tid 100 and 5 from tid 101)
 *   app;main;caller;cold               25
 *   app;main;libx.so+0x1234;entry_SYSCALL_64;do_syscall_64;ksys_write  4  (kernel)
 *   app;main;libx.so+0x3000            2   (a location without a function)
 *
 * "base" has only the first two (100 samples); "full" all four (106).
 */
#ifndef __TEST_PROFILE_FIXTURE_H
#define __TEST_PROFILE_FIXTURE_H

#include "profile/profile.h"

#define PF_PID 4242
#define PF_FREQ 99
#define PF_PERIOD (1000000000LL / PF_FREQ)
#define PF_APP_START 0x400000ULL
#define PF_LIBX_START 0x7f0000000000ULL
#define PF_LIBX_OFFSET 0x1000ULL
#define PF_KADDR 0xffffffff81000000ULL

struct pf_ids {
	uint64_t m_app, m_libx;
	uint64_t f_main, f_caller, f_hot, f_cold, f_libx, f_entry, f_do_syscall, f_write;
	uint64_t l_main, l_caller, l_hot, l_cold, l_libx, l_libx_nofunc;
	uint64_t l_entry, l_do_syscall, l_write;
};

static inline int pf_sample(struct tk_profile *p, const uint64_t *locs, uint32_t nr,
			    int64_t count, uint32_t tid)
{
	int64_t values[2] = { count, count * PF_PERIOD };

	return tk_profile__add_sample(p, locs, nr, values, PF_PID, tid, "app");
}

/* NULL when something fails (the tests then fail on it). */
static inline struct tk_profile *pf_build(bool full, struct pf_ids *ids)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", PF_FREQ);
	struct pf_ids i = {};
	int err = 0;

	if (!p)
		return NULL;
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 1000000000LL;
	i.m_app = tk_profile__mapping(p, PF_APP_START, 0x500000, 0, "/usr/bin/app",
				      "0123456789abcdef");
	i.m_libx = tk_profile__mapping(p, PF_LIBX_START, PF_LIBX_START + 0x10000, PF_LIBX_OFFSET,
				       "/usr/lib/libx.so", NULL);
	i.f_main = tk_profile__function(p, "main", "/src/app.c");
	i.f_caller = tk_profile__function(p, "caller", "/src/app.c");
	i.f_hot = tk_profile__function(p, "hot", "/src/app.c");
	i.f_cold = tk_profile__function(p, "cold", "/src/app.c");
	i.l_main = tk_profile__location(p, i.m_app, 0x401010, i.f_main, false);
	i.l_caller = tk_profile__location(p, i.m_app, 0x401020, i.f_caller, false);
	i.l_hot = tk_profile__location(p, i.m_app, 0x401030, i.f_hot, false);
	i.l_cold = tk_profile__location(p, i.m_app, 0x401040, i.f_cold, false);
	{
		uint64_t hot[] = { i.l_hot, i.l_caller, i.l_main };
		uint64_t cold[] = { i.l_cold, i.l_caller, i.l_main };

		err = err ?: pf_sample(p, hot, 3, 70, 100);
		err = err ?: pf_sample(p, cold, 3, 25, 100);
		err = err ?: pf_sample(p, hot, 3, 5, 101);
	}
	if (full) {
		i.f_libx = tk_profile__function(p, "libx.so+0x1234", NULL);
		i.f_entry = tk_profile__function(p, "entry_SYSCALL_64", NULL);
		i.f_do_syscall = tk_profile__function(p, "do_syscall_64", NULL);
		i.f_write = tk_profile__function(p, "ksys_write", NULL);
		i.l_libx = tk_profile__location(p, i.m_libx, PF_LIBX_START + 0x234, i.f_libx,
						false);
		i.l_libx_nofunc = tk_profile__location(p, i.m_libx, PF_LIBX_START + 0x2000, 0,
						       false);
		i.l_entry = tk_profile__location(p, 0, PF_KADDR + 0x100, i.f_entry, true);
		i.l_do_syscall = tk_profile__location(p, 0, PF_KADDR + 0x2000, i.f_do_syscall,
						      true);
		i.l_write = tk_profile__location(p, 0, PF_KADDR + 0x30000, i.f_write, true);
		{
			uint64_t sys[] = { i.l_write, i.l_do_syscall, i.l_entry, i.l_libx,
					   i.l_main };
			uint64_t nofunc[] = { i.l_libx_nofunc, i.l_main };

			err = err ?: pf_sample(p, sys, 5, 4, 100);
			err = err ?: pf_sample(p, nofunc, 2, 2, 100);
		}
		tk_profile__set_loss(p, "stack_map_full", 3);
		tk_profile__set_loss(p, "truncated_stacks", 0);
		err = err ?: tk_profile__add_comment(p, "command: %s", "app --run");
	}
	if (err || !i.l_main || !i.l_cold || (full && (!i.l_write || !i.l_libx_nofunc))) {
		tk_profile__free(p);
		return NULL;
	}
	if (ids)
		*ids = i;
	return p;
}

#endif /* __TEST_PROFILE_FIXTURE_H */
