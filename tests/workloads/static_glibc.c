// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Linked with -static: glibc's malloc is inside the binary (__libc_malloc). */
#include "fp_common.h"

int main(int argc, char **argv)
{
	return fp_main(argc, argv, "A statically linked glibc program.");
}
