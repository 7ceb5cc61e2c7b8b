// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ELF reading through libelf. libelf checks the bounds of what it hands out
 * (elf_getdata, elf_strptr, gelf_getsym, gelf_getnote); raw reads of the
 * file image for tk_elf__read_vaddr() are checked here against its size.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/untrusted.h"
#include "proc/elf_reader.h"

struct tk_elf {
	Elf *e;
	int fd;			/* -1 when opened from memory */
	void *mem;		/* our copy of a memory image */
	size_t raw_size;	/* of the file or the image; raw bytes are read on demand */
	GElf_Ehdr ehdr;
	size_t shnum;
	size_t phnum;
	size_t shstrndx;
	bool has_shstrndx;
};

/*
 * Bytes at file offset @off: from our memory image, or by pread — never the
 * whole file read in (elf_rawfile would read all of libc to look at 8 bytes),
 * and never a mapping a truncating writer could turn into SIGBUS.
 */
static long raw_read(struct tk_elf *elf, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	if (off >= elf->raw_size)
		return 0;
	if (len > elf->raw_size - off)
		len = elf->raw_size - off;
	if (elf->mem) {
		memcpy(buf, (char *)elf->mem + off, len);
		return len;
	}
	while (done < len) {
		ssize_t n = pread(elf->fd, (char *)buf + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += n;
	}
	return done;
}

static int tk_elf__init(struct tk_elf *elf)
{
	if (elf_kind(elf->e) != ELF_K_ELF)
		return -ENOEXEC;
	if (!gelf_getehdr(elf->e, &elf->ehdr))
		return -ENOEXEC;
	if (elf_getshdrnum(elf->e, &elf->shnum))
		elf->shnum = 0;
	if (elf_getphdrnum(elf->e, &elf->phnum))
		elf->phnum = 0;
	elf->has_shstrndx = elf_getshdrstrndx(elf->e, &elf->shstrndx) == 0;
	return 0;
}

int tk_elf__open(const char *path, struct tk_elf **out)
{
	struct tk_elf *elf;
	struct stat st;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = calloc(1, sizeof(*elf));
	if (!elf)
		return -ENOMEM;
	/*
	 * Checked before it is opened (core/untrusted.h): a FIFO or a device
	 * put where a library was is never opened, and what is read is the
	 * file checked. Which file the name is, is the caller's business
	 * (proc/mapfile.h checks a mapped file's identity).
	 */
	elf->fd = tk_open_regular(path, &st);
	if (elf->fd < 0) {
		err = elf->fd == -ENODEV ? -ENOEXEC : elf->fd;
		free(elf);
		return err;
	}
	elf->raw_size = st.st_size;
	elf->e = elf_begin(elf->fd, ELF_C_READ, NULL);
	if (!elf->e) {
		err = -ENOEXEC;
		goto fail;
	}
	err = tk_elf__init(elf);
	if (err)
		goto fail;
	*out = elf;
	return 0;
fail:
	tk_elf__free(elf);
	return err;
}

int tk_elf__open_mem(const void *buf, size_t len, struct tk_elf **out)
{
	struct tk_elf *elf;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (!len)
		return -ENOEXEC;
	elf = calloc(1, sizeof(*elf));
	if (!elf)
		return -ENOMEM;
	elf->fd = -1;
	/* elf_memory() may write to the image it is given, so it gets a copy. */
	elf->mem = malloc(len);
	if (!elf->mem) {
		free(elf);
		return -ENOMEM;
	}
	memcpy(elf->mem, buf, len);
	elf->raw_size = len;
	elf->e = elf_memory(elf->mem, len);
	if (!elf->e) {
		err = -ENOEXEC;
		goto fail;
	}
	err = tk_elf__init(elf);
	if (err)
		goto fail;
	*out = elf;
	return 0;
fail:
	tk_elf__free(elf);
	return err;
}

void tk_elf__free(struct tk_elf *elf)
{
	if (!elf)
		return;
	if (elf->e)
		elf_end(elf->e);
	if (elf->fd >= 0)
		close(elf->fd);
	free(elf->mem);
	free(elf);
}

Elf *tk_elf__libelf(struct tk_elf *elf)
{
	return elf->e;
}

unsigned int tk_elf__type(const struct tk_elf *elf)
{
	return elf->ehdr.e_type;
}

bool tk_elf__has_symtab(const struct tk_elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf->e, scn))) {
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB &&
		    shdr.sh_size > gelf_fsize(elf->e, ELF_T_SYM, 1, EV_CURRENT))
			return true;
	}
	return false;
}

/* Is section @ndx executable and named .text or .text.*? */
static bool section_is_text(struct tk_elf *elf, size_t ndx)
{
	Elf_Scn *scn;
	GElf_Shdr shdr;
	const char *name;

	if (ndx == SHN_UNDEF || ndx >= SHN_LORESERVE || ndx >= elf->shnum || !elf->has_shstrndx)
		return false;
	scn = elf_getscn(elf->e, ndx);
	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_EXECINSTR))
		return false;
	name = elf_strptr(elf->e, elf->shstrndx, shdr.sh_name);
	return name && !strncmp(name, ".text", 5) && (name[5] == '\0' || name[5] == '.');
}

static int walk_symtab(struct tk_elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, bool dynamic,
		       tk_elf_sym_cb cb, void *ctx)
{
	size_t symsize = gelf_fsize(elf->e, ELF_T_SYM, 1, EV_CURRENT);
	size_t i, n, last_ndx = SIZE_MAX;
	bool last_text = false;
	char namebuf[512];
	Elf_Data *data;
	GElf_Sym sym;
	int err;

	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !symsize)
		return 0;
	n = data->d_size / symsize;
	for (i = 1; i < n; i++) {
		struct tk_elf_sym s = { .dynamic = dynamic };
		const char *name, *at;
		unsigned int type;

		if (!gelf_getsym(data, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		s.defined = sym.st_shndx != SHN_UNDEF;
		switch (type) {
		case STT_GNU_IFUNC:
			s.ifunc = true;
			/* fall through */
		case STT_FUNC:
			s.type = TK_ELF_SYM_FUNC;
			break;
		case STT_OBJECT:
		case STT_TLS:
			s.type = TK_ELF_SYM_OBJECT;
			break;
		case STT_NOTYPE:
			if (s.defined)
				continue;
			s.type = TK_ELF_SYM_OTHER;
			break;
		default:
			continue;
		}
		name = elf_strptr(elf->e, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		/* .symtab of a linked file names imports "puts@GLIBC_2.2.5" */
		at = strchr(name, '@');
		if (at && at != name && (size_t)(at - name) < sizeof(namebuf)) {
			memcpy(namebuf, name, at - name);
			namebuf[at - name] = '\0';
			name = namebuf;
		}
		s.name = name;
		s.value = sym.st_value;
		s.size = sym.st_size;
		s.bind = GELF_ST_BIND(sym.st_info);
		if (s.defined && s.type == TK_ELF_SYM_FUNC) {
			if (sym.st_shndx != last_ndx) {
				last_ndx = sym.st_shndx;
				last_text = section_is_text(elf, sym.st_shndx);
			}
			s.in_text = last_text;
		}
		err = cb(&s, ctx);
		if (err)
			return err;
	}
	return 0;
}

int tk_elf__for_each_sym(struct tk_elf *elf, tk_elf_sym_cb cb, void *ctx)
{
	static const unsigned int types[] = { SHT_SYMTAB, SHT_DYNSYM };
	Elf_Scn *scn;
	GElf_Shdr shdr;
	size_t t;
	int err;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf->e, scn))) {
			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != types[t])
				continue;
			err = walk_symtab(elf, scn, &shdr, types[t] == SHT_DYNSYM, cb, ctx);
			if (err)
				return err;
		}
	}
	return 0;
}

int tk_elf__for_each_needed(struct tk_elf *elf, int (*cb)(const char *name, void *ctx), void *ctx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Dyn dyn;
	Elf_Data *data;
	size_t i, n, dynsize = gelf_fsize(elf->e, ELF_T_DYN, 1, EV_CURRENT);
	const char *name;
	int err;

	while ((scn = elf_nextscn(elf->e, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || !dynsize)
			continue;
		n = data->d_size / dynsize;
		for (i = 0; i < n && gelf_getdyn(data, i, &dyn); i++) {
			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(elf->e, shdr.sh_link, dyn.d_un.d_val);
			if (!name)
				continue;
			err = cb(name, ctx);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Look for the GNU build-id note in @data; 0 and @desc/@len when found. */
static int find_build_id(Elf_Data *data, const unsigned char **desc, size_t *len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	if (!data || !data->d_buf)
		return -ENOENT;
	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (next <= off || next > data->d_size)
			break;
		off = next;
		if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 || nhdr.n_descsz == 0)
			continue;
		if (name_off > data->d_size || data->d_size - name_off < 4 ||
		    desc_off > data->d_size || data->d_size - desc_off < nhdr.n_descsz)
			continue;
		if (memcmp((const char *)data->d_buf + name_off, "GNU", 4))
			continue;
		*desc = (const unsigned char *)data->d_buf + desc_off;
		*len = nhdr.n_descsz;
		return 0;
	}
	return -ENOENT;
}

int tk_elf__build_id(struct tk_elf *elf, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *desc = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t len = 0, i;
	int err = -ENOENT;

	while (err && (scn = elf_nextscn(elf->e, scn))) {
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
			err = find_build_id(elf_getdata(scn, NULL), &desc, &len);
	}
	/* A file stripped of its section headers still has PT_NOTE. */
	for (i = 0; err && elf->shnum == 0 && i < elf->phnum; i++) {
		if (!gelf_getphdr(elf->e, i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		if (phdr.p_offset > elf->raw_size || phdr.p_filesz > elf->raw_size - phdr.p_offset)
			continue;
		err = find_build_id(elf_getdata_rawchunk(elf->e, phdr.p_offset, phdr.p_filesz,
							  ELF_T_NHDR),
				    &desc, &len);
	}
	if (err)
		return err;
	if (len > INT32_MAX / 2 || size < 2 * len + 1)
		return -ENOSPC;
	for (i = 0; i < len; i++) {
		buf[2 * i] = hex[desc[i] >> 4];
		buf[2 * i + 1] = hex[desc[i] & 0xf];
	}
	buf[2 * len] = '\0';
	return len;
}

/*
 * Copy up to @len bytes from @rel bytes into a region (segment or section)
 * that is @memsz bytes long in memory and @filesz bytes long at @offset in
 * the file; the rest of it reads as zeros.
 */
static long copy_region(struct tk_elf *elf, uint64_t rel, uint64_t offset, uint64_t filesz,
			uint64_t memsz, void *buf, size_t len)
{
	uint64_t n = memsz - rel, want, off;
	size_t done = 0;

	if (n > len)
		n = len;
	if (rel < filesz) {
		want = filesz - rel < n ? filesz - rel : n;
		if (offset > UINT64_MAX - rel)
			return -ENOENT;
		off = offset + rel;
		if (off >= elf->raw_size)
			return -ENOENT;
		if (want > elf->raw_size - off) {
			/* the file is shorter than its headers say */
			long got = raw_read(elf, off, buf, elf->raw_size - off);

			return got;
		}
		if (raw_read(elf, off, buf, want) != (long)want)
			return -EIO;
		done = want;
	}
	memset((char *)buf + done, 0, n - done);
	return n;
}

long tk_elf__read_vaddr(struct tk_elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Phdr phdr;
	GElf_Shdr shdr;
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < elf->phnum; i++) {
		if (!gelf_getphdr(elf->e, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		if (vaddr < phdr.p_vaddr || vaddr - phdr.p_vaddr >= phdr.p_memsz)
			continue;
		return copy_region(elf, vaddr - phdr.p_vaddr, phdr.p_offset, phdr.p_filesz,
				   phdr.p_memsz, buf, len);
	}
	/* Relocatable objects have no segments: use the allocated sections. */
	while (elf->phnum == 0 && (scn = elf_nextscn(elf->e, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < shdr.sh_addr || vaddr - shdr.sh_addr >= shdr.sh_size)
			continue;
		return copy_region(elf, vaddr - shdr.sh_addr, shdr.sh_offset,
				   shdr.sh_type == SHT_NOBITS ? 0 : shdr.sh_size, shdr.sh_size,
				   buf, len);
	}
	return -ENOENT;
}

int tk_elf__vaddr_to_offset(struct tk_elf *elf, uint64_t vaddr, uint64_t *off)
{
	GElf_Phdr phdr;
	size_t i;

	for (i = 0; i < elf->phnum; i++) {
		if (!gelf_getphdr(elf->e, i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		if (vaddr < phdr.p_vaddr || vaddr - phdr.p_vaddr >= phdr.p_filesz)
			continue;
		*off = vaddr - phdr.p_vaddr + phdr.p_offset;
		return 0;
	}
	return -ENOENT;
}

enum reloc_kind { RELOC_NONE, RELOC_RELATIVE, RELOC_ABS };

static enum reloc_kind reloc_kind(unsigned int machine, unsigned int type)
{
	switch (machine) {
	case EM_X86_64:
		if (type == R_X86_64_RELATIVE)
			return RELOC_RELATIVE;
		if (type == R_X86_64_64 || type == R_X86_64_GLOB_DAT)
			return RELOC_ABS;
		break;
	case EM_AARCH64:
		if (type == R_AARCH64_RELATIVE)
			return RELOC_RELATIVE;
		if (type == R_AARCH64_ABS64 || type == R_AARCH64_GLOB_DAT)
			return RELOC_ABS;
		break;
	case EM_386:
		if (type == R_386_RELATIVE)
			return RELOC_RELATIVE;
		if (type == R_386_32)
			return RELOC_ABS;
		break;
	}
	return RELOC_NONE;
}

static int read_raw_ptr(struct tk_elf *elf, uint64_t vaddr, uint64_t *val)
{
	size_t psize = elf->ehdr.e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8, i;
	unsigned char b[8];
	uint64_t v = 0;

	if (tk_elf__read_vaddr(elf, vaddr, b, psize) != (long)psize)
		return -ENOENT;
	for (i = 0; i < psize; i++) {
		if (elf->ehdr.e_ident[EI_DATA] == ELFDATA2MSB)
			v = v << 8 | b[i];
		else
			v |= (uint64_t)b[i] << (8 * i);
	}
	*val = v;
	return 0;
}

/* Value of symbol @ndx of the symbol table in section @link, for an absolute relocation. */
static int reloc_sym_value(struct tk_elf *elf, size_t link, size_t ndx, uint64_t *val)
{
	Elf_Scn *scn = elf_getscn(elf->e, link);
	Elf_Data *data;
	GElf_Sym sym;

	if (ndx == 0) {
		*val = 0;
		return 0;
	}
	if (!scn || !(data = elf_getdata(scn, NULL)) || !gelf_getsym(data, ndx, &sym))
		return -ENOENT;
	if (sym.st_shndx == SHN_UNDEF)
		return -ENXIO;
	*val = sym.st_value;
	return 0;
}

int tk_elf__read_ptr(struct tk_elf *elf, uint64_t vaddr, uint64_t *val)
{
	unsigned int machine = elf->ehdr.e_machine;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t i, n, esize;
	uint64_t s, a;
	Elf_Data *data;
	int err;

	while ((scn = elf_nextscn(elf->e, scn))) {
		bool rela;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_RELA && shdr.sh_type != SHT_REL))
			continue;
		rela = shdr.sh_type == SHT_RELA;
		esize = gelf_fsize(elf->e, rela ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || !esize)
			continue;
		n = data->d_size / esize;
		for (i = 0; i < n; i++) {
			GElf_Rela r = { 0 };
			GElf_Rel rel;
			enum reloc_kind kind;

			if (rela) {
				if (!gelf_getrela(data, i, &r))
					break;
			} else {
				if (!gelf_getrel(data, i, &rel))
					break;
				r.r_offset = rel.r_offset;
				r.r_info = rel.r_info;
			}
			if (r.r_offset != vaddr)
				continue;
			/* gelf widens 32-bit r_info to the 64-bit layout */
			kind = reloc_kind(machine, GELF_R_TYPE(r.r_info));
			if (kind == RELOC_NONE)
				continue;
			/* REL keeps the addend in place */
			a = r.r_addend;
			if (!rela && (err = read_raw_ptr(elf, vaddr, &a)))
				return err;
			if (kind == RELOC_RELATIVE) {
				*val = a;
				return 0;
			}
			err = reloc_sym_value(elf, shdr.sh_link, GELF_R_SYM(r.r_info), &s);
			if (err)
				return err;
			*val = s + a;
			return 0;
		}
	}
	return read_raw_ptr(elf, vaddr, val);
}

long tk_elf__read_str(struct tk_elf *elf, uint64_t vaddr, char *buf, size_t size)
{
	const char *nul;
	long n;

	if (!size)
		return -ENOSPC;
	n = tk_elf__read_vaddr(elf, vaddr, buf, size - 1);
	if (n < 0)
		return n;
	nul = memchr(buf, '\0', n);
	if (nul)
		return nul - buf;
	buf[n] = '\0';
	return n;
}
