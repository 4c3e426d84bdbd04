/*
 * The JSON the API shows of pools and jobs, built from engine state on the
 * engine thread.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

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

int engine__job_text(const job *j, cm_buf *out)
{
	job_counts c = engine__job_counts(j);
	char created[32], ended[32] = "";
	int err;

	engine__iso_time(j->created_ms, created);
	if (j->ended_ms) /* --retain counts from here */
		engine__iso_time(j->ended_ms, ended);
	out->len = 0;
	/* Ids are letters, digits and '-'; a function's name may be any
	 * printable text (rt: names), so it is escaped. */
	err = cm_buf_printf(out, "{\"id\":\"%s\",\"pool\":\"%s\",\"state\":\"%s\",\"function\":", j->id, j->pool->id,
	                    engine__job_state(j));
	if (err == CM_OK)
		err = cm_buf_json_string(out, j->function, strlen(j->function));
	if (err == CM_OK && j->name && (err = cm_buf_puts(out, ",\"name\":")) == CM_OK)
		err = cm_buf_json_string(out, j->name, strlen(j->name));
	if (err == CM_OK)
		err = cm_buf_printf(
		        out,
		        ",\"total\":%lld,\"done\":%lld,\"failed\":%lld,\"chunksize\":%d,\"created_at\":\"%s\","
		        "\"links\":{\"self\":\"/v1/jobs/%s\",\"results\":\"/v1/jobs/%s/results\"}",
		        (long long)c.total, (long long)c.done, (long long)c.failed, j->chunksize, created, j->id,
		        j->id);
	/* Counts by input above; its tasks (a result each) apart. */
	if (err == CM_OK && j->inputs_total)
		err = cm_buf_printf(out, ",\"tasks\":{\"total\":%lld,\"done\":%lld,\"failed\":%lld}",
		                    (long long)j->total, (long long)j->done, (long long)j->failed);
	if (err == CM_OK && j->state == JOB_RUNNING && j->received < j->total)
		err = cm_buf_printf(out, ",\"received\":%lld", (long long)j->received); /* where its next part starts */
	if (err == CM_OK && ended[0])
		err = cm_buf_printf(out, ",\"ended_at\":\"%s\"", ended);
	return err == CM_OK ? cm_buf_puts(out, "}") : err;
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

/* What runs a worker or process, in its backend's terms: a pid, a
 * container or pod, a Slurm job, or a worker that joined. Nothing before
 * its backend started it. */
void engine__runs_as(json_t *o, const bx *b, const char *handle)
{
	if (!handle[0])
		return;
	if (strcmp(bx_name(b), "local") == 0)
		json_object_set_new(o, "pid", json_integer(atoi(handle)));
	else if (strcmp(bx_name(b), "slurm") == 0)
		json_object_set_new(o, "slurm_job", json_integer(atoll(handle)));
	else if (strcmp(bx_name(b), "external") == 0)
		json_object_set_new(o, "joined", json_true()); /* started elsewhere, by someone else */
	else /* a name (strand-<pool>-<n>, a pod), or a docker id shown short as docker does */
		json_object_set_new(o, "container",
		                    json_stringn(handle, strncmp(handle, "strand-", 7) != 0 && strlen(handle) > 12
		                                                 ? 12
		                                                 : strlen(handle)));
}

json_t *engine__pool_json(const pool *p)
{
	json_t *workers = json_array();
	json_t *o;
	char created[32];
	int64_t pending = 0;
	int live = 0;

	for (const worker *w = p->workers; w; w = w->next) {
		if (w->state != W_EXITED) {
			live++;
			pending += w->pending;
		}
		json_t *wj =
		        json_pack("{s:s, s:s, s:s, s:I, s:i}", "id", w->id, "state",
		                  w->retiring && w->state == W_CONNECTED ? "retiring" : worker_state_names[w->state],
		                  "handle", w->handle, "pending", (json_int_t)w->pending, "exit_code", w->exit_code);
		if (w->last_words[0])
			json_object_set_new(wj, "last_words", json_string(w->last_words));
		if (w->queued && w->state == W_STARTING)
			json_object_set_new(wj, "queued", json_true());
		engine__runs_as(wj, p->backend, w->handle);
		json_array_append_new(workers, wj);
	}
	engine__iso_time(p->created_ms, created);
	o = json_pack("{s:s, s:s, s:i, s:s, s:{s:f, s:I, s:i}, s:i, s:s, s:i, s:o,"
	              " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
	              "id", p->id, "state", pool_state_names[p->state], "processes", p->spec.processes, "backend",
	              p->spec.backend, "resources", "cpu", p->spec.cpu, "memory_mb", (json_int_t)p->spec.memory_mb,
	              "gpu", p->spec.gpu, "max_attempts", p->spec.max_attempts, "created_at", created, "live_workers",
	              live, "workers", workers, "counters", "tasks_queued", (json_int_t)p->queued, "tasks_pending",
	              (json_int_t)pending, "tasks_done", (json_int_t)p->tasks_done, "tasks_failed",
	              (json_int_t)p->tasks_failed, "jobs_open", (json_int_t)p->open_jobs, "workers_started",
	              (json_int_t)p->workers_started, "workers_lost", (json_int_t)p->workers_lost);
	if (o && p->reason[0])
		json_object_set_new(o, "reason", json_string(p->reason));
	if (o && p->spec.scale_max)
		json_object_set_new(o, "autoscale",
		                    json_pack("{s:i, s:i, s:i, s:i, s:i, s:s}", "min", p->spec.scale_min, "max",
		                              p->spec.scale_max, "target_s", p->spec.scale_target_s, "idle_s",
		                              p->spec.scale_idle_s, "desired", p->spec.processes, "reason",
		                              p->scale_reason));
	if (o && !bx_native(p->backend))
		json_object_set_new(o, "image", json_string(p->spec.image));
	if (o && p->spec.manager[0])
		json_object_set_new(o, "type", json_string(p->spec.manager));
	if (o && p->spec.runtime[0])
		json_object_set_new(o, "runtime", json_loads(p->spec.runtime, JSON_DECODE_ANY, NULL));
	if (o && p->spec.code[0])
		json_object_set_new(o, "code", json_string(p->spec.code));
	if (o && p->spec.lease[0])
		json_object_set_new(o, "lease", json_string(p->spec.lease));
	return o;
}
