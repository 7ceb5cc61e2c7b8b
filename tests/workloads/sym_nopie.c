// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Symbolizer workload: sym_target built as a fixed-address (non-PIE) executable. */
#include "sym_common.h"

int main(int argc, char **argv)
{
	return sym_main(argc, argv, "A non-PIE executable with known functions.");
}
