// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * alloc_trace.bpf.c with uprobe sessions, for kernels whose
 * bpf_session_is_return() takes nothing (6.13 to 6.18). The loader takes its
 * ELF when the kernel's BTF says so (user/alloc/alloc_trace.c).
 */
#define AT_SESSION_KFUNC_VOID
#include "alloc_trace.bpf.c"
