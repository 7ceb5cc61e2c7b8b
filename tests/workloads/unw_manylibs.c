// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process with more executable mappings than an unwinder's process entry
 * holds (UNW_MAX_MAPS, 128), whose hot code is in libc: it loads NLIBS copies
 * of libunwtiny.so (its own directory; copied under NLIBS names into a
 * temporary directory, removed once loaded), then for SECONDS sorts under
 *
 *   main → run → sort_round → qsort (glibc: __qsort_r, msort_with_tmp) → compare
 *
 * with a comparison so cheap that most samples are in glibc's merge sort
 * itself. The copies are mapped below libc and ld.so (mmap goes down), so
 * an entry that kept mappings in address order kept them and left libc out.
 * Built without frame pointers and sibling calls (flags.mk).
 */
#include "unw_common.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNW_FN __attribute__((noinline, noclone))
#define SORT_N 4096

volatile unsigned long unw_sink;
static int sort_v[SORT_N];

UNW_FN int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

UNW_FN void sort_round(unsigned int *seed)
{
	size_t i, n = SORT_N / 2 + rand_r(seed) % (SORT_N / 2);	/* jitter */

	for (i = 0; i < n; i++)
		sort_v[i] = rand_r(seed);
	qsort(sort_v, n, sizeof(*sort_v), compare);
	unw_sink += sort_v[0];
}

UNW_FN void run(double secs)
{
	unsigned int seed = getpid();
	double end = unw_now_s() + secs;

	while (unw_now_s() < end)
		sort_round(&seed);
	unw_sink++;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] NLIBS [SECONDS]\n"
	       "Load NLIBS (0 to 2000) copies of libunwtiny.so from this program's\n"
	       "directory, then sort for SECONDS (default 2) under\n"
	       "main -> run -> sort_round -> qsort -> compare, most of the time in\n"
	       "glibc's sort itself. Prints nothing; with -v, \"loaded N\" and the\n"
	       "number of executable mappings. Exits 0; 1: a copy cannot be made or\n"
	       "loaded; 2: bad usage.\n",
	       prog);
	return code;
}

/* Copy @src to @dst. */
static int copy_file(const char *src, const char *dst)
{
	static char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n) {
			n = -1;
			break;
		}
	}
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

static int load_copies(int nlibs, int verbose)
{
	static char exe[PATH_MAX], src[PATH_MAX + 32], dir[] = "/tmp/unw-manylibs.XXXXXX";
	static char dst[sizeof(dir) + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int i, err = 0, (*fn)(int);
	char *slash;
	void *h;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(src, sizeof(src), "%s/libunwtiny.so", exe);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	for (i = 0; i < nlibs && !err; i++) {
		snprintf(dst, sizeof(dst), "%s/libunwtiny-%04d.so", dir, i);
		if (copy_file(src, dst)) {
			fprintf(stderr, "cannot copy %s to %s\n", src, dst);
			err = -1;
			break;
		}
		h = dlopen(dst, RTLD_NOW | RTLD_LOCAL);
		fn = h ? (int (*)(int))dlsym(h, "unw_tiny") : NULL;
		if (!fn) {
			fprintf(stderr, "dlopen %s: %s\n", dst, dlerror());
			err = -1;
		} else {
			unw_sink += fn(i);
		}
		unlink(dst);
	}
	rmdir(dir);
	if (verbose && !err) {
		char line[512];
		FILE *f = fopen("/proc/self/maps", "r");
		int x = 0;

		while (f && fgets(line, sizeof(line), f)) {
			char perms[8];

			if (sscanf(line, "%*s %7s", perms) == 1 && perms[2] == 'x')
				x++;
		}
		if (f)
			fclose(f);
		printf("loaded %d\nexecutable mappings %d\n", nlibs, x);
		fflush(stdout);
	}
	return err;
}

int main(int argc, char **argv)
{
	double args[2] = { 0, 2 };
	int i, verbose = 0;

	i = unw_parse_args(argc, argv, &verbose, args, 2, 1);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (argc < 2 || args[0] > 2000 || args[0] != (int)args[0] || args[1] <= 0)
		return usage(argv[0], 2);
	if (load_copies((int)args[0], verbose))
		return 1;
	run(args[1]);
	unw_sink++;	/* work after the call: main stays a frame */
	return 0;
}
