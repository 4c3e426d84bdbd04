/*
 * One result as JSON, the way every answer shows it: an item of a results
 * page, and the answer of an apply that waited for its result. Results are
 * JSON text the hub checked (result_check.h) and are copied as they are;
 * an error is escaped as a string.
 */
#ifndef GATEWAY_RESULT_ITEM_H
#define GATEWAY_RESULT_ITEM_H

#include <stdint.h>

#include "common/common.h"

/* Appends {"index":I,"ok":true,"value":V} or {"index":I,"ok":false,"error":"E"}
 * to b, with "job":"JOB" when job is not NULL and then, for an apply's
 * answer, "output_last":N when output_last is not negative (the number of
 * the pool's last line of output, stored no later than the result). */
int result_item_append(cm_buf *b, int64_t index, int ok, const void *value, size_t len, const char *job,
                       int64_t output_last);

#endif
