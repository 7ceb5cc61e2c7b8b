// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the /proc text parsers of tracekit stacks
 * (user/stacks/stacks_parse.c): a thread's syscall, stat (its comm is the
 * process's to choose), stack, schedstat and status NSpid files, and --state.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/stacks_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stk_kframe kf[STK_MAX_KFRAMES];
	uint64_t args[6], sp, pc, v;
	char *s = strndup((const char *)data, size), comm[16], st;
	uint32_t mask, flags;
	int64_t nr;
	int n;

	if (!s)
		return 0;
	if (!stk_parse_syscall(s, &nr, args, &sp, &pc) && (nr < -2 || nr > 4095))
		abort();
	memset(comm, 'x', sizeof(comm));
	if (!stk_parse_stat(s, comm, &st, &flags) && strnlen(comm, sizeof(comm)) >= sizeof(comm))
		abort();
	n = stk_parse_kstack(s, kf, STK_MAX_KFRAMES);
	if (n > STK_MAX_KFRAMES)
		abort();
	for (int i = 0; i < n; i++)
		if (!kf[i].name || !kf[i].name[0] || strlen(kf[i].name) > 127)
			abort();
	if (n > 0)
		stk_kframes_free(kf, n);
	stk_parse_schedstat(s, &v);
	stk_parse_nspid(s);
	stk_parse_ctxt_switches(s, &v);
	if (!tk_stacks__parse_states(s, &mask) && !mask)
		abort();
	free(s);
	return 0;
}
