// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A thread's Python frames read from user space, for tracekit stacks, which
 * reads each thread's stack while the process runs (its native walk is user
 * space's too). The same walk as the kernel's (bpf/unwind_py.bpf.h), by the
 * same rules (bpf/unwind_py.h's unw_py_frame_*): from the thread state's
 * newest frame, each interpreter activation's frames are handed out in turn,
 * one activation per native frame of the interpreter loop, leaf first; an
 * activation ends at its last frame (<= 3.10 every frame, 3.11 is_entry), or
 * at its C-stack shim (3.12+), which must lie in that native frame's
 * [sp, cfa). Every way the chain and the native stack disagree is a cause
 * (enum unw_py_cause), as the kernel counts them.
 *
 * The thread states come from the interpreter's thread list, each tied to its
 * thread by its thread_id (the thread's pthread_t): the thread's fsbase where
 * the caller knows it (x86's task iterator), else glibc's struct pthread.tid
 * (py_arch.c: per architecture), checked by the caller (every state a
 * distinct thread of the process).
 */
#include <errno.h>
#include <string.h>

#include "runtime/py_int.h"

void tk_py_walk__begin(struct tk_py_walk *w, const struct unw_py *py, tk_py_read_fn read,
		       void *ctx, uint64_t tstate, uint32_t max)
{
	uint64_t v = 0;

	memset(w, 0, sizeof(*w));
	w->py = py;
	w->read = read;
	w->ctx = ctx;
	w->max = max;
	w->state = 2;
	if (!tstate) {
		w->causes |= UNW_PY_C_TSTATE;
		return;
	}
	if (read(ctx, tstate + py->ts_frame, &v, sizeof(v)) ||
	    (py->via_cframe && v && read(ctx, v + py->cf_current, &v, sizeof(v)))) {
		w->causes |= UNW_PY_C_READ_FAULT;
		return;
	}
	w->cur = v;
	w->state = v ? 1 : 2;
}

int tk_py_walk__activation(struct tk_py_walk *w, uint64_t sp, uint64_t cfa,
			   struct tk_py_wframe *out, int max)
{
	uint8_t f[UNW_PY_FRAME_BUF];
	uint64_t prev;
	bool last;
	int n = 0;

	while (w->state == 1) {
		if (!w->cur) {
			/* the chain ended before this interpreter frame's activation */
			w->causes |= UNW_PY_C_MISALIGNED;
			w->state = 2;
			break;
		}
		memset(f, 0, sizeof(f));
		if (w->read(w->ctx, w->cur, f, w->py->fr_size & (UNW_PY_FRAME_BUF - 1))) {
			w->causes |= UNW_PY_C_READ_FAULT;
			w->state = 2;
			break;
		}
		if (unw_py_frame_shim(w->py, f)) {
			/* the shim is a local of its interpreter frame: this one's, or an outer's */
			if (w->cur >= sp && w->cur < cfa)
				w->cur = unw_py_u64(f, w->py->fr_prev);
			else
				w->causes |= UNW_PY_C_MISALIGNED;
			break;
		}
		if (n >= max || w->frames >= w->max) {
			w->causes |= UNW_PY_C_DEPTH;
			w->state = 3;
			break;
		}
		out[n].code = unw_py_frame_code(w->py, f);
		out[n].idx = unw_py_frame_idx(w->py, f, out[n].code);
		n++;
		w->frames++;
		prev = unw_py_u64(f, w->py->fr_prev);
		last = unw_py_frame_last(w->py, f);
		w->cur = prev;
		if (!prev)
			w->state = 2;
		if (last || !prev)
			break;
	}
	return n;
}

uint32_t tk_py_walk__end(struct tk_py_walk *w, bool whole)
{
	/* frames of the chain left over: a thread between pushing a frame and its eval */
	if (w->state == 1 && w->cur && whole)
		w->causes |= UNW_PY_C_MISALIGNED;
	if (w->frames)
		w->causes |= UNW_PY_C_FRAMES;
	return w->causes;
}

int tk_py__thread_states(struct tk_py *py, uint32_t pid, struct tk_py_tstate *out, size_t max)
{
	const struct py_image *im;
	uint64_t bias, interp, ts;
	struct tk_py_glibc g;
	size_t n = 0;
	int32_t tid;

	im = tk_py__proc_image(py, pid, &bias);
	if (!im || tk_py__glibc_layout(im->machine, &g))
		return -ENOENT;
	if (tk_py__mem(py, pid, bias + im->runtime + im->off.rt_interp_head, &interp, 8) ||
	    !interp || tk_py__mem(py, pid, interp + im->off.interp_threads, &ts, 8))
		return -EFAULT;
	while (ts && n < max) {
		out[n].tstate = ts;
		out[n].thread_id = 0;
		out[n].tid = 0;
		/* a thread exiting meanwhile: its state or its pthread unreadable, 0 */
		if (!tk_py__mem(py, pid, ts + im->off.ts_thread_id, &out[n].thread_id, 8) &&
		    out[n].thread_id &&
		    !tk_py__mem(py, pid, out[n].thread_id + g.tid_off, &tid, 4))
			out[n].tid = tid;
		n++;
		if (tk_py__mem(py, pid, ts + im->off.ts_next, &ts, 8))
			return -EFAULT;
	}
	return ts ? -E2BIG : (int)n;
}
