/*
 * strand queue: create, list, put, get.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"

static const char queue_help[] =
        "usage: strand queue COMMAND ...\n"
        "  create                        creates a queue; prints its id\n"
        "  list [--pipes]                every queue (or pipe), newest first, one JSON line each\n"
        "  put QUEUE VALUE...            puts the VALUEs (JSON, or strings), in order\n"
        "  get QUEUE [--max N] [--wait S]\n"
        "                                takes up to N items (1), waiting up to S\n"
        "                                seconds for the first; one JSON line each\n";

int cmd_queue(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[200];

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(queue_help, sub[0] ? 0 : EXIT_USAGE);
	if (strcmp(sub, "list") == 0 && (argc == 2 || (argc == 3 && strcmp(argv[2], "--pipes") == 0))) {
		int pipes = argc == 3;
		if (strand_request(c, "GET", pipes ? "/v1/pipes" : "/v1/queues", NULL, &reply) != 200)
			return cli_refused(c);
		cli_print_lines(json_object_get(reply, pipes ? "pipes" : "queues"));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "create") == 0 && argc == 2) {
		if (strand_request(c, "POST", "/v1/queues", NULL, &reply) != 201)
			return cli_refused(c);
		puts(json_string_value(json_object_get(reply, "id")));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "put") == 0 && argc >= 4) {
		json_t *items = json_array();
		for (int i = 3; i < argc; i++)
			json_array_append_new(items, cli_value_of(argv[i]));
		json_t *body = json_pack("{s:o}", "items", items);
		snprintf(path, sizeof(path), "/v1/queues/%s/items", argv[2]);
		long status = strand_request(c, "POST", path, body, &reply);
		json_decref(body);
		json_decref(reply);
		return status == 201 ? 0 : cli_refused(c);
	}
	if (strcmp(sub, "get") == 0 && argc >= 3) {
		long max = 1, wait = 0;
		for (int i = 3; i < argc; i++) {
			if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
				max = cli_whole_number(argv[++i], 1, 10000);
			else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc)
				wait = cli_whole_number(argv[++i], 0, 300);
			else
				return cli_usage(queue_help, EXIT_USAGE);
			if (max < 0 || wait < 0) {
				fprintf(stderr, "strand: --max takes 1 to 10000 items, --wait 0 to 300 seconds\n");
				return EXIT_USAGE;
			}
		}
		snprintf(path, sizeof(path), "/v1/queues/%s/items?max=%ld&wait=%ld", argv[2], max, wait);
		if (strand_request(c, "GET", path, NULL, &reply) != 200)
			return cli_refused(c);
		cli_print_lines(json_object_get(reply, "items"));
		json_decref(reply);
		return 0;
	}
	return cli_usage(queue_help, EXIT_USAGE);
}
