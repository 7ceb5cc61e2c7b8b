/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the tracekit subcommands share: error reporting, option parsing helpers. */
#ifndef __TK_CLI_H
#define __TK_CLI_H

#include <stdarg.h>
#include <signal.h>
#include <limits.h>
#include <stdbool.h>

#include "core/outfile.h"
#include "tracekit/tracekit.h"

#define EXIT_USAGE 2
/*
 * Standard output was closed before all of it was written (`| head`): what a
 * shell reports for a command SIGPIPE killed (128 + 13). The commands ignore
 * SIGPIPE, so the -o files are still written whole, and say it this way.
 */
#define EXIT_STDOUT_CLOSED 141

struct cli_env {
	bool verbose;
	bool json;		/* errors as JSON on stdout */
	enum tk_unwind_mode unwind;	/* --unwind (collectors that take user stacks) */
	size_t unwind_mem;	/* --unwind-mem, in bytes; 0: the default */
	bool no_jit_ask;	/* --no-jit-ask: JVMs are not asked for their perf maps */
};

extern struct cli_env env;

/* Print one error (plain on stderr, or JSON with --json); returns @code. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error of subcommand @cmd (NULL: of tracekit itself); returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A positive PID or -EINVAL. */
int parse_pid(const char *s, int *pid);
/* A whole number in [@min, @max] or -EINVAL. */
int parse_long(const char *s, long min, long max, long *out);
/* The log callback of the commands' sessions: warnings and information on stderr, all with -v. */
void cli_log(void *ctx, enum tk_log_level level, const char *fmt, va_list ap);
/* True when @argv (up to "--") contains @opt. */
bool has_option(int argc, char **argv, const char *opt);

/* CLOCK_MONOTONIC in seconds. */
double mono_s(void);
/* A number of seconds (fractions allowed) in [@min, @max], or -EINVAL. */
int parse_seconds(const char *s, double min, double max, double *out);

/* The -o files of a profiling command, and their formats. */
#define OUTPUTS_MAX 8
struct outputs {
	const char *path[OUTPUTS_MAX];
	enum tk_format fmt[OUTPUTS_MAX];
	int n;
	const char *format;	/* --format, or NULL */
	/* each -o but "-", held from outputs_open to the end (f NULL: none) */
	struct tk_outfile held[OUTPUTS_MAX];
};
/* Say why output @path cannot be written (@err a negative errno), with what to do; EXIT_FAILURE. */
int output_error(const char *cmd, const char *path, int err);
/* Add one -o; returns 0 or a usage error's exit code. */
int outputs_add(struct outputs *o, const char *cmd, const char *path);
/* Formats from --format or the names (stdout text when none); 0 or a usage error's code. */
int outputs_resolve(struct outputs *o, const char *cmd);
#define TK_FORMAT_BIT(f) (1u << (f))
#define TK_FORMATS_ALL                                                                        \
	(TK_FORMAT_BIT(TK_FORMAT_PPROF) | TK_FORMAT_BIT(TK_FORMAT_FOLDED) |                  \
	 TK_FORMAT_BIT(TK_FORMAT_SVG) | TK_FORMAT_BIT(TK_FORMAT_JSON) |                      \
	 TK_FORMAT_BIT(TK_FORMAT_TEXT))
/* The same, of the formats in @allowed (TK_FORMAT_BIT()s) only: the others are usage errors. */
int outputs_resolve_in(struct outputs *o, const char *cmd, unsigned int allowed);
/*
 * Before the capture: refuse an output that cannot be written (a directory, a
 * symlink, a missing or read-only directory, a FIFO nobody reads, a FIFO or
 * device of another user), so that no capture is taken for nothing. Each is
 * opened and held to the end (tk_outfile): a file's temporary file, renamed
 * over the name once written (whatever another user put at the name meanwhile
 * is replaced, never written through); our FIFO or device, since closing a
 * FIFO would end its reader. 0, or EXIT_FAILURE after saying why.
 */
int outputs_open(struct outputs *o, const char *cmd);
/* Close what outputs_open holds, writing nothing. */
void outputs_abort(struct outputs *o);
/*
 * Write every output whole or not at all, each even when another failed: 0,
 * EXIT_FAILURE (after saying why), or EXIT_STDOUT_CLOSED when only stdout's
 * reader had gone.
 */
int outputs_write(struct outputs *o, const char *cmd, const struct tk_result *r, int top);

/*
 * --rotate: the -o names of period @k (from 1): "out.pb.gz" → "out.0001.pb.gz"
 * (a name without a format extension gets ".0001" at its end), in @names.
 * Refuses (a usage error's exit code) an output that is not a file to name:
 * standard output, a FIFO, a device; 0 otherwise.
 */
int outputs_rotating(const struct outputs *o, const char *cmd);
void outputs_period(const struct outputs *o, unsigned int k, struct outputs *out,
		    char (*names)[PATH_MAX]);

/* How a collecting command runs its session (cli_session). */
struct cli_run {
	const char *cmd;		/* "cpu", "alloc", "numa" */
	double duration, interval;	/* seconds; 0: none */
	bool rotate;			/* each interval to its own files (outputs_period) */
	struct outputs *outs;		/* opened (outputs_open); written or aborted */
	int top;
	char *const *argv;		/* the command, for its exit status */
	/* called about twice a second once attached (the session's thread); may be NULL */
	void (*tick)(struct tk_session *s, double elapsed, void *arg);
	void *tick_arg;
};
/* Start-up is over: the caches kept for it (the kernel's BTF) go, and the heap is trimmed. */
void cli_startup_over(void);
/*
 * Start @s, run it (status line on a terminal, -i reports on stdout; SIGINT,
 * SIGTERM and SIGHUP end it, SIGPIPE is ignored), finish, write the outputs;
 * frees @s. Returns the exit code.
 */
int cli_session(struct tk_session *s, const struct cli_run *run);

/*
 * The options every collecting command (cpu, alloc, numa) shares, by these
 * codes in its struct option table (CLI_OUTPUT_OPTIONS).
 */
enum { CLI_OPT_FORMAT = 1000, CLI_OPT_JSON, CLI_OPT_TOP, CLI_OPT_UNWIND, CLI_OPT_UNWIND_MEM,
       CLI_OPT_NO_JIT_ASK };
#define CLI_OUTPUT_OPTIONS                                                         \
	{ "output", required_argument, NULL, 'o' },                                \
	{ "format", required_argument, NULL, CLI_OPT_FORMAT },                     \
	{ "json", no_argument, NULL, CLI_OPT_JSON },                               \
	{ "top", required_argument, NULL, CLI_OPT_TOP },                           \
	{ "verbose", no_argument, NULL, 'v' },                                     \
	{ "help", no_argument, NULL, 'h' }
/* How user stacks are walked (env.unwind, env.unwind_rows), for commands that take them. */
#define CLI_UNWIND_OPTIONS                                                         \
	{ "unwind", required_argument, NULL, CLI_OPT_UNWIND },                     \
	{ "unwind-mem", required_argument, NULL, CLI_OPT_UNWIND_MEM }
#define CLI_UNWIND_USAGE                                                                 \
	"      --unwind MODE    user stacks: auto (default: CFI from .eh_frame where\n"     \
	"                       the kernel allows, else frame pointers), cfi, or fp\n"      \
	"      --unwind-mem MIB memory for unwind tables (default 16, 1 to 4096)\n"
/* Whether JVMs are asked for their perf maps (env.no_jit_ask): cpu, alloc, record. */
#define CLI_JIT_OPTIONS { "no-jit-ask", no_argument, NULL, CLI_OPT_NO_JIT_ASK }
#define CLI_JIT_USAGE                                                                    \
	"      --no-jit-ask     do not ask JVMs for their perf maps (by default a JVM\n"    \
	"                       the capture samples is asked, as 'jcmd PID\n"             \
	"                       Compiler.perfmap' asks, as its own user, and stderr\n"     \
	"                       says so; never one that does not catch SIGQUIT or\n"       \
	"                       has attach disabled)\n"
#define CLI_CONTINUE (-1)
/*
 * Handle getopt_long's answer @c for command @cmd when it is a shared option
 * (-o, --format, --json, --top, -v, -h) or getopt's complaint (':' a missing
 * argument, '?' an unknown option): CLI_CONTINUE to go on, or the exit code
 * to return (0 after printing @usage for -h; EXIT_USAGE after saying what
 * was wrong).
 */
int common_option(const char *cmd, int c, char **argv, const char *usage, struct outputs *o,
		  long *top);

int cmd_alloc(int argc, char **argv);
int cmd_caps(int argc, char **argv);
int cmd_cpu(int argc, char **argv);
int cmd_numa(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif /* __TK_CLI_H */
