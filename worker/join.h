/*
 * strand-worker --join: a worker started by hand, on any host, for an
 * external pool. It trades a join token for its own identity over the
 * gateway's API (POST /v1/join), then runs as a worker the gateway started.
 */
#ifndef WORKER_JOIN_H
#define WORKER_JOIN_H

#include <stddef.h>

#include "worker/worker.h"

/* Posts token to url (https://HOST:PORT, or http:// to this host only: a
 * token crosses no network in clear) and fills cfg with what the gateway
 * answered (strings owned by this module, for the process's life). ca_file:
 * the CA to check the gateway's certificate by (NULL: the system's). 0, or
 * -1 with why. */
int worker_join(const char *url, const char *token, const char *ca_file, worker_config *cfg, char *why,
                size_t why_len);

#endif
