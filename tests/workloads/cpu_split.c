// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* hot 75 % / cold 25 % under main → caller, with symbols (see cpu_split.h). */
#include "cpu_split.h"
