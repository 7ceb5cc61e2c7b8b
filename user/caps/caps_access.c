// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Capability entries about what this process may do: its privileges and the
 * sysctls that limit them, eBPF (probed), perf events (probed).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "caps/caps_int.h"
#include "core/fsutil.h"
#include "core/internal.h"

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

void snap_privileges(struct snap *s, struct tk_caps *caps)
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
		if (tk_status_field(status, "CapEff", field, sizeof(field)))
			s->capeff = strtoull(field, NULL, 16);
		if (tk_status_field(status, "Seccomp", field, sizeof(field)))
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
	ctx->btf = s->kernel_btf ? s->btf : NULL;
	ctx->tracefs_dir = s->tracefs ? s->tracefs_dir : NULL;
	ctx->caps = s->caps;
	return s->probe(which, ctx);
}

/* Status and reason for a refused probe; @what names what was refused. */
static void refused(struct snap *s, struct tk_cap *c, int err, const char *msg, bool bpf)
{
	bool priv = bpf ? bpf_privileged(s) && perf_privileged(s) : perf_privileged(s);

	if ((err == -EPERM || err == -EACCES) && !priv) {
		/* missing privileges first: a seccomp filter may be there too, harmlessly */
		c->status = TK_DISABLED;
		REASON(c, "%s: this process lacks %s", msg,
		       bpf ? "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"
			   : "CAP_PERFMON (or CAP_SYS_ADMIN)");
		REMEDY(c, "run tracekit as root");
	} else if (err == -EPERM && s->seccomp == 2) {
		/* privileged, yet EPERM: what docker's and podman's profiles answer */
		c->status = TK_UNSUPPORTED;
		REASON(c, "%s; this process runs under a seccomp filter (Seccomp: 2), as "
			  "container runtimes install, which blocks it", msg);
		REMEDY(c, "allow %s in the seccomp profile (docker/podman: --security-opt "
			  "seccomp=unconfined or --privileged)", bpf ? "bpf(2)" : "perf_event_open");
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

/*
 * Each collector's own objects, loaded as its backend would load them on
 * this kernel (and closed): what `tracekit caps` says cpu, alloc and numa
 * will use is then what they do, not an inference from the parts.
 */
static void snap_loads(struct snap *s, struct tk_caps *caps)
{
	static const struct {
		enum tk_cap_id id;
		enum tk_probe probe;
		enum tk_cap_id needs;
	} loads[] = {
		{ TK_CAP_LOAD_CPU, TK_PROBE_LOAD_CPU, TK_CAP_PROG_PERF_EVENT },
		{ TK_CAP_LOAD_ALLOC, TK_PROBE_LOAD_ALLOC, TK_CAP_PROG_UPROBE },
		{ TK_CAP_LOAD_NUMA, TK_PROBE_LOAD_NUMA, TK_CAP_PROG_RAW_TP },
		{ TK_CAP_LOAD_STACKS, TK_PROBE_LOAD_STACKS, TK_CAP_CORE },	/* kernel BTF */
	};
	struct tk_probe_ctx ctx;
	struct tk_cap *c;
	size_t i;

	for (i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
		if (!ok(caps, loads[i].needs)) {
			c = set(caps, loads[i].id, caps->caps[loads[i].needs].status);
			VALUE(c, "no");
			REASON(c, "needs %s", tk_cap__id_name(loads[i].needs));
			because(c, loads[i].needs);
			continue;
		}
		snap_probe_entry(s, caps, loads[i].id, loads[i].probe, true, &ctx);
	}
	/* stacks reads /proc without it: a loss of off-CPU times, not of the collector */
	c = &caps->caps[TK_CAP_LOAD_STACKS];
	if (c->status != TK_SUPPORTED) {
		REMEDY(c, "none needed: tracekit stacks reads each thread's /proc files instead "
			  "(no off-CPU times)");
		c->not_needed = true;
	}
}

/*
 * Without BTF (or with only a vmlinux on disk, not the kernel's own), the entries
 * that need it fail for that one reason, which bpf.btf gives: they say so and
 * are listed with it.
 */
static void btf_missing(struct snap *s, struct tk_caps *caps)
{
	static const enum tk_cap_id attach[] = { TK_CAP_PROG_TP_BTF, TK_CAP_PROG_FENTRY };
	struct tk_cap *c;
	size_t i;

	if (!s->has_btf) {
		c = set(caps, TK_CAP_CORE, TK_UNSUPPORTED);
		VALUE(c, "no");
		REASON(c, "BTF missing: no kernel BTF to relocate against (see bpf.btf)");
		because(c, TK_CAP_BTF);
	}
	if (s->kernel_btf)
		return;
	for (i = 0; i < sizeof(attach) / sizeof(attach[0]); i++) {
		c = set(caps, attach[i], TK_UNSUPPORTED);
		VALUE(c, "no");
		if (s->has_btf)
			REASON(c, "BTF missing: needs the kernel's own BTF, whose type ids it "
				  "attaches by; %s serves CO-RE only (see bpf.btf)", s->btf_path);
		else
			REASON(c, "BTF missing: needs kernel BTF, whose type ids it attaches by "
				  "(see bpf.btf)");
		because(c, TK_CAP_BTF);
	}
}

void snap_bpf(struct snap *s, struct tk_caps *caps)
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

	snap_probe_entry(s, caps, TK_CAP_BPF_SYSCALL, TK_PROBE_BPF_SYSCALL, true, &ctx);
	if (!ok(caps, TK_CAP_BPF_SYSCALL)) {
		static const enum tk_cap_id rest[] = {
			TK_CAP_RINGBUF,		TK_CAP_CORE,	      TK_CAP_PROG_PERF_EVENT,
			TK_CAP_PROG_TRACEPOINT, TK_CAP_PROG_RAW_TP,   TK_CAP_PROG_TP_BTF,
			TK_CAP_PROG_FENTRY,	TK_CAP_PROG_UPROBE,   TK_CAP_PROG_KPROBE,
			TK_CAP_BPF_UNWIND,
		};

		for (i = 0; i < sizeof(rest) / sizeof(rest[0]); i++) {
			c = set(caps, rest[i], caps->caps[TK_CAP_BPF_SYSCALL].status);
			VALUE(c, "no");
			REASON(c, "bpf(2) is not available (see bpf.syscall)");
			because(c, TK_CAP_BPF_SYSCALL);
		}
		return;
	}

	/* known without a probe, in either scope: what cannot work without BTF */
	btf_missing(s, caps);
	if (s->cpu_only) {
		/* no bpf.load.cpu: the session that asked loads the sampler next anyway */
		snap_probe_entry(s, caps, TK_CAP_PROG_PERF_EVENT, TK_PROBE_PROG_PERF_EVENT, true,
				 &ctx);
		return;
	}
	/* a kernel without ring buffers rejects the map type as invalid */
	if (snap_probe_entry(s, caps, TK_CAP_RINGBUF, TK_PROBE_RINGBUF, true, &ctx) == -EINVAL)
		REMEDY(&caps->caps[TK_CAP_RINGBUF], "BPF ring buffers need Linux 5.8 or later");
	if (s->alloc_only) {
		/* no bpf.load.alloc: the session that asked loads its object next anyway */
		snap_probe_entry(s, caps, TK_CAP_PROG_UPROBE, TK_PROBE_PROG_UPROBE, true, &ctx);
		if (!ok(caps, TK_CAP_PROG_UPROBE))
			kconfig_note(s, &caps->caps[TK_CAP_PROG_UPROBE], "CONFIG_UPROBE_EVENTS");
		return;
	}

	if (s->has_btf) {
		snap_probe_entry(s, caps, TK_CAP_CORE, TK_PROBE_CORE, true, &ctx);
		caps->core = ctx.core;
	}

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (!s->kernel_btf &&
		    (progs[i].id == TK_CAP_PROG_TP_BTF || progs[i].id == TK_CAP_PROG_FENTRY))
			continue;	/* btf_missing() said why */
		snap_probe_entry(s, caps, progs[i].id, progs[i].probe, true, &ctx);
	}
	if (ok(caps, TK_CAP_PROG_PERF_EVENT)) {
		if (snap_probe_entry(s, caps, TK_CAP_BPF_UNWIND, TK_PROBE_UNWIND, true, &ctx))
			REMEDY(&caps->caps[TK_CAP_BPF_UNWIND],
			       "none needed to profile: user stacks then go by frame pointer in "
			       "the kernel; --backend perf walks them with CFI in user space");
	} else {
		c = set(caps, TK_CAP_BPF_UNWIND, TK_UNSUPPORTED);
		VALUE(c, "no");
		REASON(c, "needs perf_event programs (see bpf.prog.perf_event)");
	}
	if (!ok(caps, TK_CAP_PROG_KPROBE))
		kconfig_note(s, &caps->caps[TK_CAP_PROG_KPROBE], "CONFIG_KPROBES");
	if (!ok(caps, TK_CAP_PROG_UPROBE))
		kconfig_note(s, &caps->caps[TK_CAP_PROG_UPROBE], "CONFIG_UPROBE_EVENTS");
	if (!ok(caps, TK_CAP_PROG_FENTRY) && !caps->caps[TK_CAP_PROG_FENTRY].remedy[0] &&
	    !caps->caps[TK_CAP_PROG_FENTRY].has_cause)
		REMEDY(&caps->caps[TK_CAP_PROG_FENTRY],
		       "none on this host (its security policy decides); tracekit uses "
		       "tracepoints (raw_tp/tp_btf) instead, and the NUMA collector loses only "
		       "per-page misplacement detail");
	if (!ok(caps, TK_CAP_PROG_KPROBE) && !caps->caps[TK_CAP_PROG_KPROBE].remedy[0]) {
		REMEDY(&caps->caps[TK_CAP_PROG_KPROBE],
		       "none needed: tracekit uses tracepoints and fentry instead");
		caps->caps[TK_CAP_PROG_KPROBE].not_needed = true;
	}

	/* what differs between 5.10 and 7.x, and how the collectors take it (core/kfeat.h) */
	if (snap_probe_entry(s, caps, TK_CAP_MAP_RUNTIME_ALLOC, TK_PROBE_MAP_RUNTIME_ALLOC, true,
			     &ctx)) {
		c = &caps->caps[TK_CAP_MAP_RUNTIME_ALLOC];
		REMEDY(c, "none needed: tracekit preallocates its hash maps here, smaller "
			  "(what does not fit is counted as lost)");
		c->not_needed = true;
	}
	if (snap_probe_entry(s, caps, TK_CAP_ATTACH_COOKIE, TK_PROBE_ATTACH_COOKIE, true, &ctx)) {
		c = &caps->caps[TK_CAP_ATTACH_COOKIE];
		REMEDY(c, "none needed: the alloc collector uses a program per hooked function");
		c->not_needed = true;
	}
	if (snap_probe_entry(s, caps, TK_CAP_UPROBE_SESSION, TK_PROBE_UPROBE_SESSION, true,
			     &ctx)) {
		c = &caps->caps[TK_CAP_UPROBE_SESSION];
		REMEDY(c, "none needed: sampled allocation tracing then takes a uretprobe per "
			  "call (Linux 6.13+ makes it one trap per call)");
		c->not_needed = true;
	}
	snap_loads(s, caps);
}

void snap_perf(struct snap *s, struct tk_caps *caps)
{
	struct tk_probe_ctx ctx;
	struct tk_cap *c;
	int err;

	snap_probe_entry(s, caps, TK_CAP_PERF_CPU_CLOCK, TK_PROBE_PERF_CPU_CLOCK, false, &ctx);
	c = &caps->caps[TK_CAP_PERF_CPU_CLOCK];
	if (c->status == TK_SUPPORTED && ctx.own_only) {
		VALUE(c, ctx.user_only ? "own processes, user space" : "own processes");
		REASON(c, "%s; perf_event_paranoid allows this process only its own processes%s",
		       ctx.msg, ctx.user_only ? " and no kernel frames" : "");
		REMEDY(c, "run tracekit as root for the whole system and kernel stacks");
	} else if (c->status == TK_DISABLED) {
		REMEDY(c, "run tracekit as root, or: sysctl kernel.perf_event_paranoid=1");
	}
	if (s->cpu_only || s->alloc_only)
		return;

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
		c->not_needed = true;
	}
}
