// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * alloc_trace.bpf.c with uprobe sessions, for kernels whose
 * bpf_session_is_return() takes the program's context (after 6.18; 7.2 has
 * it). The loader takes its ELF when the kernel's BTF says so
 * (user/alloc/alloc_trace.c).
 */
#define AT_SESSION_KFUNC_CTX
#include "alloc_trace.bpf.c"
