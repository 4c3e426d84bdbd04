/*
 * strand jobs: list, cancel, rm, failures.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"

static const char jobs_help[] = "usage: strand jobs COMMAND ...\n"
                                "  list [--pool P] [--state S] [--json]\n"
                                "                                jobs newest first: id, state, pool, done of total,\n"
                                "                                failed, function, when made; S: submitting,\n"
                                "                                running, done, cancelled; --json: a JSON line each\n"
                                "  cancel JOB                    cancels a running job (its unfinished tasks fail\n"
                                "                                `cancelled`); one that ended stays as it is\n"
                                "  rm JOB                        removes an ended job with its results\n"
                                "  failures JOB                  its failed tasks, one JSON line each\n";

static void job_row(json_t *j, void *ctx)
{
	char done[48];

	(void)ctx;
	snprintf(done, sizeof(done), "%lld/%lld", (long long)json_integer_value(json_object_get(j, "done")),
	         (long long)json_integer_value(json_object_get(j, "total")));
	printf("%-12s %-10s %-12s %-15s %-6lld %-20s %s\n", json_string_value(json_object_get(j, "id")) ?: "",
	       json_string_value(json_object_get(j, "state")) ?: "",
	       json_string_value(json_object_get(j, "pool")) ?: "", done,
	       (long long)json_integer_value(json_object_get(j, "failed")),
	       json_string_value(json_object_get(j, "function")) ?: "",
	       json_string_value(json_object_get(j, "created_at")) ?: "");
}

/* method on path, then the job's state as it answered. */
static int say_state(strand_client *c, const char *method, const char *path)
{
	json_t *reply = NULL;

	if (strand_request(c, method, path, NULL, &reply) != 200)
		return cli_refused(c);
	puts(json_string_value(json_object_get(reply, "state")));
	json_decref(reply);
	return 0;
}

int cmd_jobs(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"pool", required_argument, NULL, 'p'},
	        {"state", required_argument, NULL, 's'},
	        {"json", no_argument, NULL, 'j'},
	        {NULL, 0, NULL, 0},
	};
	const char *sub = argc > 1 ? argv[1] : "";
	char path[200];
	int opt;

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(jobs_help, sub[0] ? 0 : EXIT_USAGE);
	argc--;
	argv++;
	optind = 1;
	if (strcmp(sub, "list") == 0) {
		const char *pool = NULL, *state = NULL;
		int as_json = 0;
		while ((opt = cli_next_opt(argc, argv, "", opts)) != -1) {
			if (opt == 'j')
				as_json = 1;
			else if (opt == 'p' && cli_id_like(optarg))
				pool = optarg;
			else if (opt == 's' && cli_states_like(optarg))
				state = optarg;
			else
				return cli_usage(jobs_help, EXIT_USAGE);
		}
		if (optind != argc)
			return cli_usage(jobs_help, EXIT_USAGE);
		snprintf(path, sizeof(path), "/v1/jobs?limit=1000%s%.40s%s%.20s", pool ? "&pool=" : "",
		         pool ? pool : "", state ? "&state=" : "", state ? state : "");
		if (as_json)
			return cli_print_pages(c, path, "jobs");
		printf("%-12s %-10s %-12s %-15s %-6s %-20s %s\n", "ID", "STATE", "POOL", "DONE", "FAILED", "FUNCTION",
		       "CREATED");
		return cli_each_page(c, path, "jobs", job_row, NULL);
	}
	if (argc != 2 || !cli_id_like(argv[1]))
		return cli_usage(jobs_help, EXIT_USAGE);
	if (strcmp(sub, "cancel") == 0) {
		snprintf(path, sizeof(path), "/v1/jobs/%.40s/cancel", argv[1]);
		return say_state(c, "POST", path);
	}
	if (strcmp(sub, "rm") == 0) {
		json_t *reply = NULL;
		snprintf(path, sizeof(path), "/v1/jobs/%.40s", argv[1]);
		if (strand_request(c, "GET", path, NULL, &reply) != 200)
			return cli_refused(c);
		const char *state = json_string_value(json_object_get(reply, "state"));
		int runs = state && (strcmp(state, "running") == 0 || strcmp(state, "submitting") == 0);
		if (runs)
			fprintf(stderr, "strand: job %s is %s: `strand jobs cancel %s` first\n", argv[1], state,
			        argv[1]);
		json_decref(reply);
		return runs ? EXIT_REFUSED : say_state(c, "DELETE", path);
	}
	if (strcmp(sub, "failures") == 0) {
		snprintf(path, sizeof(path), "/v1/jobs/%.40s/failures?limit=1000", argv[1]);
		return cli_print_pages(c, path, "items");
	}
	return cli_usage(jobs_help, EXIT_USAGE);
}
