// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The bpf backend of tracekit stacks: loads bpf/stacks_iter.bpf.c (the sleepable
 * iter.s/task program, which copies user stacks with bpf_copy_from_user_task,
 * 5.18+; else the plain iter/task, 5.8+, whose user stacks are read from
 * /proc/PID/mem by the common code) and turns its seq output into raw records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/internal.h"
#include "stacks/stacks_int.h"
#include "bpf/stacks_iter.h"
#include "stacks_iter.skel.h"

struct stk_iter {
	struct stacks_iter_bpf *skel;
	struct bpf_program *prog;
	bool sleepable;
	bool link_pid;			/* the kernel takes a task iterator's pid (6.1+) */
	bool link_pid_known;
	char *buf;			/* the last run's output */
	size_t len, cap;
};

static int try_load(const struct stk_iter_opts *o, bool sleepable, struct stk_iter *it,
		    char *why, size_t why_sz)
{
	struct stacks_iter_bpf *skel;
	struct tk_log_scope scope;
	int err;

	tk_log__push(o->log ? o->log : &tk_log_quiet, &scope);
	skel = stacks_iter_bpf__open();
	if (!skel) {
		err = -errno;
		snprintf(why, why_sz, "the task iterator object did not open: %s", strerror(-err));
		goto out;
	}
	skel->rodata->filter_pids = o->filter_pids;
	skel->rodata->state_mask = o->state_mask;
	skel->rodata->no_kernel = o->no_kernel;
	skel->rodata->no_user = o->no_user;
	/* before bpf_task_pt_regs (5.15): task->stack + THREAD_SIZE - sizeof(pt_regs) */
	skel->rodata->thread_size = tk_kconfig__lookup("/proc", "CONFIG_KASAN") == 1 ? 32768 : 16384;
	/* TK_STACKS_TASK_STACK=1: the older kernels' way on this one too (for tests) */
	skel->rodata->regs_from_stack = getenv("TK_STACKS_TASK_STACK") &&
					*getenv("TK_STACKS_TASK_STACK") == '1';
	bpf_program__set_autoload(sleepable ? skel->progs.stacks_task_s : skel->progs.stacks_task,
				  true);
	err = stacks_iter_bpf__load(skel);
	if (err) {
		snprintf(why, why_sz, "%s did not load: %s",
			 sleepable ? "the sleepable task iterator (iter.s/task, 5.18+)" :
				     "the task iterator (iter/task, 5.8+, kernel BTF)",
			 strerror(-err));
		stacks_iter_bpf__destroy(skel);
		goto out;
	}
	it->skel = skel;
	it->sleepable = sleepable;
	it->prog = sleepable ? skel->progs.stacks_task_s : skel->progs.stacks_task;
out:
	tk_log__pop(&scope);
	return err;
}

int stk_iter__open(const struct stk_iter_opts *o, struct stk_iter **out, char *why,
		   size_t why_sz)
{
	struct stk_iter *it = calloc(1, sizeof(*it));
	char first[256] = "";
	int err = -ENOMEM;

	if (!it)
		goto fail;
	err = o->plain ? -EOPNOTSUPP : try_load(o, true, it, first, sizeof(first));
	if (err) {
		char second[256] = "";

		err = try_load(o, false, it, second, sizeof(second));
		if (err) {
			if (first[0])
				snprintf(why, why_sz, "%s; %s", first, second);
			else
				snprintf(why, why_sz, "%s", second);
			goto fail;
		}
	}
	*out = it;
	return 0;
fail:
	free(it);
	return err;
}

bool stk_iter__sleepable(const struct stk_iter *it)
{
	return it->sleepable;
}

int stk_iter__add_pid(struct stk_iter *it, uint32_t pid)
{
	__u8 one = 1;

	if (bpf_map__update_elem(it->skel->maps.pids, &pid, sizeof(pid), &one, sizeof(one),
				 BPF_ANY))
		return -errno;
	return 0;
}

/* Read all of one iterator link's output into it->buf (appended). */
static int drain(struct stk_iter *it, struct bpf_link *link)
{
	int fd = bpf_iter_create(bpf_link__fd(link)), err = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	for (;;) {
		if (it->cap - it->len < 64 << 10) {
			size_t cap = it->cap ? it->cap * 2 : 1 << 20;
			char *b = realloc(it->buf, cap);

			if (!b) {
				err = -ENOMEM;
				break;
			}
			it->buf = b;
			it->cap = cap;
		}
		n = read(fd, it->buf + it->len, it->cap - it->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = -errno;
			break;
		}
		if (!n)
			break;
		it->len += n;
	}
	close(fd);
	return err;
}

static struct bpf_link *attach(struct stk_iter *it, uint32_t pid)
{
	union bpf_iter_link_info linfo;
	LIBBPF_OPTS(bpf_iter_attach_opts, o);

	if (!pid)
		return bpf_program__attach_iter(it->prog, NULL);
	memset(&linfo, 0, sizeof(linfo));
	linfo.task.pid = pid;
	o.link_info = &linfo;
	o.link_info_len = sizeof(linfo);
	return bpf_program__attach_iter(it->prog, &o);
}

static int run_link(struct stk_iter *it, uint32_t pid)
{
	struct bpf_link *link = attach(it, pid);
	int err;

	if (!link)
		return -errno;
	err = drain(it, link);
	bpf_link__destroy(link);
	return err;
}

static void to_raw(const struct stk_rec *x, struct stk_raw *r)
{
	static const char letters[] = { 'R', 'S', 'D', 'T', 'I', 'Z' };
	uint64_t last;

	memset(r, 0, sizeof(*r));
	r->pid = x->tgid;
	r->tid = x->tid;
	r->ns_tid = x->ns_tid ? x->ns_tid : x->tid;
	memcpy(r->comm, x->comm, sizeof(r->comm));
	r->comm[sizeof(r->comm) - 1] = 0;
	r->state = '?';
	for (int i = 0; i < 6; i++)
		if (x->cls == 1u << i)
			r->state = letters[i];
	if (r->state == 'T' && (x->state & 8))
		r->state = 't';
	r->on_cpu = x->flags & STK_F_ON_CPU;
	r->kthread = x->flags & STK_F_KTHREAD;
	r->torn = x->flags & STK_F_TORN;
	r->mmap_busy = x->flags & STK_F_MMAP_BUSY;
	r->have_regs = (x->flags & STK_F_REGS) && !r->on_cpu && !r->kthread;
	r->nr = r->on_cpu || r->kthread ? -2 : (int64_t)x->orig_ax;
	if (r->nr < -1)
		r->nr = r->on_cpu || r->kthread ? -2 : -1;
	memcpy(r->args, x->args, sizeof(r->args));
	r->ip = x->ip;
	r->sp = x->sp;
	r->bp = x->bp;
#if TK_ARCH_ARM64
	r->lr = x->lr;
#endif
	r->switches = x->switches;
	r->have_switches = true;
	r->fsbase = x->fsbase;
	/* when it last got a CPU, less the part of that slice it ran (research §3.3) */
	r->off_cpu_ns = -1;
	last = x->last_arrival + (x->sum_exec - x->prev_sum);
	if (x->cls != STK_R && x->last_arrival && x->now > last)
		r->off_cpu_ns = x->now - last;
	if (x->kn > 0) {
		r->nk = x->kn / 8 < STK_MAX_KFRAMES ? x->kn / 8 : STK_MAX_KFRAMES;
		for (uint32_t i = 0; i < r->nk; i++)
			r->kf[i].addr = x->k[i];
	} else if (x->kn < 0) {
		r->kstack_err = x->kn;
	}
	if ((x->flags & STK_F_KNAMES) && x->knames_len / STK_KNAME >= r->nk) {
		const char *names = (const char *)(x + 1);

		for (uint32_t i = 0; i < r->nk; i++) {
			const char *nm = names + i * STK_KNAME;
			size_t len = strnlen(nm, STK_KNAME);

			/* "sym" or "sym [module]"; a bare address (no symbol): left to kallsyms */
			if (len && len < STK_KNAME && strncmp(nm, "0x", 2))
				r->kf[i].name = strndup(nm, strcspn(nm, " "));
		}
	}
	if (x->copy_len) {
		r->copy = (const uint8_t *)(x + 1) + x->knames_len;
		r->copy_len = x->copy_len;
	}
}

int stk_iter__run(struct stk_iter *it, const uint32_t *pids, size_t nr, struct stk_raws *out,
		  uint64_t *retries)
{
	size_t at = 0;
	int err = 0;

	it->len = 0;
	it->skel->bss->seq_retries = 0;
	if (nr && (!it->link_pid_known || it->link_pid)) {
		for (size_t i = 0; i < nr && !err; i++) {
			err = run_link(it, pids[i]);
			if ((err == -E2BIG || err == -EINVAL) && !it->link_pid_known) {
				/*
				 * Before 6.1 a task iterator takes no pid: the link's info is
				 * refused (5.10: -E2BIG, bytes past what it knows not zero).
				 * One over every task, filtered in the program.
				 */
				it->link_pid_known = true;
				it->link_pid = false;
				it->len = 0;
				err = run_link(it, 0);
				break;
			}
			it->link_pid_known = true;
			it->link_pid = true;
		}
	} else {
		err = run_link(it, 0);
	}
	if (err)
		return err;
	while (at + sizeof(struct stk_rec) <= it->len) {
		const struct stk_rec *x = (const void *)(it->buf + at);
		struct stk_raw *r;

		if (x->size < sizeof(*x) || x->size > it->len - at ||
		    x->size != sizeof(*x) + (uint64_t)x->knames_len + x->copy_len)
			break;
		r = stk_raws__add(out);
		if (!r)
			return -ENOMEM;
		to_raw(x, r);
		/* records follow each other with no padding: the copy may be unaligned */
		at += x->size;
	}
	*retries += it->skel->bss->seq_retries;
	return 0;
}

void stk_iter__free(struct stk_iter *it)
{
	if (!it)
		return;
	stacks_iter_bpf__destroy(it->skel);
	free(it->buf);
	free(it);
}

/* The snapshot's bpf.load.stacks: the iterator loaded as tk_stacks__take would, and closed. */
int tk_stacks_bpf__probe_load(char *msg, size_t msg_sz)
{
	struct stk_iter_opts o = { .log = &tk_log_quiet };
	struct stk_iter *it;
	int err = stk_iter__open(&o, &it, msg, msg_sz);

	if (err)
		return err;
	snprintf(msg, msg_sz, "%s", stk_iter__sleepable(it) ?
		 "the sleepable task iterator (iter.s/task: user stacks copied with "
		 "bpf_copy_from_user_task)" :
		 "the task iterator (iter/task; user stacks read from /proc/PID/mem)");
	stk_iter__free(it);
	return 0;
}
