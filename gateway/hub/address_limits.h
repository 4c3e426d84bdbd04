/*
 * What one network address may make the hub do before any of its
 * connections names a worker and its secret. A connection from a stranger
 * costs the hub's one thread a TLS handshake (a private-key operation,
 * about a millisecond with an RSA key) and holds one of its slots for up
 * to the first frame's deadline; without a bound per address, one host
 * could fill every slot, or keep the thread busy with handshakes, and no
 * worker would get through. An address is an IPv4 address or an IPv6 /64
 * (what one host is usually given); an ipc:// hub's peers have none and
 * are not limited.
 *
 * The count of an address's connections that have not yet named a worker
 * is the hub's (hub.c counts its own slots); the pace of new connections
 * is here: a token bucket an address, in a table of a fixed size. Two
 * addresses that fall on one entry take it from each other, and the
 * newcomer starts with a full bucket: a collision only ever lets more
 * through, never fewer.
 */
#ifndef GATEWAY_HUB_ADDRESS_LIMITS_H
#define GATEWAY_HUB_ADDRESS_LIMITS_H

#include <stdint.h>
#include <sys/socket.h>

/* An address as the limits count it: IPv4 (also when mapped into IPv6)
 * in the last four bytes after ::ffff:, IPv6 cut to its /64. */
typedef struct hub_address {
	uint8_t b[16];
} hub_address;

/* *out for the peer sa (len bytes); 0 when it has none to count (a Unix
 * socket's peer). */
int hub_address_of(const struct sockaddr_storage *sa, socklen_t len, hub_address *out);
/* a's text as people write it (an IPv6 /64 with "/64"), into buf. */
void hub_address_text(const hub_address *a, char *buf, size_t len);
int hub_address_same(const hub_address *a, const hub_address *b);

typedef struct hub_pace hub_pace;

/* At most per_s new connections a second from one address, burst at once
 * (from an address not seen for a while). NULL: out of memory. */
hub_pace *hub_pace_new(unsigned per_s, unsigned burst);
/* Whether a connection from a may begin at now_ms (counted if so). */
int hub_pace_take(hub_pace *p, const hub_address *a, int64_t now_ms);
void hub_pace_free(hub_pace *p);

#endif
