// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of tracekit numa: loader of bpf/numa_trace.bpf.c.
 *
 * Open reads what this kernel has from its BTF (user/numa/numa_btf.c): the
 * positions of the tracepoints' arguments, the migrate_reason table, the
 * misplaced-page function and its node parameter; and from its config where
 * a page's node sits in its flags. Those go into .rodata, so one object
 * serves 6.1 to 6.18. The misplaced-page function is probed with fentry/fexit
 * first and kprobes second, and so is the per-folio migration function
 * (folio_migrate_flags or another, by BTF), which gives node pairs for every
 * migration: where it is attached the pairs are its, else the misplaced
 * function's. What cannot be loaded or attached is a missing[] line, not a
 * failure. What the programs record is read by numa_trace_read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "core/fsutil.h"
#include "core/log.h"
#include "numa/numa_btf.h"
#include "numa/numa_int.h"
#include "numa/numa_trace_int.h"
#include "bpf/numa_trace.h"
#include "numa_trace.skel.h"
#include "unwind/unwind_bpf.h"
#include "core/kfeat.h"

static const char *const sched_tps[NT_SCHED__COUNT] = {
	"sched_move_numa", "sched_swap_numa", "sched_stick_numa",
};

static void missing(struct nt_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void missing(struct nt_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->nr_missing >= TK_NUMA_MAX_MISSING)
		return;
	va_start(ap, fmt);
	vsnprintf(st->missing[st->nr_missing++], sizeof(st->missing[0]), fmt, ap);
	va_end(ap);
}

/* ---- open: what the kernel has ---------------------------------------------------- */

/*
 * NODES_PGSHIFT (numa_btf.h: 64 - NODES_SHIFT where the sparse-memory section
 * is not in the flags): from the config, else NODES_SHIFT and SPARSEMEM_VMEMMAP
 * from BTF (the arm64 and x86 guests have no config file).
 */
static void find_node_bits(struct tk_numa *n, struct nt_state *st, const struct btf *btf)
{
	char *config = NULL, from[4096];
	struct utsname u;
	int err, max, top;
	bool ksyms;

	st->nodes_shift = -1;
	uname(&u);
	err = tk_numa__read_kconfig(n->opts.proc_root, NULL, u.release, &config, from,
				    sizeof(from));
	if (!err) {
		err = tk_numa__nodes_pgshift(config, &st->nodes_pgshift, &st->nodes_shift);
		free(config);
		if (!err) {
			snprintf(st->nodes_from, sizeof(st->nodes_from), "%.80s", from);
			return;
		}
		if (err == -EOPNOTSUPP) {
			missing(st, "%.80s: not SPARSEMEM_VMEMMAP: the source node of misplaced "
				    "pages is unknown", from);
			return;
		}
	}
	/* MAX_NUMNODES = 1 << NODES_SHIFT */
	max = tk_numa_btf__max_numnodes(btf);
	top = tk_numa_btf__node_at_top(btf);
	/* a BTF without the functions of init sections (5.10's): kallsyms has them */
	ksyms = top == -ENOENT && !tk_numa__node_at_top_ksyms(n->opts.proc_root);
	if (ksyms)
		top = 0;
	if (max > 0 && !(max & (max - 1)) && !top) {
		st->nodes_shift = __builtin_ctz(max);
		st->nodes_pgshift = 64 - st->nodes_shift;
		snprintf(st->nodes_from, sizeof(st->nodes_from), "NODES_SHIFT by BTF, "
			 "SPARSEMEM_VMEMMAP by %s", ksyms ? "kallsyms" : "BTF");
		return;
	}
	if (max > 0 && top) {
		missing(st, "no kernel config (/proc/config.gz, /boot/config-%.40s), and BTF %s: "
			    "the source node of misplaced pages is unknown", u.release,
			top == -EOPNOTSUPP ? "has page_to_nid (the node is not in page flags)" :
					     "and kallsyms show no SPARSEMEM_VMEMMAP (a section may sit "
					     "above the node in page flags)");
		return;
	}
	missing(st, "no kernel config (/proc/config.gz, /boot/config-%.40s) and no NODES_SHIFT in "
		    "BTF: the source node of misplaced pages is unknown", u.release);
}

static void probe_kernel(struct tk_numa *n, struct nt_state *st, const struct btf *btf)
{
	int i, named;

	st->have_migrate = !tk_numa_btf__migrate_args(btf, &st->mig);
	if (!st->have_migrate)
		missing(st, "migrate:mm_migrate_pages: not in this kernel's BTF (or of a shape "
			    "this build does not know): no migration counts by reason");
	st->start_reason = tk_numa_btf__start_reason(btf);
	st->have_start = st->start_reason >= 0;
	if (!st->have_start)
		missing(st, "migrate:mm_migrate_pages_start: not in this kernel: no latency of "
			    "misplaced-page migrations");
	for (i = 0; i < NT_SCHED__COUNT; i++) {
		st->have_sched[i] = !tk_numa_btf__sched_args(btf, sched_tps[i],
							     &st->sched_args[i][NT_SA_TASK],
							     &st->sched_args[i][NT_SA_SRC_CPU],
							     &st->sched_args[i][NT_SA_DST_CPU]);
		if (!st->have_sched[i])
			missing(st, "sched:%s: not in this kernel", sched_tps[i]);
	}
	st->skip_arg = tk_numa_btf__skip_vma_arg(btf);
	if (st->skip_arg >= 0)
		st->nr_skip = tk_numa_btf__skip_reasons(btf, st->skip_names, NT_MAX_SKIP);
	if (st->skip_arg < 0 || st->nr_skip <= 0) {
		st->skip_arg = -1;
		missing(st, "sched_skip_vma_numa: not in this kernel (6.7+): why NUMA balancing "
			    "skipped VMAs is not seen");
	}
	named = tk_numa_btf__reasons(btf, st->reason_map, NT_MAX_KREASONS);
	if (named < 0)
		missing(st, "enum migrate_reason: not in BTF: every reason is \"unknown\"");
	if (tk_numa_btf__misplaced_fn(btf, st->mp_fn, sizeof(st->mp_fn), &st->mp_node_arg)) {
		st->mp_fn[0] = '\0';
		missing(st, "no migrate_misplaced_folio or migrate_misplaced_page in BTF: no "
			    "per-page misplaced counts or destination nodes");
	}
	if (tk_numa_btf__folio_fn(btf, &st->ff)) {
		st->ff.name[0] = '\0';
		missing(st, "no folio_migrate_flags (or like function) in BTF: node pairs of "
			    "misplaced pages only");
	}
	if (st->mp_fn[0] || st->ff.name[0])
		find_node_bits(n, st, btf);
	if (st->ff.name[0] && st->nodes_shift < 0) {
		st->ff.name[0] = '\0';	/* nodes unknown: nothing to count */
		missing(st, "node bits of page flags unknown: no node pairs per migrated folio");
	}
}

static bool have_kprobes(const struct tk_numa *n)
{
	const char *sys = n->opts.sys_root ? n->opts.sys_root : "/sys";
	char path[4096];

	if (n->caps && n->caps->caps[TK_CAP_PROG_KPROBE].present)
		return n->caps->caps[TK_CAP_PROG_KPROBE].status == TK_SUPPORTED;
	return !tk_path_join(path, sizeof(path), sys, "bus/event_source/devices/kprobe") &&
	       !access(path, F_OK);
}

/*
 * Open, configure and load the object with the misplaced-page probe of @mp,
 * folio probe of @fm, and --stacks unwound per @unwind.
 */
static int load_as(struct tk_numa *n, struct nt_state *st, enum mp_mode mp, enum mp_mode fm,
		   enum tk_unwind_mode unwind)
{
	struct numa_trace_bpf *s;
	int i, k, err;

	s = numa_trace_bpf__open();
	if (!s)
		return -errno;
	s->rodata->filter_pids = n->opts.nr_pids > 0;
	s->rodata->filter_cgroup = n->opts.cgroup != NULL;
	s->rodata->want_stacks = n->opts.stacks;
	if (st->have_migrate) {
		int pos[NT_LARGE_SPLIT + 1] = { st->mig.succeeded,     st->mig.failed,
						st->mig.thp_succeeded, st->mig.thp_failed,
						st->mig.thp_split,     st->mig.split };

		for (i = 0; i <= NT_LARGE_SPLIT; i++)
			s->rodata->mig_arg[i] = pos[i] < 0 ? NT_NO_ARG : pos[i];
		s->rodata->mig_reason_arg = st->mig.reason;
		bpf_program__set_autoload(s->progs.migrate_end, true);
	}
	if (st->have_start && st->have_migrate) {
		s->rodata->start_reason_arg = st->start_reason;
		bpf_program__set_autoload(s->progs.migrate_start, true);
	}
	for (k = 0; k < NT_SCHED__COUNT; k++)
		for (i = 0; i < NT_SA__COUNT; i++)
			s->rodata->sched_arg[k][i] = st->sched_args[k][i] < 0 ? 0 :
						     st->sched_args[k][i];
	bpf_program__set_autoload(s->progs.sched_move, st->have_sched[NT_SCHED_MOVE]);
	bpf_program__set_autoload(s->progs.sched_swap, st->have_sched[NT_SCHED_SWAP]);
	bpf_program__set_autoload(s->progs.sched_stick, st->have_sched[NT_SCHED_STICK]);
	if (st->skip_arg >= 0) {
		s->rodata->skip_reason_arg = st->skip_arg;
		bpf_program__set_autoload(s->progs.skip_vma, true);
	}
	for (i = 0; i < NT_MAX_KREASONS; i++)
		s->rodata->reason_map[i] = st->reason_map[i];
	s->rodata->unknown_reason = TK_MR_UNKNOWN;
	s->rodata->misplaced_reason = TK_MR_NUMA_MISPLACED;
	s->rodata->misplaced_node_arg = st->mp_node_arg;
	if (st->nodes_shift > 0) {
		s->rodata->nodes_pgshift = st->nodes_pgshift;
		s->rodata->nodes_mask = (1ULL << st->nodes_shift) - 1;
	}
	if (n->opts.stacks) {
		bpf_map__set_max_entries(s->maps.ustacks, 65536);
		bpf_map__set_max_entries(s->maps.stack_pages, 131072);
	}
	if (mp == MP_FENTRY) {
		bpf_program__set_autoload(s->progs.misplaced_fentry, true);
		bpf_program__set_autoload(s->progs.misplaced_fexit, true);
		bpf_program__set_attach_target(s->progs.misplaced_fentry, 0, st->mp_fn);
		bpf_program__set_attach_target(s->progs.misplaced_fexit, 0, st->mp_fn);
	} else if (mp == MP_KPROBE) {
		bpf_program__set_autoload(s->progs.misplaced_kprobe, true);
		bpf_program__set_autoload(s->progs.misplaced_kretprobe, true);
	}
	s->rodata->folio_dst_arg = st->ff.dst;
	s->rodata->folio_src_arg = st->ff.src;
	if (fm == MP_FENTRY) {
		s->rodata->folio_ret_arg = st->ff.ret < 0 ? NT_NO_ARG : st->ff.ret;
		bpf_program__set_autoload(s->progs.folio_fexit, true);
		bpf_program__set_attach_target(s->progs.folio_fexit, 0, st->ff.name);
	} else if (fm == MP_KPROBE) {
		bpf_program__set_autoload(s->progs.folio_kprobe, true);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);
		struct tk_unw_bpf_opts uo = {
			.mode = n->opts.stacks ? unwind : TK_UNWIND_FP,
			.rows = tk_unw__rows_for(n->opts.unwind_mem),
			.procs = 1024,
			.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
		};
		char why[200];

		err = tk_unw_bpf__prepare(&v, &uo, why, sizeof(why));
		if (why[0])
			snprintf(st->unwind_note, sizeof(st->unwind_note), "unwinding: %s%s",
				 err ? "" : "frame pointers only: ", why);
		st->kernel_note[0] = '\0';
		if (!err && tk_kfeat__fit_maps(s->obj, why, sizeof(why)))
			snprintf(st->kernel_note, sizeof(st->kernel_note),
				 "this kernel (before 6.1) needs preallocated maps in tracing "
				 "programs: fewer entries (%s); what does not fit is counted as lost",
				 why);
		if (!err)
			err = numa_trace_bpf__load(s);
		if (!err)
			err = tk_unw_bpf__open(&v, &st->unw);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);

		/* a kernel that refuses the unwinder: the same programs without it */
		if (tk_unw_bpf__refused(&v, n->opts.stacks ? unwind : TK_UNWIND_FP, err,
					st->unwind_note, sizeof(st->unwind_note))) {
			tk_unw_bpf__free(st->unw);
			st->unw = NULL;
			numa_trace_bpf__destroy(s);
			return load_as(n, st, mp, fm, TK_UNWIND_FP);
		}
	}
	if (err) {
		tk_unw_bpf__free(st->unw);
		st->unw = NULL;
		numa_trace_bpf__destroy(s);
		return err;
	}
	st->skel = s;
	st->mp = mp;
	st->fm = fm;
	return 0;
}

/*
 * One attempt: what an earlier one noted of the unwinder is not this one's (a
 * load refused for its fentry probes, with or without the unwinder, noted it
 * "refused" and was then loaded without fentry, with the unwinder).
 */
static int load(struct tk_numa *n, struct nt_state *st, enum mp_mode mp, enum mp_mode fm)
{
	st->unwind_note[0] = '\0';
	return load_as(n, st, mp, fm, n->opts.unwind);
}

/*
 * Load with the function probes of @mode: both, else the misplaced one
 * alone (the per-folio function may be one the kernel will not trace).
 */
static int load_probes(struct tk_numa *n, struct nt_state *st, enum mp_mode mode)
{
	enum mp_mode mp = st->mp_fn[0] ? mode : MP_NONE;
	int err = -ENOENT;

	if (st->ff.name[0]) {
		err = load(n, st, mp, mode);
		if (err && !st->ff_err)
			st->ff_err = err;
		if (!err || mp == MP_NONE)
			return err;
	}
	return load(n, st, mp, MP_NONE);
}

static void bpf_free(struct tk_numa *n)
{
	struct nt_state *st = n->priv;
	int i;

	if (!st)
		return;
	for (i = st->nr_links - 1; i >= 0; i--)
		bpf_link__destroy(st->links[i]);
	ring_buffer__free(st->rb);
	tk_unw_bpf__free(st->unw);
	numa_trace_bpf__destroy(st->skel);
	if (st->cgroup_fd >= 0)
		close(st->cgroup_fd);
	free(st);
	n->priv = NULL;
}

static int bpf_open(struct tk_numa *n, char *why, size_t why_sz)
{
	struct tk_log_scope quiet;
	struct nt_state *st;
	struct btf *btf;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(why, why_sz, "out of memory");
		return -ENOMEM;
	}
	st->cgroup_fd = -1;
	st->nodes_shift = -1;
	st->skip_arg = -1;
	n->priv = st;

	btf = tk_kfeat__btf_get();
	if (!btf) {
		err = -errno;
		snprintf(why, why_sz, "kernel has no BTF (/sys/kernel/btf/vmlinux): %s; the "
			 "vmstat backend needs none", strerror(-err));
		goto fail;
	}
	probe_kernel(n, st, btf);
	tk_kfeat__btf_put(btf);
	if (!st->have_migrate && !st->have_sched[0] && !st->have_sched[1] && !st->have_sched[2]) {
		snprintf(why, why_sz, "this kernel has neither migrate:mm_migrate_pages nor the "
			 "sched_*_numa tracepoints");
		err = -ENOENT;
		goto fail;
	}

	tk_log__push(&tk_log_quiet, &quiet);
	err = -ENOENT;
	if (st->mp_fn[0] || st->ff.name[0]) {
		/* refused for every function (a security policy): its two variants are not tried */
		err = tk_kfeat__fentry();
		if (!err)
			err = load_probes(n, st, MP_FENTRY);
		st->fentry_err = err;
		if (err && have_kprobes(n))
			err = load_probes(n, st, MP_KPROBE);
	}
	if (err)
		err = load(n, st, MP_NONE, MP_NONE);
	tk_log__pop(&quiet);
	if (err) {
		snprintf(why, why_sz, "cannot load the BPF programs: %s", strerror(-err));
		goto fail;
	}
	return 0;
fail:
	bpf_free(n);
	return err;
}

/* ---- start ------------------------------------------------------------------------------ */

static int add_link(struct nt_state *st, struct bpf_link *l)
{
	if (!l)
		return -errno;
	st->links[st->nr_links++] = l;
	return 0;
}

static int attach_tp(struct nt_state *st, struct bpf_program *prog, const char *tp)
{
	return add_link(st, bpf_program__attach_raw_tracepoint(prog, tp));
}

static void attach_misplaced(struct tk_numa *n, struct nt_state *st)
{
	struct numa_trace_bpf *s = st->skel;
	int err = 0, n0 = st->nr_links;

	if (!st->mp_fn[0])
		return;
	if (st->mp == MP_FENTRY) {
		err = add_link(st, bpf_program__attach(s->progs.misplaced_fentry));
		if (!err)
			err = add_link(st, bpf_program__attach(s->progs.misplaced_fexit));
	} else if (st->mp == MP_KPROBE) {
		err = add_link(st, bpf_program__attach_kprobe(s->progs.misplaced_kprobe, false,
							      st->mp_fn));
		if (!err)
			err = add_link(st, bpf_program__attach_kprobe(s->progs.misplaced_kretprobe,
								      true, st->mp_fn));
	}
	if (st->mp != MP_NONE && !err) {
		st->mp_attached = true;
		return;
	}
	while (st->nr_links > n0)
		bpf_link__destroy(st->links[--st->nr_links]);
	if (st->fentry_err && st->mp == MP_NONE)
		/* (within the report's 160 characters) */
		missing(st, "fentry on %s: refused (%s); no kprobes: no misplaced-page counts "
			    "nor node pairs; latency from mm_migrate_pages_start", st->mp_fn,
			strerror(-st->fentry_err));
	else
		missing(st, "%s on %s: %s: no per-page misplaced counts or destination nodes",
			st->mp == MP_FENTRY ? "fentry" : "kprobe", st->mp_fn, strerror(-err));
}

static void attach_folio(struct tk_numa *n, struct nt_state *st)
{
	struct numa_trace_bpf *s = st->skel;
	int err;

	if (!st->ff.name[0])
		return;
	if (st->fm == MP_FENTRY)
		err = add_link(st, bpf_program__attach(s->progs.folio_fexit));
	else if (st->fm == MP_KPROBE)
		err = add_link(st, bpf_program__attach_kprobe(s->progs.folio_kprobe, false,
							      st->ff.name));
	else
		err = st->ff_err ? st->ff_err : -ENOENT;
	st->ff_attached = !err;
	if (!err)
		return;
	/* (within the report's 160 characters) */
	if (st->fm == MP_NONE && !have_kprobes(n))
		missing(st, "fexit on %s: refused (%s); no kprobes: no node pairs per migrated "
			    "folio", st->ff.name, strerror(-err));
	else
		missing(st, "%s on %s: %s: no node pairs per migrated folio",
			st->fm == MP_KPROBE ? "kprobe" : "fexit", st->ff.name, strerror(-err));
}

static void describe(struct nt_state *st)
{
	char *a = st->attach;
	size_t sz = sizeof(st->attach), len = 0;
	int i, nsched = 0;

	if (st->att_migrate)
		len += snprintf(a + len, sz - len, "raw_tp mm_migrate_pages (args by BTF%s%s)%s",
				st->mig.split_name[0] ? ": " : "", st->mig.split_name,
				st->att_start ? ", mm_migrate_pages_start" : "");
	for (i = 0; i < NT_SCHED__COUNT; i++)
		nsched += st->att_sched[i];
	if (nsched == NT_SCHED__COUNT)
		len += snprintf(a + len, sz - len, "%ssched_{move,swap,stick}_numa",
				len ? ", " : "raw_tp ");
	else
		for (i = 0; i < NT_SCHED__COUNT; i++)
			if (st->att_sched[i])
				len += snprintf(a + len, sz - len, "%s%s", len ? ", " : "raw_tp ",
						sched_tps[i]);
	if (len < sz && st->att_skip)
		len += snprintf(a + len, sz - len, "%ssched_skip_vma_numa", len ? ", " : "raw_tp ");
	if (len < sz && st->mp_attached)
		len += snprintf(a + len, sz - len, "; %s: %s", st->mp_fn,
				st->mp == MP_FENTRY ? "fentry" : "kprobe");
	if (len < sz && st->ff_attached)
		len += snprintf(a + len, sz - len, "; node pairs: %s %s per folio (%s)",
				st->ff.name, st->fm == MP_FENTRY ? "fexit" : "kprobe",
				st->nodes_from);
	else if (len < sz && st->mp_attached)
		len += snprintf(a + len, sz - len, "; node pairs: misplaced only (source: %s)",
				st->nodes_shift < 0 ? "unknown" : st->nodes_from);
}

static int bpf_start(struct tk_numa *n, char *why, size_t why_sz)
{
	struct nt_state *st = n->priv;
	struct numa_trace_bpf *s = st->skel;
	struct tk_log_scope quiet;
	__u8 one = 1;
	int i, err;

	for (i = 0; i < n->opts.nr_pids; i++) {
		__u32 pid = n->opts.pids[i];

		err = bpf_map__update_elem(s->maps.pids, &pid, sizeof(pid), &one, sizeof(one),
					   BPF_ANY);
		if (err) {
			snprintf(why, why_sz, "cannot add pid %u to the filter: %s", pid,
				 strerror(-err));
			return err;
		}
	}
	/*
	 * --stacks -p: those processes' entries now, so the unwinder knows them at
	 * their first migration (else it goes by the frame pointer until the event
	 * it sends is read: the first compaction of a Python program stopped at libc's
	 * write, 160 of 800 pages). A capture that fails is left to that event.
	 */
	for (i = 0; n->opts.stacks && n->sym && st->unw && i < n->opts.nr_pids; i++) {
		__u32 pid = n->opts.pids[i];

		if (!tk_symbolizer__has(n->sym, pid, 0) && !tk_symbolizer__capture(n->sym, pid, 0))
			tk_unw_bpf__update(st->unw, n->sym, pid, 0);
	}
	if (n->opts.cgroup) {
		__u32 zero = 0;

		st->cgroup_fd = open(n->opts.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st->cgroup_fd < 0) {
			err = -errno;
			snprintf(why, why_sz, "cgroup %s: %s", n->opts.cgroup, strerror(-err));
			return err;
		}
		err = bpf_map__update_elem(s->maps.cgroup_map, &zero, sizeof(zero),
					   &st->cgroup_fd, sizeof(st->cgroup_fd), BPF_ANY);
		if (err) {
			snprintf(why, why_sz, "cgroup %s: %s", n->opts.cgroup, strerror(-err));
			return err;
		}
	}
	st->rb = ring_buffer__new(bpf_map__fd(s->maps.events), tk_numa_bpf__handle_event, n,
				  NULL);
	if (!st->rb) {
		err = -errno;
		snprintf(why, why_sz, "ring buffer: %s", strerror(-err));
		return err;
	}
	err = tk_unw_bpf__add_ring(st->unw, st->rb);
	if (err) {
		snprintf(why, why_sz, "ring buffer: %s", strerror(-err));
		return err;
	}

	tk_log__push(&tk_log_quiet, &quiet);
	/* the misplaced-page function first: its state must exist before the end event */
	attach_misplaced(n, st);
	attach_folio(n, st);
	if (st->have_migrate) {
		err = attach_tp(st, s->progs.migrate_end, "mm_migrate_pages");
		st->att_migrate = !err;
		if (err)
			missing(st, "raw_tp mm_migrate_pages: %s: no migration counts by reason",
				strerror(-err));
	}
	if (st->att_migrate && st->have_start) {
		err = attach_tp(st, s->progs.migrate_start, "mm_migrate_pages_start");
		st->att_start = !err;
		if (err)
			missing(st, "raw_tp mm_migrate_pages_start: %s: no latency",
				strerror(-err));
	}
	for (i = 0; i < NT_SCHED__COUNT; i++) {
		struct bpf_program *p = i == NT_SCHED_MOVE ? s->progs.sched_move :
					i == NT_SCHED_SWAP ? s->progs.sched_swap :
							     s->progs.sched_stick;

		if (!st->have_sched[i])
			continue;
		err = attach_tp(st, p, sched_tps[i]);
		st->att_sched[i] = !err;
		if (err)
			missing(st, "raw_tp %s: %s", sched_tps[i], strerror(-err));
	}
	if (st->skip_arg >= 0) {
		err = attach_tp(st, s->progs.skip_vma, "sched_skip_vma_numa");
		st->att_skip = !err;
		if (err)
			missing(st, "raw_tp sched_skip_vma_numa: %s: why NUMA balancing skipped VMAs "
				    "is not seen", strerror(-err));
	}
	tk_log__pop(&quiet);
	if (!st->att_migrate && !st->att_sched[0] && !st->att_sched[1] && !st->att_sched[2]) {
		snprintf(why, why_sz, "no tracepoint could be attached (%s)",
			 st->nr_missing ? st->missing[st->nr_missing - 1] : "?");
		return -ENOENT;
	}
	describe(st);
	return 0;
}

const struct tk_numa_backend tk_numa_backend_bpf = {
	.name = "bpf",
	.open = bpf_open,
	.start = bpf_start,
	.poll = tk_numa_bpf__poll,
	.collect = tk_numa_bpf__collect,
	.stacks = tk_numa_bpf__stacks,
	.free = bpf_free,
};

/*
 * What `tracekit numa` would load here, loaded and closed (the capability
 * snapshot's bpf.load.numa), choosing with @caps as a session does. 0 and
 * what was chosen in @msg, or a negative errno and why.
 */
int tk_numa_bpf__probe_load(const struct tk_caps *caps, char *msg, size_t msg_sz)
{
	struct tk_numa *n = calloc(1, sizeof(*n));
	struct nt_state *st;
	char why[256] = "";
	int err;

	if (!n)
		return -ENOMEM;
	n->opts.sz = sizeof(n->opts);
	n->caps = caps;
	err = bpf_open(n, why, sizeof(why));
	if (err) {
		snprintf(msg, msg_sz, "%s", why[0] ? why : strerror(-err));
		free(n);
		return err;
	}
	st = n->priv;
	snprintf(msg, msg_sz, "raw_tp %s%s; misplaced pages by %s", st->have_migrate ?
		 "mm_migrate_pages" : "", st->have_sched[0] ? " sched_*_numa" : "",
		 st->mp == MP_FENTRY ? "fentry" : st->mp == MP_KPROBE ? "kprobe" : "nothing");
	bpf_free(n);
	free(n);
	return 0;
}
