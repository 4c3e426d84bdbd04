/*
 * Backend calls run off the engine thread. A Docker daemon that accepts and
 * never answers (fake_hung_docker_daemon: a unix socket in this process,
 * the one part of Docker that cannot misbehave on purpose here) holds up
 * only the docker pool's workers: the pool create answers at once, the API
 * and a local pool keep working, and after --backend-timeout the docker
 * pool fails with the daemon's words. Bounded: the fake daemon holds at
 * most a few connections and stops with the test.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/harness.h"

typedef struct fake_hung_docker_daemon {
	char path[108];
	int listen_fd;
	int held[64]; /* accepted, read from, never answered */
	int nheld;
	int stop;
	pthread_t thread;
} fake_hung_docker_daemon;

static void *hung_daemon_main(void *arg)
{
	fake_hung_docker_daemon *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = {.fd = d->listen_fd, .events = POLLIN};
		if (poll(&p, 1, 50) == 1 && d->nheld < 64) {
			int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				d->held[d->nheld++] = fd;
		}
	}
	return NULL;
}

static void hung_daemon_start(fake_hung_docker_daemon *d, const char *dir)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s/hung-docker.sock", dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", d->path);
	assert_true((d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(d->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(d->listen_fd, 16), 0);
	assert_int_equal(pthread_create(&d->thread, NULL, hung_daemon_main, d), 0);
}

static void hung_daemon_stop(fake_hung_docker_daemon *d)
{
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->thread, NULL);
	for (int i = 0; i < d->nheld; i++)
		close(d->held[i]);
	close(d->listen_fd);
	unlink(d->path);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void test_hung_docker_daemon_stalls_only_its_pool(void **state)
{
	static char sock_arg[200];
	static const char *args[] = {"--docker-socket",    sock_arg, "--backend-timeout", "3", "--image",
	                             "strand-worker:test", NULL};
	enum { GETS = 50 };
	fake_hung_docker_daemon d;
	double lat[GETS];
	char path[128], dir[] = "/tmp/strand-hung-XXXXXX";
	gateway g;
	response r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	hung_daemon_start(&d, dir);
	snprintf(sock_arg, sizeof(sock_arg), "%s", d.path);
	gateway_start(&g, args);
	char *local = pool_create(&g, 1);
	pool_wait_connected(&g, local, 1);

	/* Answered at once: its four workers wait for the daemon. */
	r = http(&g, "POST", "/v1/pools", "{\"backend\":\"docker\",\"processes\":4,\"image\":\"strand-worker:test\"}",
	         NULL);
	assert_int_equal(r.status, 201);
	char *docker_pool = strdup(json_string_value(json_object_get(r.json, "id")));
	json_t *w;
	size_t k;
	assert_int_equal(json_array_size(json_object_get(r.json, "workers")), 4);
	json_array_foreach (json_object_get(r.json, "workers"), k, w)
		assert_string_equal(json_string_value(json_object_get(w, "state")), "starting");
	response_free(&r);

	/* Meanwhile the API answers, and the local pool maps. */
	for (int i = 0; i < GETS; i++) {
		double t0 = cm_now_s();
		r = http(&g, "GET", "/v1/pools", NULL, NULL);
		lat[i] = 1000 * (cm_now_s() - t0);
		assert_int_equal(r.status, 200);
		response_free(&r);
	}
	qsort(lat, GETS, sizeof(double), cmp_double);
	print_message("GET /v1/pools while the docker daemon hangs: median %.1f ms, max %.1f ms\n", lat[GETS / 2],
	              lat[GETS - 1]);
	json_t *args_json = json_array();
	for (int i = 0; i < 100; i++)
		json_array_append_new(args_json, json_integer(i));
	char *job = job_submit(&g, local, json_pack("{s:s, s:o}", "function", "echo", "args", args_json));
	json_t *items = job_results(&g, job, "input", 100);
	assert_each_index_once(items, 100);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(items, i), "value")), (json_int_t)i);
	json_decref(items);

	/* After the timeout the docker pool fails, saying why. */
	snprintf(path, sizeof(path), "/v1/pools/%s", docker_pool);
	const char *state_now = "";
	json_t *p = NULL;
	for (int i = 0; i < 300; i++) {
		json_decref(p);
		p = pool_get(&g, docker_pool);
		state_now = json_string_value(json_object_get(p, "state"));
		if (strcmp(state_now, "failed") == 0)
			break;
		usleep(50000);
	}
	assert_string_equal(state_now, "failed");
	const char *reason = json_string_value(json_object_get(p, "reason"));
	print_message("the docker pool failed: %s\n", reason);
	assert_non_null(strstr(reason, "docker backend cannot start a worker"));
	assert_non_null(strstr(reason, "Timeout"));
	json_decref(p);
	/* The local pool is untouched. */
	p = pool_get(&g, local);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "active");
	json_decref(p);

	int status = gateway_stop(&g);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	hung_daemon_stop(&d);
	rmdir(dir);
	free(job);
	free(docker_pool);
	free(local);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hung_docker_daemon_stalls_only_its_pool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
