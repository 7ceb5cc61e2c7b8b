// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// A known chain of Java for tests/integration/test_jit_runtimes.c and
// tools/bench-jit.sh: main -> drive -> handler -> leafHot, where leafHot has
// nearly all the CPU. Compiled by the test (javac); run with frame pointers
// kept and the chain not inlined:
//   java -XX:+PreserveFramePointer -XX:CompileCommand=quiet \
//        -XX:CompileCommand=dontinline,JitChain::* -cp DIR JitChain [MILLISECONDS]
public class JitChain {
	static volatile long sink;

	static long leafHot(long x) {
		for (int i = 0; i < 2000; i++)
			x = x * 31 + i;
		return x;
	}

	static long handler(long x) {
		return leafHot(x) + 1;
	}

	static void drive(long ms) {
		long end = System.currentTimeMillis() + ms;

		while (System.currentTimeMillis() < end)
			sink = handler(sink);
	}

	public static void main(String[] args) {
		drive(args.length > 0 ? Long.parseLong(args[0]) : 3000);
	}
}
