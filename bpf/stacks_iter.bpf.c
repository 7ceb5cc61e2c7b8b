// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks: one record per thread in scope, from a task iterator. Nothing
 * is stopped: the program runs with a reference on the task and reads it while it
 * goes on running elsewhere. Per thread: state, scheduler times, saved user
 * registers and syscall, kernel stack, and (the sleepable program, 5.18+) a copy
 * of the user stack from its saved sp, which user space walks with the CFI rows.
 * The switch count is read before the registers and after the copy: a thread
 * that ran between them is flagged torn.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include "arch.bpf.h"
#include "stacks_iter.h"

const volatile bool filter_pids = false;	/* only the tgids of pids */
const volatile __u32 state_mask = 0;		/* enum stk_class; 0: all */
const volatile bool no_kernel = false;
const volatile bool no_user = false;
const volatile __u64 thread_size = 16384;	/* before bpf_task_pt_regs (5.15) */
const volatile bool regs_from_stack = false;	/* that way even with it (tests) */
const volatile bool knames = true;		/* name kernel frames here (bpf_snprintf) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, STK_MAX_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stk_rec);
} recbuf SEC(".maps");

struct stk_copy {
	__u8 b[STK_CHUNK + 4096];	/* the verifier sees each page copy end within */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stk_copy);
} copybuf SEC(".maps");

struct stk_knames {
	/* twice what is used: the verifier sees (n & (2 * STK_KFRAMES - 1)) names end within */
	char n[2 * STK_KFRAMES][STK_KNAME];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stk_knames);
} knamebuf SEC(".maps");

/* Records the seq buffer had no room for at once (the program runs again for them). */
__u64 seq_retries = 0;

/* task_struct.state before 5.14 ("sched: Change task_struct::state", 2f064a59a11f) */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

static __always_inline __u32 state_class(__u32 st, __u32 exit_state)
{
	if (exit_state & (16 | 32))		/* EXIT_DEAD, EXIT_ZOMBIE */
		return STK_Z;
	if (!st)
		return STK_R;
	if (st & 2)				/* TASK_UNINTERRUPTIBLE */
		return (st & 0x400) ? STK_I : STK_D;	/* TASK_NOLOAD: an idle kthread */
	if (st & (4 | 8))			/* __TASK_STOPPED, __TASK_TRACED */
		return STK_T;
	return STK_S;
}

static __always_inline __u64 switches_of(struct task_struct *t)
{
	return BPF_CORE_READ(t, nvcsw) + BPF_CORE_READ(t, nivcsw);
}

static __always_inline void user_regs(struct task_struct *t, struct stk_rec *r)
{
	struct pt_regs *regs = NULL;
	__u64 stk, lr;

	if (!regs_from_stack && bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		regs = (struct pt_regs *)bpf_task_pt_regs(t);
	} else {
		stk = (__u64)BPF_CORE_READ(t, stack);
		if (stk)
			regs = (struct pt_regs *)(stk + thread_size - sizeof(struct pt_regs));
	}
	if (!regs)
		return;
	tk_core_user_regs(regs, &r->ip, &r->sp, &r->bp, &lr, &r->orig_ax, r->args);
#if TK_ARCH_ARM64
	r->lr = lr;
#endif
	r->flags |= STK_F_REGS;
}

/* The record of @t, or NULL when it is out of scope. */
static __always_inline struct stk_rec *fill(struct task_struct *t)
{
	__u32 zero = 0, tgid = BPF_CORE_READ(t, tgid), st, cls, level;
	struct mm_struct *mm;
	struct stk_rec *r;
	struct pid *pid;

	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return NULL;
	st = task_state(t);
	cls = state_class(st, BPF_CORE_READ(t, exit_state));
	if (state_mask && !(state_mask & cls))
		return NULL;
	r = bpf_map_lookup_elem(&recbuf, &zero);
	if (!r)
		return NULL;
	/* volatile: clang 14 turns a plain loop into memset, which BPF cannot call */
	for (int i = 0; i < sizeof(*r) / 8; i++)
		((volatile __u64 *)r)[i] = 0;
	r->size = sizeof(*r);
	r->tid = BPF_CORE_READ(t, pid);
	r->tgid = tgid;
	pid = BPF_CORE_READ(t, thread_pid);
	if (pid) {
		level = BPF_CORE_READ(pid, level);
		bpf_probe_read_kernel(&r->ns_tid, sizeof(r->ns_tid), &pid->numbers[level & 31].nr);
	}
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	r->state = st;
	r->exit_state = BPF_CORE_READ(t, exit_state);
	r->cls = cls;
	r->switches = switches_of(t);
	/*
	 * On a CPU: only a runnable task can be (on 7.2, on_cpu reads non-zero for tasks
	 * blocked in read() or futex: trusted for runnable ones only).
	 */
	if (cls == STK_R && BPF_CORE_READ(t, on_cpu))
		r->flags |= STK_F_ON_CPU;
	r->now = bpf_ktime_get_ns();
	r->last_arrival = BPF_CORE_READ(t, sched_info.last_arrival);
	r->sum_exec = BPF_CORE_READ(t, se.sum_exec_runtime);
	r->prev_sum = BPF_CORE_READ(t, se.prev_sum_exec_runtime);
	mm = BPF_CORE_READ(t, mm);
	if (!mm || (BPF_CORE_READ(t, flags) & 0x00200000))	/* PF_KTHREAD */
		r->flags |= STK_F_KTHREAD;
	else if (!no_user)
		user_regs(t, r);
#if defined(__TARGET_ARCH_x86)
	/* glibc's pthread_t: CPython's thread_id (stacks_py.c); other architectures: 0 */
	if (!(r->flags & STK_F_KTHREAD))
		r->fsbase = BPF_CORE_READ(t, thread.fsbase);
#endif
	if (mm && (BPF_CORE_READ(mm, mmap_lock.count.counter) & 1))	/* RWSEM_WRITER_LOCKED */
		r->flags |= STK_F_MMAP_BUSY;
	if (!no_kernel)
		r->kn = bpf_get_task_stack(t, r->k, sizeof(r->k), 0);
	return r;
}

static __always_inline void finish(struct task_struct *t, struct stk_rec *r)
{
	if (switches_of(t) != r->switches ||
	    (r->cls == STK_R && !(r->flags & STK_F_ON_CPU) && BPF_CORE_READ(t, on_cpu)))
		r->flags |= STK_F_TORN;
}

/* Name the kernel frames into @kn (bpf_snprintf's "%ps"); the names written, or 0. */
static __always_inline __u32 name_kframes(struct stk_rec *r, struct stk_knames *kn)
{
	static const char fmt[] = "%ps";
	__u32 n;

	if (!knames || !kn || r->kn <= 0 ||
	    !bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_snprintf))
		return 0;
	n = r->kn / 8;
	for (__u32 i = 0; i < STK_KFRAMES; i++) {
		if (i >= n)
			break;
		if (bpf_snprintf(kn->n[i], STK_KNAME, fmt, &r->k[i], sizeof(r->k[i])) < 0)
			kn->n[i][0] = 0;
	}
	r->flags |= STK_F_KNAMES;
	return n;
}

/* Write the record, @nk names and @len bytes of @copy; 0 or the seq's error. */
static __always_inline int emit(struct seq_file *seq, struct stk_rec *r, struct stk_knames *kn,
				__u64 nk, void *copy, __u32 len)
{
	__u64 kl = (nk & (2 * STK_KFRAMES - 1)) * STK_KNAME;

	if (len > STK_CHUNK)
		len = STK_CHUNK;
	r->knames_len = kl;
	r->copy_len = len;
	r->size = sizeof(*r) + kl + len;
	if (bpf_seq_write(seq, r, sizeof(*r)))
		return -1;
	if (kl && kn && bpf_seq_write(seq, kn, kl))
		return -1;
	if (len && copy && bpf_seq_write(seq, copy, len))
		return -1;
	return 0;
}

SEC("?iter/task")
int stacks_task(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct stk_knames *kn;
	struct stk_rec *r;
	__u32 zero = 0, kl;

	if (!t)
		return 0;
	r = fill(t);
	if (!r)
		return 0;
	finish(t, r);
	kn = bpf_map_lookup_elem(&knamebuf, &zero);
	kl = name_kframes(r, kn);
	if (emit(ctx->meta->seq, r, kn, kl, NULL, 0))
		__sync_fetch_and_add(&seq_retries, 1);
	return 0;
}

SEC("?iter.s/task")
int stacks_task_s(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	__u32 zero = 0, len = 0, n, i, kl;
	struct stk_knames *kn;
	struct stk_copy *c;
	struct stk_rec *r;
	__u64 at;
	long err = 0;

	if (!t)
		return 0;
	r = fill(t);
	if (!r)
		return 0;
	r->flags |= STK_F_SLEEPABLE;
	c = bpf_map_lookup_elem(&copybuf, &zero);
	if (c && (r->flags & STK_F_REGS) && !(r->flags & (STK_F_ON_CPU | STK_F_MMAP_BUSY)) &&
	    r->sp) {
		/* page by page: a stack shorter than the copy still gives what it has */
		at = r->sp;
		n = 4096 - (at & 4095);
		err = bpf_copy_from_user_task(c->b, n & 4095 ? n & 4095 : 4096, (void *)at, t, 0);
		if (!err) {
			len = n & 4095 ? n & 4095 : 4096;
			for (i = 0; i < STK_CHUNK / 4096 - 1; i++) {
				if (len > STK_CHUNK - 4096)
					break;
				if (bpf_copy_from_user_task(c->b + (len & (STK_CHUNK - 1)), 4096,
							    (void *)(at + len), t, 0))
					break;
				len += 4096;
			}
		}
		r->copy_err = err;
	}
	finish(t, r);
	kn = bpf_map_lookup_elem(&knamebuf, &zero);
	kl = name_kframes(r, kn);
	if (emit(ctx->meta->seq, r, kn, kl, c ? c->b : NULL, c ? len : 0))
		__sync_fetch_and_add(&seq_retries, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
