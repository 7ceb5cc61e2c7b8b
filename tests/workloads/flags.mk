# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Per-workload compiler flags and libraries, by the workload's file name.

# procinfo: frame pointer heuristic, allocator detection
WORKLOAD_CFLAGS_fp_yes := -fno-omit-frame-pointer
WORKLOAD_CFLAGS_fp_no := -fomit-frame-pointer
WORKLOAD_CFLAGS_static_glibc := -static
WORKLOAD_LIBS_jemalloc_user := -ljemalloc
WORKLOAD_LIBS_jemalloc_static := -l:libjemalloc.a -lm -lpthread -ldl
WORKLOAD_CFLAGS_stripped := -fno-omit-frame-pointer -s
# cpu: known call chains need frame pointers and no tail calls (shared/notes/stacks.md).
# clang, because gcc 12 drops the frame of a leaf function that does not use the stack
# even with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer, and a frame-pointer
# walk from inside such a leaf skips its caller (hot/cold would vanish under caller).
CPU_WL_FLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls
$(foreach w,cpu_split cpu_stripped cpu_short cpu_syscalls cpu_shlib cpu_forks cpu_offcpu libcpuhot,\
	$(eval WORKLOAD_CC_$(w) := $(CLANG)))
WORKLOAD_CFLAGS_cpu_split := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_cpu_stripped := $(CPU_WL_FLAGS) -s
WORKLOAD_CFLAGS_cpu_short := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_cpu_forks := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_cpu_offcpu := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_cpu_offcpu := -lpthread
WORKLOAD_LIBS_pingpong := -lpthread
WORKLOAD_CFLAGS_cpu_syscalls := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_libcpuhot := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_cpu_shlib := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_cpu_shlib := -L$(BUILD)/workloads -lcpuhot -Wl,-rpath,'$$ORIGIN'
$(BUILD)/workloads/cpu_shlib: $(BUILD)/workloads/libcpuhot.so
WORKLOAD_LIBS_bench_work := -lpthread
# cpu_dlopen dlopen()s libcpulate.so from its own directory after a sleep (built first, never
# linked); cpu_jit names its anonymous code in /tmp/perf-PID.map
WORKLOAD_CFLAGS_cpu_dlopen := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_libcpulate := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_cpu_dlopen := -ldl
$(BUILD)/workloads/cpu_dlopen: | $(BUILD)/workloads/libcpulate.so
# symbolizer: PIE, non-PIE, stripped, and a program calling libsymhot.so (rpath $ORIGIN)
WORKLOAD_CFLAGS_sym_target := -fno-omit-frame-pointer
WORKLOAD_CFLAGS_sym_nopie := -fno-omit-frame-pointer -fno-pie -no-pie
WORKLOAD_CFLAGS_sym_stripped := -fno-omit-frame-pointer -s
WORKLOAD_CFLAGS_sym_shlib := -fno-omit-frame-pointer
WORKLOAD_LIBS_sym_shlib := -L$(BUILD)/workloads -lsymhot -Wl,-rpath,'$$ORIGIN'
WORKLOAD_CFLAGS_libsymhot := -fno-omit-frame-pointer
$(BUILD)/workloads/sym_shlib: $(BUILD)/workloads/libsymhot.so
# sidecar_example embeds libtracekit (the sidecar contract: docs/design.md "Embedding")
WORKLOAD_CFLAGS_sidecar_example := -DTK_EMBED -Iinclude $(CPU_WL_FLAGS)
WORKLOAD_LIBS_sidecar_example := $(LIB) $(LIBS) -lpthread
$(BUILD)/workloads/sidecar_example: $(LIB)
# alloc: leak_site/churn call chains need frame pointers and no tail calls, as cpu above
$(foreach w,alloc_leak alloc_leak_je,$(eval WORKLOAD_CC_$(w) := $(CLANG)))
WORKLOAD_CFLAGS_alloc_leak := $(CPU_WL_FLAGS)
WORKLOAD_CFLAGS_alloc_leak_je := $(CPU_WL_FLAGS)
# alloc_exec: the sites before and after its exec, and its child's, as alloc_leak's
$(eval WORKLOAD_CC_alloc_exec := $(CLANG))
WORKLOAD_CFLAGS_alloc_exec := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_alloc_leak_je := -ljemalloc
WORKLOAD_CFLAGS_cpu_leader_exit := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_cpu_leader_exit := -lpthread
$(eval WORKLOAD_CC_cpu_leader_exit := $(CLANG))
# alloc sampler (preload/): its cost on malloc/free loops, and its behaviour under test
$(eval WORKLOAD_CC_alloc_bench := $(CLANG))
WORKLOAD_CFLAGS_alloc_bench := -fno-omit-frame-pointer
# it compares the addresses of blocks it reallocated and freed with the markers' log
WORKLOAD_CFLAGS_preload_check := -fno-builtin -Ipreload -Wno-use-after-free -rdynamic
WORKLOAD_LIBS_preload_check := -ldl -lpthread -lm
# alloc_leak with jemalloc linked into the executable; threads for --threads
$(eval WORKLOAD_CC_alloc_leak_jestatic := $(CLANG))
WORKLOAD_CFLAGS_alloc_leak_jestatic := $(CPU_WL_FLAGS)
WORKLOAD_LIBS_alloc_leak_jestatic := -l:libjemalloc.a -lm -lpthread -ldl
WORKLOAD_LIBS_alloc_leak := -lpthread
WORKLOAD_LIBS_alloc_leak_je += -lpthread
WORKLOAD_CFLAGS_alloc_cxx := $(CPU_WL_FLAGS)
# test_sidecar runs sidecar_example --heap under libjemalloc (a host with jemalloc profiling)
$(BUILD)/tests/unit/test_sidecar $(BUILD)/tests/unit-san/test_sidecar: | \
	$(BUILD)/workloads/sidecar_example
# alloc_leak with everything linked in: runs in the QEMU guests, which have no libc
$(eval WORKLOAD_CC_alloc_leak_static := $(CLANG))
WORKLOAD_CFLAGS_alloc_leak_static := $(CPU_WL_FLAGS) -static
WORKLOAD_LIBS_alloc_leak_static := -lpthread
# cpu_split linked statically, for the cpu checks in the QEMU guests (tests/vm/matrix.sh)
$(eval WORKLOAD_CC_cpu_split_static := $(CLANG))
WORKLOAD_CFLAGS_cpu_split_static := $(CPU_WL_FLAGS) -static
$(eval WORKLOAD_CC_cpu_offcpu_static := $(CLANG))
WORKLOAD_CFLAGS_cpu_offcpu_static := $(CPU_WL_FLAGS) -static
WORKLOAD_LIBS_cpu_offcpu_static := -lpthread
WORKLOAD_CFLAGS_cpu_offcpu_span_static := -static
WORKLOAD_LIBS_cpu_offcpu_span_static := -lpthread
# NUMA balancing in the two-node guests (tests/vm/matrix.sh): no libc there, so static
WORKLOAD_CFLAGS_numa_balance := -static
# move_pages(2) of 64 MiB to node 1 in the two-node guests (tests/workloads/numa_move.c)
WORKLOAD_CFLAGS_numa_move := -static
# unwinding by CFI (user/unwind/unwind.h): known call chains in code WITHOUT frame pointers (gcc's
# x86-64 default, said explicitly) and without sibling calls, so that every frame named in a
# chain is a real one (shared/notes/stacks.md). unw_mixed runs through libunwfp.so, the one
# object built with frame pointers; unw_dlopen dlopen()s libunwlate.so from its own directory
# after a first phase (built first, never linked); unw_chain_stripped is unw_chain with -s.
UNW_WL_FLAGS := -fomit-frame-pointer -fno-optimize-sibling-calls
WORKLOAD_CFLAGS_unw_chain := $(UNW_WL_FLAGS)
WORKLOAD_CFLAGS_unw_chain_stripped := $(UNW_WL_FLAGS) -s
WORKLOAD_CFLAGS_libunwfp := -fno-omit-frame-pointer -fno-optimize-sibling-calls
WORKLOAD_CFLAGS_unw_mixed := $(UNW_WL_FLAGS)
WORKLOAD_LIBS_unw_mixed := -L$(BUILD)/workloads -lunwfp -Wl,-rpath,'$$ORIGIN'
$(BUILD)/workloads/unw_mixed: $(BUILD)/workloads/libunwfp.so
WORKLOAD_CFLAGS_libunwlate := $(UNW_WL_FLAGS)
WORKLOAD_CFLAGS_unw_dlopen := $(UNW_WL_FLAGS)
WORKLOAD_LIBS_unw_dlopen := -ldl
$(BUILD)/workloads/unw_dlopen: | $(BUILD)/workloads/libunwlate.so
WORKLOAD_CFLAGS_unw_jit := $(UNW_WL_FLAGS)
# test_perfmap dlopen()s libunwlate.so into itself after a capture
$(BUILD)/tests/unit/test_perfmap $(BUILD)/tests/unit-san/test_perfmap: | \
	$(BUILD)/workloads/libunwlate.so
# alloc_libc_touch: the leak's page faults happen in glibc's _int_malloc, under leak_4k
WORKLOAD_CFLAGS_alloc_libc_touch := $(UNW_WL_FLAGS)
# unw_chain linked statically, for the unwinding checks in the QEMU guests (tests/vm/matrix.sh)
WORKLOAD_CFLAGS_unw_chain_static := $(UNW_WL_FLAGS) -static
# alloc_steady reads libtkalloc.so's test log (tkalloc_test.h) by dlsym
WORKLOAD_CFLAGS_alloc_steady := -Ipreload
WORKLOAD_LIBS_alloc_steady := -ldl
WORKLOAD_LIBS_alloc_brk := -lpthread
# unw_manylibs loads copies of libunwtiny.so (its own directory, built first, never linked)
# until it has hundreds of executable mappings; its hot code is glibc's qsort
WORKLOAD_CFLAGS_unw_manylibs := $(UNW_WL_FLAGS)
WORKLOAD_LIBS_unw_manylibs := -ldl
$(BUILD)/workloads/unw_manylibs: | $(BUILD)/workloads/libunwtiny.so
# unw_deep: two threads' stacks past the depth limit, through functions of their own
WORKLOAD_CFLAGS_unw_deep := $(UNW_WL_FLAGS)
WORKLOAD_LIBS_unw_deep := -lpthread
WORKLOAD_LIBS_stacks_shape := -lpthread
WORKLOAD_CFLAGS_stacks_shape_static := -static
WORKLOAD_LIBS_stacks_shape_static := -lpthread
# a64_high_code: code above 2^48 on an arm64 stack (the PAC mask), static for the guests
WORKLOAD_CFLAGS_a64_high_code := -static
WORKLOAD_LIBS_a64_high_code := -lpthread
