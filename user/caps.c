// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The capability snapshot: what this kernel, these privileges and this
 * process allow tracekit to do, and why. Files come from opts->proc_root and
 * opts->sys_root (fixture trees in the unit tests); the kernel is asked through
 * opts->probe (throw-away objects; replaced by a fake in the unit tests).
 * Nothing on the machine is changed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "fsutil.h"
#include "internal.h"
#include "tracekit.h"

/* Capability bits (linux/capability.h) */
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SYSLOG_BIT 34
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

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
	static const char *const names[] = { "none", "bpf", "perf", "jemalloc", "vmstat" };

	return b < sizeof(names) / sizeof(names[0]) ? names[b] : "unknown";
}

const char *tk_collector__name(enum tk_collector c)
{
	static const char *const names[] = { "cpu", "alloc", "numa" };

	return c < TK_COLLECT__COUNT ? names[c] : "unknown";
}

/* ---- helpers --------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void put(char *dst, size_t size, const char *fmt,
						       ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}

#define VALUE(c, ...) put((c)->value, sizeof((c)->value), __VA_ARGS__)
#define REASON(c, ...) put((c)->reason, sizeof((c)->reason), __VA_ARGS__)
#define REMEDY(c, ...) put((c)->remedy, sizeof((c)->remedy), __VA_ARGS__)

static struct tk_cap *set(struct tk_caps *caps, enum tk_cap_id id, enum tk_status st)
{
	struct tk_cap *c = &caps->caps[id];

	memset(c, 0, sizeof(*c));
	c->present = true;
	c->status = st;
	return c;
}

static bool ok(const struct tk_caps *caps, enum tk_cap_id id)
{
	return caps->caps[id].present && caps->caps[id].status == TK_SUPPORTED;
}

struct snap {
	const char *proc;
	const char *sys;
	tk_probe_fn probe;
	char *kallsyms;		/* whole file, or NULL; read only when BTF cannot answer */
	bool kallsyms_read;
	struct btf *btf;	/* vmlinux BTF, or NULL */
	char btf_path[4096];
	bool has_btf;
	uint64_t capeff;
	int seccomp;		/* 0 none, 1 strict, 2 filter, -1 unknown */
	long cap_last_cap;
	bool tracefs;
	char tracefs_dir[64];	/* relative to sys root */
};

/* "Name:\tvalue" field of a /proc status file, copied into @out. */
static bool status_field(const char *text, const char *name, char *out, size_t size)
{
	size_t nlen = strlen(name);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, name, nlen) && p[nlen] == ':') {
			const char *v = p + nlen + 1, *e;

			while (*v == ' ' || *v == '\t')
				v++;
			e = strchr(v, '\n');
			put(out, size, "%.*s", e ? (int)(e - v) : (int)strlen(v), v);
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static bool has_cap(const struct snap *s, int bit)
{
	return s->capeff & (1ULL << bit);
}

static bool bpf_privileged(const struct snap *s)
{
	return has_cap(s, CAP_SYS_ADMIN_BIT) || has_cap(s, CAP_BPF_BIT);
}

static bool perf_privileged(const struct snap *s)
{
	return has_cap(s, CAP_SYS_ADMIN_BIT) || has_cap(s, CAP_PERFMON_BIT);
}

/* ---- privileges ----------------------------------------------------------------- */

static void snap_privileges(struct snap *s, struct tk_caps *caps)
{
	static const struct {
		enum tk_cap_id id;
		int bit;
		const char *why;
	} capbits[] = {
		{ TK_CAP_CAP_BPF, CAP_BPF_BIT, "load BPF programs and create maps" },
		{ TK_CAP_CAP_PERFMON, CAP_PERFMON_BIT, "attach tracing programs and open perf events" },
		{ TK_CAP_CAP_SYS_ADMIN, CAP_SYS_ADMIN_BIT,
		  "stand in for both, as kernels before 5.8 require" },
	};
	char status[8192], field[64];
	struct tk_cap *c;
	long v;
	size_t i;

	s->capeff = 0;
	s->seccomp = -1;
	if (tk_read_file(s->proc, "self/status", status, sizeof(status)) > 0) {
		if (status_field(status, "CapEff", field, sizeof(field)))
			s->capeff = strtoull(field, NULL, 16);
		if (status_field(status, "Seccomp", field, sizeof(field)))
			s->seccomp = atoi(field);
	}
	if (tk_read_long(s->proc, "sys/kernel/cap_last_cap", &s->cap_last_cap))
		s->cap_last_cap = 40;

	for (i = 0; i < sizeof(capbits) / sizeof(capbits[0]); i++) {
		if (capbits[i].bit > s->cap_last_cap) {
			c = set(caps, capbits[i].id, TK_UNSUPPORTED);
			VALUE(c, "absent");
			REASON(c, "the kernel predates %s (cap_last_cap is %ld); CAP_SYS_ADMIN is "
				  "needed instead", tk_cap__title(capbits[i].id), s->cap_last_cap);
			REMEDY(c, "run tracekit as root");
		} else if (has_cap(s, capbits[i].bit)) {
			c = set(caps, capbits[i].id, TK_SUPPORTED);
			VALUE(c, "effective");
		} else {
			c = set(caps, capbits[i].id, TK_DISABLED);
			VALUE(c, "not effective");
			REASON(c, "this process does not hold it (needed to %s)", capbits[i].why);
			REMEDY(c, "run tracekit as root, or grant it: setcap "
				  "cap_bpf,cap_perfmon,cap_sys_admin+ep tracekit");
		}
	}

	if (tk_read_long(s->proc, "sys/kernel/perf_event_paranoid", &v)) {
		c = set(caps, TK_CAP_PERF_EVENT_PARANOID, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "no perf_event_paranoid: the kernel has no perf events "
			  "(CONFIG_PERF_EVENTS off)");
	} else if (perf_privileged(s) || v <= 1) {
		c = set(caps, TK_CAP_PERF_EVENT_PARANOID, TK_SUPPORTED);
		VALUE(c, "%ld", v);
		if (v > 1)
			REASON(c, "does not restrict this process: it holds %s",
			       has_cap(s, CAP_PERFMON_BIT) ? "CAP_PERFMON" : "CAP_SYS_ADMIN");
	} else {
		c = set(caps, TK_CAP_PERF_EVENT_PARANOID, TK_DISABLED);
		VALUE(c, "%ld", v);
		REASON(c, v >= 3 ? "forbids perf_event_open to processes without CAP_PERFMON"
				 : "limits processes without CAP_PERFMON to user-space "
				   "measurement of their own processes");
		REMEDY(c, "run as root, or: sysctl kernel.perf_event_paranoid=1");
	}

	if (tk_read_long(s->proc, "sys/kernel/kptr_restrict", &v)) {
		c = set(caps, TK_CAP_KPTR_RESTRICT, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "no kptr_restrict sysctl: kernel addresses cannot be checked");
	} else if (v == 0 || (v == 1 && has_cap(s, CAP_SYSLOG_BIT))) {
		c = set(caps, TK_CAP_KPTR_RESTRICT, TK_SUPPORTED);
		VALUE(c, "%ld", v);
		if (v == 1)
			REASON(c, "kernel addresses are visible to this process (CAP_SYSLOG)");
	} else {
		c = set(caps, TK_CAP_KPTR_RESTRICT, TK_DISABLED);
		VALUE(c, "%ld", v);
		REASON(c, "/proc/kallsyms shows zero addresses to this process: kernel "
			  "frames cannot be named");
		REMEDY(c, v >= 2 ? "sysctl kernel.kptr_restrict=1 and run as root"
				 : "run as root (CAP_SYSLOG)");
	}

	if (tk_read_long(s->proc, "sys/kernel/unprivileged_bpf_disabled", &v)) {
		c = set(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "no unprivileged_bpf_disabled sysctl: the kernel may lack bpf(2)");
	} else if (bpf_privileged(s) || v == 0) {
		c = set(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_SUPPORTED);
		VALUE(c, "%ld", v);
		if (v)
			REASON(c, "does not restrict this process: it holds %s",
			       has_cap(s, CAP_BPF_BIT) ? "CAP_BPF" : "CAP_SYS_ADMIN");
	} else {
		c = set(caps, TK_CAP_UNPRIV_BPF_DISABLED, TK_DISABLED);
		VALUE(c, "%ld", v);
		REASON(c, "bpf(2) is refused to processes without CAP_BPF");
		REMEDY(c, "run tracekit as root (or with CAP_BPF and CAP_PERFMON)");
	}

	{
		char lock[256];
		char *open, *close;

		if (tk_read_file(s->sys, "kernel/security/lockdown", lock, sizeof(lock)) > 0 &&
		    (open = strchr(lock, '[')) && (close = strchr(open, ']'))) {
			*close = '\0';
			open++;
			if (!strcmp(open, "confidentiality")) {
				c = set(caps, TK_CAP_LOCKDOWN, TK_DISABLED);
				VALUE(c, "confidentiality");
				REASON(c, "lockdown forbids reading kernel memory: BPF kernel "
					  "reads, kprobes and kernel stacks fail");
				REMEDY(c, "boot with lockdown=integrity or none (Secure Boot "
					  "may force it); user-space profiling still works");
			} else {
				c = set(caps, TK_CAP_LOCKDOWN, TK_SUPPORTED);
				VALUE(c, "%s", open);
				if (!strcmp(open, "integrity"))
					REASON(c, "integrity mode does not restrict tracing reads");
			}
		} else {
			c = set(caps, TK_CAP_LOCKDOWN, TK_SUPPORTED);
			VALUE(c, "unknown");
			REASON(c, tk_path_exists(s->sys, "kernel/security/lockdown")
					  ? "kernel/security/lockdown is unreadable"
					  : "securityfs does not show lockdown here (not mounted, or "
					    "no lockdown LSM); the probes show its effect");
		}
	}
}

/* ---- eBPF and perf: probes ------------------------------------------------------ */

static int run_probe(struct snap *s, enum tk_probe which, struct tk_probe_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->sys_root = s->sys;
	ctx->btf_path = s->has_btf ? s->btf_path : NULL;
	ctx->btf = s->btf;
	return s->probe(which, ctx);
}

/* Status and reason for a refused probe; @what names what was refused. */
static void refused(struct snap *s, struct tk_cap *c, int err, const char *msg, bool bpf)
{
	bool priv = bpf ? bpf_privileged(s) && perf_privileged(s) : perf_privileged(s);

	if ((err == -EPERM || err == -EACCES) && s->seccomp == 2) {
		c->status = TK_UNSUPPORTED;
		REASON(c, "%s; this process runs under a seccomp filter (Seccomp: 2), as "
			  "container runtimes install, which blocks it", msg);
		REMEDY(c, "allow %s in the seccomp profile (docker/podman: --security-opt "
			  "seccomp=unconfined or --privileged)", bpf ? "bpf(2)" : "perf_event_open");
	} else if ((err == -EPERM || err == -EACCES) && !priv) {
		c->status = TK_DISABLED;
		REASON(c, "%s: this process lacks %s", msg,
		       bpf ? "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"
			   : "CAP_PERFMON (or CAP_SYS_ADMIN)");
		REMEDY(c, "run tracekit as root");
	} else if (err == -EPERM || err == -EACCES) {
		c->status = TK_UNSUPPORTED;
		REASON(c, "%s: the kernel refuses it although this process holds the "
			  "capabilities (a security policy or sandbox forbids it)", msg);
	} else if (err == -ENOSYS) {
		c->status = TK_UNSUPPORTED;
		REASON(c, "%s: the system call does not exist here%s", msg,
		       s->seccomp == 2 ? " (or a seccomp filter answers ENOSYS)" : "");
	} else {
		c->status = TK_UNSUPPORTED;
		REASON(c, "%s", msg);
	}
}

/* Run one probe into entry @id; returns the probe's answer (0 or -errno). */
static int snap_probe_entry(struct snap *s, struct tk_caps *caps, enum tk_cap_id id,
			    enum tk_probe which, bool bpf, struct tk_probe_ctx *ctx)
{
	struct tk_cap *c = set(caps, id, TK_SUPPORTED);
	int err = run_probe(s, which, ctx);

	if (!err) {
		VALUE(c, "yes");
		REASON(c, "%s", ctx->msg);
		return 0;
	}
	VALUE(c, "no");
	refused(s, c, err, ctx->msg[0] ? ctx->msg : strerror(-err), bpf);
	return err;
}

static void kconfig_note(struct snap *s, struct tk_cap *c, const char *opt)
{
	size_t n = strlen(c->reason);

	if (tk_kconfig__lookup(s->proc, opt) == 0)
		put(c->reason + n, sizeof(c->reason) - n, "; the kernel is built without %s "
			"(config.gz)", opt);
}

static void snap_bpf(struct snap *s, struct tk_caps *caps)
{
	static const struct {
		enum tk_cap_id id;
		enum tk_probe probe;
	} progs[] = {
		{ TK_CAP_PROG_PERF_EVENT, TK_PROBE_PROG_PERF_EVENT },
		{ TK_CAP_PROG_TRACEPOINT, TK_PROBE_PROG_TRACEPOINT },
		{ TK_CAP_PROG_RAW_TP, TK_PROBE_PROG_RAW_TP },
		{ TK_CAP_PROG_TP_BTF, TK_PROBE_PROG_TP_BTF },
		{ TK_CAP_PROG_FENTRY, TK_PROBE_PROG_FENTRY },
		{ TK_CAP_PROG_UPROBE, TK_PROBE_PROG_UPROBE },
		{ TK_CAP_PROG_KPROBE, TK_PROBE_PROG_KPROBE },
	};
	struct tk_probe_ctx ctx;
	struct tk_cap *c;
	size_t i;

	/* BTF first: the CO-RE, tp_btf and fentry probes need it. */
	if (s->has_btf) {
		c = set(caps, TK_CAP_BTF, TK_SUPPORTED);
		VALUE(c, "%s", s->btf_path);
	} else {
		c = set(caps, TK_CAP_BTF, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "no /sys/kernel/btf/vmlinux: the kernel is built without "
			  "CONFIG_DEBUG_INFO_BTF; CO-RE, tp_btf and fentry need it");
		REMEDY(c, "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution "
			  "kernels since 5.4); perf sampling works without it");
	}

	snap_probe_entry(s, caps, TK_CAP_BPF_SYSCALL, TK_PROBE_BPF_SYSCALL, true, &ctx);
	if (!ok(caps, TK_CAP_BPF_SYSCALL)) {
		static const enum tk_cap_id rest[] = {
			TK_CAP_RINGBUF,		TK_CAP_CORE,	      TK_CAP_PROG_PERF_EVENT,
			TK_CAP_PROG_TRACEPOINT, TK_CAP_PROG_RAW_TP,   TK_CAP_PROG_TP_BTF,
			TK_CAP_PROG_FENTRY,	TK_CAP_PROG_UPROBE,   TK_CAP_PROG_KPROBE,
		};

		for (i = 0; i < sizeof(rest) / sizeof(rest[0]); i++) {
			c = set(caps, rest[i], caps->caps[TK_CAP_BPF_SYSCALL].status);
			VALUE(c, "no");
			REASON(c, "bpf(2) is not available (see bpf.syscall)");
		}
		return;
	}

	/* a kernel without ring buffers rejects the map type as invalid */
	if (snap_probe_entry(s, caps, TK_CAP_RINGBUF, TK_PROBE_RINGBUF, true, &ctx) == -EINVAL)
		REMEDY(&caps->caps[TK_CAP_RINGBUF], "BPF ring buffers need Linux 5.8 or later");

	if (!s->has_btf) {
		c = set(caps, TK_CAP_CORE, TK_UNSUPPORTED);
		VALUE(c, "no");
		REASON(c, "no kernel BTF to relocate against (see bpf.btf)");
	} else {
		snap_probe_entry(s, caps, TK_CAP_CORE, TK_PROBE_CORE, true, &ctx);
		caps->core = ctx.core;
	}

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (!s->has_btf &&
		    (progs[i].id == TK_CAP_PROG_TP_BTF || progs[i].id == TK_CAP_PROG_FENTRY)) {
			c = set(caps, progs[i].id, TK_UNSUPPORTED);
			VALUE(c, "no");
			REASON(c, "needs kernel BTF (see bpf.btf)");
			continue;
		}
		snap_probe_entry(s, caps, progs[i].id, progs[i].probe, true, &ctx);
	}
	if (!ok(caps, TK_CAP_PROG_KPROBE))
		kconfig_note(s, &caps->caps[TK_CAP_PROG_KPROBE], "CONFIG_KPROBES");
	if (!ok(caps, TK_CAP_PROG_UPROBE))
		kconfig_note(s, &caps->caps[TK_CAP_PROG_UPROBE], "CONFIG_UPROBE_EVENTS");
	if (!ok(caps, TK_CAP_PROG_FENTRY) && !caps->caps[TK_CAP_PROG_FENTRY].remedy[0])
		REMEDY(&caps->caps[TK_CAP_PROG_FENTRY],
		       "none needed: tracekit uses tracepoints (raw_tp/tp_btf) where fentry "
		       "is refused");
	if (!ok(caps, TK_CAP_PROG_KPROBE) && !caps->caps[TK_CAP_PROG_KPROBE].remedy[0])
		REMEDY(&caps->caps[TK_CAP_PROG_KPROBE],
		       "none needed: tracekit uses tracepoints and fentry instead");
}

static void snap_perf(struct snap *s, struct tk_caps *caps)
{
	struct tk_probe_ctx ctx;
	struct tk_cap *c;
	int err;

	snap_probe_entry(s, caps, TK_CAP_PERF_CPU_CLOCK, TK_PROBE_PERF_CPU_CLOCK, false, &ctx);
	c = &caps->caps[TK_CAP_PERF_CPU_CLOCK];
	if (c->status == TK_SUPPORTED && ctx.user_only) {
		VALUE(c, "user space only");
		REASON(c, "%s; kernel frames are not allowed to this process "
			  "(perf_event_paranoid), so only its own processes' user stacks",
		       ctx.msg);
		REMEDY(c, "run tracekit as root for kernel stacks and other users' processes");
	} else if (c->status == TK_DISABLED) {
		REMEDY(c, "run tracekit as root, or: sysctl kernel.perf_event_paranoid=1");
	}

	err = snap_probe_entry(s, caps, TK_CAP_PERF_HARDWARE, TK_PROBE_PERF_HARDWARE, false, &ctx);
	c = &caps->caps[TK_CAP_PERF_HARDWARE];
	/* no PMU: the event type or config is unknown to the kernel */
	if (err == -ENOENT || err == -EOPNOTSUPP) {
		REASON(c, "no hardware PMU counters are exposed%s (%s)",
		       tk_path_exists(s->sys, "bus/event_source/devices/cpu")
			       ? ""
			       : " (no bus/event_source/devices/cpu: typical of virtual machines)",
		       ctx.msg);
		REMEDY(c, "none needed: tracekit samples with the software cpu-clock event");
	}
}

/* ---- tracepoints and kernel functions --------------------------------------------- */

/*
 * Is @sym a symbol in kallsyms? @types: the type letters that count. Reading
 * /proc/kallsyms costs ~150 ms, so it is read once, and only when asked.
 */
static bool kallsyms_has(struct snap *s, const char *sym, const char *types)
{
	size_t len = strlen(sym);
	const char *p;

	if (!s->kallsyms_read) {
		s->kallsyms_read = true;
		if (tk_read_file_alloc(s->proc, "kallsyms", 64 << 20, &s->kallsyms, NULL))
			s->kallsyms = NULL;
	}
	p = s->kallsyms;

	if (!p)
		return false;
	/* "ffffffff8166e050 T migrate_misplaced_folio\n", maybe "\t[module]" */
	while ((p = strstr(p, sym))) {
		if (p - s->kallsyms >= 3 && p[-1] == ' ' && p[-3] == ' ' &&
		    strchr(types, p[-2]) && (p[len] == '\n' || p[len] == '\t' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

static bool btf_has(const struct snap *s, const char *name, __u32 kind)
{
	return s->btf && btf__find_by_name_kind(s->btf, name, kind) > 0;
}

static void snap_tracepoints(struct snap *s, struct tk_caps *caps)
{
	static const struct {
		enum tk_cap_id id;
		const char *cat, *name;
	} tps[] = {
		{ TK_CAP_TP_SCHED_PROCESS_EXEC, "sched", "sched_process_exec" },
		{ TK_CAP_TP_SCHED_PROCESS_EXIT, "sched", "sched_process_exit" },
		{ TK_CAP_TP_MM_MIGRATE_PAGES, "migrate", "mm_migrate_pages" },
		{ TK_CAP_TP_SCHED_MOVE_NUMA, "sched", "sched_move_numa" },
		{ TK_CAP_TP_SCHED_SWAP_NUMA, "sched", "sched_swap_numa" },
		{ TK_CAP_TP_SCHED_STICK_NUMA, "sched", "sched_stick_numa" },
		{ TK_CAP_TP_KMEM_MM_PAGE_ALLOC, "kmem", "mm_page_alloc" },
		{ TK_CAP_TP_KMEM_KMALLOC, "kmem", "kmalloc" },
		{ TK_CAP_TP_PAGE_FAULT_USER, "exceptions", "page_fault_user" },
	};
	static const char *const misplaced[] = { "migrate_misplaced_folio",
						 "migrate_misplaced_page" };
	char rel[256], sym[128];
	struct tk_cap *c;
	size_t i;

	if (s->tracefs) {
		c = set(caps, TK_CAP_TRACEFS, TK_SUPPORTED);
		VALUE(c, "/sys/%s", s->tracefs_dir);
	} else {
		c = set(caps, TK_CAP_TRACEFS, TK_DISABLED);
		VALUE(c, "not mounted");
		REASON(c, "tracefs is not mounted; tracekit attaches tracepoints by BTF "
			  "(raw_tp/tp_btf) and does not need it");
		REMEDY(c, "only for other tools: mount -t tracefs nodev /sys/kernel/tracing");
	}

	for (i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		const char *via = NULL;

		snprintf(rel, sizeof(rel), "%s/events/%s/%s", s->tracefs_dir, tps[i].cat,
			 tps[i].name);
		snprintf(sym, sizeof(sym), "btf_trace_%s", tps[i].name);
		if (s->tracefs && tk_path_exists(s->sys, rel))
			via = "tracefs";
		else if (btf_has(s, sym, BTF_KIND_TYPEDEF))
			via = "BTF";
		else {
			snprintf(sym, sizeof(sym), "__tracepoint_%s", tps[i].name);
			if (kallsyms_has(s, sym, "dDbBrR"))
				via = "kallsyms";
		}
		if (via) {
			c = set(caps, tps[i].id, TK_SUPPORTED);
			VALUE(c, "present");
			REASON(c, "found in %s", via);
		} else {
			c = set(caps, tps[i].id, TK_UNSUPPORTED);
			VALUE(c, "absent");
			REASON(c, "%s:%s is not in this kernel (not in tracefs, BTF or kallsyms)",
			       tps[i].cat, tps[i].name);
		}
	}
	c = &caps->caps[TK_CAP_TP_MM_MIGRATE_PAGES];
	if (c->status == TK_SUPPORTED && ok(caps, TK_CAP_CORE)) {
		size_t n = strlen(c->reason);

		put(c->reason + n, sizeof(c->reason) - n, "; record has %s",
		    caps->core.mm_migrate_has_large_folio_split ? "large_folio_split"
		    : caps->core.mm_migrate_has_nr_split	 ? "nr_split"
							 : "neither nr_split nor large_folio_split");
	}

	c = NULL;
	for (i = 0; i < 2 && !c; i++) {
		const char *via = btf_has(s, misplaced[i], BTF_KIND_FUNC) ? "BTF"
				  : kallsyms_has(s, misplaced[i], "tT")	  ? "kallsyms"
									  : NULL;
		if (via) {
			c = set(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_SUPPORTED);
			VALUE(c, "%s", misplaced[i]);
			REASON(c, "found in %s%s", via,
			       ok(caps, TK_CAP_PROG_FENTRY) ? ""
							    : "; fentry on it is unavailable here");
		}
	}
	if (!c) {
		c = set(caps, TK_CAP_FN_MIGRATE_MISPLACED, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "neither migrate_misplaced_folio nor migrate_misplaced_page is in "
			  "kallsyms or BTF (inlined or renamed)");
		REMEDY(c, "none needed: migrate:mm_migrate_pages still reports NUMA migrations");
	}
}

/* ---- memory, NUMA ----------------------------------------------------------------- */

static uint64_t kb_field(const char *text, const char *name)
{
	char v[64];

	return status_field(text, name, v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

static void snap_memory(struct snap *s, struct tk_caps *caps)
{
	struct tk_memory *m = &caps->memory;
	char buf[8192], rel[64];
	int pid = caps->pid;
	struct tk_cap *c;
	int err;

	if (tk_read_file(s->proc, "meminfo", buf, sizeof(buf)) > 0) {
		m->mem_total_kb = kb_field(buf, "MemTotal");
		m->mem_available_kb = kb_field(buf, "MemAvailable");
		m->swap_total_kb = kb_field(buf, "SwapTotal");
		m->swap_free_kb = kb_field(buf, "SwapFree");
	}
	if (pid)
		snprintf(rel, sizeof(rel), "%d/status", pid);
	else
		snprintf(rel, sizeof(rel), "self/status");
	if (tk_read_file(s->proc, rel, buf, sizeof(buf)) > 0) {
		char v[32];

		if (status_field(buf, "Pid", v, sizeof(v)))
			m->rss_pid = atoi(v);
		m->rss_kb = kb_field(buf, "VmRSS");
		m->hwm_kb = kb_field(buf, "VmHWM");
	}

	/* the caller's own cgroup is that of "self" */
	if (pid)
		snprintf(rel, sizeof(rel), "%d", pid);
	else
		snprintf(rel, sizeof(rel), "self");
	err = tk_memcg__read(s->proc, s->sys, rel, m);
	if (m->cgroup != TK_CGROUP_NONE) {
		c = set(caps, TK_CAP_MEM_CGROUP, TK_SUPPORTED);
		VALUE(c, "%s", m->cgroup == TK_CGROUP_V2 ? "v2" : "v1");
		REASON(c, "%s: %s", m->cgroup_path, m->cgroup_files);
	} else {
		c = set(caps, TK_CAP_MEM_CGROUP, TK_UNSUPPORTED);
		VALUE(c, "none");
		REASON(c, "no memory accounting files for %s%s%s%s%s: figures are system-wide",
		       pid ? "the target's cgroup" : "this process's cgroup",
		       m->cgroup_path[0] ? " " : "", m->cgroup_path, err ? ": " : "",
		       err ? strerror(-err) : "");
	}
}

static void snap_numa(struct snap *s, struct tk_caps *caps)
{
	struct tk_numa *n = &caps->numa;
	struct tk_cap *c;
	long v;

	tk_numa__read(s->sys, n);
	if (n->nr_nodes == 0) {
		c = set(caps, TK_CAP_NUMA, TK_UNSUPPORTED);
		VALUE(c, "0 nodes");
		REASON(c, "no devices/system/node: the kernel is built without CONFIG_NUMA");
	} else {
		c = set(caps, TK_CAP_NUMA, TK_SUPPORTED);
		VALUE(c, "%d node%s", n->nr_nodes, n->nr_nodes == 1 ? "" : "s");
		if (n->nr_nodes == 1)
			REASON(c, "one node: pages cannot move between nodes on this machine");
	}

	if (tk_read_long(s->proc, "sys/kernel/numa_balancing", &v)) {
		n->balancing = -1;
		c = set(caps, TK_CAP_NUMA_BALANCING, TK_UNSUPPORTED);
		VALUE(c, "absent");
		REASON(c, "no kernel.numa_balancing: the kernel is built without "
			  "CONFIG_NUMA_BALANCING");
		return;
	}
	n->balancing = v;
	if (v == 0) {
		c = set(caps, TK_CAP_NUMA_BALANCING, TK_DISABLED);
		VALUE(c, "0 (off)");
		REASON(c, "automatic NUMA balancing is off: the kernel migrates pages only when "
			  "asked (move_pages, mbind, cpusets)%s",
		       n->nr_nodes == 1 ? "; with one node there is nothing to balance" : "");
		REMEDY(c, "sysctl kernel.numa_balancing=1 to enable it");
	} else {
		c = set(caps, TK_CAP_NUMA_BALANCING, TK_SUPPORTED);
		VALUE(c, "%ld (%s)", v,
		      v == 1   ? "normal"
		      : v == 2 ? "memory tiering"
		      : v == 3 ? "normal and memory tiering"
			       : "unknown mode");
	}
}

/* ---- the target process ----------------------------------------------------------- */

static void snap_process(struct snap *s, struct tk_caps *caps)
{
	const struct tk_proc_info *p = &caps->proc;
	struct tk_cap *c;

	if (p->allocator == TK_ALLOC_UNKNOWN) {
		c = set(caps, TK_CAP_PROC_ALLOCATOR, TK_UNSUPPORTED);
		VALUE(c, "unknown");
		REASON(c, "%s", p->alloc_evidence[0] ? p->alloc_evidence
						    : "no known allocator in its mappings");
	} else {
		c = set(caps, TK_CAP_PROC_ALLOCATOR, TK_SUPPORTED);
		VALUE(c, "%s%s%s%s", tk_allocator__name(p->allocator),
		      p->alloc_static ? " (static)" : "", p->alloc_prefix[0] ? " prefix " : "",
		      p->alloc_prefix);
		REASON(c, "%s", p->alloc_evidence);
	}

	if (p->allocator == TK_ALLOC_JEMALLOC) {
		if (p->jemalloc_prof_built == 0) {
			c = set(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_UNSUPPORTED);
			VALUE(c, "not built");
			REASON(c, "%s", p->jemalloc_prof_built_evidence);
			REMEDY(c, "use a jemalloc configured with --enable-prof");
		} else if (p->jemalloc_prof_active == 1) {
			c = set(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_SUPPORTED);
			VALUE(c, "%s, active", p->jemalloc_prof_built == 1 ? "built" : "built?");
			REASON(c, "%s; %s", p->jemalloc_prof_built_evidence,
			       p->jemalloc_prof_active_evidence);
		} else {
			c = set(caps, TK_CAP_PROC_JEMALLOC_PROF, TK_DISABLED);
			VALUE(c, "%s, %s", p->jemalloc_prof_built == 1 ? "built" : "built?",
			      p->jemalloc_prof_active == 0 ? "inactive" : "not known active");
			REASON(c, "%s; %s", p->jemalloc_prof_built_evidence,
			       p->jemalloc_prof_active_evidence);
			REMEDY(c, "start it with %sMALLOC_CONF=prof:true", p->alloc_prefix[0] ?
			       "the prefixed " : "");
		}
	}

	if (p->has_build_id) {
		c = set(caps, TK_CAP_PROC_BUILD_ID, TK_SUPPORTED);
		VALUE(c, "%.40s", p->build_id);
	} else {
		c = set(caps, TK_CAP_PROC_BUILD_ID, TK_UNSUPPORTED);
		VALUE(c, "none");
		REASON(c, "the main binary has no GNU build-id note: symbols are matched by path");
		REMEDY(c, "link with -Wl,--build-id");
	}

	if (p->frame_pointers == 1) {
		c = set(caps, TK_CAP_PROC_FRAME_POINTERS, TK_SUPPORTED);
		VALUE(c, "likely");
	} else {
		c = set(caps, TK_CAP_PROC_FRAME_POINTERS, TK_UNSUPPORTED);
		VALUE(c, p->frame_pointers == 0 ? "unlikely" : "unknown");
		REMEDY(c, "build with -fno-omit-frame-pointer for whole stacks");
	}
	REASON(c, "%s", p->fp_evidence);
}

/* The process exists but cannot be inspected: say so in each of its entries. */
static void snap_process_unreadable(struct snap *s, struct tk_caps *caps, int err)
{
	static const enum tk_cap_id ids[] = { TK_CAP_PROC_ALLOCATOR, TK_CAP_PROC_BUILD_ID,
					      TK_CAP_PROC_FRAME_POINTERS };
	char rel[64];
	size_t i;

	caps->proc.pid = caps->pid;
	snprintf(rel, sizeof(rel), "%d/comm", caps->pid);
	if (tk_read_file(s->proc, rel, caps->proc.comm, sizeof(caps->proc.comm)) > 0)
		tk_rstrip(caps->proc.comm);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct tk_cap *c = set(caps, ids[i], err == -EACCES || err == -EPERM ?
						     TK_DISABLED : TK_UNSUPPORTED);

		VALUE(c, "unknown");
		REASON(c, "cannot read /proc/%d/maps or exe: %s", caps->pid, strerror(-err));
		if (err == -EACCES || err == -EPERM)
			REMEDY(c, "needs ptrace access to the process: root with CAP_SYS_PTRACE, "
				  "and kernel.yama.ptrace_scope below 3");
	}
}

/* ---- backends --------------------------------------------------------------------- */

static const char *first_failure(const struct tk_caps *caps, const enum tk_cap_id *ids, int n)
{
	static __thread char buf[320];
	int i;

	for (i = 0; i < n; i++)
		if (!ok(caps, ids[i])) {
			snprintf(buf, sizeof(buf), "%s is %s", tk_cap__id_name(ids[i]),
				 tk_status__name(caps->caps[ids[i]].status));
			return buf;
		}
	return NULL;
}

static void choose_backends(struct snap *s, struct tk_caps *caps)
{
	static const enum tk_cap_id cpu_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_PROG_PERF_EVENT,
						  TK_CAP_PERF_CPU_CLOCK };
	static const enum tk_cap_id alloc_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_PROG_UPROBE,
						    TK_CAP_RINGBUF };
	static const enum tk_cap_id numa_bpf[] = { TK_CAP_BPF_SYSCALL, TK_CAP_CORE,
						   TK_CAP_TP_MM_MIGRATE_PAGES };
	struct tk_backend_choice *b;
	const char *why;
	char vm[256];

	b = &caps->backends[TK_COLLECT_CPU];
	why = first_failure(caps, cpu_bpf, 3);
	if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "perf_event BPF programs on cpu-clock, stacks "
			"aggregated in the kernel");
	} else if (ok(caps, TK_CAP_PERF_CPU_CLOCK)) {
		b->backend = TK_BACKEND_PERF;
		put(b->reason, sizeof(b->reason), "%s: perf_event_open cpu-clock with call "
			"chains, read in user space", why);
	} else if (!ok(caps, TK_CAP_BPF_SYSCALL) || !ok(caps, TK_CAP_PROG_PERF_EVENT)) {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "%s, and perf.cpu_clock is %s", why,
		    tk_status__name(caps->caps[TK_CAP_PERF_CPU_CLOCK].status));
	} else {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "%s: both backends sample cpu-clock", why);
	}

	b = &caps->backends[TK_COLLECT_ALLOC];
	why = first_failure(caps, alloc_bpf, 3);
	if (!why && caps->pid && caps->proc.allocator == TK_ALLOC_UNKNOWN) {
		b->backend = TK_BACKEND_NONE;
		put(b->reason, sizeof(b->reason), "the target's allocator is unknown: no "
			"functions to attach uprobes to");
	} else if (!why) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "uprobes on the allocator%s, outstanding "
			"allocations tracked in BPF maps",
		    caps->pid ? "" : " (an in-process sampler for commands tracekit starts)");
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

	b = &caps->backends[TK_COLLECT_NUMA];
	why = first_failure(caps, numa_bpf, 3);
	if (!why && (ok(caps, TK_CAP_PROG_TP_BTF) || ok(caps, TK_CAP_PROG_RAW_TP))) {
		b->backend = TK_BACKEND_BPF;
		put(b->reason, sizeof(b->reason), "migrate:mm_migrate_pages and sched:*_numa "
			"through %s%s", ok(caps, TK_CAP_PROG_TP_BTF) ? "tp_btf" : "raw_tp",
		    ok(caps, TK_CAP_PROG_FENTRY) && ok(caps, TK_CAP_FN_MIGRATE_MISPLACED)
			    ? ", fentry on the misplaced-page path"
			    : "; fentry unavailable, so no per-page misplacement detail");
	} else {
		if (!why)
			why = "neither tp_btf nor raw_tp programs work";
		if (tk_read_file(s->proc, "vmstat", vm, sizeof(vm)) > 0) {
			b->backend = TK_BACKEND_VMSTAT;
			put(b->reason, sizeof(b->reason), "%s: /proc/vmstat and per-node numastat "
				"deltas, without per-process detail", why);
		} else {
			b->backend = TK_BACKEND_NONE;
			put(b->reason, sizeof(b->reason), "%s, and /proc/vmstat is unreadable", why);
		}
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

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

int tk_caps__snapshot(const struct tk_caps_opts *opts, struct tk_caps *caps)
{
	libbpf_print_fn_t old_print;
	struct snap s = {};
	struct timespec t0, t1;
	char rel[64];
	int err = 0;

	if (!opts || opts->sz < sizeof(size_t) || !caps || opts->pid < 0)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(caps, 0, sizeof(*caps));
	s.proc = opts->proc_root ? opts->proc_root : "/proc";
	s.sys = opts->sys_root ? opts->sys_root : "/sys";
	s.probe = opts->probe ? opts->probe : tk_probe_kernel;
	caps->pid = opts->pid;

	if (caps->pid) {
		snprintf(rel, sizeof(rel), "%d", caps->pid);
		if (!tk_path_exists(s.proc, rel))
			return -ESRCH;
	}
	snap_kernel(&s, caps, opts->release);

	if (!tk_path_join(s.btf_path, sizeof(s.btf_path), s.sys, "kernel/btf/vmlinux"))
		s.has_btf = tk_path_exists(s.sys, "kernel/btf/vmlinux");
	if (s.has_btf)
		s.btf = btf__parse(s.btf_path, NULL);	/* NULL: a fixture's empty file */
	if (tk_path_exists(s.sys, "kernel/tracing/events")) {
		s.tracefs = true;
		put(s.tracefs_dir, sizeof(s.tracefs_dir), "kernel/tracing");
	} else if (tk_path_exists(s.sys, "kernel/debug/tracing/events")) {
		s.tracefs = true;
		put(s.tracefs_dir, sizeof(s.tracefs_dir), "kernel/debug/tracing");
	} else {
		put(s.tracefs_dir, sizeof(s.tracefs_dir), "kernel/tracing");
	}

	old_print = libbpf_set_print(opts->libbpf_log ? (libbpf_print_fn_t)opts->libbpf_log
						      : silent_print);
	snap_privileges(&s, caps);
	snap_bpf(&s, caps);
	snap_perf(&s, caps);
	snap_tracepoints(&s, caps);
	snap_memory(&s, caps);
	snap_numa(&s, caps);
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
		err = 0;
	}
	choose_backends(&s, caps);
out:
	libbpf_set_print(old_print);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	caps->elapsed_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	btf__free(s.btf);
	free(s.kallsyms);
	return err;
}
