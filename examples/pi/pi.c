/*
 * examples/pi in C: the seeds' Monte Carlo estimate of pi through strand,
 * with the sampling done by a C plugin (pi.so:pi_hits, built from
 * pi_plugin.c) that strand-worker loads with dlopen.
 *
 *   strand-example-pi [--url URL] [--samples N] [--tasks T] [--processes P]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/client.h"

typedef struct tally {
	long long hits;
	int failed;
} tally;

static int add(void *ctx, json_int_t index, int ok, json_t *value)
{
	tally *t = ctx;

	if (!ok) {
		fprintf(stderr, "task %lld failed: %s\n", (long long)index, json_string_value(value));
		t->failed++;
		return 1;
	}
	t->hits += json_integer_value(value);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"url", required_argument, NULL, 'u'},   {"samples", required_argument, NULL, 'n'},
	        {"tasks", required_argument, NULL, 't'}, {"processes", required_argument, NULL, 'p'},
	        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	const char *url = NULL;
	long long samples = 1000000, tasks = 100;
	int processes = 4;
	char pool[32], job[32];
	tally t = {0};
	int code = 1;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u': url = optarg; break;
		case 'n': samples = atoll(optarg); break;
		case 't': tasks = atoll(optarg); break;
		case 'p': processes = atoi(optarg); break;
		case 'h':
			printf("usage: strand-example-pi [--url URL] [--samples N] [--tasks T] [--processes P]\n");
			return 0;
		default: return 64;
		}
	}
	if (tasks < 1 || samples < tasks || processes < 1) {
		fprintf(stderr, "need samples >= tasks >= 1 and processes >= 1\n");
		return 64;
	}
	strand_client *sc = strand_client_new(url);
	json_t *args = json_array();
	for (long long i = 0; i < tasks; i++)
		json_array_append_new(args, json_integer(samples / tasks));
	if (strand_pool_create(sc, processes, NULL, pool) != 0)
		goto out;
	if (strand_map(sc, pool, "pi.so:pi_hits", args, 1, job) == 0 && strand_imap(sc, job, 0, 10000, add, &t) == 0 &&
	    !t.failed) {
		printf("Pi is roughly %f\n", 4.0 * (double)t.hits / (double)(samples / tasks * tasks));
		code = 0;
	}
	strand_pool_terminate(sc, pool);
out:
	if (code)
		fprintf(stderr, "strand-example-pi: %s\n", strand_client_error(sc));
	json_decref(args);
	strand_client_free(sc);
	return code;
}
