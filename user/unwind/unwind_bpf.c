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
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/internal.h"
#include "core/kfeat.h"
#include "core/percpu.h"
#include "sym/symbolize.h"
#include "unwind/unwind_bpf.h"

#define UNW_DEFAULT_ROWS (2u << 20)	/* 16 MiB of rows */
#define MISS_INTERVAL_NS 1000000000LL	/* a process is captured again at most once a second */
#define MAX_MISSES 64

struct tk_unw_bpf {
	struct tk_unw_store *store;
	struct unw_row *rows;		/* the rows map, mapped */
	size_t map_len;
	int procs_fd;
	size_t rows_cap;
	size_t procs_cap;
	uint64_t procs_written;
	uint64_t procs_full;		/* entries the procs map had no room for */
	uint64_t recaptures;		/* captures again after a miss */
	struct miss {			/* processes to capture again, not before due */
		uint32_t pid, gen;
		int64_t due_ns;
		bool pending;
	} misses[MAX_MISSES];
	int nr_misses;
	struct unw_proc scratch;
};

int tk_unw_bpf__prepare(const struct tk_unw_bpf_vars *v, const struct tk_unw_bpf_opts *o,
			char *why, size_t why_sz)
{
	size_t rows = o->rows ? o->rows : UNW_DEFAULT_ROWS;
	size_t procs = o->procs ? o->procs : 1024;
	int err, off;

	if (why && why_sz)
		why[0] = '\0';
	*v->enabled = false;
	if (o->mode == TK_UNWIND_FP) {
		/* unused: as small as a map can be */
		bpf_map__set_max_entries(v->rows, 1);
		bpf_map__set_max_entries(v->procs, 1);
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
			bpf_map__set_max_entries(v->rows, 1);
			bpf_map__set_max_entries(v->procs, 1);
			return o->mode == TK_UNWIND_CFI ? off : 0;
		}
		*v->task_regs = 2;
		*v->task_stack_off = off;
		*v->thread_size = tk_kconfig__lookup("/proc", "CONFIG_KASAN") == 1 ? 32768 : 16384;
	}
	err = bpf_map__set_max_entries(v->rows, rows);
	if (!err)
		err = bpf_map__set_max_entries(v->procs, procs);
	if (err)
		return err;
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

int tk_unw_bpf__open(const struct tk_unw_bpf_vars *v, struct tk_unw_bpf **out)
{
	long page = sysconf(_SC_PAGESIZE);
	struct tk_unw_bpf *u;
	size_t cap;
	int err;

	*out = NULL;
	if (!*v->enabled)
		return 0;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	cap = bpf_map__max_entries(v->rows);
	u->rows_cap = cap;
	u->procs_cap = bpf_map__max_entries(v->procs);
	u->procs_fd = bpf_map__fd(v->procs);
	u->map_len = (cap * sizeof(struct unw_row) + page - 1) / page * page;
	u->rows = mmap(NULL, u->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(v->rows),
		       0);
	if (u->rows == MAP_FAILED) {
		err = -errno;
		free(u);
		return err;
	}
	err = tk_unw_store__new(u->rows, cap, &u->store);
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
	tk_unw_store__free(u->store);
	if (u->rows && u->rows != MAP_FAILED)
		munmap(u->rows, u->map_len);
	free(u);
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

/*
 * An address of @pid in no mapping its entry describes: a library loaded
 * since the capture, or code of no file (JIT). Captured again at the next
 * tk_unw_bpf__retry, at most once a second (code of no file misses on every
 * sample); past MAX_MISSES processes, the entry keeps miss_sent and the
 * misses of that process are no longer followed.
 */
void tk_unw_bpf__miss(struct tk_unw_bpf *u, uint32_t pid, uint32_t gen)
{
	int i;

	if (!u)
		return;
	for (i = 0; i < u->nr_misses; i++) {
		if (u->misses[i].pid == pid) {
			u->misses[i].gen = gen;
			u->misses[i].pending = true;
			return;
		}
	}
	if (u->nr_misses < MAX_MISSES)
		u->misses[u->nr_misses++] = (struct miss){ pid, gen, 0, true };
}

void tk_unw_bpf__retry(struct tk_unw_bpf *u, struct tk_symbolizer *sym)
{
	int64_t now;
	int i;

	if (!u || !u->nr_misses)
		return;
	now = tk_now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < u->nr_misses; i++) {
		struct miss *m = &u->misses[i];

		if (!m->pending || m->due_ns > now)
			continue;
		m->pending = false;
		m->due_ns = now + MISS_INTERVAL_NS;
		u->recaptures++;
		if (!tk_symbolizer__capture(sym, m->pid, m->gen))
			tk_unw_bpf__update(u, sym, m->pid, m->gen);
	}
}

struct unw_row *tk_unw_bpf__rows(struct tk_unw_bpf *u, size_t *cap)
{
	*cap = u->rows_cap;
	return u->rows;
}

void tk_unw_bpf__forget(struct tk_unw_bpf *u, uint32_t pid)
{
	if (u)
		bpf_map_delete_elem(u->procs_fd, &pid);
}

void tk_unw_bpf__sum(const __u64 (*counters)[UNW_CNT__COUNT], int nr_cpus,
		     uint64_t out[UNW_CNT__COUNT])
{
	tk_percpu__sum(counters, nr_cpus, UNW_CNT__COUNT, out);
}

void tk_unw_bpf__stats(const struct tk_unw_bpf *u, struct tk_unw_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!u)
		return;
	tk_unw_store__stats(u->store, &info->store);
	info->in_kernel = true;
	info->procs = u->procs_written;
	info->procs_full = u->procs_full;
	info->procs_cap = u->procs_cap;
	info->recaptures = u->recaptures;
	info->memory = u->map_len + u->procs_cap * sizeof(struct unw_proc);
}
