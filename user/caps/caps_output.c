// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writers of the capability snapshot: one JSON object (docs/caps-json.md) and a
 * plain text report within 80 columns that leads with what matters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/outfile.h"
#include "caps/caps.h"

#define TEXT_WIDTH 80
#define OBJ_COL 34	/* where an object's path starts */

/* ---- JSON -------------------------------------------------------------------- */

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static void json_tristate(struct tk_json *j, const char *key, tk_tristate v)
{
	if (v < 0)
		tk_json__null(j, key);
	else
		tk_json__bool(j, key, v);
}

static void json_memory(struct tk_json *j, const struct tk_memory *m)
{
	tk_json__begin_object(j, "memory");
	tk_json__begin_object(j, "system");
	tk_json__uint(j, "total_kb", m->mem_total_kb);
	tk_json__uint(j, "available_kb", m->mem_available_kb);
	tk_json__uint(j, "swap_total_kb", m->swap_total_kb);
	tk_json__uint(j, "swap_free_kb", m->swap_free_kb);
	tk_json__end_object(j);
	tk_json__begin_object(j, "process");
	tk_json__int(j, "pid", m->rss_pid);
	tk_json__uint(j, "rss_kb", m->rss_kb);
	tk_json__uint(j, "rss_peak_kb", m->hwm_kb);
	tk_json__end_object(j);
	tk_json__begin_object(j, "cgroup");
	tk_json__string(j, "version", m->cgroup == TK_CGROUP_V2   ? "v2"
				      : m->cgroup == TK_CGROUP_V1 ? "v1"
								  : NULL);
	tk_json__string(j, "path", nonempty(m->cgroup_path));
	tk_json__string(j, "dir", m->cgroup ? nonempty(m->cgroup_dir) : NULL);
	tk_json__begin_array(j, "files");
	if (m->cgroup) {
		char files[sizeof(m->cgroup_files)], *tok, *save = NULL;

		snprintf(files, sizeof(files), "%s", m->cgroup_files);
		for (tok = strtok_r(files, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			tk_json__string(j, NULL, tok);
	}
	tk_json__end_array(j);
	if (m->cgroup && m->has_current)
		tk_json__uint(j, "current_bytes", m->current_bytes);
	else
		tk_json__null(j, "current_bytes");
	if (m->cgroup && m->has_limit && !m->limit_unlimited)
		tk_json__uint(j, "limit_bytes", m->limit_bytes);
	else
		tk_json__null(j, "limit_bytes");
	tk_json__bool(j, "unlimited", m->cgroup && m->has_limit && m->limit_unlimited);
	if (m->cgroup && m->has_peak)
		tk_json__uint(j, "peak_bytes", m->peak_bytes);
	else
		tk_json__null(j, "peak_bytes");
	tk_json__end_object(j);
	tk_json__end_object(j);
}

static const char *balancing_mode(long v)
{
	switch (v) {
	case -1:
		return NULL;
	case 0:
		return "off";
	case 1:
		return "normal";
	case 2:
		return "memory_tiering";
	case 3:
		return "normal_and_memory_tiering";
	}
	return "unknown";
}

static void json_numa(struct tk_json *j, const struct tk_numa_topology *n)
{
	int i;

	tk_json__begin_object(j, "numa");
	tk_json__begin_array(j, "nodes");
	for (i = 0; i < n->nr_nodes; i++) {
		tk_json__begin_object(j, NULL);
		tk_json__int(j, "id", n->nodes[i].id);
		tk_json__string(j, "cpus", n->nodes[i].cpus);
		tk_json__uint(j, "mem_total_kb", n->nodes[i].mem_total_kb);
		tk_json__uint(j, "mem_free_kb", n->nodes[i].mem_free_kb);
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
	if (n->balancing < 0)
		tk_json__null(j, "balancing");
	else
		tk_json__int(j, "balancing", n->balancing);
	tk_json__string(j, "balancing_mode", balancing_mode(n->balancing));
	tk_json__end_object(j);
}

static void json_hex(struct tk_json *j, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	tk_json__string(j, key, buf);
}

static void json_object(struct tk_json *j, const struct tk_proc_object *o)
{
	tk_json__begin_object(j, NULL);
	tk_json__string(j, "path", o->path);
	json_hex(j, "start", o->start);
	json_hex(j, "end", o->end);
	tk_json__bool(j, "main", o->is_main);
	tk_json__bool(j, "deleted", o->deleted);
	tk_json__string(j, "unwind", tk_proc_object__unwind(o));
	tk_json__string(j, "cfi", o->cfi == TK_CFI_UNKNOWN ? NULL : tk_cfi_source__name(o->cfi));
	if (o->eh_frame_fdes >= 0)
		tk_json__int(j, "eh_frame_fdes", o->eh_frame_fdes);
	else
		tk_json__null(j, "eh_frame_fdes");
	tk_json__string(j, "debug_file", nonempty(o->debug_file));
	json_tristate(j, "frame_pointers", o->frame_pointers);
	tk_json__uint(j, "fp_checked", o->fp_checked);
	tk_json__uint(j, "fp_with_frame", o->fp_with_frame);
	tk_json__string(j, "fp_evidence", nonempty(o->fp_evidence));
	tk_json__string(j, "error", o->err ? strerror(-o->err) : NULL);
	tk_json__end_object(j);
}

static void json_process(struct tk_json *j, const struct tk_caps *caps)
{
	const struct tk_proc_info *p = &caps->proc;
	unsigned int i;

	if (!caps->pid) {
		tk_json__null(j, "process");
		return;
	}
	tk_json__begin_object(j, "process");
	tk_json__int(j, "pid", p->pid);
	tk_json__string(j, "comm", p->comm);
	tk_json__string(j, "exe", nonempty(p->exe));
	tk_json__begin_object(j, "allocator");
	tk_json__string(j, "name", tk_allocator__name(p->allocator));
	tk_json__string(j, "object", nonempty(p->alloc_object));
	tk_json__bool(j, "static", p->alloc_static);
	tk_json__string(j, "prefix", p->alloc_prefix);
	tk_json__string(j, "evidence", nonempty(p->alloc_evidence));
	tk_json__end_object(j);
	if (p->allocator == TK_ALLOC_JEMALLOC) {
		tk_json__begin_object(j, "jemalloc_prof");
		json_tristate(j, "built", p->jemalloc_prof_built);
		tk_json__string(j, "built_evidence", nonempty(p->jemalloc_prof_built_evidence));
		json_tristate(j, "active", p->jemalloc_prof_active);
		tk_json__string(j, "active_evidence", nonempty(p->jemalloc_prof_active_evidence));
		tk_json__end_object(j);
	} else {
		tk_json__null(j, "jemalloc_prof");
	}
	tk_json__string(j, "build_id", p->has_build_id ? p->build_id : NULL);
	tk_json__begin_object(j, "frame_pointers");
	json_tristate(j, "likely", p->frame_pointers);
	tk_json__uint(j, "checked", p->fp_checked);
	tk_json__uint(j, "with_frame", p->fp_with_frame);
	tk_json__string(j, "evidence", nonempty(p->fp_evidence));
	tk_json__end_object(j);
	tk_json__begin_array(j, "objects");
	for (i = 0; i < p->nr_objects && i < TK_PROC_MAX_OBJECTS; i++)
		json_object(j, &p->objects[i]);
	tk_json__end_array(j);
	tk_json__uint(j, "objects_omitted", p->objects_omitted);
	tk_json__uint(j, "anon_exec_mappings", p->anon_exec);
	tk_json__end_object(j);
}

int tk_caps__write_json(const struct tk_caps *caps, FILE *f)
{
	int counts[3] = {}, i;
	struct tk_json j;

	for (i = 0; i < TK_CAP__COUNT; i++)
		if (caps->caps[i].present)
			counts[caps->caps[i].status]++;

	tk_json__init(&j, f, true);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "schema", "tracekit.caps/1");
	tk_json__string(&j, "tracekit_version", TRACEKIT_VERSION);
	tk_json__begin_object(&j, "kernel");
	tk_json__string(&j, "release", caps->kernel_release);
	tk_json__string(&j, "machine", caps->machine);
	tk_json__end_object(&j);
	if (caps->pid)
		tk_json__int(&j, "pid", caps->pid);
	else
		tk_json__null(&j, "pid");
	tk_json__double(&j, "elapsed_ms", caps->elapsed_ms);
	tk_json__begin_object(&j, "summary");
	for (i = 0; i < 3; i++)
		tk_json__int(&j, tk_status__name(i), counts[i]);
	tk_json__end_object(&j);

	tk_json__begin_object(&j, "backends");
	for (i = 0; i < TK_COLLECT__COUNT; i++) {
		tk_json__begin_object(&j, tk_collector__name(i));
		tk_json__string(&j, "backend", tk_backend__name(caps->backends[i].backend));
		tk_json__string(&j, "reason", caps->backends[i].reason);
		tk_json__end_object(&j);
	}
	tk_json__end_object(&j);

	tk_json__begin_object(&j, "entries");
	for (i = 0; i < TK_CAP__COUNT; i++) {
		const struct tk_cap *c = &caps->caps[i];

		if (!c->present)
			continue;
		tk_json__begin_object(&j, tk_cap__id_name(i));
		tk_json__string(&j, "title", tk_cap__title(i));
		tk_json__string(&j, "status", tk_status__name(c->status));
		tk_json__string(&j, "value", c->value);
		tk_json__string(&j, "reason", nonempty(c->reason));
		tk_json__string(&j, "remedy", nonempty(c->remedy));
		tk_json__bool(&j, "needed", !c->not_needed);
		tk_json__string(&j, "cause", c->has_cause ? tk_cap__id_name(c->cause) : NULL);
		tk_json__end_object(&j);
	}
	tk_json__end_object(&j);

	json_memory(&j, &caps->memory);
	json_numa(&j, &caps->numa);
	json_process(&j, caps);
	tk_json__end_object(&j);
	return tk_json__finish(&j);
}

/* ---- text --------------------------------------------------------------------- */

/* A process's comm, paths and names reach a root terminal: no control bytes. */
static void put_printable(FILE *f, const char *s, int len)
{
	int i;

	for (i = 0; i < len; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], f);
}

/*
 * Print @text wrapped at TEXT_WIDTH. The caller has already printed @col
 * columns of this line; continuation lines are indented by @indent.
 */
static void wrap(FILE *f, const char *text, int col, int indent)
{
	const char *w = text;
	bool first = true;

	for (;;) {
		int len;

		while (*w == ' ')
			w++;
		len = strcspn(w, " ");
		if (!len)
			break;
		if (!first && col + 1 + len <= TEXT_WIDTH) {
			fputc(' ', f);
			col++;
		} else if (!first || (col + len > TEXT_WIDTH && col > indent)) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		}
		first = false;
		/* a word longer than a line is cut rather than let overflow */
		while (len > TEXT_WIDTH - col) {
			int part = TEXT_WIDTH - col;

			put_printable(f, w, part);
			fprintf(f, "\n%*s", indent, "");
			w += part;
			len -= part;
			col = indent;
		}
		put_printable(f, w, len);
		col += len;
		w += len;
	}
	fputc('\n', f);
}

static void human_kb(char *buf, size_t size, uint64_t kb)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = kb;
	int u = 0;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void text_memory(FILE *f, const struct tk_caps *caps)
{
	const struct tk_memory *m = &caps->memory;
	char a[32], b[32], c[32], line[256];

	fprintf(f, "\nMemory\n");
	human_kb(a, sizeof(a), m->mem_total_kb);
	human_kb(b, sizeof(b), m->mem_available_kb);
	human_kb(c, sizeof(c), m->swap_total_kb);
	fprintf(f, "  system    %s total, %s available, swap %s\n", a, b, c);
	human_kb(a, sizeof(a), m->rss_kb);
	human_kb(b, sizeof(b), m->hwm_kb);
	fprintf(f, "  process   pid %d: %s resident, peak %s\n", m->rss_pid, a, b);
	if (m->cgroup) {
		human_kb(a, sizeof(a), m->current_bytes / 1024);
		if (m->has_limit && !m->limit_unlimited)
			human_kb(b, sizeof(b), m->limit_bytes / 1024);
		else
			snprintf(b, sizeof(b), "no");
		snprintf(line, sizeof(line), "%s %s: %s used, %s limit", m->cgroup == TK_CGROUP_V2 ?
			 "v2" : "v1", m->cgroup_path, a, b);
		fprintf(f, "  cgroup    ");
		wrap(f, line, 12, 12);
	} else {
		fprintf(f, "  cgroup    no memory accounting: no cgroup split\n");
	}
}

static void text_numa(FILE *f, const struct tk_caps *caps)
{
	const struct tk_numa_topology *n = &caps->numa;
	char a[32], b[32];
	int i;

	fprintf(f, "\nNUMA\n");
	if (!n->nr_nodes)
		fprintf(f, "  no NUMA nodes (kernel without CONFIG_NUMA)\n");
	for (i = 0; i < n->nr_nodes; i++) {
		human_kb(a, sizeof(a), n->nodes[i].mem_total_kb);
		human_kb(b, sizeof(b), n->nodes[i].mem_free_kb);
		char line[256];

		snprintf(line, sizeof(line), "cpus %s, %s, %s free",
			 n->nodes[i].cpus[0] ? n->nodes[i].cpus : "none", a, b);
		fprintf(f, "  node %-4d ", n->nodes[i].id);
		/* a cpulist has no spaces: wrap() cuts it at the margin */
		wrap(f, line, 12, 12);
	}
	if (n->balancing >= 0)
		fprintf(f, "  balancing %ld (%s)\n", n->balancing, balancing_mode(n->balancing));
	else
		fprintf(f, "  balancing absent\n");
}

/*
 * The process's executable objects, one a line: how each can be unwound, where
 * its CFI is, the frame pointer heuristic's count, and its path (wrapped).
 */
static void text_objects(FILE *f, const struct tk_proc_info *p)
{
	char fp[32], head[64], line[PATH_MAX + 64];
	unsigned int i;
	int col;

	fprintf(f, "  objects   %u executable; fp: prologues that set up %%rbp, of those checked\n",
		p->nr_objects + p->objects_omitted);
	if (p->nr_objects)
		fprintf(f, "  %-7s %-11s %-11s %s\n", "unwind", "cfi", "fp", "object");
	for (i = 0; i < p->nr_objects && i < TK_PROC_MAX_OBJECTS; i++) {
		const struct tk_proc_object *o = &p->objects[i];
		const char *cfi = o->cfi == TK_CFI_UNKNOWN ? "-" :
				  o->cfi == TK_CFI_DEBUG_FILE ? "debug file" :
								tk_cfi_source__name(o->cfi);

		if (o->err)
			snprintf(fp, sizeof(fp), "-");
		else if (o->fp_checked)
			snprintf(fp, sizeof(fp), "%s %u/%u", o->frame_pointers == 1 ? "yes" :
				 o->frame_pointers == 0 ? "no" : "?", o->fp_with_frame,
				 o->fp_checked);
		else
			snprintf(fp, sizeof(fp), "? no syms");
		snprintf(head, sizeof(head), "  %-7s %-11s %s", tk_proc_object__unwind(o), cfi, fp);
		snprintf(line, sizeof(line), "%s%s%s%s%s", o->path, o->deleted ? " (deleted)" : "",
			 o->err ? " (" : "", o->err ? strerror(-o->err) : "", o->err ? ")" : "");
		/* a path too long for its column goes on a line of its own */
		col = OBJ_COL + strcspn(line, " ") > TEXT_WIDTH ? 4 : OBJ_COL;
		if (col == OBJ_COL)
			fprintf(f, "%-*s", OBJ_COL, head);
		else
			fprintf(f, "%s\n%*s", head, col, "");
		wrap(f, line, col, col);
	}
	if (p->objects_omitted)
		fprintf(f, "  ... and %u more not listed\n", p->objects_omitted);
	if (p->anon_exec)
		fprintf(f, "  anonymous %u executable mapping%s of no file (JIT code?): no CFI\n",
			p->anon_exec, p->anon_exec == 1 ? "" : "s");
}

/*
 * Entry @i fails because another entry fails (no kernel BTF, no bpf(2)) that is
 * listed in the same section: it is named under that one, not listed or counted
 * on its own.
 */
static bool grouped(const struct tk_caps *caps, int i)
{
	const struct tk_cap *c = &caps->caps[i], *cause;

	if (!c->has_cause || (unsigned int)c->cause >= TK_CAP__COUNT || (int)c->cause == i)
		return false;
	cause = &caps->caps[c->cause];
	return cause->present && cause->status != TK_SUPPORTED && !cause->has_cause &&
	       cause->not_needed == c->not_needed;
}

/* The entries not supported, of one section, as listed: each problem once. */
static int count_problems(const struct tk_caps *caps, bool benign)
{
	int i, n = 0;

	for (i = 0; i < TK_CAP__COUNT; i++)
		n += caps->caps[i].present && caps->caps[i].status != TK_SUPPORTED &&
		     caps->caps[i].not_needed == benign && !grouped(caps, i);
	return n;
}

/* Under entry @cause: the entries that fail because of it. */
static void text_consequences(FILE *f, const struct tk_caps *caps, int cause)
{
	char line[512];
	size_t off;
	int i, n = 0;

	off = snprintf(line, sizeof(line), "so also unavailable: ");
	for (i = 0; i < TK_CAP__COUNT && off < sizeof(line); i++) {
		if (!caps->caps[i].present || caps->caps[i].status == TK_SUPPORTED ||
		    (int)caps->caps[i].cause != cause || !grouped(caps, i))
			continue;
		off += snprintf(line + off, sizeof(line) - off, "%s%s", n++ ? ", " : "",
				tk_cap__title(i));
	}
	if (!n)
		return;
	fprintf(f, "%*s", 15, "");
	wrap(f, line, 15, 20);
}

/* The entries that are not supported: those that matter, or (@benign) those that do not. */
static void text_problems(FILE *f, const struct tk_caps *caps, bool benign)
{
	int i, pass;

	for (pass = 0; pass < 2; pass++) {
		enum tk_status want = pass ? TK_UNSUPPORTED : TK_DISABLED;

		for (i = 0; i < TK_CAP__COUNT; i++) {
			const struct tk_cap *c = &caps->caps[i];
			char line[512];

			if (!c->present || c->status != want || c->not_needed != benign ||
			    grouped(caps, i))
				continue;
			snprintf(line, sizeof(line), "%s: %s", tk_cap__title(i), c->value);
			fprintf(f, "  %-13s", tk_status__name(c->status));
			wrap(f, line, 15, 15);
			if (c->reason[0]) {
				fprintf(f, "%*s", 15, "");
				wrap(f, c->reason, 15, 15);
			}
			/* a benign entry's remedy only says that none is needed */
			if (c->remedy[0] && !benign) {
				snprintf(line, sizeof(line), "fix: %s", c->remedy);
				fprintf(f, "%*s", 15, "");
				wrap(f, line, 15, 20);
			}
			text_consequences(f, caps, i);
		}
	}
}

int tk_caps__write_text(const struct tk_caps *caps, FILE *f)
{
	int counts[3] = {}, i, attention, not_needed;
	char head[256];

	for (i = 0; i < TK_CAP__COUNT; i++)
		if (caps->caps[i].present)
			counts[caps->caps[i].status]++;

	snprintf(head, sizeof(head), "tracekit caps: Linux %s %s%s%.0d, %d checks in %.0f ms",
		 caps->kernel_release, caps->machine, caps->pid ? ", pid " : "", caps->pid,
		 counts[0] + counts[1] + counts[2], caps->elapsed_ms);
	wrap(f, head, 0, 2);

	fprintf(f, "\nCollectors (what tracekit cpu/alloc/numa/stacks will use)\n");
	for (i = 0; i < TK_COLLECT__COUNT; i++) {
		fprintf(f, "  %-6s %-9s", tk_collector__name(i),
			tk_backend__name(caps->backends[i].backend));
		wrap(f, caps->backends[i].reason, 18, 18);
	}

	/* each problem once: what fails only because another entry does is named with it */
	attention = count_problems(caps, false);
	not_needed = count_problems(caps, true);
	fprintf(f, "\nNeeds attention (%d)\n", attention);
	if (!attention)
		fprintf(f, "  nothing\n");
	text_problems(f, caps, false);
	if (not_needed) {
		fprintf(f, "\nNot available, and not needed here (%d)\n", not_needed);
		text_problems(f, caps, true);
	}

	fprintf(f, "\nWorks (%d)\n", counts[TK_SUPPORTED]);
	for (i = 0; i < TK_CAP__COUNT; i++) {
		const struct tk_cap *c = &caps->caps[i];

		if (!c->present || c->status != TK_SUPPORTED)
			continue;
		fprintf(f, "  %-32s ", tk_cap__title(i));
		wrap(f, c->value, 35, 35);
		/* how a process fact was found: some are heuristics, and say so */
		if (i >= TK_CAP_PROC_ALLOCATOR && c->reason[0]) {
			fprintf(f, "%*s", 35, "");
			wrap(f, c->reason, 35, 35);
		}
	}

	text_memory(f, caps);
	text_numa(f, caps);
	if (caps->pid) {
		const struct tk_proc_info *p = &caps->proc;

		fprintf(f, "\nProcess %d (%s)\n", p->pid, p->comm);
		fprintf(f, "  exe       ");
		wrap(f, p->exe[0] ? p->exe : "unknown", 12, 12);
		/* none when the process could not be read, or maps no code (a kernel thread) */
		if (p->nr_objects || p->objects_omitted || p->anon_exec)
			text_objects(f, p);
	}
	return ferror(f) ? -EIO : 0;
}

int tk_caps__write_file(const struct tk_caps *caps, const char *path, bool json)
{
	struct tk_outfile out;
	int err;

	if (!caps || !path)
		return -EINVAL;
	err = tk_outfile__open(&out, path);
	if (err)
		return err;
	err = json ? tk_caps__write_json(caps, out.f) : tk_caps__write_text(caps, out.f);
	if (err) {
		tk_outfile__abort(&out);
		return err;
	}
	return tk_outfile__commit(&out);
}
