/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Inside user/runtime/py_*.c: an interpreter file as read once (py_detect.c). */
#ifndef __TK_RUNTIME_PY_INT_H
#define __TK_RUNTIME_PY_INT_H

#include <sys/types.h>

#include "runtime/py.h"

struct py_image {
	dev_t dev;
	ino_t ino;
	bool is_py;			/* it defines _PyRuntime */
	bool shared;
	bool debug_offsets;
	bool members_checked;
	bool split;
	int minor;
	uint32_t version;
	uint64_t runtime;		/* _PyRuntime, ELF virtual address */
	struct tk_py_offsets off;
	int nranges;
	uint64_t lo[UNW_PY_RANGES];	/* ELF virtual addresses */
	uint64_t hi[UNW_PY_RANGES];
	int tramp;
	unsigned int machine;		/* its ELF machine: EM_X86_64, EM_AARCH64 */
	/* arm64: the libc last seen with it, and its struct pthread size (py_arch.c) */
	dev_t libc_dev;
	ino_t libc_ino;
	uint32_t tp_off;
	char why[200];			/* CPython that cannot be walked: why */
};

/* glibc's struct pthread, per architecture (py_arch.c) */
struct tk_py_glibc {
	uint16_t tsd_off;		/* a key's value at pthread_t + tsd_off + tsd_stride * key */
	uint16_t tsd_stride;
	uint16_t tid_off;		/* struct pthread.tid */
};

/* glibc's layout for an interpreter of ELF machine @machine: 0, or -ENOTSUP. */
int tk_py__glibc_layout(unsigned int machine, struct tk_py_glibc *out);
/*
 * arm64: the bytes below the thread pointer that struct pthread takes (TLS variant I),
 * from glibc's pthread_self's code (@code, @len bytes from its start): 0, or -ENOTSUP
 * when it is not "mrs xT, tpidr_el0; sub x0, xT, #n; ret" (hints before it allowed).
 */
int tk_py__a64_tp_off(const uint8_t *code, size_t len, uint32_t *off);
/*
 * arm64: the address of the Py_tss_t (autoTSSkey) PyGILState_GetThisThreadState reads,
 * from its code (@code, @len bytes at ELF address @pc): 0, or -ENOTSUP for another shape.
 */
int tk_py__a64_tss_addr(const uint8_t *code, size_t len, uint64_t pc, uint64_t *addr);
/* tk_py__a64_tp_off from the libc file at @path: 0, -ENOTSUP or a negative errno, @why set. */
int tk_py__libc_tp_off(const char *path, uint32_t *off, char *why, size_t why_sz);
/*
 * The next jump (no call) in @code (@len bytes of ELF machine @machine, at address
 * @start) from byte offset *@at on: its target in *@tgt and *@at moved past it, true; false
 * at the end.
 */
bool tk_py__next_jump(unsigned int machine, const uint8_t *code, size_t len, size_t *at,
		      uint64_t start, uint64_t *tgt);

/*
 * The image of file (@dev, @ino), read from @path (named python3.@minor or
 * libpython3.@minor) the first time it is asked for. NULL: no memory.
 */
struct py_image *tk_py__image(struct tk_py *py, dev_t dev, ino_t ino, const char *path,
			      int minor);
/* Read what the file at @path says into @im: 0, -ENOENT (no _PyRuntime), ... */
int tk_py__read_image(struct py_image *im, const char *path, int name_minor);

/* Process @pid runs the interpreter @im loaded at @bias: remembered for its events. */
int tk_py__set_proc(struct tk_py *py, uint32_t pid, uint32_t gen, const struct py_image *im,
		    uint64_t bias);
/* Process @pid runs a CPython tracekit cannot walk (counted once per process). */
void tk_py__set_unknown(struct tk_py *py, uint32_t pid, const char *why);

/* Read @pid's memory (one /proc/PID/mem kept open): 0 or a negative errno. */
int tk_py__mem(struct tk_py *py, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* The interpreter @pid runs and its load bias; NULL: none ready. */
const struct py_image *tk_py__proc_image(struct tk_py *py, uint32_t pid, uint64_t *bias);

#endif /* __TK_RUNTIME_PY_INT_H */
