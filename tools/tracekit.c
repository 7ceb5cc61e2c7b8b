// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit: the command line. Subcommands share option letters:
 * -p PID, -d SECONDS, -o FILE, -F HZ, -v, --json.
 *
 * Exit codes: 0 success; 1 the job could not be done (message says why);
 * 2 bad usage; 141 stdout was closed early (EXIT_STDOUT_CLOSED, cli.h).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tracekit/tracekit.h"

static const char usage_main[] =
	"Usage: tracekit COMMAND [OPTIONS]\n"
	"\n"
	"A tracing toolkit for Linux incidents: where the CPU goes, who allocates and\n"
	"does not free, which pages the kernel moves between NUMA nodes.\n"
	"\n"
	"Commands:\n"
	"  alloc       who allocates and does not free, what makes memory grow\n"
	"  caps        what this machine lets tracekit do, and why\n"
	"  cpu         where the CPU goes: sampled stacks to pprof, folded, SVG, JSON, text\n"
	"  numa        which pages the kernel moves between NUMA nodes, why, for whom\n"
	"  record      every collector over one window, into one directory or .tar.gz\n"
	"  serve       profiles and metrics over HTTP (pprof's and Prometheus' conventions)\n"
	"  stacks      what every thread is doing now: its stacks and waits, nothing stopped\n"
	"\n"
	"Run 'tracekit COMMAND --help' for a command's options.\n"
	"  -h, --help      this help\n"
	"  -V, --version   print the version\n"
	"\n"
	"Exit codes: 0 success, 1 the job could not be done, 2 bad usage, 141 stdout\n"
	"was closed early (| head; the -o files are still whole).\n";

int main(int argc, char **argv)
{
	const char *cmd;

	/*
	 * Buffers of 128 KiB and more are mmapped, and unmapped when freed, even
	 * after glibc's sliding threshold would have risen: the 5.5 MB copies of
	 * the kernel's BTF that libbpf makes at every object load otherwise end
	 * in the brk heap and stay there freed (~10 MiB of RSS all the capture).
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (argc < 2)
		return usage_error(NULL, "a command is needed");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return EXIT_SUCCESS;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("tracekit %s\n", TRACEKIT_VERSION);
		return EXIT_SUCCESS;
	}
	if (!strcmp(cmd, "alloc"))
		return cmd_alloc(argc - 1, argv + 1);
	if (!strcmp(cmd, "caps"))
		return cmd_caps(argc - 1, argv + 1);
	if (!strcmp(cmd, "cpu"))
		return cmd_cpu(argc - 1, argv + 1);
	if (!strcmp(cmd, "numa"))
		return cmd_numa(argc - 1, argv + 1);
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "stacks"))
		return cmd_stacks(argc - 1, argv + 1);
	return usage_error(NULL, "unknown command '%s'", cmd);
}
