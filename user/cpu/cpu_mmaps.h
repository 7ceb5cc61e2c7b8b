/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The mappings of processes too short-lived for /proc (cpu_mmaps.c), for the
 * BPF CPU backend. The BPF ring says "first sample of (pid, gen)" and user
 * space reads PID/maps then; a process of a few milliseconds is often gone by
 * that time, and its samples would stay unnamed. So, as perf does, a dummy
 * software event on every CPU has the kernel write PERF_RECORD_MMAP2 (every
 * executable file mapping), COMM with exec, FORK and EXIT into rings, and
 * what they say is kept per process: the mappings since its exec (complete),
 * or those inherited from a parent known here and added since; and the image
 * before the last exec, for samples taken before it (records and the BPF
 * events share CLOCK_MONOTONIC). A process that is gone when captured gets
 * its mappings from here.
 *
 * What is kept lives as long as the process, and until the BPF ring has
 * been read past its end (its events may still be on their way, however far
 * behind user space is); so its size follows the processes alive, not all
 * those ever seen.
 */
#ifndef __TK_CPU_MMAPS_H
#define __TK_CPU_MMAPS_H

#include <stdint.h>

#include "sym/symbolize.h"

struct tk_cpu_mmaps;

/*
 * Open the dummy events on @nr_cpus CPUs (@cpus) and map their rings;
 * records of process @self (tracekit) are ignored. NULL and errno when the
 * kernel refuses (the backend works without: short processes go unnamed).
 */
struct tk_cpu_mmaps *tk_cpu_mmaps__open(const int *cpus, int nr_cpus, uint32_t self);
/* Read every ring; returns 0 or -ENOMEM. */
int tk_cpu_mmaps__read(struct tk_cpu_mmaps *m);
/*
 * Give @s what the records say of the image @pid ran at @when (CLOCK_MONOTONIC
 * ns: its first sample), under (@pid, @gen), after reading the rings. Returns
 * 0 when mappings were given, -ENOENT when nothing is known of that image.
 */
int tk_cpu_mmaps__give(struct tk_cpu_mmaps *m, struct tk_symbolizer *s, uint32_t pid,
		       uint32_t gen, uint64_t when);
/*
 * The BPF ring has been read whole up to its events from before @before
 * (CLOCK_MONOTONIC ns): what went before that (and a margin) can go.
 */
void tk_cpu_mmaps__drained(struct tk_cpu_mmaps *m, uint64_t before);
/*
 * The BPF ring says @pid has ended and everything before that has been
 * handled: its mappings can go (if its EXIT record has been read; else
 * they go once the ring has been read past its end).
 */
void tk_cpu_mmaps__forget(struct tk_cpu_mmaps *m, uint32_t pid);
/* Records the kernel could not write (ring full): PERF_RECORD_LOST totals. */
uint64_t tk_cpu_mmaps__lost(const struct tk_cpu_mmaps *m);
/* Processes held now: alive, or gone less than the grace time. */
uint64_t tk_cpu_mmaps__procs(const struct tk_cpu_mmaps *m);
void tk_cpu_mmaps__free(struct tk_cpu_mmaps *m);

#endif /* __TK_CPU_MMAPS_H */
