/* Worker credentials; see credentials.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/credentials.h"

#define BUCKETS 1024

typedef struct entry {
	char id[20];
	char pool[20];
	char code[65]; /* the code package its pool runs, "" for none */
	char hash[CREDENTIALS_HASH_LEN + 1]; /* the secret's SHA-256 */
	struct entry *next;
} entry;

struct credentials {
	pthread_mutex_t mu;
	entry *buckets[BUCKETS];
};

static unsigned bucket(const char *id, size_t len)
{
	unsigned h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)id[i]) * 16777619u;
	return h % BUCKETS;
}

int credentials_new(credentials **out)
{
	credentials *c = calloc(1, sizeof(*c));

	if (!c)
		return CM_ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return CM_OK;
}

void credentials_clear(credentials *c)
{
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < BUCKETS; i++) {
		while (c->buckets[i]) {
			entry *e = c->buckets[i];
			c->buckets[i] = e->next;
			free(e);
		}
	}
	pthread_mutex_unlock(&c->mu);
}

void credentials_free(credentials *c)
{
	if (!c)
		return;
	credentials_clear(c);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* The entry for id, and the link that points at it; with the lock held. */
static entry **find(credentials *c, const char *id, size_t len)
{
	entry **link = &c->buckets[bucket(id, len)];

	while (*link && !(strlen((*link)->id) == len && memcmp((*link)->id, id, len) == 0))
		link = &(*link)->next;
	return link;
}

static void hash_of(const char *secret, size_t len, char out[CREDENTIALS_HASH_LEN + 1])
{
	cm_sha256 h;

	cm_sha256_init(&h);
	cm_sha256_update(&h, secret, len);
	cm_sha256_hex(&h, out);
}

void credentials_new_secret(char secret[CREDENTIALS_SECRET_LEN + 1], char hash[CREDENTIALS_HASH_LEN + 1])
{
	cm_random_hex(secret, CREDENTIALS_SECRET_LEN / 2);
	hash_of(secret, CREDENTIALS_SECRET_LEN, hash);
}

int credentials_add(credentials *c, const char *worker_id, const char *pool_id, const char *code,
                    const char *secret_hash)
{
	entry *e;
	entry **link;

	if (strlen(worker_id) >= sizeof(e->id) || !cm_sha256_name_valid(secret_hash) ||
	    (code && strlen(code) >= sizeof(e->code)))
		return CM_EINVAL;
	pthread_mutex_lock(&c->mu);
	link = find(c, worker_id, strlen(worker_id));
	if (!(e = *link) && (e = calloc(1, sizeof(*e)))) {
		snprintf(e->id, sizeof(e->id), "%s", worker_id);
		*link = e;
	}
	if (e) {
		snprintf(e->pool, sizeof(e->pool), "%s", pool_id);
		snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
		memcpy(e->hash, secret_hash, CREDENTIALS_HASH_LEN + 1);
	}
	pthread_mutex_unlock(&c->mu);
	return e ? CM_OK : CM_ENOMEM;
}

void credentials_remove(credentials *c, const char *worker_id)
{
	entry **link, *e;

	pthread_mutex_lock(&c->mu);
	link = find(c, worker_id, strlen(worker_id));
	if ((e = *link)) {
		*link = e->next;
		free(e);
	}
	pthread_mutex_unlock(&c->mu);
}

int credentials_check(credentials *c, const char *id, size_t id_len, const char *secret, size_t secret_len,
                      char pool_out[20], char code_out[65])
{
	char hash[CREDENTIALS_HASH_LEN + 1];
	entry *e;
	int ok = 0;

	if (id_len == 0 || id_len >= sizeof(e->id) || secret_len != CREDENTIALS_SECRET_LEN)
		return 0;
	hash_of(secret, secret_len, hash); /* outside the lock */
	pthread_mutex_lock(&c->mu);
	if ((e = *find(c, id, id_len))) {
		ok = cm_secret_equal(e->hash, hash, CREDENTIALS_HASH_LEN);
		if (ok && pool_out)
			memcpy(pool_out, e->pool, sizeof(e->pool));
		if (ok && code_out)
			memcpy(code_out, e->code, sizeof(e->code));
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}
