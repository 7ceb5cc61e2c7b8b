// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The capability snapshot: what this kernel, these privileges and this
 * process allow tracekit to do, and why. Files come from opts->proc_root and
 * opts->sys_root (fixture trees in the unit tests); the kernel is asked through
 * the probe function (throw-away objects; replaced by a fake in the unit tests).
 * Nothing on the machine is changed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "caps/caps_int.h"
#include "core/fsutil.h"
#include "core/internal.h"
#include "core/kfeat.h"
#include "core/log.h"
#include "core/opts.h"
#include "caps/caps.h"

static const struct {
	const char *id;
	const char *title;
} cap_meta[TK_CAP__COUNT] = {
	[TK_CAP_CAP_BPF] = { "privileges.cap_bpf", "CAP_BPF" },
	[TK_CAP_CAP_PERFMON] = { "privileges.cap_perfmon", "CAP_PERFMON" },
	[TK_CAP_CAP_SYS_ADMIN] = { "privileges.cap_sys_admin", "CAP_SYS_ADMIN" },
	[TK_CAP_PERF_EVENT_PARANOID] = { "privileges.perf_event_paranoid",
					 "kernel.perf_event_paranoid" },
	[TK_CAP_KPTR_RESTRICT] = { "privileges.kptr_restrict", "kernel.kptr_restrict" },
	[TK_CAP_UNPRIV_BPF_DISABLED] = { "privileges.unprivileged_bpf_disabled",
					 "kernel.unprivileged_bpf_disabled" },
	[TK_CAP_LOCKDOWN] = { "privileges.lockdown", "kernel lockdown" },
	[TK_CAP_BPF_SYSCALL] = { "bpf.syscall", "bpf(2) system call" },
	[TK_CAP_BTF] = { "bpf.btf", "kernel BTF" },
	[TK_CAP_RINGBUF] = { "bpf.ringbuf", "BPF ring buffer" },
	[TK_CAP_CORE] = { "bpf.core", "CO-RE relocation" },
	[TK_CAP_PROG_PERF_EVENT] = { "bpf.prog.perf_event", "perf_event programs" },
	[TK_CAP_PROG_TRACEPOINT] = { "bpf.prog.tracepoint", "tracepoint programs" },
	[TK_CAP_PROG_RAW_TP] = { "bpf.prog.raw_tp", "raw_tp programs" },
	[TK_CAP_PROG_TP_BTF] = { "bpf.prog.tp_btf", "tp_btf programs" },
	[TK_CAP_PROG_FENTRY] = { "bpf.prog.fentry", "fentry/fexit programs" },
	[TK_CAP_PROG_UPROBE] = { "bpf.prog.uprobe", "uprobe programs" },
	[TK_CAP_PROG_KPROBE] = { "bpf.prog.kprobe", "kprobe programs" },
	[TK_CAP_BPF_UNWIND] = { "bpf.unwind", "in-kernel CFI unwinding" },
	[TK_CAP_MAP_RUNTIME_ALLOC] = { "bpf.map.runtime_alloc",
				       "hash maps allocated at run time in tracing programs" },
	[TK_CAP_ATTACH_COOKIE] = { "bpf.attach_cookie", "BPF attach cookies" },
	[TK_CAP_UPROBE_SESSION] = { "bpf.uprobe_session", "uprobe sessions (kfunc)" },
	[TK_CAP_LOAD_CPU] = { "bpf.load.cpu", "the cpu collector's BPF objects load" },
	[TK_CAP_LOAD_ALLOC] = { "bpf.load.alloc", "the alloc collector's BPF objects load" },
	[TK_CAP_LOAD_NUMA] = { "bpf.load.numa", "the numa collector's BPF objects load" },
	[TK_CAP_LOAD_STACKS] = { "bpf.load.stacks", "the stacks collector's task iterator loads" },
	[TK_CAP_PERF_CPU_CLOCK] = { "perf.cpu_clock", "perf cpu-clock sampling" },
	[TK_CAP_PERF_HARDWARE] = { "perf.hardware", "hardware PMU counters" },
	[TK_CAP_TRACEFS] = { "kernel.tracefs", "tracefs" },
	[TK_CAP_TP_SCHED_PROCESS_EXEC] = { "tracepoint.sched_process_exec",
					   "sched:sched_process_exec" },
	[TK_CAP_TP_SCHED_PROCESS_EXIT] = { "tracepoint.sched_process_exit",
					   "sched:sched_process_exit" },
	[TK_CAP_TP_MM_MIGRATE_PAGES] = { "tracepoint.mm_migrate_pages",
					 "migrate:mm_migrate_pages" },
	[TK_CAP_TP_SCHED_MOVE_NUMA] = { "tracepoint.sched_move_numa", "sched:sched_move_numa" },
	[TK_CAP_TP_SCHED_SWAP_NUMA] = { "tracepoint.sched_swap_numa", "sched:sched_swap_numa" },
	[TK_CAP_TP_SCHED_STICK_NUMA] = { "tracepoint.sched_stick_numa",
					 "sched:sched_stick_numa" },
	[TK_CAP_TP_KMEM_MM_PAGE_ALLOC] = { "tracepoint.mm_page_alloc", "kmem:mm_page_alloc" },
	[TK_CAP_TP_KMEM_KMALLOC] = { "tracepoint.kmalloc", "kmem:kmalloc" },
	[TK_CAP_TP_PAGE_FAULT_USER] = { "tracepoint.page_fault_user",
					"exceptions:page_fault_user" },
	[TK_CAP_FN_MIGRATE_MISPLACED] = { "function.migrate_misplaced",
					  "migrate_misplaced_{folio,page}" },
	[TK_CAP_MEM_CGROUP] = { "memory.cgroup", "memory cgroup accounting" },
	[TK_CAP_NUMA] = { "numa.nodes", "NUMA nodes" },
	[TK_CAP_NUMA_BALANCING] = { "numa.balancing", "kernel.numa_balancing" },
	[TK_CAP_PROC_ALLOCATOR] = { "process.allocator", "allocator" },
	[TK_CAP_PROC_JEMALLOC_PROF] = { "process.jemalloc_prof", "jemalloc profiling" },
	[TK_CAP_PROC_BUILD_ID] = { "process.build_id", "build-id" },
	[TK_CAP_PROC_FRAME_POINTERS] = { "process.frame_pointers", "frame pointers" },
	[TK_CAP_PROC_PYTHON] = { "process.python", "Python runtime" },
	[TK_CAP_PROC_JIT] = { "process.jit", "JIT runtime" },
};

const char *tk_cap__id_name(enum tk_cap_id id)
{
	return id < TK_CAP__COUNT ? cap_meta[id].id : "unknown";
}

const char *tk_cap__title(enum tk_cap_id id)
{
	return id < TK_CAP__COUNT ? cap_meta[id].title : "unknown";
}

const char *tk_status__name(enum tk_status s)
{
	switch (s) {
	case TK_SUPPORTED:
		return "supported";
	case TK_UNSUPPORTED:
		return "unsupported";
	case TK_DISABLED:
		return "disabled";
	}
	return "unknown";
}

const char *tk_backend__name(enum tk_backend b)
{
	static const char *const names[] = { "none", "bpf", "perf", "jemalloc", "vmstat",
						"proc" };

	return b < sizeof(names) / sizeof(names[0]) ? names[b] : "unknown";
}

const char *tk_collector__name(enum tk_collector c)
{
	static const char *const names[] = { "cpu", "alloc", "numa", "stacks" };

	return c < TK_COLLECT__COUNT ? names[c] : "unknown";
}

/* ---- backends --------------------------------------------------------------------- */

/* The first of @ids that is not supported, and what it fails for want of, if anything. */
static const char *first_failure(const struct tk_caps *caps, const enum tk_cap_id *ids, int n)
{
	static __thread char buf[320];
	const struct tk_cap *c;
	int i;

	for (i = 0; i < n; i++) {
		if (ok(caps, ids[i]))
			continue;
		c = &caps->caps[ids[i]];
		if (c->has_cause)
			snprintf(buf, sizeof(buf), "%s is %s, for want of %s (%s)",
				 tk_cap__id_name(ids[i]), tk_status__name(c->status),
				 tk_cap__title(c->cause), tk_cap__id_name(c->cause));
		else
			snprintf(buf, sizeof(buf), "%s is %s", tk_cap__id_name(ids[i]),
				 tk_status__name(c->status));
		return buf;
	}
	return NULL;
}

/* Collector @b does not get its bpf backend: keep what stood in the way (@why). */
static void blocked(struct tk_backend_choice *b, const char *why)
{
	put(b->blocker, sizeof(b->blocker), "%s", why);
}

static void choose_backends(struct snap *s, struct tk_caps *caps)
{
	/* the parts, then the collector's own objects loaded (bpf.load.*: what it will do) */
	static const enum tk_cap_id cpu_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_PROG_PERF_EVENT,
						  TK_CAP_PERF_CPU_CLOCK, TK_CAP_LOAD_CPU };
	static const enum tk_cap_id alloc_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_PROG_UPROBE,
						    TK_CAP_RINGBUF, TK_CAP_LOAD_ALLOC };
	static const enum tk_cap_id numa_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_CORE,
						   TK_CAP_TP_MM_MIGRATE_PAGES };
	static const enum tk_cap_id numa_load[] = { TK_CAP_LOAD_NUMA };
	static const enum tk_cap_id stacks_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_LOAD_STACKS };
	struct tk_backend_choice *b;
	const char *why;
	char vm[256];

	b = &caps->backends[TK_COLLECT_CPU];
	/* a CPU-only snapshot (a cpu session's) loads nothing: the session loads next */
	why = first_failure(caps, cpu_bpf, s->cpu_only ? 3 : 4);
	if (why)
		blocked(b, why);
	if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "perf_event BPF programs on cpu-clock, stacks "
			"aggregated in the kernel%s%s", s->cpu_only ? "" : ": ",
		    caps->caps[TK_CAP_LOAD_CPU].reason);
	} else if (ok(caps, TK_CAP_PERF_CPU_CLOCK)) {
		b->backend = TK_BACKEND_PERF;
		put(b->reason, sizeof(b->reason), "%s: perf_event_open cpu-clock with call "
			"chains, read in user space; off-CPU time (--off-cpu) by "
			"sched:sched_switch samples and switch records", why);
	} else if (!ok(caps, TK_CAP_BPF_SYSCALL) || !ok(caps, TK_CAP_PROG_PERF_EVENT)) {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "%s, and perf.cpu_clock is %s", why,
		    tk_status__name(caps->caps[TK_CAP_PERF_CPU_CLOCK].status));
	} else {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "%s: both backends sample cpu-clock", why);
	}

	if (s->cpu_only) {
		for (b = &caps->backends[TK_COLLECT_ALLOC]; b <= &caps->backends[TK_COLLECT_STACKS]; b++)
			put(b->reason, sizeof(b->reason), "not assessed (CPU-only snapshot)");
		return;
	}

	b = &caps->backends[TK_COLLECT_ALLOC];
	/* an allocation-only snapshot loads nothing: the session loads its object next */
	why = first_failure(caps, alloc_bpf, s->alloc_only ? 3 : 4);
	if (why)
		blocked(b, why);
	if (!why && caps->pid && caps->proc.allocator == TK_ALLOC_UNKNOWN) {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "the target's allocator is unknown: no "
			"functions to attach uprobes to");
		blocked(b, "the target's allocator is unknown");
	} else if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "uprobes on the allocator%s, outstanding "
			"allocations tracked in BPF maps%s%s",
		    caps->pid ? "" : " (an in-process sampler for commands tracekit starts)",
		    s->alloc_only ? "" : ": ", caps->caps[TK_CAP_LOAD_ALLOC].reason);
	} else if (caps->pid && caps->proc.allocator == TK_ALLOC_JEMALLOC &&
		   caps->proc.jemalloc_prof_built != 0) {
		b->backend = TK_BACKEND_JEMALLOC;
		put(b->reason, sizeof(b->reason), "%s: the target's jemalloc heap profiles%s", why,
		    caps->proc.jemalloc_prof_active == 1 ? "" : " (profiling must be active)");
	} else if (caps->pid) {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "%s, and the target does not use a jemalloc "
			"with profiling", why);
	} else {
		b->backend = TK_BACKEND_JEMALLOC;
		put(b->reason, sizeof(b->reason), "%s: commands tracekit starts run with "
			"jemalloc's sampled heap profiles", why);
	}

	if (s->alloc_only) {
		/* what the cpu choice read was not taken: not assessed either */
		memset(&caps->backends[TK_COLLECT_CPU], 0, sizeof(caps->backends[0]));
		for (b = caps->backends; b <= &caps->backends[TK_COLLECT_STACKS]; b++)
			if (b != &caps->backends[TK_COLLECT_ALLOC])
				put(b->reason, sizeof(b->reason), "not assessed (allocation-only "
				    "snapshot)");
		return;
	}

	b = &caps->backends[TK_COLLECT_NUMA];
	why = first_failure(caps, numa_bpf, 3);
	if (!why && !ok(caps, TK_CAP_PROG_TP_BTF) && !ok(caps, TK_CAP_PROG_RAW_TP))
		why = "neither tp_btf nor raw_tp programs work";
	if (!why)
		why = first_failure(caps, numa_load, 1);
	if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "migrate:mm_migrate_pages and sched:*_numa "
			"through %s%s (loaded: %s)", ok(caps, TK_CAP_PROG_TP_BTF) ? "tp_btf" : "raw_tp",
		    ok(caps, TK_CAP_PROG_FENTRY) && ok(caps, TK_CAP_FN_MIGRATE_MISPLACED)
			    ? ", fentry on the misplaced-page path"
			    : "; fentry unavailable, so no per-page misplacement detail",
		    caps->caps[TK_CAP_LOAD_NUMA].reason);
	} else {
		blocked(b, why);
		if (tk_read_file(s->proc, "vmstat", vm, sizeof(vm)) > 0) {
			b->backend = TK_BACKEND_VMSTAT;
			put(b->reason, sizeof(b->reason), "%s: /proc/vmstat and per-node numastat "
				"deltas, without per-process detail", why);
		} else {
			b->backend = TK_BACKEND_NONE;
			put(b->reason, sizeof(b->reason), "%s, and /proc/vmstat is unreadable", why);
		}
	}

	/* stacks: its task iterator, else each thread's /proc files (always there) */
	b = &caps->backends[TK_COLLECT_STACKS];
	why = first_failure(caps, stacks_bpf, 2);
	if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "%s", caps->caps[TK_CAP_LOAD_STACKS].reason);
	} else {
		blocked(b, why);
		b->backend = TK_BACKEND_PROC;
		put(b->reason, sizeof(b->reason), "%s: each thread's /proc/PID/task/TID files and "
			"/proc/PID/mem, without off-CPU times", why);
	}
}

/* ---- the snapshot ------------------------------------------------------------------- */

static void snap_kernel(struct snap *s, struct tk_caps *caps, const char *release)
{
	struct utsname u = {};

	uname(&u);
	if (release)
		put(caps->kernel_release, sizeof(caps->kernel_release), "%s", release);
	else if (tk_read_file(s->proc, "sys/kernel/osrelease", caps->kernel_release,
			      sizeof(caps->kernel_release)) > 0)
		tk_rstrip(caps->kernel_release);
	else
		put(caps->kernel_release, sizeof(caps->kernel_release), "%s", u.release);
	put(caps->machine, sizeof(caps->machine), "%s", u.machine);
}

/*
 * A tracefs that is mounted already, from mountinfo: looking under
 * /sys/kernel/debug/tracing instead would automount one, and the snapshot
 * must change nothing.
 */
static void find_tracefs(struct snap *s)
{
	char *mi = NULL, *line, *save = NULL;

	put(s->tracefs_dir, sizeof(s->tracefs_dir), "kernel/tracing");
	if (tk_read_file_alloc(s->proc, "self/mountinfo", 1 << 20, &mi, NULL))
		return;
	for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char point[512], fstype[64], *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", point) != 1 ||
		    sscanf(dash + 3, "%63s", fstype) != 1 || strcmp(fstype, "tracefs"))
			continue;
		/* under /sys, so that sys_root finds it */
		if (!strncmp(point, "/sys/", 5) && strlen(point + 5) < sizeof(s->tracefs_dir)) {
			put(s->tracefs_dir, sizeof(s->tracefs_dir), "%s", point + 5);
			s->tracefs = true;
			break;
		}
	}
	free(mi);
}

int tk_caps__snapshot_probe(const struct tk_caps_opts *opts, tk_probe_fn probe,
			    struct tk_caps *caps)
{
	struct tk_caps_opts o;
	struct tk_log_scope saved;
	struct tk_log log;
	struct snap s = {};
	struct timespec t0, t1;
	char rel[64];
	int err = 0;

	if (!opts || !caps || TK_OPTS_COPY(&o, opts))
		return -EINVAL;
	opts = &o;
	if (opts->pid < 0)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(caps, 0, sizeof(*caps));
	s.proc = opts->proc_root ? opts->proc_root : "/proc";
	s.sys = opts->sys_root ? opts->sys_root : "/sys";
	s.probe = probe ? probe : tk_probe_kernel;
	s.caps = caps;
	caps->pid = opts->pid;

	if (caps->pid) {
		snprintf(rel, sizeof(rel), "%d", caps->pid);
		if (!tk_path_exists(s.proc, rel))
			return -ESRCH;
	}
	snap_kernel(&s, caps, opts->release);

	s.cpu_only = opts->scope == TK_CAPS_CPU;
	s.alloc_only = opts->scope == TK_CAPS_ALLOC;
	find_tracefs(&s);

	log = (struct tk_log){ opts->log, opts->log_ctx };
	tk_log__push(&log, &saved);
	snap_btf(&s, caps);	/* libbpf's words on what it cannot parse go to the log */
	snap_privileges(&s, caps);
	snap_bpf(&s, caps);
	snap_perf(&s, caps);
	if (s.cpu_only) {
		choose_backends(&s, caps);
		goto out;
	}
	if (!s.alloc_only) {
		snap_tracepoints(&s, caps);
		snap_memory(&s, caps);
		snap_numa(&s, caps);
	}
	if (caps->pid) {
		err = tk_proc_info__read(s.proc, caps->pid, &caps->proc);
		if (err == -ENOENT) {
			err = -ESRCH;	/* it exited while we looked */
			goto out;
		}
		if (err)
			snap_process_unreadable(&s, caps, err);
		else
			snap_process(&s, caps);
		if (!err && !s.alloc_only)
			snap_python_runtime(&s, caps);
		if (!s.alloc_only)
			snap_jit_runtime(&s, caps);
		err = 0;
	}
	choose_backends(&s, caps);
out:
	tk_log__pop(&saved);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	caps->elapsed_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (s.btf_shared)
		tk_kfeat__btf_put(s.btf);
	else
		btf__free(s.btf);
	free(s.kallsyms);
	return err;
}

int tk_caps__snapshot(const struct tk_caps_opts *opts, struct tk_caps *caps)
{
	return tk_caps__snapshot_probe(opts, NULL, caps);
}

int tk_caps__take(const struct tk_caps_opts *opts, struct tk_caps **out)
{
	struct tk_caps *caps;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	caps = calloc(1, sizeof(*caps));
	if (!caps)
		return -ENOMEM;
	err = tk_caps__snapshot(opts, caps);
	if (err) {
		free(caps);
		return err;
	}
	*out = caps;
	return 0;
}

void tk_caps__free(struct tk_caps *caps)
{
	free(caps);
}

static const struct tk_cap *entry(const struct tk_caps *caps, enum tk_cap_id id)
{
	return caps && (unsigned int)id < TK_CAP__COUNT ? &caps->caps[id] : NULL;
}

bool tk_caps__present(const struct tk_caps *caps, enum tk_cap_id id)
{
	const struct tk_cap *c = entry(caps, id);

	return c && c->present;
}

enum tk_status tk_caps__status(const struct tk_caps *caps, enum tk_cap_id id)
{
	const struct tk_cap *c = entry(caps, id);

	return c && c->present ? c->status : TK_UNSUPPORTED;
}

const char *tk_caps__value(const struct tk_caps *caps, enum tk_cap_id id)
{
	const struct tk_cap *c = entry(caps, id);

	return c ? c->value : "";
}

const char *tk_caps__reason(const struct tk_caps *caps, enum tk_cap_id id)
{
	const struct tk_cap *c = entry(caps, id);

	return c ? c->reason : "";
}

const char *tk_caps__remedy(const struct tk_caps *caps, enum tk_cap_id id)
{
	const struct tk_cap *c = entry(caps, id);

	return c ? c->remedy : "";
}

enum tk_backend tk_caps__backend(const struct tk_caps *caps, enum tk_collector c,
				 const char **reason)
{
	if (!caps || (unsigned int)c >= TK_COLLECT__COUNT) {
		if (reason)
			*reason = "";
		return TK_BACKEND_NONE;
	}
	if (reason)
		*reason = caps->backends[c].reason;
	return caps->backends[c].backend;
}

const char *tk_caps__kernel_release(const struct tk_caps *caps)
{
	return caps ? caps->kernel_release : "";
}

double tk_caps__elapsed_ms(const struct tk_caps *caps)
{
	return caps ? caps->elapsed_ms : 0;
}
