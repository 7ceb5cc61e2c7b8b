// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The library's version (the Makefile's VERSION). */
#include "tracekit/common.h"

const char *tk_version(void)
{
	return TRACEKIT_VERSION;
}
