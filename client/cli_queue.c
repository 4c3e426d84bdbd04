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
        "  list [--pipes] [--json]       every queue (or pipe), newest first: id, items (each\n"
        "                                way of a pipe), waiting readers, when made; --json: a\n"
        "                                JSON line each\n"
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

static void queue_row(json_t *q, void *ctx)
{
	(void)ctx;
	printf("%-14s %-8lld %-8lld %s\n", json_string_value(json_object_get(q, "id")) ?: "",
	       (long long)json_integer_value(json_object_get(q, "size")),
	       (long long)json_integer_value(json_object_get(q, "waiting_readers")),
	       json_string_value(json_object_get(q, "created_at")) ?: "");
}

static void pipe_row(json_t *p, void *ctx)
{
	json_t *ways = json_object_get(p, "directions"), *back = json_array_get(ways, 1);
	char back_items[24] = "-";

	(void)ctx;
	if (back)
		snprintf(back_items, sizeof(back_items), "%lld",
		         (long long)json_integer_value(json_object_get(back, "size")));
	printf("%-14s %-8s %-8lld %-8s %lld\n", json_string_value(json_object_get(p, "id")) ?: "",
	       json_is_true(json_object_get(p, "duplex")) ? "duplex" : "simplex",
	       (long long)json_integer_value(json_object_get(json_array_get(ways, 0), "size")), back_items,
	       (long long)json_integer_value(json_object_get(json_array_get(ways, 0), "waiting_readers")) +
	               (long long)json_integer_value(json_object_get(back, "waiting_readers")));
}

/* Every queue or pipe: a table, or a JSON line each. */
static int list(strand_client *c, int pipes, int as_json)
{
	const char *path = pipes ? "/v1/pipes?limit=1000" : "/v1/queues?limit=1000", *key = pipes ? "pipes" : "queues";

	if (as_json)
		return cli_print_pages(c, path, key);
	if (pipes)
		printf("%-14s %-8s %-8s %-8s %s\n", "ID", "KIND", "0->1", "1->0", "READERS");
	else
		printf("%-14s %-8s %-8s %s\n", "ID", "ITEMS", "READERS", "CREATED");
	return cli_each_page(c, path, key, pipes ? pipe_row : queue_row, NULL);
}

int cmd_queue(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[200];

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(queue_help, sub[0] ? 0 : EXIT_USAGE);
	if (strcmp(sub, "list") == 0) {
		int pipes = 0, as_json = 0;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--pipes") == 0)
				pipes = 1;
			else if (strcmp(argv[i], "--json") == 0)
				as_json = 1;
			else
				return cli_usage(queue_help, EXIT_USAGE);
		}
		return list(c, pipes, as_json);
	}
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

static const char pipe_help[] =
        "usage: strand pipe COMMAND ...\n"
        "  create [--simplex]             creates a pipe (duplex unless --simplex: end 0\n"
        "                                 sends, end 1 receives); prints its id\n"
        "  list [--json]                  every pipe, newest first: a table, or a JSON line each\n"
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
	if (strcmp(sub, "list") == 0 && (argc == 2 || (argc == 3 && strcmp(argv[2], "--json") == 0)))
		return list(c, 1, argc == 3);
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
