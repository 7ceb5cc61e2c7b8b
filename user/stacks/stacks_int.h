/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * tracekit stacks, inside: the raw per-thread record both backends fill
 * (stacks_iter.c from the task iterator, stacks_proc.c from /proc), the
 * parsers of /proc text (stacks_parse.c, fuzzed), what a wait is
 * (stacks_wait.c), and the common code that walks, names and groups
 * (stacks_take.c, stacks_scope.c, stacks_build.c, stacks_oncpu.c, stacks_write.c).
 */
#ifndef __TK_STACKS_INT_H
#define __TK_STACKS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracekit/stacks.h"
#include "core/log.h"
#include <linux/types.h>

#include "bpf/unwind.h"
#include "bpf/unwind_py.h"

#define STK_MAX_KFRAMES 64
#define STK_MAX_UFRAMES 127
#define STK_MAX_PYFRAMES 128		/* Python frames of one thread */

/* One kernel frame: an address (bpf) or a name as /proc/PID/task/TID/stack gives it. */
struct stk_kframe {
	uint64_t addr;
	char *name;			/* proc: "anon_pipe_read" (malloc'ed); bpf: NULL */
};

struct stk_raw {
	uint32_t pid, tid, ns_tid;
	char comm[16];
	char state;			/* R S D T t Z X I */
	bool on_cpu, kthread, torn, have_regs, mmap_busy;
	int64_t nr;			/* syscall: -1 none, -2 unknown */
	uint64_t args[6];
	uint64_t ip, sp, bp;
	uint64_t lr;			/* arm64's x30: the task iterator's saved one or a
					   perf sample's; 0 unknown (proc: /proc has no LR) */
	int64_t off_cpu_ns;		/* -1 unknown */
	uint64_t switches;
	bool have_switches;
	char wchan[64];			/* "" none */
	struct stk_kframe kf[STK_MAX_KFRAMES];
	uint32_t nk;
	int kstack_err;			/* 0, or why there is no kernel stack (-EPERM...) */
	bool sampled;			/* registers and copy from a perf sample (on a CPU) */
	const uint8_t *copy;		/* the user stack from sp (bpf, perf sample), NULL */
	uint32_t copy_len;
	uint64_t fsbase;		/* bpf: thread.fsbase, its pthread_t; 0 unknown (proc) */
};

/* A growing array of raw records. */
struct stk_raws {
	struct stk_raw *v;
	size_t n, cap;
};
struct stk_raw *stk_raws__add(struct stk_raws *r);
void stk_raws__clear(struct stk_raws *r);

/* Loss counters (enum order = the output's order). */
enum stk_loss {
	STK_L_PROCESS_GONE,		/* a process exited before it was read */
	STK_L_THREAD_GONE,		/* a thread exited while it was read */
	STK_L_RUNNING_NO_STACK,		/* on a CPU: no saved user registers */
	STK_L_TORN,			/* ran while it was read (retried, still moving) */
	STK_L_USER_READ_FAILED,		/* its stack memory could not be read */
	STK_L_KSTACK_DENIED,		/* /proc/.../stack refused (no CAP_SYS_ADMIN) */
	STK_L_MMAP_LOCK_BUSY,		/* its mm's mmap_lock write-held: no copy */
	STK_L_UNWIND_PARTIAL,		/* a user stack that did not reach its outermost frame */
	STK_L_UNSYMBOLIZED,		/* frames with no function name */
	STK_L_SEQ_RETRIES,		/* iterator records that did not fit the seq buffer at once */
	/* Python frames (stacks_py.c): threads, each cause once per thread, except: */
	STK_L_PY_UNKNOWN,		/* processes: CPython tracekit cannot walk */
	STK_L_PY_UNMATCHED,		/* processes: thread states not tied to distinct threads */
	STK_L_PY_RUNNING,		/* on a CPU or runnable when read: not read */
	STK_L_PY_MOVED,			/* switched while its Python frames were read: dropped */
	STK_L_PY_TSTATE,		/* no thread state of its own */
	STK_L_PY_READ_FAULT,		/* a frame could not be read */
	STK_L_PY_MISALIGNED,		/* interpreter frames and the frame chain disagree */
	STK_L_PY_DEPTH,			/* frames cut at STK_MAX_PYFRAMES */
	STK_L_PY_NAME,			/* frames: a code object's names unreadable */
	STK_L_PY_LINE,			/* frames: the line could not be decoded */
	STK_L__COUNT,
};
const char *stk_loss__name(enum stk_loss l);

/* ---- the bpf backend (stacks_iter.c) --------------------------------------------------- */

struct stk_iter;
struct stk_iter_opts {
	bool filter_pids;
	uint32_t state_mask;
	bool no_kernel, no_user;
	bool plain;			/* the non-sleepable program only (tests) */
	const struct tk_log *log;
};
/*
 * Load the sleepable iterator (it copies user stacks), else the plain one.
 * 0 or a negative errno with @why said.
 */
int stk_iter__open(const struct stk_iter_opts *o, struct stk_iter **out, char *why,
		   size_t why_sz);
bool stk_iter__sleepable(const struct stk_iter *it);
/* Add tgid @pid to the program's scope (filter_pids). */
int stk_iter__add_pid(struct stk_iter *it, uint32_t pid);
/*
 * Run the iterator (one link per pid of @pids when the kernel takes the link's
 * pid, 6.1+; else one over every task) and append a raw record per thread to
 * @out, whose copies point into the iterator's buffer (valid until the next
 * run). Returns 0 or a negative errno; @retries gets the seq retries.
 */
int stk_iter__run(struct stk_iter *it, const uint32_t *pids, size_t nr, struct stk_raws *out,
		  uint64_t *retries);
void stk_iter__free(struct stk_iter *it);

/* ---- the proc backend (stacks_proc.c) ------------------------------------------------- */

/*
 * Append a raw record for each thread of @pid (under @proc_root) whose state
 * is in @state_mask (0: all); @kernel: read /proc/.../stack and wchan.
 * Returns 0, -ESRCH when the process is gone, another negative errno.
 * *@kstack_denied: set when the kernel refused /proc/.../stack; @threads_gone
 * counts the threads that exited while they were read.
 */
int stk_proc__read(const char *proc_root, uint32_t pid, uint32_t state_mask, bool kernel,
		   struct stk_raws *out, bool *kstack_denied, uint64_t *threads_gone);

/* ---- threads on a CPU (stacks_oncpu.c) ------------------------------------------------ */

struct stk_oncpu {
	uint32_t tid;
	bool ok;			/* sampled: */
	uint64_t ip, sp, bp;
	uint64_t lr;			/* arm64: x30 */
	uint8_t *stack;			/* malloc'ed, from sp; the caller frees it */
	uint32_t len;
};
/*
 * One perf sample (task clock, 1 ms of its own CPU time) of each of @n threads, all
 * at once, for at most @timeout_ms. 0 when any event opened, else perf_event_open's
 * error (-EACCES: perf_event_paranoid).
 */
int stk_oncpu__sample(struct stk_oncpu *q, size_t n, int timeout_ms);

/* ---- parsers of /proc text (stacks_parse.c) -------------------------------------------- */

/*
 * /proc/PID/task/TID/syscall: "running" (-2), "-1 sp pc" (-1: blocked, not in a
 * syscall), "nr a0 a1 a2 a3 a4 a5 sp pc". 0 or -EINVAL.
 */
int stk_parse_syscall(const char *text, int64_t *nr, uint64_t args[6], uint64_t *sp,
		      uint64_t *pc);
/*
 * /proc/PID/task/TID/stat: the comm (between the first '(' and the last ')'), the
 * state and the flags (PF_KTHREAD 0x00200000: a kernel thread).
 */
#define STK_PF_KTHREAD 0x00200000
int stk_parse_stat(const char *text, char comm[16], char *state, uint32_t *flags);
/*
 * A /proc file @name below directory @dfd (or a path from AT_FDCWD), whole up to
 * @size - 1 bytes, NUL-terminated, no symlink followed: the bytes read or -errno.
 */
long stk_read_at(int dfd, const char *name, char *buf, size_t size);
/*
 * /proc/PID/task/TID/stack: "[<0>] name+0x4fa/0x5a0" lines → names in @kf
 * (malloc'ed; free with stk_kframes_free), at most @max. Returns the count or
 * -ENOMEM.
 */
int stk_parse_kstack(const char *text, struct stk_kframe *kf, int max);
void stk_kframes_free(struct stk_kframe *kf, uint32_t n);
/* /proc/PID/task/TID/schedstat's third field (switch-ins). 0 or -EINVAL. */
int stk_parse_schedstat(const char *text, uint64_t *pcount);
/* The last number of a "NSpid:" line of a status text; 0 when none. */
uint32_t stk_parse_nspid(const char *status);
/* The state letter's class (enum tk_stacks_state); 0 unknown. */
uint32_t stk_state_class(char state);

/* ---- system calls (stacks_sysnr.c) and waits (stacks_wait.c) ----------------------------- */

/* Whose numbering a system call number is in: HOST is the architecture tracekit runs on. */
enum stk_arch {
	STK_ARCH_HOST = 0,
	STK_ARCH_X86_64,
	STK_ARCH_ARM64,
};
/* The name of system call @nr in @arch's numbering ("futex"); NULL unknown. */
const char *stk_syscall_name_of(enum stk_arch arch, int64_t nr);
/* The same on this architecture. */
const char *stk_syscall_name(int64_t nr);

/* Read @len bytes at @addr of the process (its /proc/PID/mem fd): 0 or a negative errno. */
typedef int (*stk_mem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * A process's pipes, read once per call (its fd directory, each pipe's fdinfo flags):
 * which fd holds which pipe open for writing. Owned by the caller; zeroed to start.
 */
struct stk_fd_ent {
	long fd;
	uint64_t pipe_ino;
	bool wronly;
};
struct stk_fdcache {
	bool built;
	struct stk_fd_ent *v;
	size_t n;
};
void stk_fdcache__free(struct stk_fdcache *c);

struct stk_wait_in {
	const char *proc_root;
	uint32_t pid;
	enum stk_arch arch;		/* @nr's numbering (HOST, zero: this one's) */
	int64_t nr;
	const uint64_t *args;
	const char *const *callers;	/* the first user frames' functions, leaf first
					   ("__lll_lock_wait", "pthread_mutex_lock"); NULL */
	int nr_callers;
	stk_mem_fn mem;
	void *mem_ctx;
	struct stk_fdcache *fds;	/* the process's pipes (built at first use) */
};
struct stk_wait_out {
	char text[192];			/* "" none */
	uint32_t holder_ns_tid;		/* as the process sees it; 0 none */
	bool weak;			/* told by the word's shape alone: a holder only if it
					   is one of the process's threads, else say @alt */
	char alt[96];
};
void stk_wait__describe(const struct stk_wait_in *in, struct stk_wait_out *out);


/* ---- the snapshot's state (stacks_take.c), shared by its parts ------------------------ */

struct tk_symbolizer;
struct tk_unw_store;


struct tk_py_tstate;

struct stk_proc {
	uint32_t pid;
	int memfd;			/* /proc/PID/mem, -1 none */
	bool captured, have_unw;
	struct unw_proc unw;
	struct stk_fdcache fds;		/* its pipes, for this snapshot */
	int py;				/* 0 not asked; 1 CPython ready; -1 none */
	struct unw_py upy;		/* its entry, as the kernel's walk would have it */
	uint64_t py_snap;		/* the snapshot its thread states were read for */
	struct tk_py_tstate *ts;	/* its thread states; malloc'ed */
	int nts;			/* their count; -1 refused (not tied to threads) */
};

struct stk_pidset {
	uint32_t *v;
	size_t n, cap;
};

struct stk_result {
	struct tk_stacks_result pub;
	struct tk_stacks_opts o;
	const char *proc_root;
	struct tk_symbolizer *sym;
	struct tk_unw_store *store;
	struct stk_iter *iter;
	struct tk_log log;
	struct stk_proc *procs;
	size_t nprocs, procs_cap;
	struct tk_stacks_snapshot *snaps;
	size_t nsnaps, snaps_cap;
	struct stk_pidset set;		/* the scope: its processes (empty: every process) */
	bool whole;			/* every process */
	bool open;			/* tk_stacks__begin's: more snapshots may be taken */
	struct stk_raws raws;		/* one snapshot's raw records */
	uint64_t loss[STK_L__COUNT];
	struct tk_stacks_loss losses[STK_L__COUNT];
	char *notes[8];
	size_t nr_notes;
	char reason[384];
	bool sample_said;
	uint64_t sampled;		/* threads on a CPU sampled */
	char **sampled_note;		/* its note, said once and kept true */
	uint64_t sampled_noted;
	uint64_t snap_no;		/* snapshots built so far */
	uint64_t py_threads;		/* threads shown with Python frames */
	uint64_t py_procs;		/* processes running CPython walked */
	char **py_note;			/* their note, said once and kept true */
	void **allocs;
	size_t nallocs, allocs_cap;
};


/* Memory that lives as long as the result (NULL: @p freed, out of memory). */
void *stk_keep(struct stk_result *r, void *p);
char *stk_keep_str(struct stk_result *r, const char *s);
void stk_note(struct stk_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The process's entry (its /proc/PID/mem opened), made at first use; NULL: no memory. */
struct stk_proc *stk_proc_of(struct stk_result *r, uint32_t pid);
/* Its maps captured and its unwind rows laid out, once per call. */
void stk_proc_capture(struct stk_result *r, struct stk_proc *p);

/* ---- the scope (stacks_scope.c) ------------------------------------------------------- */

int stk_pidset_add(struct stk_pidset *s, uint32_t pid);
/* The processes of cgroup2 directory @dir and below; 0 or a negative errno, @why said. */
int stk_cgroup_pids(const char *dir, struct stk_pidset *out, char *why, size_t why_sz);
/* Every process under @proc_root. */
int stk_all_pids(const char *proc_root, struct stk_pidset *out);

/* ---- Python frames (stacks_py.c) ------------------------------------------------------ */

/*
 * The user stack of thread @x of @p (@ips, @n frames, leaf first; @sps their stack
 * pointers; @whole: the walk reached the outermost frame) with its Python frames
 * (records, UNW_PY_IS_REC) before the interpreter-loop frames that run them, into @out
 * (@max): the count. @all (@nall): the snapshot's raw threads. Sets @t's python_note.
 */
int stk_py_frames(struct stk_result *r, struct stk_proc *p, const struct stk_raw *x,
		  const struct stk_raw *all, size_t nall, const uint64_t *ips,
		  const uint64_t *sps, int n, bool whole, uint64_t *out, int max,
		  struct tk_stacks_thread *t);
/* Name Python frame @rec of @pid into @f. */
void stk_py_name(struct stk_result *r, uint32_t pid, uint64_t rec, struct tk_stacks_frame *f);
/* Whether @look (a user address of @pid) lies in its interpreter loop. */
bool stk_py_in_loop(struct stk_result *r, uint32_t pid, uint64_t look);
/* The take's Python counters into the losses, and its note. */
void stk_py_report(struct stk_result *r);
/* Free @p's Python state. */
void stk_py_free(struct stk_proc *p);
/* "voluntary_ctxt_switches" + "nonvoluntary_ctxt_switches" of a status text: 0 or -EINVAL. */
int stk_parse_ctxt_switches(const char *status, uint64_t *v);

/* ---- one snapshot's threads, walked and named (stacks_build.c) ------------------------ */

/* The threads of @raws (sorted here) into @s: 0 or a negative errno. */
int stk_build(struct stk_result *r, struct stk_raws *raws, struct tk_stacks_snapshot *s);

#endif /* __TK_STACKS_INT_H */
