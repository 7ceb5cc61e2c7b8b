// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Built with -fomit-frame-pointer (flags.mk). */
#include "fp_common.h"

int main(int argc, char **argv)
{
	return fp_main(argc, argv, "A program built without frame pointers.");
}
