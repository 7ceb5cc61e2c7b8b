/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * tracekit record: every collector over one window, into one directory (or
 * one .tar.gz). cmd_record.c chooses and runs the sessions; record_bundle.c
 * writes what they found: caps.json, a profile per collector in pprof, SVG,
 * JSON and text, summary.txt, manifest.json and a self-contained index.html.
 */
#ifndef __TK_RECORD_H
#define __TK_RECORD_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <sys/stat.h>

#include "alloc/alloc_budget.h"
#include "core/outfile.h"
#include "tracekit/tracekit.h"

#define REC_MAX_PIDS 8
#define REC_MAX 12		/* cpu, numa, an alloc per -p or the command */
#define REC_MAX_FILES 6
#define REC_MAX_NOTES 16

enum rec_status {
	REC_UNAVAILABLE = 0,	/* not run: why says why */
	REC_FAILED,		/* opened, but could not start or collect: why */
	REC_OK,			/* ran; its files are written */
};

struct rec_coll {
	char name[32];			/* "cpu", "numa", "alloc", "alloc-1234": file names */
	char title[96];			/* "CPU", "Allocations of 1234 (redis-server)" */
	enum tk_collector coll;
	int pid;			/* alloc: its process */
	bool owns_command;		/* the session that started -- CMD */
	struct tk_session *s;
	struct tk_result *r;
	enum rec_status status;
	char plan[512];			/* what was chosen and why, as printed */
	char why[512];			/* REC_UNAVAILABLE, REC_FAILED: why */
	char backend[16];
	char describe[512];		/* how it collects, once attached */
	char why_backend[512];		/* why this backend (the snapshot's reason) */
	/* the worker thread that runs the session */
	pthread_t th;
	bool thread;
	atomic_bool done;
	int run_err;
	int finish_err;			/* tk_session__finish, on the worker */
	enum tk_session_end end;
	/*
	 * A process's allocations: the plan within the budget and, when sampled,
	 * the guard that ends the profile early if its cost rises past it.
	 */
	struct tk_alloc_budget budget;
	char files[REC_MAX_FILES][48];
	int nr_files;
};

/* The thread stacks at the start and the end of the window (record_stacks.c). */
#define REC_STACKS_FILES 5
struct rec_stacks {
	bool on;			/* not --no-stacks */
	enum rec_status status;
	char plan[256];			/* its backend and scope, as printed */
	char backend[16];
	char why_backend[512];
	char why[512];			/* REC_UNAVAILABLE, REC_FAILED: why */
	struct tk_stacks_result *res;	/* the snapshots: the start's, the end's */
	char *start_text, *start_pb;	/* the start snapshot rendered when taken */
	size_t start_text_len, start_pb_len;
	bool have_end;
	char end_why[512];		/* why there is no end snapshot */
	size_t stuck;			/* threads that did not move between them */
	char files[REC_STACKS_FILES][24];
	int nr_files;
};

struct rec {
	struct rec_coll c[REC_MAX];
	int n;
	struct tk_caps *caps;
	struct tk_caps *alloc_caps;	/* allocation scope, for alloc's plan and its first session */
	char *const *argv;		/* -- CMD, or NULL */
	int pids[REC_MAX_PIDS];
	int nr_pids;
	const char *cgroup;
	int freq_hz;
	double budget;			/* extra slowdown allowed beyond cpu sampling (0.02) */
	double duration;		/* asked for, seconds; 0: until the command exits */
	bool off_cpu;
	/* the window */
	struct timespec start_rt, end_rt;
	double elapsed;			/* seconds */
	const char *end_reason;		/* "duration", "interrupted", "command exited", ... */
	int exit_status;		/* the command's wait status, -1 without one */
	int cmd_stop_sig;		/* the signal that ended it, still running at the end */
	double self_cpu_s;		/* tracekit's own user + system time in the window */
	char host[256];
	char notes[REC_MAX_NOTES][256];	/* things to say in the bundle (and said on stderr) */
	int nr_notes;
	struct rec_stacks stk;
};

/* Add a note to the bundle and say it on stderr. */
void rec_note(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* @s into HTML text: < > & " ' escaped (every name another user chose goes through it). */
void rec_put_html(FILE *f, const char *s);

/*
 * The thread stacks (record_stacks.c): the start snapshot (on the main thread,
 * once the sessions run), the end one (before they are stopped), their files
 * in the bundle (0, or a negative errno of the file system: a failure of the
 * stacks' own is said, and the rest of the bundle written), their parts of
 * summary.txt, manifest.json's collectors and index.html.
 */
struct tk_json;
void rec_stacks__start(struct rec *r);
void rec_stacks__end(struct rec *r);
int rec_stacks__write(struct rec *r, int dir);
void rec_stacks__summary(const struct rec *r, FILE *f);
void rec_stacks__manifest(const struct rec *r, struct tk_json *j);
void rec_stacks__html_row(const struct rec *r, FILE *f);
void rec_stacks__html(const struct rec *r, FILE *f);
void rec_stacks__free(struct rec *r);

/*
 * Write the bundle into the directory open as @dir (which exists and is
 * empty; every file by descriptor, never by a path that could be swapped):
 * caps.json, the collectors' files, summary.txt, manifest.json, index.html.
 * 0, or a negative errno after saying which file could not be written.
 */
int rec_write_bundle(struct rec *r, int dir);

/*
 * Where the bundle goes (record_bundle.c): DIR, or DIR.tar.gz with --tar,
 * made in "DIR.tmp.XXXXXX" beside it (a random name no one can take in
 * advance, 0700), which is held open from the start and written through its
 * descriptor only: a name swapped for a link meanwhile is never written
 * through. The tar file is opened (its temporary file) at the start too.
 */
struct rec_out {
	bool tar;
	char base[PATH_MAX];		/* DIR */
	char final[PATH_MAX + 16];	/* DIR or DIR.tar.gz */
	char parent[PATH_MAX];
	char top[NAME_MAX + 1];		/* DIR's last part: the tar's top directory */
	char tmpname[NAME_MAX + 1];	/* the bundle's directory in parent */
	char shown[2 * PATH_MAX];	/* parent/tmpname, for messages */
	int pdfd, bdfd;			/* parent, the bundle's directory */
	struct stat bst;		/* the bundle's directory as made */
	struct tk_outfile tarf;		/* DIR.tar.gz, held from the start */
	bool made, done;
};
/*
 * Before the window: refuse what cannot be written (a DIR that exists, a tar
 * name past ustar's limit, a missing parent), hold the tar file, make the
 * bundle's directory. 0, or the exit code after saying why.
 */
int rec_out__open(struct rec_out *o, const struct rec *r, const char *out, bool tar);
/*
 * After it: write the bundle, then pack it into the tar or rename it DIR. A
 * failure (a file, the tar: ENOSPC, EIO) keeps the directory, named DIR when
 * it can be, and says where it is. 0, or EXIT_FAILURE after saying why.
 */
int rec_out__finish(struct rec_out *o, struct rec *r);
/* Close; an unfinished bundle (no window) is removed. */
void rec_out__close(struct rec_out *o);

/*
 * Every name the bundle's files will have fits a tar under @top (ustar: 99
 * bytes for "@top/NAME"): checked before the window, so that no capture is
 * lost for a name. The longest NAME into @longest.
 */
bool rec_names_fit_tar(const struct rec *r, const char *top, char *longest, size_t size);

#endif /* __TK_RECORD_H */
