/*
 * The kubernetes backend's watch against a fake API server (fake_k8s_api.c:
 * the real one cannot be made to break a stream or answer 410 on demand):
 * it lists, watches from the list's resourceVersion, resumes from the last
 * version seen when a stream ends, lists again after a 410 Gone or a broken
 * stream, and poll reports what the events and lists said, also when a
 * pod's creation is answered after the watch told what came of it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/backend/backend.h"
#include "gateway/backend/tests/fake_k8s_api.h"

static char dir[64], cert[128], key[128];

static int setup(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/strand-k8s-watch-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
	         "subjectAltName=IP:127.0.0.1 -keyout %s -out %s 2>/dev/null",
	         key, cert);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A pod object in a phase; a Failed one's container exited with code 3. */
static void pod_json(char *out, size_t len, const char *name, const char *rv, const char *phase)
{
	snprintf(out, len,
	         "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"%s\","
	         "\"containerStatuses\":[{\"state\":{%s}}]}}",
	         name, rv, phase,
	         strcmp(phase, "Failed") == 0 ? "\"terminated\":{\"exitCode\":3,\"reason\":\"Error\"}" : "");
}

/* Waits (5 s at most) until f has served more than n watches. */
static void wait_watches(fake_k8s_api *f, int n)
{
	for (int i = 0; i < 500 && fake_k8s_api_watches(f) <= n; i++)
		usleep(10000);
	assert_true(fake_k8s_api_watches(f) > n);
}

/* poll's answer for a pod, once it stops being "running" (5 s at most). */
static int poll_until_gone(backend *b, const char *name, int *code, char *detail)
{
	for (int i = 0; i < 500; i++) {
		if (b->ops->poll(b, name, code, detail, 256))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* The kubernetes backend on f's API; a pod stuck this long never started. */
static backend *backend_on(fake_k8s_api *f, int start_grace_s)
{
	char detail[256];
	k8s_config *cfg = calloc(1, sizeof(*cfg));

	snprintf(cfg->server, sizeof(cfg->server), "%s", fake_k8s_api_url(f));
	snprintf(cfg->token, sizeof(cfg->token), "fake-token");
	snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s", cert);
	snprintf(cfg->ns, sizeof(cfg->ns), "default");
	snprintf(cfg->pull_policy, sizeof(cfg->pull_policy), "Never");
	cfg->start_grace_s = start_grace_s;
	backend *b = backend_k8s_new(cfg, 5, detail, sizeof(detail));
	if (!b)
		fail_msg("backend_k8s_new: %s", detail);
	free(cfg);
	return b;
}

static void test_watch_resumes_and_relists(void **state)
{
	char item[512], items[1100], event[700], detail[256];
	int code = 0;

	(void)state;
	fake_k8s_api *f = fake_k8s_api_start(cert, key);
	assert_non_null(f);
	char item_b[512];
	pod_json(item, sizeof(item), "strand-p-1-a", "10", "Running");
	pod_json(item_b, sizeof(item_b), "strand-p-1-b", "10", "Running");
	snprintf(items, sizeof(items), "[%s,%s]", item, item_b);
	fake_k8s_api_set_pods(f, items, "10");

	backend *b = backend_on(f, 60);

	/* Listed (the start check, then the watch's list), watched from the
	 * list's version; the pod runs. */
	wait_watches(f, 0);
	assert_int_equal(fake_k8s_api_lists(f), 2);
	assert_string_equal(fake_k8s_api_watch_from(f, 0), "10");
	assert_int_equal(b->ops->poll(b, "strand-p-1-a", &code, detail, sizeof(detail)), 0);

	/* An event, then the stream ends as at its timeout: the next watch
	 * resumes from that event's version, with no list between. */
	pod_json(item, sizeof(item), "strand-p-1-a", "11", "Running");
	snprintf(event, sizeof(event), "{\"type\":\"MODIFIED\",\"object\":%s}", item);
	fake_k8s_api_send(f, event);
	fake_k8s_api_end(f);
	wait_watches(f, 1);
	assert_string_equal(fake_k8s_api_watch_from(f, 1), "11");
	assert_int_equal(fake_k8s_api_lists(f), 2);

	/* A pod that fails, as an event: poll says so with its exit code. */
	pod_json(item, sizeof(item), "strand-p-1-a", "12", "Failed");
	snprintf(event, sizeof(event), "{\"type\":\"MODIFIED\",\"object\":%s}", item);
	fake_k8s_api_send(f, event);
	assert_int_equal(poll_until_gone(b, "strand-p-1-a", &code, detail), 1);
	assert_int_equal(code, 3);
	assert_string_equal(detail, "Error");
	assert_int_equal(b->ops->poll(b, "strand-p-1-b", &code, detail, sizeof(detail)), 0);

	/* 410 Gone: the version is older than the server keeps. The pods are
	 * listed again (meanwhile pod b was deleted), and watched from the new
	 * list's version. */
	fake_k8s_api_set_pods(f, "[]", "50");
	fake_k8s_api_send(f, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
	                     "\"reason\":\"Expired\",\"message\":\"too old resource version: 13 (40)\"}}");
	fake_k8s_api_end(f);
	wait_watches(f, 2);
	assert_int_equal(fake_k8s_api_lists(f), 3);
	assert_string_equal(fake_k8s_api_watch_from(f, 2), "50");
	assert_int_equal(b->ops->poll(b, "strand-p-1-b", &code, detail, sizeof(detail)), 1);
	assert_int_equal(code, -1);
	assert_string_equal(detail, "pod strand-p-1-b was deleted");

	/* A stream that breaks (the connection dies): events may be lost, so
	 * the pods are listed again before the next watch. */
	pod_json(item, sizeof(item), "strand-p-1-c", "60", "Failed");
	snprintf(items, sizeof(items), "[%s]", item);
	fake_k8s_api_set_pods(f, items, "60");
	fake_k8s_api_break(f);
	wait_watches(f, 3);
	assert_int_equal(fake_k8s_api_lists(f), 4);
	assert_string_equal(fake_k8s_api_watch_from(f, 3), "60");
	assert_int_equal(b->ops->poll(b, "strand-p-1-c", &code, detail, sizeof(detail)), 1);
	assert_int_equal(code, 3);

	b->ops->free(b);
	fake_k8s_api_stop(f);
}

/* A run on a thread of its own: its pod's creation may be held. */
typedef struct running {
	backend *b;
	backend_run_spec spec;
	char handle[BACKEND_HANDLE_MAX];
	char detail[256];
	int rc;
} running;

static void *run_main(void *arg)
{
	running *r = arg;

	r->rc = r->b->ops->run(r->b, &r->spec, r->handle, r->detail, sizeof(r->detail));
	return NULL;
}

/* The watch told of a new pod, and that it cannot be scheduled, before its
 * creation's answer was taken in (a loaded gateway's executor thread may
 * be that late): the answer, older than those events, must not hide them.
 * It did, and a pod that could never run was waited for as one starting
 * (a pool's worker killed and replaced after 30 s, a Process for ever). */
static void test_creation_answered_after_the_watch(void **state)
{
	char item[512], event[1100], detail[256];
	int code = 0;
	static const char name[] = "strand-p-2-1";

	(void)state;
	fake_k8s_api *f = fake_k8s_api_start(cert, key);
	assert_non_null(f);
	pod_json(item, sizeof(item), "strand-p-2-9", "10", "Running");
	snprintf(event, sizeof(event), "[%s]", item);
	fake_k8s_api_set_pods(f, event, "10");
	backend *b = backend_on(f, 1);
	wait_watches(f, 0);

	/* The creation is held while the watch tells its story. */
	pod_json(item, sizeof(item), name, "11", "Pending");
	fake_k8s_api_set_created(f, item);
	fake_k8s_api_hold(f);
	pool_spec spec = {0};
	snprintf(spec.image, sizeof(spec.image), "strand-worker:test");
	running r = {.b = b, .spec = {.spec = &spec, .name = name, .group = "p-2"}};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, run_main, &r), 0);
	for (int i = 0; i < 500 && fake_k8s_api_creations(f) < 1; i++)
		usleep(10000);
	assert_int_equal(fake_k8s_api_creations(f), 1);
	snprintf(event, sizeof(event), "{\"type\":\"ADDED\",\"object\":%s}", item);
	fake_k8s_api_send(f, event);
	snprintf(event, sizeof(event),
	         "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"12\"},"
	         "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
	         "\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes are available: 1 Insufficient "
	         "cpu.\"}]}}}",
	         name);
	fake_k8s_api_send(f, event);
	/* Events are applied in order: once another pod's deletion is known,
	 * so is the scheduler's word on this one. (Not a pod's end: poll asks
	 * the API for its last lines, on the curl handle the run is using;
	 * the backend's calls are made by its one executor thread, not two.) */
	pod_json(item, sizeof(item), "strand-p-2-9", "13", "Running");
	snprintf(event, sizeof(event), "{\"type\":\"DELETED\",\"object\":%s}", item);
	fake_k8s_api_send(f, event);
	assert_int_equal(poll_until_gone(b, "strand-p-2-9", &code, detail), 1);
	assert_string_equal(detail, "pod strand-p-2-9 was deleted");
	fake_k8s_api_release(f);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r.rc != CM_OK)
		fail_msg("run: %s", r.detail);
	assert_string_equal(r.handle, name);

	/* After the grace (1 s), the pod is reported as never started, with
	 * the scheduler's words. */
	assert_int_equal(poll_until_gone(b, name, &code, detail), 1);
	assert_int_equal(code, BACKEND_NEVER_STARTED);
	assert_non_null(strstr(detail, "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."));

	b->ops->free(b);
	fake_k8s_api_stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_watch_resumes_and_relists),
	        cmocka_unit_test(test_creation_answered_after_the_watch),
	};
	return cmocka_run_group_tests_name("k8s_watch", tests, setup, teardown);
}
