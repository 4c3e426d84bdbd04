/*
 * The allocator's settings for strand's processes. A worker unpacks a batch
 * of thousands of tasks and frees it; the gateway builds batches, result
 * groups and pages and frees them, every cycle. With glibc's defaults each
 * free at the top of the heap past 128 KiB gives the memory back (brk), and
 * the next burst faults it in again page by page: in a profile of a
 * 3,000,000-task map, page faults and the heap's trimming were the largest
 * part of the gateway's engine thread and 15 % of the run's time. Keeping
 * up to 64 MiB of freed memory (and growing the heap 8 MiB at a time) cost
 * nothing measurable in resident memory at 10 million tasks.
 */
#include <malloc.h>

#include "common/common.h"

void cm_malloc_for_bursts(void)
{
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 8 << 20);
	/* Set so that the thresholds above stay: glibc otherwise raises the
	 * mmap threshold (and with it the trim threshold) as it sees fit. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
}
