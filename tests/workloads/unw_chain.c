// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* burn 75 % under qsort → compare, cold_path 25 %, no frame pointers (unw_chain.h). */
#include "unw_chain.h"

int main(int argc, char **argv)
{
	int ret = unw_chain_main(argc, argv);

	unw_sink++;	/* work after the call: main stays a frame */
	return ret;
}
