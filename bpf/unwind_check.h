/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What bpf/unwind_check.bpf.c leaves for user/unwind/unwind_check.c. */
#ifndef __UNWIND_CHECK_H
#define __UNWIND_CHECK_H

#include "unwind.h"

struct unw_check_out {
	__u32 nr;
	__u32 causes;
	__u32 miss;
	__u32 cfi_frames;
	__u32 fp_frames;
	__u32 pad;
	__u64 ips[UNW_MAX_FRAMES];
};

#endif /* __UNWIND_CHECK_H */
