// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waits that span the capture: see cpu_seed.h, and off_seed in
 * bpf/cpu_sample.bpf.c. sched_switch sees a wait only when its thread
 * switches out during the window; a thread blocked since before it (the
 * deadlocked one) never does. Right after sched_switch is attached, a task
 * iterator gives each in-scope thread off the CPU an offstart entry as if it
 * had switched out then: its kernel stack from the task, its state, and its
 * user stack walked here from the registers its kernel entry saved, over its
 * memory read from /proc/PID/mem (which, unlike process_vm_readv, takes the
 * target's mmap_lock killably: a hung target cannot hang tracekit). Its
 * switch-in, or the end of the capture, then counts the wait as any other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "cpu/cpu.h"
#include "cpu/cpu_seed.h"
#include "bpf/cpu_sample.h"
#include "core/arch.h"
#include "core/fsutil.h"
#include "core/grow.h"
#include "core/internal.h"
#include "core/kfeat.h"
#include "cpu_sample.skel.h"
#include "unwind/unwind_bpf.h"

int64_t tk_cpu_seed__before_ns(uint64_t now, uint64_t arrival, uint64_t sum, uint64_t prev_sum)
{
	uint64_t since, slice;

	if (!arrival || arrival > now || sum < prev_sum)
		return -1;
	since = now - arrival;
	slice = sum - prev_sum;
	if (slice > since || since - slice > INT64_MAX)
		return -1;
	return (int64_t)(since - slice);
}

/* ---- the scope of --cgroup ------------------------------------------------------- */

#define CGROUP_DEPTH_MAX 32

int tk_cpu_seed__parse_tids(const char *text, size_t len, uint32_t **tids, size_t *nr,
			    size_t *cap)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		uint64_t v = 0;
		const char *q = p;

		/* digits only (strtoul would take signs and spaces, and read past @len) */
		while (q < end && *q >= '0' && *q <= '9' && v <= UINT32_MAX)
			v = v * 10 + (uint64_t)(*q++ - '0');
		if (q == p) {
			p++;
			continue;
		}
		while (q < end && *q >= '0' && *q <= '9')	/* the rest of a number too long */
			q++;
		p = q;
		if (!v || v > UINT32_MAX)
			continue;
		if (tk_grow((void **)tids, cap, *nr + 1, sizeof(**tids), 256))
			return -ENOMEM;
		(*tids)[(*nr)++] = (uint32_t)v;
	}
	return 0;
}

static int cgroup_walk(const char *dir, uint32_t **tids, size_t *nr, size_t *cap, int depth)
{
	char *text = NULL, sub[4096];
	size_t len = 0;
	struct dirent *de;
	int err;
	DIR *d;

	err = tk_read_file_alloc(dir, "cgroup.threads", 64 << 20, &text, &len);
	if (err)
		return err;
	err = tk_cpu_seed__parse_tids(text, len, tids, nr, cap);
	free(text);
	if (err)
		return err;
	if (depth >= CGROUP_DEPTH_MAX)
		return 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    tk_path_join(sub, sizeof(sub), dir, de->d_name))
			continue;
		/* a directory that is no cgroup (or left meanwhile) holds no threads */
		err = cgroup_walk(sub, tids, nr, cap, depth + 1);
		if (err == -ENOMEM)
			break;
		err = 0;
	}
	closedir(d);
	return err;
}

int tk_cpu_seed__cgroup_tids(const char *dir, uint32_t **tids, size_t *nr, size_t *cap)
{
	return cgroup_walk(dir, tids, nr, cap, 0);
}

/* ---- stack images ---------------------------------------------------------------- */

int tk_seed_image__load(struct tk_seed_image *img, int fd, uint64_t sp)
{
	size_t got = 0;

	img->fd = fd;
	img->base = sp;
	img->len = 0;
	/* the stack's mapping may end before TK_SEED_IMAGE: what is there, page by page */
	while (got < sizeof(img->buf)) {
		size_t want = sizeof(img->buf) - got;
		uint64_t at = sp + got, page_end = (at | 4095) + 1;
		ssize_t n;

		if (got && want > page_end - at)
			want = page_end - at;
		n = pread(fd, img->buf + got, want, (off_t)at);
		img->reads++;
		if (n <= 0)
			break;
		got += n;
	}
	img->len = got;
	return got ? 0 : -EFAULT;
}

int tk_seed_image__read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct tk_seed_image *img = ctx;
	ssize_t n;

	if (addr >= img->base && addr - img->base <= img->len && len <= img->len - (addr - img->base)) {
		memcpy(buf, img->buf + (addr - img->base), len);
		return 0;
	}
	if (img->fd < 0 || addr > (uint64_t)INT64_MAX)
		return -EFAULT;
	n = pread(img->fd, buf, len, (off_t)addr);
	img->reads++;
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- before load ------------------------------------------------------------------ */

void tk_cpu_seed__prepare(struct tk_cpu *c, struct cpu_sample_bpf *skel, bool key_tid)
{
	static const char *const names[] = {
		"pid", "tgid", "on_cpu", "flags", "mm", "comm", "stack",
		"sched_info.last_arrival", "se.sum_exec_runtime", "se.prev_sum_exec_runtime",
		"__state", "state",
	};
	int off[sizeof(names) / sizeof(names[0])], err, i;
	size_t nr = 0;

	if (c->seed_why[0])	/* refused at a load before this one */
		goto not_seen;
	err = tk_kfeat__member_offsets("task_struct", names, off, sizeof(names) / sizeof(names[0]));
	for (i = 0; !err && i < 10; i++)
		if (off[i] < 0 && i != 6 && i != 7)	/* stack and last_arrival: optional */
			err = off[i];
	if (!err && off[10] < 0 && off[11] < 0)	/* __state (5.14+), state before */
		err = off[11];
	if (err) {
		snprintf(c->seed_why, sizeof(c->seed_why), "task_struct's fields are not in the "
			 "kernel's BTF (%s)", strerror(-err));
		goto not_seen;
	}
	if (c->opts.cgroup) {
		c->nr_seed_tids = 0;
		err = tk_cpu_seed__cgroup_tids(c->opts.cgroup, &c->seed_tids, &c->nr_seed_tids,
					       &c->cap_seed_tids);
		if (err) {
			snprintf(c->seed_why, sizeof(c->seed_why), "the cgroup's threads cannot be "
				 "listed (%s)", strerror(-err));
			goto not_seen;
		}
		nr = c->nr_seed_tids;
		skel->rodata->seed_by_tids = true;
		bpf_map__set_max_entries(skel->maps.seed_tids, nr + 64);
	}
	skel->rodata->seed_key_tid = key_tid;
	skel->rodata->task_pid_off = off[0];
	skel->rodata->task_tgid_off = off[1];
	skel->rodata->task_on_cpu_off = off[2];
	skel->rodata->task_flags_off = off[3];
	skel->rodata->task_mm_off = off[4];
	skel->rodata->task_comm_off = off[5];
	skel->rodata->task_arrival_off = off[7] > 0 ? off[7] : 0;
	skel->rodata->task_sum_exec_off = off[8];
	skel->rodata->task_prev_sum_off = off[9];
	skel->rodata->seed_state_off = off[10] >= 0 ? off[10] : off[11];
	/*
	 * user registers: as the unwinder finds them (unwind_bpf.c), whatever its
	 * mode. The helper is every tracing program's (5.15+); libbpf cannot probe
	 * it for an iterator (a tracing program needs a target: -EOPNOTSUPP), so it
	 * is probed as the sampler's. The offset below is wrong under FRED (6.9+),
	 * where the helper is always there.
	 */
	if (!getenv("TK_UNWIND_TASK_STACK") &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs, NULL) == 1) {
		skel->rodata->seed_task_regs = 1;
	} else if (off[6] > 0) {
		skel->rodata->seed_task_regs = 2;
		skel->rodata->seed_stack_off = off[6];
		skel->rodata->seed_thread_size =
			tk_kconfig__lookup("/proc", "CONFIG_KASAN") == 1 ? 32768 : 16384;
	} else {
		snprintf(c->seed_note, sizeof(c->seed_note), "their user stacks are not known: no "
			 "bpf_task_pt_regs() and no task_struct.stack in the kernel's BTF");
	}
	bpf_program__set_autoload(skel->progs.off_seed, true);
	return;
not_seen:
	bpf_map__set_max_entries(skel->maps.seed_tids, 1);
}

/* ---- after attach ------------------------------------------------------------------- */

/* The iterator's output: whole records (a read may end inside one). */
static int run_iter(struct bpf_program *prog, char **out, size_t *len)
{
	struct bpf_link *link = bpf_program__attach_iter(prog, NULL);
	size_t cap = 0;
	int fd, err = 0;

	*out = NULL;
	*len = 0;
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n;

		/* the seq buffer is 8 pages: a read of 64 KiB takes what it holds */
		if (tk_grow((void **)out, &cap, *len + 65536, 1, 65536)) {
			err = -ENOMEM;
			break;
		}
		n = read(fd, *out + *len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (!n)
			break;
		*len += n;
	}
	close(fd);
out:
	bpf_link__destroy(link);
	return err;
}

/* Still the entry the iterator made (the thread has not run since)? */
static bool seed_live(int offstart_fd, const struct cpu_seed *r)
{
	struct cpu_off_start v;

	return !bpf_map_lookup_elem(offstart_fd, &r->key, &v) && v.ts == r->ts &&
	       (v.key.state & CPU_OFF_BEFORE);
}

struct walker {
	struct tk_unw_bpf *unw;
	int procs_fd, offstart_fd, ustacks_fd;
	struct unw_proc *proc;
	struct tk_seed_image *img;
	struct cpu_stack *st;
	const char *proc_root;
};

/* Walk @r's user stack and store it under its seed hash; false: not read (counted). */
static bool seed_stack(struct walker *w, const struct cpu_seed *r)
{
	struct tk_unw_regs regs = { .ip = r->ip, .sp = r->sp, .bp = r->bp,
#if TK_ARCH_ARM64
				    .lr = r->lr,
#endif
				    .ra_mask = tk_unw_ra_mask(NULL) };
	struct cpu_stack_key k = { .hash = r->ustack, .epoch = r->epoch };
	const struct unw_row *rows = NULL;
	bool have_proc = false, ok;
	uint32_t causes = 0;
	size_t nr_rows = 0;
	char rel[64], path[4096];
	int fd = -1, n;

	w->st->nr = 0;
	w->st->pad = 0;
	snprintf(rel, sizeof(rel), "%u/task/%u/mem", r->pid, r->tid);
	if (!tk_path_join(path, sizeof(path), w->proc_root, rel))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	ok = fd >= 0 && !tk_seed_image__load(w->img, fd, r->sp);
	if (ok) {
		if (w->unw) {
			rows = tk_unw_bpf__rows(w->unw, &nr_rows);
			have_proc = !bpf_map_lookup_elem(w->procs_fd, &r->pid, w->proc);
		}
		n = tk_unw__walk(have_proc ? w->proc : NULL, rows, nr_rows, &regs,
				 tk_seed_image__read, w->img, (uint64_t *)w->st->ips, CPU_MAX_FRAMES,
				 &causes, NULL);
		w->st->nr = n > 0 ? (uint32_t)n : 0;
	}
	if (fd >= 0)
		close(fd);
	/* a thread that ran meanwhile may have another stack: none rather than a wrong one */
	if (ok && !seed_live(w->offstart_fd, r))
		ok = false;
	if (!ok)
		w->st->nr = 0;
	/* stored even empty: the counts that name it then have no user frames, said by the loss */
	bpf_map_update_elem(w->ustacks_fd, &k, w->st, BPF_ANY);
	return ok && w->st->nr;
}

static int seed_cmp(const void *a, const void *b)
{
	const struct tk_cpu_seed_thread *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void tk_cpu_seed__run(struct tk_cpu *c, struct cpu_sample_bpf *skel, struct tk_unw_bpf *unw,
		      struct ring_buffer *rb)
{
	struct walker w = {
		.unw = unw,
		.procs_fd = bpf_map__fd(skel->maps.unw_procs),
		.offstart_fd = bpf_map__fd(skel->maps.offstart),
		.ustacks_fd = bpf_map__fd(skel->maps.ustacks),
		.proc_root = c->opts.proc_root ? c->opts.proc_root : "/proc",
	};
	int64_t t0 = tk_now_ns(CLOCK_MONOTONIC);
	char *out = NULL;
	size_t len = 0, i, n;
	__u8 one = 1;
	int err;

	if (!bpf_program__autoload(skel->progs.off_seed))
		return;
	for (i = 0; i < c->nr_seed_tids; i++)
		bpf_map_update_elem(bpf_map__fd(skel->maps.seed_tids), &c->seed_tids[i], &one,
				    BPF_ANY);
	err = run_iter(skel->progs.off_seed, &out, &len);
	if (err) {
		snprintf(c->seed_why, sizeof(c->seed_why), "the task iterator does not run (%s)",
			 strerror(-err));
		goto out;
	}
	/* the processes seen first now: captured (their maps, their unwinder entries) */
	ring_buffer__consume(rb);
	n = len / sizeof(struct cpu_seed);
	c->seeds = calloc(n ? n : 1, sizeof(*c->seeds));
	w.proc = malloc(sizeof(*w.proc));
	w.img = malloc(sizeof(*w.img));
	w.st = malloc(sizeof(*w.st));
	if (!c->seeds || !w.proc || !w.img || !w.st) {
		snprintf(c->seed_why, sizeof(c->seed_why), "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct cpu_seed r;

		memcpy(&r, out + i * sizeof(r), sizeof(r));
		c->seeds[c->nr_seeds++] = (struct tk_cpu_seed_thread){
			.pid = r.pid,
			.tid = r.tid,
			.before_ns = tk_cpu_seed__before_ns(r.ts, r.last_arrival, r.sum_exec,
							    r.prev_sum_exec),
		};
		if (r.ustack != CPU_NO_STACK && !seed_stack(&w, &r))
			c->seed_unread++;
	}
	qsort(c->seeds, c->nr_seeds, sizeof(*c->seeds), seed_cmp);
	c->seed_ms = (tk_now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
out:
	free(out);
	free(w.proc);
	free(w.img);
	free(w.st);
}

const struct tk_cpu_seed_thread *tk_cpu_seed__find(const struct tk_cpu *c, uint32_t pid,
						   uint32_t tid)
{
	struct tk_cpu_seed_thread key = { .pid = pid, .tid = tid };

	if (!c->nr_seeds)
		return NULL;
	return bsearch(&key, c->seeds, c->nr_seeds, sizeof(*c->seeds), seed_cmp);
}

void tk_cpu_seed__free(struct tk_cpu *c)
{
	free(c->seeds);
	c->seeds = NULL;
	c->nr_seeds = 0;
	free(c->seed_tids);
	c->seed_tids = NULL;
	c->nr_seed_tids = c->cap_seed_tids = 0;
}
