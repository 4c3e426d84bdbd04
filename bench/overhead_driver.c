/*
 * The strand side of bench/overhead: for each workload, a pool of W local
 * workers (started and connected before the clock runs, as multiprocessing's
 * Pool is), then submit -> every result durably recorded -> every result
 * fetched, timed end to end (noop_map as multiprocessing's Pool.map would
 * be given it: the whole input in one call). Prints one line per workload:
 *   NAME TASKS SECONDS
 *   strand-bench-overhead URL [WORKERS [BACKEND [WORKLOAD]]]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/tally.h"
#include "client/client.h"
#include "common/common.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		const char *function;
		int arg_ms;
		int tasks_per_worker; /* 1 s of ideal work per worker; or */
		int tasks; /* so many */
	} loads[] = {
	        {"sleep_1ms", "sleep", 1, 1000, 0},   {"sleep_10ms", "sleep", 10, 100, 0},
	        {"sleep_100ms", "sleep", 100, 10, 0}, {"noop_100k", "noop", 0, 0, 100000},
	        {"noop_map", "noop", 0, 0, 900000},
	};
	const char *url = argc > 1 ? argv[1] : NULL;
	int workers = argc > 2 ? atoi(argv[2]) : 2;
	const char *backend_name = argc > 3 ? argv[3] : "local";
	const char *only = argc > 4 ? argv[4] : NULL; /* one workload by name */
	json_t *spec = json_pack("{s:s}", "backend", backend_name);
	strand_client *c = strand_client_new(url);
	int code = 0;

	for (size_t l = 0; l < sizeof(loads) / sizeof(loads[0]); l++) {
		int n = loads[l].tasks_per_worker ? loads[l].tasks_per_worker * workers : loads[l].tasks;
		json_t *args = json_array();
		char pool[32], job[32];
		count got = {0};
		double t0, t1;

		if (only && strcmp(only, loads[l].name) != 0) {
			json_decref(args);
			continue;
		}
		for (int i = 0; i < n; i++)
			json_array_append_new(args, json_integer(loads[l].arg_ms ? loads[l].arg_ms : i));
		if (strand_pool_create(c, workers, spec, pool) != 0 ||
		    strand_pool_wait_ready(c, pool, workers, 60) != 0) {
			fprintf(stderr, "%s: %s\n", loads[l].name, strand_client_error(c));
			return 1;
		}
		t0 = cm_now_s();
		if (strand_map(c, pool, loads[l].function, args, 1, job) != 0 ||
		    strand_imap(c, job, 1, 100000, tally, &got) != 0) {
			fprintf(stderr, "%s: %s\n", loads[l].name, strand_client_error(c));
			code = 1;
		}
		t1 = cm_now_s();
		if (got.n != n || got.failed) {
			fprintf(stderr, "%s: %ld of %d results, %ld failed\n", loads[l].name, got.n, n, got.failed);
			code = 1;
		}
		printf("%s %d %.4f\n", loads[l].name, n, t1 - t0);
		fflush(stdout);
		strand_pool_terminate(c, pool);
		json_decref(args);
	}
	json_decref(spec);
	strand_client_free(c);
	return code;
}
