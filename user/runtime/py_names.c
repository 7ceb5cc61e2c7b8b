// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Python frames named: the kernel gives each code object it meets an id
 * (per process, address and a stamp of fields a code object never changes)
 * and tells user space once (unw_py_events). On that event the code
 * object's window is read again from /proc/PID/mem and its stamp compared:
 * the same code object the kernel saw, or nothing (a code object freed and
 * its memory reused since is counted as unreadable, never named as another).
 * Its qualified name (co_qualname, 3.11+; co_name before), file, first line
 * and line table are then kept under the id, so a process that exits during
 * the capture keeps its names, as its native frames do. Memory is bounded
 * (TK_PY_MAX_BYTES): ids past it are counted and stay unnamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "runtime/py_int.h"

#define TK_PY_MAX_BYTES (64ULL << 20)	/* names and line tables of one session */
#define TK_PY_MAX_STR 1024		/* bytes of a name or file name kept */
#define TK_PY_MAX_TABLE (256u << 10)	/* bytes of a line table kept */
#define CODE_CACHE 256			/* code words read for the perf backend's trampolines */

struct py_proc {
	uint32_t pid;			/* never 0: the slot's first word */
	uint32_t gen;
	uint64_t bias;
	const struct py_image *im;
	bool unknown;
};

struct py_code {
	uint32_t id;			/* never 0 */
	uint32_t pid;
	uint64_t code;
	uint32_t stamp;
	int first;
	int minor;
	bool ok;
	const char *name;		/* interned */
	const char *file;
	uint8_t *table;
	uint32_t table_len;
};

/* A code object user space gave an id (tk_py__code_rec): by process, address and stamp. */
struct py_ucode {
	uint32_t id;			/* never 0: the slot's first word */
	uint32_t pid;
	uint64_t code;
	uint32_t stamp;
	uint32_t pad;
};

struct tk_py {
	struct py_image **images;	/* every interpreter file read: few */
	int nr_images;
	struct tk_hashmap procs;	/* struct py_proc by pid */
	struct tk_hashmap codes;	/* struct py_code by id */
	struct tk_hashmap ucodes;	/* struct py_ucode by (pid, code, stamp) */
	uint32_t useq;			/* user space's ids handed out */
	struct tk_strset strs;
	int mem_fd;
	uint32_t mem_pid;
	struct code_word {
		uint64_t addr;		/* 0: empty */
		uint32_t pid;
		int err;
		uint64_t val;
	} code[CODE_CACHE];
	struct tk_py_stats st;
};

static uint64_t proc_hash(const void *rec)
{
	return tk_hash__mix64(((const struct py_proc *)rec)->pid);
}

static bool proc_match(const void *ctx, const void *rec, const void *key)
{
	return ((const struct py_proc *)rec)->pid == *(const uint32_t *)key;
}

static uint64_t code_hash(const void *rec)
{
	return tk_hash__mix64(((const struct py_code *)rec)->id);
}

static bool code_match(const void *ctx, const void *rec, const void *key)
{
	return ((const struct py_code *)rec)->id == *(const uint32_t *)key;
}

static uint64_t ucode_key_hash(uint32_t pid, uint64_t code, uint32_t stamp)
{
	return tk_hash__mix64(code ^ ((uint64_t)stamp << 32) ^ pid);
}

static uint64_t ucode_hash(const void *rec)
{
	const struct py_ucode *c = rec;

	return ucode_key_hash(c->pid, c->code, c->stamp);
}

struct tk_py *tk_py__new(void)
{
	struct tk_py *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	py->procs = (struct tk_hashmap)TK_HASHMAP_INIT(struct py_proc, proc_hash);
	py->codes = (struct tk_hashmap)TK_HASHMAP_INIT(struct py_code, code_hash);
	py->ucodes = (struct tk_hashmap)TK_HASHMAP_INIT(struct py_ucode, ucode_hash);
	py->mem_fd = -1;
	return py;
}

void tk_py__free(struct tk_py *py)
{
	struct py_code *c;
	size_t i = 0;
	int j;

	if (!py)
		return;
	while ((c = tk_hashmap__next(&py->codes, &i)))
		free(c->table);
	tk_hashmap__free(&py->codes);
	tk_hashmap__free(&py->ucodes);
	tk_hashmap__free(&py->procs);
	tk_strset__free(&py->strs);
	for (j = 0; j < py->nr_images; j++)
		free(py->images[j]);
	free(py->images);
	if (py->mem_fd >= 0)
		close(py->mem_fd);
	free(py);
}

struct py_image *tk_py__image(struct tk_py *py, dev_t dev, ino_t ino, const char *path,
			      int minor)
{
	struct py_image *im, **a;
	int i;

	for (i = 0; i < py->nr_images; i++)
		if (py->images[i]->dev == dev && py->images[i]->ino == ino)
			return py->images[i];
	a = realloc(py->images, (py->nr_images + 1) * sizeof(*a));
	if (!a)
		return NULL;
	py->images = a;
	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->dev = dev;
	im->ino = ino;
	/* not the interpreter (is_py false), or one it cannot walk (why set) */
	tk_py__read_image(im, path, minor);
	py->images[py->nr_images++] = im;
	return im;
}

static struct py_proc *proc_slot(struct tk_py *py, uint32_t pid)
{
	struct py_proc *p;
	bool found;

	p = tk_hashmap__insert(&py->procs, tk_hash__mix64(pid), proc_match, NULL, &pid, &found);
	if (p && !found)
		p->pid = pid;
	return p;
}

int tk_py__set_proc(struct tk_py *py, uint32_t pid, uint32_t gen, const struct py_image *im,
		    uint64_t bias)
{
	struct py_proc *p = proc_slot(py, pid);

	if (!p)
		return -ENOMEM;
	p->gen = gen;
	if (!p->im)
		py->st.processes++;
	p->im = im;
	p->bias = bias;
	p->unknown = false;
	return 0;
}

void tk_py__set_unknown(struct tk_py *py, uint32_t pid, const char *why)
{
	struct py_proc *p = proc_slot(py, pid);

	snprintf(py->st.last_unknown, sizeof(py->st.last_unknown), "%s", why);
	if (!p || p->unknown)
		return;
	p->unknown = true;
	py->st.unknown_version++;
}

void tk_py__forget(struct tk_py *py, uint32_t pid)
{
	/* its entry stays: its samples' interpreter frames are still to name */
	if (py->mem_pid == pid && py->mem_fd >= 0) {
		close(py->mem_fd);
		py->mem_fd = -1;
	}
}

static int mem_read(struct tk_py *py, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (py->mem_fd < 0 || py->mem_pid != pid) {
		if (py->mem_fd >= 0)
			close(py->mem_fd);
		snprintf(path, sizeof(path), "/proc/%u/mem", pid);
		py->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		py->mem_pid = pid;
		if (py->mem_fd < 0)
			return -errno;
	}
	n = pread(py->mem_fd, buf, len, (off_t)addr);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* A str object as UTF-8 (latin-1, UCS-2 and UCS-4 converted) into @out (TK_PY_MAX_STR). */
static int read_str(struct tk_py *py, uint32_t pid, const struct tk_py_offsets *o, uint64_t s,
		    char *out)
{
	uint8_t hdr[64], data[TK_PY_MAX_STR];
	uint32_t state, kind, i, n;
	uint64_t len, at;
	size_t k = 0;

	if (!s || o->str_ascii > sizeof(hdr) || mem_read(py, pid, s, hdr, o->str_ascii))
		return -EFAULT;
	memcpy(&len, hdr + o->str_length, 8);
	memcpy(&state, hdr + o->str_state, 4);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;		/* not a compact string: not a name CPython makes */
	at = s + (state & (1u << 6) ? o->str_ascii : o->str_compact);
	n = len * kind > sizeof(data) ? sizeof(data) / kind : (uint32_t)len;
	if (n && mem_read(py, pid, at, data, (size_t)n * kind))
		return -EFAULT;
	for (i = 0; i < n && k + 5 < TK_PY_MAX_STR; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ? (uint32_t)data[2 * i] |
			     (uint32_t)data[2 * i + 1] << 8 : (uint32_t)data[4 * i] |
			     (uint32_t)data[4 * i + 1] << 8 | (uint32_t)data[4 * i + 2] << 16 |
			     (uint32_t)data[4 * i + 3] << 24;

		if (c < 0x80 && c >= 0x20) {
			out[k++] = c;
		} else if (c < 0x80) {
			out[k++] = '?';		/* a control character: not written */
		} else if (c < 0x800) {
			out[k++] = 0xc0 | c >> 6;
			out[k++] = 0x80 | (c & 63);
		} else if (c < 0x10000 && (c < 0xd800 || c > 0xdfff)) {
			out[k++] = 0xe0 | c >> 12;
			out[k++] = 0x80 | (c >> 6 & 63);
			out[k++] = 0x80 | (c & 63);
		} else if (c >= 0x10000 && c < 0x110000) {
			out[k++] = 0xf0 | c >> 18;
			out[k++] = 0x80 | (c >> 12 & 63);
			out[k++] = 0x80 | (c >> 6 & 63);
			out[k++] = 0x80 | (c & 63);
		} else {
			out[k++] = '?';
		}
	}
	out[k] = '\0';
	return 0;
}

static int read_code(struct tk_py *py, const struct py_proc *p, const struct unw_py_event *e,
		     struct py_code *c)
{
	const struct tk_py_offsets *o = &p->im->off;
	char name[TK_PY_MAX_STR], file[TK_PY_MAX_STR];
	uint64_t lines, namep, filep, tlen;
	uint8_t w[UNW_PY_FRAME_BUF] = { 0 };
	struct unw_py u;
	uint32_t first;
	int err;

	tk_py_offsets__to_bpf(o, &u);
	err = mem_read(py, e->tgid, e->code + u.co_win, w, UNW_PY_CODE_WIN);
	if (err)
		return err;
	lines = unw_py_u64(w, u.co_lines);
	namep = unw_py_u64(w, u.co_name);
	first = unw_py_u32(w, u.co_first);
	if (unw_py_stamp(&u, w) != e->stamp)
		return -ESTALE;		/* not the code object the kernel saw any more */
	if (mem_read(py, e->tgid, e->code + o->co_filename, &filep, 8))
		return -EFAULT;
	err = read_str(py, e->tgid, o, namep, name);
	if (!err)
		err = read_str(py, e->tgid, o, filep, file);
	if (err)
		return err;
	if (lines && !mem_read(py, e->tgid, lines + o->bytes_size, &tlen, 8) && tlen) {
		if (tlen > TK_PY_MAX_TABLE)
			tlen = TK_PY_MAX_TABLE;
		c->table = malloc(tlen);
		if (c->table && !mem_read(py, e->tgid, lines + o->bytes_data, c->table, tlen)) {
			c->table_len = tlen;
		} else {
			free(c->table);
			c->table = NULL;
		}
	}
	c->name = tk_strset__intern(&py->strs, name);
	c->file = tk_strset__intern(&py->strs, file);
	if (!c->name || !c->file) {
		free(c->table);
		c->table = NULL;
		return -ENOMEM;
	}
	c->first = (int)first;
	c->minor = o->minor;
	py->st.bytes += strlen(name) + strlen(file) + 2 + c->table_len + sizeof(*c);
	return 0;
}

void tk_py__on_event(struct tk_py *py, const struct unw_py_event *e)
{
	struct py_proc *p;
	struct py_code *c;
	bool found;

	if (!e->id)
		return;
	py->st.ids++;
	c = tk_hashmap__insert(&py->codes, tk_hash__mix64(e->id), code_match, NULL, &e->id,
			       &found);
	if (!c)
		return;
	if (found) {
		/* an id given again (24 bits of sequence wrapped): the newer code object */
		free(c->table);
		py->st.names -= c->ok;
	}
	memset(c, 0, sizeof(*c));
	c->id = e->id;
	c->pid = e->tgid;
	c->code = e->code;
	c->stamp = e->stamp;
	if (py->st.bytes >= TK_PY_MAX_BYTES) {
		py->st.names_dropped++;
		return;
	}
	p = tk_hashmap__find(&py->procs, tk_hash__mix64(e->tgid), proc_match, NULL, &e->tgid);
	if (!p || !p->im || read_code(py, p, e, c))
		return;
	c->ok = true;
	py->st.names++;
}

int tk_py__frame(struct tk_py *py, uint32_t pid, uint64_t rec, struct tk_py_frame *out)
{
	uint32_t id = UNW_PY_REC_ID(rec), idx = UNW_PY_REC_IDX(rec);
	struct py_code *c = NULL;

	memset(out, 0, sizeof(*out));
	if (id)
		c = tk_hashmap__find(&py->codes, tk_hash__mix64(id), code_match, NULL, &id);
	if (!c || !c->ok || c->pid != pid) {
		py->st.name_unreadable++;
		return -ENOENT;
	}
	out->name = c->name;
	out->file = c->file;
	out->first_line = c->first;
	if (idx == UNW_PY_IDX_START) {
		out->line = c->first;
		return 0;
	}
	if (idx == UNW_PY_IDX_UNKNOWN ||
	    tk_py_line(c->minor, c->table, c->table_len, c->first, idx, &out->line) ||
	    !out->line) {
		out->line = 0;
		py->st.line_unknown++;
	}
	return 0;
}

void tk_py__stats(const struct tk_py *py, struct tk_py_stats *st)
{
	*st = py->st;
}

void tk_py__count_unavailable(struct tk_py *py, uint64_t n)
{
	py->st.perf_frames_unavailable += n;
}

bool tk_py__in_loop(struct tk_py *py, uint32_t pid, uint32_t gen, uint64_t addr)
{
	struct py_proc *p = tk_hashmap__find(&py->procs, tk_hash__mix64(pid), proc_match, NULL,
					     &pid);
	int i;

	if (!p || !p->im || p->gen != gen)
		return false;
	for (i = 0; i < p->im->nranges; i++)
		if (addr >= p->bias + p->im->lo[i] && addr < p->bias + p->im->hi[i])
			return true;
	return false;
}

int tk_py__tramp(struct tk_py *py, uint32_t pid, uint32_t gen)
{
	struct py_proc *p = tk_hashmap__find(&py->procs, tk_hash__mix64(pid), proc_match, NULL,
					     &pid);

	return p && p->im && p->gen == gen ? p->im->tramp : 0;
}

int tk_py__read_code(struct tk_py *py, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct code_word *w = &py->code[tk_hash__mix64(addr ^ pid) & (CODE_CACHE - 1)];

	if (len > sizeof(w->val))
		return -EINVAL;
	if (w->addr != addr || w->pid != pid) {
		w->addr = addr;
		w->pid = pid;
		w->val = 0;
		w->err = mem_read(py, pid, addr, &w->val, sizeof(w->val));
	}
	memcpy(buf, &w->val, len);
	return w->err;
}

int tk_py__mem(struct tk_py *py, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return mem_read(py, pid, addr, buf, len);
}

const struct py_image *tk_py__proc_image(struct tk_py *py, uint32_t pid, uint64_t *bias)
{
	struct py_proc *p = tk_hashmap__find(&py->procs, tk_hash__mix64(pid), proc_match, NULL,
					     &pid);

	if (!p || !p->im || p->unknown)
		return NULL;
	*bias = p->bias;
	return p->im;
}

static bool ucode_match(const void *ctx, const void *rec, const void *key)
{
	const struct py_ucode *a = rec, *b = key;

	return a->pid == b->pid && a->code == b->code && a->stamp == b->stamp;
}

int tk_py__code_rec(struct tk_py *py, uint32_t pid, const struct unw_py *u, uint64_t code,
		    uint32_t idx, uint64_t *rec)
{
	uint8_t w[UNW_PY_FRAME_BUF] = { 0 };
	struct py_ucode k = { .pid = pid, .code = code }, *c;
	struct unw_py_event e;
	bool found;
	int err;

	*rec = UNW_PY_REC(0, idx);
	err = mem_read(py, pid, code + u->co_win, w, UNW_PY_CODE_WIN);
	if (err)
		return err;
	k.stamp = unw_py_stamp(u, w);
	c = tk_hashmap__insert(&py->ucodes, ucode_key_hash(pid, code, k.stamp),
			       ucode_match, NULL, &k, &found);
	if (!c)
		return -ENOMEM;
	if (!found) {
		/* 32 bits of ids: a session would have to meet 4 billion code objects */
		if (++py->useq == 0)
			py->useq = 1;
		k.id = py->useq;
		*c = k;
		e = (struct unw_py_event){ .id = k.id, .tgid = pid, .code = code,
					   .stamp = k.stamp };
		tk_py__on_event(py, &e);
	}
	*rec = UNW_PY_REC(c->id, idx);
	return 0;
}
