/* The dashboard's sign-ins; see sessions.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/sessions.h"

typedef struct session {
	char hash[CM_SHA256_HEX + 1]; /* "" for a free slot */
	int64_t used_ms;
} session;

struct sessions {
	pthread_mutex_t mu;
	int64_t idle_ms;
	session slot[SESSIONS_MAX];
};

int sessions_new(int64_t idle_ms, sessions **out)
{
	sessions *s = calloc(1, sizeof(*s));

	if (!s)
		return CM_ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	s->idle_ms = idle_ms;
	*out = s;
	return CM_OK;
}

void sessions_free(sessions *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void hash_of(const char *id, char out[CM_SHA256_HEX + 1])
{
	cm_sha256 h;

	cm_sha256_init(&h);
	cm_sha256_update(&h, id, strlen(id));
	cm_sha256_hex(&h, out);
}

/* The slot of a session with this hash used since now_ms - idle_ms, or
 * NULL; with the lock held. Every slot is compared in full, so the time
 * says nothing of which. */
static session *find(sessions *s, const char *hash, int64_t now_ms)
{
	session *found = NULL;

	for (int i = 0; i < SESSIONS_MAX; i++) {
		unsigned char diff = 0;
		for (int k = 0; k < CM_SHA256_HEX; k++)
			diff |= (unsigned char)(s->slot[i].hash[k] ^ hash[k]);
		if (diff == 0 && s->slot[i].hash[0] && now_ms - s->slot[i].used_ms < s->idle_ms)
			found = &s->slot[i];
	}
	return found;
}

int sessions_open(sessions *s, int64_t now_ms, char id[SESSION_ID_LEN + 1])
{
	session *oldest;

	cm_random_hex(id, SESSION_ID_LEN / 2);
	pthread_mutex_lock(&s->mu);
	oldest = &s->slot[0];
	for (int i = 1; i < SESSIONS_MAX && oldest->hash[0]; i++)
		if (!s->slot[i].hash[0] || s->slot[i].used_ms < oldest->used_ms)
			oldest = &s->slot[i];
	hash_of(id, oldest->hash);
	oldest->used_ms = now_ms;
	pthread_mutex_unlock(&s->mu);
	return CM_OK;
}

int sessions_check(sessions *s, const char *id, int64_t now_ms)
{
	char hash[CM_SHA256_HEX + 1];
	session *found;

	if (!id || strlen(id) != SESSION_ID_LEN)
		return 0;
	hash_of(id, hash);
	pthread_mutex_lock(&s->mu);
	if ((found = find(s, hash, now_ms)))
		found->used_ms = now_ms;
	pthread_mutex_unlock(&s->mu);
	return found != NULL;
}

void sessions_close(sessions *s, const char *id)
{
	char hash[CM_SHA256_HEX + 1];
	session *found;

	if (!id || strlen(id) != SESSION_ID_LEN)
		return;
	hash_of(id, hash);
	pthread_mutex_lock(&s->mu);
	if ((found = find(s, hash, INT64_MIN / 2)))
		memset(found, 0, sizeof(*found));
	pthread_mutex_unlock(&s->mu);
}
