/*
 * Workers that join: a pool with backend "external" starts none. Its
 * owner asks for a join token (POST /v1/pools/{id}/join), good for that
 * pool only, a number of times, until it expires; a strand-worker on any
 * host trades it (POST /v1/join) for a worker's identity of its own (its
 * id and secret, the hub's URL and CA), then dials the hub as a started
 * worker does. The pool takes as many as its 'processes' and refuses more;
 * one that leaves or goes silent is lost as any other (its tasks go back to
 * the queue), and the pool waits for another to join. Tokens are kept as
 * their SHA-256, in memory and in the store, so a copy of the database
 * lets no one join.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "gateway/engine/engine_int.h"

#define JOIN_TOKEN_PREFIX "jt-"

static join_token *token_find(engine *e, const char *hash)
{
	for (join_token *t = e->join_tokens; t; t = t->next)
		if (strcmp(t->hash, hash) == 0)
			return t;
	return NULL;
}

static join_token *token_add(engine *e, const char *hash, const char *pool_id, int64_t expires_ms, int64_t uses)
{
	join_token *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->hash, sizeof(t->hash), "%s", hash);
	snprintf(t->pool, sizeof(t->pool), "%s", pool_id);
	t->expires_ms = expires_ms;
	t->uses = uses;
	t->next = e->join_tokens;
	e->join_tokens = t;
	return t;
}

static void token_drop(engine *e, join_token *t)
{
	for (join_token **at = &e->join_tokens; *at; at = &(*at)->next)
		if (*at == t) {
			*at = t->next;
			store_join_token_delete(e->st, t->hash);
			free(t);
			return;
		}
}

void engine__load_join_token(void *ctx, const char *hash, const char *pool_id, int64_t expires_ms, int64_t uses)
{
	token_add(ctx, hash, pool_id, expires_ms, uses);
}

/* Tokens past their time, or of a pool that is gone or ended, go. Each
 * token looks its pool up: once a second, not every cycle (a join checks
 * both itself, so a token kept a little longer lets no one in). */
void engine__tick_join_tokens(engine *e, int64_t now)
{
	int64_t wall = cm_wall_ms();

	if (!e->join_tokens || now - e->join_tokens_looked < 1000)
		return;
	e->join_tokens_looked = now;
	for (join_token *t = e->join_tokens, *next; t; t = next) {
		pool *p = engine__pool_find(e, t->pool);
		next = t->next;
		if (wall >= t->expires_ms || !p || p->state != POOL_ACTIVE)
			token_drop(e, t);
	}
}

void engine__join_tokens_clear(engine *e)
{
	while (e->join_tokens) {
		join_token *t = e->join_tokens;
		e->join_tokens = t->next;
		free(t);
	}
}

/* The token's hash: the SHA-256 of its text. */
static void token_hash(const char *token, char hash[CREDENTIALS_HASH_LEN + 1])
{
	cm_sha256 h;

	cm_sha256_init(&h);
	cm_sha256_update(&h, token, strlen(token));
	cm_sha256_hex(&h, hash);
}

static void make_token(engine *e, op *o, pool *p)
{
	char secret[CREDENTIALS_SECRET_LEN + 1], unused[CREDENTIALS_HASH_LEN + 1], hash[CREDENTIALS_HASH_LEN + 1];
	char text[sizeof(JOIN_TOKEN_PREFIX) + CREDENTIALS_SECRET_LEN], expires[32];
	int64_t uses = o->u.join.uses ? o->u.join.uses : p->spec.processes;
	int64_t expires_ms = cm_wall_ms() + o->u.join.ttl_s * 1000;

	credentials_new_secret(secret, unused);
	snprintf(text, sizeof(text), JOIN_TOKEN_PREFIX "%s", secret);
	explicit_bzero(secret, sizeof(secret));
	token_hash(text, hash);
	if ((o->err = store_join_token_put(e->st, hash, p->id, expires_ms, uses)) != CM_OK ||
	    !token_add(e, hash, p->id, expires_ms, uses)) {
		o->err = o->err ? o->err : CM_ENOMEM;
		explicit_bzero(text, sizeof(text));
		return;
	}
	engine__iso_time(expires_ms, expires);
	o->out = json_pack("{s:s, s:s, s:I, s:s}", "token", text, "pool", p->id, "uses", (json_int_t)uses, "expires_at",
	                   expires);
	explicit_bzero(text, sizeof(text));
}

/* A worker of p, for the one who showed the token: known to the hub and
 * watched through the external backend like a started one. */
static void join(engine *e, op *o, pool *p, join_token *t)
{
	char secret[CREDENTIALS_SECRET_LEN + 1];
	int live = 0;
	worker *w;

	for (const worker *x = p->workers; x; x = x->next)
		live += x->state != W_EXITED && !x->retiring;
	if (live >= p->spec.processes) {
		o->err = CM_ECLOSED;
		snprintf(o->detail, sizeof(o->detail), "pool %s has the %d workers it takes (its 'processes')", p->id,
		         p->spec.processes);
		return;
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		o->err = CM_ENOMEM;
		return;
	}
	cm_id_new('w', w->id);
	snprintf(w->handle, sizeof(w->handle), "%s", w->id);
	credentials_new_secret(secret, w->secret_hash);
	w->pool = p;
	/* The executor watches it last: nothing is left watched if the rest
	 * failed, and its row goes if the watch fails. */
	o->err = credentials_add(e->creds, w->id, p->id, p->spec.code, w->secret_hash);
	if (o->err == CM_OK &&
	    (o->err = store_worker_insert(e->st, w->id, p->id, w->handle, w->secret_hash, cm_wall_ms())) == CM_OK &&
	    (o->err = bx_adopt(p->backend, w->id, w->handle)) != CM_OK)
		store_worker_forget(e->st, w->id);
	if (o->err != CM_OK) {
		credentials_remove(e->creds, w->id);
		explicit_bzero(secret, sizeof(secret));
		free(w);
		return;
	}
	w->started = w->last_seen = cm_now_ms();
	w->next = p->workers;
	p->workers = w;
	engine__pool_tick_again(e, p);
	p->workers_started++;
	if (--t->uses > 0)
		store_join_token_put(e->st, t->hash, t->pool, t->expires_ms, t->uses);
	else
		token_drop(e, t);
	o->out = json_pack("{s:s, s:s, s:s, s:s, s:s*, s:s*, s:s*}", "worker", w->id, "pool", p->id, "secret", secret,
	                   "hub", e->cfg->hub_advertise, "hub_ca_pem", e->hub_ca.len ? e->hub_ca.data : NULL,
	                   "hub_server_name", e->cfg->hub_server_name[0] ? e->cfg->hub_server_name : NULL, "code",
	                   p->spec.code[0] ? p->spec.code : NULL);
	if (o->out && p->spec.runtime[0])
		json_object_set_new(o->out, "runtime", json_string(p->spec.runtime));
	explicit_bzero(secret, sizeof(secret));
	cm_info("worker %s joined pool %s", w->id, p->id);
}

void engine__handle_join(engine *e, op *o)
{
	if (o->kind == OP_JOIN_TOKEN) {
		pool *p = engine__pool_find(e, o->id);
		if (!p || p->spec.manager[0]) {
			o->err = CM_ENOENT;
			return;
		}
		if (strcmp(p->spec.backend, "external") != 0) {
			o->err = CM_EUNSUPPORTED;
			snprintf(o->detail, sizeof(o->detail),
			         "pool %s starts its own workers (backend %s): only an external pool's join", p->id,
			         p->spec.backend);
			return;
		}
		if (p->state != POOL_ACTIVE) {
			o->err = CM_ECLOSED;
			snprintf(o->detail, sizeof(o->detail), "pool %s is %s: no worker joins it", p->id,
			         pool_state_names[p->state]);
			return;
		}
		make_token(e, o, p);
		return;
	}
	/* OP_JOIN: an unknown, used-up and expired token are one answer. */
	char hash[CREDENTIALS_HASH_LEN + 1];
	token_hash(o->u.join.token, hash);
	join_token *t = token_find(e, hash);
	pool *p = t ? engine__pool_find(e, t->pool) : NULL;
	if (!t || cm_wall_ms() >= t->expires_ms || !p || p->state != POOL_ACTIVE) {
		o->err = CM_ENOENT;
		snprintf(o->detail, sizeof(o->detail), "join token unknown, used up or expired");
		return;
	}
	join(e, o, p, t);
}
