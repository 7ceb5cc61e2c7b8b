// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * arm64 stacks synthesised from a cross-built program's CFI as readelf reads
 * it (not from the table under test), every return address PAC-signed, walked
 * by the user-space evaluator with the tables tk_unw_table__build makes: a leaf
 * under qsort's callback (libc's msort: blr, recursion) up to _start; SIGALRM
 * in that leaf, through the 6.12 vDSO's __kernel_rt_sigreturn; a sample in the
 * vDSO's __kernel_clock_gettime; a PIE stopped in a .plt stub. Skips without
 * the cross compiler or libc6:arm64 (tools/install-deps.sh --arm64).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "../lib/fixture.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"
#include "test_unwind_a64_vdso.h"
#include "test_unwind_a64.h"

/* ---- walks of synthesised stacks --------------------------------------------------- */

/*
 * A stack image made from a program's CFI as readelf reads it (not from the
 * table under test): frame i runs at pc[i]; its CFA, where it keeps x30 and
 * x29, from the readelf row in force there; the return addresses are signed
 * (a PAC in the high bits), as paciasp leaves them.
 */
#define STK 0x7ffc00000000ULL
#define STK_SZ 65536
#define PAC(a) ((a) ? (a) | 0x1500000000000000ULL | 0x0042000000000000ULL : 0)

static uint8_t stk[STK_SZ];

static int stk_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < STK || addr - STK > STK_SZ || len > STK_SZ - (addr - STK))
		return -EFAULT;
	memcpy(buf, stk + (addr - STK), len);
	return 0;
}

static void stk_put(uint64_t addr, uint64_t v)
{
	assert_true(addr >= STK && addr + 8 <= STK + STK_SZ);
	memcpy(stk + (addr - STK), &v, 8);
}

/* The readelf row in force at @addr (an FDE's last row at or below it), or NULL. */
static const struct orow *oracle_row(const struct oracle *o, uint64_t addr)
{
	const struct orow *found = NULL;
	size_t i, j;

	for (i = 0; i < o->nr_fdes; i++) {
		if (addr < o->fdes[i].start || addr >= o->fdes[i].end)
			continue;
		for (j = 0; j < o->fdes[i].nr; j++) {
			if (o->rows[o->fdes[i].row + j].loc <= addr)
				found = &o->rows[o->fdes[i].row + j];
		}
	}
	return found;
}

/* The address after the first call in function @fn to @callee ("blr": the first blr). */
static uint64_t call_site(const char *dis, const char *fn, const char *callee)
{
	char head[128], want[128], line[512];
	uint64_t at = 0, a;
	bool in = false;
	FILE *f = fopen(dis, "r");

	assert_non_null(f);
	snprintf(head, sizeof(head), " <%s>:", fn);
	snprintf(want, sizeof(want), "\tbl\t%%*x <%s>", callee);
	while (!at && fgets(line, sizeof(line), f)) {
		if (strstr(line, ">:"))
			in = !!strstr(line, head);
		if (!in || sscanf(line, " %" SCNx64 ":", &a) != 1)
			continue;
		if (!strcmp(callee, "blr") ? !!strstr(line, "\tblr\t") :
		    (strstr(line, "\tbl\t") && strstr(line, callee) &&
		     strstr(strchr(line, '<'), callee) == strchr(line, '<') + 1 &&
		     strchr(line, '<')[1 + strlen(callee)] == '>'))
			at = a + 4;
	}
	fclose(f);
	if (!at)
		fail_msg("%s: no call to %s in %s", dis, callee, fn);
	return at;
}

/*
 * Lay out frames running at @pc[0..n) (the leaf first; the object loaded
 * @load above its link addresses) from sp @sp, the outermost returning to
 * @ret_last; the leaf's registers into @regs. Returns the outermost's CFA.
 */
static uint64_t lay_out(const struct oracle *o, uint64_t load, const uint64_t *pc, int n,
			uint64_t sp, uint64_t ret_last, struct tk_unw_regs *regs)
{
	uint64_t cfa[16], x29[17], sps[16];
	long off[16], ra[16], fp[16];
	bool by_x29[16], ra_saved[16], fp_saved[16];
	char reg[8], c;
	int i;

	assert_true(n <= 16);
	for (i = 0; i < n; i++) {
		/* a caller's row is the one at its call: the return address - 4 */
		const struct orow *r = oracle_row(o, (i ? pc[i] - 4 : pc[i]) - load);

		if (!r || sscanf(r->cfa, "%7[a-z0-9]%ld%c", reg, &off[i], &c) != 2)
			fail_msg("%#" PRIx64 ": no CFA rule readelf can say", pc[i]);
		by_x29[i] = !strcmp(reg, "x29");
		ra_saved[i] = sscanf(r->ra, "c%ld", &ra[i]) == 1;
		fp_saved[i] = sscanf(r->x29, "c%ld", &fp[i]) == 1;
		/* saved but by the leaf (in LR) and _start (none) */
		assert_true(i == 0 || i == n - 1 || ra_saved[i]);
		sps[i] = sp;
		/* an x29 CFA: the frame spans 512 bytes, x29 where the CFA rule says */
		cfa[i] = by_x29[i] ? sp + 512 : sp + off[i];
		sp = cfa[i];
	}
	/* x29 from the outermost frame in */
	x29[n] = 0;
	for (i = n - 1; i >= 0; i--) {
		if (fp_saved[i])
			stk_put(cfa[i] + fp[i], x29[i + 1]);
		if (by_x29[i])
			x29[i] = cfa[i] - off[i];
		else
			x29[i] = fp_saved[i] ? 0x5a5a0000ULL + (uint64_t)i : x29[i + 1];
		assert_true(fp_saved[i] || !by_x29[i] || x29[i] == x29[i + 1]);
		if (ra_saved[i])
			stk_put(cfa[i] + ra[i], PAC(i + 1 < n ? pc[i + 1] : ret_last));
	}
	regs->ip = pc[0];
	regs->sp = sps[0];
	regs->bp = x29[0];
	regs->lr = ra_saved[0] ? 0x1111 : PAC(n > 1 ? pc[1] : ret_last);
	regs->ra_mask = UNW_A64_RA_MASK;
	return cfa[n - 1];
}

/* One mapping of @t at its link address (a static program). */
static void one_map(struct unw_proc *p, const struct tk_unw_table *t, uint64_t end)
{
	memset(p, 0, sizeof(*p));
	p->nr = 1;
	p->maps[0] = (struct unw_map){ .start = t->base, .end = end, .bias = t->base,
				       .row_count = t->nr };
}

/* The qsort chain of the static program: who calls whom, from the leaf's caller to _start. */
static const char *const qsort_chain[][2] = {
	{ "cmp", "leaf" },
	{ "msort_with_tmp.part.0", "blr" },	/* the callback */
	{ "msort_with_tmp.part.0", "msort_with_tmp.part.0" },
	{ "__qsort_r", "msort_with_tmp.part.0" },
	{ "sort", "qsort" },			/* qsort tail-calls __qsort_r */
	{ "main", "sort" },
	{ "__libc_start_call_main", "blr" },
	{ "__libc_start_main", "__libc_start_call_main" },
	{ "_start", "__libc_start_main" },
};
#define QSORT_N (1 + (int)(sizeof(qsort_chain) / sizeof(qsort_chain[0])))

/* The static program, its disassembly and CFI; @pc[0..QSORT_N): leaf + @leaf_off, its callers. */
static void static_prog(char *st, char *dis, struct oracle *o, uint64_t leaf_off, uint64_t *pc)
{
	char cmd[3 * PATH_MAX];
	int i;

	need("aarch64-linux-gnu-objdump", A64_LIBC);
	build_prog("prog-static", "-static", st, PATH_MAX);
	FX(fx_path(fx, "prog-static.dis", dis, PATH_MAX));
	if (access(dis, R_OK)) {
		snprintf(cmd, sizeof(cmd),
			 "aarch64-linux-gnu-objdump -d --no-show-raw-insn '%s' > '%s'", st, dis);
		run(cmd);
	}
	oracle_read(o, st);
	pc[0] = sym_addr(st, "leaf") + leaf_off;
	for (i = 1; i < QSORT_N; i++)
		pc[i] = call_site(dis, qsort_chain[i - 1][0], qsort_chain[i - 1][1]);
}

/* Walk from @regs and expect @want[0..n), then END (or @causes when not 0). */
static void expect_walk(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
			const struct tk_unw_regs *regs, const uint64_t *want, int n,
			uint32_t want_causes)
{
	uint32_t causes, frames[2];
	uint64_t ips[32];
	int i, got;

	got = tk_unw__walk(proc, rows, nr_rows, regs, stk_read, NULL, ips, 32, &causes, frames);
	for (i = 0; i < got && i < n; i++) {
		if (ips[i] != want[i])
			fail_msg("frame %d: %#" PRIx64 ", not %#" PRIx64, i, ips[i], want[i]);
	}
	assert_int_equal(got, n);
	assert_int_equal(causes, want_causes);
	assert_int_equal(frames[1], 0);		/* none by frame record */
}

/*
 * A leaf called by qsort's callback (through libc's msort: the callback by
 * blr, its recursion), from main, up to _start: every frame by a row, END.
 */
static void test_walk_qsort_chain(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	uint64_t pc[QSORT_N];
	struct unw_proc proc;
	struct oracle o;

	static_prog(st, dis, &o, 8, pc);
	memset(stk, 0, sizeof(stk));
	lay_out(&o, 0, pc, QSORT_N, STK + 0x100, 0, &regs);
	t = build(st);
	one_map(&proc, t, t->base + t->rows[t->nr - 1].pc);
	expect_walk(&proc, t->rows, t->nr, &regs, pc, QSORT_N, UNW_C_END);
	tk_unw_table__free(t);
	oracle_free(&o);
}

#define VDSO 0x7fff00000000ULL
#define SIGTRAMP (VDSO + 0x820)		/* 6.12's __kernel_rt_sigreturn */

/* @rows: the program's table, then the vDSO's (6.12's) mapped at VDSO; the entry of both. */
static struct unw_row *with_vdso(const struct tk_unw_table *t, struct unw_proc *proc,
				 size_t *nr)
{
	struct tk_unw_table *v = build_vdso(vdso612, vdso612_len);
	struct unw_row *rows = calloc(t->nr + v->nr, sizeof(*rows));

	assert_non_null(rows);
	memcpy(rows, t->rows, t->nr * sizeof(*rows));
	memcpy(rows + t->nr, v->rows, v->nr * sizeof(*rows));
	one_map(proc, t, t->base + t->rows[t->nr - 1].pc);
	proc->maps[1] = (struct unw_map){ .start = VDSO, .end = VDSO + 0x1000,
					  .bias = VDSO + v->base, .row_start = t->nr,
					  .row_count = v->nr };
	proc->nr = 2;
	*nr = t->nr + v->nr;
	tk_unw_table__free(v);
	return rows;
}

/*
 * SIGALRM in leaf, deep in the qsort chain: leaf <- handler <- the vDSO's
 * __kernel_rt_sigreturn <- (the rt_sigframe) leaf again, whose caller is in
 * the LR the signal frame saved <- cmp <- ... <- _start.
 */
static void test_walk_signal(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	struct tk_unw_regs regs, in;
	struct unw_row *rows;
	struct tk_unw_table *t;
	uint64_t pc[QSORT_N], want[QSORT_N + 3], h[2], frame;
	struct unw_proc proc;
	struct oracle o;
	size_t nr;
	int i;

	static_prog(st, dis, &o, 0x10, pc);
	memset(stk, 0, sizeof(stk));
	/* the interrupted stack high up, the handler's below it, the rt_sigframe between */
	lay_out(&o, 0, pc, QSORT_N, STK + 0x8000, 0, &in);
	h[0] = sym_addr(st, "leaf") + 8;
	h[1] = call_site(dis, "handler", "leaf");
	frame = lay_out(&o, 0, h, 2, STK + 0x100, SIGTRAMP, &regs);
	assert_true(frame + UNW_A64_SC_PC + 8 < STK + 0x8000);
	stk_put(frame + UNW_A64_SC_PC, in.ip);
	stk_put(frame + UNW_A64_SC_SP, in.sp);
	stk_put(frame + UNW_A64_SC_X29, in.bp);
	stk_put(frame + UNW_A64_SC_LR, in.lr);
	t = build(st);
	rows = with_vdso(t, &proc, &nr);
	want[0] = h[0];
	want[1] = h[1];
	want[2] = SIGTRAMP;
	for (i = 0; i < QSORT_N; i++)
		want[3 + i] = pc[i];
	expect_walk(&proc, rows, nr, &regs, want, QSORT_N + 3, UNW_C_END);
	free(rows);
	tk_unw_table__free(t);
	oracle_free(&o);
}

/* A sample in the vDSO's __kernel_clock_gettime (no CFI on 6.12): its caller from LR. */
static void test_walk_vdso_leaf(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	uint64_t pc[QSORT_N], want[QSORT_N];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	struct unw_row *rows;
	struct unw_proc proc;
	struct oracle o;
	size_t nr;
	int i;

	static_prog(st, dis, &o, 8, pc);
	memset(stk, 0, sizeof(stk));
	/* cmp called the vDSO instead of leaf: cmp's frame and up, the vDSO's sp the same */
	lay_out(&o, 0, pc + 1, QSORT_N - 1, STK + 0x100, 0, &regs);
	regs.ip = VDSO + 0x340 + 0x40;
	regs.lr = PAC(pc[1]);
	t = build(st);
	rows = with_vdso(t, &proc, &nr);
	want[0] = regs.ip;
	for (i = 1; i < QSORT_N; i++)
		want[i] = pc[i];
	expect_walk(&proc, rows, nr, &regs, want, QSORT_N, UNW_C_END);
	free(rows);
	tk_unw_table__free(t);
	oracle_free(&o);
}

/*
 * A PIE loaded at 0xaaaa00000000, stopped in a .plt stub (puts@plt) called by
 * big (8 KiB of locals: x30 against sp) from main: the stub's caller from LR.
 */
static void test_walk_plt(void **state)
{
	const uint64_t load = 0xaaaa00000000ULL;
	char pie[PATH_MAX], dis[PATH_MAX], cmd[3 * PATH_MAX];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	struct unw_proc proc;
	uint64_t pc[3], plt, size;
	struct oracle o;

	need("aarch64-linux-gnu-objdump", A64_LIBC);
	build_prog("prog-pie", "-pie", pie, sizeof(pie));
	FX(fx_path(fx, "prog-pie.dis", dis, sizeof(dis)));
	snprintf(cmd, sizeof(cmd), "aarch64-linux-gnu-objdump -d --no-show-raw-insn '%s' > '%s'",
		 pie, dis);
	run(cmd);
	oracle_read(&o, pie);
	assert_true(section(pie, ".plt", &plt, &size));
	pc[1] = load + call_site(dis, "big", "puts@plt");
	pc[2] = load + call_site(dis, "main", "big");
	/* the stub puts@plt calls, 8 bytes in (after adrp, ldr) */
	{
		FILE *f = fopen(dis, "r");
		char line[512];
		uint64_t a = 0;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f) && !strstr(line, " <puts@plt>:"))
			;
		assert_true(sscanf(line, "%" SCNx64, &a) == 1 && a >= plt && a < plt + size);
		fclose(f);
		pc[0] = load + a + 8;
	}
	memset(stk, 0, sizeof(stk));
	/* the stub has no readelf row: lay out big and main, the stub's sp is big's */
	lay_out(&o, load, pc + 1, 2, STK + 0x100, 0, &regs);
	regs.lr = PAC(pc[1]);
	regs.ip = pc[0];
	t = build(pie);
	memset(&proc, 0, sizeof(proc));
	proc.nr = 1;
	proc.maps[0] = (struct unw_map){ .start = load + plt, .end = load + 0x10000,
					 .bias = load + t->base, .row_count = t->nr };
	/* main's return address: 0, the end of the walk */
	expect_walk(&proc, t->rows, t->nr, &regs, pc, 3, 0);
	tk_unw_table__free(t);
	oracle_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_qsort_chain),
		cmocka_unit_test(test_walk_signal),
		cmocka_unit_test(test_walk_vdso_leaf),
		cmocka_unit_test(test_walk_plt),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
