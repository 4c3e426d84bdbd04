/*
 * The docker backend against a real dockerd (tests/run.sh starts one): the
 * images are built first (deploy/build-images.sh, tag "test"), then a map on
 * a docker pool, resource limits seen by `docker inspect`, a container
 * killed with `docker kill` mid-map, the gateway SIGKILLed and its
 * containers re-adopted, a pool resized and autoscaled (containers started
 * and retired, none while idle), the daemon's refusals surfaced as a failed pool,
 * and nothing left behind once a pool is deleted. Without a reachable
 * daemon every test skips and says so.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/harness.h"

static int have_docker;
/* Images of strand's tests: some fail on purpose. */
static const char *const image_args[] = {"--image", "strand-worker:test", "--allow-images", "strand-*", NULL};

/* Runs a shell command and returns its first line of output (static). */
static const char *sh(const char *fmt, ...)
{
	static char line[4096];
	char cmd[2048];
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	line[0] = '\0';
	p = popen(cmd, "r");
	if (!p)
		return line;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	while (fgetc(p) != EOF)
		;
	pclose(p);
	return line;
}

static int group_setup(void **state)
{
	(void)state;
	if (system("docker info >/dev/null 2>&1") != 0) {
		print_message(
		        "no Docker daemon answers (tests/run.sh starts one as root): skipping the docker tests\n");
		return 0;
	}
	if (system(STRAND_SOURCE_DIR "/deploy/build-images.sh " STRAND_BUILD_DIR " test") != 0 ||
	    system("printf 'FROM strand-worker:test\\nENTRYPOINT [\"/usr/bin/strand-worker\", \"--no-such-flag\"]\\n' "
	           "| "
	           "docker build -q -t strand-worker:broken - >/dev/null 2>&1") != 0) {
		print_message("could not build the images\n");
		return -1;
	}
	have_docker = 1;
	return 0;
}

static void need_docker(void)
{
	if (!have_docker)
		skip();
}

static int containers_of(const char *pool)
{
	return atoi(sh("docker ps -aq --filter label=strand.pool=%s | wc -l", pool));
}

/* Waits (up to 60 s) until the pool has n containers. */
static void wait_containers(const char *pool, int n)
{
	for (int i = 0; i < 600 && containers_of(pool) != n; i++)
		usleep(100 * 1000);
	assert_int_equal(containers_of(pool), n);
}

static json_t *range(int n, double v)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, v > 0 ? json_real(v) : json_integer(i));
	return a;
}

static void test_map_limits_and_cleanup(void **state)
{
	gateway g;
	char path[128];

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	char *pool = pool_create_spec(
	        &g, "{\"processes\":2,\"backend\":\"docker\",\"resources\":{\"cpu\":0.5,\"memory_mb\":200}}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(containers_of(pool), 2);
	/* The limits as the daemon applied them. */
	const char *limits = sh("docker inspect --format '{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} "
	                        "{{.HostConfig.NetworkMode}} {{.HostConfig.SecurityOpt}} {{.HostConfig.CapDrop}} "
	                        "{{.Config.User}} {{index .Config.Labels \"strand.pool\"}}' "
	                        "$(docker ps -q --filter label=strand.pool=%s | head -1)",
	                        pool);
	char want[192];
	/* No capabilities, none to gain (setuid), not root. */
	snprintf(want, sizeof(want), "500000000 209715200 host [no-new-privileges] [ALL] 65534:65534 %s", pool);
	assert_string_equal(limits, want);

	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "echo", "args", range(2000, 0)));
	json_t *items = job_results(&g, job, "input", 5000);
	assert_each_index_once(items, 2000);
	json_decref(items);
	free(job);
	job = job_submit(&g, pool, json_pack("{s:s, s:[i,i]}", "function", "pi.so:pi_hits", "args", 10000, 10000));
	items = job_results(&g, job, "input", 10);
	assert_each_index_once(items, 2);
	json_decref(items);
	free(job);

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_int_equal(containers_of(pool), 0); /* nothing left, not even stopped ones */
	free(pool);
	gateway_cleanup(&g);
}

static void test_docker_kill_is_a_crash(void **state)
{
	gateway g;

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	char *pool = pool_create_spec(&g, "{\"processes\":2,\"backend\":\"docker\"}");
	pool_wait_connected(&g, pool, 2);
	/* Containers are named strand-<pool>-<n>, and shown by that name. */
	char names[200];
	snprintf(names, sizeof(names), "strand-%s-1 strand-%s-2 ", pool, pool);
	char running[200];
	snprintf(running, sizeof(running), "%s",
	         sh("docker ps --filter label=strand.pool=%s --format '{{.Names}}' | sort | tr '\\n' ' '", pool));
	if (strcmp(running, names) != 0) {
		/* Both connected, yet not both running: say what Docker and the
		 * gateway saw of them. */
		json_t *seen = pool_get(&g, pool);
		char *text = json_dumps(seen, JSON_INDENT(1));
		fprintf(stderr, "running: %s\nall: %s\npool: %s\n", running,
		        sh("docker ps -a --filter label=strand.pool=%s --format '{{.Names}} {{.Status}}' | tr '\\n' "
		           "';'",
		           pool),
		        text ? text : "?");
		free(text);
		json_decref(seen);
		gateway_log_print_tail(&g);
		fail_msg("containers running: \"%s\", not \"%s\"", running, names);
	}
	json_t *view = pool_get(&g, pool), *vw;
	size_t k;
	json_array_foreach (json_object_get(view, "workers"), k, vw)
		assert_non_null(strstr(names, json_string_value(json_object_get(vw, "container"))));
	json_decref(view);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", range(600, 3)));
	assert_true(job_wait_done(&g, job, 20) < 600); /* well under way, not finished */
	/* docker kill: SIGKILL, the container's process gone at once. */
	assert_true(strlen(sh("docker kill $(docker ps -q --filter label=strand.pool=%s | head -1)", pool)) >= 12);
	json_t *items = job_results(&g, job, "completion", 5000);
	assert_each_index_once(items, 600);
	json_decref(items);
	json_t *p = pool_get(&g, pool);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_started")), 3);
	/* The dead one is shown with its code and what its container last
	 * wrote (its own log lines), also after a restart. */
	char words[600] = "", mine[128];
	json_t *w;
	size_t i;
	json_array_foreach (json_object_get(p, "workers"), i, w)
		if (strcmp(json_string_value(json_object_get(w, "state")), "exited") == 0) {
			assert_int_equal(json_integer_value(json_object_get(w, "exit_code")), 137);
			snprintf(words, sizeof(words), "%s", json_string_value(json_object_get(w, "last_words")) ?: "");
			snprintf(mine, sizeof(mine), "worker %s of pool %s",
			         json_string_value(json_object_get(w, "id")), pool);
		}
	if (!strstr(words, mine))
		fail_msg("last words [%s] do not say [%s]", words, mine);
	json_decref(p);
	assert_int_equal(containers_of(pool), 2); /* the dead one removed, its replacement running */
	assert_int_equal(gateway_stop(&g), 0);
	gateway_restart(&g);
	p = pool_get(&g, pool);
	int kept = 0;
	json_array_foreach (json_object_get(p, "workers"), i, w)
		kept |= strcmp(json_string_value(json_object_get(w, "last_words")) ?: "", words) == 0;
	assert_true(kept);
	json_decref(p);
	free(job);
	gateway_cleanup(&g);
	assert_int_equal(containers_of(pool), 0); /* a stopped gateway leaves none */
	free(pool);
}

static void test_resize_and_autoscale_containers(void **state)
{
	gateway g;
	char path[128];
	response r;

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	char *pool = pool_create_spec(&g, "{\"processes\":1,\"backend\":\"docker\"}");
	pool_wait_connected(&g, pool, 1);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", range(900, 3)));
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	r = http(&g, "PATCH", path, "{\"processes\":3}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	wait_containers(pool, 3);
	r = http(&g, "PATCH", path, "{\"processes\":1}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	json_t *items = job_results(&g, job, "completion", 5000);
	assert_each_index_once(items, 900);
	json_decref(items);
	free(job);
	wait_containers(pool, 1); /* the retired ones ended and were removed */
	json_t *p = pool_get(&g, pool);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")), 0);
	json_decref(p);

	/* Autoscale: no container while idle, some while there is work. */
	r = http(&g, "PATCH", path, "{\"autoscale\":{\"min\":0,\"max\":2,\"target_s\":1,\"idle_s\":1}}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	wait_containers(pool, 0);
	job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", range(300, 5)));
	items = job_results(&g, job, "completion", 5000);
	assert_each_index_once(items, 300);
	json_decref(items);
	free(job);
	wait_containers(pool, 0);
	free(pool);
	gateway_cleanup(&g);
}

static void test_gateway_restart_readopts_containers(void **state)
{
	gateway g;

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	char *pool = pool_create_spec(&g, "{\"processes\":2,\"backend\":\"docker\"}");
	pool_wait_connected(&g, pool, 2);
	/* Two workers connected, and no container of a third: under load one
	 * may be late to connect, be replaced, and end after. */
	wait_containers(pool, 2);
	char before[256];
	snprintf(before, sizeof(before), "%s",
	         sh("docker ps -q --filter label=strand.pool=%s | sort | tr '\\n' ' '", pool));
	assert_int_equal(strlen(before), 2 * 13); /* two running: twelve digits and a space each */
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", range(3000, 0.5)));
	assert_true(job_wait_done(&g, job, 100) < 3000);
	gateway_kill(&g);
	gateway_restart(&g);
	json_t *items = job_results(&g, job, "completion", 5000);
	assert_each_index_once(items, 3000);
	json_decref(items);
	/* The same containers did the rest: found by label, adopted. */
	assert_string_equal(sh("docker ps -q --filter label=strand.pool=%s | sort | tr '\\n' ' '", pool), before);
	free(job);
	gateway_cleanup(&g);
	assert_int_equal(containers_of(pool), 0); /* a stopped gateway leaves none */
	free(pool);
}

/* Waits for the pool to fail and returns its reason (new string). */
static char *failure_of(const gateway *g, const char *pool)
{
	for (int i = 0; i < 300; i++) {
		json_t *p = pool_get(g, pool);
		if (strcmp(json_string_value(json_object_get(p, "state")), "failed") == 0) {
			char *why = strdup(json_string_value(json_object_get(p, "reason")) ?: "");
			json_decref(p);
			return why;
		}
		json_decref(p);
		usleep(100000);
	}
	gateway_log_print_tail(g);
	fail_msg("pool %s did not fail", pool);
	return NULL;
}

static void expect_failure(const gateway *g, const char *spec, const char *part)
{
	char *pool = pool_create_spec(g, spec);
	char *why = failure_of(g, pool);

	if (!strstr(why, part))
		fail_msg("reason '%s' lacks '%s'", why, part);
	/* The last worker's container is removed by the backend's executor
	 * after the engine heard it end, which may be after the pool failed. */
	wait_containers(pool, 0);
	/* A job on a failed pool is refused, not left hanging. */
	char path[128];
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	response r = http(g, "POST", path, "{\"function\":\"echo\",\"args\":[1]}", NULL);
	assert_int_equal(r.status, 409);
	response_free(&r);
	free(why);
	free(pool);
}

static void test_daemon_refusals_fail_the_pool(void **state)
{
	gateway g;

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	expect_failure(&g, "{\"processes\":1,\"backend\":\"docker\",\"image\":\"strand-no-such-image:1\"}",
	               "not on this Docker host");
	expect_failure(&g, "{\"processes\":1,\"backend\":\"docker\",\"resources\":{\"gpu\":1}}", "nvidia");
	expect_failure(&g, "{\"processes\":1,\"backend\":\"docker\",\"image\":\"strand-worker:broken\"}",
	               "no-such-flag");
	gateway_cleanup(&g);

	/* A daemon that is not there. */
	static const char *const no_daemon[] = {"--docker-socket", "/nonexistent/docker.sock", NULL};
	gateway_start(&g, no_daemon);
	char *pool = pool_create_spec(&g, "{\"processes\":1,\"backend\":\"docker\"}");
	char *why = failure_of(&g, pool);
	assert_non_null(strstr(why, "cannot reach the Docker daemon at /nonexistent/docker.sock"));
	free(why);
	free(pool);
	gateway_cleanup(&g);
}

static void test_manager_and_ring_in_containers(void **state)
{
	gateway g;
	char path[160];

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	/* A manager hosted in a container keeps its state between calls. */
	response r = http(&g, "POST", "/v1/managers", "{\"type\":\"counter\",\"backend\":\"docker\"}", NULL);
	assert_int_equal(r.status, 201);
	char *m = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/managers/%s/calls", m);
	for (int i = 0; i < 2; i++) {
		r = http(&g, "POST", path, "{\"method\":\"add\",\"args\":[5]}", NULL);
		assert_int_equal(r.status, 202);
		char get[200];
		snprintf(get, sizeof(get), "%s/%s?wait=60", path, json_string_value(json_object_get(r.json, "id")));
		response_free(&r);
		r = http(&g, "GET", get, NULL, NULL);
		assert_int_equal(json_integer_value(json_object_get(r.json, "result")), 5 * (i + 1));
		response_free(&r);
	}
	assert_int_equal(containers_of(m), 1);
	snprintf(path, sizeof(path), "/v1/managers/%s", m);
	r = http(&g, "DELETE", path, NULL, NULL);
	response_free(&r);
	assert_int_equal(containers_of(m), 0);
	free(m);

	/* A ring of two containers, each given its rank. */
	r = http(&g, "POST", "/v1/rings", "{\"size\":2,\"backend\":\"docker\",\"function\":\"echo\",\"arg\":1}", NULL);
	assert_int_equal(r.status, 201);
	snprintf(path, sizeof(path), "/v1/rings/%s?wait=60", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	r = http(&g, "GET", path, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "done");
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(json_object_get(r.json, "members"), 1), "backend")),
	        "docker");
	response_free(&r);
	gateway_cleanup(&g);
}

/* A function run once in a container: its output is kept after the
 * container is removed. */
static void test_function_process_in_a_container(void **state)
{
	gateway g;
	char *id;

	(void)state;
	need_docker();
	gateway_start(&g, image_args);
	json_t *p = process_run(&g,
	                        "{\"function\":\"pi.so:pi_hits\",\"arg\":100000,\"backend\":\"docker\","
	                        "\"resources\":{\"memory_mb\":64}}",
	                        &id);
	assert_string_equal(json_string_value(json_object_get(p, "backend")), "docker");
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	char *out = process_logs(&g, id);
	assert_true(atol(out) > 77000 && atol(out) < 80000);
	free(out);
	assert_string_equal(sh("docker ps -aq --filter label=strand.process=%s", id), "");
	free(id);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_map_limits_and_cleanup),
	        cmocka_unit_test(test_docker_kill_is_a_crash),
	        cmocka_unit_test(test_resize_and_autoscale_containers),
	        cmocka_unit_test(test_gateway_restart_readopts_containers),
	        cmocka_unit_test(test_daemon_refusals_fail_the_pool),
	        cmocka_unit_test(test_manager_and_ring_in_containers),
	        cmocka_unit_test(test_function_process_in_a_container),
	};
	int failed = cmocka_run_group_tests_name("docker", tests, group_setup, NULL);
	/* Without a Docker engine every test skipped: ctest shows it skipped. */
	return failed ? failed : have_docker ? 0 : 77;
}
