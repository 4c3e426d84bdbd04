#include "gateway/hub/address_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

/* Entries of the pace table: twice the hub's most connections, so that
 * the addresses of a full hub rarely meet. */
#define PACE_ENTRIES 8192

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int hub_address_of(const struct sockaddr_storage *sa, socklen_t len, hub_address *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->ss_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(out->b, v4_mapped, sizeof(v4_mapped));
		memcpy(out->b + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 1;
	}
	if (sa->ss_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (memcmp(a, v4_mapped, sizeof(v4_mapped)) == 0)
			memcpy(out->b, a, 16); /* an IPv4 peer of a dual-stack socket: as IPv4 */
		else
			memcpy(out->b, a, 8); /* its /64 */
		return 1;
	}
	return 0;
}

void hub_address_text(const hub_address *a, char *buf, size_t len)
{
	char text[INET6_ADDRSTRLEN];

	if (memcmp(a->b, v4_mapped, sizeof(v4_mapped)) == 0) {
		inet_ntop(AF_INET, a->b + 12, text, sizeof(text));
		snprintf(buf, len, "%s", text);
	} else {
		inet_ntop(AF_INET6, a->b, text, sizeof(text));
		snprintf(buf, len, "%s/64", text);
	}
}

int hub_address_same(const hub_address *a, const hub_address *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

typedef struct pace_entry {
	hub_address addr;
	int used;
	double tokens;
	int64_t at_ms; /* when tokens was counted */
} pace_entry;

struct hub_pace {
	double per_ms, burst;
	uint64_t seed; /* random: which addresses meet cannot be chosen from outside */
	pace_entry e[PACE_ENTRIES];
};

hub_pace *hub_pace_new(unsigned per_s, unsigned burst)
{
	hub_pace *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->per_ms = per_s / 1000.0;
	p->burst = burst;
	cm_random_bytes(&p->seed, sizeof(p->seed));
	return p;
}

/* FNV-1a from the seed, then mixed (splitmix64's finish): the entry of a. */
static size_t entry_of(const hub_pace *p, const hub_address *a)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ p->seed;

	for (size_t i = 0; i < sizeof(a->b); i++)
		h = (h ^ a->b[i]) * 0x100000001b3ULL;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return (size_t)(h % PACE_ENTRIES);
}

int hub_pace_take(hub_pace *p, const hub_address *a, int64_t now_ms)
{
	pace_entry *e = &p->e[entry_of(p, a)];

	if (!e->used || !hub_address_same(&e->addr, a)) {
		e->addr = *a;
		e->used = 1;
		e->tokens = p->burst;
	} else if (now_ms > e->at_ms) {
		e->tokens += (double)(now_ms - e->at_ms) * p->per_ms;
		if (e->tokens > p->burst)
			e->tokens = p->burst;
	}
	e->at_ms = now_ms > e->at_ms ? now_ms : e->at_ms;
	if (e->tokens < 1.0)
		return 0;
	e->tokens -= 1.0;
	return 1;
}

void hub_pace_free(hub_pace *p)
{
	free(p);
}
