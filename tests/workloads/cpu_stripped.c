// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpu_split built stripped: its frames must come out as cpu_stripped+0xOFFSET. */
#include "cpu_split.h"
