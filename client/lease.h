/*
 * A client's hold on what it makes (strand_client_hold): a lease the
 * gateway ends, terminating the pools, managers and processes made with it,
 * when the client deletes it or stops renewing it. A thread of its own
 * renews it four times a lease, over a connection of its own (a
 * strand_client is not shared between threads).
 */
#ifndef CLIENT_LEASE_H
#define CLIENT_LEASE_H

typedef struct client_lease client_lease;
typedef struct strand_client strand_client;

/* Makes a lease of lease_s seconds through c and starts renewing it
 * through a client of its own to c's gateway (url); id receives it.
 * Returns 0, or -1 with c's error set. */
int client_lease_start(strand_client *c, const char *url, int lease_s, client_lease **out, char id[32]);
/* Stops renewing and deletes the lease: what it held ends now. */
void client_lease_end(client_lease *l);

#endif
