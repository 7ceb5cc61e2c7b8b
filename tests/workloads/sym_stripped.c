// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Symbolizer workload: sym_target stripped (-s): its frames stay module+offset. */
#include "sym_common.h"

int main(int argc, char **argv)
{
	return sym_main(argc, argv, "A stripped PIE: no symbols, frames are module+offset.");
}
