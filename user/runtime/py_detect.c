// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Finding CPython in a process, once per file for what the file says and
 * once per process for what only the process knows.
 *
 * The interpreter is the object that defines _PyRuntime: the executable of
 * Debian's builds (non-PIE, libpython linked in), libpython3.X.so of
 * --enable-shared builds. Only objects named python3.X or libpython3.X are
 * looked into. Its minor version comes from Py_Version (3.11+) or the file
 * name; its offsets from _Py_DebugOffsets (3.13+) or the table, checked
 * against PyCode_Type's tp_members (py_offsets.c). The interpreter loop is
 * _PyEval_EvalFrameDefault's symbol plus every FDE that one of its rel32
 * jumps lands on exactly at its start outside it (gcc's split parts:
 * Debian 3.14's loop body is an 84 KiB block of its own; 3.11's has one of
 * 14 KiB), and .cold when .symtab names it.
 *
 * Per process: the pthread key in _PyRuntime's autoTSSkey (set once at
 * start-up, before any Python code runs; a process caught earlier is asked
 * again later), and the check that ties key, glibc's layout and the thread
 * states together: every PyThreadState's thread_id is its thread's
 * pthread_t, whose key slot must point back at it. The kernel checks the
 * same per sample (thread_id == the pthread_t its thread pointer gives: x86's
 * fsbase, arm64's TPIDR_EL0 less struct pthread's size, read from the
 * process's libc: py_arch.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arch.h"
#include "core/fsutil.h"
#include "proc/elf_reader.h"
#include "runtime/py_int.h"
#include "sym/symbolize.h"

#define MAX_THREADS 4096
#define MAX_LOOP_BYTES (1u << 20)

static bool py_name(const char *module, int *minor)
{
	const char *b = module ? tk_path_basename(module) : NULL;
	char *end;
	long m;

	if (!b)
		return false;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (strncmp(b, "python3.", 8))
		return false;
	m = strtol(b + 8, &end, 10);
	if (end == b + 8 || (*end && *end != '.' && *end != 'd' && *end != 'm' && *end != 't'))
		return false;
	*minor = (int)m;
	return true;
}

struct syms {
	uint64_t runtime, version, eval, eval_size, cold, cold_size, code_type, frame_type;
	uint64_t tramp, tramp_end;
	uint64_t gil_this;		/* PyGILState_GetThisThreadState */
	uint64_t *funcs;		/* defined functions' starts: tail calls, not parts */
	size_t nr_funcs, cap_funcs;
};

static int sym_cb(const struct tk_elf_sym *s, void *ctx)
{
	struct syms *y = ctx;

	if (!s->defined)
		return 0;
	if (s->type == TK_ELF_SYM_FUNC && s->value) {
		if (y->nr_funcs == y->cap_funcs) {
			size_t cap = y->cap_funcs ? 2 * y->cap_funcs : 4096;
			uint64_t *f = realloc(y->funcs, cap * sizeof(*f));

			if (!f)
				return -ENOMEM;
			y->funcs = f;
			y->cap_funcs = cap;
		}
		y->funcs[y->nr_funcs++] = s->value;
	}
	if (!strcmp(s->name, "_PyRuntime"))
		y->runtime = s->value;
	else if (!strcmp(s->name, "Py_Version"))
		y->version = s->value;
	else if (!strcmp(s->name, "_PyEval_EvalFrameDefault") && s->size) {
		y->eval = s->value;
		y->eval_size = s->size;
	} else if (!strcmp(s->name, "_PyEval_EvalFrameDefault.cold") && s->size) {
		y->cold = s->value;
		y->cold_size = s->size;
	} else if (!strcmp(s->name, "PyCode_Type"))
		y->code_type = s->value;
	else if (!strcmp(s->name, "PyFrame_Type"))
		y->frame_type = s->value;
	else if (!strcmp(s->name, "_Py_trampoline_func_start"))
		y->tramp = s->value;
	else if (!strcmp(s->name, "_Py_trampoline_func_end"))
		y->tramp_end = s->value;
	else if (!strcmp(s->name, "PyGILState_GetThisThreadState"))
		y->gil_this = s->value;
	return 0;
}

/*
 * arm64: the pthread key's place in _PyRuntime, from the interpreter's own code
 * (py_arch.c): _PyRuntime embeds pthread mutexes before it up to 3.11, 48 bytes on
 * arm64 against 40 (Debian 3.9: 600, table 584; 3.11: 608, table 592; 3.13 and 3.14 as
 * the table). 0, or -ENOTSUP with im->why set.
 */
static int a64_tss(struct py_image *im, struct tk_elf *elf, const struct syms *y)
{
	uint8_t code[64];
	uint64_t addr;
	long got;

	got = y->gil_this ? tk_elf__read_vaddr(elf, y->gil_this, code, sizeof(code)) : 0;
	if (got <= 0 || tk_py__a64_tss_addr(code, got, y->gil_this, &addr) ||
	    addr < y->runtime || addr - y->runtime >= 65536) {
		snprintf(im->why, sizeof(im->why), "the pthread key's place in _PyRuntime not "
			 "found (PyGILState_GetThisThreadState of another shape)");
		return -ENOTSUP;
	}
	im->off.rt_tss = addr - y->runtime;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_func_start(const struct syms *y, uint64_t a)
{
	return y->nr_funcs && bsearch(&a, y->funcs, y->nr_funcs, sizeof(a), cmp_u64);
}

/* The members of the type object at @type (PyTypeObject.tp_members, PyMemberDef[]). */
static size_t read_members(struct tk_elf *elf, uint64_t type, struct tk_py_member *m,
			   char (*names)[32], size_t max)
{
	uint64_t arr, name, off;
	size_t n = 0;

	if (!type || tk_elf__read_ptr(elf, type + 240, &arr) || !arr)
		return 0;
	for (; n < max; n++) {
		if (tk_elf__read_ptr(elf, arr + 40 * n, &name) || !name ||
		    tk_elf__read_str(elf, name, names[n], sizeof(names[n])) <= 0 ||
		    tk_elf__read_vaddr(elf, arr + 40 * n + 16, &off, 8) != 8)
			break;
		m[n].name = names[n];
		m[n].offset = off;
	}
	return n;
}

static int check_members(struct py_image *im, struct tk_elf *elf, const struct syms *y)
{
	struct tk_py_member code[32], frame[32];
	char cn[32][32], fn[32][32];
	size_t nc, nf;

	nc = read_members(elf, y->code_type, code, cn, 32);
	nf = read_members(elf, y->frame_type, frame, fn, 32);
	if (!nc) {
		snprintf(im->why, sizeof(im->why), "PyCode_Type's members unreadable");
		return -ENOTSUP;
	}
	if (tk_py_offsets__check_members(&im->off, code, nc, nf ? frame : NULL, nf, im->why,
					 sizeof(im->why)))
		return -ENOTSUP;
	im->members_checked = true;
	return 0;
}

static void add_range(struct py_image *im, uint64_t lo, uint64_t hi)
{
	int i;

	for (i = 0; i < im->nranges; i++)
		if (im->lo[i] == lo)
			return;
	if (im->nranges < UNW_PY_RANGES) {
		im->lo[im->nranges] = lo;
		im->hi[im->nranges++] = hi;
	}
}

/* .eh_frame_hdr's search table: FDE starts, sorted; what the FDE covers. */
struct eh_hdr {
	uint64_t vaddr;
	unsigned char *buf;
	size_t len;
	uint32_t count;
};

static int eh_hdr_load(struct tk_elf *elf, struct eh_hdr *h)
{
	Elf *e = tk_elf__libelf(elf);
	GElf_Phdr ph;
	size_t i, n;
	long got;

	memset(h, 0, sizeof(*h));
	if (!e || elf_getphdrnum(e, &n))
		return -ENOENT;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == n || ph.p_memsz < 12 || ph.p_memsz > (64u << 20))
		return -ENOENT;
	h->buf = malloc(ph.p_memsz);
	if (!h->buf)
		return -ENOMEM;
	got = tk_elf__read_vaddr(elf, ph.p_vaddr, h->buf, ph.p_memsz);
	/* version 1; eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4 */
	if (got < 12 || h->buf[0] != 1 || h->buf[2] != 0x03 || h->buf[3] != 0x3b) {
		free(h->buf);
		h->buf = NULL;
		return -ENOENT;
	}
	h->vaddr = ph.p_vaddr;
	h->len = got;
	memcpy(&h->count, h->buf + 8, 4);
	if (h->count > (h->len - 12) / 8)
		h->count = (h->len - 12) / 8;
	return 0;
}

/* The end of the FDE that starts exactly at @a, or 0 when none does. */
static uint64_t eh_fde_end(struct tk_elf *elf, const struct eh_hdr *h, uint64_t a)
{
	uint32_t lo = 0, hi = h->count, mid, len, range;
	int32_t loc, fde, begin;
	unsigned char b[16];
	uint64_t at;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		memcpy(&loc, h->buf + 12 + 8 * (size_t)mid, 4);
		if (h->vaddr + loc < a) {
			lo = mid + 1;
		} else if (h->vaddr + loc > a) {
			hi = mid;
		} else {
			memcpy(&fde, h->buf + 12 + 8 * (size_t)mid + 4, 4);
			at = h->vaddr + fde;
			/* length, CIE pointer, pc_begin (pcrel sdata4, as gcc writes), pc_range */
			if (tk_elf__read_vaddr(elf, at, b, sizeof(b)) != sizeof(b))
				return 0;
			memcpy(&len, b, 4);
			memcpy(&begin, b + 8, 4);
			memcpy(&range, b + 12, 4);
			if (len == 0xffffffffu || at + 8 + begin != a || !range)
				return 0;
			return a + range;
		}
	}
	return 0;
}

/* The loop's symbol, .cold, and the FDEs its jumps land on at their start (py_arch.c). */
static void loop_ranges(struct py_image *im, struct tk_elf *elf, const struct syms *y)
{
	uint64_t start = y->eval, size = y->eval_size, tgt, end;
	unsigned char *code = NULL;
	struct eh_hdr h;
	size_t i, n;
	long got;

	add_range(im, start, start + size);
	if (y->cold)
		add_range(im, y->cold, y->cold + y->cold_size);
	if (size > MAX_LOOP_BYTES || eh_hdr_load(elf, &h))
		return;
	code = malloc(size);
	got = code ? tk_elf__read_vaddr(elf, start, code, size) : -ENOMEM;
	n = got > 0 ? (size_t)got : 0;
	for (i = 0; tk_py__next_jump(im->machine, code, n, &i, start, &tgt);) {
		if ((tgt >= start && tgt < start + size) || is_func_start(y, tgt))
			continue;
		end = eh_fde_end(elf, &h, tgt);
		if (end && end - tgt <= MAX_LOOP_BYTES) {
			add_range(im, tgt, end);
			im->split = true;
		}
	}
	free(code);
	free(h.buf);
}

/*
 * The trampoline template's bounds: assembler labels (STT_NOTYPE), which the
 * symbol walk leaves out, so looked up in .dynsym here.
 */
static void tramp_syms(struct tk_elf *elf, struct syms *y)
{
	Elf *e = tk_elf__libelf(elf);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *d;
	size_t i, n;

	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / sh.sh_entsize : 0;
		for (i = 1; i < n && gelf_getsym(d, i, &sym); i++) {
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);

			if (!name || sym.st_shndx == SHN_UNDEF)
				continue;
			if (!strcmp(name, "_Py_trampoline_func_start"))
				y->tramp = sym.st_value;
			else if (!strcmp(name, "_Py_trampoline_func_end"))
				y->tramp_end = sym.st_value;
		}
	}
}

static int tramp_shape(struct tk_elf *elf, struct syms *y)
{
	static const unsigned char sub[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					     0x48, 0x83, 0xc4, 0x08, 0xc3 };
	static const unsigned char push[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	static const unsigned char endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char b[32];
	size_t n, at = 0;

	if (!y->tramp)
		tramp_syms(elf, y);
	if (!y->tramp || y->tramp_end <= y->tramp || y->tramp_end - y->tramp > sizeof(b))
		return UNW_PY_TRAMP_NONE;
	n = y->tramp_end - y->tramp;
	if (tk_elf__read_vaddr(elf, y->tramp, b, n) != (long)n)
		return UNW_PY_TRAMP_NONE;
	if (n >= 4 && !memcmp(b, endbr, 4))
		at = 4;
	if (n - at == sizeof(sub) && !memcmp(b + at, sub, sizeof(sub)))
		return UNW_PY_TRAMP_SUB;
	if (n - at == sizeof(push) && !memcmp(b + at, push, sizeof(push)))
		return UNW_PY_TRAMP_PUSH;
	return UNW_PY_TRAMP_NONE;
}

/* What the file says; im->why set when it is CPython that cannot be walked. */
static int read_image(struct py_image *im, const char *path, int name_minor)
{
	unsigned char dbg[1024];
	struct syms y = { 0 };
	struct tk_elf *elf;
	GElf_Ehdr eh;
	uint32_t v = 0;
	long got;
	int err;

	err = tk_elf__open(path, &elf);
	if (err)
		return err;
	if (tk_elf__libelf(elf) && gelf_getehdr(tk_elf__libelf(elf), &eh))
		im->machine = eh.e_machine;
	err = tk_elf__for_each_sym(elf, sym_cb, &y);
	if (err)
		goto out;
	if (!y.runtime) {
		err = -ENOENT;
		goto out;
	}
	if (y.nr_funcs)
		qsort(y.funcs, y.nr_funcs, sizeof(*y.funcs), cmp_u64);
	im->is_py = true;
	im->shared = tk_elf__type(elf) == 3;	/* ET_DYN */
	im->minor = name_minor;
	im->version = 0x03000000u | (uint32_t)name_minor << 16;
	if (y.version && tk_elf__read_vaddr(elf, y.version, &v, 4) == 4 && (v >> 24) == 3) {
		im->version = v;
		im->minor = (v >> 16) & 0xff;
	}
	im->runtime = y.runtime;
	err = -ENOTSUP;
	if (tk_py_offsets__table(im->minor, &im->off)) {
		snprintf(im->why, sizeof(im->why), "CPython 3.%d: a version tracekit does not "
			 "know (3.%d-3.%d)", im->minor, TK_PY_MIN_MINOR, TK_PY_MAX_MINOR);
		goto out;
	}
	if (!y.eval) {
		snprintf(im->why, sizeof(im->why), "no _PyEval_EvalFrameDefault symbol");
		goto out;
	}
	if (im->machine != TK_ARCH_ELF_MACHINE) {
		/* qemu-user running another architecture's interpreter: not its thread pointer */
		snprintf(im->why, sizeof(im->why), "an interpreter for another architecture (ELF "
			 "machine %u)", im->machine);
		goto out;
	}
	if (im->minor >= 13) {
		uint64_t dv;

		got = tk_elf__read_vaddr(elf, y.runtime, dbg, sizeof(dbg));
		if (got <= 0 || tk_py_offsets__from_debug(dbg, got, im->minor, &dv, &im->off,
							  im->why, sizeof(im->why))) {
			if (!im->why[0])
				snprintf(im->why, sizeof(im->why), "no _Py_DebugOffsets");
			goto out;
		}
		im->debug_offsets = true;
	}
	if (check_members(im, elf, &y))
		goto out;
	if (im->machine == EM_AARCH64 && a64_tss(im, elf, &y))
		goto out;
	loop_ranges(im, elf, &y);
	/* -X perf's trampolines: x86-64's shapes (arm64's keep a frame record) */
	if (im->machine == EM_X86_64)
		im->tramp = tramp_shape(elf, &y);
	err = 0;
out:
	free(y.funcs);
	tk_elf__free(elf);
	return err;
}

static int pmem(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/*
 * Every thread state of the interpreter found back through its thread's
 * key slot: the key, glibc's layout and the offsets agree. A slot still
 * empty (a thread started, not yet bound) or holding another thread state
 * of the list (before 3.11 a new thread's state carries its creator's
 * thread_id until the thread takes it up) is no disagreement. The list is
 * read while the process runs: a thread that exits meanwhile (its state or
 * its pthread unreadable) is left out, and a slot holding a state the list
 * did not have yet (linked after it was read) is read again: only a
 * disagreement that holds over CHECK_TRIES reads is one (one in four runs
 * of a program starting four threads was refused for good before).
 */
#define CHECK_TRIES 5

static int check_threads_once(int fd, const struct py_image *im, uint64_t runtime,
			      uint32_t key, uint64_t *all, struct tk_py_info *info)
{
	uint64_t interp, ts, tid, slot;
	int n = 0, found = 0, i, j, err = 0;
	struct tk_py_glibc g;

	if (tk_py__glibc_layout(im->machine, &g))
		return -ENOTSUP;

	if (pmem(fd, runtime + im->off.rt_interp_head, &interp, 8) || !interp ||
	    pmem(fd, interp + im->off.interp_threads, &ts, 8))
		return -EAGAIN;
	for (; ts && n < MAX_THREADS; n++) {
		all[n] = ts;
		if (pmem(fd, ts + im->off.ts_next, &ts, 8))
			break;
	}
	for (i = 0; i < n && !err; i++) {
		if (pmem(fd, all[i] + im->off.ts_thread_id, &tid, 8) ||
		    pmem(fd, tid + g.tsd_off + g.tsd_stride * key, &slot, 8))
			continue;	/* exiting */
		if (slot == all[i]) {
			found++;
			continue;
		}
		for (j = 0; slot && j < n && all[j] != slot; j++)
			;
		if (slot && j == n)
			err = -ENOTSUP;
	}
	info->threads = n;
	info->threads_found = found;
	if (!err && !found)
		err = -EAGAIN;
	return err;
}

static int check_threads(int fd, const struct py_image *im, uint64_t runtime, uint32_t key,
			 struct tk_py_info *info, char *why, size_t why_sz)
{
	uint64_t *all = malloc(MAX_THREADS * sizeof(*all));
	int err = -ENOTSUP, t;

	if (!all)
		return -ENOMEM;
	for (t = 0; t < CHECK_TRIES; t++) {
		if (t)
			usleep(2000);
		err = check_threads_once(fd, im, runtime, key, all, info);
		if (err != -ENOTSUP)
			break;
	}
	free(all);
	if (err == -ENOTSUP)
		snprintf(why, why_sz, "a thread state is not found through its thread's key slot "
			 "(not glibc, or a layout tracekit does not know)");
	else if (err == -EAGAIN && !info->threads)
		snprintf(why, why_sz, "the interpreter's thread list is unreadable");
	else if (err == -EAGAIN)
		snprintf(why, why_sz, "no thread state bound to its thread yet");
	return err;
}

struct find {
	struct tk_py *py;
	uint32_t pid;
	struct py_image *im;
	uint64_t bias;
	char module[256];
	char libc[64];			/* its libc's /proc/PID/map_files path, "" none */
	struct stat libc_st;
	int err;
};

/* glibc's file: libc.so.6 (2.34+), libc-2.NN.so before */
static bool libc_name(const char *module)
{
	const char *b = module ? tk_path_basename(module) : NULL;

	return b && (!strcmp(b, "libc.so.6") ||
		     (!strncmp(b, "libc-2.", 7) && strlen(b) > 10 && !strcmp(b + strlen(b) - 3, ".so")));
}

static int find_cb(const struct tk_sym_map_info *m, void *ctx)
{
	struct find *f = ctx;
	struct py_image *im;
	char path[64];
	struct stat st;
	int minor;
	bool py = !f->im && py_name(m->module, &minor);

	if ((!py && (f->libc[0] || !libc_name(m->module))) || !m->have_vaddr)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", f->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	if (stat(path, &st))
		return 0;
	if (!py) {
		snprintf(f->libc, sizeof(f->libc), "%s", path);
		f->libc_st = st;
		return f->im ? 1 : 0;
	}
	im = tk_py__image(f->py, st.st_dev, st.st_ino, path, minor);
	if (!im)
		return -ENOMEM;
	if (!im->is_py)
		return 0;
	f->im = im;
	f->bias = m->start - m->vaddr;
	snprintf(f->module, sizeof(f->module), "%s", m->module);
	return f->libc[0] ? 1 : 0;
}

/*
 * arm64: struct pthread's size below the thread pointer, from the process's libc (kept
 * with the interpreter's image for the next process of the same pair). 0, -ENOTSUP with
 * @why set, or -EAGAIN when no libc is in the mappings as captured (the process was
 * captured at exec, before the loader mapped it: measured in the arm64 guests; asked
 * again after the mappings are read again, as after a miss).
 */
static int tp_off(struct find *f, char *why, size_t why_sz)
{
	struct py_image *im = f->im;
	uint32_t off;
	int err;

	if (im->machine != EM_AARCH64)
		return 0;
	if (!f->libc[0]) {
		snprintf(why, why_sz, "no glibc (libc.so.6) in its mappings as read: struct "
			 "pthread's place unknown");
		return -EAGAIN;
	}
	if (im->tp_off && im->libc_dev == f->libc_st.st_dev && im->libc_ino == f->libc_st.st_ino)
		return 0;
	err = tk_py__libc_tp_off(f->libc, &off, why, why_sz);
	if (err)
		return err == -ENOMEM ? err : -ENOTSUP;
	im->libc_dev = f->libc_st.st_dev;
	im->libc_ino = f->libc_st.st_ino;
	im->tp_off = off;
	return 0;
}

int tk_py__detect(struct tk_py *py, struct tk_symbolizer *sym, uint32_t pid, uint32_t gen,
		  struct unw_py *out, struct tk_py_info *info)
{
	struct find f = { .py = py, .pid = pid };
	struct tk_py_info dummy;
	struct tk_py_glibc g;
	struct py_image *im;
	uint32_t tss[2];
	char path[64];
	int fd, err, i;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	memset(out, 0, sizeof(*out));
	err = tk_symbolizer__for_each_map(sym, pid, gen, find_cb, &f);
	if (err < 0)
		return err;
	if (!f.im)
		return -ENOENT;
	im = f.im;
	info->found = true;
	info->minor = im->minor;
	info->version = im->version;
	snprintf(info->module, sizeof(info->module), "%s", f.module);
	info->shared = im->shared;
	info->debug_offsets = im->debug_offsets;
	info->members_checked = im->members_checked;
	info->ranges = im->nranges;
	info->split = im->split;
	info->tramp = im->tramp;
	if (im->why[0]) {
		snprintf(info->why, sizeof(info->why), "%s", im->why);
		tk_py__set_unknown(py, pid, im->why);
		return -ENOTSUP;
	}
	if (tk_py__glibc_layout(im->machine, &g))
		return -ENOTSUP;	/* read_image refused other machines */
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = pmem(fd, f.bias + im->runtime + im->off.rt_tss, tss, sizeof(tss));
	if (err || tss[0] != 1 || tss[1] >= 32) {
		snprintf(info->why, sizeof(info->why), "CPython not initialised yet (no thread "
			 "state key)");
		err = err ? err : -EAGAIN;
		goto out;
	}
	info->key = tss[1];
	err = check_threads(fd, im, f.bias + im->runtime, tss[1], info, info->why,
			    sizeof(info->why));
	/* after the key: at exec its libc is not mapped yet (-EAGAIN above, asked again) */
	if (!err)
		err = tp_off(&f, info->why, sizeof(info->why));
	if (err == -ENOTSUP)
		tk_py__set_unknown(py, pid, info->why);
	if (!err)
		err = tk_py__set_proc(py, pid, gen, im, f.bias);
	if (err)
		goto out;
	tk_py_offsets__to_bpf(&im->off, out);
	out->tss_key = tss[1];
	out->tsd_off = g.tsd_off;
	out->tsd_stride = g.tsd_stride;
	out->tp_off = im->machine == EM_AARCH64 ? im->tp_off : 0;
	out->tramp = im->tramp;
	out->nranges = im->nranges;
	for (i = 0; i < im->nranges; i++) {
		out->lo[i] = f.bias + im->lo[i];
		out->hi[i] = f.bias + im->hi[i];
	}
	info->ready = true;
out:
	close(fd);
	return err;
}

int tk_py__read_image(struct py_image *im, const char *path, int name_minor)
{
	return read_image(im, path, name_minor);
}
