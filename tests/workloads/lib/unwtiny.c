// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libunwtiny.so: one small function, for unw_manylibs, which loads copies of
 * it under different names until the process has hundreds of executable
 * mappings (no DT_SONAME: each copy is an object of its own to ld.so).
 */
__attribute__((noinline, noclone)) int unw_tiny(int x)
{
	return x * 3 + 1;
}
