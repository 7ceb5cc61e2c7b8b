// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Probes of what the running kernel's BPF allows (kfeat.h), each once per process. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/kfeat.h"
#include "core/log.h"

/*
 * The kernel's BTF, parsed once and shared (tk_kfeat__btf_get): a parse is a
 * 5.5 MB read and copy and 2-15 ms of CPU, and the helpers below and the
 * capability snapshot used to parse it once each. btf_cache holds one
 * reference until tk_kfeat__btf_release(); every getter holds one more.
 */
struct btf_ref {
	struct btf *btf;
	int refs;
	struct btf_ref *next;	/* on the list of released ones still held */
};

static pthread_mutex_t btf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct btf_ref *btf_cache, *btf_held;
static bool btf_over;	/* released: a later get's parse lives only while it is held */
static unsigned int btf_parses;

/* Parse it: the kernel's own in sysfs first, then libbpf's places on disk. */
static struct btf *parse_vmlinux_btf(void)
{
	struct tk_log_scope quiet;
	struct btf *btf;

	__atomic_add_fetch(&btf_parses, 1, __ATOMIC_RELAXED);
	tk_log__push(&tk_log_quiet, &quiet);
	btf = btf__load_vmlinux_btf();
	tk_log__pop(&quiet);
	return btf;
}

struct btf *tk_kfeat__btf_get(void)
{
	struct btf_ref *r;
	struct btf *btf;
	int err;

	pthread_mutex_lock(&btf_lock);
	if (!btf_cache) {
		btf = parse_vmlinux_btf();
		err = errno;
		r = btf ? calloc(1, sizeof(*r)) : NULL;
		if (!r) {
			btf__free(btf);
			pthread_mutex_unlock(&btf_lock);
			errno = btf ? ENOMEM : err ? err : ENOENT;
			return NULL;
		}
		r->btf = btf;
		r->refs = 1;	/* the cache's own */
		btf_cache = r;
	}
	btf_cache->refs++;
	btf = btf_cache->btf;
	pthread_mutex_unlock(&btf_lock);
	return btf;
}

void tk_kfeat__btf_put(struct btf *btf)
{
	struct btf_ref **pp, *r = NULL;

	if (!btf)
		return;
	pthread_mutex_lock(&btf_lock);
	if (btf_cache && btf_cache->btf == btf) {
		/* never the last: the cache holds one, given up at once after the release */
		if (--btf_cache->refs == 1 && btf_over) {
			r = btf_cache;
			btf_cache = NULL;
		}
	} else {
		for (pp = &btf_held; *pp && (*pp)->btf != btf; pp = &(*pp)->next)
			;
		if (*pp && !--(*pp)->refs) {
			r = *pp;
			*pp = r->next;
		}
	}
	pthread_mutex_unlock(&btf_lock);
	if (r) {
		btf__free(r->btf);
		free(r);
	}
}

void tk_kfeat__btf_release(void)
{
	struct btf_ref *r;

	pthread_mutex_lock(&btf_lock);
	btf_over = true;
	r = btf_cache;
	btf_cache = NULL;
	if (r && --r->refs) {
		/* still held: the last put frees it */
		r->next = btf_held;
		btf_held = r;
		r = NULL;
	}
	pthread_mutex_unlock(&btf_lock);
	if (r) {
		btf__free(r->btf);
		free(r);
	}
}

unsigned int tk_kfeat__btf_parses(void)
{
	return __atomic_load_n(&btf_parses, __ATOMIC_RELAXED);
}

/* 0: not probed yet; 1: no; 2: yes (a race probes twice and agrees) */
static int cached_runtime_alloc, cached_cookie, cached_session, cached_fault_tp;

/* Is @name in TK_KFEAT_OFF? */
static bool forced_off(const char *name)
{
	const char *s = getenv("TK_KFEAT_OFF");
	size_t n = strlen(name);

	while (s && *s) {
		if (!strncmp(s, name, n) && (s[n] == ',' || !s[n]))
			return true;
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return false;
}

/*
 * A perf_event program that only names a hash map allocated at run time:
 * the verifier checks a program against every map it references, so the
 * load alone answers. The kernels that refuse it (before 6.1) are the ones
 * that also warn for kprobe, uprobe and tracepoint programs.
 */
static bool probe_runtime_alloc(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	struct bpf_insn insns[4] = {
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int map, prog, err;

	map = bpf_map_create(BPF_MAP_TYPE_HASH, "tk_kfeat", 4, 4, 1, &mo);
	if (map < 0)
		return true;	/* no BPF at all: nothing will load either way */
	insns[0].imm = map;
	prog = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "tk_kfeat", "Dual BSD/GPL", insns, 4,
			     NULL);
	err = prog < 0 ? -errno : 0;
	if (prog >= 0)
		close(prog);
	close(map);
	/* EINVAL is the refusal; anything else (EPERM) is not about the map */
	return err != -EINVAL;
}

bool tk_kfeat__runtime_alloc_maps(void)
{
	int v = __atomic_load_n(&cached_runtime_alloc, __ATOMIC_RELAXED);

	if (!v) {
		v = !forced_off("runtime_alloc_maps") && probe_runtime_alloc() ? 2 : 1;
		__atomic_store_n(&cached_runtime_alloc, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

bool tk_kfeat__attach_cookie(void)
{
	int v = __atomic_load_n(&cached_cookie, __ATOMIC_RELAXED);

	if (!v) {
		struct tk_log_scope quiet;

		tk_log__push(&tk_log_quiet, &quiet);
		v = !forced_off("attach_cookie") &&
				    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
							    BPF_FUNC_get_attach_cookie, NULL) == 1
			    ? 2
			    : 1;
		tk_log__pop(&quiet);
		__atomic_store_n(&cached_cookie, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

/* An empty raw_tp program attached to page_fault_user and let go: ENOENT is "no such tracepoint" */
static bool probe_fault_tp(void)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int prog, fd, err;

	prog = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "tk_kfeat", "Dual BSD/GPL", insns, 2,
			     NULL);
	if (prog < 0)
		return true;	/* no BPF at all: nothing will attach either way */
	fd = bpf_raw_tracepoint_open("page_fault_user", prog);
	err = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	close(prog);
	return err != -ENOENT;
}

bool tk_kfeat__page_fault_user(void)
{
	int v = __atomic_load_n(&cached_fault_tp, __ATOMIC_RELAXED);

	if (!v) {
		struct tk_log_scope quiet;

		tk_log__push(&tk_log_quiet, &quiet);
		v = !forced_off("page_fault_user") && probe_fault_tp() ? 2 : 1;
		tk_log__pop(&quiet);
		__atomic_store_n(&cached_fault_tp, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

/*
 * An empty fentry program on a function every kernel has: loaded, never
 * attached. A kernel (or a security policy) that refuses fentry refuses it
 * at load, for every function: the loaders then skip their fentry variants.
 */
static int probe_fentry(void)
{
	static const char *const fns[] = { "do_nanosleep", "hrtimer_nanosleep", "vfs_read" };
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_TRACE_FENTRY);
	struct btf *btf = tk_kfeat__btf_get();
	int id = -ENOENT, fd, err;
	size_t i;

	if (!btf)
		return -ENOENT;
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]) && id <= 0; i++)
		id = btf__find_by_name_kind(btf, fns[i], BTF_KIND_FUNC);
	tk_kfeat__btf_put(btf);
	if (id <= 0)
		return -ENOENT;
	o.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "tk_kfeat", "Dual BSD/GPL", insns, 2, &o);
	err = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return err;
}

int tk_kfeat__fentry(void)
{
	static int cached;	/* 1: loads; -errno + -1: refused */
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (!v) {
		v = forced_off("fentry") ? -EPERM : probe_fentry();
		v = v ? v - 1 : 1;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v == 1 ? 0 : v + 1;
}

static enum tk_kfeat_session_kfunc probe_session_kfunc(void)
{
	enum tk_kfeat_session_kfunc r = TK_KF_SESSION_UNKNOWN;
	const struct btf_type *fn, *proto;
	struct btf *btf;
	int id;

	btf = tk_kfeat__btf_get();
	if (!btf)
		return TK_KF_SESSION_UNKNOWN;
	id = btf__find_by_name_kind(btf, "bpf_session_is_return", BTF_KIND_FUNC);
	if (id < 0) {
		r = TK_KF_SESSION_ABSENT;
		goto out;
	}
	fn = btf__type_by_id(btf, id);
	proto = fn ? btf__type_by_id(btf, fn->type) : NULL;
	if (!proto || !btf_is_func_proto(proto))
		goto out;
	if (btf_vlen(proto) == 0) {
		r = TK_KF_SESSION_VOID;
	} else if (btf_vlen(proto) == 1) {
		const struct btf_param *p = btf_params(proto);
		const struct btf_type *t = btf__type_by_id(btf, p->type);

		/* void *: a pointer to type 0 */
		if (t && btf_is_ptr(t) && t->type == 0)
			r = TK_KF_SESSION_CTX;
	}
out:
	tk_kfeat__btf_put(btf);
	return r;
}

enum tk_kfeat_session_kfunc tk_kfeat__session_kfunc(void)
{
	int v = __atomic_load_n(&cached_session, __ATOMIC_RELAXED);

	if (!v) {
		v = (int)probe_session_kfunc() + 1;
		__atomic_store_n(&cached_session, v, __ATOMIC_RELAXED);
	}
	return (enum tk_kfeat_session_kfunc)(v - 1);
}

static bool is_hash(enum bpf_map_type t)
{
	return t == BPF_MAP_TYPE_HASH || t == BPF_MAP_TYPE_PERCPU_HASH;
}

/*
 * TK_TEST_MAP_ENTRIES=NAME=N,…: every map called NAME gets N entries, so the
 * tests can fill a map and see its loss counted (a name no one would set by
 * chance; described in docs/design.md).
 */
static void test_sizes(struct bpf_object *obj)
{
	const char *s = getenv("TK_TEST_MAP_ENTRIES");
	struct bpf_map *m;

	while (s && *s) {
		const char *eq = strchr(s, '=');
		char *end;
		unsigned long n;

		if (!eq)
			return;
		n = strtoul(eq + 1, &end, 10);
		bpf_object__for_each_map(m, obj)
			if (n > 0 && n < (1UL << 31) && strlen(bpf_map__name(m)) == (size_t)(eq - s) &&
			    !strncmp(bpf_map__name(m), s, eq - s))
				bpf_map__set_max_entries(m, n);
		s = strchr(end, ',');
		if (s)
			s++;
	}
}

int tk_kfeat__fit_maps(struct bpf_object *obj, char *note, size_t note_sz)
{
	long ncpus = libbpf_num_possible_cpus();
	struct bpf_map *m;
	size_t len = 0;
	int cut = 0;

	if (note && note_sz)
		note[0] = '\0';
	test_sizes(obj);
	if (tk_kfeat__runtime_alloc_maps())
		return 0;
	if (ncpus < 1)
		ncpus = 1;
	bpf_object__for_each_map(m, obj) {
		__u32 flags = bpf_map__map_flags(m), n = bpf_map__max_entries(m), was = n;
		unsigned long long per;

		if (!is_hash(bpf_map__type(m)) || !(flags & BPF_F_NO_PREALLOC))
			continue;
		bpf_map__set_map_flags(m, flags & ~BPF_F_NO_PREALLOC);
		/* the element: key, value (one per CPU for per-CPU maps) and the kernel's header */
		per = bpf_map__key_size(m) + 64ULL +
		      (unsigned long long)bpf_map__value_size(m) *
			      (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_HASH ? ncpus : 1);
		while (n > 1024 && per * n > TK_PREALLOC_MAP_BYTES)
			n /= 2;
		if (n == was)
			continue;
		bpf_map__set_max_entries(m, n);
		cut++;
		if (note && len < note_sz)
			len += snprintf(note + len, note_sz - len, "%s%s %u, not %u", cut > 1 ? "; " : "",
					bpf_map__name(m), n, was);
	}
	return cut;
}

/* The byte offset of @member in struct @t (through anonymous members), or -ENOENT. */
static int find_member(const struct btf *btf, const struct btf_type *t, const char *member,
		       size_t len, int depth, __u32 *type)
{
	const struct btf_member *m = btf_members(t);
	int i, off;

	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		const struct btf_type *mt;

		if (name && strlen(name) == len && !strncmp(name, member, len)) {
			*type = m->type;
			return btf_member_bit_offset(t, i) / 8;
		}
		if (name && name[0])
			continue;
		mt = btf__type_by_id(btf, m->type);
		while (mt && btf_is_mod(mt))
			mt = btf__type_by_id(btf, mt->type);
		if (!mt || !btf_is_composite(mt) || depth > 4)
			continue;
		off = find_member(btf, mt, member, len, depth + 1, type);
		if (off >= 0)
			return btf_member_bit_offset(t, i) / 8 + off;
	}
	return -ENOENT;
}

/* @path ("se.sum_exec_runtime"): members of members, their offsets summed. */
static int find_path(const struct btf *btf, const struct btf_type *t, const char *path)
{
	int total = 0, off;
	__u32 type;

	for (;;) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (!t || !btf_is_composite(t) || !len)
			return -ENOENT;
		off = find_member(btf, t, path, len, 0, &type);
		if (off < 0)
			return off;
		total += off;
		if (!dot)
			return total;
		path = dot + 1;
		t = btf__type_by_id(btf, type);
		while (t && (btf_is_mod(t) || btf_is_typedef(t)))
			t = btf__type_by_id(btf, t->type);
	}
}

/*
 * Offsets found, kept for the process's life (the kernel's types do not
 * change under it): the capture's late lookups (a new process's unwinder
 * set-up) find them without parsing the BTF again after its release.
 */
#define MEMO_SLOTS 48
static struct memo {
	char key[96];	/* "type member" */
	int off;
} memo[MEMO_SLOTS];
static int memo_n;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool memo_find(const char *type, const char *member, int *off)
{
	char key[96];
	bool found = false;
	int i;

	snprintf(key, sizeof(key), "%s %s", type, member);
	pthread_mutex_lock(&memo_lock);
	for (i = 0; i < memo_n && !found; i++) {
		if (!strcmp(memo[i].key, key)) {
			*off = memo[i].off;
			found = true;
		}
	}
	pthread_mutex_unlock(&memo_lock);
	return found;
}

static void memo_add(const char *type, const char *member, int off)
{
	int dummy;

	if (strlen(type) + strlen(member) + 2 > sizeof(memo[0].key) ||
	    memo_find(type, member, &dummy))
		return;
	pthread_mutex_lock(&memo_lock);
	if (memo_n < MEMO_SLOTS) {
		snprintf(memo[memo_n].key, sizeof(memo[0].key), "%s %s", type, member);
		memo[memo_n++].off = off;
	}
	pthread_mutex_unlock(&memo_lock);
}

int tk_kfeat__member_offsets(const char *type, const char *const *members, int *offs, int n)
{
	const struct btf_type *t;
	struct btf *btf;
	int id, i;

	for (i = 0; i < n && memo_find(type, members[i], &offs[i]); i++)
		;
	if (i == n)
		return 0;
	btf = tk_kfeat__btf_get();
	if (!btf)
		return -errno ? -errno : -ENOENT;
	id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0; i < n; i++) {
		offs[i] = t ? find_path(btf, t, members[i]) : -ENOENT;
		memo_add(type, members[i], offs[i]);
	}
	tk_kfeat__btf_put(btf);
	return 0;
}

int tk_kfeat__member_offset(const char *type, const char *member)
{
	int off, err = tk_kfeat__member_offsets(type, &member, &off, 1);

	return err ? err : off;
}

int tk_kfeat__raw_tp_args(const char *tp)
{
	const struct btf_type *t;
	char name[128];
	struct btf *btf;
	int id, n = -ENOENT;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	if (memo_find(name, "", &n))
		return n;
	btf = tk_kfeat__btf_get();
	if (!btf)
		return -errno ? -errno : -ENOENT;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	/* typedef → pointer → prototype (void *__data, the tracepoint's arguments...) */
	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t) && btf_vlen(t) > 0)
		n = btf_vlen(t) - 1;
	tk_kfeat__btf_put(btf);
	memo_add(name, "", n);
	return n;
}

int tk_kfeat__tracepoint_field(const char *category, const char *event, const char *field)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256], line[512], want[128];
	size_t i;

	snprintf(want, sizeof(want), " %s;", field);
	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		FILE *f;
		int off = -ENOENT;

		snprintf(path, sizeof(path), "%s/events/%s/%s/format", roots[i], category, event);
		f = fopen(path, "re");
		if (!f)
			continue;
		/* "\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;" */
		while (fgets(line, sizeof(line), f)) {
			char *decl = strstr(line, "field:"), *o = strstr(line, "\toffset:"), *end;

			if (!decl || !o || decl > o)
				continue;
			*o = '\0';
			end = o - strlen(want);
			if (end < decl || strcmp(end, want))
				continue;
			off = atoi(o + strlen("\toffset:"));
			break;
		}
		fclose(f);
		return off;
	}
	return -ENOENT;
}
