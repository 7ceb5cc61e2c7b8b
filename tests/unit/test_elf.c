// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ELF reader: a tiny ELF image built here byte by byte, the workloads in
 * $TK_BUILD_DIR/workloads, our own executable (checked against what the
 * loader mapped) and broken images.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/elf_reader.h"

#define DEBIAN_JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static void workload(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TK_BUILD_DIR");

	snprintf(buf, size, "%s/workloads/%s", dir && *dir ? dir : "build", name);
	if (access(buf, R_OK))
		fail_msg("%s missing: build it first (make %s)", buf, buf);
}

static int read_whole(const char *path, char **buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(*buf = malloc(st.st_size + 1))) {
		close(fd);
		return -EIO;
	}
	n = read(fd, *buf, st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = n;
	return 0;
}

/* ---- a tiny ELF, built here ----------------------------------------------------- */

/*
 * One PT_LOAD at TINY_BASE maps the file from offset 0, with 0x100 bytes of
 * .bss after it. "conf" is a pointer whose file bytes are zero: only the
 * RELATIVE relocation in .rela.dyn says it points at the string (as lld
 * leaves it). Sections: .data, .note.gnu.build-id, .rela.dyn, .symtab,
 * .strtab, .shstrtab.
 */
#define TINY_BASE 0x400000ULL
#define OFF_DATA 0x80
#define OFF_FUNC 0x90
#define OFF_NOTE 0xa0
#define OFF_RELA 0xc0
#define OFF_SYMTAB 0xd8
#define OFF_STRTAB 0x140
#define OFF_SHSTRTAB 0x168
#define OFF_CONF 0x1b0		/* the string, outside any section */
#define OFF_SHDR 0x1d0
#define TINY_NSEC 7
#define TINY_SIZE (OFF_SHDR + TINY_NSEC * sizeof(Elf64_Shdr))

static const char tiny_conf[] = "prof:true,lg_prof_sample:10";
/* endbr64; push %rbp; mov %rsp,%rbp; mov %edi,%eax; pop %rbp; ret */
static const unsigned char tiny_code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
					   0x89, 0xf8, 0x5d, 0xc3 };
static const unsigned char tiny_build_id[] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67 };
static const char tiny_strtab[] = "\0conf\0tiny_func\0imported@GLIBC_2.2.5";
static const char tiny_shstrtab[] =
	"\0.data\0.note.gnu.build-id\0.rela.dyn\0.symtab\0.strtab\0.shstrtab";

_Static_assert(OFF_SYMTAB + 4 * sizeof(Elf64_Sym) <= OFF_STRTAB, "layout");
_Static_assert(OFF_STRTAB + sizeof(tiny_strtab) <= OFF_SHSTRTAB, "layout");
_Static_assert(OFF_SHSTRTAB + sizeof(tiny_shstrtab) <= OFF_CONF, "layout");
_Static_assert(OFF_CONF + sizeof(tiny_conf) <= OFF_SHDR, "layout");

static unsigned int shname(const char *name)
{
	const char *p = tiny_shstrtab + 1;

	while (p < tiny_shstrtab + sizeof(tiny_shstrtab)) {
		if (!strcmp(p, name))
			return p - tiny_shstrtab;
		p += strlen(p) + 1;
	}
	fail_msg("no section name %s", name);
	return 0;
}

static unsigned char *tiny_elf(size_t *len)
{
	unsigned char *b = calloc(1, TINY_SIZE);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	Elf64_Phdr *ph = (Elf64_Phdr *)(b + sizeof(*eh));
	Elf64_Nhdr *nh = (Elf64_Nhdr *)(b + OFF_NOTE);
	Elf64_Rela *rela = (Elf64_Rela *)(b + OFF_RELA);
	Elf64_Sym *sym = (Elf64_Sym *)(b + OFF_SYMTAB);
	Elf64_Shdr *sh = (Elf64_Shdr *)(b + OFF_SHDR);

	assert_non_null(b);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = OFF_SHDR;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = TINY_NSEC;
	eh->e_shstrndx = 6;

	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_W | PF_X;
	ph->p_offset = 0;
	ph->p_vaddr = ph->p_paddr = TINY_BASE;
	ph->p_filesz = TINY_SIZE;
	ph->p_memsz = TINY_SIZE + 0x100;
	ph->p_align = 0x1000;

	/* .data: the pointer (zero in the file), then tiny_func's code */
	memcpy(b + OFF_FUNC, tiny_code, sizeof(tiny_code));

	nh->n_namesz = 4;
	nh->n_descsz = sizeof(tiny_build_id);
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(b + OFF_NOTE + sizeof(*nh), "GNU", 4);
	memcpy(b + OFF_NOTE + sizeof(*nh) + 4, tiny_build_id, sizeof(tiny_build_id));

	rela->r_offset = TINY_BASE + OFF_DATA;
	rela->r_info = ELF64_R_INFO(0, R_X86_64_RELATIVE);
	rela->r_addend = TINY_BASE + OFF_CONF;
	memcpy(b + OFF_CONF, tiny_conf, sizeof(tiny_conf));

	/* symbols: conf (object in .data), tiny_func (function), an import */
	sym[1].st_name = 1;
	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	sym[1].st_shndx = 1;
	sym[1].st_value = TINY_BASE + OFF_DATA;
	sym[1].st_size = 8;
	sym[2].st_name = 6;
	sym[2].st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC);
	sym[2].st_shndx = 1;
	sym[2].st_value = TINY_BASE + OFF_FUNC;
	sym[2].st_size = 16;
	sym[3].st_name = 16;
	sym[3].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym[3].st_shndx = SHN_UNDEF;
	memcpy(b + OFF_STRTAB, tiny_strtab, sizeof(tiny_strtab));
	memcpy(b + OFF_SHSTRTAB, tiny_shstrtab, sizeof(tiny_shstrtab));

	sh[1] = (Elf64_Shdr){ .sh_name = shname(".data"), .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC | SHF_WRITE, .sh_addr = TINY_BASE + OFF_DATA,
			      .sh_offset = OFF_DATA, .sh_size = 0x20, .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = shname(".note.gnu.build-id"), .sh_type = SHT_NOTE,
			      .sh_flags = SHF_ALLOC, .sh_addr = TINY_BASE + OFF_NOTE,
			      .sh_offset = OFF_NOTE,
			      .sh_size = sizeof(*nh) + 4 + sizeof(tiny_build_id),
			      .sh_addralign = 4 };
	sh[3] = (Elf64_Shdr){ .sh_name = shname(".rela.dyn"), .sh_type = SHT_RELA,
			      .sh_flags = SHF_ALLOC, .sh_addr = TINY_BASE + OFF_RELA,
			      .sh_offset = OFF_RELA, .sh_size = sizeof(*rela), .sh_link = 4,
			      .sh_addralign = 8, .sh_entsize = sizeof(*rela) };
	sh[4] = (Elf64_Shdr){ .sh_name = shname(".symtab"), .sh_type = SHT_SYMTAB,
			      .sh_offset = OFF_SYMTAB, .sh_size = 4 * sizeof(*sym), .sh_link = 5,
			      .sh_info = 3, .sh_addralign = 8, .sh_entsize = sizeof(*sym) };
	sh[5] = (Elf64_Shdr){ .sh_name = shname(".strtab"), .sh_type = SHT_STRTAB,
			      .sh_offset = OFF_STRTAB, .sh_size = sizeof(tiny_strtab),
			      .sh_addralign = 1 };
	sh[6] = (Elf64_Shdr){ .sh_name = shname(".shstrtab"), .sh_type = SHT_STRTAB,
			      .sh_offset = OFF_SHSTRTAB, .sh_size = sizeof(tiny_shstrtab),
			      .sh_addralign = 1 };
	*len = TINY_SIZE;
	return b;
}

struct sym_seen {
	int n;
	bool conf, func, import;
	struct tk_elf_sym conf_sym, func_sym;
};

static int tiny_sym_cb(const struct tk_elf_sym *s, void *ctx)
{
	struct sym_seen *seen = ctx;

	seen->n++;
	if (!strcmp(s->name, "conf")) {
		seen->conf = true;
		seen->conf_sym = *s;
	} else if (!strcmp(s->name, "tiny_func")) {
		seen->func = true;
		seen->func_sym = *s;
	} else if (!strcmp(s->name, "imported")) {
		/* "@GLIBC_2.2.5" is taken off */
		seen->import = !s->defined && s->type == TK_ELF_SYM_FUNC;
	}
	return 0;
}

static void test_tiny_symbols(void **state)
{
	struct sym_seen seen = { 0 };
	struct tk_elf *elf;
	unsigned char *img;
	size_t len;

	img = tiny_elf(&len);
	assert_int_equal(tk_elf__open_mem(img, len, &elf), 0);
	free(img);	/* the reader keeps its own copy */
	assert_int_equal(tk_elf__type(elf), ET_DYN);
	assert_true(tk_elf__has_symtab(elf));
	assert_int_equal(tk_elf__for_each_sym(elf, tiny_sym_cb, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_true(seen.conf);
	assert_int_equal(seen.conf_sym.type, TK_ELF_SYM_OBJECT);
	assert_int_equal(seen.conf_sym.bind, STB_GLOBAL);
	assert_true(seen.conf_sym.defined);
	assert_false(seen.conf_sym.dynamic);
	assert_int_equal(seen.conf_sym.value, TINY_BASE + OFF_DATA);
	assert_int_equal(seen.conf_sym.size, 8);
	assert_true(seen.func);
	assert_int_equal(seen.func_sym.type, TK_ELF_SYM_FUNC);
	assert_int_equal(seen.func_sym.bind, STB_LOCAL);
	assert_false(seen.func_sym.in_text);	/* it is in .data */
	assert_int_equal(seen.func_sym.value, TINY_BASE + OFF_FUNC);
	assert_true(seen.import);
	tk_elf__free(elf);
}

static void test_tiny_build_id(void **state)
{
	struct tk_elf *elf;
	unsigned char *img;
	char id[129];
	size_t len;

	img = tiny_elf(&len);
	assert_int_equal(tk_elf__open_mem(img, len, &elf), 0);
	assert_int_equal(tk_elf__build_id(elf, id, sizeof(id)), 8);
	assert_string_equal(id, "deadbeef01234567");
	/* exactly enough room, then one byte short */
	assert_int_equal(tk_elf__build_id(elf, id, 17), 8);
	assert_int_equal(tk_elf__build_id(elf, id, 16), -ENOSPC);
	tk_elf__free(elf);

	/* no note: -ENOENT */
	((Elf64_Nhdr *)(img + OFF_NOTE))->n_type = NT_GNU_BUILD_ID + 1;
	assert_int_equal(tk_elf__open_mem(img, len, &elf), 0);
	assert_int_equal(tk_elf__build_id(elf, id, sizeof(id)), -ENOENT);
	tk_elf__free(elf);
	free(img);
}

static void test_tiny_read_vaddr(void **state)
{
	unsigned char buf[64], zero[64] = { 0 };
	struct tk_elf *elf;
	unsigned char *img;
	char str[64];
	uint64_t ptr;
	size_t len;

	img = tiny_elf(&len);
	assert_int_equal(tk_elf__open_mem(img, len, &elf), 0);

	/* the note, read through the segment */
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE + OFF_NOTE + 16, buf, 8), 8);
	assert_memory_equal(buf, tiny_build_id, 8);
	/* past the file size but inside the segment: zeros, up to its end */
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE + TINY_SIZE + 0x100 - 10, buf, 64), 10);
	assert_memory_equal(buf, zero, 10);
	/* straddling the file end: file bytes, then zeros */
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE + TINY_SIZE - 4, buf, 8), 8);
	assert_memory_equal(buf, img + TINY_SIZE - 4, 4);
	assert_memory_equal(buf + 4, zero, 4);
	/* outside: nothing */
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE - 1, buf, 4), -ENOENT);
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE + TINY_SIZE + 0x100, buf, 4), -ENOENT);
	assert_int_equal(tk_elf__read_vaddr(elf, UINT64_MAX, buf, 4), -ENOENT);

	/* the pointer's file bytes are 0; the relocation knows better */
	assert_int_equal(tk_elf__read_vaddr(elf, TINY_BASE + OFF_DATA, buf, 8), 8);
	assert_memory_equal(buf, zero, 8);
	assert_int_equal(tk_elf__read_ptr(elf, TINY_BASE + OFF_DATA, &ptr), 0);
	assert_int_equal(ptr, TINY_BASE + OFF_CONF);
	assert_int_equal(tk_elf__read_str(elf, ptr, str, sizeof(str)), strlen(tiny_conf));
	assert_string_equal(str, tiny_conf);
	/* truncated to the buffer */
	assert_int_equal(tk_elf__read_str(elf, ptr, str, 5), 4);
	assert_string_equal(str, "prof");
	/* without a relocation: the file bytes (the build-id here) */
	assert_int_equal(tk_elf__read_ptr(elf, TINY_BASE + OFF_NOTE + 16, &ptr), 0);
	assert_int_equal(ptr, 0x67452301efbeadde);
	tk_elf__free(elf);
	free(img);
}

/* ---- broken input ------------------------------------------------------------- */

static int count_cb(const struct tk_elf_sym *s, void *ctx)
{
	(*(int *)ctx)++;
	assert_non_null(s->name);
	return 0;
}

/* Whatever opens must answer every question without crashing. */
static void poke(struct tk_elf *elf)
{
	unsigned char buf[32];
	char id[129], str[32];
	uint64_t ptr;
	int n = 0;

	tk_elf__for_each_sym(elf, count_cb, &n);
	tk_elf__build_id(elf, id, sizeof(id));
	tk_elf__read_vaddr(elf, TINY_BASE + OFF_DATA, buf, sizeof(buf));
	tk_elf__read_ptr(elf, TINY_BASE + OFF_DATA, &ptr);
	tk_elf__read_str(elf, TINY_BASE + OFF_FUNC, str, sizeof(str));
	tk_elf__has_symtab(elf);
}

static void test_garbage(void **state)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	unsigned char junk[4096];
	struct tk_elf *elf = (void *)1;
	size_t i;

	assert_int_equal(tk_elf__open_mem(text, sizeof(text), &elf), -ENOEXEC);
	assert_null(elf);
	assert_int_equal(tk_elf__open_mem(text, 0, &elf), -ENOEXEC);
	srand(1);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rand();
	assert_int_equal(tk_elf__open_mem(junk, sizeof(junk), &elf), -ENOEXEC);
	/* an ELF magic alone is not enough */
	memcpy(junk, ELFMAG, SELFMAG);
	if (!tk_elf__open_mem(junk, sizeof(junk), &elf)) {
		poke(elf);
		tk_elf__free(elf);
	}
	assert_int_equal(tk_elf__open("/nonexistent/tracekit/file", &elf), -ENOENT);
	assert_int_equal(tk_elf__open("/proc/self/status", &elf), -ENOEXEC);
	assert_int_equal(tk_elf__open("/", &elf), -EISDIR);
	tk_elf__free(NULL);
}

/* A FIFO where a library should be must not block the reader. */
static void test_fifo(void **state)
{
	char dir[] = "/tmp/tk-elf-XXXXXX", path[64];
	struct tk_elf *elf;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(tk_elf__open(path, &elf), -ENOEXEC);
	unlink(path);
	rmdir(dir);
}

static void test_truncated_and_corrupted(void **state)
{
	struct tk_elf *elf;
	unsigned char *img, *copy;
	size_t len, cut, i;

	img = tiny_elf(&len);
	copy = malloc(len);
	assert_non_null(copy);
	/* every prefix of the image */
	for (cut = 1; cut < len; cut++) {
		if (!tk_elf__open_mem(img, cut, &elf)) {
			poke(elf);
			tk_elf__free(elf);
		}
	}
	/* every byte set to 0xff and to 0x80, one at a time */
	for (i = 0; i < len; i++) {
		static const unsigned char vals[] = { 0xff, 0x80, 0x00 };
		size_t v;

		for (v = 0; v < sizeof(vals); v++) {
			memcpy(copy, img, len);
			copy[i] = vals[v];
			if (!tk_elf__open_mem(copy, len, &elf)) {
				poke(elf);
				tk_elf__free(elf);
			}
		}
	}
	free(copy);
	free(img);
}

/* ---- real files ------------------------------------------------------------------ */

struct find_ctx {
	const char *name;
	bool want_defined;
	bool found;
	struct tk_elf_sym sym;
};

static int find_cb(const struct tk_elf_sym *s, void *ctx)
{
	struct find_ctx *f = ctx;

	if (strcmp(s->name, f->name) || s->defined != f->want_defined)
		return 0;
	f->found = true;
	f->sym = *s;
	f->sym.name = NULL;
	return 1;
}

static bool find(struct tk_elf *elf, const char *name, bool defined, struct tk_elf_sym *out)
{
	struct find_ctx f = { .name = name, .want_defined = defined };

	tk_elf__for_each_sym(elf, find_cb, &f);
	if (out)
		*out = f.sym;
	return f.found;
}

static void test_fake_rjem_symbols(void **state)
{
	struct tk_elf_sym s;
	struct tk_elf *elf;
	char path[4096];
	uint64_t ptr = 1;

	workload("fake_rjem", path, sizeof(path));
	assert_int_equal(tk_elf__open(path, &elf), 0);
	assert_true(find(elf, "_rjem_mallctl", true, &s));
	assert_int_equal(s.type, TK_ELF_SYM_FUNC);
	assert_true(s.in_text);
	assert_true(s.size > 0);
	assert_true(find(elf, "_rjem_malloc", true, NULL));
	/* jemalloc's own malloc_conf: weak, NULL */
	assert_true(find(elf, "_rjem_malloc_conf", true, &s));
	assert_int_equal(s.type, TK_ELF_SYM_OBJECT);
	assert_int_equal(s.bind, STB_WEAK);
	assert_int_equal(tk_elf__read_ptr(elf, s.value, &ptr), 0);
	assert_int_equal(ptr, 0);
	/* imports, without their version */
	assert_true(find(elf, "malloc", false, NULL));
	assert_false(find(elf, "malloc", true, NULL));
	assert_false(find(elf, "_Unwind_Backtrace", false, NULL));
	tk_elf__free(elf);
}

static void test_static_jemalloc_conf(void **state)
{
	struct tk_elf_sym s;
	struct tk_elf *elf;
	char path[4096], conf[128];
	uint64_t ptr;

	workload("jemalloc_static", path, sizeof(path));
	assert_int_equal(tk_elf__open(path, &elf), 0);
	assert_true(find(elf, "malloc_conf", true, &s));
	assert_int_equal(s.bind, STB_GLOBAL);
	assert_int_equal(tk_elf__read_ptr(elf, s.value, &ptr), 0);
	assert_true(tk_elf__read_str(elf, ptr, conf, sizeof(conf)) > 0);
	assert_string_equal(conf, "prof:true,prof_active:true,lg_prof_sample:19");
	/* Debian's libjemalloc.a has the libgcc prof unwinder */
	assert_true(find(elf, "prof_unwind_callback", true, NULL));
	tk_elf__free(elf);
}

static void test_debian_libjemalloc(void **state)
{
	struct tk_elf_sym s;
	struct tk_elf *elf;
	char id[129];

	NEED_DEP(!access(DEBIAN_JEMALLOC, R_OK), "no %s (apt-get install libjemalloc2)\n",
		 DEBIAN_JEMALLOC);
	assert_int_equal(tk_elf__open(DEBIAN_JEMALLOC, &elf), 0);
	assert_int_equal(tk_elf__type(elf), ET_DYN);
	assert_false(tk_elf__has_symtab(elf));	/* stripped: .dynsym only */
	assert_true(find(elf, "mallctl", true, &s));
	assert_true(s.dynamic);
	assert_true(s.in_text);
	assert_true(find(elf, "_Unwind_Backtrace", false, &s));
	assert_true(s.dynamic);
	assert_int_equal(tk_elf__build_id(elf, id, sizeof(id)), 20);
	assert_int_equal(strlen(id), 40);
	tk_elf__free(elf);
}

/* ---- our own executable, compared with what the loader mapped ------------------ */

__attribute__((noinline, used)) int tk_test_elf_marker(int x)
{
	return x * 7 + 3;
}

struct note_ctx {
	char hex[129];
};

/* The build-id of the main program, from its notes in memory. */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct note_ctx *c = ctx;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name_len = (nh->n_namesz + 3) & ~3u;
			const unsigned char *desc;
			unsigned int j;

			desc = (const unsigned char *)p + sizeof(*nh) + name_len;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4) && nh->n_descsz <= 64) {
				for (j = 0; j < nh->n_descsz; j++)
					sprintf(c->hex + 2 * j, "%02x", desc[j]);
				return 1;
			}
			p += sizeof(*nh) + name_len + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;	/* the first object is the main program */
}

static void test_self(void **state)
{
	struct note_ctx note = { "" };
	unsigned char code[32];
	struct tk_elf_sym s;
	struct tk_elf *elf;
	char id[129];
	uintptr_t bias;

	assert_int_equal(tk_elf__open("/proc/self/exe", &elf), 0);
	assert_true(find(elf, "tk_test_elf_marker", true, &s));
	assert_int_equal(s.type, TK_ELF_SYM_FUNC);
	assert_true(s.in_text);
	assert_true(s.size >= 4);
	/* the code in the file is the code the loader mapped */
	bias = (uintptr_t)&tk_test_elf_marker - s.value;
	assert_int_equal(tk_elf__read_vaddr(elf, s.value, code, s.size < 32 ? s.size : 32),
			 s.size < 32 ? s.size : 32);
	assert_memory_equal(code, (const void *)(s.value + bias), s.size < 32 ? s.size : 32);

	dl_iterate_phdr(phdr_cb, &note);
	if (!note.hex[0]) {
		assert_int_equal(tk_elf__build_id(elf, id, sizeof(id)), -ENOENT);
	} else {
		assert_int_equal(tk_elf__build_id(elf, id, sizeof(id)), strlen(note.hex) / 2);
		assert_string_equal(id, note.hex);
	}
	tk_elf__free(elf);
}

/* Whole real files, cut short: nothing may crash. */
static void test_real_truncated(void **state)
{
	struct tk_elf *elf;
	char path[4096];
	size_t len = 0, cut;
	char *buf = NULL;

	workload("fp_yes", path, sizeof(path));
	assert_int_equal(read_whole(path, &buf, &len), 0);
	for (cut = 0; cut < len; cut += cut < 4096 ? 61 : 997) {
		if (!tk_elf__open_mem(buf, cut, &elf)) {
			poke(elf);
			tk_elf__free(elf);
		}
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiny_symbols),
		cmocka_unit_test(test_tiny_build_id),
		cmocka_unit_test(test_tiny_read_vaddr),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_truncated_and_corrupted),
		cmocka_unit_test(test_fake_rjem_symbols),
		cmocka_unit_test(test_static_jemalloc_conf),
		cmocka_unit_test(test_debian_libjemalloc),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_real_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
