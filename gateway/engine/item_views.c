/*
 * Views of jobs, pools, processes, rings, queues, pipes and leases
 * (item_views.h): the copies, made on the engine thread, and their JSON,
 * made on any.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

/* A copy of the text src into dst, cut at the room there. */
#define COPY(dst, src) copy_text(dst, sizeof(dst), src)

static void copy_text(char *dst, size_t room, const char *src)
{
	size_t n = strnlen(src, room - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- the copies: engine thread ------------------------------------------ */

const char *engine__job_state(const job *j)
{
	return j->state == JOB_RUNNING && j->received < j->total ? "submitting" : job_state_names[j->state];
}

job_counts engine__job_counts(const job *j)
{
	if (j->inputs_total)
		return (job_counts){j->inputs_total, j->inputs_done, j->inputs_failed};
	return (job_counts){j->total, j->done, j->failed};
}

void engine__job_view(job_view *v, const job *j)
{
	job_counts c = engine__job_counts(j);

	*v = (job_view){.state = engine__job_state(j),
	                .function = j->function,
	                .name = j->name,
	                .total = c.total,
	                .done = c.done,
	                .failed = c.failed,
	                .by_input = j->inputs_total != 0,
	                .tasks_total = j->total,
	                .tasks_done = j->done,
	                .tasks_failed = j->failed,
	                .chunksize = j->chunksize,
	                .created_ms = j->created_ms,
	                .ended_ms = j->ended_ms,
	                .received = j->state == JOB_RUNNING && j->received < j->total ? j->received : -1};
	COPY(v->id, j->id);
	COPY(v->pool, j->pool->id);
}

int engine__job_view_keep(job_view *v)
{
	size_t f = strlen(v->function) + 1, n = v->name ? strlen(v->name) + 1 : 0;

	if (!(v->copy = malloc(f + n)))
		return CM_ENOMEM;
	memcpy(v->copy, v->function, f);
	v->function = v->copy;
	if (v->name) {
		memcpy(v->copy + f, v->name, n);
		v->name = v->copy + f;
	}
	return CM_OK;
}

int engine__pool_view(pool_view *v, const pool *p)
{
	size_t n = 0;

	for (const worker *w = p->workers; w; w = w->next)
		n++;
	*v = (pool_view){.state = pool_state_names[p->state],
	                 .runs_on = bx_name(p->backend),
	                 .native = bx_native(p->backend),
	                 .processes = p->spec.processes,
	                 .gpu = p->spec.gpu,
	                 .max_attempts = p->spec.max_attempts,
	                 .cpu = p->spec.cpu,
	                 .memory_mb = p->spec.memory_mb,
	                 .created_ms = p->created_ms,
	                 .queued = p->queued,
	                 .done = p->tasks_done,
	                 .failed = p->tasks_failed,
	                 .open_jobs = p->open_jobs,
	                 .started = p->workers_started,
	                 .lost = p->workers_lost,
	                 .scale_min = p->spec.scale_min,
	                 .scale_max = p->spec.scale_max,
	                 .scale_target_s = p->spec.scale_target_s,
	                 .scale_idle_s = p->spec.scale_idle_s};
	COPY(v->id, p->id);
	COPY(v->backend, p->spec.backend);
	COPY(v->reason, p->reason);
	COPY(v->scale_reason, p->scale_reason);
	COPY(v->image, p->spec.image);
	COPY(v->manager, p->spec.manager);
	COPY(v->code, p->spec.code);
	COPY(v->lease, p->spec.lease);
	if ((p->spec.runtime[0] && !(v->runtime = strdup(p->spec.runtime))) ||
	    (n && !(v->workers = calloc(n, sizeof(*v->workers)))))
		return CM_ENOMEM;
	for (const worker *w = p->workers; w; w = w->next) {
		worker_view *wv = &v->workers[v->nworkers++];
		if (w->state != W_EXITED) {
			v->live++;
			v->pending += w->pending;
		}
		COPY(wv->id, w->id);
		wv->state = w->retiring && w->state == W_CONNECTED ? "retiring" : worker_state_names[w->state];
		COPY(wv->handle, w->handle);
		wv->pending = w->pending;
		wv->exit_code = w->exit_code;
		wv->queued = w->queued && w->state == W_STARTING;
		COPY(wv->last_words, w->last_words);
	}
	return CM_OK;
}

int engine__process_view(process_view *v, const process *pr)
{
	*v = (process_view){.state = proc_state_names[pr->state],
	                    .runs_on = bx_name(pr->backend),
	                    .terminated = pr->terminated,
	                    .ended = pr->state != PR_RUNNING,
	                    .exit_code = pr->exit_code,
	                    .created_ms = pr->created_ms,
	                    .ended_ms = pr->ended_ms};
	COPY(v->id, pr->id);
	COPY(v->handle, pr->handle);
	COPY(v->reason, pr->reason);
	return (v->spec_json = strdup(pr->spec_json)) ? CM_OK : CM_ENOMEM;
}

/* running while any member runs; then done if all exited 0, else failed */
const char *engine__ring_state_of(const ring *r, const process *const *members)
{
	int running = 0, bad = 0;

	for (int i = 0; i < r->size; i++) {
		const process *pr = members[i];
		if (!pr || pr->state == PR_FAILED || (pr->state == PR_EXITED && pr->exit_code != 0))
			bad = 1;
		else if (pr->state == PR_RUNNING)
			running = 1;
	}
	return running ? "running" : bad ? "failed" : "done";
}

int engine__ring_view(ring_view *v, const ring *r, const process *const *members)
{
	*v = (ring_view){.state = engine__ring_state_of(r, members),
	                 .size = r->size,
	                 .master_port = r->master_port,
	                 .created_ms = r->created_ms};
	COPY(v->id, r->id);
	if (!(v->members = calloc((size_t)r->size, sizeof(*v->members))))
		return CM_ENOMEM;
	for (int i = 0; i < r->size; i++) {
		if (members[i] && engine__process_view(&v->members[i], members[i]) != CM_OK)
			return CM_ENOMEM;
		if (!members[i]) /* gone: its id only */
			COPY(v->members[i].id, r->members[i]);
	}
	return CM_OK;
}

void engine__queue_view(queue_view *v, const queue *q)
{
	*v = (queue_view){.size = q->size, .waiting = (int)waitlist_count(&q->getters), .created_ms = q->created_ms};
	for (const queue_hold *h = q->holds; h; h = h->next) /* a few holds a queue, one a reader */
		v->held += h->n;
	COPY(v->id, q->id);
	COPY(v->kind, q->kind);
}

void engine__pipe_view(pipe_view *v, const queue *q0, const queue *q1)
{
	size_t len = strlen(q0->id) - 2; /* "<pipe>.0" */

	*v = (pipe_view){.duplex = strcmp(q0->kind, "duplex") == 0, .ndirs = q1 ? 2 : 1};
	snprintf(v->id, sizeof(v->id), "%.*s", (int)len, q0->id);
	engine__queue_view(&v->dirs[0], q0);
	if (q1)
		engine__queue_view(&v->dirs[1], q1);
}

void engine__lease_view(lease_view *v, const client_lease *l, int ended)
{
	int64_t left = l->expires - cm_now_ms();

	*v = (lease_view){
	        .ended = ended, .lease_ms = l->lease_ms, .left_ms = left > 0 ? left : 0, .created_ms = l->created_ms};
	COPY(v->id, l->id);
}

static int id_add(id_list *l, const char *id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4;
		char(*ids)[20] = realloc(l->ids, cap * sizeof(*ids));
		if (!ids)
			return CM_ENOMEM;
		l->ids = ids;
		l->cap = cap;
	}
	COPY(l->ids[l->n++], id);
	return CM_OK;
}

int engine__lease_view_pool(lease_view *v, const pool *p)
{
	if (p->state == POOL_TERMINATED || p->state == POOL_FAILED)
		return CM_OK; /* what it held and has ended */
	return id_add(p->spec.manager[0] ? &v->managers : &v->pools, p->id);
}

int engine__lease_view_process(lease_view *v, const process *pr)
{
	return pr->state == PR_RUNNING ? id_add(&v->processes, pr->id) : CM_OK;
}

int engine__lease_view_queue(lease_view *v, const queue *q)
{
	if (!engine__queue_is_pipe(q))
		return id_add(&v->queues, q->id);
	size_t len = strcspn(q->id, ".");
	if (strcmp(q->id + len, ".0") != 0) /* a pipe once, by its first direction */
		return CM_OK;
	char pipe[20];
	snprintf(pipe, sizeof(pipe), "%.*s", (int)len, q->id);
	return id_add(&v->pipes, pipe);
}

/* ---- their JSON: any thread --------------------------------------------- */

int job_view_text(const job_view *v, cm_buf *out)
{
	char created[32], ended[32] = "";
	int err;

	engine__iso_time(v->created_ms, created);
	if (v->ended_ms) /* --retain counts from here */
		engine__iso_time(v->ended_ms, ended);
	/* Ids are letters, digits and '-'; a function's name may be any
	 * printable text (rt: names), so it is escaped. */
	err = cm_buf_printf(out, "{\"id\":\"%s\",\"pool\":\"%s\",\"state\":\"%s\",\"function\":", v->id, v->pool,
	                    v->state);
	if (err == CM_OK)
		err = cm_buf_json_string(out, v->function, strlen(v->function));
	if (err == CM_OK && v->name && (err = cm_buf_puts(out, ",\"name\":")) == CM_OK)
		err = cm_buf_json_string(out, v->name, strlen(v->name));
	if (err == CM_OK)
		err = cm_buf_printf(
		        out,
		        ",\"total\":%lld,\"done\":%lld,\"failed\":%lld,\"chunksize\":%d,\"created_at\":\"%s\","
		        "\"links\":{\"self\":\"/v1/jobs/%s\",\"results\":\"/v1/jobs/%s/results\"}",
		        (long long)v->total, (long long)v->done, (long long)v->failed, v->chunksize, created, v->id,
		        v->id);
	/* Counts by input above; its tasks (a result each) apart. */
	if (err == CM_OK && v->by_input)
		err = cm_buf_printf(out, ",\"tasks\":{\"total\":%lld,\"done\":%lld,\"failed\":%lld}",
		                    (long long)v->tasks_total, (long long)v->tasks_done, (long long)v->tasks_failed);
	if (err == CM_OK && v->received >= 0)
		err = cm_buf_printf(out, ",\"received\":%lld", (long long)v->received); /* where its next part starts */
	if (err == CM_OK && ended[0])
		err = cm_buf_printf(out, ",\"ended_at\":\"%s\"", ended);
	return err == CM_OK ? cm_buf_puts(out, "}") : err;
}

void job_view_fini(job_view *v)
{
	free(v->copy);
	v->copy = NULL;
}

/* What runs a worker or process, in its backend's terms: a pid, a
 * container or pod, a Slurm job, or a worker that joined. Nothing before
 * its backend started it. */
static void runs_as(json_t *o, const char *runs_on, const char *handle)
{
	if (!handle[0])
		return;
	if (strcmp(runs_on, "local") == 0)
		json_object_set_new(o, "pid", json_integer(atoi(handle)));
	else if (strcmp(runs_on, "slurm") == 0)
		json_object_set_new(o, "slurm_job", json_integer(atoll(handle)));
	else if (strcmp(runs_on, "external") == 0)
		json_object_set_new(o, "joined", json_true()); /* started elsewhere, by someone else */
	else /* a name (strand-<pool>-<n>, a pod), or a docker id shown short as docker does */
		json_object_set_new(o, "container",
		                    json_stringn(handle, strncmp(handle, "strand-", 7) != 0 && strlen(handle) > 12
		                                                 ? 12
		                                                 : strlen(handle)));
}

static json_t *pool_json(const pool_view *v)
{
	json_t *workers = json_array();
	json_t *o;
	char created[32];

	for (size_t i = 0; workers && i < v->nworkers; i++) {
		const worker_view *w = &v->workers[i];
		json_t *wj = json_pack("{s:s, s:s, s:s, s:I, s:i}", "id", w->id, "state", w->state, "handle", w->handle,
		                       "pending", (json_int_t)w->pending, "exit_code", w->exit_code);
		if (wj && w->last_words[0])
			json_object_set_new(wj, "last_words", json_string(w->last_words));
		if (wj && w->queued)
			json_object_set_new(wj, "queued", json_true());
		if (wj)
			runs_as(wj, v->runs_on, w->handle);
		json_array_append_new(workers, wj);
	}
	engine__iso_time(v->created_ms, created);
	o = json_pack("{s:s, s:s, s:i, s:s, s:{s:f, s:I, s:i}, s:i, s:s, s:i, s:o,"
	              " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
	              "id", v->id, "state", v->state, "processes", v->processes, "backend", v->backend, "resources",
	              "cpu", v->cpu, "memory_mb", (json_int_t)v->memory_mb, "gpu", v->gpu, "max_attempts",
	              v->max_attempts, "created_at", created, "live_workers", v->live, "workers", workers, "counters",
	              "tasks_queued", (json_int_t)v->queued, "tasks_pending", (json_int_t)v->pending, "tasks_done",
	              (json_int_t)v->done, "tasks_failed", (json_int_t)v->failed, "jobs_open", (json_int_t)v->open_jobs,
	              "workers_started", (json_int_t)v->started, "workers_lost", (json_int_t)v->lost);
	if (o && v->reason[0])
		json_object_set_new(o, "reason", json_string(v->reason));
	if (o && v->scale_max)
		json_object_set_new(o, "autoscale",
		                    json_pack("{s:i, s:i, s:i, s:i, s:i, s:s}", "min", v->scale_min, "max",
		                              v->scale_max, "target_s", v->scale_target_s, "idle_s", v->scale_idle_s,
		                              "desired", v->processes, "reason", v->scale_reason));
	if (o && !v->native)
		json_object_set_new(o, "image", json_string(v->image));
	if (o && v->manager[0])
		json_object_set_new(o, "type", json_string(v->manager));
	if (o && v->runtime)
		json_object_set_new(o, "runtime", json_loads(v->runtime, JSON_DECODE_ANY, NULL));
	if (o && v->code[0])
		json_object_set_new(o, "code", json_string(v->code));
	if (o && v->lease[0])
		json_object_set_new(o, "lease", json_string(v->lease));
	return o;
}

static json_t *process_json(const process_view *v)
{
	char created[32], ended[32];
	json_t *o;

	if (!v->state)
		return json_pack("{s:s}", "id", v->id);
	engine__iso_time(v->created_ms, created);
	o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:o}", "id", v->id, "state", v->state, "backend", v->runs_on,
	              "handle", v->handle, "terminated", v->terminated, "created_at", created, "spec",
	              json_loads(v->spec_json, 0, NULL) ?: json_null());
	if (o && v->ended) {
		engine__iso_time(v->ended_ms, ended);
		json_object_set_new(o, "exit_code", json_integer(v->exit_code));
		json_object_set_new(o, "ended_at", json_string(ended));
	}
	if (o && v->reason[0])
		json_object_set_new(o, "reason", json_string(v->reason));
	if (o)
		runs_as(o, v->runs_on, v->handle);
	return o;
}

static json_t *ring_json(const ring_view *v)
{
	json_t *members = json_array();
	char created[32];

	for (int i = 0; members && i < v->size; i++) {
		json_t *m = process_json(&v->members[i]);
		if (m)
			json_object_set_new(m, "rank", json_integer(i));
		json_array_append_new(members, m);
	}
	engine__iso_time(v->created_ms, created);
	return json_pack("{s:s, s:s, s:i, s:s, s:i, s:s, s:o}", "id", v->id, "state", v->state, "size", v->size,
	                 "master_addr", "127.0.0.1", "master_port", v->master_port, "created_at", created, "members",
	                 members);
}

static json_t *queue_json(const queue_view *v)
{
	char created[32];

	engine__iso_time(v->created_ms, created);
	return json_pack("{s:s, s:s, s:I, s:I, s:i, s:s}", "id", v->id, "kind", v->kind, "size", (json_int_t)v->size,
	                 "held", (json_int_t)v->held, "waiting_readers", v->waiting, "created_at", created);
}

static json_t *pipe_json(const pipe_view *v)
{
	return json_pack("{s:s, s:b, s:[o*o*]}", "id", v->id, "duplex", v->duplex, "directions",
	                 queue_json(&v->dirs[0]), v->ndirs == 2 ? queue_json(&v->dirs[1]) : NULL);
}

static json_t *ids_json(const id_list *l)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < l->n; i++)
		json_array_append_new(a, json_string(l->ids[i]));
	return a;
}

static json_t *lease_json(const lease_view *v)
{
	char created[32];

	engine__iso_time(v->created_ms, created);
	return json_pack("{s:s, s:s, s:I, s:I, s:s, s:o, s:o, s:o, s:o, s:o}", "id", v->id, "state",
	                 v->ended ? "ended" : "active", "lease_s", (json_int_t)(v->lease_ms / 1000), "expires_in_ms",
	                 (json_int_t)v->left_ms, "created_at", created, "pools", ids_json(&v->pools), "managers",
	                 ids_json(&v->managers), "processes", ids_json(&v->processes), "queues", ids_json(&v->queues),
	                 "pipes", ids_json(&v->pipes));
}

json_t *item_view_json(const item_view *v)
{
	switch (v->kind) {
	case LIST_POOLS:
	case LIST_MANAGERS: return pool_json(&v->u.pool);
	case LIST_PROCESSES: return process_json(&v->u.process);
	case LIST_RINGS: return ring_json(&v->u.ring);
	case LIST_QUEUES: return queue_json(&v->u.queue);
	case LIST_PIPES: return pipe_json(&v->u.pipe);
	case LIST_LEASES: return lease_json(&v->u.lease);
	}
	return NULL;
}

void item_view_fini(item_view *v)
{
	switch (v->kind) {
	case LIST_POOLS:
	case LIST_MANAGERS:
		free(v->u.pool.runtime);
		free(v->u.pool.workers);
		break;
	case LIST_PROCESSES: free(v->u.process.spec_json); break;
	case LIST_RINGS:
		for (int i = 0; v->u.ring.members && i < v->u.ring.size; i++)
			free(v->u.ring.members[i].spec_json);
		free(v->u.ring.members);
		break;
	case LIST_LEASES:
		free(v->u.lease.pools.ids);
		free(v->u.lease.managers.ids);
		free(v->u.lease.processes.ids);
		free(v->u.lease.queues.ids);
		free(v->u.lease.pipes.ids);
		break;
	case LIST_QUEUES:
	case LIST_PIPES: break;
	}
}

/* ---- one item: both steps, engine thread -------------------------------- */

int engine__job_text(const job *j, cm_buf *out)
{
	job_view v;

	engine__job_view(&v, j);
	out->len = 0;
	return job_view_text(&v, out);
}

json_t *engine__job_json(const job *j)
{
	cm_buf text;
	json_t *o = NULL;

	cm_buf_init(&text);
	if (engine__job_text(j, &text) == CM_OK)
		o = json_loadb(text.data, text.len, 0, NULL);
	cm_buf_fini(&text);
	return o;
}

/* The view's JSON, and the view freed; NULL if it could not be made. */
static json_t *shown(item_view *v, int err)
{
	json_t *o = err == CM_OK ? item_view_json(v) : NULL;

	item_view_fini(v);
	return o;
}

json_t *engine__pool_json(const pool *p)
{
	item_view v = {.kind = LIST_POOLS};

	return shown(&v, engine__pool_view(&v.u.pool, p));
}

json_t *engine__process_json(const process *pr)
{
	item_view v = {.kind = LIST_PROCESSES};

	return shown(&v, engine__process_view(&v.u.process, pr));
}

json_t *engine__ring_json(const ring *r, const process *const *members)
{
	item_view v = {.kind = LIST_RINGS};

	return shown(&v, engine__ring_view(&v.u.ring, r, members));
}

json_t *engine__queue_json(const queue *q)
{
	item_view v = {.kind = LIST_QUEUES};

	engine__queue_view(&v.u.queue, q);
	return shown(&v, CM_OK);
}

json_t *engine__lease_json(engine *e, const client_lease *l, int ended)
{
	item_view v = {.kind = LIST_LEASES};
	int err = CM_OK;

	engine__lease_view(&v.u.lease, l, ended);
	for (const pool *p = e->pools; p && err == CM_OK; p = p->next)
		if (strcmp(p->spec.lease, l->id) == 0)
			err = engine__lease_view_pool(&v.u.lease, p);
	for (const process *pr = e->processes; pr && err == CM_OK; pr = pr->next)
		if (strcmp(pr->lease, l->id) == 0)
			err = engine__lease_view_process(&v.u.lease, pr);
	for (const queue *q = e->queues; q && err == CM_OK; q = q->next)
		if (strcmp(q->lease, l->id) == 0)
			err = engine__lease_view_queue(&v.u.lease, q);
	return shown(&v, err);
}
