/*
 * A results page by columns (GET /v1/jobs/{id}/results?shape=columns): the
 * page's values in one array, their indexes as runs of consecutive indexes,
 * and the positions of the failed ones, whose value is the error's text:
 *   "values":[V,…],"indexes":[[FIRST,COUNT],…],"failed":[POS,…]
 * In the items shape, a no-op task's result is some forty bytes of keys and
 * braces around a four-byte null; a large map's pages were mostly that, for
 * the gateway to write and the client to read. By columns it is five bytes.
 */
#ifndef GATEWAY_RESULT_COLUMNS_H
#define GATEWAY_RESULT_COLUMNS_H

#include <stdint.h>

#include "common/common.h"

/* At most, besides their lists: what result_columns_end adds (the open run
 * and the keys), and what one more result adds to the lists (a run of its
 * own and its position). An index has 19 digits at most, a count 6. */
#define RESULT_COLUMNS_END 64
#define RESULT_COLUMNS_ROOM 40

typedef struct result_columns {
	cm_buf runs; /* the runs closed so far, as "[FIRST,COUNT]," text */
	cm_buf failed; /* the failed positions so far, as "POS," text */
	int64_t first, count; /* the run still open (count 0: none) */
	int64_t n; /* values written */
} result_columns;

void result_columns_init(result_columns *rc);
void result_columns_fini(result_columns *rc);
/* Appends one result's value to b (whose text ends at the values' '[' or a
 * value), or its error as a string; notes its index and outcome. */
int result_columns_add(result_columns *rc, cm_buf *b, int64_t index, int ok, const void *value, size_t len);
/* Bytes result_columns_end would write now, at most. */
size_t result_columns_pending(const result_columns *rc);
/* Closes the values array in b and writes the indexes and failed parts. */
int result_columns_end(result_columns *rc, cm_buf *b);

#endif
