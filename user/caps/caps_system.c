// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Capability entries about what this system and the target process have: the
 * tracepoints and kernel functions the collectors use, memory and cgroup
 * accounting, NUMA, and the target's allocator, build-id, frame pointers and
 * how many of its executable objects have CFI.
 */
#include <ctype.h>
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

/*
 * A tracepoint's symbols in kallsyms, the one found into @sym: its struct
 * (__tracepoint_NAME, data: listed only with CONFIG_KALLSYMS_ALL), or the
 * function that calls its probes (__traceiter_NAME, text, since 5.10: listed on
 * every kernel). Not __bpf_trace_NAME: that one is named after the event's
 * class, which events of a class share (sched_swap_numa's is
 * sched_numa_pair_template).
 */
static bool kallsyms_tracepoint(struct snap *s, const char *name, char *sym, size_t size)
{
	snprintf(sym, size, "__tracepoint_%s", name);
	if (kallsyms_has(s, sym, "dDbBrR"))
		return true;
	snprintf(sym, size, "__traceiter_%s", name);
	return kallsyms_has(s, sym, "tT");
}

/* Not found: say where it was looked for, and where it could not be. */
static void tracepoint_absent(struct snap *s, struct tk_caps *caps, enum tk_cap_id id,
			      const char *cat, const char *name)
{
	const char *looked[3], *not_looked[3];
	int nl = 0, nn = 0;
	char in[64], out[160];
	struct tk_cap *c;

	if (s->tracefs)
		looked[nl++] = "tracefs";
	else
		not_looked[nn++] = "tracefs is not mounted";
	if (s->btf)
		looked[nl++] = "BTF";
	else
		not_looked[nn++] = "there is no kernel BTF";
	if (s->kallsyms)
		looked[nl++] = "kallsyms";
	else
		not_looked[nn++] = "kallsyms is unreadable";
	snprintf(in, sizeof(in), "%s%s%s%s%s", nl > 0 ? looked[0] : "",
		 nl == 3 ? ", " : nl == 2 ? " or " : "", nl > 1 ? looked[1] : "",
		 nl == 3 ? " or " : "", nl > 2 ? looked[2] : "");
	snprintf(out, sizeof(out), "%s%s%s%s%s", nn > 0 ? not_looked[0] : "",
		 nn == 3 ? ", " : nn == 2 ? " and " : "", nn > 1 ? not_looked[1] : "",
		 nn == 3 ? " and " : "", nn > 2 ? not_looked[2] : "");
	if (!nl) {
		/* nowhere to look: not known absent */
		c = set(caps, id, TK_UNSUPPORTED);
		VALUE(c, "unknown");
		REASON(c, "cannot tell whether %s:%s is in this kernel: %s", cat, name, out);
		return;
	}
	c = set(caps, id, TK_UNSUPPORTED);
	VALUE(c, "absent");
	REASON(c, "%s:%s is not in this kernel (not in %s%s%s)", cat, name, in, nn ? "; " : "",
	       out);
}

void snap_tracepoints(struct snap *s, struct tk_caps *caps)
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
		c->not_needed = true;
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
		else if (kallsyms_tracepoint(s, tps[i].name, sym, sizeof(sym)))
			via = "kallsyms";
		if (via) {
			c = set(caps, tps[i].id, TK_SUPPORTED);
			VALUE(c, "present");
			if (strcmp(via, "kallsyms"))
				REASON(c, "found in %s", via);
			else
				REASON(c, "found in kallsyms (%s)", sym);
		} else {
			tracepoint_absent(s, caps, tps[i].id, tps[i].cat, tps[i].name);
		}
	}
	/* arm64 has no page_fault_user: growth counts faults by the software event page-faults */
	c = &caps->caps[TK_CAP_TP_PAGE_FAULT_USER];
	if (c->status != TK_SUPPORTED && ok(caps, TK_CAP_PROG_PERF_EVENT)) {
		REMEDY(c, "none needed: alloc --mode growth counts page faults with the software "
			  "perf event page-faults (one per CPU, a perf_event program) instead");
		c->not_needed = true;
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
			  "%s (inlined or renamed)%s", s->btf ? "kallsyms or BTF" : "kallsyms",
		       s->btf ? "" : "; there is no kernel BTF to look in");
		REMEDY(c, "none needed: migrate:mm_migrate_pages still reports NUMA migrations");
		c->not_needed = true;
	}
}

/* ---- memory, NUMA ----------------------------------------------------------------- */

static uint64_t kb_field(const char *text, const char *name)
{
	char v[64];

	return tk_status_field(text, name, v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

void snap_memory(struct snap *s, struct tk_caps *caps)
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

		if (tk_status_field(buf, "Pid", v, sizeof(v)))
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

void snap_numa(struct snap *s, struct tk_caps *caps)
{
	struct tk_numa_topology *n = &caps->numa;
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
		c->not_needed = n->nr_nodes == 1;
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

/* How many of the process's listed objects have CFI (their own, or a debug file's). */
static unsigned int objects_with_cfi(const struct tk_proc_info *p)
{
	unsigned int i, n = 0;

	for (i = 0; i < p->nr_objects && i < TK_PROC_MAX_OBJECTS; i++)
		n += p->objects[i].cfi >= TK_CFI_EH_FRAME;
	return n;
}

void snap_process(struct snap *s, struct tk_caps *caps)
{
	const struct tk_proc_info *p = &caps->proc;
	char env_prefix[sizeof(p->alloc_prefix)];
	struct tk_cap *c;
	size_t i;

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
			/* jemalloc reads its prefix, upper-cased, before MALLOC_CONF */
			for (i = 0; p->alloc_prefix[i] && i < sizeof(env_prefix) - 1; i++)
				env_prefix[i] = toupper((unsigned char)p->alloc_prefix[i]);
			env_prefix[i] = '\0';
			REMEDY(c, "start it with %sMALLOC_CONF=prof:true", env_prefix);
		}
	}

	if (!p->exe[0]) {
		/* a kernel thread, or a process whose binary cannot be named */
		c = set(caps, TK_CAP_PROC_BUILD_ID, TK_UNSUPPORTED);
		VALUE(c, "no binary");
		REASON(c, "no user-space binary (/proc/%d/exe does not resolve: a kernel "
			  "thread, or an exiting process)", p->pid);
	} else if (p->has_build_id) {
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
		if (p->exe[0])
			REMEDY(c, "build with -fno-omit-frame-pointer for whole stacks");
	}
	REASON(c, "%s", p->fp_evidence);
	if (p->nr_objects) {
		size_t n = strlen(c->reason);

		put(c->reason + n, sizeof(c->reason) - n, "%sCFI in %u of %u executable object%s",
		    n ? "; " : "", objects_with_cfi(p), p->nr_objects,
		    p->nr_objects == 1 ? "" : "s");
	}
}

/* The process exists but cannot be inspected: say so in each of its entries. */
void snap_process_unreadable(struct snap *s, struct tk_caps *caps, int err)
{
	static const enum tk_cap_id ids[] = { TK_CAP_PROC_ALLOCATOR, TK_CAP_PROC_BUILD_ID,
					      TK_CAP_PROC_FRAME_POINTERS };
	char rel[64];
	size_t i;

	caps->proc.pid = caps->pid;
	/* what a read that failed half-way found is not to be shown */
	caps->proc.nr_objects = caps->proc.objects_omitted = caps->proc.anon_exec = 0;
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
