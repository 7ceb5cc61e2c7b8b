// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Symbolizer workload: calls into libsymhot.so (found through its rpath
 * $ORIGIN), whose hot function is where --spin spends its time.
 */
#include "lib/symhot.h"

#define SYM_SPIN() symhot_spin(1000)
#define SYM_REPORT() symhot_report(stdout)
#include "sym_common.h"

int main(int argc, char **argv)
{
	return sym_main(argc, argv, "Calls a hot function in a shared library (libsymhot.so).");
}
