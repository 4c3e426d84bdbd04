/*
 * The kubernetes backend's watch against a fake API server (fake_k8s_api.c:
 * the real one cannot be made to break a stream or answer 410 on demand):
 * it lists, watches from the list's resourceVersion, resumes from the last
 * version seen when a stream ends, lists again after a 410 Gone or a broken
 * stream, and poll reports what the events and lists said.
 */
#define _GNU_SOURCE
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

	k8s_config *cfg = calloc(1, sizeof(*cfg));
	snprintf(cfg->server, sizeof(cfg->server), "%s", fake_k8s_api_url(f));
	snprintf(cfg->token, sizeof(cfg->token), "fake-token");
	snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s", cert);
	snprintf(cfg->ns, sizeof(cfg->ns), "default");
	snprintf(cfg->pull_policy, sizeof(cfg->pull_policy), "Never");
	cfg->start_grace_s = 60;
	backend *b = backend_k8s_new(cfg, 5, detail, sizeof(detail));
	if (!b)
		fail_msg("backend_k8s_new: %s", detail);
	free(cfg);

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_watch_resumes_and_relists),
	};
	return cmocka_run_group_tests_name("k8s_watch", tests, setup, teardown);
}
