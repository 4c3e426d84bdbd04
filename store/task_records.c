#include "store/task_records.h"

#include <string.h>

#include "store/store.h"

#define VARINT_MAX 10

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads a varint at *p (before end) into *v; 0 if it is cut or too long. */
static int take_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t out = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift == 63 && b > 1)
			return 0;
		out |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = out;
			return 1;
		}
	}
	return 0;
}

static int decode_fixed(trec *t, int n, const uint8_t *p, size_t len)
{
	if (len != (size_t)n * RECORDS_FIXED_BYTES)
		return CM_EIO;
	for (int i = 0; i < n; i++, p += RECORDS_FIXED_BYTES)
		t[i] = (trec){.state = p[0],
		              .ok = p[1],
		              .attempts = (uint16_t)(p[2] | p[3] << 8),
		              .x = (int64_t)cm_le64_get(p + 4)};
	return CM_OK;
}

int task_records_decode(trec *t, int n, const void *blob, size_t len)
{
	const uint8_t *p = blob, *end = p + len;
	int at = 0;

	if (!blob) {
		memset(t, 0, (size_t)n * sizeof(*t));
		return CM_OK;
	}
	if (!len || p[0] != RECORDS_RUNS)
		return decode_fixed(t, n, p, len);
	for (p++; p < end;) {
		uint64_t count, flags, attempts, x;
		if (!take_varint(&p, end, &count) || !take_varint(&p, end, &flags) ||
		    !take_varint(&p, end, &attempts) || !take_varint(&p, end, &x))
			return CM_EIO;
		uint64_t step = flags >> 3 & 1;
		if (count < 1 || count > (uint64_t)(n - at) || (flags & 3) > STORE_DONE || flags >> 4 ||
		    attempts > UINT16_MAX || x > (uint64_t)INT64_MAX - (count - 1) * step)
			return CM_EIO;
		for (uint64_t k = 0; k < count; k++)
			t[at++] = (trec){.state = (uint8_t)(flags & 3),
			                 .ok = (uint8_t)(flags >> 2 & 1),
			                 .attempts = (uint16_t)attempts,
			                 .x = (int64_t)(x + k * step)};
	}
	return at == n ? CM_OK : CM_EIO;
}

/* Whether b follows a in a run of the given step (0 or 1). */
static int follows(const trec *a, const trec *b, uint64_t step)
{
	return b->state == a->state && b->ok == a->ok && b->attempts == a->attempts &&
	       (uint64_t)b->x - (uint64_t)a->x == step;
}

int task_records_encode(const trec *t, int n, cm_buf *out)
{
	out->len = 0;
	/* A run is at most 4 varints; there are at most n runs. */
	if (cm_buf_reserve(out, 1 + (size_t)n * 4 * VARINT_MAX) != CM_OK)
		return CM_ENOMEM;
	uint8_t *p = (uint8_t *)out->data;
	size_t len = 0;

	p[len++] = RECORDS_RUNS;
	for (int i = 0; i < n;) {
		uint64_t step = i + 1 < n && follows(&t[i], &t[i + 1], 1) ? 1 : 0;
		int count = 1;
		while (i + count < n && follows(&t[i + count - 1], &t[i + count], step))
			count++;
		len += put_varint(p + len, (uint64_t)count);
		len += put_varint(p + len, (uint64_t)(t[i].state | (t[i].ok ? 4 : 0) | step << 3));
		len += put_varint(p + len, t[i].attempts);
		len += put_varint(p + len, (uint64_t)t[i].x);
		i += count;
	}
	out->len = len;
	return CM_OK;
}
