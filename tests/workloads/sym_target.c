// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Symbolizer workload: a PIE with frame pointers and its .symtab. */
#include "sym_common.h"

int main(int argc, char **argv)
{
	return sym_main(argc, argv, "A PIE with known functions, for the symbolizer's tests.");
}
