/*
 * strand queue (create, list, put, get) and strand pipe (create, list,
 * send, recv): the same items, by queue or by a pipe's end.
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

/* POSTs the values (JSON, or strings) to path, in order. */
static int put_items(strand_client *c, const char *path, int n, char **values)
{
	json_t *items = json_array(), *reply = NULL;

	for (int i = 0; i < n; i++)
		json_array_append_new(items, cli_value_of(values[i]));
	json_t *body = json_pack("{s:o}", "items", items);
	long status = strand_request(c, "POST", path, body, &reply);
	json_decref(body);
	json_decref(reply);
	return status == 201 ? 0 : cli_refused(c);
}

/* GETs items from path with [--max N] [--wait S] from opts, printing a
 * JSON line each. */
static int take_items(strand_client *c, const char *path, int n, char **opts, const char *help)
{
	long max = 1, wait = 0;
	char url[300];
	json_t *reply = NULL;

	for (int i = 0; i < n; i++) {
		if (strcmp(opts[i], "--max") == 0 && i + 1 < n)
			max = cli_whole_number(opts[++i], 1, 10000);
		else if (strcmp(opts[i], "--wait") == 0 && i + 1 < n)
			wait = cli_whole_number(opts[++i], 0, 300);
		else
			return cli_usage(help, EXIT_USAGE);
		if (max < 0 || wait < 0) {
			fprintf(stderr, "strand: --max takes 1 to 10000 items, --wait 0 to 300 seconds\n");
			return EXIT_USAGE;
		}
	}
	snprintf(url, sizeof(url), "%s?max=%ld&wait=%ld", path, max, wait);
	if (strand_request(c, "POST", url, NULL, &reply) != 200)
		return cli_refused(c);
	cli_print_lines(json_object_get(reply, "items"));
	json_decref(reply);
	return 0;
}

/* Every queue or pipe, a JSON line each. */
static int list(strand_client *c, int pipes)
{
	json_t *reply = NULL;

	if (strand_request(c, "GET", pipes ? "/v1/pipes" : "/v1/queues", NULL, &reply) != 200)
		return cli_refused(c);
	cli_print_lines(json_object_get(reply, pipes ? "pipes" : "queues"));
	json_decref(reply);
	return 0;
}

int cmd_queue(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[200];

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(queue_help, sub[0] ? 0 : EXIT_USAGE);
	if (strcmp(sub, "list") == 0 && (argc == 2 || (argc == 3 && strcmp(argv[2], "--pipes") == 0)))
		return list(c, argc == 3);
	if (strcmp(sub, "create") == 0 && argc == 2) {
		if (strand_request(c, "POST", "/v1/queues", NULL, &reply) != 201)
			return cli_refused(c);
		puts(json_string_value(json_object_get(reply, "id")));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "put") == 0 && argc >= 4 && cli_id_like(argv[2])) {
		snprintf(path, sizeof(path), "/v1/queues/%s/items", argv[2]);
		return put_items(c, path, argc - 3, argv + 3);
	}
	if (strcmp(sub, "get") == 0 && argc >= 3 && cli_id_like(argv[2])) {
		snprintf(path, sizeof(path), "/v1/queues/%s/take", argv[2]);
		return take_items(c, path, argc - 3, argv + 3, queue_help);
	}
	return cli_usage(queue_help, EXIT_USAGE);
}

static const char pipe_help[] = "usage: strand pipe COMMAND ...\n"
                                "  create [--simplex]             creates a pipe (duplex unless --simplex: end 0\n"
                                "                                 sends, end 1 receives); prints its id\n"
                                "  list                           every pipe, newest first, one JSON line each\n"
                                "  send PIPE END VALUE...         sends the VALUEs (JSON, or strings) from END (0, 1)\n"
                                "  recv PIPE END [--max N] [--wait S]\n"
                                "                                 receives up to N items (1) at END, waiting up to S\n"
                                "                                 seconds for the first; one JSON line each\n";

/* "0" or "1": a pipe's end; else -1. */
static int end_of(const char *s)
{
	return strcmp(s, "0") == 0 ? 0 : strcmp(s, "1") == 0 ? 1 : -1;
}

int cmd_pipe(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	char path[200], id[32];

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(pipe_help, sub[0] ? 0 : EXIT_USAGE);
	if (strcmp(sub, "list") == 0 && argc == 2)
		return list(c, 1);
	if (strcmp(sub, "create") == 0 && (argc == 2 || (argc == 3 && strcmp(argv[2], "--simplex") == 0))) {
		if (strand_pipe_create(c, argc == 2, id) != 0)
			return cli_refused(c);
		puts(id);
		return 0;
	}
	if (argc >= 4 && cli_id_like(argv[2]) && end_of(argv[3]) >= 0) {
		int end = end_of(argv[3]);
		if (strcmp(sub, "send") == 0 && argc >= 5) {
			snprintf(path, sizeof(path), "/v1/pipes/%s/ends/%d/send", argv[2], end);
			return put_items(c, path, argc - 4, argv + 4);
		}
		if (strcmp(sub, "recv") == 0) {
			snprintf(path, sizeof(path), "/v1/pipes/%s/ends/%d/recv", argv[2], end);
			return take_items(c, path, argc - 4, argv + 4, pipe_help);
		}
	}
	return cli_usage(pipe_help, EXIT_USAGE);
}
