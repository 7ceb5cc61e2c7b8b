// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* unw_chain stripped (-s): its frames must come out as unw_chain_stripped+0xOFFSET. */
#include "unw_chain.h"

int main(int argc, char **argv)
{
	int ret = unw_chain_main(argc, argv);

	unw_sink++;	/* work after the call: main stays a frame */
	return ret;
}
