/*
 * The dashboard's sign-ins. A browser holds a random session id in a
 * cookie, never the API token: an id can be revoked (sign-out), expires
 * when idle, and opens this gateway only. The gateway keeps each id's
 * SHA-256 and when it was last used, in memory (a restart signs everyone
 * out), at most SESSIONS_MAX of them: signing in past that forgets the
 * least recently used. Thread-safe (one mutex; the table is small).
 */
#ifndef GATEWAY_SESSIONS_H
#define GATEWAY_SESSIONS_H

#include <stdint.h>

#define SESSIONS_MAX 1024
#define SESSION_ID_LEN 64 /* hex digits: 256 random bits */

typedef struct sessions sessions;

/* idle_ms: a session unused this long is gone. */
int sessions_new(int64_t idle_ms, sessions **out);
void sessions_free(sessions *s);
/* A new session, used now: id receives it. */
int sessions_open(sessions *s, int64_t now_ms, char id[SESSION_ID_LEN + 1]);
/* Whether id (may be NULL) is a live session; if so it was used now. */
int sessions_check(sessions *s, const char *id, int64_t now_ms);
/* Ends id's session, if it is one. */
void sessions_close(sessions *s, const char *id);

#endif
