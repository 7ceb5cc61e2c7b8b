// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ELF indexes for the symbolizer: function symbols sorted by address, and the
 * PT_LOAD segments that turn a file offset into the address the symbols use.
 * Symbols come from the file's .symtab; a file without one gets the .symtab
 * of its debug file (by build-id under debug_root, then by .gnu_debuglink
 * name) and only then its .dynsym. Symbols and the build-id are read with
 * elf_reader; program headers and .gnu_debuglink with libelf directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/untrusted.h"
#include "proc/elf_reader.h"
#include "sym/symbolize_int.h"
#include "unwind/unwind.h"

int tk_elf_file__open(struct tk_elf_file *f, const char *path)
{
	int err;

	memset(f, 0, sizeof(*f));
	err = tk_elf__open(path, &f->elf);
	if (err)
		return err;
	f->path = path;
	if (tk_elf__build_id(f->elf, f->build_id, sizeof(f->build_id)) < 0)
		f->build_id[0] = '\0';
	f->has_symtab = tk_elf__has_symtab(f->elf);
	return 0;
}

int tk_elf_file__open_mem(struct tk_elf_file *f, const void *buf, size_t len)
{
	int err;

	memset(f, 0, sizeof(*f));
	err = tk_elf__open_mem(buf, len, &f->elf);
	if (err)
		return err;
	f->mem = buf;
	f->mem_len = len;
	if (tk_elf__build_id(f->elf, f->build_id, sizeof(f->build_id)) < 0)
		f->build_id[0] = '\0';
	f->has_symtab = tk_elf__has_symtab(f->elf);
	return 0;
}

void tk_elf_file__close(struct tk_elf_file *f)
{
	tk_elf__free(f->elf);
	f->elf = NULL;
}

/* ---- program headers and .gnu_debuglink, through libelf ------------------------- */

struct elf_headers {
	struct tk_elf_seg *segs;
	size_t nr_segs;
	char debuglink[NAME_MAX + 1];	/* "" when none */
	uint32_t debuglink_crc;
};

static void read_debuglink(Elf *e, const GElf_Ehdr *ehdr, struct elf_headers *h)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, len, off;
	const unsigned char *p;
	const char *name;
	Elf_Data *data;
	GElf_Shdr shdr;

	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(e, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return;
		/* the file name, NUL, padding to 4, then the CRC-32 */
		p = data->d_buf;
		len = strnlen((const char *)p, data->d_size);
		off = (len + 4) & ~(size_t)3;
		if (len == 0 || len >= sizeof(h->debuglink) || off + 4 > data->d_size)
			return;
		memcpy(h->debuglink, p, len);
		h->debuglink[len] = '\0';
		if (ehdr->e_ident[EI_DATA] == ELFDATA2MSB)
			h->debuglink_crc = (uint32_t)p[off] << 24 | p[off + 1] << 16 |
					   p[off + 2] << 8 | p[off + 3];
		else
			h->debuglink_crc = (uint32_t)p[off + 3] << 24 | p[off + 2] << 16 |
					   p[off + 1] << 8 | p[off];
		return;
	}
}

static int read_headers(const struct tk_elf_file *f, struct elf_headers *h)
{
	void *copy = NULL;
	size_t n, i;
	GElf_Ehdr ehdr;
	GElf_Phdr phdr;
	int fd = -1, err = 0;
	Elf *e;

	memset(h, 0, sizeof(*h));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (f->path) {
		fd = tk_open_regular(f->path, NULL);
		if (fd < 0)
			return fd;
		/* read, not mapped: a file truncated meanwhile must not SIGBUS us */
		e = elf_begin(fd, ELF_C_READ, NULL);
	} else {
		/* elf_memory() may write to its image */
		copy = malloc(f->mem_len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, f->mem, f->mem_len);
		e = elf_memory(copy, f->mem_len);
	}
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr) || elf_getphdrnum(e, &n)) {
		err = -ENOEXEC;
		goto out;
	}
	h->segs = calloc(n ? n : 1, sizeof(*h->segs));
	if (!h->segs) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		h->segs[h->nr_segs].vaddr = phdr.p_vaddr;
		h->segs[h->nr_segs].offset = phdr.p_offset;
		h->segs[h->nr_segs].filesz = phdr.p_filesz;
		h->nr_segs++;
	}
	read_debuglink(e, &ehdr, h);
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	free(copy);
	return err;
}

int tk_file_crc32(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t n;
	int fd;

	fd = tk_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	*crc = (uint32_t)c;
	return 0;
}

/* ---- symbols ---------------------------------------------------------------------- */

int tk_sort_items(struct tk_sort_item *a, size_t n)
{
	struct tk_sort_item *tmp, *src = a, *dst;
	size_t count[256], i, pos;
	uint64_t diff = 0;
	int shift;

	if (n < 2)
		return 0;
	for (i = 1; i < n; i++)
		diff |= a[i].key ^ a[0].key;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	/* least significant byte first; bytes that are the same in every key are skipped */
	for (shift = 0; shift < 64; shift += 8) {
		struct tk_sort_item *t;

		if (!((diff >> shift) & 0xff))
			continue;
		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(src[i].key >> shift) & 0xff]++;
		for (i = 0, pos = 0; i < 256; i++) {
			size_t c = count[i];

			count[i] = pos;
			pos += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	return 0;
}

struct raw_sym {
	uint64_t addr;
	uint64_t size;
	uint32_t name;
	uint32_t name_len;
	unsigned char bind;
};

struct collect {
	struct raw_sym *syms;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	bool dynamic;		/* take .dynsym symbols, else .symtab ones */
};

static int collect_sym(const struct tk_elf_sym *s, void *ctx)
{
	struct collect *c = ctx;
	size_t len;

	if (s->dynamic != c->dynamic || !s->defined || s->type != TK_ELF_SYM_FUNC || !s->value)
		return 0;
	len = strlen(s->name);
	if (len >= UINT32_MAX / 2 || c->names_len > UINT32_MAX - len - 1)
		return -E2BIG;
	if (c->nr == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct raw_sym *p = realloc(c->syms, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->syms = p;
		c->cap = cap;
	}
	if (c->names_len + len + 1 > c->names_cap) {
		size_t cap = c->names_cap ? c->names_cap * 2 : 4096;
		char *p;

		while (cap < c->names_len + len + 1)
			cap *= 2;
		p = realloc(c->names, cap);
		if (!p)
			return -ENOMEM;
		c->names = p;
		c->names_cap = cap;
	}
	memcpy(c->names + c->names_len, s->name, len + 1);
	c->syms[c->nr++] = (struct raw_sym){
		.addr = s->value,
		.size = s->size,
		.name = c->names_len,
		.name_len = len,
		.bind = s->bind,
	};
	c->names_len += len + 1;
	return 0;
}

static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Of several symbols at one address (aliases: write, __write, __libc_write,
 * __GI___libc_write), the one a reader expects: sized, visible outside its
 * file, fewest leading underscores, global rather than weak, shortest.
 */
static bool better_sym(const struct raw_sym *a, const struct raw_sym *b, const char *names)
{
	const char *na = names + a->name, *nb = names + b->name;
	bool la = a->bind == STB_LOCAL, lb = b->bind == STB_LOCAL;
	size_t ua, ub;

	if (!a->size != !b->size)
		return a->size;
	if (la != lb)
		return lb;
	ua = underscores(na);
	ub = underscores(nb);
	if (ua != ub)
		return ua < ub;
	if (a->bind != b->bind)
		return a->bind == STB_GLOBAL;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len;
	return strcmp(na, nb) < 0;
}

/* The end of the segment holding @vaddr, or 0. */
static uint64_t seg_end(const struct tk_elf_index *idx, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < idx->nr_segs; i++) {
		const struct tk_elf_seg *s = &idx->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
			return s->vaddr + s->filesz;
	}
	return 0;
}

/* Sort, keep one symbol per address, give unsized ones the room up to the next. */
static int finish_syms(struct tk_elf_index *idx, struct collect *c)
{
	struct tk_sort_item *order;
	size_t i, j, n = 0;
	int err;

	if (!c->nr)
		return 0;
	order = malloc(c->nr * sizeof(*order));
	idx->syms = malloc(c->nr * sizeof(*idx->syms));
	if (!order || !idx->syms) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < c->nr; i++)
		order[i] = (struct tk_sort_item){ c->syms[i].addr, i };
	err = tk_sort_items(order, c->nr);
	if (err) {
		free(order);
		return err;
	}
	for (i = 0; i < c->nr; i = j) {
		const struct raw_sym *best = &c->syms[order[i].val];

		for (j = i + 1; j < c->nr && order[j].key == order[i].key; j++) {
			if (better_sym(&c->syms[order[j].val], best, c->names))
				best = &c->syms[order[j].val];
		}
		idx->syms[n].addr = best->addr;
		idx->syms[n].size = best->size > UINT32_MAX ? UINT32_MAX : best->size;
		idx->syms[n].name = best->name;
		n++;
	}
	free(order);
	if (n < c->nr) {
		struct tk_elf_fsym *shrunk = realloc(idx->syms, n * sizeof(*idx->syms));

		if (shrunk)
			idx->syms = shrunk;
	}
	for (i = 0; i < n; i++) {
		uint64_t end;

		if (idx->syms[i].size)
			continue;
		if (i + 1 < n)
			end = idx->syms[i + 1].addr;
		else
			end = seg_end(idx, idx->syms[i].addr);
		if (end <= idx->syms[i].addr)
			end = idx->syms[i].addr + 1;
		idx->syms[i].size = end - idx->syms[i].addr > UINT32_MAX ?
					    UINT32_MAX : end - idx->syms[i].addr;
	}
	idx->nr_syms = n;
	idx->names = realloc(c->names, c->names_len);
	if (!idx->names)
		idx->names = c->names;
	c->names = NULL;
	return 0;
}

static int collect_from(struct tk_elf *elf, bool dynamic, struct tk_elf_index *idx)
{
	struct collect c = { .dynamic = dynamic };
	int err;

	err = tk_elf__for_each_sym(elf, collect_sym, &c);
	/* a symbol table too big for 32-bit offsets keeps what fit */
	if (!err || err == -E2BIG)
		err = finish_syms(idx, &c);
	free(c.syms);
	free(c.names);
	return err;
}

/* ---- debug files -------------------------------------------------------------------- */

static bool debuglink_name_ok(const char *name)
{
	return name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/*
 * Is @cand a debug file of @f? Build-ids decide when both have one; else the
 * CRC-32 of .gnu_debuglink, when it named the file.
 */
static bool debug_file_matches(const struct tk_elf_file *f, const struct tk_elf_file *cand,
			       const char *path, bool by_link, uint32_t crc)
{
	uint32_t c;

	if (!cand->has_symtab)
		return false;
	if (f->build_id[0] && cand->build_id[0])
		return !strcmp(f->build_id, cand->build_id);
	if (!by_link)
		return true;
	return tk_file_crc32(path, &c) == 0 && c == crc;
}

static int try_debug_file(struct tk_elf_index *idx, const struct tk_elf_file *f, const char *path,
			  bool by_link, uint32_t crc)
{
	struct tk_elf_file cand;
	int err;

	if (access(path, R_OK))
		return -ENOENT;
	if (tk_elf_file__open(&cand, path))
		return -ENOENT;
	if (!debug_file_matches(f, &cand, path, by_link, crc)) {
		tk_elf_file__close(&cand);
		return -ENOENT;
	}
	err = collect_from(cand.elf, false, idx);
	tk_elf_file__close(&cand);
	if (err)
		return err;
	if (!idx->nr_syms)
		return -ENOENT;
	idx->from = TK_SYMS_DEBUG_FILE;
	idx->debug_path = strdup(path);
	return idx->debug_path ? 0 : -ENOMEM;
}

/*
 * Where gdb looks, in this order: debug_root/.build-id/xx/rest.debug, then
 * the .gnu_debuglink name under debug_root + the file's directory, next to
 * the file (in the process's root, then ours), and in its .debug directory.
 */
static int find_debug_file(struct tk_elf_index *idx, const struct tk_elf_file *f,
			   const struct elf_headers *h, const struct tk_debug_search *ds)
{
	const char *orig = ds->orig_path ? ds->orig_path : f->path;
	const char *root = ds->debug_root, *link = h->debuglink;
	char path[PATH_MAX], dir[PATH_MAX];
	int err, i, n;

	if (root && strlen(f->build_id) > 2) {
		n = snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", root, f->build_id,
			     f->build_id + 2);
		if (n > 0 && (size_t)n < sizeof(path)) {
			err = try_debug_file(idx, f, path, false, 0);
			if (err != -ENOENT)
				return err;
		}
	}
	if (!link[0] || !debuglink_name_ok(link) || !orig || orig[0] != '/')
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(orig, '/') - orig), orig);
	for (i = 0; i < 4; i++) {
		switch (i) {
		case 0:
			if (!root)
				continue;
			n = snprintf(path, sizeof(path), "%s%s/%s", root, dir, link);
			break;
		case 1:
			if (!ds->proc_root || !ds->pid)
				continue;
			n = snprintf(path, sizeof(path), "%s/%u/root%s/%s", ds->proc_root, ds->pid,
				     dir, link);
			break;
		case 2:
			n = snprintf(path, sizeof(path), "%s/%s", dir, link);
			break;
		default:
			n = snprintf(path, sizeof(path), "%s/.debug/%s", dir, link);
			break;
		}
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		err = try_debug_file(idx, f, path, true, h->debuglink_crc);
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}

/* ---- the index ------------------------------------------------------------------------ */

struct tk_elf_index *tk_elf_index__empty(void)
{
	return calloc(1, sizeof(struct tk_elf_index));
}

void tk_elf_index__free(struct tk_elf_index *idx)
{
	if (!idx)
		return;
	tk_unw_table__free(idx->unw);
	free(idx->build_id);
	free(idx->segs);
	free(idx->syms);
	free(idx->names);
	free(idx->debug_path);
	free(idx);
}

int tk_elf_index__build(struct tk_elf_file *f, const struct tk_debug_search *ds,
			struct tk_elf_index **out)
{
	struct tk_elf_index *idx;
	struct elf_headers h;
	int err;

	*out = NULL;
	idx = tk_elf_index__empty();
	if (!idx)
		return -ENOMEM;
	err = read_headers(f, &h);
	if (err == -ENOMEM)
		goto fail;
	idx->segs = h.segs;
	idx->nr_segs = h.nr_segs;
	if (f->build_id[0] && !(idx->build_id = strdup(f->build_id))) {
		err = -ENOMEM;
		goto fail;
	}
	if (f->has_symtab) {
		err = collect_from(f->elf, false, idx);
		if (err)
			goto fail;
		idx->from = TK_SYMS_SYMTAB;
	}
	if (!idx->nr_syms && ds) {
		err = find_debug_file(idx, f, &h, ds);
		if (err && err != -ENOENT)
			goto fail;
	}
	if (!idx->nr_syms) {
		err = collect_from(f->elf, true, idx);
		if (err)
			goto fail;
		idx->from = idx->nr_syms ? TK_SYMS_DYNSYM : TK_SYMS_NONE;
	}
	*out = idx;
	return 0;
fail:
	tk_elf_index__free(idx);
	return err;
}

bool tk_elf_index__vaddr(const struct tk_elf_index *idx, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < idx->nr_segs; i++) {
		const struct tk_elf_seg *s = &idx->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

const char *tk_elf_index__find(const struct tk_elf_index *idx, uint64_t vaddr)
{
	size_t lo = 0, hi = idx->nr_syms, i, back;

	/* the last symbol starting at or below @vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a few steps back, for a sized symbol that encloses smaller ones */
	for (i = lo, back = 0; i > 0 && back < 4; i--, back++) {
		const struct tk_elf_fsym *s = &idx->syms[i - 1];

		if (vaddr - s->addr < s->size)
			return idx->names + s->name;
	}
	return NULL;
}
