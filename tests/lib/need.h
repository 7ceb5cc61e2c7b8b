/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Skips that are not allowed to hide failures. A test that needs something
 * tools/install-deps.sh installs (go, jemalloc, gcc, objcopy, redis, the
 * workloads `make` builds) skips when it is missing on a developer's machine,
 * and fails under CI (CI=true or 1), where install-deps ran and a missing
 * dependency is a broken setup. What a machine truly cannot do (one NUMA node,
 * no cgroup v2) stays a skip, with its reason, through cmocka's skip().
 * Include after <cmocka.h>.
 */
#ifndef __TK_TEST_NEED_H
#define __TK_TEST_NEED_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool tk_test_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

/* @cond or: a skip here, a failure under CI; the rest is the printf-style reason. */
#define NEED_DEP(cond, ...)                                                               \
	do {                                                                              \
		if (!(cond)) {                                                            \
			print_message("missing: " __VA_ARGS__);                          \
			if (tk_test_in_ci())                                              \
				fail_msg("under CI a missing dependency is a failure "    \
					 "(tools/install-deps.sh installs it)");          \
			skip();                                                           \
		}                                                                         \
	} while (0)

#endif /* __TK_TEST_NEED_H */
