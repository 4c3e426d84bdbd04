/*
 * Clients' leases: a program holds one while it runs (the Python client
 * renews its own every few seconds), and the pools, managers and processes
 * it made with it are terminated when it ends: deleted (the program
 * exited) or not renewed for its lease_ms (the program was killed, its
 * machine lost); queue items it took ahead and had not used go back. Not a worker's lease on the tasks it holds
 * (pools.c).
 *
 * A lease is stored (a 201 is kept across a restart); its renewals are
 * not: a gateway that starts gives each lease its whole time again, so a
 * client has that long to renew. Runs on the engine thread.
 */
#include "gateway/engine/engine_int.h"

static client_lease *find(engine *e, const char *id)
{
	for (client_lease *l = e->client_leases; l; l = l->next)
		if (strcmp(l->id, id) == 0)
			return l;
	return NULL;
}

int engine__client_lease_known(engine *e, const char *id)
{
	return find(e, id) != NULL;
}

int engine__client_lease_missing(engine *e, const char *lease, op *o)
{
	if (!lease[0] || engine__client_lease_known(e, lease))
		return 0;
	o->err = CM_EUNSUPPORTED;
	snprintf(o->detail, sizeof(o->detail), "no lease %s: it ended, or never was (POST /v1/leases)", lease);
	return 1;
}

static client_lease *add(engine *e, const char *id, int64_t lease_ms, int64_t created_ms)
{
	client_lease *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	snprintf(l->id, sizeof(l->id), "%s", id);
	l->lease_ms = lease_ms;
	l->expires = cm_now_ms() + lease_ms;
	l->created_ms = created_ms;
	l->seq = ++e->made;
	l->next = e->client_leases;
	e->client_leases = l;
	return l;
}

void engine__load_client_lease(void *ctx, const char *id, int64_t lease_ms, int64_t created_ms)
{
	add(ctx, id, lease_ms, created_ms);
}

/* Ends l: what it holds is terminated (as DELETE does, answering no one),
 * and it is forgotten. Its view, as it was, into *out when out is set. */
static int end(engine *e, client_lease *l, const char *why, json_t **out)
{
	int err;

	if ((err = store_lease_delete(e->st, l->id)) != CM_OK)
		return err;
	if (out)
		*out = engine__lease_json(e, l, 1);
	for (pool *p = e->pools; p; p = p->next)
		if (strcmp(p->spec.lease, l->id) == 0 && p->state != POOL_TERMINATED && p->state != POOL_FAILED) {
			cm_info("%s %s: terminated, its client's lease %s %s", p->spec.manager[0] ? "manager" : "pool",
			        p->id, l->id, why);
			engine__pool_terminate(e, p);
		}
	for (process *pr = e->processes; pr; pr = pr->next)
		if (strcmp(pr->lease, l->id) == 0 && pr->state == PR_RUNNING) {
			cm_info("process %s: terminated, its client's lease %s %s", pr->id, l->id, why);
			engine__process_terminate(e, pr);
		}
	engine__queue_reader_gone(e, l->id);
	engine__queue_holds_end(e, l->id);
	engine__queues_of_lease_end(e, l->id);
	for (client_lease **at = &e->client_leases; *at; at = &(*at)->next)
		if (*at == l) {
			*at = l->next;
			break;
		}
	free(l);
	return CM_OK;
}

void engine__tick_client_leases(engine *e, int64_t now)
{
	for (client_lease *l = e->client_leases, *next; l; l = next) {
		next = l->next;
		if (now >= l->expires)
			end(e, l, "expired (not renewed in time)", NULL);
	}
}

void engine__handle_client_lease(engine *e, op *o)
{
	client_lease *l = NULL;
	char id[20];

	if (o->kind == OP_LEASE_CREATE) {
		int64_t now = cm_wall_ms();
		cm_id_new('l', id);
		if ((o->err = engine__quota_lease(e, o->detail, sizeof(o->detail))) != CM_OK ||
		    (o->err = store_lease_insert(e->st, id, o->u.lease_ms, now)) != CM_OK)
			return;
		if (!(l = add(e, id, o->u.lease_ms, now))) {
			o->err = CM_ENOMEM;
			return;
		}
		o->out = engine__lease_json(e, l, 0);
		return;
	}
	if (!(l = find(e, o->id))) {
		o->err = CM_ENOENT;
		snprintf(o->detail, sizeof(o->detail), "no such lease: it ended (deleted, or not renewed in time)");
		return;
	}
	switch (o->kind) {
	case OP_LEASE_RENEW:
		if (o->u.lease_ms)
			l->lease_ms = o->u.lease_ms;
		l->expires = cm_now_ms() + l->lease_ms;
		o->out = engine__lease_json(e, l, 0);
		break;
	case OP_LEASE_GET: o->out = engine__lease_json(e, l, 0); break;
	case OP_LEASE_DELETE: o->err = end(e, l, "was deleted", &o->out); break;
	default: break;
	}
}

void engine__client_leases_clear(engine *e)
{
	while (e->client_leases) {
		client_lease *l = e->client_leases;
		e->client_leases = l->next;
		free(l);
	}
}
