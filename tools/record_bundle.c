// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What `tracekit record` writes (record.h): every file is written whole into
 * the bundle's directory. index.html depends on nothing outside itself: its
 * styles, flame graphs and scripts are inline and its Content-Security-Policy
 * forbids every network load, so it opens the same from a USB stick.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "cli.h"
#include "core/json.h"
#include "core/outfile.h"
#include "profile/profile.h"
#include "record.h"
#include "tracekit/tracekit.h"

#define SUMMARY_TOP 20

static const char *status_name(enum rec_status s)
{
	return s == REC_OK ? "recorded" : s == REC_FAILED ? "failed" : "unavailable";
}

static void rfc3339(const struct timespec *ts, char *buf, size_t sz)
{
	struct tm tm;
	size_t n;

	gmtime_r(&ts->tv_sec, &tm);
	n = strftime(buf, sz, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sz - n, ".%03ldZ", ts->tv_nsec / 1000000);
}

static void put_html(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f); break;
		}
	}
}

/* @r rendered as @fmt into a string (free it); NULL when it cannot be. */
static char *render(const struct tk_result *res, enum tk_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return NULL;
	err = tk_result__write(res, fmt, f, SUMMARY_TOP);
	if (fclose(f) || err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_one(struct rec_coll *rc, const char *dir, const char *ext, enum tk_format fmt)
{
	char path[PATH_MAX];
	int err;

	if (!tk_result__has_format(rc->r, fmt))
		return 0;
	snprintf(path, sizeof(path), "%s/%s%s", dir, rc->name, ext);
	err = tk_result__write_file(rc->r, path, fmt, SUMMARY_TOP);
	if (err) {
		fprintf(stderr, "tracekit: record: cannot write %s%s: %s\n", rc->name, ext,
			strerror(-err));
		return err;
	}
	if (rc->nr_files < REC_MAX_FILES) {
		char name[sizeof(rc->files[0])];

		snprintf(name, sizeof(name), "%s%s", rc->name, ext);
		memcpy(rc->files[rc->nr_files++], name, sizeof(name));
	}
	return 0;
}

/* Open @name in @dir as a file written whole (tk_outfile). */
static int open_file(struct tk_outfile *of, const char *dir, const char *name)
{
	char path[PATH_MAX];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	err = tk_outfile__open(of, path);
	if (err)
		fprintf(stderr, "tracekit: record: cannot write %s: %s\n", name, strerror(-err));
	return err;
}

static int commit_file(struct tk_outfile *of, const char *name, int err)
{
	if (err)
		tk_outfile__abort(of);
	else
		err = tk_outfile__commit(of);
	if (err)
		fprintf(stderr, "tracekit: record: cannot write %s: %s\n", name, strerror(-err));
	return err;
}

static const char *command_line(const struct rec *r, char *buf, size_t sz)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; r->argv && r->argv[i] && n + 1 < sz; i++)
		n += (size_t)snprintf(buf + n, sz - n, "%s%s", i ? " " : "", r->argv[i]);
	return buf;
}

static void header_lines(const struct rec *r, FILE *f)
{
	char start[40], end[40], cmd[512];
	int i;

	rfc3339(&r->start_rt, start, sizeof(start));
	rfc3339(&r->end_rt, end, sizeof(end));
	fprintf(f, "tracekit %s record on %s, kernel %s\n", tk_version(), r->host,
		tk_caps__kernel_release(r->caps));
	fprintf(f, "window: %s to %s (%.1f s, ended: %s)\n", start, end, r->elapsed,
		r->end_reason);
	if (r->argv)
		fprintf(f, "command: %s\n", command_line(r, cmd, sizeof(cmd)));
	for (i = 0; i < r->nr_pids; i++)
		fprintf(f, "%s%d%s", i ? " " : "processes: ", r->pids[i],
			i + 1 == r->nr_pids ? "\n" : "");
	if (r->cgroup)
		fprintf(f, "cgroup: %s\n", r->cgroup);
	fprintf(f, "tracekit's own CPU time: %.2f s (%.1f %% of one CPU)\n", r->self_cpu_s,
		r->elapsed > 0 ? 100 * r->self_cpu_s / r->elapsed : 0.0);
}

static int write_summary(struct rec *r, const char *dir)
{
	struct tk_outfile of;
	int i, err;

	if ((err = open_file(&of, dir, "summary.txt")))
		return err;
	header_lines(r, of.f);
	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];

		fprintf(of.f, "\n== %s: %s\n", rc->name, status_name(rc->status));
		if (rc->plan[0])
			fprintf(of.f, "how: %s\n", rc->plan);
		if (rc->describe[0])
			fprintf(of.f, "attached: %s\n", rc->describe);
		if (rc->status != REC_OK) {
			fprintf(of.f, "why: %s\n", rc->why);
			continue;
		}
		fputc('\n', of.f);
		err = tk_result__write(rc->r, TK_FORMAT_TEXT, of.f, SUMMARY_TOP);
		if (err)
			break;
	}
	for (i = 0; !err && i < r->nr_notes; i++)
		fprintf(of.f, "%snote: %s\n", i ? "" : "\n", r->notes[i]);
	return commit_file(&of, "summary.txt", err);
}

static void json_losses(struct tk_json *j, const struct rec_coll *rc)
{
	const struct tk_profile *p = rc->r ? tk_result__profile(rc->r) : NULL;
	int l;

	tk_json__begin_object(j, "losses");
	for (l = 0; p && l < p->nr_losses && l < TK_PROFILE_MAX_LOSSES; l++)
		tk_json__uint(j, p->losses[l].name, p->losses[l].count);
	tk_json__end_object(j);
}

static int write_manifest(struct rec *r, const char *dir)
{
	char start[40], end[40], cmd[512];
	struct tk_outfile of;
	struct utsname u;
	struct tk_json j;
	int i, k, err;

	if ((err = open_file(&of, dir, "manifest.json")))
		return err;
	uname(&u);
	rfc3339(&r->start_rt, start, sizeof(start));
	rfc3339(&r->end_rt, end, sizeof(end));
	tk_json__init(&j, of.f, true);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "schema", "tracekit.record/1");
	tk_json__string(&j, "tracekit_version", tk_version());
	tk_json__string(&j, "host", r->host);
	tk_json__string(&j, "kernel", tk_caps__kernel_release(r->caps));
	tk_json__string(&j, "kernel_version", u.version);
	tk_json__string(&j, "machine", u.machine);
	tk_json__string(&j, "start", start);
	tk_json__string(&j, "end", end);
	tk_json__double(&j, "duration_s", r->elapsed);
	tk_json__double(&j, "duration_asked_s", r->duration);
	tk_json__string(&j, "ended", r->end_reason);
	if (r->argv) {
		tk_json__string(&j, "command", command_line(r, cmd, sizeof(cmd)));
		if (r->exit_status >= 0 && WIFEXITED(r->exit_status))
			tk_json__int(&j, "command_exit_code", WEXITSTATUS(r->exit_status));
		else if (r->exit_status >= 0 && WIFSIGNALED(r->exit_status))
			tk_json__int(&j, "command_signal", WTERMSIG(r->exit_status));
		/* still running at the end: record stopped it (its signal, as perf record does) */
		if (r->cmd_stop_sig)
			tk_json__string(&j, "command_stopped_with",
					r->cmd_stop_sig == SIGKILL ? "SIGKILL" : "SIGTERM");
	}
	tk_json__begin_array(&j, "pids");
	for (i = 0; i < r->nr_pids; i++)
		tk_json__int(&j, NULL, r->pids[i]);
	tk_json__end_array(&j);
	tk_json__string(&j, "cgroup", r->cgroup);
	tk_json__int(&j, "freq_hz", r->freq_hz);
	tk_json__double(&j, "budget", r->budget);
	tk_json__double(&j, "tracekit_cpu_s", r->self_cpu_s);
	tk_json__string(&j, "caps", "caps.json");
	tk_json__begin_array(&j, "collectors");
	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];

		tk_json__begin_object(&j, NULL);
		tk_json__string(&j, "name", rc->name);
		tk_json__string(&j, "collector", tk_collector__name(rc->coll));
		tk_json__string(&j, "status", status_name(rc->status));
		if (rc->pid)
			tk_json__int(&j, "pid", rc->pid);
		tk_json__string(&j, "backend", rc->backend[0] ? rc->backend : NULL);
		tk_json__string(&j, "how", rc->plan[0] ? rc->plan : NULL);
		tk_json__string(&j, "describe", rc->describe[0] ? rc->describe : NULL);
		tk_json__string(&j, "why_backend", rc->why_backend[0] ? rc->why_backend : NULL);
		tk_json__string(&j, "why", rc->status != REC_OK ? rc->why : NULL);
		if (rc->budget.forecast >= 0)
			tk_json__double(&j, "forecast_slowdown", rc->budget.forecast);
		if (rc->budget.guarded)
			tk_json__string(&j, "ended_early",
					rc->budget.ended[0] ? rc->budget.ended : NULL);
		if (rc->thread)
			tk_json__string(&j, "ended", tk_session_end__name(rc->end));
		tk_json__begin_array(&j, "files");
		for (k = 0; k < rc->nr_files; k++)
			tk_json__string(&j, NULL, rc->files[k]);
		tk_json__end_array(&j);
		json_losses(&j, rc);
		tk_json__end_object(&j);
	}
	tk_json__end_array(&j);
	tk_json__begin_array(&j, "notes");
	for (i = 0; i < r->nr_notes; i++)
		tk_json__string(&j, NULL, r->notes[i]);
	tk_json__end_array(&j);
	tk_json__end_object(&j);
	err = tk_json__finish(&j);
	return commit_file(&of, "manifest.json", err);
}

static const char html_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	/* nothing from the network, ever: only what is inline here */
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	"style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<style>\n"
	"body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }\n"
	"pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; }\n"
	"table { border-collapse: collapse; margin: 0.5em 0 1em; }\n"
	"td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; "
	"vertical-align: top; font-size: 14px; }\n"
	".recorded { color: #161; } .failed, .unavailable { color: #a22; }\n"
	"svg { max-width: 100%; height: auto; display: block; }\n"
	"</style>\n";

static void html_losses(FILE *f, const struct rec_coll *rc)
{
	const struct tk_profile *p = tk_result__profile(rc->r);
	int l;

	if (!p || !p->nr_losses)
		return;
	fputs("<details><summary>Loss counters</summary><table>\n", f);
	for (l = 0; l < p->nr_losses && l < TK_PROFILE_MAX_LOSSES; l++) {
		fputs("<tr><td>", f);
		put_html(f, p->losses[l].name);
		fprintf(f, "</td><td>%llu</td></tr>\n", (unsigned long long)p->losses[l].count);
	}
	fputs("</table></details>\n", f);
}

static int write_html(struct rec *r, const char *dir)
{
	struct tk_outfile of;
	char *text, head[4096], id[48];
	FILE *hf;
	int i, k, err;

	if ((err = open_file(&of, dir, "index.html")))
		return err;
	fputs(html_head, of.f);
	fputs("<title>tracekit record: ", of.f);
	put_html(of.f, r->host);
	fputs("</title>\n</head>\n<body>\n<h1>tracekit record: ", of.f);
	put_html(of.f, r->host);
	fputs("</h1>\n<pre id=\"header\">", of.f);
	hf = fmemopen(head, sizeof(head), "w");
	if (hf) {
		header_lines(r, hf);
		fputc(0, hf);
		fclose(hf);
		head[sizeof(head) - 1] = 0;
		put_html(of.f, head);
	}
	fputs("</pre>\n<h2>Collectors</h2>\n<table id=\"collectors\">\n"
	      "<tr><th>collector</th><th>state</th><th>how</th><th>files</th></tr>\n", of.f);
	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];

		fprintf(of.f, "<tr><td><a href=\"#%s\">%s</a></td><td class=\"%s\">%s</td><td>",
			rc->name, rc->name, status_name(rc->status), status_name(rc->status));
		put_html(of.f, rc->status == REC_OK ? rc->plan : rc->why);
		fputs("</td><td>", of.f);
		for (k = 0; k < rc->nr_files; k++)
			fprintf(of.f, "%s<a href=\"%s\">%s</a>", k ? " " : "", rc->files[k],
				rc->files[k]);
		fputs("</td></tr>\n", of.f);
	}
	fputs("</table>\n", of.f);
	for (i = 0; i < r->nr_notes; i++) {
		fputs(i ? "" : "<ul id=\"notes\">\n", of.f);
		fputs("<li>", of.f);
		put_html(of.f, r->notes[i]);
		fputs(i + 1 == r->nr_notes ? "</li>\n</ul>\n" : "</li>\n", of.f);
	}

	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];
		const struct tk_profile *p;

		fprintf(of.f, "<section id=\"%s\">\n<h2>", rc->name);
		put_html(of.f, rc->title[0] ? rc->title : rc->name);
		fputs("</h2>\n", of.f);
		if (rc->status != REC_OK) {
			fprintf(of.f, "<p class=\"%s\">Not recorded: ", status_name(rc->status));
			put_html(of.f, rc->why);
			fputs("</p>\n</section>\n", of.f);
			continue;
		}
		fputs("<p>", of.f);
		put_html(of.f, rc->plan);
		if (rc->describe[0]) {
			fputs("<br>", of.f);
			put_html(of.f, rc->describe);
		}
		if (rc->why_backend[0]) {
			fputs("<br>Backend: ", of.f);
			put_html(of.f, rc->why_backend);
		}
		fputs("</p>\n", of.f);
		p = tk_result__profile(rc->r);
		if (p && tk_result__has_format(rc->r, TK_FORMAT_SVG)) {
			snprintf(id, sizeof(id), "fg-%s", rc->name);
			err = tk_profile__write_svg_inline(p, of.f, rc->title, id);
			if (err)
				break;
		}
		text = render(rc->r, TK_FORMAT_TEXT);
		fputs("<pre class=\"summary\">", of.f);
		put_html(of.f, text ? text : "(no summary)");
		fputs("</pre>\n", of.f);
		free(text);
		html_losses(of.f, rc);
		fputs("</section>\n", of.f);
	}

	/* what this machine does not allow, from the snapshot */
	fputs("<section id=\"caps\">\n<h2>Not available here, and why</h2>\n<table>\n"
	      "<tr><th>what</th><th>state</th><th>why</th><th>what to do</th></tr>\n", of.f);
	for (k = 0; k < TK_CAP__COUNT; k++) {
		if (!tk_caps__present(r->caps, k) || tk_caps__status(r->caps, k) == TK_SUPPORTED)
			continue;
		fputs("<tr><td>", of.f);
		put_html(of.f, tk_cap__title(k));
		fputs("</td><td>", of.f);
		put_html(of.f, tk_status__name(tk_caps__status(r->caps, k)));
		fputs("</td><td>", of.f);
		put_html(of.f, tk_caps__reason(r->caps, k));
		fputs("</td><td>", of.f);
		put_html(of.f, tk_caps__remedy(r->caps, k));
		fputs("</td></tr>\n", of.f);
	}
	fputs("</table>\n<p>The whole snapshot: <a href=\"caps.json\">caps.json</a>.</p>\n"
	      "</section>\n</body>\n</html>\n", of.f);
	return commit_file(&of, "index.html", err);
}

int rec_write_bundle(struct rec *r, const char *dir)
{
	char path[PATH_MAX];
	int i, err;

	snprintf(path, sizeof(path), "%s/caps.json", dir);
	err = tk_caps__write_file(r->caps, path, true);
	if (err) {
		fprintf(stderr, "tracekit: record: cannot write caps.json: %s\n", strerror(-err));
		return err;
	}
	for (i = 0; i < r->n; i++) {
		struct rec_coll *rc = &r->c[i];

		if (rc->status != REC_OK || !rc->r)
			continue;
		if ((err = write_one(rc, dir, ".pb.gz", TK_FORMAT_PPROF)) ||
		    (err = write_one(rc, dir, ".svg", TK_FORMAT_SVG)) ||
		    (err = write_one(rc, dir, ".json", TK_FORMAT_JSON)) ||
		    (err = write_one(rc, dir, ".txt", TK_FORMAT_TEXT)))
			return err;
	}
	if ((err = write_summary(r, dir)) || (err = write_manifest(r, dir)) ||
	    (err = write_html(r, dir)))
		return err;
	return 0;
}
