// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * C++ allocations with a known answer: main → cxx_leak_site() keeps a `new`
 * std::vector<char>-free block (new char[]) of --leak-block bytes per step,
 * never deleted; main → cxx_churn() news and deletes an object at once.
 * Prints "leaked=BYTES blocks=N churn_calls=N". Built with frame pointers and
 * no sibling calls (flags.mk) so the call chains are walkable.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <vector>

#define NOINLINE __attribute__((noinline))

static volatile void *escape;

struct Node {
	char payload[200];
	Node *next;
};

NOINLINE void cxx_leak_site(std::vector<char *> &kept, size_t size)
{
	char *p = new char[size];

	p[0] = 1;
	p[size - 1] = 2;
	kept.push_back(p);
}

NOINLINE void cxx_churn()
{
	Node *n = new Node;

	n->payload[0] = 1;
	escape = n;
	delete n;
}

static double now_s()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = 1, start, t;
	size_t leak_bytes = 8 << 20, block = 64 << 10, nr, calls = 0;
	std::vector<char *> kept;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			secs = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--leak-bytes") && i + 1 < argc) {
			leak_bytes = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--leak-block") && i + 1 < argc) {
			block = strtoull(argv[++i], NULL, 0);
		} else {
			printf("Usage: %s [-d SECONDS] [--leak-bytes N] [--leak-block N]\n", argv[0]);
			return !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ? 0 : 2;
		}
	}
	if (!block || secs < 0 || secs > 3600)
		return 2;
	nr = leak_bytes / block;
	kept.reserve(nr);
	start = now_s();
	do {
		t = now_s();
		while (kept.size() < nr && (secs == 0 || kept.size() < (t - start) / secs * nr))
			cxx_leak_site(kept, block);
		cxx_churn();
		calls++;
	} while (t < start + secs || kept.size() < nr);
	printf("leaked=%zu blocks=%zu churn_calls=%zu\n", kept.size() * block, kept.size(), calls);
	return 0;
}
