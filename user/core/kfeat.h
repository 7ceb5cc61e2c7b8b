/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the running kernel's BPF lets the collectors' objects do, where
 * kernels from 5.10 to 7.x differ: each answer is probed once per process,
 * on this kernel (never assumed from its version), and cached. The loaders
 * shape their objects by it before loading; the capability snapshot reports
 * the same answers (caps/caps_probe.c).
 *
 *  - Hash maps allocated at run time (BPF_F_NO_PREALLOC) in tracing programs:
 *    perf_event programs refuse them before 6.1 ("perf_event programs can
 *    only use preallocated hash map"), and kprobe, uprobe and tracepoint
 *    programs load with a kernel warning (WARN_ONCE) before 6.1.
 *  - bpf_get_attach_cookie(): 5.15+.
 *  - The kfunc bpf_session_is_return() (uprobe sessions, 6.13+): declared
 *    (void) up to 6.18, (void *ctx) since; read from the kernel's own BTF.
 *
 *  - The raw tracepoint exceptions:page_fault_user: x86 has it; arm64 has
 *    none (5.10 to 7.x). alloc --mode growth takes the software perf event
 *    page-faults where it is missing.
 *
 * TK_KFEAT_OFF=a,b,… (runtime_alloc_maps, attach_cookie, page_fault_user, fentry; map_batch,
 * read by user/cpu/map_batch.c) makes this process
 * act as if the kernel lacked a feature: the tests take older kernels' paths
 * on a new one.
 */
#ifndef __TK_CORE_KFEAT_H
#define __TK_CORE_KFEAT_H

#include <stdbool.h>
#include <stddef.h>

struct bpf_object;
struct btf;

/*
 * The kernel's BTF (where libbpf's btf__load_vmlinux_btf looks: sysfs, then
 * vmlinux files on disk), parsed once per process and shared by every helper
 * here and the capability snapshot: a parse is a 5.5 MB read and copy. Each
 * tk_kfeat__btf_get() (NULL and errno when there is none) is matched by a
 * tk_kfeat__btf_put(). tk_kfeat__btf_release() ends the caching (the command
 * line calls it when its start-up is over): the BTF is freed at the last put,
 * and a later get parses it again. Safe from any thread.
 */
struct btf *tk_kfeat__btf_get(void);
void tk_kfeat__btf_put(struct btf *btf);
void tk_kfeat__btf_release(void);
/* How many times this process parsed the kernel's BTF here (the tests count them). */
unsigned int tk_kfeat__btf_parses(void);

enum tk_kfeat_session_kfunc {
	TK_KF_SESSION_ABSENT = 0,	/* no bpf_session_is_return in the kernel's BTF */
	TK_KF_SESSION_VOID,		/* bool bpf_session_is_return(void) */
	TK_KF_SESSION_CTX,		/* bool bpf_session_is_return(void *ctx) */
	TK_KF_SESSION_UNKNOWN,		/* no kernel BTF to read, or another prototype */
};

/* May tracing programs use hash maps allocated at run time? */
bool tk_kfeat__runtime_alloc_maps(void);
/* Has the kernel bpf_get_attach_cookie() for kprobe/uprobe programs? */
bool tk_kfeat__attach_cookie(void);
/*
 * Can a raw_tp program attach to page_fault_user here? Probed by attaching
 * an empty one (bpf_raw_tracepoint_open: no tracefs or BTF needed). True
 * when the attach works or fails for another reason than ENOENT (no BPF at
 * all: nothing will attach either way).
 */
bool tk_kfeat__page_fault_user(void);
/*
 * Does the kernel load fentry programs at all? 0, or the load's -errno (an
 * empty program on do_nanosleep, never attached; -ENOENT without kernel
 * BTF). Hosts whose security policy refuses fentry refuse every function.
 */
int tk_kfeat__fentry(void);
/* The prototype of bpf_session_is_return() in the running kernel's BTF. */
enum tk_kfeat_session_kfunc tk_kfeat__session_kfunc(void);

/*
 * The byte offset of @member in struct @type of the running kernel's BTF
 * (members of anonymous structs and unions included), or a negative errno
 * (no kernel BTF, no such type or member). @member may name a member of a
 * member: "se.sum_exec_runtime".
 */
int tk_kfeat__member_offset(const char *type, const char *member);
/*
 * The same for @n members, the kernel's BTF read once: @offs[i] the offset
 * of @members[i] or a negative errno. Returns 0, or a negative errno when
 * there is no kernel BTF.
 */
int tk_kfeat__member_offsets(const char *type, const char *const *members, int *offs, int n);

/*
 * The offset of @field in the record of tracepoint @category:@event, from
 * tracefs (events/CATEGORY/EVENT/format), or a negative errno.
 */
/* The arguments raw tracepoint @tp passes ("sched_switch": 3, or 4 from 5.18), from kernel BTF; or -errno. */
int tk_kfeat__raw_tp_args(const char *tp);
int tk_kfeat__tracepoint_field(const char *category, const char *event, const char *field);

/*
 * Make @obj's hash maps loadable here (call after sizing them, before
 * loading): where tracing programs need preallocated maps, BPF_F_NO_PREALLOC
 * goes, and a map whose preallocation would pass TK_PREALLOC_MAP_BYTES is
 * halved until it fits (not below 1024 entries). @note (may be
 * NULL) says which maps were cut; empty when none was. Returns the number of
 * maps cut. First, TK_TEST_MAP_ENTRIES=NAME=N,… sizes maps by name (tests).
 */
#define TK_PREALLOC_MAP_BYTES (32u << 20)
int tk_kfeat__fit_maps(struct bpf_object *obj, char *note, size_t note_sz);

#endif /* __TK_CORE_KFEAT_H */
