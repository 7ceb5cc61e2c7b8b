// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The target process's Python (`tracekit caps -p PID`, entry process.python):
 * which CPython it runs and where its offsets come from, and whether its
 * Python frames can be walked whole (in the kernel, by the bpf backends).
 * Detection is runtime/py_detect.c's, on a capture of the process made for
 * this; this file only says it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "caps/caps_int.h"
#include "core/arch.h"
#include "core/kfeat.h"
#include "runtime/py.h"
#include "sym/symbolize.h"

static const char *version_str(const struct tk_py_info *in, char *buf, size_t sz)
{
	if ((in->version & 0xffff) == 0)
		snprintf(buf, sz, "3.%d", in->minor);
	else
		snprintf(buf, sz, "3.%u.%u", (in->version >> 16) & 0xff, (in->version >> 8) & 0xff);
	return buf;
}

void snap_python_runtime(struct snap *s, struct tk_caps *caps)
{
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .proc_root = s->proc };
	bool fsbase = tk_kfeat__member_offset("task_struct", TK_ARCH_TP_MEMBER) > 0;
	struct tk_symbolizer *sym = NULL;
	struct tk_py_info in = { 0 };
	char ver[32], how[200];
	struct unw_py e;
	struct tk_cap *c;
	int err;

	err = tk_symbolizer__new(&so, &sym);
	if (!err)
		err = tk_symbolizer__capture(sym, caps->pid, 0);
	if (!err)
		err = tk_symbolizer__py(sym) ? tk_py__detect(tk_symbolizer__py(sym), sym,
							     caps->pid, 0, &e, &in) : -ENOMEM;
	tk_symbolizer__free(sym);
	if (err == -ENOENT || (!in.found && !err)) {
		c = set(caps, TK_CAP_PROC_PYTHON, TK_SUPPORTED);
		VALUE(c, "none");
		REASON(c, "no CPython (an object named python3.X or libpython3.X defining "
		       "_PyRuntime) in its mappings");
		return;
	}
	if (!in.found) {
		c = set(caps, TK_CAP_PROC_PYTHON, TK_UNSUPPORTED);
		VALUE(c, "unknown");
		REASON(c, "its mappings could not be read: %s", strerror(-err));
		return;
	}
	snprintf(how, sizeof(how), "offsets from %s%s; %d interpreter-loop range%s%s",
		 in.debug_offsets ? "_Py_DebugOffsets" : "tracekit's table for 3.",
		 in.debug_offsets ? "" : (char[4]){ '0' + in.minor / 10, '0' + in.minor % 10, 0 },
		 in.ranges, in.ranges == 1 ? "" : "s", in.split ? " (parts gcc split off it)" : "");
	if (err == -EAGAIN || (!err && !fsbase)) {
		c = set(caps, TK_CAP_PROC_PYTHON, TK_UNSUPPORTED);
		because(c, TK_CAP_BTF);
	} else {
		c = set(caps, TK_CAP_PROC_PYTHON, err ? TK_UNSUPPORTED : TK_SUPPORTED);
	}
	VALUE(c, "CPython %s (%s%s)", version_str(&in, ver, sizeof(ver)), in.module,
	      in.shared ? "" : ", the executable");
	if (err == -EAGAIN) {
		REASON(c, "%s; %s: asked again once it has started", how, in.why);
		c->has_cause = false;
	} else if (err) {
		REASON(c, "%s; its Python frames are not walked: %s", how, in.why);
		REMEDY(c, "CPython 3.9-3.14 built for glibc, x86-64 or arm64 (a free-threaded "
		       "build is not walked)");
	} else if (!fsbase) {
		REASON(c, "%s; the kernel's BTF has no task_struct." TK_ARCH_TP_MEMBER ": its "
		       "Python frames are not walked", how);
		REMEDY(c, "a kernel with CONFIG_DEBUG_INFO_BTF");
	} else {
		REASON(c, "%s%s; pthread key %u, %d of %d thread states found through it; "
		       "Python frames (qualified name, file, line) are walked in the kernel by "
		       "the bpf backends (cpu, --off-cpu, alloc, numa --stacks); the perf "
		       "backend counts their samples and shows none%s", how,
		       in.members_checked ? ", checked against PyCode_Type's members" : "",
		       in.key, in.threads_found, in.threads,
		       in.tramp ? "; -X perf trampolines are walked through" : "");
	}
}
