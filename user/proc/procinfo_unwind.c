// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How a process's code can be unwound, seen from outside it (a part of
 * tk_proc_info__read(), procinfo.c). Each executable object (r-xp file
 * mappings, the [vdso] read from PID/mem) is looked at cheaply: CFI sections
 * present (its own, or in a debug file under /usr/lib/debug found by build-id
 * or .gnu_debuglink), and the same prologue heuristic for frame pointers as
 * for the main binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "proc/elf_reader.h"
#include "core/fsutil.h"
#include "core/untrusted.h"
#include "proc/procinfo.h"
#include "proc/procinfo_int.h"
#include "proc/x86_prologue.h"

#define FP_MAX_CHECKED 200
#define FP_WINDOW 64
#define FP_MIN_CHECKED 8
#define VDSO_MAX (1u << 20)
#define DEBUG_DIR "/usr/lib/debug"

/* --- frame pointers ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The prologue heuristic on the functions of @elf (@f's): 1 when half of a
 * sample of them set up %rbp, 0 when under a tenth do, else -1 (as when there
 * are too few to tell). The counts into @checked and @with, the why into @ev.
 */
static tk_tristate fp_heuristic(struct tk_elf *elf, struct sym_facts *f, unsigned int *checked,
				unsigned int *with, char *ev, size_t ev_size)
{
	unsigned char code[FP_WINDOW];
	size_t i, n = 0, step_n;

	*checked = *with = 0;
	if (tk_elf__type(elf) != ET_EXEC && tk_elf__type(elf) != ET_DYN) {
		say(ev, ev_size, "not an executable");
		return -1;
	}
	if (f->nfuncs == 0) {
		say(ev, ev_size,
		    tk_elf__has_symtab(elf) ? "no function symbols in .text" : "no symbol table");
		return -1;
	}
	qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), cmp_u64);
	for (i = 0; i < f->nfuncs; i++)
		if (!n || f->funcs[i] != f->funcs[n - 1])
			f->funcs[n++] = f->funcs[i];
	/* spread the sample over the whole text, not just its first objects */
	step_n = n < FP_MAX_CHECKED ? n : FP_MAX_CHECKED;
	for (i = 0; i < step_n; i++) {
		uint64_t addr = f->funcs[(uint64_t)i * n / step_n];
		long got = tk_elf__read_vaddr(elf, addr, code, sizeof(code));

		if (got < 8)
			continue;
		(*checked)++;
		if (tk_x86__sets_frame_pointer(code, got))
			(*with)++;
	}
	if (*checked < FP_MIN_CHECKED) {
		say(ev, ev_size, "only %u function%s of %u bytes or more to check", *checked,
		    *checked == 1 ? "" : "s", FP_MIN_SIZE);
		return -1;
	}
	say(ev, ev_size, "heuristic: %u of %u function prologues set up %%rbp", *with, *checked);
	if (*with * 2 >= *checked)
		return 1;
	return *with * 10 < *checked ? 0 : -1;
}

void tk_proc_frame_pointers(struct tk_proc_info *out, struct tk_elf *exe, struct sym_facts *f)
{
	out->frame_pointers = fp_heuristic(exe, f, &out->fp_checked, &out->fp_with_frame,
					   out->fp_evidence, sizeof(out->fp_evidence));
}

/* --- executable objects: CFI and frame pointers ---------------------------------------- */

const char *tk_cfi_source__name(enum tk_cfi_source s)
{
	switch (s) {
	case TK_CFI_NONE:
		return "none";
	case TK_CFI_EH_FRAME:
		return "eh_frame";
	case TK_CFI_DEBUG_FRAME:
		return "debug_frame";
	case TK_CFI_DEBUG_FILE:
		return "debug_file";
	case TK_CFI_UNKNOWN:
	default:
		return "unknown";
	}
}

const char *tk_proc_object__unwind(const struct tk_proc_object *o)
{
	switch (o->cfi) {
	case TK_CFI_EH_FRAME:
	case TK_CFI_DEBUG_FRAME:
	case TK_CFI_DEBUG_FILE:
		return o->frame_pointers == 1 ? "cfi+fp" : "cfi";
	case TK_CFI_NONE:
		return o->frame_pointers == 1 ? "fp" : o->frame_pointers == 0 ? "none" : "unknown";
	case TK_CFI_UNKNOWN:
	default:
		return "unknown";
	}
}

struct cfi_facts {
	bool eh_frame;		/* .eh_frame with more than its 4-byte terminator */
	bool debug_frame;	/* .debug_frame (or the old .zdebug_frame) with contents */
	long fdes;		/* .eh_frame_hdr's fde_count, -1 unknown */
	char debuglink[256];	/* .gnu_debuglink's file name, "" when none */
};

/* Bytes of a DW_EH_PE_* value of format @enc (its low four bits); 0 when unknown. */
static size_t eh_pe_size(unsigned char enc)
{
	switch (enc & 0x0f) {
	case 0x00:		/* absptr */
	case 0x04:		/* udata8 */
	case 0x0c:		/* sdata8 */
		return 8;
	case 0x02:		/* udata2 */
	case 0x0a:		/* sdata2 */
		return 2;
	case 0x03:		/* udata4 */
	case 0x0b:		/* sdata4 */
		return 4;
	}
	return 0;
}

/* fde_count of an .eh_frame_hdr (version 1, little-endian), or -1. */
static long eh_frame_hdr_fdes(const unsigned char *b, size_t len)
{
	size_t ptr_size, count_size, i;
	uint64_t v = 0;

	if (len < 4 || b[0] != 1 || b[2] == 0xff || (b[2] & 0x70))
		return -1;
	ptr_size = b[1] == 0xff ? 0 : eh_pe_size(b[1]);
	count_size = eh_pe_size(b[2]);
	if ((!ptr_size && b[1] != 0xff) || !count_size || (b[2] & 0x08) ||
	    len < 4 + ptr_size + count_size)
		return -1;
	for (i = 0; i < count_size; i++)
		v |= (uint64_t)b[4 + ptr_size + i] << (8 * i);
	return v > LONG_MAX ? -1 : (long)v;
}

/* The CFI sections of @e (and its debuglink); headers and small sections only. */
static void scan_sections(Elf *e, struct cfi_facts *c)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t shstrndx;

	memset(c, 0, sizeof(*c));
	c->fdes = -1;
	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame")) {
			c->eh_frame = c->eh_frame || sh.sh_size > 4;
		} else if (!strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame")) {
			c->debug_frame = true;
		} else if (!strcmp(name, ".eh_frame_hdr") &&
			   eh.e_ident[EI_DATA] == ELFDATA2LSB) {
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf)
				c->fdes = eh_frame_hdr_fdes(d->d_buf, d->d_size);
		} else if (!strcmp(name, ".gnu_debuglink")) {
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size) {
				size_t n = strnlen(d->d_buf, d->d_size);

				/* a file name, no directories */
				if (n < d->d_size && n < sizeof(c->debuglink) &&
				    !memchr(d->d_buf, '/', n))
					memcpy(c->debuglink, d->d_buf, n);
			}
		}
	}
}

/* scan_sections() of the file at @path. Returns 0 or a negative errno. */
static int scan_file(const char *path, struct cfi_facts *c)
{
	int fd, err = 0;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* checked before it is opened: never a FIFO or a device put where a library was */
	fd = tk_open_regular(path, NULL);
	if (fd < 0)
		return fd == -ENODEV || fd == -EISDIR ? -ENOEXEC : fd;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		err = -ENOEXEC;
	else
		scan_sections(e, c);
	elf_end(e);
	close(fd);
	return err;
}

/* Does the ELF file at @path carry a build-id other than @build_id? */
static bool other_build(const char *path, const char *build_id)
{
	char id[2 * 64 + 1];
	struct tk_elf *elf;
	bool other;

	if (tk_elf__open(path, &elf))
		return false;
	other = tk_elf__build_id(elf, id, sizeof(id)) > 0 && strcmp(id, build_id);
	tk_elf__free(elf);
	return other;
}

/*
 * Does a debug file of @o, in /usr/lib/debug as the process sees it (then, on
 * a live system, as we see it), have a .debug_frame? Looked for by build-id
 * (@build_id, may be ""), then by @debuglink in /usr/lib/debug/DIR of the
 * object; a debuglink file of another build-id is not its. Its path, as the
 * process sees it, into o->debug_file.
 */
static bool debug_file_cfi(const char *proc_root, int pid, struct tk_proc_object *o,
			   const char *build_id, const char *debuglink)
{
	char cand[2][sizeof(o->debug_file)], path[PATH_MAX + 64];
	const char *slash = strrchr(o->path, '/');
	struct cfi_facts c;
	int i, k;

	memset(cand, 0, sizeof(cand));
	if (strlen(build_id) > 2 &&
	    (size_t)snprintf(cand[0], sizeof(cand[0]), DEBUG_DIR "/.build-id/%.2s/%s.debug",
			     build_id, build_id + 2) >= sizeof(cand[0]))
		cand[0][0] = '\0';
	if (debuglink[0] && slash &&
	    (size_t)snprintf(cand[1], sizeof(cand[1]), DEBUG_DIR "%.*s/%s",
			     (int)(slash - o->path), o->path, debuglink) >= sizeof(cand[1]))
		cand[1][0] = '\0';
	for (i = 0; i < 2; i++) {
		for (k = 0; cand[i][0] && k < 2; k++) {
			if (k == 0 && tk_proc_root_path(path, sizeof(path), proc_root, pid, cand[i]))
				continue;
			if (k == 1 && !is_live_proc(proc_root))
				break;
			if (k == 1)
				copy_str(path, sizeof(path), cand[i]);
			if (i == 1 && build_id[0] && other_build(path, build_id))
				continue;
			if (scan_file(path, &c) || !c.debug_frame)
				continue;
			copy_str(o->debug_file, sizeof(o->debug_file), cand[i]);
			return true;
		}
	}
	return false;
}

/* The vdso's image from PID/mem into a malloc'ed buffer. */
static int read_vdso(const char *proc_root, int pid, const struct tk_proc_object *o, void **buf,
		     size_t *len)
{
	char rel[64], path[PATH_MAX];
	size_t n = o->end - o->start;
	ssize_t got;
	int fd, err;

	if (o->end <= o->start || n > VDSO_MAX)
		return -E2BIG;
	snprintf(rel, sizeof(rel), "%d/mem", pid);
	err = tk_path_join(path, sizeof(path), proc_root, rel);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*buf = malloc(n);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	got = pread(fd, *buf, n, (off_t)o->start);
	err = got < 0 ? -errno : (size_t)got < n ? -EIO : 0;
	close(fd);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	*len = n;
	return 0;
}

/* Open object @o as a tk_elf, and find its CFI sections. */
static int open_object(const char *proc_root, int pid, struct tk_proc_object *o,
		       struct tk_elf **elf, struct cfi_facts *c)
{
	char used[PATH_MAX + 64];
	struct mapped_obj m = { .start = o->start, .end = o->end, .id = o->id };
	void *img = NULL;
	size_t len = 0;
	int err;
	Elf *e;

	if (strcmp(o->path, "[vdso]")) {
		copy_str(m.path, sizeof(m.path), o->path);
		err = tk_proc_open_mapped_at(proc_root, pid, &m, elf, used, sizeof(used));
		/* the main binary is PID/exe too, as a fixture's may only be */
		if (err && o->is_main) {
			char rel[64];

			snprintf(rel, sizeof(rel), "%d/exe", pid);
			if (!tk_path_join(used, sizeof(used), proc_root, rel) &&
			    !tk_elf__open(used, elf))
				err = 0;
		}
		return err ? err : scan_file(used, c);
	}
	err = read_vdso(proc_root, pid, o, &img, &len);
	if (err)
		return err;
	err = tk_elf__open_mem(img, len, elf);
	if (!err) {
		e = elf_memory(img, len);	/* may write to @img: tk_elf has its own copy */
		if (e && elf_kind(e) == ELF_K_ELF)
			scan_sections(e, c);
		else
			err = -ENOEXEC;
		elf_end(e);
	}
	free(img);
	return err;
}

int tk_proc_scan_object(const char *proc_root, int pid, const struct tk_proc_info *pi,
			struct tk_proc_object *o)
{
	char build_id[2 * 64 + 1] = "";
	struct sym_facts f = { 0 };
	struct tk_elf *elf = NULL;
	struct cfi_facts c;
	int err;

	o->is_main = pi->exe[0] && !strcmp(o->path, pi->exe);
	err = open_object(proc_root, pid, o, &elf, &c);
	if (err) {
		tk_elf__free(elf);
		o->err = err;
		say(o->fp_evidence, sizeof(o->fp_evidence), "cannot open: %s", strerror(-err));
		return 0;
	}
	o->eh_frame_fdes = c.fdes;
	if (c.eh_frame) {
		o->cfi = TK_CFI_EH_FRAME;
	} else if (c.debug_frame) {
		o->cfi = TK_CFI_DEBUG_FRAME;
	} else {
		if (tk_elf__build_id(elf, build_id, sizeof(build_id)) <= 0)
			build_id[0] = '\0';
		o->cfi = debug_file_cfi(proc_root, pid, o, build_id, c.debuglink) ?
				 TK_CFI_DEBUG_FILE : TK_CFI_NONE;
	}
	if (o->is_main && pi->fp_checked) {
		/* the same file as PID/exe: looked at already */
		o->frame_pointers = pi->frame_pointers;
		o->fp_checked = pi->fp_checked;
		o->fp_with_frame = pi->fp_with_frame;
		copy_str(o->fp_evidence, sizeof(o->fp_evidence), pi->fp_evidence);
	} else {
		err = tk_proc_collect_facts(elf, &f);
		if (err >= 0)
			o->frame_pointers = fp_heuristic(elf, &f, &o->fp_checked,
							 &o->fp_with_frame, o->fp_evidence,
							 sizeof(o->fp_evidence));
		err = err == -ENOMEM ? err : 0;
	}
	tk_proc_free_facts(&f);
	tk_elf__free(elf);
	return err;
}
