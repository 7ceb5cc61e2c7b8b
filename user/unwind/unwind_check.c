// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The loader of bpf/unwind_check.bpf.c: the BPF evaluator of unwind rows run
 * on demand (BPF_PROG_TEST_RUN) over a stack image in this process's memory,
 * with rows and a process entry user space chose. The capability snapshot
 * asks it whether in-kernel unwinding works here on a stack whose frames it
 * knows; the tests give it the images they give tk_unw__walk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/unwind_check.h"
#include "core/kfeat.h"
#include "unwind/unwind_bpf.h"
#include "unwind_check.skel.h"

struct tk_unw_check {
	struct unwind_check_bpf *skel;
	struct tk_unw_bpf *unw;
	struct unw_row *rows;
	size_t cap;
	bool missed;		/* the last walk asked for a capture again */
};

int tk_unw_check__open(size_t rows, struct tk_unw_check **out, char *why, size_t why_sz)
{
	struct tk_unw_bpf_opts uo = {
		.mode = TK_UNWIND_CFI,
		.rows = rows,
		.procs = 4,
		.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
	};
	struct tk_unw_check *c;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->skel = unwind_check_bpf__open();
	if (!c->skel) {
		err = -errno;
		snprintf(why, why_sz, "cannot open the unwinder: %s", strerror(-err));
		goto fail;
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(c->skel);

		err = tk_unw_bpf__prepare(&v, &uo, why, why_sz);
		if (err)
			goto fail;
		/* the entries' map as this kernel allows it (preallocated before 6.1) */
		tk_kfeat__fit_maps(c->skel->obj, NULL, 0);
		err = unwind_check_bpf__load(c->skel);
		if (err) {
			snprintf(why, why_sz, "the kernel refused the unwinder: %s",
				 strerror(-err));
			goto fail;
		}
		err = tk_unw_bpf__open(&v, &c->unw);
		/* every row the caller may write, mapped now */
		if (!err)
			err = tk_unw_bpf__reserve(c->unw, rows);
		if (err) {
			snprintf(why, why_sz, "cannot map the rows: %s", strerror(-err));
			goto fail;
		}
	}
	c->rows = tk_unw_bpf__rows(c->unw, &c->cap);
	*out = c;
	return 0;
fail:
	tk_unw_check__free(c);
	return err;
}

void tk_unw_check__free(struct tk_unw_check *c)
{
	if (!c)
		return;
	tk_unw_bpf__free(c->unw);
	unwind_check_bpf__destroy(c->skel);
	free(c);
}

struct unw_row *tk_unw_check__rows(struct tk_unw_check *c, size_t *cap)
{
	*cap = c->cap;
	return c->rows;
}

int tk_unw_check__walk(struct tk_unw_check *c, const struct unw_proc *proc,
		       const struct tk_unw_regs *regs, uint32_t skip, uint64_t *ips, int max,
		       uint32_t *causes, uint32_t frames[2])
{
	/* an arm64 image: its LR, and that it is one (regs->ra_mask, tk_unw_regs) */
	__u64 args[6] = { regs->ip, regs->sp, regs->bp, skip, regs->lr, regs->ra_mask != 0 };
	LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = args, .ctx_size_in = sizeof(args));
	struct unw_check_out o;
	__u32 key = getpid(), zero = 0;
	int fd = bpf_map__fd(c->skel->maps.unw_procs), err, n;

	if (proc)
		err = bpf_map_update_elem(fd, &key, proc, BPF_ANY);
	else
		err = bpf_map_delete_elem(fd, &key) && errno != ENOENT ? -errno : 0;
	if (err)
		return -errno;
	err = bpf_prog_test_run_opts(bpf_program__fd(c->skel->progs.unwind_check), &topts);
	if (err)
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.check_out), &zero, &o))
		return -errno;
	n = o.nr > (uint32_t)max ? max : (int)o.nr;
	memcpy(ips, o.ips, n * sizeof(*ips));
	c->missed = o.miss;
	*causes = o.causes;
	if (frames) {
		frames[0] = o.cfi_frames;
		frames[1] = o.fp_frames;
	}
	return n;
}

/*
 * A stack whose frames are known, in this process's memory: three frames by
 * rows (an rsp rule, an rbp rule with rbp saved, the PLT rule), one by the
 * frame pointer (an object without CFI), and the outermost frame.
 */
bool tk_unw_check__missed(const struct tk_unw_check *c)
{
	return c->missed;
}

/*
 * Where the selftest lays its table out: at the start, across the first two
 * chunks' boundary (the row search then picks the chunk), and inside the
 * second chunk alone.
 */
static const uint32_t selftest_at[] = { 0, UNW_CHUNK_ROWS - 2, UNW_CHUNK_ROWS + 16 };

int tk_unw_check__selftest(char *msg, size_t msg_sz)
{
	static __u64 stack[32];
	const uint64_t base = 0x10000;
	struct unw_row rows[] = {
		{ .pc = 0x000, .cfa_off = 16, .kind = UNW_ROW_SP },		/* f0 */
		{ .pc = 0x100, .cfa_off = 16, .rbp_off = -2, .kind = UNW_ROW_FP }, /* f1 */
		{ .pc = 0x200, .cfa_off = 11, .kind = UNW_ROW_PLT },		/* f2 */
		{ .pc = 0x300, .kind = UNW_ROW_END },				/* _start */
	};
	struct unw_proc *p = calloc(1, sizeof(*p));
	uint64_t sp = (uintptr_t)&stack[0], ips[8], want[5];
	struct tk_unw_regs regs = { 0 };
	struct tk_unw_check *c = NULL;
	uint32_t causes = 0, frames[2], at;
	struct unw_row *r;
	size_t cap, k;
	int n, err, i;

	if (!p)
		return -ENOMEM;
	err = tk_unw_check__open(2 * UNW_CHUNK_ROWS, &c, msg, msg_sz);
	if (err)
		goto out;
	r = tk_unw_check__rows(c, &cap);
	p->nr = 2;
	p->maps[0] = (struct unw_map){ .start = base, .end = base + 0x400, .bias = base,
				       .row_count = 4 };
	p->maps[1] = (struct unw_map){ .start = 0x20000, .end = 0x21000,
				       .flags = UNW_MAP_NO_CFI };
	/* f0 at 0x10010: ra (into f1) at sp + 8; CFA = sp + 16 */
	want[0] = base + 0x10;
	stack[1] = want[1] = base + 0x110;
	/* f1 (rbp rule): rbp = &stack[4]; CFA = rbp + 16; ra at CFA - 8; rbp at CFA - 16 */
	stack[5] = want[2] = base + 0x20b;	/* f2 at rip & 15 == 11: CFA = sp + 16 */
	stack[4] = (uintptr_t)&stack[12];	/* the caller's rbp */
	/* f2: sp = &stack[6]; CFA = sp + 8 + 8; ra at &stack[7] */
	stack[7] = want[3] = 0x20010;		/* into the object without CFI */
	/* by rbp = &stack[12]: ra at stack[13], next rbp at stack[12] */
	stack[13] = want[4] = base + 0x301;	/* _start: the end */
	stack[12] = 0;
	for (k = 0; k < sizeof(selftest_at) / sizeof(selftest_at[0]); k++) {
		at = selftest_at[k];
		if (at + 4 > cap) {
			snprintf(msg, msg_sz, "the unwinder mapped %zu rows, not %u", cap, at + 4);
			err = -ENOSPC;
			goto out;
		}
		/* the table of the walk before, made wrong: only this one can be read right */
		if (k)
			memset(r + selftest_at[k - 1], 0, sizeof(rows));
		memcpy(r + at, rows, sizeof(rows));
		p->maps[0].row_start = at;
		regs.ip = want[0];
		regs.sp = sp;
		regs.bp = (uintptr_t)&stack[4];
		n = tk_unw_check__walk(c, p, &regs, 0, ips, 8, &causes, frames);
		if (n < 0) {
			err = n;
			snprintf(msg, msg_sz, "cannot run the unwinder (BPF_PROG_TEST_RUN): %s",
				 strerror(-err));
			goto out;
		}
		for (i = 0; i < n && i < 5 && ips[i] == want[i]; i++)
			;
		if (n != 5 || i != 5 || !(causes & UNW_C_END) || frames[0] != 3 ||
		    frames[1] != 1) {
			snprintf(msg, msg_sz, "the unwinder walked a known stack wrong (rows at %u): "
				 "%d frames (want 5), first wrong %d, causes 0x%x", at, n, i,
				 causes);
			err = -EPROTO;
			goto out;
		}
	}
	err = 0;
out:
	tk_unw_check__free(c);
	free(p);
	return err;
}
