// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of allocation sessions: placing its probes. uprobe_multi
 * links (sessions, or counting), uprobes and uretprobes on the allocator's
 * functions, uprobes on the preload sampler's markers, raw tracepoints for
 * exec and growth (and the page-faults perf event where the kernel has no
 * page_fault_user); and the backend's start, which picks among them by mode.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "alloc/agent_proto.h"
#include "alloc/alloc_int.h"
#include "alloc/alloc_syms.h"
#include "alloc/alloc_trace_int.h"
#include "unwind/unwind_bpf.h"
#include "core/internal.h"
#include "core/kfeat.h"
#include "bpf/alloc_trace.h"
#include "alloc_trace.skel.h"

/* ---- small helpers ------------------------------------------------------------------- */

/* A raw BPF_LINK_CREATE of a uprobe_multi link (libbpf 1.1.2 has no API for it). */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
};

int tk_alloc_bpf__uprobe_multi_link(int prog_fd, int type, const char *path,
				    const uint64_t *offsets, const uint64_t *cookies, int cnt,
				    int pid)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = type;
	attr.path = (unsigned long)path;
	attr.offsets = (unsigned long)offsets;
	attr.cookies = (unsigned long)cookies;
	attr.cnt = cnt;
	attr.pid = pid > 0 ? pid : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* The file and offset of @addr in our own mappings. */
int tk_alloc_bpf__self_offset(const void *addr, char *path, size_t path_sz, uint64_t *off)
{
	unsigned long a = (unsigned long)addr, lo, hi, pgoff;
	char line[PATH_MAX + 128], file[PATH_MAX];
	FILE *f = fopen("/proc/self/maps", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi, &pgoff, file) < 3)
			continue;
		if (a < lo || a >= hi || file[0] != '/')
			continue;
		snprintf(path, path_sz, "%s", file);
		*off = a - lo + pgoff;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* ---- attaching ---------------------------------------------------------------------------- */

static void set_ranges(struct alloc_trace_bpf *s, const struct tk_alloc_syms *syms)
{
	int i, n = 0;

	for (i = 0; i < syms->nr && n < AT_MAX_RANGES; i++, n++) {
		s->bss->ranges[n].lo = syms->fns[i].vaddr;
		s->bss->ranges[n].hi = syms->fns[i].vaddr + syms->fns[i].size;
	}
	s->bss->nr_ranges = n;
}

static int add_link(struct at_state *st, struct bpf_link *l)
{
	if (!l)
		return -errno;
	if (st->nr_links >= MAX_LINKS) {
		bpf_link__destroy(l);
		return -E2BIG;
	}
	st->links[st->nr_links++] = l;
	return 0;
}

int tk_alloc_bpf__attach_uprobe(struct at_state *st, struct bpf_program *prog, int pid,
				const char *path, const struct tk_alloc_fn *fn, bool ret)
{
	/* before 5.15 libbpf refuses a cookie it cannot set: the programs then need none */
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret,
		    .bpf_cookie = tk_kfeat__attach_cookie() ? AT_COOKIE(fn->vaddr, fn->kind) : 0);

	return add_link(st, bpf_program__attach_uprobe_opts(prog, pid > 0 ? pid : -1, path,
							    fn->offset, &o));
}

static int attach_allocator(struct tk_alloc *a, struct at_state *st, int pid)
{
	const struct tk_alloc_syms *sy = st->syms;
	uint64_t offs[2][TK_ALLOC_MAX_FNS], cookies[2][TK_ALLOC_MAX_FNS];
	int n[2] = { 0, 0 }, i, err, slot = 0;

	set_ranges(st->skel, sy);
	if (st->sessions) {
		for (i = 0; i < sy->nr; i++) {
			int f = sy->fns[i].kind == TK_AFN_FREE;

			offs[f][n[f]] = sy->fns[i].offset;
			cookies[f][n[f]++] = AT_COOKIE(sy->fns[i].vaddr, sy->fns[i].kind);
		}
		st->multi_fds[0] = tk_alloc_bpf__uprobe_multi_link(
			bpf_program__fd(tk_alloc_bpf__session_prog(st->skel)), AT_TRACE_UPROBE_SESSION,
			tk_alloc_syms__probe(sy), offs[0], cookies[0], n[0], pid);
		if (st->multi_fds[0] < 0)
			return st->multi_fds[0];
		st->multi_fds[1] = tk_alloc_bpf__uprobe_multi_link(
			bpf_program__fd(st->skel->progs.free_enter), AT_TRACE_UPROBE_MULTI,
			tk_alloc_syms__probe(sy), offs[1], cookies[1], n[1], pid);
		return st->multi_fds[1] < 0 ? st->multi_fds[1] : 0;
	}
	for (i = 0; i < sy->nr; i++) {
		const struct tk_alloc_fn *fn = &sy->fns[i];
		struct bpf_program *enter = st->skel->progs.alloc_enter;

		if (!tk_kfeat__attach_cookie()) {
			/* no cookies: the next slot program, its cookie in slot_cookies[] */
			if (slot >= AT_NR_SLOTS)
				return -E2BIG;
			st->skel->bss->slot_cookies[slot] = AT_COOKIE(fn->vaddr, fn->kind);
			enter = tk_alloc_bpf__slot_prog(st->skel, slot);
			if (!enter)
				return -ENOENT;
		}
		if (fn->kind == TK_AFN_FREE) {
			err = tk_alloc_bpf__attach_uprobe(st, st->skel->progs.free_enter, pid,
							  tk_alloc_syms__probe(sy), fn, false);
		} else {
			slot += !tk_kfeat__attach_cookie();
			err = tk_alloc_bpf__attach_uprobe(st, enter, pid, tk_alloc_syms__probe(sy),
							  fn, false);
			if (!err)
				err = tk_alloc_bpf__attach_uprobe(st, st->skel->progs.alloc_exit,
								  pid, tk_alloc_syms__probe(sy), fn, true);
		}
		if (err)
			return err;
	}
	return 0;
}

static void describe_hooks(struct tk_alloc *a, struct at_state *st, int pid)
{
	const struct tk_alloc_syms *sy = st->syms;
	const char *how;
	size_t len;
	int i;

	if (a->opts.mode == TK_ALLOC_MODE_FULL)
		how = st->sessions ? "uprobe sessions (every call's entry and return)" :
				     "uprobes and uretprobes (every call)";
	else
		how = st->sessions ? "uprobe sessions (1 trap per call; returns of sampled calls "
				     "only)" :
				     "uprobes and uretprobes (2 traps per allocation, 1 per free)";
	if (sy->mapped[0] && sy->other_here)
		/* a container's file: say so, and by which way it was reached */
		len = snprintf(a->describe, sizeof(a->describe),
			       "%s on %s in pid %d's root (not the host's file of that name), "
			       "through %s, %d functions", how, sy->mapped, pid, sy->path, sy->nr);
	else
		len = snprintf(a->describe, sizeof(a->describe), "%s on %s, pid %d, %d functions",
			       how, sy->mapped[0] ? sy->mapped : sy->path, pid, sy->nr);
	for (i = 0; i < sy->nr && len < sizeof(a->describe); i++)
		len += snprintf(a->describe + len, sizeof(a->describe) - len, "%s%s",
				i ? ", " : ": ", sy->fns[i].name);
}

static int attach_raw_tp(struct at_state *st, struct bpf_program *prog)
{
	return add_link(st, bpf_program__attach_raw_tracepoint(prog, bpf_program__section_name(prog) +
							       strlen("raw_tp/")));
}

/*
 * Growth's page faults where the kernel has no page_fault_user: the software
 * event page-faults, period 1, on every CPU (as the raw tracepoint sees every
 * task; the program keeps the traced ones), faults taken in user mode only
 * (exclude_kernel), which is what the tracepoint reports. A CPU that is
 * offline now is skipped (ENODEV), and one brought online later is not
 * watched (as for the cpu collector's events).
 */
static int attach_fault_event(struct at_state *st)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	int ncpus = libbpf_num_possible_cpus(), cpu, fd;

	if (ncpus < 0)
		return ncpus;
	st->cpu_links = calloc(ncpus, sizeof(*st->cpu_links));
	if (!st->cpu_links)
		return -ENOMEM;
	for (cpu = 0; cpu < ncpus; cpu++) {
		struct bpf_link *l;

		fd = tk_perf_event_open(&attr, -1, cpu, 0);
		if (fd == -ENODEV)
			continue;
		if (fd < 0)
			return fd;
		l = bpf_program__attach_perf_event(st->skel->progs.fault_event, fd);
		if (!l) {
			int err = -errno;

			close(fd);
			return err;
		}
		st->cpu_links[st->nr_cpu_links++] = l;
	}
	return st->nr_cpu_links ? 0 : -ENODEV;
}

void tk_alloc_bpf__detach(struct at_state *st)
{
	int i;

	for (i = 0; i < st->nr_links; i++)
		bpf_link__destroy(st->links[i]);
	st->nr_links = 0;
	for (i = 0; i < st->nr_cpu_links; i++)
		bpf_link__destroy(st->cpu_links[i]);
	free(st->cpu_links);
	st->cpu_links = NULL;
	st->nr_cpu_links = 0;
	for (i = 0; i < 2; i++) {
		if (st->multi_fds[i] >= 0)
			close(st->multi_fds[i]);
		st->multi_fds[i] = -1;
	}
}

/* ---- start: what attaches, by mode ------------------------------------------------------- */

int tk_alloc_bpf__start(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct at_state *st = a->priv;
	__u32 pid = a->pid;
	__u8 one = 1;
	int err;

	/* a dynamic command: attach once the agent holds it with its libraries mapped */
	if (a->attach_after_exec && !a->after_exec)
		return 0;
	if (pid) {
		/* generation 0, as the session captures it (BPF's own are never 0) */
		struct at_proc gen0 = { .gen = 0, .announced = 1 };

		err = bpf_map__update_elem(st->skel->maps.pids, &pid, sizeof(pid), &one,
					   sizeof(one), BPF_ANY);
		if (!err)
			err = bpf_map__update_elem(st->skel->maps.procs, &pid, sizeof(pid), &gen0,
						   sizeof(gen0), BPF_NOEXIST);
		if (err == -EEXIST)
			err = 0;	/* the second start, after the agent's hold */
		if (err)
			goto fail;
	}
	if (!st->rb) {
		st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.events),
					  tk_alloc_bpf__handle_event, a, NULL);
		if (!st->rb) {
			err = -errno;
			goto fail;
		}
		err = tk_unw_bpf__add_ring(st->unw, st->rb);
		if (err)
			goto fail;
	}
	err = attach_raw_tp(st, st->skel->progs.exec_raw);
	if (!err)
		err = attach_raw_tp(st, st->skel->progs.exit_raw);
	if (err)
		goto fail;

	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		bool syscalls = !a->opts.growth_faults_only, tp = tk_kfeat__page_fault_user();

		err = tp ? attach_raw_tp(st, st->skel->progs.fault_user) : attach_fault_event(st);
		if (err) {
			snprintf(why, why_sz, "cannot attach to page faults (%s): %s",
				 tk_alloc_bpf__fault_source(), strerror(-err));
			goto fail;
		}
		if ((syscalls && (err = attach_raw_tp(st, st->skel->progs.sys_enter))) ||
		    (syscalls && (err = attach_raw_tp(st, st->skel->progs.sys_exit))))
			goto fail;
		snprintf(a->describe, sizeof(a->describe), "page faults by %s%s of pid %d: no "
			 "allocator hook", tk_alloc_bpf__fault_source(),
			 syscalls ? ", brk and mmap by raw tracepoints sys_enter/sys_exit" :
				    " (page faults only: no brk, mmap)", a->pid);
		return 0;
	}
	if (a->hook == TK_ALLOC_HOOK_PRELOAD) {
		struct tk_alloc_syms sy = {};
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", a->preload_dir, TK_PRELOAD_SAMPLER);
		err = tk_alloc_syms__find(path, "", TK_ASYMS_MARKERS, &sy);
		if (err < 0 || !tk_alloc_syms__usable(&sy)) {
			snprintf(why, why_sz, "%s has no %s and %s to place uprobes on", path,
				 TK_MARKER_ALLOC, TK_MARKER_FREE);
			err = err < 0 ? err : -ENOENT;
			goto fail;
		}
		/*
		 * No pid filter: the command's children inherit LD_PRELOAD and are
		 * traced too; only processes that load this very file ever trap.
		 */
		for (int i = 0; i < sy.nr; i++) {
			struct bpf_program *p = sy.fns[i].kind == TK_AFN_MARKER_ALLOC ?
				st->skel->progs.marker_alloc : st->skel->progs.marker_free;

			err = tk_alloc_bpf__attach_uprobe(st, p, -1, sy.path, &sy.fns[i], false);
			if (err) {
				snprintf(why, why_sz, "cannot place a uprobe on %s in %s: %s",
					 sy.fns[i].name, path, strerror(-err));
				goto fail;
			}
		}
		snprintf(a->describe, sizeof(a->describe),
			 "in-process sampler %s (mean %llu bytes), uprobes on its markers only "
			 "(command and its children)", path, (unsigned long long)a->sample_bytes);
		return 0;
	}
	if (a->after_exec) {
		err = tk_alloc_bpf__find_in_process(a, a->pid, NULL, st->syms, why, why_sz);
		if (err)
			return err;
	}
	err = attach_allocator(a, st, a->pid);
	if (err) {
		snprintf(why, why_sz, "cannot place uprobes in %s: %s", st->syms->path,
			 strerror(-err));
		goto fail_quiet;
	}
	describe_hooks(a, st, a->pid);
	return 0;
fail:
	if (!why[0])
		snprintf(why, why_sz, "cannot attach the BPF programs: %s", strerror(-err));
fail_quiet:
	tk_alloc_bpf__detach(st);
	return err;
}
