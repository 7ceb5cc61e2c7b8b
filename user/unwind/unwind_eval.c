// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The user-space evaluator of unwind rows (bpf/unwind.h), for the perf_event
 * fallback: it walks a copied stack image with the rows of the process's
 * mappings, frame by frame, exactly as the BPF evaluator (bpf/unwind.bpf.h)
 * walks live memory, so both give the same frames and the same causes for
 * the same stack. A frame the rows do not explain is taken by the frame
 * pointer, and the reason is counted; see enum unw_cause.
 */
#include <stdbool.h>
#include <linux/types.h>

#include "bpf/unwind_py.h"
#include "unwind/unwind.h"

enum step {
	STEP_ROW,		/* the frame was found by a row */
	STEP_FP,		/* take it by the frame pointer */
	STEP_STOP,		/* the walk ends here */
};

struct walk {
	uint64_t ip, sp, bp;
	uint64_t lr;		/* arm64: x30, while exact (the leaf, after a signal frame) */
	uint64_t ra_mask;	/* arm64: strips a return address's PAC; x86: ~0 */
	uint32_t causes;
	bool interrupted;	/* ip is where a signal interrupted the code, not a return address */
	bool exact;		/* the frame is the leaf or a signal's: ip and lr are its own */
	bool sp_lost;		/* arm64: a frame record gave sp (a lower bound only) */
	tk_unw_read_fn read;
	void *ctx;
	struct tk_unw_tramp *tramp;	/* NULL: no trampolines to know */
};

static bool read_u64(struct walk *w, uint64_t addr, uint64_t *v)
{
	if (w->read(w->ctx, addr, v, sizeof(*v)) == 0)
		return true;
	w->causes |= UNW_C_READ_FAULT;
	return false;
}

/*
 * The two searches are the BPF evaluator's, step for step (bounded the same
 * way), so that even a corrupt process entry or table gives the same answer.
 */

/* The mapping of @p holding @addr, or NULL. */
static const struct unw_map *find_map(const struct unw_proc *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->nr < UNW_MAX_MAPS ? p->nr : UNW_MAX_MAPS, mid, i;
	const struct unw_map *m;

	for (i = 0; i < UNW_MAP_SEARCH && lo < hi; i++) {
		mid = (lo + hi) / 2;
		m = &p->maps[mid];
		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/*
 * The last row of @m's table at or below @look, or NULL; also NULL when
 * @look is below the bias or more than 4 GiB past it (row pcs are 32 bits),
 * or when the table does not lie inside the @nr_rows rows.
 */
static const struct unw_row *find_row(const struct unw_row *rows, size_t nr_rows,
				      const struct unw_map *m, uint64_t look)
{
	uint64_t rel = look - m->bias;
	uint32_t lo = m->row_start, hi = m->row_start + m->row_count, mid, i;
	const struct unw_row *found = NULL;

	if (look < m->bias || rel > UINT32_MAX || (uint64_t)m->row_start + m->row_count > nr_rows)
		return NULL;
	for (i = 0; i < UNW_ROW_SEARCH && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= rel) {
			found = &rows[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return found;
}

/* The signal trampoline: the interrupted registers are in the ucontext at rsp. */
static enum step signal_frame(struct walk *w)
{
	uint64_t ip, sp, bp;

	if (!read_u64(w, w->sp + UNW_SC_RIP, &ip) || !read_u64(w, w->sp + UNW_SC_RSP, &sp) ||
	    !read_u64(w, w->sp + UNW_SC_RBP, &bp))
		return STEP_STOP;
	w->ip = ip;
	w->sp = sp;
	w->bp = bp;
	w->interrupted = true;
	return STEP_ROW;
}

/* arm64's signal trampoline: x29, LR, sp and pc from the rt_sigframe at sp. */
static enum step a64_signal_frame(struct walk *w)
{
	uint64_t ip, sp, bp, lr;

	if (!read_u64(w, w->sp + UNW_A64_SC_PC, &ip) || !read_u64(w, w->sp + UNW_A64_SC_SP, &sp) ||
	    !read_u64(w, w->sp + UNW_A64_SC_X29, &bp) || !read_u64(w, w->sp + UNW_A64_SC_LR, &lr))
		return STEP_STOP;
	w->ip = ip & w->ra_mask;
	w->sp = sp;
	w->bp = bp;
	w->lr = lr;
	w->interrupted = true;
	return STEP_ROW;
}

/* One arm64 frame by row @r (kind UNW_ROW_A64 | bits, bpf/unwind.h). */
static enum step a64_row_step(struct walk *w, const struct unw_row *r)
{
	uint64_t base, cfa, slot, ra, bp = w->bp;

	if (r->kind == UNW_ROW_A64_SIGNAL)
		return a64_signal_frame(w);
	/*
	 * After a frame record, sp is only a lower bound; LR is the leaf's (or the
	 * interrupted frame's) own, nobody else's: either way the row does not apply.
	 */
	if ((r->kind & UNW_A64_SIGNAL) || (!(r->kind & UNW_A64_FP) && w->sp_lost) ||
	    ((r->kind & UNW_A64_RA_LR) && !w->exact)) {
		w->causes |= UNW_C_UNSUPPORTED;
		return STEP_FP;
	}
	base = r->kind & UNW_A64_FP ? w->bp : w->sp;
	cfa = base + r->cfa_off;
	/* the caller's frame lies above this one (a leaf's CFA may be sp itself) */
	if (cfa < w->sp || (cfa == w->sp && !(r->kind & UNW_A64_RA_LR))) {
		w->causes |= UNW_C_BAD_FRAME;
		return STEP_STOP;
	}
	if (r->kind & UNW_A64_RA_LR) {
		ra = w->lr;
		slot = 0;
	} else {
		slot = r->ra_off < 0 ? cfa + 8 * (int64_t)r->ra_off : base + 8 * (int64_t)r->ra_off;
		if (!read_u64(w, slot, &ra))
			return STEP_STOP;
	}
	if (r->kind & UNW_A64_X29_LOST)
		bp = 0;
	else if ((r->kind & UNW_A64_X29_PAIR) && !(r->kind & UNW_A64_RA_LR) &&
		 !read_u64(w, slot - 8, &bp))
		return STEP_STOP;
	w->sp = cfa;
	w->bp = bp;
	w->ip = ra & w->ra_mask;
	w->sp_lost = false;
	return STEP_ROW;
}

/* One frame by row @r (NULL: none covers the address). */
static enum step row_step(struct walk *w, const struct unw_row *r)
{
	uint64_t cfa, ra, bp = w->bp;

	switch (r ? r->kind : UNW_ROW_INVALID) {
	case UNW_ROW_SP:
		cfa = w->sp + r->cfa_off;
		break;
	case UNW_ROW_FP:
		cfa = w->bp + r->cfa_off;
		break;
	case UNW_ROW_DEREF_FP:
	case UNW_ROW_DRAP:
		if (!read_u64(w, w->bp + r->cfa_off, &cfa))
			return STEP_STOP;
		break;
	case UNW_ROW_PLT:
		/* the frame's own rip, not @look: a PLT stub calls nothing, it is a leaf */
		cfa = w->sp + 8 + ((int64_t)(w->ip & 15) >= r->cfa_off ? 8 : 0);
		break;
	case UNW_ROW_SIGNAL:
		return signal_frame(w);
	case UNW_ROW_END:
		w->causes |= UNW_C_END;
		return STEP_STOP;
	case UNW_ROW_INVALID:
		w->causes |= UNW_C_NO_ROW;
		return STEP_FP;
	default:		/* UNW_ROW_UNSUPPORTED, or a kind this evaluator does not know */
		/* an arm64 row, in an arm64 walk only (an x86 walk's pc in an AArch64 object) */
		if ((r->kind & UNW_ROW_A64) && w->ra_mask != ~0ULL)
			return a64_row_step(w, r);
		w->causes |= UNW_C_UNSUPPORTED;
		return STEP_FP;
	}
	/* the caller's frame lies above this one; anything else is garbage, and could loop */
	if (cfa <= w->sp) {
		w->causes |= UNW_C_BAD_FRAME;
		return STEP_STOP;
	}
	if (!read_u64(w, cfa - 8, &ra))
		return STEP_STOP;
	/*
	 * rbp saved below the stack pointer: an epilogue has popped it already
	 * (the CFI of many epilogues does not say so), and rbp holds it.
	 */
	if (r->kind == UNW_ROW_DRAP) {
		/* gcc's realigned stack keeps the caller's rbp where rbp points */
		if (!read_u64(w, w->bp + 8 * (int64_t)r->rbp_off, &bp))
			return STEP_STOP;
	} else if (r->rbp_off == UNW_RBP_LOST)
		bp = 0;
	else if (r->rbp_off && cfa + 8 * (int64_t)r->rbp_off >= w->sp &&
		 !read_u64(w, cfa + 8 * (int64_t)r->rbp_off, &bp))
		return STEP_STOP;
	w->sp = cfa;
	w->bp = bp;
	w->ip = ra;
	return STEP_ROW;
}

/* One frame by the frame pointer: [rbp] is the caller's rbp, [rbp + 8] the return address. */
static enum step fp_step(struct walk *w)
{
	uint64_t ra, bp;

	if (!w->bp)
		return STEP_STOP;	/* the end of the chain, as frame pointers see it */
	if (w->bp < w->sp || (w->bp & 7)) {
		w->causes |= UNW_C_BAD_FRAME;
		return STEP_STOP;
	}
	if (!read_u64(w, w->bp + 8, &ra) || !read_u64(w, w->bp, &bp))
		return STEP_STOP;
	w->sp = w->bp + 16;
	w->bp = bp;
	w->ip = ra & w->ra_mask;
	/*
	 * arm64 (a return address mask): the record is at the bottom of its frame,
	 * x29 + 16 is not the caller's sp; x86: rbp + 16 is the caller's rsp.
	 */
	w->sp_lost = w->ra_mask != ~0ULL;
	return STEP_FP;
}

/*
 * A -X perf trampoline's frame (bpf/unwind_py.bpf.h's unw_py_tramp, the
 * same rule): w->ip is a return address right after its call *%rcx.
 */
static bool tramp_step(struct walk *w)
{
	const struct tk_unw_tramp *t = w->tramp;
	uint64_t code, ra, bp = w->bp;

	if (!t || !t->shape || t->read_code(t->ctx, w->ip - 2, &code, sizeof(code)))
		return false;
	if (t->shape == UNW_PY_TRAMP_SUB) {
		if ((code & 0x00ffffffffffffffULL) != 0x00c308c48348d1ffULL)
			return false;
	} else if (t->shape == UNW_PY_TRAMP_PUSH) {
		if ((code & 0xffffffffULL) != 0xc35dd1ffULL ||
		    w->read(w->ctx, w->sp, &bp, sizeof(bp)))
			return false;
	} else {
		return false;
	}
	if (w->read(w->ctx, w->sp + 8, &ra, sizeof(ra)))
		return false;
	w->sp += 16;
	w->bp = bp;
	w->ip = ra;
	w->tramp->frames++;
	return true;
}

/* How to take the frame at w->ip, looked up at @look: by a row, by rbp, or not at all. */
static enum step frame_step(struct walk *w, const struct unw_proc *proc,
			    const struct unw_row *rows, size_t nr_rows, uint64_t look)
{
	const struct unw_map *m;

	if (!proc)
		return STEP_FP;
	m = find_map(proc, look);
	if (!m) {
		/* code of no file (JIT), a library loaded since, or one left out: by rbp */
		w->causes |= proc->flags & UNW_PROC_OVERFLOW ? UNW_C_LEFT_OUT : UNW_C_NO_MAPPING;
		return STEP_FP;
	}
	if (m->flags & UNW_MAP_PENDING) {
		w->causes |= UNW_C_NOT_LOADED;
		return STEP_FP;
	}
	if ((m->flags & UNW_MAP_NO_CFI) || !m->row_count) {
		w->causes |= UNW_C_FP;
		return STEP_FP;
	}
	return row_step(w, find_row(rows, nr_rows, m, look));
}

int tk_unw__walk(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		 const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx, uint64_t *ips,
		 int max, uint32_t *causes, uint32_t frames[2])
{
	return tk_unw__walk_tramp(proc, rows, nr_rows, regs, read, ctx, ips, max, causes, frames,
				  NULL);
}

static int walk(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx, uint64_t *ips,
		uint64_t *sps, int max, uint32_t *causes, uint32_t frames[2],
		struct tk_unw_tramp *t)
{
	struct walk w = { .ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .lr = regs->lr,
			  .ra_mask = regs->ra_mask ? regs->ra_mask : ~0ULL,
			  .causes = proc ? 0 : UNW_C_NO_PROC, .read = read, .ctx = ctx,
			  .tramp = t };
	uint32_t by_row = 0, by_fp = 0;
	enum step s;
	int nr = 0;

	for (;;) {
		bool exact = nr == 0 || w.interrupted;

		if (nr >= max) {
			w.causes |= UNW_C_DEPTH;
			break;
		}
		if (sps)
			sps[nr] = w.sp;
		ips[nr++] = w.ip;
		/*
		 * A return address points past its call, maybe past its function's
		 * end: it is looked up one byte before. The leaf's ip, and the ip a
		 * signal interrupted, are the instruction itself.
		 */
		w.interrupted = false;
		w.exact = exact;
		s = frame_step(&w, proc, rows, nr_rows, exact ? w.ip : w.ip - 1);
		/* code of no file, or of no CFI: a trampoline's, before the frame pointer */
		if (s == STEP_FP && !exact && tramp_step(&w))
			s = STEP_ROW;
		else if (s == STEP_FP)
			s = fp_step(&w);
		if (s == STEP_STOP)
			break;
		if (s == STEP_ROW)
			by_row++;
		else
			by_fp++;
		if (!w.ip)
			break;
	}
	*causes = w.causes;
	if (frames) {
		frames[0] = by_row;
		frames[1] = by_fp;
	}
	return nr;
}

int tk_unw__walk_tramp(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		       const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx,
		       uint64_t *ips, int max, uint32_t *causes, uint32_t frames[2],
		       struct tk_unw_tramp *t)
{
	return walk(proc, rows, nr_rows, regs, read, ctx, ips, NULL, max, causes, frames, t);
}

int tk_unw__walk_sps(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		     const struct tk_unw_regs *regs, tk_unw_read_fn read, void *ctx, uint64_t *ips,
		     uint64_t *sps, int max, uint32_t *causes, struct tk_unw_tramp *t)
{
	return walk(proc, rows, nr_rows, regs, read, ctx, ips, sps, max, causes, NULL, t);
}
