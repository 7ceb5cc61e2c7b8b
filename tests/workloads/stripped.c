// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Built with frame pointers but stripped (-s): nothing left to judge them by. */
#include "fp_common.h"

int main(int argc, char **argv)
{
	return fp_main(argc, argv, "A stripped program (no symbol table).");
}
