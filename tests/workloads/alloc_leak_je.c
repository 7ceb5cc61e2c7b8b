// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* alloc_leak linked with the shared libjemalloc, so --dump reaches its mallctl in-process. */
#include "alloc_leak.c"
