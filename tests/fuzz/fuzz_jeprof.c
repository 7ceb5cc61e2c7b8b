// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for jemalloc heap profile dumps: the parser, every
 * accessor, the sampling adjustment, and the conversion into a profile (the
 * dump's MAPPED_LIBRARIES symbolized for a pid that does not exist) written
 * as pprof. Invariants the header promises abort when broken.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/jeprof.h"
#include "profile/profile.h"
#include "sym/symbolize.h"

#define GONE_PID 99999999u

static void check_counts(const struct tk_jeprof_counts *c)
{
	if (c->cur_objs > INT64_MAX || c->cur_bytes > INT64_MAX || c->accum_objs > INT64_MAX ||
	    c->accum_bytes > INT64_MAX || (c->cur_objs && !c->cur_bytes) ||
	    (c->accum_objs && !c->accum_bytes))
		abort();
}

static void convert(const struct tk_jeprof *d)
{
	struct tk_symbolizer *s;
	struct tk_profile *p;
	size_t len;
	char *buf;
	FILE *f;
	int err;

	if (tk_symbolizer__new(NULL, &s))
		return;
	p = tk_profile__new_heap("jemalloc");
	if (p) {
		err = tk_jeprof__to_profile(d, s, GONE_PID, p);
		if (err && err != -ERANGE && err != -ENOMEM)
			abort();
		if (p->nr_samples > tk_jeprof__nr_stacks(d))
			abort();
		f = open_memstream(&buf, &len);
		if (f) {
			if (!err && tk_profile__write_pprof(p, f))
				abort();
			fclose(f);
			free(buf);
		}
		tk_profile__free(p);
	}
	tk_symbolizer__free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_jeprof_estimate est;
	struct tk_jeprof *d = NULL;
	size_t i, j;
	int err;

	err = tk_jeprof__parse((const char *)data, size, &d);
	if (err) {
		if (d || (err != -EINVAL && err != -ERANGE && err != -E2BIG))
			abort();
		return 0;
	}
	check_counts(tk_jeprof__total(d));
	for (i = 0; i < tk_jeprof__nr_stacks(d); i++) {
		const struct tk_jeprof_stack *st = tk_jeprof__stack(d, i);
		uint64_t sum = 0;

		if (st->nr_addrs > TK_JEPROF_MAX_FRAMES)
			abort();
		for (j = 0; j < st->nr_addrs; j++)
			sum += st->addrs[j];	/* every address readable */
		check_counts(&st->counts);
		err = tk_jeprof__estimate(d, &st->counts, &est);
		if (err && err != -ERANGE)
			abort();
		if (!err && (est.inuse_objs < 0 || est.inuse_bytes < 0 || est.alloc_objs < 0 ||
			     est.alloc_bytes < 0 ||
			     (uint64_t)est.inuse_bytes < st->counts.cur_bytes ||
			     (uint64_t)est.alloc_bytes < st->counts.accum_bytes))
			abort();
		(void)sum;
	}
	for (i = 0; i < tk_jeprof__nr_threads(d); i++)
		if (strlen(tk_jeprof__thread(d, i)->name) >= TK_JEPROF_MAX_NAME)
			abort();
	if (tk_jeprof__nr_mappings(d) > TK_JEPROF_MAX_MAPPINGS)
		abort();
	for (i = 0; i < tk_jeprof__nr_mappings(d); i++) {
		const struct tk_jeprof_mapping *m = tk_jeprof__mapping(d, i);

		if (m->start >= m->end || !m->path)
			abort();
	}
	convert(d);
	tk_jeprof__free(d);
	return 0;
}
