/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Inside an allocation session: what alloc.c shares with its backends. */
#ifndef __TK_ALLOC_INT_H
#define __TK_ALLOC_INT_H

#include <sys/types.h>

#include "alloc/alloc.h"

struct tk_alloc;

struct tk_alloc_backend {
	const char *name;			/* "bpf", "jemalloc" */
	/*
	 * Prepare (load BPF, find the allocator's functions...). Called after the
	 * command (if any) was forked and is held before exec; a->child_env was
	 * already applied by then, see prepare_env. @why gets the reason.
	 */
	int (*open)(struct tk_alloc *a, char *why, size_t why_sz);
	/*
	 * Before the fork of argv: add what the command's environment needs
	 * (tk_alloc__setenv). May be NULL.
	 */
	int (*prepare_env)(struct tk_alloc *a, char *why, size_t why_sz);
	/*
	 * Attach. Called before the command is released (a->child > 0 and held),
	 * and once more with a->after_exec set when the backend asked for it
	 * (a->attach_after_exec: the agent holds the command after ld.so has
	 * mapped its libraries, so uprobes can be placed on the allocator found).
	 */
	int (*start)(struct tk_alloc *a, char *why, size_t why_sz);
	int (*poll)(struct tk_alloc *a, int timeout_ms);
	/* Stop and deliver every outstanding record to the session. */
	int (*drain)(struct tk_alloc *a);
	/*
	 * Optional: build the profile itself (jemalloc: from a dump). NULL: the
	 * session builds it from the records. @final: the capture ends.
	 */
	int (*build)(struct tk_alloc *a, uint64_t min_age_ns, bool final, struct tk_profile **out);
	void (*free)(struct tk_alloc *a);
};

extern const struct tk_alloc_backend tk_alloc_backend_bpf;
extern const struct tk_alloc_backend tk_alloc_backend_jemalloc;

#define TK_ALLOC_MAX_ENV 8

struct tk_alloc_live;			/* alloc.c's tables */

struct tk_alloc {
	struct tk_alloc_opts opts;
	const struct tk_caps *caps;
	const struct tk_alloc_backend *be;
	void *priv;				/* the backend's state */
	enum tk_alloc_hook hook;
	uint64_t sample_bytes;			/* sampled mode's mean; 0 in full mode */
	char describe[512];			/* what is hooked, for notes and -v */
	char preload_dir[4096];			/* where libtkalloc.so/libtkagent.so are */

	/* the target */
	pid_t pid;				/* -p, or the command */
	pid_t child;				/* the command, 0 for -p */
	int release_fd;				/* write a byte: the held command execs */
	int exec_err_fd;			/* errno of a failed exec; EOF on success */
	/*
	 * libtkagent.so's descriptor (parent end of a socketpair; -1 when the
	 * command has no agent). The session creates it before the fork when the
	 * command's environment names TK_ENV_AGENT_HOLD or TK_ENV_AGENT_JEMALLOC
	 * (the backend's prepare_env adds the latter), sets TK_ENV_AGENT_FD, does
	 * the hold handshake itself, and leaves the descriptor to the backend for
	 * dump requests.
	 */
	int agent_fd;
	/*
	 * Set by the session before prepare_env: uprobes on a dynamically linked
	 * command, whose allocator is known only once ld.so has mapped it; the
	 * agent holds it there and be->start is called again with after_exec.
	 */
	bool attach_after_exec;
	bool after_exec;			/* set for that second start() call */
	char *env[TK_ALLOC_MAX_ENV];		/* "NAME=VALUE" added to the command's */
	int nr_env;

	struct tk_symbolizer *sym;
	struct tk_alloc_live *live;		/* session tables */
	uint64_t losses[TK_ALOSS__COUNT];
	struct {
		double objs, bytes;		/* weighted, as the in-use figures are */
	} released[2];				/* by enum tk_alloc_end (tk_alloc__release) */
	uint64_t calls;				/* allocator calls counted by the backend */
	uint64_t growth_events;
	int64_t start_ns;			/* CLOCK_REALTIME at start */
	int64_t start_mono_ns;
	bool started;
	bool running;				/* the command runs traced: start() all done */
	bool finished;

	/*
	 * Optional, the backend's: true when generation @gen of @pid is known to
	 * be over (exec'd, exited), so its maps are no longer to be read.
	 */
	bool (*gen_over)(struct tk_alloc *a, uint32_t pid, uint32_t gen);

	/* unwinding (the bpf backend): after each capture */
	void (*captured)(struct tk_alloc *a, uint32_t pid, uint32_t gen);
	uint64_t unwind[UNW_CNT__COUNT];	/* the unwinder's counters (enum unw_counter) */
	struct tk_unw_info unw_info;
	bool unwinding;				/* user stacks are walked with CFI rows */
	char unwind_note[256];			/* why not, when CFI was wanted */
	char kernel_note[256];			/* what this kernel made the loader change */
	char exit_note[256];			/* why exits release nothing, if so */
};

/*
 * A session with @be and nothing started: no backend choice, no command, no
 * open(). tk_alloc__open builds on it; unit tests feed records to it.
 */
int tk_alloc__new_bare(const struct tk_alloc_opts *opts, const struct tk_alloc_backend *be,
		       struct tk_alloc **out);

/* alloc_command.c: where libtkalloc.so and libtkagent.so are (a->preload_dir). */
void tk_alloc__find_preload_dir(struct tk_alloc *a);
/* alloc_command.c: the backend and hook from opts and @caps; -errno and @why when none fits. */
int tk_alloc__choose(struct tk_alloc *a, const struct tk_caps *caps, char *why, size_t why_sz);
/* alloc_command.c: the command's environment, then the command started held before exec. */
int tk_alloc__start_command(struct tk_alloc *a, char *why, size_t why_sz);

/* Add "NAME=VALUE" to the command's environment (prepare_env). */
int tk_alloc__setenv(struct tk_alloc *a, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* __TK_ALLOC_INT_H */
