/*
 * bench/recovery: what failures cost.
 *  1. A map in flight, the gateway SIGKILLed and started again on the same
 *     database: time until it answers, and until the first new result.
 *  2. Throughput of the bench/overhead workloads undisturbed, and while a
 *     helper thread SIGKILLs a random worker every 200 ms.
 *   strand-bench-recovery BIN_DIR PORT
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/tally.h"
#include "client/client.h"
#include "common/common.h"

static char gateway_bin[1024], db[256], http[64], hub[64], url[96];

static pid_t gateway_start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		execl(gateway_bin, gateway_bin, "--db", db, "--http", http, "--hub", hub, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void wait_healthy(strand_client *c)
{
	for (int i = 0; i < 2000; i++) {
		json_t *r;
		long s = strand_request(c, "GET", "/healthz", NULL, &r);
		json_decref(r);
		if (s == 200)
			return;
		usleep(2000);
	}
	fprintf(stderr, "gateway did not come up\n");
	exit(1);
}

static json_int_t job_done(strand_client *c, const char *job)
{
	char path[96];
	json_t *r;
	json_int_t done = -1;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if (strand_request(c, "GET", path, NULL, &r) == 200)
		done = json_integer_value(json_object_get(r, "done"));
	json_decref(r);
	return done;
}

typedef struct killer {
	const char *pool;
	volatile int stop;
	int kills;
} killer;

static void *kill_loop(void *arg)
{
	killer *k = arg;
	strand_client *c = strand_client_new(url);
	char path[96];

	snprintf(path, sizeof(path), "/v1/pools/%s", k->pool);
	while (!k->stop) {
		json_t *r, *w, *live = json_array();
		size_t i;
		usleep(200000);
		if (k->stop || strand_request(c, "GET", path, NULL, &r) != 200)
			break;
		json_array_foreach (json_object_get(r, "workers"), i, w)
			if (strcmp(json_string_value(json_object_get(w, "state")), "exited") != 0)
				json_array_append(live, w);
		if (json_array_size(live)) {
			json_t *v = json_array_get(live, (size_t)rand() % json_array_size(live));
			if (kill((pid_t)json_integer_value(json_object_get(v, "pid")), SIGKILL) == 0)
				k->kills++;
		}
		json_decref(live);
		json_decref(r);
	}
	strand_client_free(c);
	return NULL;
}

/* One map on a fresh pool of 2; returns tasks per second. */
static double run_map(strand_client *c, const char *function, json_t *args, int chaos, int *kills)
{
	char pool[32], job[32];
	json_t *spec = json_pack("{s:i}", "max_attempts", 50);
	killer k = {0};
	pthread_t t;
	count got = {0};
	double t0, t1;

	if (strand_pool_create(c, 2, spec, pool) != 0 || strand_pool_wait_ready(c, pool, 2, 30) != 0) {
		fprintf(stderr, "%s\n", strand_client_error(c));
		exit(1);
	}
	json_decref(spec);
	k.pool = pool;
	t0 = cm_now_s();
	if (strand_map(c, pool, function, args, 1, job) != 0) {
		fprintf(stderr, "%s\n", strand_client_error(c));
		exit(1);
	}
	if (chaos)
		pthread_create(&t, NULL, kill_loop, &k);
	strand_imap(c, job, 1, 100000, tally, &got);
	t1 = cm_now_s();
	if (chaos) {
		k.stop = 1;
		pthread_join(t, NULL);
		*kills = k.kills;
	}
	if (got.n != (long)json_array_size(args) || got.failed) {
		fprintf(stderr, "%s: %ld results, %ld failed\n", function, got.n, got.failed);
		exit(1);
	}
	strand_pool_terminate(c, pool);
	return (double)got.n / (t1 - t0);
}

int main(int argc, char **argv)
{
	char pool[32], job[32];
	strand_client *c;
	pid_t gw;

	if (argc < 3) {
		fprintf(stderr, "usage: strand-bench-recovery BIN_DIR PORT\n");
		return 64;
	}
	snprintf(gateway_bin, sizeof(gateway_bin), "%s/strand-gateway", argv[1]);
	snprintf(db, sizeof(db), "/tmp/strand-bench-recovery-%d.db", (int)getpid());
	snprintf(http, sizeof(http), "127.0.0.1:%s", argv[2]);
	snprintf(hub, sizeof(hub), "tcp://127.0.0.1:%d", atoi(argv[2]) + 1);
	snprintf(url, sizeof(url), "http://%s", http);
	srand((unsigned)getpid());
	/* One token for the gateway it starts (and restarts) and for itself. */
	char token[65];
	cm_random_hex(token, 32);
	setenv("STRAND_TOKEN", token, 1);
	c = strand_client_new(url);
	gw = gateway_start();
	wait_healthy(c);

	/* 1. Restart while a map is in flight. */
	json_t *args = json_array();
	for (int i = 0; i < 20000; i++)
		json_array_append_new(args, json_real(0.5));
	if (strand_pool_create(c, 2, NULL, pool) != 0 || strand_pool_wait_ready(c, pool, 2, 30) != 0 ||
	    strand_map(c, pool, "sleep", args, 1, job) != 0) {
		fprintf(stderr, "%s\n", strand_client_error(c));
		return 1;
	}
	json_decref(args);
	usleep(1000000);
	kill(gw, SIGKILL);
	waitpid(gw, NULL, 0);
	double t0 = cm_now_s();
	gw = gateway_start();
	wait_healthy(c);
	double t_up = cm_now_s();
	json_int_t before = job_done(c, job);
	while (job_done(c, job) <= before)
		usleep(500);
	double t_first = cm_now_s();
	printf("restart: gateway answering after %.1f ms; first new result after %.1f ms (%lld results were "
	       "already stored)\n",
	       (t_up - t0) * 1000, (t_first - t0) * 1000, (long long)before);
	strand_pool_terminate(c, pool);

	/* 2. Throughput undisturbed and under worker kills. */
	printf("%-12s %8s %14s %16s %8s %7s\n", "workload", "tasks", "undisturbed/s", "kill-every-200ms/s", "ratio",
	       "kills");
	struct {
		const char *name, *function;
		int n;
		double arg;
	} loads[] = {{"noop_100k", "noop", 100000, 0}, {"sleep_1ms", "sleep", 4000, 1}};
	for (size_t l = 0; l < 2; l++) {
		json_t *a = json_array();
		int kills = 0;
		for (int i = 0; i < loads[l].n; i++)
			json_array_append_new(a, loads[l].arg ? json_real(loads[l].arg) : json_integer(i));
		double calm = run_map(c, loads[l].function, a, 0, NULL);
		double chaos = run_map(c, loads[l].function, a, 1, &kills);
		printf("%-12s %8d %14.0f %18.0f %7.2fx %7d\n", loads[l].name, loads[l].n, calm, chaos, chaos / calm,
		       kills);
		json_decref(a);
	}
	kill(gw, SIGTERM);
	waitpid(gw, NULL, 0);
	strand_client_free(c);
	static const char *const suffixes[] = {"", "-wal", "-shm"};
	for (int i = 0; i < 3; i++) {
		char path[300];
		snprintf(path, sizeof(path), "%.250s%s", db, suffixes[i]);
		unlink(path);
	}
	char logs[300];
	snprintf(logs, sizeof(logs), "%.250s.logs", db);
	rmdir(logs); /* the gateway keeps process output there: none in this bench */
	return 0;
}
