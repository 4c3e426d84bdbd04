/*
 * A rogue program on the worker network: it dials the hub with a forged
 * identity, with one worker's stolen secret posing as another, answers tasks
 * another worker holds, sends results that are not JSON, and sends 32 MiB
 * frames. None of it may steal a task, record a forged result, break a
 * results page, or make the gateway's memory balloon.
 *
 * The stolen secret is one a worker was given: the gateway keeps none (its
 * database holds their hashes), so these tests start workers through
 * tap-worker, a wrapper that writes down the secret it hands on to the real
 * strand-worker, as an attacker who got hold of one worker's secret would
 * have it. The database is read for which worker holds which task (the
 * gateway lets other processes read it as it runs: --db-shared).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <nng/nng.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "common/sha256.h"
#include "tests/support/tsan_suppressions.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "tests/support/stream_frames.h"
#include "store/store.h"
#include "store/task_records.h"
#include "tests/support/harness.h"

static gateway g;
static char tap_dir[256]; /* tap-worker and the secrets it wrote down */
static char tap_bin[300];
/* Unsandboxed: tap-worker writes where the test reads. */
static const char *const db_shared[] = {"--db-shared", "--sandbox", "off", "--worker-bin", tap_bin, NULL};

/* tap-worker: the secret strand-worker would read from its pipe, kept in
 * tap_dir/ID.secret and handed on in the environment. */
static void tap_worker_make(void)
{
	char script[1024];
	FILE *f;

	if (tap_dir[0])
		return;
	mkdir(STRAND_TEST_TMP, 0755);
	snprintf(tap_dir, sizeof(tap_dir), STRAND_TEST_TMP "/strand-tap-XXXXXX");
	assert_non_null(mkdtemp(tap_dir));
	snprintf(tap_bin, sizeof(tap_bin), "%s/tap-worker", tap_dir);
	snprintf(script, sizeof(script),
	         "#!/bin/sh\nread -r s < /proc/self/fd/\"$STRAND_SECRET_FD\"\nprintf %%s \"$s\" > "
	         "%s/\"$STRAND_WORKER_ID\".secret\n"
	         "unset STRAND_SECRET_FD\nSTRAND_SECRET=\"$s\" exec %s/strand-worker \"$@\"\n",
	         tap_dir, STRAND_BIN_DIR);
	assert_non_null(f = fopen(tap_bin, "w"));
	fputs(script, f);
	fclose(f);
	chmod(tap_bin, 0755);
}

static void tap_worker_remove(void)
{
	DIR *d = opendir(tap_dir);
	struct dirent *ent;
	char path[600];

	while (d && (ent = readdir(d))) {
		if (ent->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tap_dir, ent->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(tap_dir);
}

/* The secret worker was given, as tap-worker wrote it down. */
static void tapped_secret(const char *worker, char secret[80])
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.secret", tap_dir, worker);
	for (int i = 0; i < 500 && access(path, R_OK) != 0; i++)
		usleep(10000);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(secret, 80, f));
	fclose(f);
	assert_int_equal(strlen(secret), 64);
}

static int setup(void **state)
{
	(void)state;
	tap_worker_make();
	gateway_start(&g, db_shared);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	return 0;
}

/* What dials the hub of the gateway on port (nng_stream_dialer_free it
 * after the connections it made). */
static nng_stream_dialer *dialer_to(int port)
{
	char url[64];
	nng_stream_dialer *d = NULL;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	assert_int_equal(nng_stream_dialer_alloc(&d, url), 0);
	return d;
}

/* A connection through d, with its aio (no callback; each step within
 * timeout_ms): 0, or nng's error. */
static int hub_dial(nng_stream_dialer *d, int timeout_ms, nng_stream **out, nng_aio **aio)
{
	int rv;

	if ((rv = nng_aio_alloc(aio, NULL, NULL)) != 0)
		return rv;
	nng_aio_set_timeout(*aio, timeout_ms);
	nng_stream_dialer_dial(d, *aio);
	nng_aio_wait(*aio);
	if ((rv = nng_aio_result(*aio)) == 0)
		*out = nng_aio_get_output(*aio, 0);
	else
		nng_aio_free(*aio);
	return rv;
}

/* The hub's answer on conn, decoded as a Batch (new), or NULL. */
static Strand__Batch *answer_on(nng_stream *conn, nng_aio *aio)
{
	uint8_t *reply = NULL;
	size_t reply_len = 0;
	ProtobufCMessage *msg = NULL;
	char detail[256];
	int rv = wire_recv(conn, aio, PROTO_FRAME_MAX, &reply, &reply_len);

	if (rv != 0) {
		print_message("no answer from the hub: %s\n", nng_strerror(rv));
		return NULL;
	}
	if (proto_frame_decode(PROTO_BATCH, reply, reply_len, &msg, detail, sizeof(detail)) != CM_OK) {
		print_message("the hub's answer does not decode: %s\n", detail);
		msg = NULL;
	}
	free(reply);
	return (Strand__Batch *)msg;
}

/* Sends frame to the hub and returns the Batch it answers (new), or NULL. */
static Strand__Batch *exchange(const uint8_t *frame, size_t len)
{
	nng_stream_dialer *d = dialer_to(g.hub_port);
	nng_stream *conn = NULL; /* hub_dial sets it; gcc misses that a failed assert never returns */
	nng_aio *aio;

	assert_int_equal(hub_dial(d, 20000, &conn, &aio), 0);
	assert_int_equal(wire_send(conn, aio, frame, len), 0);
	Strand__Batch *b = answer_on(conn, aio);
	nng_stream_free(conn);
	nng_aio_free(aio);
	nng_stream_dialer_free(d);
	return b;
}

/* Sends the length of a frame of declared bytes and only its first sent
 * bytes, then reads what the hub answers: it must not wait for the rest.
 * *closed says whether the hub ended the connection after answering. */
static Strand__Batch *exchange_cut(const uint8_t *frame, size_t declared, size_t sent, int *closed)
{
	uint8_t prefix[WIRE_PREFIX], byte;
	nng_stream_dialer *d = dialer_to(g.hub_port);
	nng_stream *conn = NULL; /* hub_dial sets it; gcc misses that a failed assert never returns */
	nng_aio *aio;
	nng_iov iov[2] = {{.iov_buf = prefix, .iov_len = WIRE_PREFIX}, {.iov_buf = (void *)frame, .iov_len = sent}};

	wire_prefix_put(prefix, declared);
	assert_int_equal(hub_dial(d, 20000, &conn, &aio), 0);
	nng_aio_set_iov(aio, sent ? 2 : 1, iov);
	nng_stream_send(conn, aio);
	nng_aio_wait(aio);
	assert_int_equal(nng_aio_result(aio), 0);
	assert_int_equal(nng_aio_count(aio), WIRE_PREFIX + sent);
	Strand__Batch *b = answer_on(conn, aio);
	iov[0] = (nng_iov){.iov_buf = &byte, .iov_len = 1};
	nng_aio_set_iov(aio, 1, iov);
	nng_stream_recv(conn, aio);
	nng_aio_wait(aio);
	*closed = nng_aio_result(aio) != 0 && nng_aio_result(aio) != NNG_ETIMEDOUT;
	nng_stream_free(conn);
	nng_aio_free(aio);
	nng_stream_dialer_free(d);
	return b;
}

/* Whether the hub ends conn within timeout_ms (rather than leaving it open
 * and silent). */
static int ends_within(nng_stream *conn, nng_aio *aio, int timeout_ms)
{
	uint8_t byte;
	nng_iov iov = {.iov_buf = &byte, .iov_len = 1};

	nng_aio_set_timeout(aio, timeout_ms);
	nng_aio_set_iov(aio, 1, &iov);
	nng_stream_recv(conn, aio);
	nng_aio_wait(aio);
	return nng_aio_result(aio) != 0 && nng_aio_result(aio) != NNG_ETIMEDOUT;
}

typedef struct forged {
	uint64_t task;
	const char *value;
} forged;

/* A pull as worker_id/pool_id with secret, carrying results, wanting want. */
static Strand__Batch *pull_as(const char *worker_id, const char *pool_id, const char *secret, const forged *results,
                              size_t n, uint32_t want)
{
	Strand__Pull pull = STRAND__PULL__INIT;
	uint64_t ids[4];
	Strand__Outcome outcomes[4];
	uint32_t run_us[4], attempts[4], lens[4];
	char values[256];
	uint8_t *frame;
	size_t len, at = 0;

	assert_true(n <= 4);
	for (size_t i = 0; i < n; i++) {
		ids[i] = results[i].task;
		outcomes[i] = STRAND__OUTCOME__OK;
		run_us[i] = 0;
		attempts[i] = 1;
		lens[i] = (uint32_t)strlen(results[i].value);
		assert_true(at + lens[i] <= sizeof(values));
		memcpy(values + at, results[i].value, lens[i]);
		at += lens[i];
	}
	pull.worker_id = (char *)worker_id;
	pull.pool_id = (char *)pool_id;
	pull.want = want;
	pull.result_ids = ids;
	pull.n_result_ids = n;
	pull.outcomes = outcomes;
	pull.n_outcomes = n;
	pull.run_us = run_us;
	pull.n_run_us = n;
	pull.attempts = attempts;
	pull.n_attempts = n;
	pull.value_lens = lens;
	pull.n_value_lens = n;
	pull.values.data = (uint8_t *)values;
	pull.values.len = at;
	assert_int_equal(proto_frame_encode(PROTO_PULL, worker_id, secret, &pull.base, &frame, &len), CM_OK);
	Strand__Batch *b = exchange(frame, len);
	free(frame);
	return b;
}

static void assert_refused(Strand__Batch *b, const char *why)
{
	assert_non_null(b);
	assert_int_equal(b->status, STRAND__BATCH__STATUS__REFUSED);
	assert_int_equal(b->n_task_ids, 0);
	if (!strstr(b->error, why))
		fail_msg("refused with '%s', not '%s'", b->error, why);
	protobuf_c_message_free_unpacked(&b->base, NULL);
}

/* The live workers of the pool and, for each, the task it holds. */
typedef struct held {
	char worker[20];
	char secret[80]; /* as tap-worker wrote it down */
	int64_t task;
} held;

static int held_tasks(const char *pool, held out[2])
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int n = 0;

	assert_int_equal(sqlite3_open_v2(g.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	/* A chunk's tasks blob: its records (store/task_records.h). */
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT w.id, c.id, c.n, c.tasks, h.ref FROM workers w"
	                                    " JOIN holders h ON h.name = w.id, chunk_state c"
	                                    " WHERE w.pool_id = ? AND c.pending > 0 ORDER BY w.id, c.id",
	                                    -1, &s, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(s, 1, pool, -1, SQLITE_STATIC);
	while (n < 2 && sqlite3_step(s) == SQLITE_ROW) {
		trec t[1024];
		int tasks = sqlite3_column_int(s, 2);
		int64_t ref = sqlite3_column_int64(s, 4);
		assert_true(tasks >= 1 && tasks <= 1024);
		assert_int_equal(
		        task_records_decode(t, tasks, sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3)),
		        CM_OK);
		for (int i = 0; i < tasks && n < 2; i++) {
			if (t[i].state != STORE_PENDING || t[i].x != ref)
				continue;
			snprintf(out[n].worker, sizeof(out[n].worker), "%s", (const char *)sqlite3_column_text(s, 0));
			tapped_secret(out[n].worker, out[n].secret);
			out[n].task = sqlite3_column_int64(s, 1) + i;
			n++;
			break; /* the worker's first; the next row is the next worker's or chunk's */
		}
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

static long peak_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void test_rogue_worker_steals_nothing_and_forges_nothing(void **state)
{
	held h[2];
	int n = 0;

	(void)state;
	char *pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	/* A new job's first tasks go out one per worker, as probes: each of
	 * the two workers holds one 1.5 s task for a while. */
	char *job = job_submit(&g, pool,
	                       json_pack("{s:s, s:[i,i,i,i]}", "function", "sleep", "args", 1500, 1500, 1500, 1500));
	for (int i = 0; i < 200 && (n = held_tasks(pool, h)) < 2; i++)
		usleep(10000);
	assert_int_equal(n, 2);
	assert_string_not_equal(h[0].worker, h[1].worker);

	/* Forged identities: a made-up worker, and worker 1 with worker 0's
	 * stolen secret. Neither gets a task. */
	assert_refused(pull_as("w-0000000000000000", pool,
	                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", NULL, 0, 100),
	               "unknown worker or wrong secret");
	assert_refused(pull_as(h[1].worker, pool, h[0].secret, NULL, 0, 100), "unknown worker or wrong secret");
	/* The right secret, but the body names another worker's pool. */
	assert_refused(pull_as(h[0].worker, "p-0000000000000000", h[0].secret, NULL, 0, 100),
	               "another worker or pool than its sender");

	/* With worker 0's secret: a result for the task worker 1 holds is not
	 * recorded; one that is not JSON, for worker 0's own task, fails it. */
	forged lies[] = {{(uint64_t)h[1].task, "\"forged\""}, {(uint64_t)h[0].task, "1], {\"index\": 99"}};
	Strand__Batch *b = pull_as(h[0].worker, pool, h[0].secret, lies, 2, 0);
	assert_non_null(b);
	assert_int_not_equal(b->status, STRAND__BATCH__STATUS__REFUSED);
	protobuf_c_message_free_unpacked(&b->base, NULL);

	/* Result columns that disagree (an id without its outcome, a value
	 * length past the values): refused whole, nothing recorded. */
	Strand__Pull odd = STRAND__PULL__INIT;
	uint64_t ids[] = {(uint64_t)h[0].task};
	uint32_t zero[] = {0}, long_len[] = {50};
	uint8_t *frame_odd;
	size_t odd_len;
	odd.worker_id = h[0].worker;
	odd.pool_id = pool;
	odd.result_ids = ids;
	odd.n_result_ids = 1;
	odd.run_us = zero;
	odd.n_run_us = 1;
	odd.attempts = zero;
	odd.n_attempts = 1;
	odd.value_lens = long_len;
	odd.n_value_lens = 1;
	odd.values.data = (uint8_t *)"1";
	odd.values.len = 1;
	assert_int_equal(proto_frame_encode(PROTO_PULL, h[0].worker, h[0].secret, &odd.base, &frame_odd, &odd_len),
	                 CM_OK);
	assert_refused(exchange(frame_odd, odd_len), "a pull whose result columns disagree (1 ids, 0 outcomes");
	free(frame_odd);
	Strand__Outcome ok[] = {STRAND__OUTCOME__OK};
	odd.outcomes = ok;
	odd.n_outcomes = 1;
	assert_int_equal(proto_frame_encode(PROTO_PULL, h[0].worker, h[0].secret, &odd.base, &frame_odd, &odd_len),
	                 CM_OK);
	assert_refused(exchange(frame_odd, odd_len), "texts of 50 bytes in all where the pull has 1");
	free(frame_odd);

	/* 32 MiB frames: unauthenticated, refused once its header is in,
	 * before its body is read (the connection then ends: what followed
	 * was never read); and with the stolen secret, 16 million result
	 * ids of a byte each (8 bytes each decoded), refused within the
	 * decode budget. Neither may take the
	 * gateway's memory anywhere near the gigabytes such frames would
	 * decode to. */
	long before = peak_rss_kib(g.pid);
	size_t big = PROTO_FRAME_MAX - 64;
	uint8_t *frame = malloc(big);
	assert_non_null(frame);
	size_t at = 0;
	frame[at++] = 'S';
	frame[at++] = 'T';
	frame[at++] = PROTO_VERSION;
	frame[at++] = PROTO_PULL;
	frame[at++] = (uint8_t)strlen(h[0].worker);
	memcpy(frame + at, h[0].worker, strlen(h[0].worker));
	at += strlen(h[0].worker);
	size_t secret_at = at;
	frame[at++] = 64;
	memset(frame + at, 'f', 64);
	at += 64;
	for (; at + 1 < big; at += 2) {
		frame[at] = 0x58; /* Pull.result_ids, one at a time */
		frame[at + 1] = 0;
	}
	int closed = 0;
	assert_refused(exchange_cut(frame, big, secret_at + 1 + 64, &closed), "unknown worker or wrong secret");
	assert_true(closed);
	memcpy(frame + secret_at + 1, h[0].secret, 64);
	assert_refused(exchange(frame, big), "decodes to more than");
	free(frame);
	long grown_mib = (peak_rss_kib(g.pid) - before) / 1024;
	print_message("gateway peak RSS grew by %ld MiB over two 32 MiB frames\n", grown_mib);
	assert_true(grown_mib < 512);

	/* The job ends with every true result, the forged one nowhere, and the
	 * page readable: the invalid result is a failed task saying why. */
	json_t *items = job_results(&g, job, "input", 100);
	json_t *it;
	size_t i;
	int invalid = 0;
	assert_int_equal(json_array_size(items), 4);
	json_array_foreach (items, i, it) {
		if (json_is_true(json_object_get(it, "ok"))) {
			assert_int_equal(json_integer_value(json_object_get(it, "value")), 1500);
		} else {
			const char *error = json_string_value(json_object_get(it, "error"));
			assert_non_null(strstr(error, "invalid result: not one UTF-8 JSON value"));
			invalid++;
		}
	}
	assert_int_equal(invalid, 1);
	json_decref(items);
	free(job);
	free(pool);
}

/* Frames keep coming while the gateway stops: a worker's real identity
 * pulling, and garbage. The gateway stops accepting HTTP, refuses frames,
 * stops the engine, then frees the hub: it exits 0 and the sanitizers (the
 * suite runs this under ASan and TSan) find nothing in its log. */
typedef struct sender {
	int port;
	char worker[20], secret[80], pool[20];
	int stop;
	int sent;
} sender;

static void *send_frames(void *arg)
{
	sender *s = arg;
	static const uint8_t garbage[] = "ST\x02\x01 not a frame at all";
	nng_stream_dialer *d = dialer_to(s->port);

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) && s->sent < 5000) {
		Strand__Pull pull = STRAND__PULL__INIT;
		uint8_t *frame = NULL, *reply = NULL;
		size_t len = 0, reply_len = 0;
		nng_stream *conn;
		nng_aio *aio;
		if (hub_dial(d, 200, &conn, &aio) == 0) {
			pull.worker_id = s->worker;
			pull.pool_id = s->pool;
			pull.in_hand = 1; /* holds work: answered at once, never parked */
			if (s->sent % 2 == 0 &&
			    proto_frame_encode(PROTO_PULL, s->worker, s->secret, &pull.base, &frame, &len) == CM_OK)
				wire_send(conn, aio, frame, len);
			else
				wire_send(conn, aio, garbage, sizeof(garbage));
			if (wire_recv(conn, aio, PROTO_FRAME_MAX, &reply, &reply_len) == 0)
				free(reply);
			free(frame);
			nng_stream_free(conn);
			nng_aio_free(aio);
		} else {
			usleep(2000);
		}
		__atomic_add_fetch(&s->sent, 1, __ATOMIC_RELEASE);
	}
	nng_stream_dialer_free(d);
	return NULL;
}

static void test_frames_during_shutdown(void **state)
{
	gateway h;
	sender s = {0};
	pthread_t t;
	sqlite3 *db;
	sqlite3_stmt *st;

	(void)state;
	gateway_start(&h, db_shared);
	char *pool = pool_create(&h, 1);
	pool_wait_connected(&h, pool, 1);
	assert_int_equal(sqlite3_open_v2(h.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(
	        sqlite3_prepare_v2(db, "SELECT id FROM workers WHERE pool_id = ? AND state != 'exited'", -1, &st, NULL),
	        SQLITE_OK);
	sqlite3_bind_text(st, 1, pool, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(s.worker, sizeof(s.worker), "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	tapped_secret(s.worker, s.secret);
	sqlite3_close(db);
	snprintf(s.pool, sizeof(s.pool), "%s", pool);
	s.port = h.hub_port;

	assert_int_equal(pthread_create(&t, NULL, send_frames, &s), 0);
	while (__atomic_load_n(&s.sent, __ATOMIC_ACQUIRE) < 50)
		usleep(1000);
	int status = gateway_stop(&h);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	print_message("%d frames sent, the gateway stopping meanwhile\n", s.sent);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	free(pool);
	gateway_cleanup(&h); /* fails on any sanitizer report in the gateway's log */
}

/* What a stranger who knows no secret can hold of the hub is bounded:
 * connections are counted (a quarter of the open-file limit: 64 of 256
 * here), one must bring its first frame within 10 s, and a frame whose
 * length is over the cap or too short for a header is refused and its
 * connection ended. Once the strangers are gone, workers connect. */
static void test_hub_bounds_what_strangers_hold(void **state)
{
	enum { CAP = 64, MORE = 6 };
	nng_stream *conns[CAP + MORE];
	nng_aio *aios[CAP + MORE];
	gateway h;
	nng_stream_dialer *d;
	int closed = 0;

	(void)state;
	setenv("STRAND_TEST_OPEN_FILES", "256", 1);
	gateway_start(&h, NULL);
	unsetenv("STRAND_TEST_OPEN_FILES");
	d = dialer_to(h.hub_port);
	for (int i = 0; i < CAP + MORE; i++)
		assert_int_equal(hub_dial(d, 5000, &conns[i], &aios[i]), 0);
	for (int i = CAP + MORE - 1; i >= 0; i--) /* the last first: theirs come at once */
		assert_int_equal(ends_within(conns[i], aios[i], i >= CAP ? 5000 : 100), i >= CAP);
	for (int i = 0; i < CAP; i++) /* silent since they connected */
		assert_true(ends_within(conns[i], aios[i], 15000));
	for (int i = 0; i < CAP + MORE; i++) {
		nng_stream_free(conns[i]);
		nng_aio_free(aios[i]);
	}
	nng_stream_dialer_free(d);

	gateway saved = g; /* exchange_cut speaks to g's hub */
	g = h;
	static const uint8_t frame[] = {'S', 'T'};
	assert_refused(exchange_cut(frame, (size_t)PROTO_FRAME_MAX + 1, 0, &closed), "over the 33554432 byte cap");
	assert_true(closed);
	assert_refused(exchange_cut(frame, 2, 2, &closed), "not a strand frame");
	assert_true(closed);
	g = saved;

	char *pool = pool_create(&h, 2);
	pool_wait_connected(&h, pool, 2);
	char *job = job_submit(&h, pool, json_pack("{s:s, s:[i,i,i]}", "function", "echo", "args", 1, 2, 3));
	json_t *items = job_results(&h, job, "input", 10);
	assert_int_equal(json_array_size(items), 3);
	json_decref(items);
	free(job);
	free(pool);
	gateway_cleanup(&h);
}

/* A flood of strangers' refused frames is logged a line a second, each
 * saying how many it stands for: every refusal counted, none lost. */
static void test_refusals_logged_once_a_second(void **state)
{
	enum { FLOOD = 200 };
	gateway h;
	char line[1024];
	long lines = 0, counted = 0;
	int64_t started;

	(void)state;
	gateway_start(&h, NULL);
	gateway saved = g; /* pull_as speaks to g's hub */
	g = h;
	started = cm_now_ms();
	for (int i = 0; i < FLOOD; i++)
		assert_refused(pull_as("w-0000000000000000", "p-0000000000000000",
		                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", NULL, 0, 1),
		               "unknown worker or wrong secret");
	long seconds = (long)((cm_now_ms() - started) / 1000);
	usleep(1100 * 1000);
	/* The one after a quiet second is logged, with the count of the rest. */
	assert_refused(pull_as("w-0000000000000000", "p-0000000000000000",
	                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", NULL, 0, 1),
	               "unknown worker or wrong secret");
	g = saved;
	usleep(200 * 1000);
	FILE *f = fopen(h.log, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *more;
		if (!strstr(line, "hub: refused a connection: unknown worker or wrong secret"))
			continue;
		lines++;
		counted++;
		if ((more = strstr(line, "(and ")))
			counted += strtol(more + 5, NULL, 10);
	}
	fclose(f);
	assert_true(lines >= 2 && lines <= seconds + 3);
	assert_int_equal(counted, FLOOD + 1);
	gateway_cleanup(&h);
}

/* One worker of pool, from the database, and its secret. */
static void a_worker_of(const char *pool, char worker[20], char secret[80])
{
	sqlite3 *db;
	sqlite3_stmt *s;

	assert_int_equal(sqlite3_open_v2(g.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id FROM workers WHERE pool_id = ? LIMIT 1", -1, &s, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(s, 1, pool, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	snprintf(worker, 20, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	tapped_secret(worker, secret);
}

/* Sends frame (freed) on a connection of its own and reads the hub's
 * answer into *reply (new); its header's type into *type. */
static void round_trip(uint8_t *frame, size_t len, uint8_t **reply, size_t *reply_len, proto_type *type)
{
	nng_stream_dialer *d = dialer_to(g.hub_port);
	nng_stream *conn = NULL;
	nng_aio *aio;
	char detail[256];
	proto_header h;

	assert_int_equal(hub_dial(d, 20000, &conn, &aio), 0);
	assert_int_equal(wire_send(conn, aio, frame, len), 0);
	assert_int_equal(wire_recv(conn, aio, PROTO_FRAME_MAX, reply, reply_len), 0);
	assert_int_equal(proto_frame_header(*reply, *reply_len, &h, detail, sizeof(detail)), CM_OK);
	*type = h.type;
	free(frame);
	nng_stream_free(conn);
	nng_aio_free(aio);
	nng_stream_dialer_free(d);
}

/* Sends m (a frame of type, from worker_id with secret) and reads the
 * answer: the message of reply_type (free it), or NULL with the hub's
 * refusal in why. */
static ProtobufCMessage *exchange_as(proto_type type, const ProtobufCMessage *m, const char *worker_id,
                                     const char *secret, proto_type reply_type, char why[256])
{
	uint8_t *frame, *reply = NULL;
	size_t len, reply_len = 0;
	ProtobufCMessage *msg = NULL;
	char detail[256];
	proto_type got;

	assert_int_equal(proto_frame_encode(type, worker_id, secret, m, &frame, &len), CM_OK);
	round_trip(frame, len, &reply, &reply_len, &got);
	why[0] = '\0';
	if (got == PROTO_BATCH) {
		assert_int_equal(proto_frame_decode(PROTO_BATCH, reply, reply_len, &msg, detail, sizeof(detail)),
		                 CM_OK);
		snprintf(why, 256, "%s", ((Strand__Batch *)msg)->error);
		protobuf_c_message_free_unpacked(msg, NULL);
		msg = NULL;
	} else {
		assert_int_equal(got, reply_type);
		assert_int_equal(proto_frame_decode(reply_type, reply, reply_len, &msg, detail, sizeof(detail)), CM_OK);
	}
	free(reply);
	return msg;
}

/* A BlobFetch as worker_id of pool_id (take: the value removed instead):
 * the hub's answer, a BlobPart (new), or NULL with its refusal's words in
 * why. */
static Strand__BlobPart *fetch_or_take_as(const char *worker_id, const char *pool_id, const char *secret,
                                          const char *sha256, const char *grant, int take, char why[256])
{
	Strand__BlobFetch f = STRAND__BLOB_FETCH__INIT;

	f.worker_id = (char *)worker_id;
	f.pool_id = (char *)pool_id;
	f.sha256 = (char *)sha256;
	f.value_grant = (char *)(grant ? grant : "");
	f.take = take;
	Strand__BlobPart *part =
	        (Strand__BlobPart *)exchange_as(PROTO_BLOB_FETCH, &f.base, worker_id, secret, PROTO_BLOB_PART, why);
	if (part && !part->ok) {
		snprintf(why, 256, "%s", part->error);
		protobuf_c_message_free_unpacked(&part->base, NULL);
		part = NULL;
	}
	return part;
}

static Strand__BlobPart *fetch_as(const char *worker_id, const char *pool_id, const char *secret, const char *sha256,
                                  const char *grant, char why[256])
{
	return fetch_or_take_as(worker_id, pool_id, secret, sha256, grant, 0, why);
}

/* A worker's secret reaches its own pool's code package and no other: not
 * another pool's, not one its pool never named, not with a forged secret. */
static void test_code_packages_only_for_their_pool(void **state)
{
	/* An empty zip: its end record alone. */
	static const uint8_t empty_zip[22] = {'P', 'K', 5, 6};
	const char *zip[] = {"Content-Type: application/zip", g.auth, NULL};
	char abc[CM_SHA256_HEX + 1];
	cm_sha256 hash;
	char path[128], spec[160], worker[20], secret[80], other[20], other_secret[80], why[256];
	Strand__BlobPart *part;

	(void)state;
	cm_sha256_init(&hash);
	cm_sha256_update(&hash, empty_zip, sizeof(empty_zip));
	cm_sha256_hex(&hash, abc);
	snprintf(path, sizeof(path), "/v1/code/%s", abc);
	response r = http_bytes(&g, "PUT", path, empty_zip, sizeof(empty_zip), zip);
	assert_int_equal(r.status, 201);
	response_free(&r);
	/* A pool whose workers run in it, and one without. */
	snprintf(spec, sizeof(spec), "{\"processes\": 1, \"code\": \"%s\"}", abc);
	char *with = pool_create_spec(&g, spec);
	char *without = pool_create(&g, 1);
	pool_wait_connected(&g, with, 1);
	pool_wait_connected(&g, without, 1);
	a_worker_of(with, worker, secret);
	a_worker_of(without, other, other_secret);

	/* Its own pool's package. */
	assert_non_null(part = fetch_as(worker, with, secret, abc, NULL, why));
	assert_int_equal(part->size, sizeof(empty_zip));
	assert_int_equal(part->data.len, sizeof(empty_zip));
	assert_memory_equal(part->data.data, empty_zip, sizeof(empty_zip));
	protobuf_c_message_free_unpacked(&part->base, NULL);

	/* Another pool's worker asks for it: refused, though the package exists. */
	assert_null(fetch_as(other, without, other_secret, abc, NULL, why));
	assert_string_equal(why, "the worker's pool runs no such code package");
	/* Its own secret, but the body names the other pool. */
	assert_null(fetch_as(other, with, other_secret, abc, NULL, why));
	assert_string_equal(why, "the frame's body names another worker or pool than its sender");
	/* A forged secret. */
	assert_null(fetch_as(worker, with, other_secret, abc, NULL, why));
	assert_string_equal(why, "unknown worker or wrong secret");
	free(with);
	free(without);
}

/* A value is read only by a worker that was given a task naming it, with
 * the grant its batch carried: not with no grant, a forged one, or one
 * made for another worker. */
static void test_values_only_by_grant(void **state)
{
	static const char value[] = "[1,2,3]";
	const char *octets[] = {"Content-Type: application/octet-stream", g.auth, NULL};
	char sha[CM_SHA256_HEX + 1], path[128], body[256], worker[20], secret[80], other[20], other_secret[80],
	        why[256];
	cm_sha256 hash;
	pid_t pid;

	(void)state;
	cm_sha256_init(&hash);
	cm_sha256_update(&hash, value, strlen(value));
	cm_sha256_hex(&hash, sha);
	snprintf(path, sizeof(path), "/v1/values/%s", sha);
	response r = http_bytes(&g, "PUT", path, value, strlen(value), octets);
	assert_int_equal(r.status, 201);
	response_free(&r);
	char *pool = pool_create(&g, 1), *elsewhere = pool_create(&g, 1);
	pool_wait_connected(&g, pool, 1);
	pool_wait_connected(&g, elsewhere, 1);
	a_worker_of(pool, worker, secret);
	a_worker_of(elsewhere, other, other_secret);
	/* The pool's real worker stands still: this test pulls in its place. */
	assert_int_equal(pool_worker_pids(&g, pool, &pid, 1), 1);
	kill(-pid, SIGSTOP);
	/* A pull it had parked takes the first task there is: a decoy. */
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&g, "POST", path, "{\"function\": \"echo\", \"args\": [7]}", NULL);
	assert_int_equal(r.status, 202);
	response_free(&r);
	snprintf(body, sizeof(body), "{\"function\": \"echo\", \"args\": [{\"$value\": \"%s\"}, 5]}", sha);
	r = http(&g, "POST", path, body, NULL);
	assert_int_equal(r.status, 202);
	response_free(&r);
	/* A grant comes for the argument that names a value, not for 5 or 7. */
	char grant[CM_SHA256_HEX + 1] = "";
	for (int pulls = 0; pulls < 5 && !grant[0]; pulls++) {
		Strand__Batch *b = pull_as(worker, pool, secret, NULL, 0, 3);
		assert_non_null(b);
		size_t refs = 0;
		for (size_t i = 0; i < b->n_task_ids; i++)
			refs += b->arg_lens[i] == CM_VALUE_REF_LEN;
		assert_int_equal(b->n_value_grants, refs);
		if (refs) {
			assert_int_equal(strlen(b->value_grants[0]), 2 * CM_SHA256_HEX + 1);
			assert_memory_equal(b->value_grants[0], sha, CM_SHA256_HEX);
			snprintf(grant, sizeof(grant), "%s", b->value_grants[0] + CM_SHA256_HEX + 1);
		}
		protobuf_c_message_free_unpacked(&b->base, NULL);
	}
	assert_true(grant[0]);

	Strand__BlobPart *part = fetch_as(worker, pool, secret, sha, grant, why);
	assert_non_null(part);
	assert_int_equal(part->size, strlen(value));
	assert_memory_equal(part->data.data, value, strlen(value));
	protobuf_c_message_free_unpacked(&part->base, NULL);
	/* Without the grant it is a code package's fetch, which it is not. */
	assert_null(fetch_as(worker, pool, secret, sha, NULL, why));
	assert_string_equal(why, "the worker's pool runs no such code package");
	assert_null(fetch_as(worker, pool, secret, sha,
	                     "0000000000000000000000000000000000000000000000000000000000000000", why));
	assert_string_equal(why, "no task given to this worker names that value (or the gateway restarted since)");
	/* Another pool's worker with this worker's grant. */
	assert_null(fetch_as(other, elsewhere, other_secret, sha, grant, why));
	assert_string_equal(why, "no task given to this worker names that value (or the gateway restarted since)");
	/* An argument holding references (strand.put's) is granted each name
	 * it lists, and nothing for a name that is not one. */
	snprintf(body, sizeof(body),
	         "{\"function\": \"echo\", \"args\": [{\"$refs\": [\"%s\"], \"arg\": 7}, {\"$refs\": "
	         "[\"../../etc/passwd\"], \"arg\": 8}]}",
	         sha);
	r = http(&g, "POST", path, body, NULL);
	assert_int_equal(r.status, 202);
	response_free(&r);
	size_t refs_tasks = 0, refs_grants = 0;
	for (int pulls = 0; pulls < 10 && refs_tasks < 2; pulls++) {
		Strand__Batch *b = pull_as(worker, pool, secret, NULL, 0, 3);
		assert_non_null(b);
		const uint8_t *arg = b->args.data;
		for (size_t i = 0; i < b->n_task_ids; arg += b->arg_lens[i++])
			refs_tasks += b->arg_lens[i] > 8 && memcmp(arg, "{\"$refs\"", 8) == 0;
		for (size_t i = 0; i < b->n_value_grants; i++, refs_grants++)
			assert_memory_equal(b->value_grants[i], sha, CM_SHA256_HEX);
		protobuf_c_message_free_unpacked(&b->base, NULL);
	}
	assert_int_equal(refs_tasks, 2);
	assert_int_equal(refs_grants, 1);
	kill(-pid, SIGCONT);
	free(pool);
	free(elsewhere);
}

/* What the last BlobPut's answer granted (its value's read grant, or ""). */
static char put_grant[CM_SHA256_HEX + 1];

/* A BlobPut piece as worker_id of pool_id: whether the hub took it, and
 * why not in why. */
static int put_as(const char *worker_id, const char *pool_id, const char *secret, const char *sha256, uint64_t offset,
                  const char *data, int last, char why[256])
{
	static nng_stream_dialer *d;
	static nng_stream *conn;
	static nng_aio *aio;
	Strand__BlobPut p = STRAND__BLOB_PUT__INIT;
	uint8_t *frame, *reply = NULL;
	size_t len, reply_len = 0;
	ProtobufCMessage *msg = NULL;
	char detail[256];

	/* The pieces of one value go on one connection. */
	if (!conn) {
		d = dialer_to(g.hub_port);
		assert_int_equal(hub_dial(d, 20000, &conn, &aio), 0);
	}
	p.worker_id = (char *)worker_id;
	p.pool_id = (char *)pool_id;
	p.sha256 = (char *)sha256;
	p.offset = offset;
	p.data = (ProtobufCBinaryData){.data = (uint8_t *)data, .len = strlen(data)};
	p.last = last;
	assert_int_equal(proto_frame_encode(PROTO_BLOB_PUT, worker_id, secret, &p.base, &frame, &len), CM_OK);
	assert_int_equal(wire_send(conn, aio, frame, len), 0);
	assert_int_equal(wire_recv(conn, aio, PROTO_FRAME_MAX, &reply, &reply_len), 0);
	assert_int_equal(proto_frame_decode(PROTO_BLOB_PART, reply, reply_len, &msg, detail, sizeof(detail)), CM_OK);
	int ok = ((Strand__BlobPart *)msg)->ok;
	snprintf(why, 256, "%s", ((Strand__BlobPart *)msg)->error);
	snprintf(put_grant, sizeof(put_grant), "%s", ((Strand__BlobPart *)msg)->value_grant);
	protobuf_c_message_free_unpacked(msg, NULL);
	free(frame);
	free(reply);
	if (last || !ok) {
		nng_stream_free(conn);
		nng_aio_free(aio);
		nng_stream_dialer_free(d);
		conn = NULL;
	}
	return ok;
}

/* A worker stores a result too large for a pull as a value, in pieces: kept
 * once whole and of its name, never out of order or under another name. */
static void test_workers_store_values_in_pieces(void **state)
{
	char abc[CM_SHA256_HEX + 1], worker[20], secret[80], why[256], path[128];
	cm_sha256 hash;

	(void)state;
	cm_sha256_init(&hash);
	cm_sha256_update(&hash, "abc", 3);
	cm_sha256_hex(&hash, abc);
	char *pool = pool_create(&g, 1);
	pool_wait_connected(&g, pool, 1);
	a_worker_of(pool, worker, secret);
	assert_true(put_as(worker, pool, secret, abc, 0, "a", 0, why));
	assert_false(put_as(worker, pool, secret, abc, 5, "c", 1, why));
	assert_string_equal(why, "a piece of a value out of its order");
	snprintf(path, sizeof(path), "/v1/values/%s", abc);
	response r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	assert_true(put_as(worker, pool, secret, abc, 0, "xy", 0, why));
	assert_false(put_as(worker, pool, secret, abc, 2, "z", 1, why));
	assert_non_null(strstr(why, "its path names"));
	assert_true(put_as(worker, pool, secret, abc, 0, "a", 0, why));
	assert_true(put_as(worker, pool, secret, abc, 1, "bc", 1, why));
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 3);
	assert_memory_equal(r.body, "abc", 3);
	response_free(&r);
	free(pool);
}

/* A QueueCall as worker_id of pool_id on queue: a put of item with grant
 * ("SHA GRANT", or NULL), or a get (item NULL) whose item and grant go
 * into got and got_grant. Whether the hub answered ok; why not in why. */
static int queue_call_as(const char *worker_id, const char *pool_id, const char *secret, const char *queue,
                         const char *item, const char *grant, char got[256], char got_grant[256], char why[256])
{
	Strand__QueueCall c = STRAND__QUEUE_CALL__INIT;
	ProtobufCBinaryData bin = {item ? strlen(item) : 0, (uint8_t *)item};
	char *grants[1] = {(char *)grant};
	int ok = 0;

	c.worker_id = (char *)worker_id;
	c.pool_id = (char *)pool_id;
	c.op = item ? STRAND__QUEUE_CALL__OP__PUT : STRAND__QUEUE_CALL__OP__GET;
	c.queue = (char *)queue;
	c.pipe_end = -1;
	c.items = item ? &bin : NULL;
	c.n_items = item ? 1 : 0;
	c.value_grants = grants;
	c.n_value_grants = grant ? 1 : 0;
	c.max = 1;
	got[0] = got_grant[0] = '\0';
	Strand__QueueReply *r =
	        (Strand__QueueReply *)exchange_as(PROTO_QUEUE_CALL, &c.base, worker_id, secret, PROTO_QUEUE_REPLY, why);
	if (r) {
		snprintf(why, 256, "%s", r->error);
		if ((ok = r->ok) && r->n_items)
			snprintf(got, 256, "%.*s", (int)r->items[0].len, (const char *)r->items[0].data);
		if (r->n_value_grants)
			snprintf(got_grant, 256, "%s", r->value_grants[0]);
		protobuf_c_message_free_unpacked(&r->base, NULL);
	}
	return ok;
}

/* The SHA-256 of "abc", and a worker of each of two new pools. */
static void two_workers(char abc[CM_SHA256_HEX + 1], char **pool, char worker[20], char secret[80], char **elsewhere,
                        char other[20], char other_secret[80])
{
	cm_sha256 hash;

	cm_sha256_init(&hash);
	cm_sha256_update(&hash, "abc", 3);
	cm_sha256_hex(&hash, abc);
	*pool = pool_create(&g, 1);
	*elsewhere = pool_create(&g, 1);
	pool_wait_connected(&g, *pool, 1);
	pool_wait_connected(&g, *elsewhere, 1);
	a_worker_of(*pool, worker, secret);
	a_worker_of(*elsewhere, other, other_secret);
}

/* A queue item names only a value its putter may read (one it stored,
 * with the grant the hub answered): not with no grant or a forged one. Its
 * getter gets the grants to read it and to remove it (read once), and
 * neither serves another worker, nor one the other's purpose. */
static void test_queue_items_name_only_readable_values(void **state)
{
	char abc[CM_SHA256_HEX + 1], item[128], vouch[160], fake[160], got[256], got_grant[256], why[256], path[128],
	        worker[20], secret[80], other[20], other_secret[80];
	char *pool, *elsewhere;

	(void)state;
	two_workers(abc, &pool, worker, secret, &elsewhere, other, other_secret);
	response made = http(&g, "POST", "/v1/queues", "{}", NULL);
	assert_int_equal(made.status, 201);
	char queue[64];
	snprintf(queue, sizeof(queue), "%s", json_string_value(json_object_get(made.json, "id")));
	response_free(&made);

	assert_true(put_as(worker, pool, secret, abc, 0, "abc", 1, why));
	assert_int_equal(strlen(put_grant), CM_SHA256_HEX);
	snprintf(item, sizeof(item), "{\"$value\":\"%s\"}", abc);
	snprintf(vouch, sizeof(vouch), "%s %s", abc, put_grant);
	snprintf(fake, sizeof(fake), "%s %064d", abc, 0);
	assert_false(queue_call_as(worker, pool, secret, queue, item, NULL, got, got_grant, why));
	assert_string_equal(why, "a queue item names a value its sender was given no grant to read");
	assert_false(queue_call_as(worker, pool, secret, queue, item, fake, got, got_grant, why));
	assert_string_equal(why, "a queue item names a value its sender was given no grant to read");
	assert_false(queue_call_as(other, elsewhere, other_secret, queue, item, vouch, got, got_grant, why));
	assert_string_equal(why, "a queue item names a value its sender was given no grant to read");
	assert_true(queue_call_as(worker, pool, secret, queue, item, vouch, got, got_grant, why));

	assert_true(queue_call_as(other, elsewhere, other_secret, queue, NULL, NULL, got, got_grant, why));
	assert_string_equal(got, item);
	assert_int_equal(strlen(got_grant), 3 * CM_SHA256_HEX + 2);
	assert_memory_equal(got_grant, abc, CM_SHA256_HEX);
	char read[CM_SHA256_HEX + 1], take[CM_SHA256_HEX + 1];
	snprintf(read, sizeof(read), "%.64s", got_grant + CM_SHA256_HEX + 1);
	snprintf(take, sizeof(take), "%.64s", got_grant + 2 * CM_SHA256_HEX + 2);
	Strand__BlobPart *part = fetch_as(other, elsewhere, other_secret, abc, read, why);
	assert_non_null(part);
	assert_memory_equal(part->data.data, "abc", 3);
	protobuf_c_message_free_unpacked(&part->base, NULL);
	/* The read grant removes nothing, nor does the take grant for another. */
	assert_null(fetch_or_take_as(other, elsewhere, other_secret, abc, read, 1, why));
	assert_string_equal(why,
	                    "no queue item given to this worker names that value (or the gateway restarted since)");
	assert_null(fetch_or_take_as(worker, pool, secret, abc, take, 1, why));
	assert_string_equal(why,
	                    "no queue item given to this worker names that value (or the gateway restarted since)");
	assert_null(fetch_as(other, elsewhere, other_secret, abc, take, why));
	snprintf(path, sizeof(path), "/v1/values/%s", abc);
	response r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	part = fetch_or_take_as(other, elsewhere, other_secret, abc, take, 1, why);
	assert_non_null(part);
	protobuf_c_message_free_unpacked(&part->base, NULL);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	free(pool);
	free(elsewhere);
}

/* A ManagerCall as worker_id of pool_id on manager, with the call's body
 * and grant ("SHA GRANT", or NULL). Whether the hub answered ok; why not
 * in why (a refusal's, or the answer's error). */
static int manager_call_as(const char *worker_id, const char *pool_id, const char *secret, const char *manager,
                           const char *call, const char *grant, char why[256])
{
	Strand__ManagerCall c = STRAND__MANAGER_CALL__INIT;
	char *grants[1] = {(char *)grant};
	int ok = 0;

	c.worker_id = (char *)worker_id;
	c.pool_id = (char *)pool_id;
	c.manager = (char *)manager;
	c.call = (ProtobufCBinaryData){strlen(call), (uint8_t *)call};
	c.wait_ms = 1000;
	c.value_grants = grants;
	c.n_value_grants = grant ? 1 : 0;
	Strand__ManagerReply *r = (Strand__ManagerReply *)exchange_as(PROTO_MANAGER_CALL, &c.base, worker_id, secret,
	                                                              PROTO_MANAGER_REPLY, why);
	if (r) {
		snprintf(why, 256, "%s", r->error);
		ok = r->ok;
		protobuf_c_message_free_unpacked(&r->base, NULL);
	}
	return ok;
}

/* A task's manager call names only a value its sender may read, as a
 * queue item does: not with no grant, a forged one or another worker's.
 * One vouched for reaches the engine (which knows no such manager here),
 * and a body naming another worker is refused. */
static void test_manager_calls_name_only_readable_values(void **state)
{
	char abc[CM_SHA256_HEX + 1], call[160], vouch[160], fake[160], why[256], worker[20], secret[80], other[20],
	        other_secret[80];
	const char *refused = "the call names a value its sender was given no grant to read";
	char *pool, *elsewhere;

	(void)state;
	two_workers(abc, &pool, worker, secret, &elsewhere, other, other_secret);
	assert_true(put_as(worker, pool, secret, abc, 0, "abc", 1, why));
	snprintf(call, sizeof(call), "{\"method\":\"pickle\",\"args\":[{\"$value\":\"%s\"}]}", abc);
	snprintf(vouch, sizeof(vouch), "%s %s", abc, put_grant);
	snprintf(fake, sizeof(fake), "%s %064d", abc, 0);
	assert_false(manager_call_as(worker, pool, secret, "m-0000000000000000", call, NULL, why));
	assert_string_equal(why, refused);
	assert_false(manager_call_as(worker, pool, secret, "m-0000000000000000", call, fake, why));
	assert_string_equal(why, refused);
	assert_false(manager_call_as(other, elsewhere, other_secret, "m-0000000000000000", call, vouch, why));
	assert_string_equal(why, refused);
	assert_false(manager_call_as(worker, pool, secret, "m-0000000000000000", call, vouch, why));
	assert_string_equal(why, "no such manager m-0000000000000000 (it was shut down, or never was)");
	assert_false(manager_call_as(worker, pool, secret, "m-0000000000000000", "[1]", NULL, why));
	assert_string_equal(why, "body must be a JSON object");
	assert_false(manager_call_as(worker, pool, secret, elsewhere, call, vouch, why)); /* a pool is not a manager */
	assert_string_equal(why, "a ManagerCall names a manager (m-...)");
	assert_false(manager_call_as(worker, elsewhere, secret, "m-0000000000000000", call, vouch, why));
	assert_string_equal(why, "the frame's body names another worker or pool than its sender");
	free(pool);
	free(elsewhere);
}

/* A worker's pull with more lines of output than one pull may store: the
 * first 1,024 are stored and one line says how many more went, so a frame
 * of many empty lines is no big loop in the engine; sent again, none of
 * them is stored twice. */
static void test_output_lines_bounded_and_stored_once(void **state)
{
	enum { LINES = 5000 };
	char worker[20], secret[80], path[128];
	uint32_t *lens = calloc(LINES, sizeof(*lens)), *streams = calloc(LINES, sizeof(*streams));
	uint8_t *frame;
	size_t len;

	(void)state;
	char *pool = pool_create(&g, 1);
	pid_t pid;
	pool_wait_connected(&g, pool, 1);
	a_worker_of(pool, worker, secret);
	/* The real worker stands still meanwhile: its pulls would take the
	 * place of these (a worker has one pull at a time). */
	assert_int_equal(pool_worker_pids(&g, pool, &pid, 1), 1);
	kill(-pid, SIGSTOP);
	for (int i = 0; i < LINES; i++)
		streams[i] = 1; /* empty lines of stdout */
	Strand__Pull pull = STRAND__PULL__INIT;
	pull.worker_id = worker;
	pull.pool_id = pool;
	pull.output_lens = lens;
	pull.n_output_lens = LINES;
	pull.output_streams = streams;
	pull.n_output_streams = LINES;
	pull.output_first = 1000000; /* past what the real worker sends */
	assert_int_equal(proto_frame_encode(PROTO_PULL, worker, secret, &pull.base, &frame, &len), CM_OK);
	for (int sent = 0; sent < 2; sent++) { /* the same pull again: its answer lost */
		Strand__Batch *b = exchange(frame, len);
		assert_non_null(b);
		assert_int_not_equal(b->status, STRAND__BATCH__STATUS__REFUSED);
		protobuf_c_message_free_unpacked(&b->base, NULL);
	}
	kill(-pid, SIGCONT);
	snprintf(path, sizeof(path), "/v1/pools/%s/logs?limit=10000", pool);
	json_t *page = http_get_ok(&g, path), *lines = json_object_get(page, "lines");
	assert_int_equal(json_array_size(lines), 1025);
	assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 1024), "text")),
	                    "[strand: 3976 lines over the 1024 one pull may bring were dropped]");
	json_decref(page);
	free(frame);
	free(lens);
	free(streams);
	free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rogue_worker_steals_nothing_and_forges_nothing),
	        cmocka_unit_test(test_frames_during_shutdown),
	        cmocka_unit_test(test_hub_bounds_what_strangers_hold),
	        cmocka_unit_test(test_code_packages_only_for_their_pool),
	        cmocka_unit_test(test_values_only_by_grant),
	        cmocka_unit_test(test_workers_store_values_in_pieces),
	        cmocka_unit_test(test_queue_items_name_only_readable_values),
	        cmocka_unit_test(test_manager_calls_name_only_readable_values),
	        cmocka_unit_test(test_refusals_logged_once_a_second),
	        cmocka_unit_test(test_output_lines_bounded_and_stored_once),
	};
	int failed = cmocka_run_group_tests_name("rogue_worker", tests, setup, teardown);
	tap_worker_remove();
	return failed;
}
