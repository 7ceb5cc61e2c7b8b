/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the CO-RE self-test program found, read back through its .bss. */
#ifndef __CORE_PROBE_H
#define __CORE_PROBE_H

struct core_probe_facts {
	__u32 ran;			/* 1 once the program has run */
	__u32 tgid;			/* current->tgid, read through CO-RE */
	__u32 pid;			/* current->pid */
	__u32 mm_migrate_has_nr_split;	/* trace_event_raw_mm_migrate_pages.nr_split */
	__u32 mm_migrate_has_large_folio_split;	/* ... .large_folio_split (6.12, 6.18) */
	__u32 has_migrate_reason_numa_misplaced;	/* enum migrate_reason MR_NUMA_MISPLACED */
};

#endif /* __CORE_PROBE_H */
