/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Which JIT runtime a process runs (a JVM, node), and what it needs for
 * whole, named stacks: what `tracekit caps -p PID` says (caps/caps_runtime.c).
 * Read-only: /proc (maps, cmdline, status), the runtime's own file (node's
 * version), its perf map's existence inside its root, and for a JVM what
 * proc/jvm.h's inspection reads as its user. Nothing is signalled or written.
 */
#ifndef __TK_PROC_JIT_RUNTIME_H
#define __TK_PROC_JIT_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "proc/jvm.h"

enum tk_jit_kind {
	TK_JIT_NONE = 0,
	TK_JIT_JVM,		/* maps libjvm.so (HotSpot) */
	TK_JIT_NODE,		/* node: its executable, or libnode.so */
};

struct tk_jit_runtime {
	enum tk_jit_kind kind;
	char object[256];		/* the file that says so: libjvm.so, node, libnode.so.N */
	char version[64];		/* "17.0.15+6-Debian-1deb12u1", "v20.20.2"; "" unknown */
	uint32_t nspid;			/* its pid in its namespace */
	bool perf_map;			/* /tmp/perf-NSPID.map exists in its root */
	bool jitdump;			/* it maps a jit-N.dump */
	/* node: its options, from its command line */
	bool perf_basic_prof;		/* --perf-basic-prof (or -only-functions) */
	bool perf_prof;			/* --perf-prof (jitdump) */
	bool interpreted_native;	/* --interpreted-frames-native-stack */
	/* a JVM: proc/jvm.h's inspection; jvm_err its error (then only /proc's part) */
	struct tk_jvm_info jvm;
	int jvm_err;
	char jvm_why[200];
};

/*
 * Find the runtime of @pid under @proc_root. 0 (kind TK_JIT_NONE when none),
 * -ESRCH when the process is gone, or -errno when its maps cannot be read.
 */
int tk_jit_runtime__detect(const char *proc_root, uint32_t pid, struct tk_jit_runtime *rt);

/*
 * node's version in the @len bytes at @buf (of its executable or libnode):
 * what follows "https://nodejs.org/download/release/" up to the next '/'
 * ("v20.20.2"), into @out. 0, or -ENOENT. (For a reader that scans a file
 * piece by piece: a match cut at a piece's end is found in the next piece
 * when pieces overlap by TK_NODE_VERSION_OVERLAP bytes.)
 */
#define TK_NODE_VERSION_OVERLAP 128
int tk_jit_runtime__node_version(const char *buf, size_t len, char *out, size_t out_sz);

#endif /* __TK_PROC_JIT_RUNTIME_H */
