/*
 * Jobs and their arguments into the store: a map or an apply, and the
 * parts that follow a map made with a 'total' larger than its arguments.
 *
 * Arguments go in a slice a cycle (FILL_SLICE tasks, engine__fill_step), so
 * a large map does not hold every other request up for the whole of its
 * insert; each slice's tasks join the queue at once, so workers start on a
 * map while the rest of it goes in. The request is answered once its last
 * slice is committed. A job whose arguments are not all in is "submitting":
 * it takes the next part at offset 'received' (POST /v1/jobs/{id}/args), one
 * part at a time; a crash keeps what was committed, and the client goes on
 * from 'received'.
 */
#include "gateway/engine/engine_int.h"

/* A request whose arguments go into the store a slice a cycle. */
struct fill {
	op *o; /* answered once its last slice is in */
	job *j;
	const spec_args *args; /* the request's (its caller waits for the answer) */
	size_t next; /* the first of args not stored yet */
	int64_t first; /* the task id of args[0] */
	struct fill *next_fill;
};

/* Returns 1 when o waits for its fill, 0 when it is answered now (out of
 * memory: o->err says so). */
static int fill_start(engine *e, op *o, job *j, const spec_args *args, int64_t first)
{
	fill *f = calloc(1, sizeof(*f));

	if (!f) {
		o->err = CM_ENOMEM;
		return 0;
	}
	*f = (fill){.o = o, .j = j, .args = args, .first = first};
	*e->fills_tail = f;
	e->fills_tail = &f->next_fill;
	j->filling = f;
	return 1;
}

/* o's answer: job j's view, written once into e->job_text, where the
 * event said as a request is answered takes it too. An apply keeps it as
 * text: most are answered with their result and never show it, and
 * parsing it was 6 % of the engine thread's time on an apply, between its
 * request and its task's hand-out. */
static int answer_job(engine *e, op *o, const job *j)
{
	int err = engine__job_text(j, &e->job_text);

	if (err != CM_OK)
		return err;
	if (o->kind == OP_MAP && o->u.map.wait_until) {
		snprintf(o->u.map.job_id, sizeof(o->u.map.job_id), "%s", j->id);
		o->u.map.view.len = 0;
		return cm_buf_append(&o->u.map.view, e->job_text.data, e->job_text.len);
	}
	o->out = json_loadb(e->job_text.data, e->job_text.len, 0, NULL);
	return o->out ? CM_OK : CM_ENOMEM;
}

/* Answers o after this cycle's commit, with a detail for its error. */
static void answer_now(engine *e, op *o)
{
	if (o->err && !o->detail[0])
		snprintf(o->detail, sizeof(o->detail), "%s", cm_strerror(o->err));
	engine__ready(e, o);
}

/* Takes f out of the list and answers its request: the job, or err. */
static void fill_end(engine *e, fill *f, int err, const char *detail)
{
	fill **at = &e->fills;

	while (*at != f)
		at = &(*at)->next_fill;
	*at = f->next_fill;
	if (e->fills_tail == &f->next_fill)
		e->fills_tail = at;
	f->j->filling = NULL;
	if (err == CM_OK && (err = answer_job(e, f->o, f->j)) == CM_OK)
		engine__event_job_written(e, f->j); /* as its request is answered: made, or a part in */
	else
		snprintf(f->o->detail, sizeof(f->o->detail), "%s", detail ? detail : cm_strerror(err));
	f->o->err = err;
	engine__ready(e, f->o);
	free(f);
}

void engine__fill_step(engine *e)
{
	int64_t budget = FILL_SLICE;

	while (e->fills && budget > 0) {
		fill *f = e->fills;
		job *j = f->j;
		size_t k = f->args->n - f->next;
		if ((int64_t)k > budget)
			k = (size_t)budget;
		int64_t lo = f->first + (int64_t)f->next;
		/* A failed insert fails the cycle's commit: the reload answers f. */
		if (store_tasks_insert(e->st, j->num, lo, k, f->args->text, f->args->offs + f->next) != CM_OK)
			return;
		if (f->args->inputs && j->inputs) {
			const uint32_t *counts = f->args->inputs + f->next;
			if (store_job_inputs_add(e->st, j->num, lo - j->base, k, counts) != CM_OK)
				return;
			memcpy(j->inputs + (lo - j->base), counts, k * sizeof(*counts));
			for (size_t i = 0; i < k; i++)
				j->inputs_received += counts[i];
		}
		j->received += (int64_t)k; /* stored: counted, queued or not */
		j->pool->tasks_submitted += (int64_t)k;
		f->next += k;
		if (engine__queue_push(j->pool, j, lo, lo + (int64_t)k - 1, 0) != CM_OK) {
			fill_end(e, f, CM_ENOMEM, "out of memory; the stored arguments run after a restart");
			continue;
		}
		budget -= (int64_t)k;
		if (f->next == f->args->n)
			fill_end(e, f, CM_OK, NULL);
	}
}

void engine__fill_abort(engine *e, job *j, const char *why)
{
	if (j->filling)
		fill_end(e, j->filling, CM_ECLOSED, why);
}

void engine__fills_drop(engine *e)
{
	while (e->fills) {
		fill *f = e->fills;
		e->fills = f->next_fill;
		f->j->filling = NULL;
		engine__answer(e, f->o, 0);
		free(f);
	}
	e->fills_tail = &e->fills;
}

/* Returns 1 when o waits for its arguments' fill. */
static int map_start(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);
	map_spec *m = o->u.map.spec;
	job *j;
	store_job sj;
	char existing[20];

	if (!p) {
		o->err = CM_ENOENT;
		return 0;
	}
	if (o->u.map.idem_key && store_job_find_idem(e->st, p->id, o->u.map.idem_key, existing) == CM_OK &&
	    (j = engine__job_find(e, existing))) {
		o->err = answer_job(e, o, j);
		return 0;
	}
	if (p->state != POOL_ACTIVE) {
		o->err = CM_ECLOSED;
		snprintf(o->detail, sizeof(o->detail), "pool %s is %s and takes no new work%s%.150s", p->id,
		         pool_state_names[p->state], p->reason[0] ? ": " : "", p->reason);
		return 0;
	}
	j = engine__job_reserve(p) == CM_OK ? calloc(1, sizeof(*j)) : NULL;
	if (!j) {
		o->err = CM_ENOMEM;
		return 0;
	}
	cm_id_new('j', j->id);
	j->num = e->next_job;
	j->base = e->next_task;
	j->total = m->total;
	j->chunksize = m->chunksize;
	j->timeout_ms = m->timeout_ms ? m->timeout_ms : (unsigned)p->spec.timeout_s * 1000u;
	j->max_attempts = m->max_attempts ? m->max_attempts : p->spec.max_attempts;
	j->retry_errors = m->retry_errors >= 0 ? m->retry_errors : p->spec.retry_errors;
	/* A small job cannot give one worker too much: it takes the pool's
	 * measure of its function (a command's runs differ: none). A larger
	 * map is probed, since its arguments may cost unlike the last ones. */
	j->avg_us = m->total <= SMALL_JOB_TASKS && !m->ncommand ? engine__function_cost(p, m->function) : -1;
	j->pool = p;
	j->created_ms = cm_wall_ms();
	j->state = JOB_RUNNING;
	j->inputs_total = m->inputs_total;
	if (j->inputs_total && !(j->inputs = calloc((size_t)j->total, sizeof(*j->inputs)))) {
		o->err = CM_ENOMEM;
		free(j);
		return 0;
	}
	sj = (store_job){.num = j->num,
	                 .id = j->id,
	                 .pool_id = p->id,
	                 .function = m->function,
	                 .idem_key = o->u.map.idem_key,
	                 .state = job_state_names[j->state],
	                 .base = j->base,
	                 .total = j->total,
	                 .chunksize = j->chunksize,
	                 .created_ms = j->created_ms,
	                 .max_attempts = j->max_attempts,
	                 .retry_errors = j->retry_errors,
	                 .timeout_ms = j->timeout_ms,
	                 .context = m->context,
	                 .context_len = m->context_len,
	                 .name = m->name[0] ? m->name : NULL,
	                 .inputs_total = j->inputs_total};
	if ((m->context && !(j->context = engine__context_new(m->context, m->context_len))) ||
	    (m->name[0] && !(j->name = strdup(m->name)))) {
		o->err = CM_ENOMEM;
		free(j->context);
		free(j->inputs);
		free(j);
		return 0;
	}
	json_t *cmd = NULL;
	char *cmd_json = NULL;
	if (m->ncommand) {
		cmd = json_array();
		for (size_t i = 0; i < m->ncommand; i++)
			json_array_append_new(cmd, json_string(m->command[i]));
		cmd_json = json_dumps(cmd, JSON_COMPACT);
		json_decref(cmd);
		sj.command_json = cmd_json;
	}
	o->err = store_job_insert(e->st, &sj);
	free(cmd_json);
	if (o->err != CM_OK) {
		snprintf(o->detail, sizeof(o->detail), "cannot store the job: %s", store_errmsg(e->st));
		free(j->context);
		free(j->name);
		free(j->inputs);
		free(j);
		return 0;
	}
	e->next_job++;
	e->next_task += j->total;
	j->function = m->function;
	j->command = m->command;
	j->ncommand = m->ncommand;
	m->function = NULL;
	m->command = NULL;
	m->ncommand = 0;
	engine__job_attach(e, p, j);
	engine__job_opened(j);
	if (m->args.n)
		return fill_start(e, o, j, &m->args, j->base);
	engine__job_check_done(e, j);
	o->err = answer_job(e, o, j);
	return 0;
}

void engine__handle_map(engine *e, op *o)
{
	if (!map_start(e, o))
		answer_now(e, o);
}

/* Whether a part's "inputs" fit job j's: given iff its tasks carry several
 * inputs, and summing, with the tasks still to come (one input each at
 * least), to no more than its input_total; exactly that with its last. */
static int inputs_fit(const job *j, op *o, const spec_args *args, int64_t at)
{
	int64_t sum = 0, rest = j->total - at - (int64_t)args->n;

	if (!args->inputs != !j->inputs_total) {
		snprintf(o->detail, sizeof(o->detail), "job %s's tasks carry %s: this part must%s give 'inputs'", j->id,
		         j->inputs_total ? "several inputs" : "one input each", j->inputs_total ? "" : " not");
		return 0;
	}
	if (!j->inputs_total)
		return 1;
	for (size_t i = 0; i < args->n; i++)
		sum += args->inputs[i];
	if (j->inputs_received + sum + rest > j->inputs_total ||
	    (!rest && j->inputs_received + sum < j->inputs_total)) {
		snprintf(o->detail, sizeof(o->detail),
		         "job %s has %lld inputs ('input_total'), %lld received: this part's %lld %s them", j->id,
		         (long long)j->inputs_total, (long long)j->inputs_received, (long long)sum,
		         rest ? "leave no input for the tasks still to come of" : "do not add up to");
		return 0;
	}
	return 1;
}

/* Returns 1 when o waits for its part's fill. */
static int part_start(engine *e, op *o)
{
	job *j = engine__job_find(e, o->id);
	const spec_args *args = o->u.part.args;
	int64_t at = o->u.part.offset, n = (int64_t)args->n;

	if (!j) {
		o->err = CM_ENOENT;
		return 0;
	}
	o->err = CM_ECLOSED;
	if (j->state != JOB_RUNNING) {
		snprintf(o->detail, sizeof(o->detail), "job %s is %s: it takes no more arguments", j->id,
		         job_state_names[j->state]);
	} else if (j->filling) {
		snprintf(o->detail, sizeof(o->detail),
		         "a part of job %s is being stored: send the next one once it is answered", j->id);
	} else if (at + n <= j->received && (n > 0 || at == j->received)) {
		o->err = CM_OK; /* a part stored already (a retry whose first answer was lost) */
		o->out = engine__job_json(j);
	} else if (at != j->received) {
		snprintf(o->detail, sizeof(o->detail), "the next part of job %s starts at offset %lld ('received')",
		         j->id, (long long)j->received);
	} else if (at + n > j->total) {
		snprintf(o->detail, sizeof(o->detail), "job %s has %lld tasks ('total'): this part goes %lld past them",
		         j->id, (long long)j->total, (long long)(at + n - j->total));
	} else if (!inputs_fit(j, o, args, at)) {
		o->err = CM_EINVAL;
	} else {
		o->err = CM_OK;
		return fill_start(e, o, j, args, j->base + at);
	}
	return 0;
}

void engine__handle_job_args(engine *e, op *o)
{
	if (!part_start(e, o))
		answer_now(e, o);
}
