# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Per-workload compiler flags and libraries, by the workload's file name.

# procinfo: frame pointer heuristic, allocator detection
WORKLOAD_CFLAGS_fp_yes := -fno-omit-frame-pointer
WORKLOAD_CFLAGS_fp_no := -fomit-frame-pointer
WORKLOAD_CFLAGS_static_glibc := -static
WORKLOAD_LIBS_jemalloc_user := -ljemalloc
WORKLOAD_LIBS_jemalloc_static := -l:libjemalloc.a -lm -lpthread -ldl
WORKLOAD_CFLAGS_stripped := -fno-omit-frame-pointer -s
