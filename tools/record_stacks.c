// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit record's thread stacks: a `tracekit stacks` snapshot of record's
 * scope at the start of the window and another at its end (tk_stacks__begin,
 * tk_stacks__again: the library's comparison says which threads did not move
 * between them). The scope is record's: its -p processes, the command it
 * started, its cgroup; for the whole system, only the threads in
 * uninterruptible sleep or stopped (D, T: the classic of a hung host), as
 * `stacks --state D,T` — every sleeping thread of every daemon would bury them.
 * Written into the bundle: stacks-start.txt/.pb.gz (rendered when taken),
 * stacks-end.txt/.pb.gz, stacks.json (both snapshots), and a section of
 * index.html with the threads that did not move first. A snapshot that cannot
 * be taken is said; the rest of the bundle does not depend on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/json.h"
#include "core/outfile.h"
#include "record.h"
#include "tracekit/tracekit.h"

#define HTML_ROWS 200		/* threads listed per table in index.html */
#define HTML_FRAMES 16		/* frames shown per thread */

/* The command record started: its pid (0 none, or not started). */
static int command_pid(const struct rec *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->c[i].owns_command && r->c[i].s && r->c[i].status == REC_OK)
			return tk_session__command_pid(r->c[i].s);
	return 0;
}

/* @s written by @fn into memory; NULL when it cannot be. */
static char *render(const struct tk_stacks_result *s,
		    int (*fn)(const struct tk_stacks_result *, FILE *), size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int err;

	if (!f)
		return NULL;
	err = fn(s, f);
	if (fclose(f) || err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void say(const struct rec_stacks *k)
{
	if (k->status == REC_OK)
		fprintf(stderr, "tracekit: record: stacks: %s\n", k->plan);
	else
		fprintf(stderr, "tracekit: record: stacks: not recorded: %s\n", k->why);
}

void rec_stacks__start(struct rec *r)
{
	struct rec_stacks *k = &r->stk;
	struct tk_stacks_opts o = { .sz = TK_OPTS_SZ(tk_stacks_opts) };
	const char *reason = NULL, *scope;
	int pids[REC_MAX_PIDS], n = 0, err;
	char why[512] = "";

	if (!k->on) {
		k->status = REC_UNAVAILABLE;
		snprintf(k->why, sizeof(k->why), "not asked for (--no-stacks)");
		return;
	}
	if (env.verbose)
		o.log = cli_log;
	if (r->argv) {
		pids[n] = command_pid(r);
		if (pids[n] > 0)
			n++;
		scope = "the command's threads (not its children's)";
	} else if (r->nr_pids) {
		for (; n < r->nr_pids; n++)
			pids[n] = r->pids[n];
		scope = "every thread of the processes named";
	} else if (r->cgroup) {
		o.cgroup = r->cgroup;
		scope = "every thread in the cgroup";
	} else {
		o.states = TK_STACKS_DISK | TK_STACKS_STOPPED;
		scope = "every process's threads in uninterruptible sleep or stopped (D, T)";
	}
	if (r->argv && !n) {
		k->status = REC_FAILED;
		snprintf(k->why, sizeof(k->why), "the command has no process to read");
		say(k);
		return;
	}
	/* the backend the capability snapshot chose, as for every collector */
	o.backend = tk_caps__backend(r->caps, TK_COLLECT_STACKS, &reason);
	snprintf(k->why_backend, sizeof(k->why_backend), "%s", reason ? reason : "");
	err = tk_stacks__begin(&o, pids, n, &k->res, why, sizeof(why));
	if (err == -EOPNOTSUPP && o.backend == TK_BACKEND_BPF) {
		rec_note(r, "stacks: the bpf backend did not load (%s): /proc used", why);
		o.backend = TK_BACKEND_PROC;
		why[0] = 0;
		err = tk_stacks__begin(&o, pids, n, &k->res, why, sizeof(why));
	}
	if (err) {
		k->status = REC_FAILED;
		snprintf(k->why, sizeof(k->why), "the start snapshot: %s",
			 why[0] ? why : strerror(-err));
		say(k);
		return;
	}
	k->status = REC_OK;
	snprintf(k->backend, sizeof(k->backend), "%s", tk_backend__name(k->res->backend));
	snprintf(k->why_backend, sizeof(k->why_backend), "%s", k->res->backend_reason);
	snprintf(k->plan, sizeof(k->plan), "%s, %s, at the start and the end of the window",
		 k->backend, scope);
	say(k);
	k->start_text = render(k->res, tk_stacks_result__write_text, &k->start_text_len);
	k->start_pb = render(k->res, tk_stacks_result__write_pprof, &k->start_pb_len);
	if (!k->start_text || !k->start_pb)
		rec_note(r, "stacks: the start snapshot could not be rendered: out of memory");
}

void rec_stacks__end(struct rec *r)
{
	struct rec_stacks *k = &r->stk;
	char why[512] = "";
	int err;

	if (k->status != REC_OK)
		return;
	err = tk_stacks__again(k->res, why, sizeof(why));
	if (err) {
		snprintf(k->end_why, sizeof(k->end_why), "%s", why[0] ? why : strerror(-err));
		rec_note(r, "stacks: no end snapshot: %s", k->end_why);
		return;
	}
	k->have_end = true;
	for (size_t i = 0; i < k->res->snapshots[1].nr_threads; i++)
		k->stuck += !k->res->snapshots[1].threads[i].moved;
	/* (the bpf backend sees no thread of a process that has exited, not yet reaped) */
	if (!k->res->snapshots[1].nr_threads && k->res->snapshots[0].nr_threads &&
	    (r->argv || r->nr_pids))
		rec_note(r, "stacks: the end snapshot found no thread: the process%s had exited",
			 r->nr_pids > 1 ? "es" : "");
}

void rec_stacks__free(struct rec *r)
{
	tk_stacks_result__free(r->stk.res);
	free(r->stk.start_text);
	free(r->stk.start_pb);
	r->stk.res = NULL;
	r->stk.start_text = r->stk.start_pb = NULL;
}

/* ---- the bundle's files -------------------------------------------------------------- */

static int put_buf(const char *buf, size_t len, FILE *f)
{
	return fwrite(buf, 1, len, f) == len ? 0 : -EIO;
}

/*
 * One file: a failure of the stacks' own (a writer) is said and the file left out; one
 * of the file system fails the bundle, as any other file's.
 */
static int write_file(struct rec *r, int dir, const char *name, const char *buf, size_t len,
		      int (*fn)(const struct tk_stacks_result *, FILE *))
{
	struct rec_stacks *k = &r->stk;
	struct tk_outfile of;
	int err;

	err = tk_outfile__openat(&of, dir, name, NULL);
	if (err) {
		fprintf(stderr, "tracekit: record: cannot write %s: %s\n", name, strerror(-err));
		return err;
	}
	err = buf ? put_buf(buf, len, of.f) : fn(k->res, of.f);
	if (err) {
		tk_outfile__abort(&of);
		if (err == -ENOSPC || err == -EIO || err == -EDQUOT)
			return err;
		rec_note(r, "stacks: %s could not be written: %s", name, strerror(-err));
		return 0;
	}
	err = tk_outfile__commit(&of);
	if (err) {
		fprintf(stderr, "tracekit: record: cannot write %s: %s\n", name, strerror(-err));
		return err;
	}
	if (k->nr_files < REC_STACKS_FILES)
		snprintf(k->files[k->nr_files++], sizeof(k->files[0]), "%s", name);
	return 0;
}

int rec_stacks__write(struct rec *r, int dir)
{
	struct rec_stacks *k = &r->stk;
	int err = 0;

	if (k->status != REC_OK)
		return 0;
	if (k->start_text)
		err = write_file(r, dir, "stacks-start.txt", k->start_text, k->start_text_len, NULL);
	if (!err && k->start_pb)
		err = write_file(r, dir, "stacks-start.pb.gz", k->start_pb, k->start_pb_len, NULL);
	if (!err && k->have_end)
		err = write_file(r, dir, "stacks-end.txt", NULL, 0, tk_stacks_result__write_text);
	if (!err && k->have_end)
		err = write_file(r, dir, "stacks-end.pb.gz", NULL, 0,
				 tk_stacks_result__write_pprof);
	if (!err)
		err = write_file(r, dir, "stacks.json", NULL, 0, tk_stacks_result__write_json);
	return err;
}

/* ---- summary.txt, manifest.json ------------------------------------------------------ */

static const char *status_name(enum rec_status s)
{
	return s == REC_OK ? "recorded" : s == REC_FAILED ? "failed" : "unavailable";
}

/* "2 snapshots 10.0 s apart: 3 of 14 threads did not move" */
static void outcome(const struct rec_stacks *k, char *buf, size_t size)
{
	const struct tk_stacks_snapshot *sn = k->res->snapshots;

	if (!k->have_end)
		snprintf(buf, size, "the start snapshot only (%zu threads): no end snapshot: %s",
			 sn[0].nr_threads, k->end_why);
	else
		snprintf(buf, size, "2 snapshots %.1f s apart: %zu of %zu threads did not move "
			 "(same stack, did not run)", (sn[1].time_nanos - sn[0].time_nanos) / 1e9,
			 k->stuck, sn[1].nr_threads);
}

void rec_stacks__summary(const struct rec *r, FILE *f)
{
	const struct rec_stacks *k = &r->stk;
	char buf[512];

	fprintf(f, "\n== stacks: %s\n", status_name(k->status));
	if (k->status != REC_OK) {
		fprintf(f, "why: %s\n", k->why);
		return;
	}
	outcome(k, buf, sizeof(buf));
	fprintf(f, "how: %s\n%s\nthe threads: %s\n", k->plan, buf,
		k->have_end ? "stacks-end.txt (those that did not move first)" :
		"stacks-start.txt");
}

void rec_stacks__manifest(const struct rec *r, struct tk_json *j)
{
	const struct rec_stacks *k = &r->stk;
	char buf[512];

	tk_json__begin_object(j, NULL);
	tk_json__string(j, "name", "stacks");
	tk_json__string(j, "collector", tk_collector__name(TK_COLLECT_STACKS));
	tk_json__string(j, "status", status_name(k->status));
	tk_json__string(j, "backend", k->backend[0] ? k->backend : NULL);
	tk_json__string(j, "how", k->plan[0] ? k->plan : NULL);
	tk_json__string(j, "why_backend", k->why_backend[0] ? k->why_backend : NULL);
	tk_json__string(j, "why", k->status != REC_OK ? k->why : NULL);
	if (k->status == REC_OK) {
		outcome(k, buf, sizeof(buf));
		tk_json__string(j, "describe", buf);
		tk_json__uint(j, "snapshots", k->res->nr_snapshots);
		tk_json__string(j, "end_snapshot_failed", k->have_end ? NULL : k->end_why);
		if (k->have_end)
			tk_json__uint(j, "did_not_move", k->stuck);
	}
	tk_json__begin_array(j, "files");
	for (int i = 0; i < k->nr_files; i++)
		tk_json__string(j, NULL, k->files[i]);
	tk_json__end_array(j);
	tk_json__begin_object(j, "losses");
	for (size_t i = 0; k->res && i < k->res->nr_losses; i++)
		tk_json__uint(j, k->res->losses[i].name, k->res->losses[i].count);
	tk_json__end_object(j);
	tk_json__end_object(j);
}

/* ---- index.html ---------------------------------------------------------------------- */

/* A name another user chose (a thread's, a function's): escaped, control bytes as '?'. */
static void put_name(FILE *f, const char *s)
{
	char c[2] = { 0 };

	for (; s && *s; s++) {
		c[0] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
		rec_put_html(f, c);
	}
}

static void put_frames(FILE *f, const struct tk_stacks_frame *fr, uint32_t n, uint32_t *shown)
{
	char buf[64];

	for (uint32_t i = 0; i < n && *shown < HTML_FRAMES; i++, (*shown)++) {
		if (*shown)
			fputs("\n", f);
		if (fr[i].function) {
			put_name(f, fr[i].function);
		} else if (fr[i].module) {
			const char *m = strrchr(fr[i].module, '/');

			put_name(f, m ? m + 1 : fr[i].module);
			snprintf(buf, sizeof(buf), "+%#llx", (unsigned long long)fr[i].offset);
			fputs(buf, f);
		} else {
			snprintf(buf, sizeof(buf), "%#llx", (unsigned long long)fr[i].addr);
			fputs(buf, f);
		}
	}
}

static void html_thread(FILE *f, const struct tk_stacks_thread *t)
{
	uint32_t shown = 0;

	fprintf(f, "<tr class=\"thread\" data-tid=\"%u\"><td>%u</td><td>%u</td><td>", t->tid,
		t->pid, t->tid);
	put_name(f, t->comm);
	fputs("</td><td>", f);
	rec_put_html(f, tk_stacks__state_name(t->state));
	fputs("</td><td>", f);
	if (t->syscall_name) {
		put_name(f, t->syscall_name);
		fputs("()", f);
	}
	if (t->wait) {
		fputs(t->syscall_name ? ": " : "", f);
		put_name(f, t->wait);
	} else if (t->wchan) {
		fputs(t->syscall_name ? ", wchan " : "wchan ", f);
		put_name(f, t->wchan);
	}
	fputs("</td><td>", f);
	if (t->off_cpu_ns >= 0)
		fprintf(f, "%.2f s", t->off_cpu_ns / 1e9);
	fputs("</td><td><pre>", f);
	put_frames(f, t->kframes, t->nr_kframes, &shown);
	put_frames(f, t->uframes, t->nr_uframes, &shown);
	if (shown < t->nr_kframes + t->nr_uframes)
		fprintf(f, "\n(%u more)", t->nr_kframes + t->nr_uframes - shown);
	fputs("</pre></td></tr>\n", f);
}

/* The threads of @sn whose moved is @moved (any, with @all), HTML_ROWS at most. */
static void html_table(FILE *f, const struct tk_stacks_snapshot *sn, const char *id, bool all,
		       bool moved, const char *file)
{
	size_t n = 0;

	fprintf(f, "<table id=\"%s\">\n<tr><th>pid</th><th>tid</th><th>name</th><th>state</th>"
		"<th>waits in</th><th>off CPU</th><th>stack (leaf first)</th></tr>\n", id);
	for (size_t i = 0; i < sn->nr_threads; i++) {
		if (!all && sn->threads[i].moved != moved)
			continue;
		if (n++ < HTML_ROWS)
			html_thread(f, &sn->threads[i]);
	}
	fputs("</table>\n", f);
	if (n > HTML_ROWS)
		fprintf(f, "<p>and %zu more: <a href=\"%s\">%s</a></p>\n", n - HTML_ROWS, file,
			file);
}

void rec_stacks__html_row(const struct rec *r, FILE *f)
{
	const struct rec_stacks *k = &r->stk;

	char buf[512];

	fprintf(f, "<tr><td><a href=\"#stacks\">stacks</a></td><td class=\"%s\">%s</td><td>",
		status_name(k->status), status_name(k->status));
	rec_put_html(f, k->status == REC_OK ? k->plan : k->why);
	if (k->status == REC_OK) {
		/* the finding, at the top of the page: how many threads did not move */
		outcome(k, buf, sizeof(buf));
		fputs("<br>", f);
		rec_put_html(f, buf);
	}
	fputs("</td><td>", f);
	for (int i = 0; i < k->nr_files; i++)
		fprintf(f, "%s<a href=\"%s\">%s</a>", i ? " " : "", k->files[i], k->files[i]);
	fputs("</td></tr>\n", f);
}

void rec_stacks__html(const struct rec *r, FILE *f)
{
	const struct rec_stacks *k = &r->stk;
	const struct tk_stacks_snapshot *sn;
	char buf[512];

	fputs("<section id=\"stacks\">\n<h2>Thread stacks at the start and the end of the "
	      "window</h2>\n", f);
	if (k->status != REC_OK) {
		fprintf(f, "<p class=\"%s\">Not recorded: ", status_name(k->status));
		rec_put_html(f, k->why);
		fputs("</p>\n</section>\n", f);
		return;
	}
	outcome(k, buf, sizeof(buf));
	fputs("<p>", f);
	rec_put_html(f, k->plan);
	fputs("<br>", f);
	rec_put_html(f, buf);
	fputs("<br>Backend: ", f);
	rec_put_html(f, k->why_backend);
	fputs("</p>\n", f);
	sn = k->res->snapshots;
	if (k->have_end) {
		fprintf(f, "<h3>Did not move: %zu thread%s</h3>\n<p>In the same place at the start "
			"and the end of the window, and did not run between: the suspects of a "
			"hang.</p>\n", k->stuck, k->stuck == 1 ? "" : "s");
		html_table(f, &sn[1], "stacks-stuck", false, false, "stacks-end.txt");
		fprintf(f, "<h3>Moved: %zu thread%s</h3>\n", sn[1].nr_threads - k->stuck,
			sn[1].nr_threads - k->stuck == 1 ? "" : "s");
		html_table(f, &sn[1], "stacks-moved", false, true, "stacks-end.txt");
	} else {
		fprintf(f, "<h3>At the start: %zu thread%s</h3>\n", sn[0].nr_threads,
			sn[0].nr_threads == 1 ? "" : "s");
		html_table(f, &sn[0], "stacks-start", true, false, "stacks-start.txt");
	}
	fputs("<p>Files:", f);
	for (int i = 0; i < k->nr_files; i++)
		fprintf(f, " <a href=\"%s\">%s</a>", k->files[i], k->files[i]);
	fputs("</p>\n", f);
	if (k->res->nr_notes) {
		fputs("<ul>\n", f);
		for (size_t i = 0; i < k->res->nr_notes; i++) {
			fputs("<li>", f);
			put_name(f, k->res->notes[i]);
			fputs("</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
	fputs("<details><summary>Loss counters</summary><table>\n", f);
	for (size_t i = 0; i < k->res->nr_losses; i++)
		fprintf(f, "<tr><td>%s</td><td>%llu</td></tr>\n", k->res->losses[i].name,
			(unsigned long long)k->res->losses[i].count);
	fputs("</table></details>\n</section>\n", f);
}
