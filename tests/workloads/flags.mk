# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Per-workload compiler flags and libraries, by the workload's file name.
