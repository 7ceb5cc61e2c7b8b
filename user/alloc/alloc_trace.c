// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The BPF backend of allocation sessions: loader of bpf/alloc_trace.bpf.c.
 *
 * Hooks, by mode (traps per malloc+free pair; a trap costs µs, so this is the cost):
 *  - sampled, uprobes with sessions: entry of each allocator function (1) and
 *    of free (1); the return runs only for sampled calls.
 *  - sampled, uprobes without sessions (kernels before 6.13): entry and
 *    return of each allocating function (2) and free (1).
 *  - full: entry and return (2) and free (1).
 *  - preload: libtkalloc.so samples in-process; its two markers trap only for
 *    sampled allocations and their frees.
 *  - growth: raw tracepoints on page faults and brk/mmap; no allocator trap.
 * Records come through one ring buffer; growth counts stay in kernel maps and
 * are delivered as deltas at every poll.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "alloc/agent_proto.h"
#include "alloc/alloc_int.h"
#include "alloc/alloc_rate.h"
#include "alloc/alloc_syms.h"
#include "bpf/alloc_trace.h"
#include "alloc_trace.skel.h"
#include "unwind/unwind_bpf.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "core/internal.h"
#include "core/log.h"

/* Not in the 6.1 uapi headers this builds against (include/uapi/linux/bpf.h) */
#define AT_TRACE_UPROBE_MULTI 48
#define AT_TRACE_UPROBE_SESSION 57

_Static_assert((int)TK_AFN_MALLOC == (int)AT_MALLOC && (int)TK_AFN_FREE == (int)AT_FREE &&
		       (int)TK_AFN_MARKER_ALLOC == (int)AT_MARKER_ALLOC &&
		       (int)TK_AFN_MARKER_FREE == (int)AT_MARKER_FREE &&
		       (int)TK_AFN_PVALLOC == (int)AT_PVALLOC,
	       "alloc_syms.h and alloc_trace.h number function kinds alike");
_Static_assert((int)AT_GROWTH_FAULT == (int)TK_GROWTH_FAULT &&
		       (int)AT_GROWTH_BRK == (int)TK_GROWTH_BRK &&
		       (int)AT_GROWTH_MMAP == (int)TK_GROWTH_MMAP,
	       "growth kinds");

#define MAX_LINKS (2 * TK_ALLOC_MAX_FNS + 8)
#define MAX_STALE 64

struct growth_seen {
	uint64_t used;			/* 1: empty slots start with 0, and a key might */
	struct at_growth_key key;
	struct at_growth_val val;	/* delivered so far */
};

struct at_state {
	struct alloc_trace_bpf *skel;
	bool sessions;			/* uprobe_multi sessions work here */
	struct tk_alloc_syms *syms;
	int multi_fds[2];		/* uprobe_multi links: allocating, freeing */
	struct bpf_link *links[MAX_LINKS];
	int nr_links;
	struct ring_buffer *rb;
	uint64_t seen[AT_CNT__COUNT];	/* counters delivered so far */
	struct tk_hashmap growth;	/* struct growth_seen by key; set up at first use */
	struct {
		uint32_t pid;
		int64_t exec_ns;
	} stale[MAX_STALE];		/* exec'd: capture their maps again soon */
	int nr_stale;
	int err;			/* from a ring callback */
	struct tk_unw_bpf *unw;		/* NULL: user stacks by frame pointer */
};

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

static int uprobe_multi_link(int prog_fd, int type, const char *path, const uint64_t *offsets,
			     const uint64_t *cookies, int cnt, int pid)
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

/*
 * Functions of our own for uprobes to probe and calibrate on. What a hit
 * costs depends on the probed instruction: a push (how most allocator
 * functions begin) is emulated, others (free of glibc begins with a test)
 * are single-stepped out of line, a second trap. One of each.
 */
void tk_alloc__calib_push(void);
void tk_alloc__calib_step(void);
#ifdef __x86_64__
__asm__(".text\n"
	".p2align 4\n"
	".globl tk_alloc__calib_push\n"
	".type tk_alloc__calib_push, @function\n"
	"tk_alloc__calib_push:\n"
	"	push %r12\n"
	"	pop %r12\n"
	"	ret\n"
	".size tk_alloc__calib_push, .-tk_alloc__calib_push\n"
	".p2align 4\n"
	".globl tk_alloc__calib_step\n"
	".type tk_alloc__calib_step, @function\n"
	"tk_alloc__calib_step:\n"
	"	test %rdi, %rdi\n"
	"	ret\n"
	".size tk_alloc__calib_step, .-tk_alloc__calib_step\n");
#else
__attribute__((noinline, used)) void tk_alloc__calib_push(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, used)) void tk_alloc__calib_step(void)
{
	__asm__ __volatile__("" ::: "memory");
}
#endif

/* The file and offset of @addr in our own mappings. */
static int self_offset(const void *addr, char *path, size_t path_sz, uint64_t *off)
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

/*
 * The table of geometric (exponential) intervals: 4096 quantiles of -ln(1-u)
 * at the centres of equal strata, scaled so their mean is exactly @mean.
 */
static void fill_intervals(volatile __u64 *t, uint64_t mean)
{
	double x[AT_RAND_ENTRIES], sum = 0;
	uint64_t total = 0, want = mean * AT_RAND_ENTRIES;
	int i;

	for (i = 0; i < AT_RAND_ENTRIES; i++) {
		x[i] = -log1p(-(i + 0.5) / AT_RAND_ENTRIES);
		sum += x[i];
	}
	for (i = 0; i < AT_RAND_ENTRIES; i++) {
		t[i] = (uint64_t)llround(x[i] * mean * AT_RAND_ENTRIES / sum);
		if (!t[i])
			t[i] = 1;
		total += t[i];
	}
	/* rounding: the largest entry takes the difference */
	t[AT_RAND_ENTRIES - 1] += want - total;
}

/* ---- loading ---------------------------------------------------------------------------- */

enum load_kind {
	LOAD_SESSION,			/* alloc_session + free_enter on uprobe_multi */
	LOAD_CLASSIC,			/* alloc_enter + alloc_exit + free_enter */
	LOAD_MARKERS,
	LOAD_GROWTH,
	LOAD_COUNT,			/* count_calls only */
	LOAD_COUNT_MULTI,		/* count_calls on uprobe_multi: one link for all */
};

/* Open, configure and load the programs of @k, with the unwinder per @unwind. */
static struct alloc_trace_bpf *load_as(struct tk_alloc *a, enum load_kind k,
				       enum tk_unwind_mode unwind, int *errp)
{
	struct alloc_trace_bpf *s = alloc_trace_bpf__open();
	uint64_t mean = a ? a->sample_bytes : 0;
	bool full = a && a->opts.mode == TK_ALLOC_MODE_FULL;
	int err;

	if (!s) {
		*errp = -errno;
		return NULL;
	}
	switch (k) {
	case LOAD_SESSION:
		bpf_program__set_autoload(s->progs.alloc_session, true);
		bpf_program__set_expected_attach_type(s->progs.alloc_session,
						      AT_TRACE_UPROBE_SESSION);
		bpf_program__set_autoload(s->progs.free_enter, true);
		bpf_program__set_expected_attach_type(s->progs.free_enter,
						      AT_TRACE_UPROBE_MULTI);
		break;
	case LOAD_CLASSIC:
		bpf_program__set_autoload(s->progs.alloc_enter, true);
		bpf_program__set_autoload(s->progs.alloc_exit, true);
		bpf_program__set_autoload(s->progs.free_enter, true);
		break;
	case LOAD_MARKERS:
		bpf_program__set_autoload(s->progs.marker_alloc, true);
		bpf_program__set_autoload(s->progs.marker_free, true);
		break;
	case LOAD_GROWTH:
		bpf_program__set_autoload(s->progs.fault_user, true);
		bpf_program__set_autoload(s->progs.sys_enter, true);
		bpf_program__set_autoload(s->progs.sys_exit, true);
		break;
	case LOAD_COUNT:
		bpf_program__set_autoload(s->progs.count_calls, true);
		break;
	case LOAD_COUNT_MULTI:
		bpf_program__set_autoload(s->progs.count_calls, true);
		bpf_program__set_expected_attach_type(s->progs.count_calls, AT_TRACE_UPROBE_MULTI);
		break;
	}
	if (k != LOAD_COUNT && k != LOAD_COUNT_MULTI)
		bpf_program__set_autoload(s->progs.exec_raw, true);
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->sample_all = full || !mean;
	s->rodata->track_live = k != LOAD_MARKERS;
	if (mean)
		fill_intervals(s->rodata->intervals, mean);
	/* full mode remembers every live object and sends every call */
	bpf_map__set_max_entries(s->maps.live, full ? 1 << 20 : 1 << 17);
	bpf_map__set_max_entries(s->maps.events, full ? 16 << 20 : 8 << 20);
	s->rodata->wake_bytes = (full ? 16 << 20 : 8 << 20) / 4;
	if (k != LOAD_GROWTH) {
		bpf_map__set_max_entries(s->maps.growth, 1);
		bpf_map__set_max_entries(s->maps.stacks, 1);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);
		struct tk_unw_bpf_opts uo = {
			.mode = a && k != LOAD_COUNT && k != LOAD_COUNT_MULTI ? unwind :
										TK_UNWIND_FP,
			.rows = a ? a->opts.unwind_rows : 0,
			.procs = 256,
			.prog_type = k == LOAD_GROWTH ? BPF_PROG_TYPE_RAW_TRACEPOINT :
							BPF_PROG_TYPE_KPROBE,
		};
		char why[200];

		err = tk_unw_bpf__prepare(&v, &uo, why, sizeof(why));
		if (a && why[0])
			snprintf(a->unwind_note, sizeof(a->unwind_note), "unwinding: %s%s",
				 err ? "" : "frame pointers only: ", why);
		if (!err)
			err = alloc_trace_bpf__load(s);
	}
	{
		struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(s);

		/* a kernel that refuses the unwinder: the same programs without it */
		if (a && tk_unw_bpf__refused(&v, unwind, err, a->unwind_note,
					     sizeof(a->unwind_note))) {
			alloc_trace_bpf__destroy(s);
			return load_as(a, k, TK_UNWIND_FP, errp);
		}
	}
	if (err) {
		alloc_trace_bpf__destroy(s);
		*errp = err;
		return NULL;
	}
	if (mean) {
		int cpu;

		for (cpu = 0; cpu < AT_MAX_CPUS; cpu++)
			s->bss->countdown[cpu] =
				s->rodata->intervals[rand() & (AT_RAND_ENTRIES - 1)];
	}
	return s;
}

static struct alloc_trace_bpf *load(struct tk_alloc *a, enum load_kind k, int *errp)
{
	return load_as(a, k, a ? a->opts.unwind : TK_UNWIND_FP, errp);
}

/* Can a uprobe session link be made here? Tried on a function of our own. */
static bool sessions_work(struct alloc_trace_bpf *s)
{
	char path[PATH_MAX];
	uint64_t off, cookie = 0;
	int fd;

	if (self_offset((const void *)tk_alloc__calib_push, path, sizeof(path), &off))
		return false;
	fd = uprobe_multi_link(bpf_program__fd(s->progs.alloc_session), AT_TRACE_UPROBE_SESSION,
			       path, &off, &cookie, 1, getpid());
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* ---- finding the allocator ------------------------------------------------------------ */

/* The allocator of process @pid, with the capability snapshot's findings when they are its. */
static int find_in_process(struct tk_alloc *a, int pid, const struct tk_caps *caps,
			   struct tk_alloc_syms *syms, char *why, size_t why_sz)
{
	const struct tk_proc_info *known = NULL;

	if (caps && caps->pid == pid && caps->proc.pid == pid)
		known = &caps->proc;
	return tk_alloc_syms__find_process(a ? a->opts.proc_root : NULL, pid, known, syms, why,
					   why_sz);
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

static int attach_uprobe(struct at_state *st, struct bpf_program *prog, int pid,
			 const char *path, const struct tk_alloc_fn *fn, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret,
		    .bpf_cookie = AT_COOKIE(fn->vaddr, fn->kind));

	return add_link(st, bpf_program__attach_uprobe_opts(prog, pid > 0 ? pid : -1, path,
							    fn->offset, &o));
}

static int attach_allocator(struct tk_alloc *a, struct at_state *st, int pid)
{
	const struct tk_alloc_syms *sy = st->syms;
	uint64_t offs[2][TK_ALLOC_MAX_FNS], cookies[2][TK_ALLOC_MAX_FNS];
	int n[2] = { 0, 0 }, i, err;

	set_ranges(st->skel, sy);
	if (st->sessions) {
		for (i = 0; i < sy->nr; i++) {
			int f = sy->fns[i].kind == TK_AFN_FREE;

			offs[f][n[f]] = sy->fns[i].offset;
			cookies[f][n[f]++] = AT_COOKIE(sy->fns[i].vaddr, sy->fns[i].kind);
		}
		st->multi_fds[0] = uprobe_multi_link(bpf_program__fd(st->skel->progs.alloc_session),
						     AT_TRACE_UPROBE_SESSION, sy->path, offs[0],
						     cookies[0], n[0], pid);
		if (st->multi_fds[0] < 0)
			return st->multi_fds[0];
		st->multi_fds[1] = uprobe_multi_link(bpf_program__fd(st->skel->progs.free_enter),
						     AT_TRACE_UPROBE_MULTI, sy->path, offs[1],
						     cookies[1], n[1], pid);
		return st->multi_fds[1] < 0 ? st->multi_fds[1] : 0;
	}
	for (i = 0; i < sy->nr; i++) {
		const struct tk_alloc_fn *fn = &sy->fns[i];

		if (fn->kind == TK_AFN_FREE) {
			err = attach_uprobe(st, st->skel->progs.free_enter, pid, sy->path, fn, false);
		} else {
			err = attach_uprobe(st, st->skel->progs.alloc_enter, pid, sy->path, fn,
					    false);
			if (!err)
				err = attach_uprobe(st, st->skel->progs.alloc_exit, pid, sy->path,
						    fn, true);
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
	len = snprintf(a->describe, sizeof(a->describe), "%s on %s, pid %d, %d functions", how,
		       sy->path, pid, sy->nr);
	for (i = 0; i < sy->nr && len < sizeof(a->describe); i++)
		len += snprintf(a->describe + len, sizeof(a->describe) - len, "%s%s",
				i ? ", " : ": ", sy->fns[i].name);
}

static int attach_raw_tp(struct at_state *st, struct bpf_program *prog)
{
	return add_link(st, bpf_program__attach_raw_tracepoint(prog, bpf_program__section_name(prog) +
							       strlen("raw_tp/")));
}

/* ---- records ---------------------------------------------------------------------------- */

/*
 * A process exec'd: ld.so maps its libraries after the exec event, so its
 * maps are captured again once it has had STALE_NS to do that (or at drain).
 * The symbolizer keeps one capture per process: the last one names
 * everything the new program did.
 */
#define STALE_NS 100000000LL

static void refresh_stale(struct tk_alloc *a, struct at_state *st, bool all)
{
	int64_t now = tk_now_ns(CLOCK_MONOTONIC);
	int i;

	for (i = 0; i < st->nr_stale;) {
		if (all || now - st->stale[i].exec_ns >= STALE_NS) {
			tk_alloc__refresh_maps(a, st->stale[i].pid);
			st->stale[i] = st->stale[--st->nr_stale];
		} else {
			i++;
		}
	}
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct tk_alloc *a = ctx;
	struct at_state *st = a->priv;
	const struct at_alloc *r = data;
	const struct at_free *f = data;
	struct tk_alloc_rec rec = {};
	char comm[sizeof(r->comm) + 1];
	int err = 0;

	if (size < sizeof(__u32))
		return 0;
	switch (r->type) {
	case AT_REC_ALLOC:
		if (size < offsetof(struct at_alloc, ips) ||
		    r->nr_ips > (size - offsetof(struct at_alloc, ips)) / sizeof(__u64))
			return 0;
		memcpy(comm, r->comm, sizeof(r->comm));
		comm[sizeof(r->comm)] = '\0';
		rec.pid = r->pid;
		rec.tid = r->tid;
		rec.ptr = r->ptr;
		rec.size = r->size;
		rec.ts_ns = r->ts_ns;
		rec.ips = (const uint64_t *)r->ips;
		rec.nr_ips = r->nr_ips > TK_ALLOC_MAX_FRAMES ? TK_ALLOC_MAX_FRAMES : r->nr_ips;
		rec.truncated = r->flags & AT_F_TRUNCATED;
		rec.comm = comm;
		err = tk_alloc__on_alloc(a, &rec);
		break;
	case AT_REC_FREE:
		if (size >= sizeof(*f))
			err = tk_alloc__on_free(a, f->pid, f->ptr);
		break;
	case AT_REC_UNWIND_MISS:
		if (size >= sizeof(*f))
			tk_unw_bpf__miss(st->unw, f->pid, 0);
		break;
	case AT_REC_EXEC:
		if (size < sizeof(*f))
			break;
		if (st->nr_stale == MAX_STALE)
			refresh_stale(a, st, true);
		st->stale[st->nr_stale].pid = f->pid;
		st->stale[st->nr_stale++].exec_ns = tk_now_ns(CLOCK_MONOTONIC);
		break;
	}
	if (err && !st->err)
		st->err = err;
	return 0;
}

static void read_counters(struct tk_alloc *a, struct at_state *st)
{
	static const struct {
		enum at_counter c;
		enum tk_alloc_loss l;
	} losses[] = {
		{ AT_CNT_RINGBUF_FULL, TK_ALOSS_RINGBUF },
		{ AT_CNT_STACK_MAP_FULL, TK_ALOSS_STACK_MAP_FULL },
		{ AT_CNT_LIVE_MAP_FULL, TK_ALOSS_LIVE_MAP_FULL },
		{ AT_CNT_PENDING_MAP_FULL, TK_ALOSS_PENDING_MAP_FULL },
		{ AT_CNT_TRUNCATED, TK_ALOSS_TRUNCATED },
		{ AT_CNT_STACK_ERRORS, TK_ALOSS_STACK_ERRORS },
	};
	uint64_t sum[AT_CNT__COUNT] = {};
	size_t i;
	int cpu;

	for (cpu = 0; cpu < AT_MAX_CPUS; cpu++)
		for (i = 0; i < AT_CNT__COUNT; i++)
			sum[i] += st->skel->bss->counters[cpu][i];
	/* with the markers, libtkalloc.so sees the calls, not BPF */
	if (a->hook == TK_ALLOC_HOOK_UPROBES)
		a->calls += sum[AT_CNT_ALLOC_CALLS] + sum[AT_CNT_FREE_CALLS] -
			    st->seen[AT_CNT_ALLOC_CALLS] - st->seen[AT_CNT_FREE_CALLS];
	for (i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		tk_alloc__add_loss(a, losses[i].l, sum[losses[i].c] - st->seen[losses[i].c]);
	memcpy(st->seen, sum, sizeof(sum));
	if (st->unw) {
		tk_unw_bpf__sum(st->skel->bss->unw_counters, UNW_MAX_CPUS, a->unwind);
		tk_unw_bpf__stats(st->unw, &a->unw_info);
	}
}

/* ---- growth: deltas of the kernel's counts ------------------------------------------------ */

static uint64_t key_hash(const struct at_growth_key *k)
{
	return tk_hash__bytes(0, k, sizeof(*k));
}

static uint64_t growth_hash(const void *rec)
{
	return key_hash(&((const struct growth_seen *)rec)->key);
}

static bool growth_match(const void *ctx, const void *rec, const void *key)
{
	return !memcmp(&((const struct growth_seen *)rec)->key, key,
		       sizeof(struct at_growth_key));
}

static struct growth_seen *growth_slot(struct at_state *st, const struct at_growth_key *k)
{
	struct growth_seen *g;
	bool found;

	if (!st->growth.esz)
		st->growth = (struct tk_hashmap)TK_HASHMAP_INIT(struct growth_seen, growth_hash);
	g = tk_hashmap__insert(&st->growth, key_hash(k), growth_match, NULL, k, &found);
	if (g && !found) {
		g->used = 1;
		g->key = *k;
	}
	return g;
}

static int deliver_growth(struct tk_alloc *a, struct at_state *st)
{
	int gfd = bpf_map__fd(st->skel->maps.growth), sfd = bpf_map__fd(st->skel->maps.stacks);
	struct at_growth_key key, next;
	struct at_growth_val v;
	struct growth_seen *g;
	struct at_stack *stack;
	bool first = true;
	int err = 0;

	stack = malloc(sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	while (!bpf_map_get_next_key(gfd, first ? NULL : &key, &next)) {
		char comm[sizeof(key.comm) + 1];
		uint32_t nr = 0;

		first = false;
		key = next;
		if (bpf_map_lookup_elem(gfd, &key, &v))
			continue;
		g = growth_slot(st, &key);
		if (!g) {
			err = -ENOMEM;
			break;
		}
		if (v.count <= g->val.count)
			continue;
		if (key.stack && !bpf_map_lookup_elem(sfd, &key.stack, stack))
			nr = stack->nr > AT_MAX_FRAMES ? AT_MAX_FRAMES : stack->nr;
		memcpy(comm, key.comm, sizeof(key.comm));
		comm[sizeof(key.comm)] = '\0';
		err = tk_alloc__on_growth(a, key.kind, key.pid, key.tid, comm,
					  (const uint64_t *)stack->ips, nr,
					  key.flags & AT_F_TRUNCATED, v.count - g->val.count,
					  v.bytes - g->val.bytes);
		if (err)
			break;
		g->val = v;
	}
	free(stack);
	return err;
}

/* ---- the backend ------------------------------------------------------------------------ */

static void bpf_free(struct tk_alloc *a)
{
	struct at_state *st = a->priv;
	int i;

	if (!st)
		return;
	for (i = 0; i < st->nr_links; i++)
		bpf_link__destroy(st->links[i]);
	for (i = 0; i < 2; i++)
		if (st->multi_fds[i] >= 0)
			close(st->multi_fds[i]);
	ring_buffer__free(st->rb);
	tk_unw_bpf__free(st->unw);
	a->captured = NULL;
	alloc_trace_bpf__destroy(st->skel);
	free(st->syms);
	tk_hashmap__free(&st->growth);
	free(st);
	a->priv = NULL;
}

static void detach(struct at_state *st)
{
	int i;

	for (i = 0; i < st->nr_links; i++)
		bpf_link__destroy(st->links[i]);
	st->nr_links = 0;
	for (i = 0; i < 2; i++) {
		if (st->multi_fds[i] >= 0)
			close(st->multi_fds[i]);
		st->multi_fds[i] = -1;
	}
}

/* A process's maps were captured: its unwinder entry follows. */
static void on_captured(struct tk_alloc *a, uint32_t pid)
{
	struct at_state *st = a->priv;

	if (st)
		tk_unw_bpf__update(st->unw, a->sym, pid, 0);
}

static int open_unwinder(struct tk_alloc *a, struct at_state *st)
{
	struct tk_unw_bpf_vars v = TK_UNW_BPF_VARS(st->skel);
	int err = tk_unw_bpf__open(&v, &st->unw);

	if (err)
		return err;
	a->unwinding = st->unw != NULL;
	if (st->unw) {
		a->captured = on_captured;
		/* what was captured before the programs were there */
		if (a->pid && tk_symbolizer__has(a->sym, a->pid, 0))
			on_captured(a, a->pid);
	}
	return 0;
}

static int bpf_open(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct tk_log_scope quiet;
	struct at_state *st;
	int err = 0;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->multi_fds[0] = st->multi_fds[1] = -1;
	a->priv = st;

	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		st->skel = load(a, LOAD_GROWTH, &err);
		if (!st->skel)
			snprintf(why, why_sz, "cannot load the growth tracer: %s", strerror(-err));
		goto out;
	}
	if (a->hook == TK_ALLOC_HOOK_PRELOAD) {
		st->skel = load(a, LOAD_MARKERS, &err);
		if (!st->skel)
			snprintf(why, why_sz, "cannot load the marker probes: %s", strerror(-err));
		goto out;
	}
	if (a->hook != TK_ALLOC_HOOK_UPROBES) {
		snprintf(why, why_sz, "the bpf backend needs uprobes, the preload sampler or "
			 "--mode growth");
		err = -EINVAL;
		goto out;
	}
	st->syms = calloc(1, sizeof(*st->syms));
	if (!st->syms) {
		err = -ENOMEM;
		goto out;
	}
	/* find the allocator now when it can be found: a clear refusal before anything runs */
	if (!a->child)
		err = find_in_process(a, a->pid, a->caps, st->syms, why, why_sz);
	else if (!a->attach_after_exec)
		err = tk_alloc_syms__find_static(a->opts.argv[0], st->syms, why, why_sz);
	if (err)
		goto out;

	/*
	 * sessions, where the kernel has them (6.13+); refusals are expected: quiet.
	 * TK_ALLOC_NO_SESSIONS=1 takes the older kernels' way (for tests).
	 */
	tk_log__push(&tk_log_quiet, &quiet);
	if (!getenv("TK_ALLOC_NO_SESSIONS"))
		st->skel = load(a, LOAD_SESSION, &err);
	if (st->skel && !sessions_work(st->skel)) {
		alloc_trace_bpf__destroy(st->skel);
		st->skel = NULL;
	}
	tk_log__pop(&quiet);
	st->sessions = st->skel != NULL;
	err = 0;	/* a refused session is no error: the classic way follows */
	if (!st->skel)
		st->skel = load(a, LOAD_CLASSIC, &err);
	if (!st->skel)
		snprintf(why, why_sz, "cannot load the uprobe programs: %s", strerror(-err));
out:
	if (!err)
		err = open_unwinder(a, st);
	if (err)
		bpf_free(a);
	return err;
}

static int bpf_start(struct tk_alloc *a, char *why, size_t why_sz)
{
	struct at_state *st = a->priv;
	__u32 pid = a->pid;
	__u8 one = 1;
	int err;

	/* a dynamic command: attach once the agent holds it with its libraries mapped */
	if (a->attach_after_exec && !a->after_exec)
		return 0;
	if (pid) {
		err = bpf_map__update_elem(st->skel->maps.pids, &pid, sizeof(pid), &one,
					   sizeof(one), BPF_ANY);
		if (err)
			goto fail;
	}
	if (!st->rb) {
		st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.events), handle_event, a,
					  NULL);
		if (!st->rb) {
			err = -errno;
			goto fail;
		}
	}
	err = attach_raw_tp(st, st->skel->progs.exec_raw);
	if (err)
		goto fail;

	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		if ((err = attach_raw_tp(st, st->skel->progs.fault_user)) ||
		    (err = attach_raw_tp(st, st->skel->progs.sys_enter)) ||
		    (err = attach_raw_tp(st, st->skel->progs.sys_exit)))
			goto fail;
		snprintf(a->describe, sizeof(a->describe),
			 "raw tracepoints page_fault_user, sys_enter/sys_exit (brk, mmap) of pid %d: "
			 "no allocator hook", a->pid);
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

			err = attach_uprobe(st, p, -1, sy.path, &sy.fns[i], false);
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
		err = find_in_process(a, a->pid, NULL, st->syms, why, why_sz);
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
	detach(st);
	return err;
}

static int bpf_poll(struct tk_alloc *a, int timeout_ms)
{
	struct at_state *st = a->priv;
	int err = 0;

	if (!st->rb) {
		if (timeout_ms > 0)
			usleep(timeout_ms * 1000);
		return 0;
	}
	err = ring_buffer__poll(st->rb, timeout_ms);
	/*
	 * BPF wakes us only once a quarter of the ring waits (rb_flags()): take
	 * what came meanwhile too, so a process's maps are read while it lives.
	 */
	if (err >= 0 || err == -EINTR) {
		int n = ring_buffer__consume(st->rb);

		if (n < 0 && n != -EINTR)
			err = n;
	}
	read_counters(a, st);
	refresh_stale(a, st, false);
	tk_unw_bpf__retry(st->unw, a->sym);
	if (a->opts.mode == TK_ALLOC_MODE_GROWTH) {
		int gerr = deliver_growth(a, st);

		if (gerr)
			return gerr;
	}
	if (st->err) {
		err = st->err;
		st->err = 0;
		return err;
	}
	return err < 0 && err != -EINTR ? err : 0;
}

static int bpf_drain(struct tk_alloc *a)
{
	struct at_state *st = a->priv;
	int err = 0;

	if (!st)
		return 0;
	detach(st);
	if (st->rb)
		ring_buffer__consume(st->rb);
	read_counters(a, st);
	refresh_stale(a, st, true);
	if (a->opts.mode == TK_ALLOC_MODE_GROWTH)
		err = deliver_growth(a, st);
	if (!err && st->err)
		err = st->err;
	st->err = 0;
	return err;
}

const struct tk_alloc_backend tk_alloc_backend_bpf = {
	.name = "bpf",
	.open = bpf_open,
	.start = bpf_start,
	.poll = bpf_poll,
	.drain = bpf_drain,
	.free = bpf_free,
};

/* ---- the cost, before hooking: call rate and uprobe cost ------------------------------------ */

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double time_calls(void (*fn)(void), int n)
{
	double t0 = mono_ns();
	int i;

	for (i = 0; i < n; i++)
		fn();
	return mono_ns() - t0;
}

static uint64_t sum_counter(struct alloc_trace_bpf *s, enum at_counter c)
{
	uint64_t n = 0;
	int cpu;

	for (cpu = 0; cpu < AT_MAX_CPUS; cpu++)
		n += s->bss->counters[cpu][c];
	return n;
}

/* One hit on @fn, the best of 3 runs of 2000 calls with and without. */
static int hit_cost(struct alloc_trace_bpf *s, void (*fn)(void), double *ns)
{
	struct tk_alloc_fn f = { .kind = TK_AFN_MALLOC };
	struct at_state st = { .multi_fds = { -1, -1 } };
	double bare = 1e300, traced = 1e300, t;
	char path[PATH_MAX];
	int err, i, n = 2000;

	err = self_offset((const void *)fn, path, sizeof(path), &f.offset);
	if (err)
		return err;
	for (i = 0; i < 3; i++) {
		t = time_calls(fn, n);
		bare = t < bare ? t : bare;
	}
	err = attach_uprobe(&st, s->progs.count_calls, getpid(), path, &f, false);
	if (err)
		return err;
	for (i = 0; i < 3; i++) {
		t = time_calls(fn, n);
		traced = t < traced ? t : traced;
	}
	detach(&st);
	if (sum_counter(s, AT_CNT_ALLOC_CALLS) < (uint64_t)n)
		return -EIO;	/* the probe did not fire */
	memset(s->bss->counters, 0, sizeof(s->bss->counters));
	*ns = traced > bare ? (traced - bare) / n : 0;
	return 0;
}

/* What an emulated and a single-stepped probe's hit cost. */
static int uprobe_costs(struct alloc_trace_bpf *s, double *emulated, double *stepped)
{
	int err;

	if ((err = hit_cost(s, tk_alloc__calib_push, emulated)) ||
	    (err = hit_cost(s, tk_alloc__calib_step, stepped)))
		return err;
	return 0;
}

/* The mean of the two. */
static int uprobe_cost(struct alloc_trace_bpf *s, double *ns)
{
	double a, b;
	int err = uprobe_costs(s, &a, &b);

	if (!err)
		*ns = (a + b) / 2;
	return err;
}

int tk_alloc__uprobe_cost(double *ns)
{
	struct alloc_trace_bpf *s;
	int err = 0;

	s = load(NULL, LOAD_COUNT, &err);
	if (!s)
		return err;
	err = uprobe_cost(s, ns);
	alloc_trace_bpf__destroy(s);
	return err;
}

int tk_alloc__measure_rate(int pid, const struct tk_caps *caps, int ms, struct tk_alloc_rate *out,
			   char *why, size_t why_sz)
{
	struct at_state st = { .multi_fds = { -1, -1 } };
	struct tk_alloc_syms *sy = NULL;
	struct alloc_trace_bpf *s = NULL, *probe, *multi = NULL;
	double t0, secs, c, cf, r_a, r_f, load_frac;
	uint64_t a0, f0;
	struct tk_log_scope quiet;
	int err = 0, i;

	memset(out, 0, sizeof(*out));
	sy = calloc(1, sizeof(*sy));
	if (!sy)
		return -ENOMEM;
	err = find_in_process(NULL, pid, caps, sy, why, why_sz);
	if (err)
		goto out;
	s = load(NULL, LOAD_COUNT, &err);
	if (!s) {
		snprintf(why, why_sz, "cannot load the counting probe: %s", strerror(-err));
		goto out;
	}
	err = uprobe_costs(s, &out->emulated_ns, &out->stepped_ns);
	out->uprobe_ns = (out->emulated_ns + out->stepped_ns) / 2;
	if (err) {
		snprintf(why, why_sz, "cannot calibrate a uprobe on tracekit itself: %s",
			 strerror(-err));
		goto out;
	}
	tk_log__push(&tk_log_quiet, &quiet);
	{
		struct tk_alloc fake = { .sample_bytes = TK_ALLOC_DEFAULT_SAMPLE_BYTES,
					  .opts.unwind = TK_UNWIND_FP };

		probe = load(&fake, LOAD_SESSION, &err);
	}
	out->sessions = probe && sessions_work(probe);
	alloc_trace_bpf__destroy(probe);
	tk_log__pop(&quiet);
	err = 0;

	/*
	 * One uprobe_multi link where the kernel has them: removing a uprobe
	 * waits for a grace period, ~0.1 s here, once per link.
	 */
	if (out->sessions) {
		uint64_t offs[TK_ALLOC_MAX_FNS], cookies[TK_ALLOC_MAX_FNS];

		multi = load(NULL, LOAD_COUNT_MULTI, &err);
		for (i = 0; multi && i < sy->nr; i++) {
			offs[i] = sy->fns[i].offset;
			cookies[i] = AT_COOKIE(sy->fns[i].vaddr, sy->fns[i].kind);
		}
		if (multi)
			st.multi_fds[0] = uprobe_multi_link(bpf_program__fd(multi->progs.count_calls),
							    AT_TRACE_UPROBE_MULTI, sy->path, offs,
							    cookies, sy->nr, pid);
		if (st.multi_fds[0] >= 0) {
			alloc_trace_bpf__destroy(s);
			s = multi;
			multi = NULL;
		}
		err = 0;
	}
	for (i = 0; st.multi_fds[0] < 0 && i < sy->nr && !err; i++)
		err = attach_uprobe(&st, s->progs.count_calls, pid, sy->path, &sy->fns[i], false);
	if (err) {
		snprintf(why, why_sz, "cannot place uprobes in %s: %s", sy->path, strerror(-err));
		detach(&st);
		goto out;
	}
	/* attaching and detaching take a while, probe by probe: count between them */
	a0 = sum_counter(s, AT_CNT_ALLOC_CALLS);
	f0 = sum_counter(s, AT_CNT_FREE_CALLS);
	t0 = mono_ns();
	usleep(ms * 1000);
	out->alloc_calls = sum_counter(s, AT_CNT_ALLOC_CALLS) - a0;
	out->free_calls = sum_counter(s, AT_CNT_FREE_CALLS) - f0;
	secs = (mono_ns() - t0) / 1e9;
	detach(&st);
	out->ms = secs * 1e3;

	/*
	 * Counting put one trap (c seconds) on every call: r' = r / (1 + r c), so
	 * r = r' / (1 - r' c). When r' c nears 1 the process did little but trap:
	 * the true rate is unknown above a bound (and past a half, an error in c
	 * already doubles the estimate).
	 */
	/* malloc's and free's probes: on an emulated instruction or not (alloc_syms.c) */
	out->alloc_hit_ns = out->free_hit_ns = out->stepped_ns;
	for (i = 0; i < sy->nr; i++) {
		const struct tk_alloc_fn *fn = &sy->fns[i];
		size_t n = strlen(fn->name);
		double hit = fn->emulated ? out->emulated_ns : out->stepped_ns;

		if (fn->kind == TK_AFN_MALLOC && n >= 6 && !strcmp(fn->name + n - 6, "malloc"))
			out->alloc_hit_ns = hit;
		else if (fn->kind == TK_AFN_FREE && n >= 4 && !strcmp(fn->name + n - 4, "free"))
			out->free_hit_ns = hit;
	}
	c = out->alloc_hit_ns * 1e-9;
	cf = out->free_hit_ns * 1e-9;
	r_a = out->alloc_calls / secs;
	r_f = out->free_calls / secs;
	load_frac = r_a * c + r_f * cf;
	out->lower_bound = load_frac > 0.5;
	if (load_frac > 0.9)
		load_frac = 0.9;
	out->alloc_per_s = r_a / (1 - load_frac);
	out->free_per_s = r_f / (1 - load_frac);

	out->traps_per_alloc[TK_ALLOC_MODE_SAMPLED] = out->sessions ? 1 : 2;
	out->traps_per_free[TK_ALLOC_MODE_SAMPLED] = 1;
	out->traps_per_alloc[TK_ALLOC_MODE_FULL] = 2;
	out->traps_per_free[TK_ALLOC_MODE_FULL] = 1;
	for (i = 0; i <= TK_ALLOC_MODE_GROWTH; i++)
		out->slowdown[i] = c * out->traps_per_alloc[i] * out->alloc_per_s +
				   cf * out->traps_per_free[i] * out->free_per_s;
out:
	alloc_trace_bpf__destroy(multi);
	alloc_trace_bpf__destroy(s);
	free(sy);
	return err;
}
