// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The writers of tracekit stacks: text (threads grouped by identical stacks, the
 * largest group first; with several snapshots the threads that did not move
 * first), JSON (tracekit.stacks/1, docs/stacks-json.md) and pprof (one sample per
 * thread of the last snapshot, through the profile model).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "profile/profile.h"
#include "stacks/stacks_int.h"

/* A comm or name another user chose: printable ASCII only in text. */
static void put_clean(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?', f);
}

static void frame_name(const struct tk_stacks_frame *fr, char *buf, size_t size)
{
	const char *mod = fr->module ? strrchr(fr->module, '/') : NULL;

	mod = mod ? mod + 1 : fr->module;
	if (fr->python && fr->file)
		snprintf(buf, size, "%s (%s:%d)", fr->function, fr->file, fr->line);
	else if (fr->function)
		snprintf(buf, size, "%s", fr->function);
	else if (mod)
		snprintf(buf, size, "%s+%#llx", mod, (unsigned long long)fr->offset);
	else
		snprintf(buf, size, "%#llx", (unsigned long long)fr->addr);
}

/* The grouping key of a thread: state, syscall, every frame's name. */
static char *group_key(const struct tk_stacks_thread *t)
{
	char *buf = NULL, name[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "%c|%lld|%s|%s|", t->state, (long long)t->syscall, t->user_note ?: "",
		t->python_note ?: "");
	for (uint32_t i = 0; i < t->nr_kframes; i++) {
		frame_name(&t->kframes[i], name, sizeof(name));
		fprintf(f, "%s;", name);
	}
	fputc('|', f);
	for (uint32_t i = 0; i < t->nr_uframes; i++) {
		frame_name(&t->uframes[i], name, sizeof(name));
		fprintf(f, "%s;", name);
	}
	if (fclose(f))
		return NULL;
	return buf;
}

struct member {
	const struct tk_stacks_thread *t;
	char *key;
	size_t group_size;
	size_t group_first;		/* index of the group's first member (sorted) */
	bool stuck;
};

static int cmp_key(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->t->pid != y->t->pid ? (x->t->pid < y->t->pid ? -1 : 1) :
						 (x->t->tid < y->t->tid ? -1 : 1));
}

static int cmp_group(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c;

	if (x->stuck != y->stuck)
		return x->stuck ? -1 : 1;
	if (x->group_size != y->group_size)
		return x->group_size > y->group_size ? -1 : 1;
	c = strcmp(x->key, y->key);
	if (c)
		return c;
	return x->t->pid != y->t->pid ? (x->t->pid < y->t->pid ? -1 : 1) :
					(x->t->tid < y->t->tid ? -1 : 1);
}

static void fmt_dur(char *buf, size_t size, int64_t ns)
{
	if (ns >= 60000000000LL)
		snprintf(buf, size, "%.1f min", ns / 6e10);
	else if (ns >= 1000000000LL)
		snprintf(buf, size, "%.2f s", ns / 1e9);
	else
		snprintf(buf, size, "%.1f ms", ns / 1e6);
}

static void write_group(FILE *f, const struct member *m, size_t n, bool repeat)
{
	const struct tk_stacks_thread *t = m[0].t;
	char name[256], dur[32];

	fprintf(f, "%zu thread%s: %s", n, n > 1 ? "s" : "", tk_stacks__state_name(t->state));
	if (t->syscall >= 0) {
		if (t->syscall_name)
			fprintf(f, " in %s()", t->syscall_name);
		else
			fprintf(f, " in syscall %lld", (long long)t->syscall);
	}
	if (t->wchan)
		fprintf(f, ", wchan %s", t->wchan);
	if (repeat)
		fprintf(f, m[0].stuck ? ", did not move" : ", moved");
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		const struct tk_stacks_thread *x = m[i].t;

		fprintf(f, "    pid %u tid %u ", x->pid, x->tid);
		if (x->ns_tid != x->tid)
			fprintf(f, "(%u in its namespace) ", x->ns_tid);
		put_clean(f, x->comm);
		if (x->off_cpu_ns >= 0) {
			fmt_dur(dur, sizeof(dur), x->off_cpu_ns);
			fprintf(f, ", off-CPU %s", dur);
		}
		if (x->torn)
			fputs(", ran while read", f);
		fputc('\n', f);
		if (x->wait) {
			fputs("      waits for ", f);
			put_clean(f, x->wait);
			fputc('\n', f);
		}
	}
	for (uint32_t i = 0; i < t->nr_kframes; i++) {
		frame_name(&t->kframes[i], name, sizeof(name));
		fprintf(f, "      k %s\n", name);
	}
	if (t->user_note)
		fprintf(f, "      (user stack: %s)\n", t->user_note);
	for (uint32_t i = 0; i < t->nr_uframes; i++) {
		const struct tk_stacks_frame *fr = &t->uframes[i];
		const char *mod = fr->module ? strrchr(fr->module, '/') : NULL;

		frame_name(fr, name, sizeof(name));
		fputs(fr->python ? "      py " : "      ", f);
		put_clean(f, name);
		if (fr->function && fr->module) {
			fputs(" (", f);
			put_clean(f, mod ? mod + 1 : fr->module);
			fputc(')', f);
		}
		fputc('\n', f);
	}
	if (t->nr_uframes && !t->user_whole)
		fputs("      (user stack not whole)\n", f);
	if (t->python_note)
		fprintf(f, "      (python frames: %s)\n", t->python_note);
	fputc('\n', f);
}

int tk_stacks_result__write_text(const struct tk_stacks_result *s, FILE *f)
{
	const struct tk_stacks_snapshot *last;
	struct member *m;
	size_t n, stuck = 0, procs = 0;
	bool repeat = s->nr_snapshots > 1;
	int err = 0;

	if (!s->nr_snapshots)
		return -EINVAL;
	last = &s->snapshots[s->nr_snapshots - 1];
	n = last->nr_threads;
	m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		m[i].t = &last->threads[i];
		m[i].key = group_key(m[i].t);
		if (!m[i].key) {
			err = -ENOMEM;
			goto out;
		}
		m[i].stuck = repeat && !m[i].t->moved;
		stuck += m[i].stuck;
		procs += !i || last->threads[i - 1].pid != last->threads[i].pid;
	}
	qsort(m, n, sizeof(*m), cmp_key);
	for (size_t i = 0, g; i < n; i = g) {
		for (g = i + 1; g < n && !strcmp(m[g].key, m[i].key) && m[g].stuck == m[i].stuck; g++)
			;
		for (size_t k = i; k < g; k++)
			m[k].group_size = g - i;
	}
	qsort(m, n, sizeof(*m), cmp_group);
	fprintf(f, "tracekit stacks: %zu thread%s of %zu process%s in %.1f ms\nbackend %s: %s\n",
		n, n == 1 ? "" : "s", procs, procs == 1 ? "" : "es", last->took_ns / 1e6,
		tk_backend__name(s->backend), s->backend_reason ? s->backend_reason : "");
	if (repeat)
		fprintf(f, "%zu snapshots: %zu thread%s did not move (same stack, did not run), "
			"listed first\n", s->nr_snapshots, stuck, stuck == 1 ? "" : "s");
	for (size_t i = 0; i < s->nr_notes; i++)
		fprintf(f, "note: %s\n", s->notes[i]);
	fputc('\n', f);
	for (size_t i = 0, g; i < n; i = g) {
		for (g = i + 1; g < n && m[g].group_size == m[i].group_size &&
				m[g].stuck == m[i].stuck && !strcmp(m[g].key, m[i].key);
		     g++)
			;
		write_group(f, &m[i], g - i, repeat);
	}
	fputs("losses:", f);
	for (size_t i = 0; i < s->nr_losses; i++)
		fprintf(f, " %s=%llu", s->losses[i].name, (unsigned long long)s->losses[i].count);
	fputc('\n', f);
out:
	for (size_t i = 0; i < n; i++)
		free(m[i].key);
	free(m);
	if (!err && (fflush(f) || ferror(f)))
		err = -EIO;
	return err;
}

static void json_frames(struct tk_json *j, const char *key, const struct tk_stacks_frame *fr,
			uint32_t n)
{
	char name[256];

	tk_json__begin_array(j, key);
	for (uint32_t i = 0; i < n; i++) {
		tk_json__begin_object(j, NULL);
		tk_json__uint(j, "address", fr[i].addr);
		frame_name(&fr[i], name, sizeof(name));
		tk_json__string(j, "name", name);
		tk_json__string(j, "function", fr[i].function);
		tk_json__string(j, "module", fr[i].module);
		if (!fr[i].function && fr[i].module)
			tk_json__uint(j, "module_offset", fr[i].offset);
		if (fr[i].python) {
			tk_json__bool(j, "python", true);
			tk_json__string(j, "file", fr[i].file);
			tk_json__int(j, "line", fr[i].line);
			tk_json__int(j, "first_line", fr[i].first_line);
		}
		tk_json__end_object(j);
	}
	tk_json__end_array(j);
}

static void json_thread(struct tk_json *j, const struct tk_stacks_thread *t)
{
	char st[2] = { t->state, 0 };

	tk_json__begin_object(j, NULL);
	tk_json__uint(j, "pid", t->pid);
	tk_json__uint(j, "tid", t->tid);
	tk_json__uint(j, "ns_tid", t->ns_tid);
	tk_json__string(j, "comm", t->comm);
	tk_json__string(j, "state", st);
	tk_json__string(j, "state_name", tk_stacks__state_name(t->state));
	tk_json__bool(j, "on_cpu", t->on_cpu);
	if (t->syscall >= 0) {
		tk_json__int(j, "syscall", t->syscall);
		tk_json__string(j, "syscall_name", t->syscall_name);
		tk_json__begin_array(j, "args");
		for (int i = 0; i < 6; i++)
			tk_json__uint(j, NULL, t->args[i]);
		tk_json__end_array(j);
	} else {
		tk_json__null(j, "syscall");
	}
	tk_json__string(j, "wchan", t->wchan);
	tk_json__string(j, "wait", t->wait);
	if (t->holder_tid)
		tk_json__uint(j, "holder_tid", t->holder_tid);
	else
		tk_json__null(j, "holder_tid");
	if (t->off_cpu_ns >= 0)
		tk_json__int(j, "off_cpu_ns", t->off_cpu_ns);
	else
		tk_json__null(j, "off_cpu_ns");
	tk_json__uint(j, "switches", t->switches);
	tk_json__bool(j, "moved", t->moved);
	tk_json__bool(j, "torn", t->torn);
	tk_json__bool(j, "user_whole", t->user_whole);
	tk_json__uint(j, "unwind_causes", t->unwind_causes);
	tk_json__string(j, "user_note", t->user_note);
	tk_json__string(j, "python_note", t->python_note);
	json_frames(j, "kernel_stack", t->kframes, t->nr_kframes);
	json_frames(j, "user_stack", t->uframes, t->nr_uframes);
	tk_json__end_object(j);
}

int tk_stacks_result__write_json(const struct tk_stacks_result *s, FILE *f)
{
	struct tk_json j;

	tk_json__init(&j, f, true);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "schema", "tracekit.stacks/1");
	tk_json__string(&j, "backend", tk_backend__name(s->backend));
	tk_json__string(&j, "backend_reason", s->backend_reason);
	tk_json__begin_array(&j, "snapshots");
	for (size_t k = 0; k < s->nr_snapshots; k++) {
		const struct tk_stacks_snapshot *sn = &s->snapshots[k];

		tk_json__begin_object(&j, NULL);
		tk_json__int(&j, "time_nanos", sn->time_nanos);
		tk_json__uint(&j, "took_ns", sn->took_ns);
		tk_json__begin_array(&j, "threads");
		for (size_t i = 0; i < sn->nr_threads; i++)
			json_thread(&j, &sn->threads[i]);
		tk_json__end_array(&j);
		tk_json__end_object(&j);
	}
	tk_json__end_array(&j);
	tk_json__begin_object(&j, "losses");
	for (size_t i = 0; i < s->nr_losses; i++)
		tk_json__uint(&j, s->losses[i].name, s->losses[i].count);
	tk_json__end_object(&j);
	tk_json__begin_array(&j, "notes");
	for (size_t i = 0; i < s->nr_notes; i++)
		tk_json__string(&j, NULL, s->notes[i]);
	tk_json__end_array(&j);
	tk_json__end_object(&j);
	return tk_json__finish(&j);
}

static int add_frames(struct tk_profile *p, const struct tk_stacks_frame *fr, uint32_t n,
		      uint64_t *locs, uint32_t *nr)
{
	char name[256];

	for (uint32_t i = 0; i < n; i++) {
		uint64_t fid, lid;

		if (fr[i].python && fr[i].file) {
			/* as the cpu profile: qualified name, file and first line; the line */
			fid = tk_profile__function_at(p, fr[i].function, fr[i].file,
						      fr[i].first_line);
			lid = fid ? tk_profile__location_at(p, 0, 0, fid, fr[i].line) : 0;
			if (!lid)
				return -ENOMEM;
			locs[(*nr)++] = lid;
			continue;
		}
		frame_name(&fr[i], name, sizeof(name));
		fid = tk_profile__function(p, name, fr[i].module);
		lid = fid ? tk_profile__location(p, 0, fr[i].addr, fid, fr[i].kernel) : 0;
		if (!lid)
			return -ENOMEM;
		locs[(*nr)++] = lid;
	}
	return 0;
}

int tk_stacks_result__write_pprof(const struct tk_stacks_result *s, FILE *f)
{
	const struct tk_stacks_snapshot *last;
	struct tk_profile *p;
	uint64_t locs[STK_MAX_KFRAMES + STK_MAX_UFRAMES + STK_MAX_PYFRAMES + 2];
	int err = 0;

	if (!s->nr_snapshots)
		return -EINVAL;
	last = &s->snapshots[s->nr_snapshots - 1];
	p = tk_profile__new_counts(tk_backend__name(s->backend), "threads", "count");
	if (!p)
		return -ENOMEM;
	p->value_types[1].type = "off_cpu";
	p->value_types[1].unit = "nanoseconds";
	p->nr_values = 2;
	p->default_sample_type = "threads";
	p->time_nanos = last->time_nanos;
	tk_profile__add_comment(p, "tracekit stacks: backend %s (%s)",
				tk_backend__name(s->backend), s->backend_reason);
	for (size_t i = 0; i < last->nr_threads && !err; i++) {
		const struct tk_stacks_thread *t = &last->threads[i];
		int64_t v[TK_PROFILE_MAX_VALUES] = { 1, t->off_cpu_ns > 0 ? t->off_cpu_ns : 0 };
		uint32_t nr = 0;

		err = add_frames(p, t->kframes, t->nr_kframes, locs, &nr);
		if (!err)
			err = add_frames(p, t->uframes, t->nr_uframes, locs, &nr);
		if (!err)
			err = tk_profile__add_sample_state(p, locs, nr, v, t->pid, t->tid, t->comm,
							   tk_stacks__state_name(t->state));
	}
	for (size_t i = 0; i < s->nr_losses; i++)
		tk_profile__set_loss(p, s->losses[i].name, s->losses[i].count);
	if (!err)
		err = tk_profile__write_pprof(p, f);
	tk_profile__free(p);
	return err;
}
