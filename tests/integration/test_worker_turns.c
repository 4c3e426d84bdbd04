/*
 * A real strand-worker against this test in the hub's place: the order it
 * runs what it is handed. Tasks of a small job (TaskRun.ahead) come while
 * it holds a batch of 50 ms sleeps: the first of them runs once the sleep
 * running then ends, not after the batch, and from there the two kinds
 * take turns, so neither waits for the other to run out. A stretch of
 * short tasks whose later ones run long is cut, so their results go as
 * they end. And the results of short tasks go some to an exchange.
 */
#define _GNU_SOURCE
#include <nng/nng.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "tests/support/stream_frames.h"

#define HELD 20 /* 50 ms sleeps, ids 1..HELD */
#define AHEAD 3 /* echoes, ids 1001..1000+AHEAD */

static pid_t worker_pid; /* killed by the teardown, also when the test fails */

/* This test in the hub's place: one worker's connection at a time. */
typedef struct fake_hub {
	nng_stream_listener *listener;
	nng_stream *conn; /* NULL until a worker connects, and after it went */
	nng_aio *aio; /* no callback: each step waited for, within 20 s */
} fake_hub;

static void send_frame(fake_hub *h, const uint8_t *frame, size_t len)
{
	assert_int_equal(wire_send(h->conn, h->aio, frame, len), 0);
}

/* Answers the pull just received: this worker is refused. */
static void refuse(fake_hub *h)
{
	Strand__Batch b = STRAND__BATCH__INIT;
	uint8_t *frame = NULL;
	size_t len = 0;

	b.status = STRAND__BATCH__STATUS__REFUSED;
	b.error = "not the worker this test started";
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &frame, &len), CM_OK);
	send_frame(h, frame, len);
	free(frame);
	nng_stream_free(h->conn); /* as the real hub, which does not read on */
	h->conn = NULL;
}

/* The next Pull from the worker, which waits for answer(); a worker that
 * went (and dials again) is accepted again. */
static Strand__Pull *next_pull(fake_hub *h)
{
	for (;;) {
		uint8_t *frame = NULL;
		size_t len = 0;
		ProtobufCMessage *m = NULL;
		char detail[256] = "";

		if (!h->conn) {
			nng_stream_listener_accept(h->listener, h->aio);
			nng_aio_wait(h->aio);
			assert_int_equal(nng_aio_result(h->aio), 0);
			h->conn = nng_aio_get_output(h->aio, 0);
		}
		if (wire_recv(h->conn, h->aio, PROTO_FRAME_MAX, &frame, &len) != 0) {
			nng_stream_free(h->conn);
			h->conn = NULL;
			continue;
		}
		assert_int_equal(proto_frame_decode(PROTO_PULL, frame, len, &m, detail, sizeof(detail)), CM_OK);
		free(frame);
		Strand__Pull *p = (Strand__Pull *)m;
		if (strcmp(p->worker_id, "w-turns") == 0)
			return p;
		/* Another worker that found this port (one whose gateway went
		 * away dials on): refused, as the real hub does, so it exits. */
		protobuf_c_message_free_unpacked(m, NULL);
		refuse(h);
	}
}

#define RUN_MAX 256 /* tasks in one answer, at most */

/* Answers the pull with a run of n tasks of function, ids first_id on,
 * task i's argument args[i] (or args[0] for all when one_arg). */
static void answer_run(fake_hub *h, uint64_t first_id, size_t n, const char *function, const char *const *args,
                       int one_arg, int ahead)
{
	Strand__TaskRun run = STRAND__TASK_RUN__INIT, *runs[] = {&run};
	uint64_t ids[RUN_MAX];
	uint32_t attempts[RUN_MAX], lens[RUN_MAX];
	char texts[RUN_MAX * 8];
	Strand__Batch b = STRAND__BATCH__INIT;
	uint8_t *frame = NULL;
	size_t len = 0, at = 0;

	assert_true(n <= RUN_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *arg = args[one_arg ? 0 : i];
		ids[i] = first_id + i;
		attempts[i] = 1;
		lens[i] = (uint32_t)strlen(arg);
		assert_true(lens[i] <= 8);
		memcpy(texts + at, arg, lens[i]);
		at += lens[i];
	}
	run.function = (char *)function;
	run.ahead = ahead;
	run.count = (uint32_t)n;
	b.runs = n ? runs : NULL;
	b.n_runs = n ? 1 : 0;
	b.task_ids = ids;
	b.n_task_ids = n;
	b.attempts = attempts;
	b.n_attempts = n;
	b.arg_lens = lens;
	b.n_arg_lens = n;
	b.args.data = (uint8_t *)texts;
	b.args.len = at;
	b.lease_ms = 60000;
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &frame, &len), CM_OK);
	send_frame(h, frame, len);
	free(frame);
}

/* Answers the pull with n tasks: echo of "1" when ahead, else 50 ms sleeps. */
static void answer(fake_hub *h, uint64_t first_id, size_t n, int ahead)
{
	static const char *const echo[] = {"1"}, *const sleep_50[] = {"50"};

	answer_run(h, first_id, n, ahead ? "echo" : "sleep", ahead ? echo : sleep_50, 1, ahead);
}

static int seen(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* Whether the worker holds or has reported any of ids first..first+n-1. */
static int holds_any(const Strand__Pull *p, const uint64_t *reported, size_t nreported, uint64_t first, size_t n)
{
	for (uint64_t id = first; id < first + n; id++)
		if (seen(p->held, p->n_held, id) || seen(reported, nreported, id))
			return 1;
	return 0;
}

/* A loopback port that nothing listens on now, below the range the
 * harness's gateways use (10000 to 31999), so no worker of another test's
 * gateway dials it. */
static int free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int port = 6000 + (int)((getpid() * 7 + tries * 131) % 3900);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		int ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	fail_msg("no free loopback port");
	return -1;
}

static int kill_worker(void **state);

/* Starts a real strand-worker dialing h, which listens. */
static void start_worker(fake_hub *h)
{
	char url[64], hub[80];

	/* The worker is started before any nng call: a fork while nng's
	 * threads run can hang under ThreadSanitizer. It dials until the
	 * port listens. */
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", free_port());
	snprintf(hub, sizeof(hub), "STRAND_HUB=%s", url);
	pid_t pid = worker_pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *env[] = {hub, "STRAND_POOL_ID=p-turns", "STRAND_WORKER_ID=w-turns", "STRAND_SECRET=s", NULL};
		char *argv[] = {STRAND_BIN_DIR "/strand-worker", NULL};
		execve(argv[0], argv, env);
		_exit(127);
	}
	assert_int_equal(nng_stream_listener_alloc(&h->listener, url), 0);
	assert_int_equal(nng_stream_listener_listen(h->listener), 0);
	assert_int_equal(nng_aio_alloc(&h->aio, NULL, NULL), 0);
	nng_aio_set_timeout(h->aio, 20000);
}

static void stop_worker(fake_hub *h)
{
	kill_worker(NULL);
	if (h->conn)
		nng_stream_free(h->conn);
	nng_aio_free(h->aio);
	nng_stream_listener_free(h->listener);
}

static void test_small_jobs_take_turns_with_a_held_batch(void **state)
{
	fake_hub h = {0};
	uint64_t order[HELD + AHEAD];
	size_t got = 0, reported_before_ahead = 0;
	int sent_ahead = 0;

	(void)state;
	start_worker(&h);
	Strand__Pull *p = next_pull(&h); /* the first: nothing to report */
	assert_int_equal(p->n_result_ids, 0);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	answer(&h, 1, HELD, 0);
	for (int pulls = 0; got < HELD + AHEAD; pulls++) {
		assert_true(pulls < 5000);
		p = next_pull(&h);
		for (size_t i = 0; i < p->n_result_ids; i++) {
			assert_int_equal(p->outcomes[i], STRAND__OUTCOME__OK);
			if (!seen(order, got, p->result_ids[i])) /* sent again after a lost answer */
				order[got++] = p->result_ids[i];
		}
		/* An answer that never arrived (the connection dropped): the
		 * worker lists what it holds, and a batch it lacks goes again,
		 * as the gateway's hub does. */
		if (p->resync && !holds_any(p, order, got, 1, HELD)) {
			answer(&h, 1, HELD, 0);
		} else if (p->resync && sent_ahead && !holds_any(p, order, got, 1001, AHEAD)) {
			reported_before_ahead = got;
			answer(&h, 1001, AHEAD, 1);
		} else if (!sent_ahead && got > 0) { /* the worker has run one sleep and holds the rest */
			reported_before_ahead = got;
			answer(&h, 1001, AHEAD, 1);
			sent_ahead = 1;
		} else {
			answer(&h, 0, 0, 0);
		}
		protobuf_c_message_free_unpacked(&p->base, NULL);
	}
	assert_true(reported_before_ahead < HELD - 5);
	/* Where the first echo ran: right after the sleep running when it came
	 * (one more may have ended while the answer was on its way). */
	size_t first = 0;
	while (order[first] < 1001)
		first++;
	assert_true(first <= reported_before_ahead + 2);
	/* From there, one each in turn; the sleeps in id order throughout. */
	for (size_t k = 0; k < 2 * AHEAD - 1; k++)
		assert_int_equal(order[first + k] >= 1001, k % 2 == 0);
	for (size_t i = 0, last = 0; i < got; i++)
		if (order[i] < 1001) {
			assert_int_equal(order[i], last + 1);
			last = order[i];
		}
	stop_worker(&h);
}

/* Collects the results of the pulls until ids first..first+n-1 are all in
 * (answering each with nothing more; a lost answer's run goes again, as
 * the gateway's hub does); pull_of[id - first]: the pull that brought it. */
static void collect(fake_hub *h, uint64_t first, size_t n, int *pull_of, const char *function, const char *const *args,
                    int one_arg)
{
	size_t got = 0;

	for (size_t i = 0; i < n; i++)
		pull_of[i] = -1;
	for (int pulls = 0; got < n; pulls++) {
		assert_true(pulls < 5000);
		Strand__Pull *p = next_pull(h);
		for (size_t i = 0; i < p->n_result_ids; i++) {
			uint64_t id = p->result_ids[i];
			assert_int_equal(p->outcomes[i], STRAND__OUTCOME__OK);
			if (id >= first && id < first + n && pull_of[id - first] < 0) {
				pull_of[id - first] = pulls;
				got++;
			}
		}
		int lost = 1; /* the run was answered, then the answer lost */
		for (size_t i = 0; i < n && lost; i++)
			lost = pull_of[i] < 0 && !seen(p->held, p->n_held, first + i);
		if (p->resync && lost)
			answer_run(h, first, n, function, args, one_arg, 0);
		else
			answer_run(h, 0, 0, "", NULL, 1, 0);
		protobuf_c_message_free_unpacked(&p->base, NULL);
	}
}

/* Short tasks go a stretch at a time, by the worker's average; a run whose
 * later tasks are long is not held back until the stretch ends: once it
 * runs long, each task's result goes as it ends. Here 200 echoes make the
 * average tiny, so the next run (two instant sleeps, then five of 200 ms)
 * is taken as one stretch; its five long results come in five pulls, not
 * all in one a second later. */
static void test_a_stretch_that_runs_long_is_cut(void **state)
{
	static const char *const one[] = {"1"};
	static const char *const sleeps[] = {"0", "0", "200", "200", "200", "200", "200"};
	fake_hub h = {0};
	int pull_of[200];

	(void)state;
	start_worker(&h);
	Strand__Pull *p = next_pull(&h);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	answer_run(&h, 1, 200, "echo", one, 1, 0);
	collect(&h, 1, 200, pull_of, "echo", one, 1);
	p = next_pull(&h);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	answer_run(&h, 301, 7, "sleep", sleeps, 0, 0);
	collect(&h, 301, 7, pull_of, "sleep", sleeps, 0);
	for (size_t i = 3; i < 7; i++)
		if (pull_of[i] <= pull_of[i - 1])
			fail_msg("the long sleeps %zu and %zu came in one pull (%d)", i + 300, i + 301, pull_of[i]);
	stop_worker(&h);
}

/* Results of short tasks wait a little for others while the worker holds
 * more work, so an exchange carries several: 100 sleeps of 2 ms held at
 * once come in some ten pulls (a result may wait up to 20 ms), not one
 * pull each, as they did; and not all in one at the end either. */
static void test_results_of_short_tasks_go_together(void **state)
{
	static const char *const two[] = {"2"};
	fake_hub h = {0};
	int pull_of[100];
	int pulls = 0;

	(void)state;
	start_worker(&h);
	Strand__Pull *p = next_pull(&h);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	answer_run(&h, 1, 100, "sleep", two, 1, 0);
	collect(&h, 1, 100, pull_of, "sleep", two, 1);
	for (int i = 0, last = -1; i < 100; i++)
		if (pull_of[i] != last) {
			pulls++;
			last = pull_of[i];
		}
	print_message("100 results of 2 ms tasks came in %d pulls\n", pulls);
	assert_in_range(pulls, 4, 40);
	stop_worker(&h);
}

static int kill_worker(void **state)
{
	(void)state;
	if (worker_pid > 0) {
		kill(worker_pid, SIGKILL);
		waitpid(worker_pid, NULL, 0);
		worker_pid = 0;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_small_jobs_take_turns_with_a_held_batch, kill_worker),
	        cmocka_unit_test_teardown(test_a_stretch_that_runs_long_is_cut, kill_worker),
	        cmocka_unit_test_teardown(test_results_of_short_tasks_go_together, kill_worker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
