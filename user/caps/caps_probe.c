// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The kernel probes behind the capability snapshot. Each one creates a
 * throw-away object (a map, a two-instruction program, a perf event on the
 * calling thread, a link that lives for a moment) and closes it before it
 * returns: what the kernel answers is the capability, found by asking, not
 * guessed from a version number.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/fsutil.h"
#include "core/internal.h"
#include "unwind/unwind_bpf.h"
#include "caps/caps.h"
#include "core/kfeat.h"

#define setmsg(ctx, ...) snprintf((ctx)->msg, sizeof((ctx)->msg), __VA_ARGS__)

/* "r0 = 0; exit" — the smallest program every type accepts. */
static const struct bpf_insn ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

static int load_prog(enum bpf_prog_type type, enum bpf_attach_type eat, int btf_id,
		     struct tk_probe_ctx *ctx)
{
	char log[512] = "";
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = eat,
		    .attach_btf_id = btf_id);
	int fd, err;

	/* without a log buffer: one load, and its errno is the kernel's answer */
	fd = bpf_prog_load(type, "tk_probe", "Dual BSD/GPL", ret0, 2, &opts);
	if (fd >= 0)
		return fd;
	err = -errno;
	/* once more with a log, only for the verifier's words */
	opts.log_buf = log;
	opts.log_size = sizeof(log);
	opts.log_level = 1;
	fd = bpf_prog_load(type, "tk_probe", "Dual BSD/GPL", ret0, 2, &opts);
	if (fd >= 0)
		close(fd);
	log[strcspn(log, "\n")] = '\0';
	if (log[0])
		setmsg(ctx, "program load: %s (%s)", strerror(-err), log);
	else
		setmsg(ctx, "program load: %s", strerror(-err));
	return err;
}

static int read_pmu_type(const char *sys_root, const char *pmu)
{
	char rel[128];
	long type;
	int err;

	snprintf(rel, sizeof(rel), "bus/event_source/devices/%s/type", pmu);
	err = tk_read_long(sys_root, rel, &type);
	return err ? err : (int)type;
}

/*
 * Open the perf event @attr (on @pid/@cpu), attach program @prog_fd to it, and
 * close both: the probe of every perf-event-attached program type. @what names
 * the event in messages.
 */
static int attach_via_perf_event(int prog_fd, struct perf_event_attr *attr, pid_t pid, int cpu,
				 const char *what, struct tk_probe_ctx *ctx)
{
	int pfd, err = 0;

	pfd = tk_perf_event_open(attr, pid, cpu, 0);
	if (pfd < 0) {
		err = pfd;
		setmsg(ctx, "program loads; perf_event_open(%s): %s", what, strerror(-err));
	} else if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd) < 0) {
		err = -errno;
		setmsg(ctx, "program loads; attach to %s: %s", what, strerror(-err));
	} else {
		setmsg(ctx, "loaded and attached to %s", what);
	}
	if (pfd >= 0)
		close(pfd);
	close(prog_fd);
	return err;
}

static int probe_bpf_syscall(struct tk_probe_ctx *ctx)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "tk_probe", 4, 4, 1, NULL);

	if (fd < 0) {
		int err = -errno;

		setmsg(ctx, "bpf(BPF_MAP_CREATE): %s", strerror(-err));
		return err;
	}
	close(fd);
	setmsg(ctx, "created and closed an array map");
	return 0;
}

static int probe_ringbuf(struct tk_probe_ctx *ctx)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "tk_probe", 0, 0, 4096, NULL);

	if (fd < 0) {
		int err = -errno;

		setmsg(ctx, "ring buffer map: %s", strerror(-err));
		return err;
	}
	close(fd);
	setmsg(ctx, "created and closed a 4 KiB ring buffer");
	return 0;
}

static int probe_perf_event_prog(struct tk_probe_ctx *ctx)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = 99,
		.freq = 1,
		.disabled = 1,
	};
	int fd = load_prog(BPF_PROG_TYPE_PERF_EVENT, 0, 0, ctx);

	if (fd < 0)
		return fd;
	/* system-wide on CPU 0, as the CPU collector attaches it */
	return attach_via_perf_event(fd, &attr, -1, 0, "a system-wide cpu-clock event", ctx);
}

static int probe_tracepoint(struct tk_probe_ctx *ctx)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr) };
	char rel[160];
	long id = -1;
	int fd;

	fd = load_prog(BPF_PROG_TYPE_TRACEPOINT, 0, 0, ctx);
	if (fd < 0)
		return fd;
	/* only a tracefs already mounted: a path into debugfs would automount one */
	if (ctx->tracefs_dir) {
		snprintf(rel, sizeof(rel), "%s/events/sched/sched_process_exit/id",
			 ctx->tracefs_dir);
		if (tk_read_long(ctx->sys_root, rel, &id))
			id = -1;
	}
	if (id < 0) {
		/* The program type works; attaching by id needs tracefs for the id. */
		setmsg(ctx, "loaded; not attached: tracefs is not mounted to look up ids");
		close(fd);
		return 0;
	}
	attr.config = id;
	return attach_via_perf_event(fd, &attr, 0, -1, "sched:sched_process_exit", ctx);
}

static int probe_raw_tp(struct tk_probe_ctx *ctx)
{
	int fd, lfd, err;

	fd = load_prog(BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0, ctx);
	if (fd < 0)
		return fd;
	lfd = bpf_raw_tracepoint_open("sched_process_exit", fd);
	if (lfd < 0) {
		err = -errno;
		setmsg(ctx, "program loads; attach to sched_process_exit: %s", strerror(-err));
		close(fd);
		return err;
	}
	close(lfd);
	close(fd);
	setmsg(ctx, "loaded and attached to sched_process_exit");
	return 0;
}

static int find_btf_id(struct tk_probe_ctx *ctx, const char *const *names, __u32 kind,
		       const char **found)
{
	int id = -ENOENT;

	if (!ctx->btf) {
		setmsg(ctx, ctx->btf_path ? "cannot parse %s" : "no kernel BTF",
		       ctx->btf_path);
		return -ENOENT;
	}
	for (; *names; names++) {
		id = btf__find_by_name_kind(ctx->btf, *names, kind);
		if (id > 0) {
			*found = *names;
			break;
		}
	}
	if (id <= 0) {
		setmsg(ctx, "no suitable %s in kernel BTF", kind == BTF_KIND_FUNC ? "function" : "type");
		return -ENOENT;
	}
	return id;
}

static int probe_tracing(struct tk_probe_ctx *ctx, bool fentry)
{
	static const char *const tps[] = { "btf_trace_sched_process_exit", NULL };
	static const char *const fns[] = { "do_nanosleep", "hrtimer_nanosleep", "vfs_read", NULL };
	const char *target = NULL;
	int id, fd, lfd, err;

	id = find_btf_id(ctx, fentry ? fns : tps, fentry ? BTF_KIND_FUNC : BTF_KIND_TYPEDEF, &target);
	if (id < 0)
		return id;
	fd = load_prog(BPF_PROG_TYPE_TRACING, fentry ? BPF_TRACE_FENTRY : BPF_TRACE_RAW_TP, id,
		       ctx);
	if (fd < 0)
		return fd;
	/* raw_tracepoint_open(NULL, fd) attaches tracing programs on every 5.5+ kernel */
	lfd = bpf_raw_tracepoint_open(NULL, fd);
	if (lfd < 0) {
		err = -errno;
		setmsg(ctx, "program loads; attach to %s: %s", target, strerror(-err));
		close(fd);
		return err;
	}
	close(lfd);
	close(fd);
	setmsg(ctx, "loaded and attached to %s", target);
	return 0;
}

/* A function of our own for the uprobe probe to attach to. */
__attribute__((noinline, used)) int tk_uprobe_probe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* File offset of @addr in the object mapped there, from /proc/self/maps. */
static int addr_to_file_offset(unsigned long addr, char *path, size_t path_sz,
			       unsigned long *offset)
{
	char *maps = NULL, *line, *save = NULL;
	int err = tk_read_file_alloc("/proc", "self/maps", 1 << 22, &maps, NULL);

	if (err)
		return err;
	err = -ENOENT;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long start, end, off;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &off, &pos) < 3 ||
		    !pos)
			continue;
		if (addr < start || addr >= end || line[pos] != '/')
			continue;
		snprintf(path, path_sz, "%s", line + pos);
		*offset = addr - start + off;
		err = 0;
		break;
	}
	free(maps);
	return err;
}

static int probe_uprobe(struct tk_probe_ctx *ctx)
{
	struct perf_event_attr attr = { .size = sizeof(attr) };
	char path[4096];
	unsigned long off;
	int type, fd, err;

	type = read_pmu_type(ctx->sys_root, "uprobe");
	if (type < 0) {
		setmsg(ctx, "no uprobe PMU (bus/event_source/devices/uprobe): kernel without "
			    "CONFIG_UPROBE_EVENTS");
		return -EOPNOTSUPP;
	}
	fd = load_prog(BPF_PROG_TYPE_KPROBE, 0, 0, ctx);
	if (fd < 0)
		return fd;
	err = addr_to_file_offset((unsigned long)&tk_uprobe_probe_target, path, sizeof(path),
				  &off);
	if (err) {
		setmsg(ctx, "program loads; cannot find own text in /proc/self/maps");
		close(fd);
		return err;
	}
	attr.type = type;
	attr.config1 = (unsigned long)path;
	attr.config2 = off;
	return attach_via_perf_event(fd, &attr, 0, -1, "a uprobe in this process", ctx);
}

static int probe_kprobe(struct tk_probe_ctx *ctx)
{
	struct perf_event_attr attr = { .size = sizeof(attr) };
	int type, fd;

	type = read_pmu_type(ctx->sys_root, "kprobe");
	if (type < 0) {
		setmsg(ctx, "no kprobe PMU (bus/event_source/devices/kprobe is missing)");
		return -EOPNOTSUPP;
	}
	fd = load_prog(BPF_PROG_TYPE_KPROBE, 0, 0, ctx);
	if (fd < 0)
		return fd;
	attr.type = type;
	attr.config1 = (unsigned long)"do_nanosleep";
	return attach_via_perf_event(fd, &attr, -1, 0, "kprobe do_nanosleep", ctx);
}

/*
 * The sampling event the CPU collector needs: system-wide (all processes of
 * CPU 0) first; where paranoia forbids that, the caller's own processes; and
 * where it forbids kernel frames too, user space only.
 */
static int probe_perf(struct tk_probe_ctx *ctx, bool hardware)
{
	struct perf_event_attr attr = {
		.type = hardware ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = hardware ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = 99,
		.freq = 1,
		.disabled = 1,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN,
	};
	const char *what = hardware ? "hardware cpu-cycles" : "software cpu-clock";
	int pfd = tk_perf_event_open(&attr, -1, 0, 0);
	int err = pfd < 0 ? pfd : 0;

	if (err == -EACCES || err == -EPERM) {
		pfd = tk_perf_event_open(&attr, 0, -1, 0);
		if (pfd == -EACCES || pfd == -EPERM) {
			/* perf_event_paranoid 2 still allows user-space sampling of oneself */
			attr.exclude_kernel = 1;
			attr.exclude_hv = 1;
			pfd = tk_perf_event_open(&attr, 0, -1, 0);
			ctx->user_only = pfd >= 0;
		}
		if (pfd >= 0)
			ctx->own_only = true;
		else
			err = pfd;	/* the last answer: ENOENT says more than EACCES */
	}
	if (pfd < 0) {
		setmsg(ctx, "perf_event_open(%s): %s", what, strerror(-err));
		return err;
	}
	close(pfd);
	setmsg(ctx, "opened a sampling %s event with call chains%s", what,
	       ctx->user_only  ? " for own processes, user space only"
	       : ctx->own_only ? " for own processes only"
			       : " on all processes");
	return 0;
}

int tk_probe_kernel(enum tk_probe which, struct tk_probe_ctx *ctx)
{
	int err;

	ctx->msg[0] = '\0';
	switch (which) {
	case TK_PROBE_BPF_SYSCALL:
		err = probe_bpf_syscall(ctx);
		break;
	case TK_PROBE_RINGBUF:
		err = probe_ringbuf(ctx);
		break;
	case TK_PROBE_CORE:
		err = tk_core_probe__run(ctx);
		break;
	case TK_PROBE_PROG_PERF_EVENT:
		err = probe_perf_event_prog(ctx);
		break;
	case TK_PROBE_PROG_TRACEPOINT:
		err = probe_tracepoint(ctx);
		break;
	case TK_PROBE_PROG_RAW_TP:
		err = probe_raw_tp(ctx);
		break;
	case TK_PROBE_PROG_TP_BTF:
		err = probe_tracing(ctx, false);
		break;
	case TK_PROBE_PROG_FENTRY:
		err = probe_tracing(ctx, true);
		break;
	case TK_PROBE_PROG_UPROBE:
		err = probe_uprobe(ctx);
		break;
	case TK_PROBE_PROG_KPROBE:
		err = probe_kprobe(ctx);
		break;
	case TK_PROBE_PERF_CPU_CLOCK:
		err = probe_perf(ctx, false);
		break;
	case TK_PROBE_PERF_HARDWARE:
		err = probe_perf(ctx, true);
		break;
	case TK_PROBE_UNWIND:
		err = tk_unw_check__selftest(ctx->msg, sizeof(ctx->msg));
		if (!err)
			setmsg(ctx, "walked a known stack in the kernel (rsp, rbp, PLT rules, a "
			       "frame by rbp, the outermost frame)");
		break;
	case TK_PROBE_MAP_RUNTIME_ALLOC:
		err = tk_kfeat__runtime_alloc_maps() ? 0 : -EINVAL;
		setmsg(ctx, err ? "a perf_event program naming a BPF_F_NO_PREALLOC hash map is "
				  "refused (kernels before 6.1)"
				: "a perf_event program may name a BPF_F_NO_PREALLOC hash map");
		break;
	case TK_PROBE_ATTACH_COOKIE:
		err = tk_kfeat__attach_cookie() ? 0 : -ENOENT;
		setmsg(ctx, err ? "no bpf_get_attach_cookie() in kprobe/uprobe programs (kernels "
				  "before 5.15)"
				: "bpf_get_attach_cookie() in kprobe/uprobe programs");
		break;
	case TK_PROBE_UPROBE_SESSION:
		switch (tk_kfeat__session_kfunc()) {
		case TK_KF_SESSION_VOID:
			setmsg(ctx, "kfunc bool bpf_session_is_return(void) in kernel BTF");
			err = 0;
			break;
		case TK_KF_SESSION_CTX:
			setmsg(ctx, "kfunc bool bpf_session_is_return(void *ctx) in kernel BTF");
			err = 0;
			break;
		case TK_KF_SESSION_ABSENT:
			setmsg(ctx, "no kfunc bpf_session_is_return in kernel BTF (uprobe sessions "
			       "came in 6.13)");
			err = -ENOENT;
			break;
		default:
			setmsg(ctx, "bpf_session_is_return: no kernel BTF to read, or a prototype "
			       "tracekit does not know");
			err = -ENOENT;
			break;
		}
		break;
	case TK_PROBE_LOAD_CPU:
		err = tk_cpu_bpf__probe_load(ctx->msg, sizeof(ctx->msg));
		break;
	case TK_PROBE_LOAD_ALLOC:
		err = tk_alloc_bpf__probe_load(ctx->msg, sizeof(ctx->msg));
		break;
	case TK_PROBE_LOAD_NUMA:
		err = tk_numa_bpf__probe_load(ctx->caps, ctx->msg, sizeof(ctx->msg));
		break;
	case TK_PROBE_LOAD_STACKS:
		err = tk_stacks_bpf__probe_load(ctx->msg, sizeof(ctx->msg));
		break;
	default:
		err = -EINVAL;
		break;
	}
	return err > 0 ? 0 : err;
}
