/* Shared by the bench drivers: counts the results strand_imap hands over. */
#ifndef BENCH_TALLY_H
#define BENCH_TALLY_H

#include "client/client.h"

typedef struct count {
	long n, failed;
} count;

static inline int tally(void *ctx, json_int_t index, int ok, json_t *value)
{
	count *c = ctx;

	(void)index;
	(void)value;
	c->n++;
	c->failed += !ok;
	return 0;
}

#endif
