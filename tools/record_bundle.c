// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What `tracekit record` writes (record.h): every file is written whole into
 * the bundle's directory. index.html depends on nothing outside itself: its
 * styles, flame graphs and scripts are inline and its Content-Security-Policy
 * forbids every network load, so it opens the same from a USB stick.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/json.h"
#include "core/outfile.h"
#include "core/tar.h"
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

void rec_put_html(FILE *f, const char *s)
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

/* Open @name in the bundle's directory (held open: @dirfd) as a file written whole. */
static int open_file(struct tk_outfile *of, int dirfd, const char *name)
{
	int err = tk_outfile__openat(of, dirfd, name, NULL);

	if (err)
		fprintf(stderr, "tracekit: record: cannot write %s: %s\n", name, strerror(-err));
	return err;
}

static int commit_file(struct tk_outfile *of, const char *name, int err);

static int write_one(struct rec_coll *rc, int dirfd, const char *ext, enum tk_format fmt)
{
	char name[sizeof(rc->files[0])];
	struct tk_outfile of;
	int err;

	if (!tk_result__has_format(rc->r, fmt))
		return 0;
	snprintf(name, sizeof(name), "%s%s", rc->name, ext);
	if ((err = open_file(&of, dirfd, name)))
		return err;
	err = commit_file(&of, name, tk_result__write(rc->r, fmt, of.f, SUMMARY_TOP));
	if (err)
		return err;
	if (rc->nr_files < REC_MAX_FILES)
		memcpy(rc->files[rc->nr_files++], name, sizeof(name));
	return 0;
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

static int write_summary(struct rec *r, int dir)
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
	if (!err)
		rec_stacks__summary(r, of.f);
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

static int write_manifest(struct rec *r, int dir)
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
	rec_stacks__manifest(r, &j);
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
		rec_put_html(f, p->losses[l].name);
		fprintf(f, "</td><td>%llu</td></tr>\n", (unsigned long long)p->losses[l].count);
	}
	fputs("</table></details>\n", f);
}

static int write_html(struct rec *r, int dir)
{
	struct tk_outfile of;
	char *text, head[4096], id[48];
	FILE *hf;
	int i, k, err;

	if ((err = open_file(&of, dir, "index.html")))
		return err;
	fputs(html_head, of.f);
	fputs("<title>tracekit record: ", of.f);
	rec_put_html(of.f, r->host);
	fputs("</title>\n</head>\n<body>\n<h1>tracekit record: ", of.f);
	rec_put_html(of.f, r->host);
	fputs("</h1>\n<pre id=\"header\">", of.f);
	hf = fmemopen(head, sizeof(head), "w");
	if (hf) {
		header_lines(r, hf);
		fputc(0, hf);
		fclose(hf);
		head[sizeof(head) - 1] = 0;
		rec_put_html(of.f, head);
	}
	fputs("</pre>\n<h2>Collectors</h2>\n<table id=\"collectors\">\n"
	      "<tr><th>collector</th><th>state</th><th>how</th><th>files</th></tr>\n", of.f);
	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];

		fprintf(of.f, "<tr><td><a href=\"#%s\">%s</a></td><td class=\"%s\">%s</td><td>",
			rc->name, rc->name, status_name(rc->status), status_name(rc->status));
		rec_put_html(of.f, rc->status == REC_OK ? rc->plan : rc->why);
		fputs("</td><td>", of.f);
		for (k = 0; k < rc->nr_files; k++)
			fprintf(of.f, "%s<a href=\"%s\">%s</a>", k ? " " : "", rc->files[k],
				rc->files[k]);
		fputs("</td></tr>\n", of.f);
	}
	rec_stacks__html_row(r, of.f);
	fputs("</table>\n", of.f);
	for (i = 0; i < r->nr_notes; i++) {
		fputs(i ? "" : "<ul id=\"notes\">\n", of.f);
		fputs("<li>", of.f);
		rec_put_html(of.f, r->notes[i]);
		fputs(i + 1 == r->nr_notes ? "</li>\n</ul>\n" : "</li>\n", of.f);
	}

	for (i = 0; i < r->n; i++) {
		const struct rec_coll *rc = &r->c[i];
		const struct tk_profile *p;

		fprintf(of.f, "<section id=\"%s\">\n<h2>", rc->name);
		rec_put_html(of.f, rc->title[0] ? rc->title : rc->name);
		fputs("</h2>\n", of.f);
		if (rc->status != REC_OK) {
			fprintf(of.f, "<p class=\"%s\">Not recorded: ", status_name(rc->status));
			rec_put_html(of.f, rc->why);
			fputs("</p>\n</section>\n", of.f);
			continue;
		}
		fputs("<p>", of.f);
		rec_put_html(of.f, rc->plan);
		if (rc->describe[0]) {
			fputs("<br>", of.f);
			rec_put_html(of.f, rc->describe);
		}
		if (rc->why_backend[0]) {
			fputs("<br>Backend: ", of.f);
			rec_put_html(of.f, rc->why_backend);
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
		rec_put_html(of.f, text ? text : "(no summary)");
		fputs("</pre>\n", of.f);
		free(text);
		html_losses(of.f, rc);
		fputs("</section>\n", of.f);
	}

	/* the threads that did not move first: a hang's suspects */
	if (!err)
		rec_stacks__html(r, of.f);

	/* what this machine does not allow, from the snapshot */
	fputs("<section id=\"caps\">\n<h2>Not available here, and why</h2>\n<table>\n"
	      "<tr><th>what</th><th>state</th><th>why</th><th>what to do</th></tr>\n", of.f);
	for (k = 0; k < TK_CAP__COUNT; k++) {
		if (!tk_caps__present(r->caps, k) || tk_caps__status(r->caps, k) == TK_SUPPORTED)
			continue;
		fputs("<tr><td>", of.f);
		rec_put_html(of.f, tk_cap__title(k));
		fputs("</td><td>", of.f);
		rec_put_html(of.f, tk_status__name(tk_caps__status(r->caps, k)));
		fputs("</td><td>", of.f);
		rec_put_html(of.f, tk_caps__reason(r->caps, k));
		fputs("</td><td>", of.f);
		rec_put_html(of.f, tk_caps__remedy(r->caps, k));
		fputs("</td></tr>\n", of.f);
	}
	fputs("</table>\n<p>The whole snapshot: <a href=\"caps.json\">caps.json</a>.</p>\n"
	      "</section>\n</body>\n</html>\n", of.f);
	return commit_file(&of, "index.html", err);
}

int rec_write_bundle(struct rec *r, int dir)
{
	struct tk_outfile of;
	int i, err;

	if ((err = open_file(&of, dir, "caps.json")) ||
	    (err = commit_file(&of, "caps.json", tk_caps__write_json(r->caps, of.f))))
		return err;
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
	if ((err = rec_stacks__write(r, dir)))
		return err;
	if ((err = write_summary(r, dir)) || (err = write_manifest(r, dir)) ||
	    (err = write_html(r, dir)))
		return err;
	return 0;
}

bool rec_names_fit_tar(const struct rec *r, const char *top, char *longest, size_t size)
{
	static const char *const fixed[] = { "caps.json", "summary.txt", "manifest.json",
					     "index.html", "stacks-start.txt",
					     "stacks-start.pb.gz", "stacks-end.txt",
					     "stacks-end.pb.gz", "stacks.json" };
	static const char *const exts[] = { ".pb.gz", ".svg", ".json", ".txt" };
	char coll[REC_MAX_PIDS + 3][32], name[64];
	size_t i, k, n = 0;

	/* the collectors' names as cmd_record.c gives them: cpu, numa, alloc or alloc-PID */
	snprintf(coll[n++], sizeof(coll[0]), "cpu");
	snprintf(coll[n++], sizeof(coll[0]), "numa");
	snprintf(coll[n++], sizeof(coll[0]), "alloc");
	for (i = 0; r->nr_pids > 1 && i < (size_t)r->nr_pids; i++)
		snprintf(coll[n++], sizeof(coll[0]), "alloc-%d", r->pids[i]);
	longest[0] = 0;
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (strlen(fixed[i]) > strlen(longest))
			snprintf(longest, size, "%s", fixed[i]);
	for (i = 0; i < n; i++)
		for (k = 0; k < sizeof(exts) / sizeof(exts[0]); k++) {
			snprintf(name, sizeof(name), "%s%s", coll[i], exts[k]);
			if (strlen(name) > strlen(longest))
				snprintf(longest, size, "%s", name);
		}
	return tk_tar__name_fits(top, longest);
}

/* ---- where the bundle goes ---------------------------------------------------------- */

static bool same_dir_at(int pdfd, const char *name, const struct stat *want)
{
	struct stat st;

	return !fstatat(pdfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
	       st.st_dev == want->st_dev && st.st_ino == want->st_ino;
}

/* Where the bundle's directory is now (it may have been moved): its path, or what was said. */
static const char *bundle_where(const struct rec_out *o, char *buf, size_t size)
{
	char self[64];
	ssize_t n;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", o->bdfd);
	n = readlink(self, buf, size - 1);
	if (n <= 0)
		return o->shown;
	buf[n] = 0;
	return buf;
}

/*
 * A new directory "TOP.tmp.XXXXXX" in the parent (random, so no one can
 * take its name in advance; 0700), opened and checked (a directory of ours,
 * private): from now on the bundle is written through that descriptor only,
 * whatever is done to its name.
 */
static int make_bundle_dir(struct rec_out *o)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[6];
	int tries, i, err;

	for (tries = 0; tries < 100; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -EIO;
		i = snprintf(o->tmpname, sizeof(o->tmpname), "%s.tmp.", o->top);
		if (i < 0 || (size_t)i + sizeof(rnd) >= sizeof(o->tmpname))
			return -ENAMETOOLONG;
		for (size_t k = 0; k < sizeof(rnd); k++)
			o->tmpname[i + k] = chars[rnd[k] % (sizeof(chars) - 1)];
		o->tmpname[i + sizeof(rnd)] = 0;
		if (!mkdirat(o->pdfd, o->tmpname, 0700))
			break;
		if (errno != EEXIST)
			return -errno;
	}
	if (tries == 100)
		return -EEXIST;
	o->made = true;
	o->bdfd = openat(o->pdfd, o->tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o->bdfd < 0)
		return -errno;
	if (fstat(o->bdfd, &o->bst))
		return -errno;
	/* another's directory, put at the name between mkdir and open */
	if (o->bst.st_uid != geteuid() || (o->bst.st_mode & 077))
		return -EPERM;
	err = 0;
	return err;
}

int rec_out__open(struct rec_out *o, const struct rec *r, const char *out, bool tar)
{
	char longest[64], base[PATH_MAX], tarname[NAME_MAX + 1];
	const char *slash;
	struct stat st;
	size_t len;
	int err;

	memset(o, 0, sizeof(*o));
	o->pdfd = o->bdfd = -1;
	o->tar = tar;
	len = strlen(out);
	while (len > 1 && out[len - 1] == '/')
		len--;
	if (tar && len > 7 && !strncmp(out + len - 7, ".tar.gz", 7))
		len -= 7;
	if (!len || len >= sizeof(base) - 1)
		return usage_error("record", "invalid output '%s'", out);
	memcpy(base, out, len);
	base[len] = 0;
	slash = strrchr(base, '/');
	snprintf(o->top, sizeof(o->top), "%s", slash ? slash + 1 : base);
	if (!o->top[0] || !strcmp(o->top, ".") || !strcmp(o->top, "..") ||
	    strlen(o->top) > NAME_MAX - 16)
		return usage_error("record", "invalid output '%s': name a new directory", out);
	snprintf(o->base, sizeof(o->base), "%s", base);
	snprintf(o->final, sizeof(o->final), tar ? "%s.tar.gz" : "%s", base);
	snprintf(o->parent, sizeof(o->parent), "%.*s",
		 slash ? (slash == base ? 1 : (int)(slash - base)) : 1, slash ? base : ".");
	/* a tar whose names ustar cannot hold is refused now, not after the window */
	if (tar && !rec_names_fit_tar(r, o->top, longest, sizeof(longest)))
		return fail(EXIT_FAILURE, "record: '%s' is too long a name for a tar: its member "
			    "'%s/%s' would pass ustar's %d bytes (name a shorter one, or leave "
			    "out --tar)", o->final, o->top, longest, TK_TAR_NAME_MAX);
	o->pdfd = open(o->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->pdfd < 0) {
		err = errno;
		return fail(EXIT_FAILURE, "record: cannot write into '%s': %s%s", o->parent,
			    strerror(err), err == ENOENT ? " (the parent directory does not "
			    "exist)" : "");
	}
	if (!tar && !fstatat(o->pdfd, o->top, &st, AT_SYMLINK_NOFOLLOW))
		return fail(EXIT_FAILURE, "record: '%s' exists: name a new directory (nothing "
			    "is written into or over an existing one)", o->base);
	if (tar) {
		/* held from now: whatever is put at the name meanwhile is replaced, never written */
		snprintf(tarname, sizeof(tarname), "%s.tar.gz", o->top);
		err = tk_outfile__openat(&o->tarf, o->pdfd, tarname, o->final);
		if (err)
			return output_error("record", o->final, err);
	}
	err = make_bundle_dir(o);
	snprintf(o->shown, sizeof(o->shown), "%s%s%s", o->parent,
		 o->parent[strlen(o->parent) - 1] == '/' ? "" : "/", o->tmpname);
	if (err)
		return fail(EXIT_FAILURE, "record: cannot create '%s': %s", o->shown,
			    strerror(-err));
	return 0;
}

/* Remove what the bundle directory holds, through its descriptor; then it, if still ours. */
static void remove_bundle(struct rec_out *o)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (o->bdfd < 0)
		return;
	fd = openat(o->bdfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(o->bdfd, de->d_name, 0);
	if (d)
		closedir(d);
	if (same_dir_at(o->pdfd, o->tmpname, &o->bst))
		unlinkat(o->pdfd, o->tmpname, AT_REMOVEDIR);
}

/*
 * Keep the bundle's directory after a failure: named DIR when that name is
 * free (and the directory is still where it was made), else where it is.
 */
static void keep_bundle(struct rec_out *o, char *where, size_t size)
{
	if (same_dir_at(o->pdfd, o->tmpname, &o->bst) &&
	    !renameat2(o->pdfd, o->tmpname, o->pdfd, o->top, RENAME_NOREPLACE) &&
	    same_dir_at(o->pdfd, o->top, &o->bst)) {
		snprintf(where, size, "%s", o->base);
		return;
	}
	bundle_where(o, where, size);
}

int rec_out__finish(struct rec_out *o, struct rec *r)
{
	char where[PATH_MAX];
	int err;

	o->done = true;
	err = rec_write_bundle(r, o->bdfd);
	if (err) {
		keep_bundle(o, where, sizeof(where));
		return fail(EXIT_FAILURE, "record: the bundle is incomplete (%s): what was "
			    "written is left in '%s'", strerror(-err), where);
	}
	if (o->tar) {
		/* TK_TEST_RECORD_STOP=tar: the tests' moment to fill the file system */
		if (getenv("TK_TEST_RECORD_STOP") && !strcmp(getenv("TK_TEST_RECORD_STOP"), "tar"))
			raise(SIGSTOP);
		err = tk_tar__write_dirfd(fileno(o->tarf.f), o->bdfd, o->top, r->end_rt.tv_sec);
		if (err)
			tk_outfile__abort(&o->tarf);
		else
			err = tk_outfile__commit(&o->tarf);
		if (err) {
			keep_bundle(o, where, sizeof(where));
			return fail(EXIT_FAILURE, "record: cannot write '%s': %s; the bundle is "
				    "left, whole, in the directory '%s'", o->final, strerror(-err),
				    where);
		}
		remove_bundle(o);
		return 0;
	}
	/* by name at last: only the directory made, and only where it was made */
	if (!same_dir_at(o->pdfd, o->tmpname, &o->bst))
		return fail(EXIT_FAILURE, "record: '%s' was moved or replaced during the "
			    "recording (by someone who can write into '%s'): nothing is renamed; "
			    "the bundle, whole, is in '%s'", o->shown, o->parent,
			    bundle_where(o, where, sizeof(where)));
	if (renameat2(o->pdfd, o->tmpname, o->pdfd, o->top, RENAME_NOREPLACE)) {
		err = errno;
		return fail(EXIT_FAILURE, "record: cannot rename '%s' to '%s': %s (the bundle is "
			    "left in '%s')", o->shown, o->base, strerror(err),
			    bundle_where(o, where, sizeof(where)));
	}
	if (!same_dir_at(o->pdfd, o->top, &o->bst))
		return fail(EXIT_FAILURE, "record: '%s' is not the bundle (it was replaced as it "
			    "was renamed): the bundle, whole, is in '%s'", o->base,
			    bundle_where(o, where, sizeof(where)));
	return 0;
}

void rec_out__close(struct rec_out *o)
{
	/* not finished (no window, a failure before it): nothing of it stays */
	if (!o->done && o->made)
		remove_bundle(o);
	if (o->tarf.f)
		tk_outfile__abort(&o->tarf);
	if (o->bdfd >= 0)
		close(o->bdfd);
	if (o->pdfd >= 0)
		close(o->pdfd);
	o->bdfd = o->pdfd = -1;
}
