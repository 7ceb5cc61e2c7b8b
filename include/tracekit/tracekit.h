/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtracekit: the public API, whole. Link with `pkg-config --libs tracekit`.
 *
 *   tracekit/common.h   conventions, log callback, backends and collectors
 *   tracekit/caps.h     the capability snapshot
 *   tracekit/cpu.h      CPU profiling options
 *   tracekit/alloc.h    allocation profiling options
 *   tracekit/numa.h     NUMA migration options
 *   tracekit/session.h  running any of them, intervals, results and writers
 *   tracekit/profile.h  profiles and their formats
 *   tracekit/sidecar.h  a profiling sidecar inside the calling process
 *
 * docs/api.md has the guide and an example program.
 */
#ifndef __TRACEKIT_H
#define __TRACEKIT_H

#include "tracekit/common.h"
#include "tracekit/caps.h"
#include "tracekit/cpu.h"
#include "tracekit/alloc.h"
#include "tracekit/numa.h"
#include "tracekit/profile.h"
#include "tracekit/session.h"
#include "tracekit/sidecar.h"
#include "tracekit/stacks.h"

#endif /* __TRACEKIT_H */
