/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Test fixtures: a fake /proc and /sys tree in a fresh temporary directory,
 * a fake kernel probe for tk_caps__snapshot(), and a strict JSON checker.
 *
 * Paths given to the fx_* functions are relative to the fixture root:
 * "proc/sys/kernel/perf_event_paranoid", "sys/kernel/btf/vmlinux". Functions
 * returning int return 0 or a negative errno; none of them prints.
 */
#ifndef __TK_TEST_FIXTURE_H
#define __TK_TEST_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "caps/caps.h"

struct fx {
	char root[PATH_MAX];	/* the mkdtemp directory */
	char proc[PATH_MAX];	/* root/proc: opts.proc_root */
	char sys[PATH_MAX];	/* root/sys: opts.sys_root */
};

/* A new tree with empty proc/ and sys/; NULL with errno set on failure. */
struct fx *fx_new(void);
/* Remove the whole tree (symlinks are removed, never followed) and free @fx. */
void fx_free(struct fx *fx);

/* root/@rel into @buf. */
int fx_path(const struct fx *fx, const char *rel, char *buf, size_t size);
/* mkdir -p root/@rel. */
int fx_mkdir(struct fx *fx, const char *rel);
/* Create or truncate root/@rel with @text, creating parent directories. */
int fx_write(struct fx *fx, const char *rel, const char *text);
int fx_writef(struct fx *fx, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append @text to root/@rel, creating it (and its parents) when missing. */
int fx_append(struct fx *fx, const char *rel, const char *text);
/* root/@rel becomes a symlink to @target (taken as is), parents created. */
int fx_symlink(struct fx *fx, const char *target, const char *rel);
/* Remove root/@rel: a file, a symlink (not its target) or a whole directory. */
int fx_remove(struct fx *fx, const char *rel);
/* Write @text gzip-compressed (proc/config.gz). */
int fx_write_gz(struct fx *fx, const char *rel, const char *text);
/*
 * Write a small raw BTF file (as /sys/kernel/btf/vmlinux is) holding an int,
 * a typedef of it for each name in @typedefs ("btf_trace_sched_process_exec")
 * and a function for each name in @funcs; both lists end with NULL, either
 * may be NULL.
 */
int fx_write_btf(struct fx *fx, const char *rel, const char *const *typedefs,
		 const char *const *funcs);
bool fx_exists(const struct fx *fx, const char *rel);

/*
 * The baseline, modelled on the development machine (Debian 12, kernel 6.18,
 * root, one NUMA node, cgroup v1 memory controller beside an empty v2
 * "unified" hierarchy, no tracefs, no securityfs, no PMU): every check of the
 * snapshot finds its files, and each test changes only what it is about.
 */
#define FX_RELEASE "6.18.44-fc-v657"
#define FX_PID 4242
#define FX_CGROUP "/process_api/58a0bcaff83c3b17e2cb1228358f6b43"
#define FX_CAPEFF_ROOT "000001ffffffffff"
int fx_base_host(struct fx *fx);

/*
 * "No BTF": the baseline on a kernel without kernel BTF, as a mount of an empty
 * file over /sys/kernel/btf/vmlinux simulates it on the development machine:
 * no sys/kernel/btf/vmlinux (nor any vmlinux file where libbpf looks next), a
 * tracefs mounted at /sys/kernel/tracing listing the events the snapshot
 * looks for, and a kallsyms as that machine's is, without
 * CONFIG_KALLSYMS_ALL: __traceiter_NAME functions, no __tracepoint_NAME data.
 */
int fx_no_btf_host(struct fx *fx);

/* proc/self/status of the baseline with other CapEff and Seccomp values. */
int fx_set_status(struct fx *fx, const char *capeff, int seccomp);

/* ---- the fake probe ------------------------------------------------------- */

/* What fx_probe() answers for each probe: 0 or a negative errno. */
extern int fx_probe_result[TK_PROBE__COUNT];
/* Its message; NULL: a default one naming the probe; "": leave ctx->msg empty. */
extern const char *fx_probe_msg[TK_PROBE__COUNT];
/* Copied into ctx->core by TK_PROBE_CORE when it succeeds. */
extern struct tk_core_facts fx_probe_core;
/* Copied into ctx->user_only (perf events only with exclude_kernel). */
extern bool fx_probe_user_only[TK_PROBE__COUNT];
/* How often each probe was asked, the BTF path and parsed BTF it was last given. */
extern int fx_probe_calls[TK_PROBE__COUNT];
extern char fx_probe_btf_path[PATH_MAX];
extern bool fx_probe_had_btf;

/* Everything succeeds, no calls counted, core facts zero. */
void fx_probe_reset(void);
int fx_probe(enum tk_probe which, struct tk_probe_ctx *ctx);
const char *fx_probe_name(enum tk_probe which);

/* ---- JSON ------------------------------------------------------------------ */

/*
 * Strict RFC 8259 check of @len bytes of @text: one value, whitespace around
 * it, valid escapes and UTF-8, no raw control characters, no duplicate member
 * names. Returns 0, or -EINVAL with what and where in @err (may be NULL).
 */
int fx_json_check(const char *text, size_t len, char *err, size_t errsz);

/* The length of the longest line of @text, in bytes (the text is ASCII). */
size_t fx_longest_line(const char *text, const char **where);

#endif /* __TK_TEST_FIXTURE_H */
