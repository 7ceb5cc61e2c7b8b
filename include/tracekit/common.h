/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtracekit: what every part of the API shares.
 *
 * Conventions (libbpf's): a function returning int returns 0 or a negative
 * errno; one returning a pointer returns NULL and sets errno. Library code
 * never prints: messages go to the log callback the caller gives. Option
 * structs start with `size_t sz`, set with TK_OPTS_SZ; fields a caller does
 * not know about are zero, and zero is always the default.
 */
#ifndef __TRACEKIT_COMMON_H
#define __TRACEKIT_COMMON_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TK_OPTS_SZ(type) sizeof(struct type)

enum tk_log_level {
	TK_LOG_WARN = 0,
	TK_LOG_INFO,
	TK_LOG_DEBUG,
};

/*
 * Where a session's messages go: libbpf's (verifier logs, refused loads) and
 * libtracekit's own. Called on the thread that runs the session's call.
 */
typedef void (*tk_log_fn)(void *ctx, enum tk_log_level level, const char *fmt, va_list ap);

enum tk_backend {
	TK_BACKEND_NONE = 0,	/* as an option: choose from the capability snapshot */
	TK_BACKEND_BPF,
	TK_BACKEND_PERF,
	TK_BACKEND_JEMALLOC,
	TK_BACKEND_VMSTAT,
	TK_BACKEND_PROC,	/* stacks: /proc/PID/task/TID files and /proc/PID/mem */
};

enum tk_collector {
	TK_COLLECT_CPU,
	TK_COLLECT_ALLOC,
	TK_COLLECT_NUMA,
	TK_COLLECT_STACKS,
	TK_COLLECT__COUNT,
};

/* How user stacks are walked, for the collectors that take them. */
enum tk_unwind_mode {
	TK_UNWIND_AUTO = 0,		/* CFI where the kernel allows it, else frame pointers */
	TK_UNWIND_FP,			/* frame pointers only (the kernel's bpf_get_stack) */
	TK_UNWIND_CFI,			/* CFI; fail when it cannot be had */
};

/* "auto", "fp", "cfi" → mode; -EINVAL otherwise. */
int tk_unwind_mode__parse(const char *s, enum tk_unwind_mode *mode);
const char *tk_unwind_mode__name(enum tk_unwind_mode mode);

/* "bpf", "perf", "jemalloc", "vmstat", "proc" ("none" for TK_BACKEND_NONE) */
const char *tk_backend__name(enum tk_backend b);
/* "cpu", "alloc", "numa", "stacks" */
const char *tk_collector__name(enum tk_collector c);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *tk_version(void);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_COMMON_H */
