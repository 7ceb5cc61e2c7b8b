// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What every BPF collector that unwinds user stacks does with the unwinder
 * of bpf/unwind.bpf.h: size its maps and set its switches before load, map
 * its rows array into memory after load (the store lays tables out there
 * directly), write a process's entry when the symbolizer has captured it,
 * and sum its counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/arch.h"
#include "core/internal.h"
#include "core/kfeat.h"
#include "core/percpu.h"
#include "runtime/py.h"
#include "sym/symbolize.h"
#include "unwind/unwind_bpf.h"

#define UNW_DEFAULT_ROWS (2u << 20)	/* 16 MiB of rows */
#define CHUNK_BYTES ((size_t)UNW_CHUNK_ROWS * sizeof(struct unw_row))
#define MISS_INTERVAL_NS 1000000000LL	/* a process is captured again at most once a second */
#define PY_CODES 16384			/* code objects with an id at once (LRU) */
#define PY_EVENTS (256u << 10)		/* bytes of the new ids' ring buffer */

struct tk_unw_bpf {
	struct tk_unw_store *store;
	struct unw_row *rows;		/* every chunk made, mapped in one view */
	size_t map_len;			/* the view's address range: the ceiling's chunks */
	int chunks_fd;			/* unw_chunks */
	size_t chunks;			/* chunks made (and mapped) */
	size_t chunks_max;
	size_t hole;			/* a chunk's place lost to another mapping; SIZE_MAX: none */
	int procs_fd;
	bool procs_prealloc;
	size_t rows_cap;
	size_t procs_cap;
	uint64_t procs_written;
	uint64_t procs_full;		/* entries the procs map had no room for */
	uint64_t recaptures;		/* captures again after a miss */
	struct tk_unw_misses misses;
	struct unw_proc scratch;
	/* Python frames */
	bool python;
	const char *python_off;		/* why not, when not */
	int py_procs_fd;
	int py_events_fd;
	struct ring_buffer *py_rb;	/* unw_py_events: new code object ids */
	struct tk_symbolizer *sym;	/* the one whose processes are described */
};

/*
 * The kernel's task_struct.thread.fsbase (arm64: thread.uw.tp_value, TK_ARCH_TP_MEMBER),
 * from its BTF; 0 when not found.
 */
static __u32 fsbase_offset(void)
{
	int off = tk_kfeat__member_offset("task_struct", TK_ARCH_TP_MEMBER);

	return off > 0 ? (__u32)off : 0;
}

static void python_maps(const struct tk_unw_bpf_vars *v, size_t procs, bool on)
{
	bpf_map__set_max_entries(v->py_procs, on ? procs : 1);
	bpf_map__set_max_entries(v->py_codes, on ? PY_CODES : 1);
	bpf_map__set_max_entries(v->py_events, on ? PY_EVENTS : sysconf(_SC_PAGESIZE));
}

/*
 * Unwinding off: as small as the maps can be. (The chunk template libbpf
 * makes keeps its size, but lives only while the object loads: libbpf's
 * bpf_map__set_max_entries cannot be called on an inner map.)
 */
static void unused_maps(const struct tk_unw_bpf_vars *v)
{
	bpf_map__set_max_entries(v->chunks, 1);
	bpf_map__set_max_entries(v->procs, 1);
}

int tk_unw_bpf__prepare(const struct tk_unw_bpf_vars *v, const struct tk_unw_bpf_opts *o,
			char *why, size_t why_sz)
{
	size_t rows = o->rows ? o->rows : UNW_DEFAULT_ROWS;
	size_t procs = o->procs ? o->procs : 1024;
	int err, off;

	if (why && why_sz)
		why[0] = '\0';
	*v->enabled = false;
	*v->fsbase_off = 0;
	if (v->ra_mask)		/* arm64: the kernel's PAC mask, for the walk and frame records */
		*v->ra_mask = tk_unw_ra_mask(NULL);
	python_maps(v, procs, false);
	if (o->mode == TK_UNWIND_FP) {
		unused_maps(v);
		return 0;
	}
	if (rows > UINT32_MAX / 2)
		return -EINVAL;
	/* TK_UNWIND_TASK_STACK=1: the older kernels' way on this one too (for tests) */
	if (!getenv("TK_UNWIND_TASK_STACK") &&
	    libbpf_probe_bpf_helper(o->prog_type, BPF_FUNC_task_pt_regs, NULL) == 1) {
		*v->task_regs = 1;
	} else {
		off = tk_kfeat__member_offset("task_struct", "stack");
		if (off < 0) {
			if (why)
				snprintf(why, why_sz, "no bpf_task_pt_regs() and no task_struct.stack "
					 "in the kernel's BTF (%s): user registers of a task "
					 "in the kernel cannot be found", strerror(-off));
			unused_maps(v);
			return o->mode == TK_UNWIND_CFI ? off : 0;
		}
		*v->task_regs = 2;
		*v->task_stack_off = off;
		*v->thread_size = tk_kconfig__lookup("/proc", "CONFIG_KASAN") == 1 ? 32768 : 16384;
	}
	/* the ceiling, in chunks; they are made as the store fills (chunk_grow) */
	err = bpf_map__set_max_entries(v->chunks, (rows + UNW_CHUNK_ROWS - 1) / UNW_CHUNK_ROWS);
	if (!err)
		err = bpf_map__set_max_entries(v->procs, procs);
	if (err)
		return err;
	/* TK_UNWIND_NO_PYTHON=1: as without the kernel's BTF (for tests) */
	if (!o->no_python && !getenv("TK_UNWIND_NO_PYTHON")) {
		*v->fsbase_off = fsbase_offset();
		python_maps(v, procs, *v->fsbase_off != 0);
	}
	*v->enabled = true;
	return 0;
}

bool tk_unw_bpf__refused(const struct tk_unw_bpf_vars *v, enum tk_unwind_mode mode, int err,
			 char *note, size_t note_sz)
{
	if (!err || !*v->enabled || mode == TK_UNWIND_FP)
		return false;
	snprintf(note, note_sz, "unwinding: %sthis kernel refused the CFI unwinder (%s)",
		 mode == TK_UNWIND_AUTO ? "frame pointers only: " : "", strerror(-err));
	return mode == TK_UNWIND_AUTO;
}

/* A new code object id: its names are read now, while the process lives. */
static int py_event(void *ctx, void *data, size_t len)
{
	struct tk_unw_bpf *u = ctx;
	struct tk_py *py = u->sym ? tk_symbolizer__py(u->sym) : NULL;

	if (py && len >= sizeof(struct unw_py_event))
		tk_py__on_event(py, data);
	return 0;
}

/*
 * Make and map chunk @i: an array like the template (same size and flags, so
 * the walk's lookups stay inlined), mapped at its place in the view, then put
 * in its slot, after which the programs can read it. Its rows are zeros until
 * the store writes them, and no entry points at them before.
 */
static int chunk_make(struct tk_unw_bpf *u, size_t i)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	void *at = (char *)u->rows + i * CHUNK_BYTES, *m;
	__u32 key = i;
	int fd, err = 0;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unw_rows", sizeof(__u32), sizeof(struct unw_row),
			    UNW_CHUNK_ROWS, &mo);
	if (fd < 0)
		return -errno;
	m = mmap(at, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (m == MAP_FAILED)
		err = -errno;
	else if (bpf_map_update_elem(u->chunks_fd, &key, &fd, BPF_ANY))
		err = -errno;
	/* the slot and the mapping hold the chunk; the fd is not needed */
	close(fd);
	if (err && m != MAP_FAILED)
		m = mmap(at, CHUNK_BYTES, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	else if (err)
		/* a failed MAP_FIXED may have left a hole: reserved again, unless taken since */
		m = mmap(at, CHUNK_BYTES, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
	/* no reservation there any more: no chunk is ever mapped at it (or past it) */
	if (err && m != at) {
		if (m != MAP_FAILED)
			munmap(m, CHUNK_BYTES);
		u->chunks_max = i;
		u->hole = i;
	}
	return err;
}

/* The store's grow: chunks for rows [0, @rows), as many as the ceiling allows. */
static int chunk_grow(void *ctx, size_t rows, size_t *mapped)
{
	struct tk_unw_bpf *u = ctx;
	int err = 0;

	while (u->chunks * UNW_CHUNK_ROWS < rows && u->chunks < u->chunks_max) {
		err = chunk_make(u, u->chunks);
		if (err)
			break;
		u->chunks++;
	}
	*mapped = u->chunks * UNW_CHUNK_ROWS;
	if (*mapped > u->rows_cap)
		*mapped = u->rows_cap;
	return err;
}

int tk_unw_bpf__reserve(struct tk_unw_bpf *u, size_t rows)
{
	size_t mapped;
	int err;

	if (rows > u->rows_cap)
		return -ENOSPC;
	err = chunk_grow(u, rows, &mapped);
	return err ? err : mapped < rows ? -ENOSPC : 0;
}

int tk_unw_bpf__open(const struct tk_unw_bpf_vars *v, struct tk_unw_bpf **out)
{
	struct tk_unw_bpf *u;
	int err;

	*out = NULL;
	if (!*v->enabled)
		return 0;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->chunks_fd = bpf_map__fd(v->chunks);
	u->chunks_max = bpf_map__max_entries(v->chunks);
	u->hole = SIZE_MAX;
	u->rows_cap = u->chunks_max * UNW_CHUNK_ROWS;
	u->procs_cap = bpf_map__max_entries(v->procs);
	u->procs_fd = bpf_map__fd(v->procs);
	u->procs_prealloc = !(bpf_map__map_flags(v->procs) & BPF_F_NO_PREALLOC);
	u->python = *v->fsbase_off != 0;
	u->python_off = u->python ? NULL : "no task_struct." TK_ARCH_TP_MEMBER " in the kernel's BTF";
	u->py_procs_fd = bpf_map__fd(v->py_procs);
	u->py_events_fd = bpf_map__fd(v->py_events);
	/* the ceiling's address range, reserved, not committed: chunks are mapped into it */
	u->map_len = u->chunks_max * CHUNK_BYTES;
	u->rows = mmap(NULL, u->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (u->rows == MAP_FAILED) {
		err = -errno;
		free(u);
		return err;
	}
	err = tk_unw_store__new(u->rows, u->rows_cap, &u->store);
	if (!err) {
		tk_unw_store__set_grow(u->store, UNW_CHUNK_ROWS, 0, chunk_grow, u);
		/* the collector's symbolizer feeds this store alone: no second copy of the rows */
		tk_unw_store__release_rows(u->store, true);
	}
	if (!err && u->python) {
		u->py_rb = ring_buffer__new(bpf_map__fd(v->py_events), py_event, u, NULL);
		if (!u->py_rb)
			err = -errno;
	}
	if (err) {
		tk_unw_bpf__free(u);
		return err;
	}
	*out = u;
	return 0;
}

void tk_unw_bpf__free(struct tk_unw_bpf *u)
{
	if (!u)
		return;
	ring_buffer__free(u->py_rb);
	tk_unw_store__free(u->store);
	if (u->rows && u->rows != MAP_FAILED && u->hole == SIZE_MAX) {
		munmap(u->rows, u->map_len);
	} else if (u->rows && u->rows != MAP_FAILED) {
		/* around the place another mapping took */
		munmap(u->rows, u->hole * CHUNK_BYTES);
		munmap((char *)u->rows + (u->hole + 1) * CHUNK_BYTES,
		       u->map_len - (u->hole + 1) * CHUNK_BYTES);
	}
	free(u);
}

/*
 * CPython in (@pid, @gen): its entry written, and the process's marked, so
 * the kernel walks its Python frames. A CPython caught before it made its
 * thread-state key (at exec) is asked again a second later, as after a miss.
 */
static bool pid_gone(uint32_t pid, void *ctx);

static void python_entry(struct tk_unw_bpf *u, struct tk_symbolizer *sym, uint32_t pid,
			 uint32_t gen)
{
	struct tk_py *py = tk_symbolizer__py(sym);
	struct unw_py e;
	int err;

	u->sym = sym;
	if (!py)
		return;
	err = tk_py__detect(py, sym, pid, gen, &e, NULL);
	if (!err && !bpf_map_update_elem(u->py_procs_fd, &pid, &e, BPF_ANY))
		u->scratch.flags |= UNW_PROC_PY;
	else if (err == -EAGAIN)
		tk_unw_misses__add(&u->misses, pid, gen, tk_now_ns(CLOCK_MONOTONIC), pid_gone,
				   NULL);
}

int tk_unw_bpf__update(struct tk_unw_bpf *u, struct tk_symbolizer *sym, uint32_t pid,
		       uint32_t gen)
{
	int err;

	if (!u)
		return 0;
	err = tk_unw_store__proc(u->store, sym, pid, gen, &u->scratch);
	if (err)
		return err;
	if (u->python)
		python_entry(u, sym, pid, gen);
	/* the rows are in place before the entry that points at them */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (bpf_map_update_elem(u->procs_fd, &pid, &u->scratch, BPF_ANY)) {
		err = -errno;
		if (err == -E2BIG || err == -ENOMEM)
			u->procs_full++;
		return err;
	}
	u->procs_written++;
	return 0;
}

/* ---- the processes to capture again ------------------------------------------------- */

/* A slot whose process needs nothing more: no miss waits, and its rate limit is over. */
static bool slot_idle(const struct tk_unw_miss *m, int64_t now_ns)
{
	return !m->pending && m->due_ns <= now_ns;
}

static void slot_drop(struct tk_unw_misses *t, int i)
{
	t->slot[i] = t->slot[--t->nr];
}

bool tk_unw_misses__add(struct tk_unw_misses *t, uint32_t pid, uint32_t gen, int64_t now_ns,
			bool (*gone)(uint32_t pid, void *ctx), void *ctx)
{
	int i;

	for (i = 0; i < t->nr; i++) {
		if (t->slot[i].pid == pid) {
			t->slot[i].gen = gen;
			t->slot[i].pending = true;
			return true;
		}
	}
	/* full: make room from the slots of processes that need nothing, or are gone */
	for (i = t->nr - 1; t->nr == TK_UNW_MAX_MISSES && i >= 0; i--) {
		if (slot_idle(&t->slot[i], now_ns)) {
			slot_drop(t, i);
			t->pruned++;
		}
	}
	/* asking which have ended costs a syscall a slot: once a second at most */
	if (t->nr == TK_UNW_MAX_MISSES && gone && now_ns >= t->gone_due_ns) {
		t->gone_due_ns = now_ns + 1000000000LL;
		for (i = t->nr - 1; i >= 0; i--) {
			if (gone(t->slot[i].pid, ctx)) {
				slot_drop(t, i);
				t->pruned++;
			}
		}
	}
	if (t->nr == TK_UNW_MAX_MISSES) {
		/* the kernel side sends it again (UNW_MISS_RESEND_NS) while no capture follows */
		t->dropped++;
		return false;
	}
	t->slot[t->nr++] = (struct tk_unw_miss){ pid, gen, 0, true };
	return true;
}

bool tk_unw_misses__next_due(struct tk_unw_misses *t, int64_t now_ns, int64_t interval_ns,
			     uint32_t *pid, uint32_t *gen)
{
	int i;

	for (i = 0; i < t->nr; i++) {
		struct tk_unw_miss *m = &t->slot[i];

		if (!m->pending || m->due_ns > now_ns)
			continue;
		m->pending = false;
		m->due_ns = now_ns + interval_ns;
		*pid = m->pid;
		*gen = m->gen;
		return true;
	}
	return false;
}

void tk_unw_misses__forget(struct tk_unw_misses *t, uint32_t pid)
{
	int i;

	for (i = 0; i < t->nr; i++) {
		if (t->slot[i].pid == pid) {
			slot_drop(t, i);
			t->pruned++;
			return;
		}
	}
}

/* A pid that no longer exists (root sees every process; EPERM means it lives). */
static bool pid_gone(uint32_t pid, void *ctx)
{
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/*
 * An address of @pid in no mapping its entry describes: a library loaded
 * since the capture, or code of no file (JIT). Captured again at the next
 * tk_unw_bpf__retry, at most once a second (code of no file misses on every
 * sample). With no room to wait, the miss is counted; the entry then keeps
 * the time of its miss and the kernel sends it again after
 * UNW_MISS_RESEND_NS, as it does when the ring buffer refused the event.
 */
void tk_unw_bpf__miss(struct tk_unw_bpf *u, uint32_t pid, uint32_t gen)
{
	if (u)
		tk_unw_misses__add(&u->misses, pid, gen, tk_now_ns(CLOCK_MONOTONIC), pid_gone,
				   NULL);
}

void tk_unw_bpf__retry(struct tk_unw_bpf *u, struct tk_symbolizer *sym)
{
	uint32_t pid, gen;
	int64_t now;

	if (!u)
		return;
	if (u->py_rb)
		ring_buffer__consume(u->py_rb);
	if (!u->misses.nr)
		return;
	now = tk_now_ns(CLOCK_MONOTONIC);
	while (tk_unw_misses__next_due(&u->misses, now, MISS_INTERVAL_NS, &pid, &gen)) {
		u->recaptures++;
		if (!tk_symbolizer__capture(sym, pid, gen))
			tk_unw_bpf__update(u, sym, pid, gen);
	}
}

int tk_unw_bpf__add_ring(struct tk_unw_bpf *u, struct ring_buffer *rb)
{
	int fd, err;

	if (!u || !u->py_rb || !rb)
		return 0;
	fd = u->py_events_fd;
	err = ring_buffer__add(rb, fd, py_event, u);
	if (err)
		return err;
	/* the collector's poll wakes for new ids now, and consumes them */
	ring_buffer__free(u->py_rb);
	u->py_rb = NULL;
	return 0;
}

struct unw_row *tk_unw_bpf__rows(struct tk_unw_bpf *u, size_t *cap)
{
	*cap = u->chunks * UNW_CHUNK_ROWS;
	return u->rows;
}

void tk_unw_bpf__forget(struct tk_unw_bpf *u, uint32_t pid)
{
	if (!u)
		return;
	bpf_map_delete_elem(u->procs_fd, &pid);
	tk_unw_misses__forget(&u->misses, pid);
	if (u->python) {
		/* its ids' names stay: its samples are still to be named */
		if (u->py_rb)
			ring_buffer__consume(u->py_rb);
		bpf_map_delete_elem(u->py_procs_fd, &pid);
		if (u->sym && tk_symbolizer__py_if_any(u->sym))
			tk_py__forget(tk_symbolizer__py_if_any(u->sym), pid);
	}
}

void tk_unw_bpf__sum(const __u64 (*counters)[UNW_CNT__COUNT], int nr_cpus,
		     uint64_t out[UNW_CNT__COUNT])
{
	tk_percpu__sum(counters, nr_cpus, UNW_CNT__COUNT, out);
}

void tk_unw_bpf__stats(struct tk_unw_bpf *u, struct tk_unw_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!u)
		return;
	/* every id the kernel gave so far is named before the stacks are */
	if (u->py_rb)
		ring_buffer__consume(u->py_rb);
	info->python = u->python;
	info->python_off = u->python_off;
	info->py = u->sym ? tk_symbolizer__py_if_any(u->sym) : NULL;
	tk_unw_store__stats(u->store, &info->store);
	info->in_kernel = true;
	info->procs = u->procs_written;
	info->procs_full = u->procs_full;
	info->procs_cap = u->procs_cap;
	info->recaptures = u->recaptures;
	info->misses_dropped = u->misses.dropped;
	info->memory = u->procs_cap * sizeof(struct unw_proc);
	info->procs_prealloc = u->procs_prealloc;
	info->chunks = u->chunks;
	info->chunks_max = u->chunks_max;
	info->chunk_bytes = CHUNK_BYTES;
}
