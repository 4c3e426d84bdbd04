/*
 * Processes and Rings in the engine; see engine.h. Runs on the engine
 * thread; requests come in through requests.c. A Process is a program or one function run once on
 * a backend; a Ring is size of them with RANK, WORLD_SIZE, MASTER_ADDR and
 * MASTER_PORT.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "gateway/engine/engine_int.h"

/* ---- processes ---------------------------------------------------------- */

static process *process_find(engine *e, const char *id)
{
	id_link *l = id_table_find(e->process_ids, PROCESS_BUCKETS, id);

	return l ? ID_TABLE_ITEM(l, process) : NULL;
}

/* The ring's processes by rank into members (NULL for one gone). */
static void ring_members(engine *e, const ring *r, const process *members[SPEC_MAX_RING])
{
	for (int i = 0; i < r->size; i++)
		members[i] = process_find(e, r->members[i]);
}

/* The ring's view, its members found by their ids. */
static json_t *ring_json(engine *e, const ring *r)
{
	const process *members[SPEC_MAX_RING];

	ring_members(e, r, members);
	return engine__ring_json(r, members);
}

static const char *ring_state(engine *e, const ring *r)
{
	const process *members[SPEC_MAX_RING];

	ring_members(e, r, members);
	return engine__ring_state_of(r, members);
}

int engine__process_may_call(engine *e, const char *id, const char *pool_id)
{
	process *pr = process_find(e, id);

	return pr && pr->state == PR_RUNNING && pr->secret_hash[0] && strcmp(id, pool_id) == 0;
}

static void process_save(engine *e, const process *pr)
{
	store_process sp = {.id = pr->id,
	                    .spec_json = pr->spec_json,
	                    .backend = bx_name(pr->backend),
	                    .handle = pr->handle,
	                    .state = proc_state_names[pr->state],
	                    .exit_code = pr->exit_code,
	                    .reason = pr->reason[0] ? pr->reason : NULL,
	                    .created_ms = pr->created_ms,
	                    .ended_ms = pr->ended_ms,
	                    .secret_hash = pr->secret_hash[0] ? pr->secret_hash : NULL};
	store_process_save(e->st, &sp);
}

/* A string field of a process's request (its code package, its client's
 * lease) into out; "" when it has none. */
static void spec_string(const char *spec_json, const char *key, char *out, size_t out_len)
{
	json_t *o = json_loads(spec_json, 0, NULL);
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(out, out_len, "%s", v && strlen(v) < out_len ? v : "");
	json_decref(o);
}

static process *process_add(engine *e, const char *id, bx *b, const char *spec_json, int64_t created_ms)
{
	process *pr = calloc(1, sizeof(*pr));

	if (!pr || !(pr->spec_json = strdup(spec_json))) {
		free(pr);
		return NULL;
	}
	snprintf(pr->id, sizeof(pr->id), "%s", id);
	pr->backend = b;
	pr->created_ms = created_ms;
	pr->seq = ++e->made;
	snprintf(pr->log_path, sizeof(pr->log_path), "%s.logs/%s.log", e->cfg->db, id);
	spec_string(spec_json, "lease", pr->lease, sizeof(pr->lease));
	pr->next = e->processes;
	e->processes = pr;
	id_table_add(e->process_ids, PROCESS_BUCKETS, &pr->by_id, pr->id);
	return pr;
}

/* Answers every DELETE waiting for pr to end. */
static void answer_waiters(engine *e, process *pr)
{
	op *o;

	while ((o = waitlist_take(&pr->waiters))) {
		o->out = engine__process_json(pr);
		engine__ready(e, o);
	}
}

/* It will not run (again): its secret opens nothing any more, and its
 * hash is not kept. */
static void process_forget_secret(engine *e, process *pr)
{
	if (pr->secret_hash[0])
		credentials_remove(e->creds, pr->id);
	pr->secret_hash[0] = '\0';
}

/* It could not start: pr->reason says why. */
static void process_failed(engine *e, process *pr)
{
	process_forget_secret(e, pr);
	pr->state = PR_FAILED;
	pr->exit_code = -1;
	pr->ended_ms = cm_wall_ms();
	engine__event_process(e, pr);
	cm_warn("process %s could not start: %s", pr->id, pr->reason);
	answer_waiters(e, pr);
}

/* Asks pr's backend to stop it, once per strength. */
static void process_stop(process *pr, int hard)
{
	if (pr->stop_sent >= 1 + hard)
		return;
	pr->stop_sent = 1 + hard;
	bx_stop(pr->backend, pr->id, hard);
}

void engine__process_terminate(engine *e, process *pr)
{
	if (pr->state != PR_RUNNING || pr->terminated)
		return;
	pr->terminated = 1;
	pr->kill_at = cm_now_ms() + TERM_GRACE_MS;
	if (pr->kill_at < e->process_kill_due)
		e->process_kill_due = pr->kill_at;
	process_stop(pr, 0);
}

/* One exec string holds at most 128 KiB (MAX_ARG_STRLEN), an argument up
 * to SPEC_PROCESS_ARG_MAX: it goes as `--arg PART` several times, the parts cut
 * where a UTF-8 character begins (docker and kubernetes take strings). */
#define ARG_PART_MAX 65536
#define ARG_PARTS_MAX (SPEC_PROCESS_ARG_MAX / (ARG_PART_MAX - 3) + 1)

/* Appends `--arg PART` for each part of arg to argv; returns the parts'
 * storage (free it once argv is used), or NULL when out of memory. */
static char *arg_parts(const char *arg, char **argv, size_t *argc)
{
	size_t len = strlen(arg);
	char *parts = malloc(len + ARG_PARTS_MAX + 1), *p = parts;

	if (!parts)
		return NULL;
	do {
		size_t n = len < ARG_PART_MAX ? len : ARG_PART_MAX;
		while (n < len && ((unsigned char)arg[n] & 0xC0) == 0x80)
			n--; /* not inside a character */
		memcpy(p, arg, n);
		p[n] = '\0';
		argv[(*argc)++] = "--arg";
		argv[(*argc)++] = p;
		p += n + 1;
		arg += n;
		len -= n;
	} while (len);
	return parts;
}

/* Starts one process of spec s, with extra environment (for ring members).
 * Returns it, also when it could not start (state failed, and why), or NULL
 * with o->err (and why, in o->detail) set. A function gets strand-worker's
 * hub environment, its own id as worker and pool, so that it reaches queues
 * and pipes as a pool's task does; a program gets none. */
static process *process_start(engine *e, const process_spec *s, char *const *extra, size_t nextra, op *o)
{
	bx *b = engine__backend_for(e, s->run.backend);
	char id[20], label[64], hub_text[ENGINE_HUB_ENV][600], plugins[2200], runtime[SPEC_RUNTIME_MAX + 32];
	char *argv[4 + 2 * ARG_PARTS_MAX], *env[8 + SPEC_MAX_ENV + ENGINE_HUB_ENV + 3], *labels[1], *ca = NULL;
	char *parts = NULL, secret[CREDENTIALS_SECRET_LEN + 1] = "";
	backend_run_spec run = {.argv = argv, .env = env, .labels = labels, .nlabels = 1, .spec = &s->run, .group = id};
	process *pr;

	cm_id_new('r', id);
	if (engine__client_lease_missing(e, s->run.lease, o))
		return NULL;
	if (!b) {
		o->err = CM_EUNSUPPORTED;
		snprintf(o->detail, sizeof(o->detail), "backend '%s' is not configured in this gateway",
		         s->run.backend);
		return NULL;
	}
	if (!(pr = process_add(e, id, b, s->json, cm_wall_ms()))) {
		o->err = CM_ENOMEM;
		return NULL;
	}
	engine__event_process(e, pr);
	for (size_t i = 0; i < nextra && i < 8; i++)
		env[run.nenv++] = extra[i];
	snprintf(label, sizeof(label), "strand.process=%s", id);
	labels[0] = label;
	for (size_t i = 0; i < s->nenv && i < SPEC_MAX_ENV; i++)
		env[run.nenv++] = s->env[i];
	if (s->command) {
		/* A program: on docker it replaces the image's entrypoint. */
		run.argv = s->command;
		run.argc = s->ncommand;
		run.entrypoint = 1;
	} else {
		/* A function: strand-worker runs it once. */
		int native = bx_native(b);
		credentials_new_secret(secret, pr->secret_hash);
		if (credentials_add(e->creds, pr->id, pr->id, s->run.code, pr->secret_hash) != CM_OK) {
			explicit_bzero(secret, sizeof(secret));
			pr->secret_hash[0] = '\0';
			snprintf(pr->reason, sizeof(pr->reason), "out of memory");
			process_failed(e, pr);
			process_save(e, pr);
			return pr;
		}
		run.nenv += engine__hub_env(e, pr->id, pr->id, secret, s->run.code, hub_text, env + run.nenv, &ca);
		if (s->run.runtime[0]) {
			snprintf(runtime, sizeof(runtime), "STRAND_RUNTIME=%s", s->run.runtime);
			env[run.nenv++] = runtime;
		}
		if (native)
			argv[run.argc++] = (char *)e->cfg->worker_bin;
		argv[run.argc++] = "--run";
		argv[run.argc++] = s->function;
		if (!(parts = arg_parts(s->arg, argv, &run.argc))) {
			snprintf(pr->reason, sizeof(pr->reason), "out of memory");
			process_failed(e, pr);
			goto done;
		}
		if (native) {
			snprintf(plugins, sizeof(plugins), "STRAND_PLUGIN_PATH=%s", e->cfg->plugin_path);
			env[run.nenv++] = plugins;
		}
	}
	run.log_path = pr->log_path;
	/* Docker keeps a container's output: copied next to the database when
	 * it ends, as the local and slurm backends write it there all along. */
	if (bx_run(b, pr->id, &run, bx_native(b) ? NULL : pr->log_path) != CM_OK) {
		snprintf(pr->reason, sizeof(pr->reason), "out of memory");
		process_failed(e, pr);
	}
done:
	free(parts);
	if (ca) {
		explicit_bzero(ca, strlen(ca));
		free(ca);
	}
	explicit_bzero(hub_text, sizeof(hub_text));
	explicit_bzero(secret, sizeof(secret));
	process_save(e, pr);
	return pr;
}

/* Whether pr's backend answered its start (it has a handle, or failed). */
static int process_start_answered(const process *pr)
{
	return pr->handle[0] || pr->state != PR_RUNNING;
}

static ring *ring_find(engine *e, const char *id);

/* A start is answered once its backend started it (or could not), in the
 * cycle that records the handle: a 201 means it runs and a restarted
 * gateway will find it. o waits for the process or the ring o->owned_id. */
static int start_answered(engine *e, op *o)
{
	if (o->kind == OP_PROC_START) {
		process *pr = process_find(e, o->owned_id);
		if (pr && !process_start_answered(pr))
			return 0;
		o->out = pr ? engine__process_json(pr) : NULL;
	} else {
		ring *r = ring_find(e, o->owned_id);
		for (int i = 0; r && i < r->size; i++) {
			process *pr = process_find(e, r->members[i]);
			if (pr && !process_start_answered(pr))
				return 0;
		}
		o->out = r ? ring_json(e, r) : NULL;
	}
	if (!o->out)
		o->err = CM_ENOMEM;
	engine__ready(e, o);
	return 1;
}

/* Answers the starts whose processes have all been started. */
static void starts_check(engine *e)
{
	waitlist still = {0};
	op *o;

	while ((o = waitlist_take(&e->starts)))
		if (!start_answered(e, o))
			waitlist_add(&still, o);
	e->starts = still;
}

/* Answers o now, or once its backend answered. */
static void start_wait(engine *e, op *o, const char *id)
{
	snprintf(o->owned_id, sizeof(o->owned_id), "%s", id);
	if (!start_answered(e, o))
		waitlist_add(&e->starts, o);
}

static void handle_proc_start(engine *e, op *o)
{
	process *pr = NULL;

	if ((o->err = engine__quota_processes(e, 1, o->detail, sizeof(o->detail))) == CM_OK)
		pr = process_start(e, o->u.proc.spec, NULL, 0, o);

	if (pr)
		start_wait(e, o, pr->id);
	else
		engine__ready(e, o);
}

/* It ended (its output is where log_path says): frees what its backend
 * holds and answers who waits. */
static void process_ended(engine *e, process *pr, int code, const char *why)
{
	process_forget_secret(e, pr);
	pr->state = code == BACKEND_NEVER_STARTED ? PR_FAILED : PR_EXITED;
	pr->exit_code = code == BACKEND_NEVER_STARTED ? -1 : code;
	pr->ended_ms = cm_wall_ms();
	if (code == BACKEND_NEVER_STARTED)
		snprintf(pr->reason, sizeof(pr->reason), "%s", why ? why : "");
	else if (pr->adopted && code == -1 && !pr->reason[0])
		snprintf(pr->reason, sizeof(pr->reason), "ended while the gateway was down");
	else if (why && why[0] && code != 0 && !pr->reason[0])
		snprintf(pr->reason, sizeof(pr->reason), "%s", why);
	bx_release(pr->backend, pr->id);
	engine__queue_reader_gone(e, pr->id);
	process_save(e, pr);
	engine__event_process(e, pr);
	cm_info("process %s exited with code %d", pr->id, code);
	answer_waiters(e, pr);
}

int engine__process_event(engine *e, bx_event *ev)
{
	process *pr = process_find(e, ev->owner);

	if (!pr || pr->backend != ev->from)
		return 0;
	if (ev->kind == BX_QUEUED || ev->kind == BX_RUNNING) {
		; /* a Process has no time to connect: it waits as long as its job */
	} else if (pr->state != PR_RUNNING) {
		if (ev->kind == BX_EXITED)
			bx_release(pr->backend, pr->id);
	} else if (ev->kind == BX_STARTED && ev->err != CM_OK) {
		snprintf(pr->reason, sizeof(pr->reason), "%s", ev->detail);
		process_failed(e, pr);
		process_save(e, pr);
		starts_check(e);
	} else if (ev->kind == BX_STARTED) {
		snprintf(pr->handle, sizeof(pr->handle), "%s", ev->handle);
		process_save(e, pr);
		cm_info("process %s started (%s %.12s)", pr->id, bx_name(pr->backend), pr->handle);
		starts_check(e);
	} else {
		process_ended(e, pr, ev->exit_code, ev->detail);
	}
	return 1;
}

void engine__tick_processes(engine *e, int64_t now)
{
	int64_t next = INT64_MAX;

	if (now < e->process_kill_due)
		return;
	for (process *pr = e->processes; pr; pr = pr->next)
		if (pr->state == PR_RUNNING && pr->terminated) {
			if (now >= pr->kill_at)
				process_stop(pr, 1); /* once: stop_sent */
			else if (pr->kill_at < next)
				next = pr->kill_at;
		}
	e->process_kill_due = next;
}

/* ---- rings --------------------------------------------------------------- */

/* The lowest port the kernel hands out as a connection's own (the start
 * of net.ipv4.ip_local_port_range; 32768 when it cannot be read). */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 32768, hi = 0;

	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* A block of n free TCP ports on loopback, for a ring's rendezvous: the
 * gateway checks them by binding, so members do not collide with anything
 * listening now; and takes them below the ports the kernel gives outgoing
 * connections, one of which could take a port between the check and a
 * member's listen (a ring failed so in the test suite, beside the cluster
 * tests' many connections). */
static int free_port_block(int n)
{
	int lo = ephemeral_low(), first = lo > 12000 + n ? lo - 12000 : 1024, span = lo - n - first;

	if (span < 1) { /* no room below: above the range's usual end */
		first = 61000;
		span = 65535 - n - first;
	}
	for (int attempt = 0; attempt < 50; attempt++) {
		char hex[5];
		int base, ok = 1;
		cm_random_hex(hex, 2);
		base = first + (int)(strtol(hex, NULL, 16) % span);
		for (int p = base; p < base + n && ok; p++) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
			a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
			if (fd >= 0)
				close(fd);
		}
		if (ok)
			return base;
	}
	return 0;
}

static ring *ring_find(engine *e, const char *id)
{
	for (ring *r = e->rings; r; r = r->next)
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

static ring *ring_add(engine *e, const char *id, int size, int port, int64_t created_ms)
{
	ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->size = size;
	r->master_port = port;
	r->created_ms = created_ms;
	r->seq = ++e->made;
	r->next = e->rings;
	e->rings = r;
	return r;
}

void engine__handle_ring(engine *e, op *o)
{
	ring *r = o->kind == OP_RING_START ? NULL : ring_find(e, o->id);
	char id[20];

	if (o->kind != OP_RING_START && !r) {
		o->err = CM_ENOENT;
		engine__ready(e, o);
		return;
	}
	switch (o->kind) {
	case OP_RING_START: {
		if ((o->err = engine__quota_processes(e, o->u.proc.ring_size, o->detail, sizeof(o->detail))) != CM_OK)
			break;
		int port = free_port_block(o->u.proc.ring_size + 1);
		char members[SPEC_MAX_RING * 20 + 1] = "";
		if (!port) {
			o->err = CM_EUNAVAIL;
			snprintf(o->detail, sizeof(o->detail), "no block of %d free ports for the ring",
			         o->u.proc.ring_size + 1);
			break;
		}
		cm_id_new('g', id);
		if (!(r = ring_add(e, id, o->u.proc.ring_size, port, cm_wall_ms()))) {
			o->err = CM_ENOMEM;
			break;
		}
		for (int i = 0; i < r->size; i++) {
			char env[5][64];
			char *envp[5];
			snprintf(env[0], sizeof(env[0]), "RANK=%d", i);
			snprintf(env[1], sizeof(env[1]), "WORLD_SIZE=%d", r->size);
			snprintf(env[2], sizeof(env[2]), "MASTER_ADDR=127.0.0.1");
			snprintf(env[3], sizeof(env[3]), "MASTER_PORT=%d", r->master_port);
			snprintf(env[4], sizeof(env[4]), "STRAND_RING=%s", r->id);
			for (int k = 0; k < 5; k++)
				envp[k] = env[k];
			process *pr = process_start(e, o->u.proc.spec, envp, 5, o);
			if (!pr)
				break;
			snprintf(r->members[i], sizeof(r->members[i]), "%s", pr->id);
			if (i)
				strcat(members, ",");
			strcat(members, pr->id);
		}
		if (o->err == CM_OK)
			o->err = store_ring_insert(e->st, r->id, r->size, r->master_port, members, r->created_ms);
		if (o->err == CM_OK) {
			start_wait(e, o, r->id);
			return;
		}
		break;
	}
	case OP_RING_GET: o->out = ring_json(e, r); break;
	case OP_RING_DELETE:
		for (int i = 0; i < r->size; i++) {
			process *pr = process_find(e, r->members[i]);
			if (pr)
				engine__process_terminate(e, pr);
		}
		if (strcmp(ring_state(e, r), "running") == 0) {
			waitlist_add(&r->waiters, o); /* answered by the tick once every member ended */
			return;
		}
		o->out = ring_json(e, r);
		break;
	default: break;
	}
	engine__ready(e, o);
}

void engine__tick_rings(engine *e)
{
	for (ring *r = e->rings; r; r = r->next) {
		op *o;
		if (!r->waiters.head || strcmp(ring_state(e, r), "running") == 0)
			continue;
		while ((o = waitlist_take(&r->waiters))) {
			o->out = ring_json(e, r);
			engine__ready(e, o);
		}
	}
}

void engine__handle_process(engine *e, op *o)
{
	process *pr = o->kind == OP_PROC_START ? NULL : process_find(e, o->id);

	if (o->kind != OP_PROC_START && !pr) {
		o->err = CM_ENOENT;
		engine__ready(e, o);
		return;
	}
	switch (o->kind) {
	case OP_PROC_START: handle_proc_start(e, o); return;
	case OP_PROC_GET: o->out = engine__process_json(pr); break;
	case OP_PROC_LOGS:
		/* While it runs its backend has the output; after, the log file.
		 * Either way its executor reads it: answered by its BX_LOGS. */
		if (bx_logs(pr->backend, pr->id, pr->log_path, 1u << 20, o) != CM_OK) {
			o->err = CM_ENOMEM;
			break;
		}
		waitlist_add(&e->log_reads, o);
		return;
	case OP_PROC_DELETE:
		if (pr->state == PR_RUNNING) {
			/* terminate(): SIGTERM, SIGKILL after the grace; answered once gone */
			engine__process_terminate(e, pr);
			waitlist_add(&pr->waiters, o);
			return;
		}
		o->out = engine__process_json(pr);
		break;
	default: break;
	}
	engine__ready(e, o);
}

/* A process stored as running is adopted if its backend still has it. */
void engine__load_process(void *ctx, const store_process *sp)
{
	engine *e = ctx;
	bx *b = engine__backend_for(e, sp->backend);
	process *pr = b ? process_add(e, sp->id, b, sp->spec_json, sp->created_ms) : NULL;

	if (!pr)
		return;
	snprintf(pr->handle, sizeof(pr->handle), "%s", sp->handle ? sp->handle : "");
	snprintf(pr->reason, sizeof(pr->reason), "%s", sp->reason ? sp->reason : "");
	pr->exit_code = sp->exit_code;
	pr->ended_ms = sp->ended_ms;
	pr->state = strcmp(sp->state, "running") == 0  ? PR_RUNNING
	            : strcmp(sp->state, "failed") == 0 ? PR_FAILED
	                                               : PR_EXITED;
	/* Watched again; if it ended while no gateway watched, its backend
	 * says so at once (and its exit code is lost). */
	if (pr->state == PR_RUNNING) {
		pr->adopted = 1;
		if (sp->secret_hash && strlen(sp->secret_hash) == CREDENTIALS_HASH_LEN) {
			char code[65];
			snprintf(pr->secret_hash, sizeof(pr->secret_hash), "%s", sp->secret_hash);
			spec_string(pr->spec_json, "code", code, sizeof(code));
			credentials_add(e->creds, pr->id, pr->id, code, pr->secret_hash);
		}
		bx_adopt(b, pr->id, pr->handle);
	}
}

void engine__load_ring(void *ctx, const char *id, int size, int master_port, const char *members, int64_t created_ms)
{
	ring *r = ring_add(ctx, id, size > SPEC_MAX_RING ? SPEC_MAX_RING : size, master_port, created_ms);
	const char *p = members;

	for (int i = 0; r && i < r->size && p && *p; i++) {
		const char *comma = strchr(p, ',');
		snprintf(r->members[i], sizeof(r->members[i]), "%.*s", (int)(comma ? comma - p : (long)strlen(p)), p);
		p = comma ? comma + 1 : NULL;
	}
}

/* Ended before cutoff (wall clock), and nobody waits on it. */
static int ended_before(const process *pr, int64_t cutoff)
{
	return pr->state != PR_RUNNING && pr->ended_ms < cutoff && !pr->waiters.head;
}

static int ring_member(const engine *e, const process *pr)
{
	for (const ring *r = e->rings; r; r = r->next)
		for (int i = 0; i < r->size; i++)
			if (strcmp(r->members[i], pr->id) == 0)
				return 1;
	return 0;
}

/* Forgets pr, whose link (the next field before it, or the list's head)
 * is given: its row, its output file, its memory. */
static void process_remove(engine *e, process **link)
{
	process *pr = *link;

	*link = pr->next;
	id_table_remove(e->process_ids, PROCESS_BUCKETS, &pr->by_id);
	store_process_delete(e->st, pr->id);
	unlink(pr->log_path); /* gone already if it never started */
	free(pr->spec_json);
	free(pr);
}

static process **process_link(engine *e, const char *id)
{
	process **link = &e->processes;

	while (*link && strcmp((*link)->id, id) != 0)
		link = &(*link)->next;
	return *link ? link : NULL;
}

/* A ring goes when every member has ended before cutoff, with them; a
 * member is never removed alone, so a ring's view stays whole. */
static int rings_remove_ended(engine *e, int64_t cutoff, int max)
{
	int removed = 0;

	for (ring **link = &e->rings; *link && removed < max;) {
		ring *r = *link;
		int ended = !r->waiters.head;
		for (int i = 0; i < r->size && ended; i++) {
			process **m = process_link(e, r->members[i]);
			ended = !m || ended_before(*m, cutoff);
		}
		if (!ended) {
			link = &r->next;
			continue;
		}
		*link = r->next;
		for (int i = 0; i < r->size; i++) {
			process **m = process_link(e, r->members[i]);
			if (m)
				process_remove(e, m);
		}
		store_ring_delete(e->st, r->id);
		free(r);
		removed++;
	}
	return removed;
}

int engine__processes_remove_ended(engine *e, int64_t cutoff, int max)
{
	int removed = rings_remove_ended(e, cutoff, max);

	for (process **link = &e->processes; *link && removed < max;) {
		if (ended_before(*link, cutoff) && !ring_member(e, *link)) {
			process_remove(e, link);
			removed++;
		} else {
			link = &(*link)->next;
		}
	}
	return removed;
}

void engine__processes_clear(engine *e)
{
	waitlist_drop_all(e, &e->starts);
	while (e->rings) {
		ring *r = e->rings;
		e->rings = r->next;
		waitlist_drop_all(e, &r->waiters);
		free(r);
	}
	while (e->processes) {
		process *pr = e->processes;
		e->processes = pr->next;
		waitlist_drop_all(e, &pr->waiters);
		free(pr->spec_json);
		free(pr);
	}
	memset(e->process_ids, 0, sizeof(e->process_ids));
	e->process_kill_due = 0;
}

int engine__processes_stop(engine *e, int hard)
{
	int live = 0;

	for (process *pr = e->processes; pr; pr = pr->next)
		if (pr->state == PR_RUNNING) {
			pr->terminated = 1;
			process_stop(pr, hard);
			live++;
		}
	return live;
}

void engine__processes_owners(engine *e, bx *x, char (*owners)[BX_OWNER_MAX], size_t *n)
{
	for (process *pr = e->processes; pr; pr = pr->next)
		if (pr->state == PR_RUNNING && pr->backend == x)
			snprintf(owners[(*n)++], BX_OWNER_MAX, "%s", pr->id);
}

size_t engine__processes_count(engine *e)
{
	size_t n = 0;

	for (process *pr = e->processes; pr; pr = pr->next)
		n++;
	return n;
}
