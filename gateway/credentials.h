/*
 * Who may speak to the hub: each worker's id and its own secret, shared by
 * the engine (which makes and forgets workers) and the hub (which checks
 * every frame's header against it before decoding the body, on nng's
 * threads). A worker's secret is its alone, so a task or a process that
 * learns one worker's secret cannot pose as another worker or another pool.
 * Only a secret's SHA-256 is kept, here and in the store: what the gateway
 * holds or writes down opens nothing (a secret is 256 random bits, so one
 * unsalted round of SHA-256 is enough). Thread-safe (one mutex; lookups are
 * short).
 */
#ifndef GATEWAY_CREDENTIALS_H
#define GATEWAY_CREDENTIALS_H

#include <stddef.h>

#define CREDENTIALS_SECRET_LEN 64 /* hex digits of a worker secret */
#define CREDENTIALS_HASH_LEN 64 /* hex digits of a secret's SHA-256 */

typedef struct credentials credentials;

int credentials_new(credentials **out);
void credentials_free(credentials *c);
/* A new secret (CREDENTIALS_SECRET_LEN hex digits) for the worker to
 * present, and its hash for the gateway to keep. */
void credentials_new_secret(char secret[CREDENTIALS_SECRET_LEN + 1], char hash[CREDENTIALS_HASH_LEN + 1]);
/* Registers (or replaces) a worker's secret by its hash (as
 * credentials_new_secret makes it); pool_id is the pool it serves, code the
 * SHA-256 of the code package that pool runs (NULL or "": none), the one
 * package the hub lets it fetch. */
int credentials_add(credentials *c, const char *worker_id, const char *pool_id, const char *code,
                    const char *secret_hash);
void credentials_remove(credentials *c, const char *worker_id);
/* Forgets every worker: the engine reloads its state from the store. */
void credentials_clear(credentials *c);
/* Whether id (id_len bytes, not NUL-terminated) is a known worker holding
 * this secret; compares its hash in time independent of where it differs.
 * pool_out (20 bytes) and code_out (65) receive the worker's pool and code
 * package when known; either may be NULL. */
int credentials_check(credentials *c, const char *id, size_t id_len, const char *secret, size_t secret_len,
                      char pool_out[20], char code_out[65]);

#endif
