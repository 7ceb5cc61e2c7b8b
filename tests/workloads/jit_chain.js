// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// A known chain of JavaScript for tests/integration/test_jit_runtimes.c and
// tools/bench-jit.sh: drive -> handler -> leafHot, where leafHot has nearly
// all the CPU. Run with --no-turbo-inlining so each keeps a frame of its own:
//   node --perf-basic-prof --interpreted-frames-native-stack \
//        --no-turbo-inlining jit_chain.js [MILLISECONDS]
// Prints a number (the result, so nothing is optimized away) and exits 0.
'use strict';

function leafHot(x) {
	for (let i = 0; i < 2000; i++)
		x = (x * 31 + i) | 0;
	return x;
}

function handler(x) {
	return leafHot(x) + 1;
}

function drive(ms) {
	const end = Date.now() + ms;
	let s = 0;

	while (Date.now() < end)
		s = handler(s);
	return s;
}

console.log(drive(Number(process.argv[2] || 3000)));
