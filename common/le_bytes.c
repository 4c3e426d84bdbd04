/* Integers in byte buffers, least significant byte first: the store's
 * blobs and a runtime's frame headers are written so on every machine. */
#include "common/common.h"

uint32_t cm_le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t cm_le64_get(const uint8_t *p)
{
	return (uint64_t)cm_le32_get(p) | (uint64_t)cm_le32_get(p + 4) << 32;
}

void cm_le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void cm_le64_put(uint8_t *p, uint64_t v)
{
	cm_le32_put(p, (uint32_t)v);
	cm_le32_put(p + 4, (uint32_t)(v >> 32));
}
