/*
 * What the strand command's parts share: usage and refusal messages,
 * arguments read as JSON, strict numbers, output as JSON lines, pages.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"

int cli_usage(const char *text, int code)
{
	fputs(text, code ? stderr : stdout);
	return code;
}

int cli_refused(strand_client *c)
{
	fprintf(stderr, "strand: %s\n", strand_client_error(c));
	return EXIT_REFUSED;
}

/* An argument as JSON if it parses as JSON, else as a string. */
json_t *cli_value_of(const char *text)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	return v ? v : json_string(text);
}

void cli_print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (s)
		puts(s);
	free(s);
}

/* getopt_long with "+" (stop at the first operand) from a fresh start. */
/* A negative number (-5, -0.5, -1e3) is an argument, never an option. */
static int negative_number(const char *s)
{
	char *end;

	if (s[0] != '-' || !(s[1] == '.' || (s[1] >= '0' && s[1] <= '9')))
		return 0;
	errno = 0;
	(void)strtod(s, &end);
	return !*end;
}

/* While getopt reads a command's options, each negative number stands in
 * argv as itself less its '-' (the same bytes, one further: no other
 * argument's pointer), which getopt passes over as an argument; once the
 * options end, they are put back wherever getopt moved them. */
static char *negatives[64];
static size_t nnegatives;
static int reading;

int cli_next_opt(int argc, char **argv, const char *shorts, const struct option *longs)
{
	int opt;

	if (!reading) {
		reading = 1;
		nnegatives = 0;
		for (int i = 1; i < argc && nnegatives < sizeof(negatives) / sizeof(negatives[0]); i++)
			if (negative_number(argv[i]))
				negatives[nnegatives++] = argv[i]++;
	}
	opt = getopt_long(argc, argv, shorts, longs, NULL);
	for (size_t k = 0; k < nnegatives; k++)
		if (optarg == negatives[k] + 1)
			optarg = negatives[k]; /* an option's value: --timeout -5 */
	if (opt == -1) {
		for (int i = 0; i < argc; i++)
			for (size_t k = 0; k < nnegatives; k++)
				if (argv[i] == negatives[k] + 1)
					argv[i] = negatives[k];
		reading = 0;
	}
	return opt;
}

/* Each item of array as one compact JSON line. */
static void print_line(json_t *item, void *ctx)
{
	char *line = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);

	(void)ctx;
	puts(line ? line : "null");
	free(line);
}

void cli_print_lines(json_t *array)
{
	json_t *it;
	size_t k;

	json_array_foreach (array, k, it)
		print_line(it, NULL);
}

/* Whether s could be states (running,done): nothing that would change a URL. */
int cli_states_like(const char *s)
{
	return s[0] && strlen(s) < 80 && strspn(s, "abcdefghijklmnopqrstuvwxyz,") == strlen(s);
}

/* Whether s could be an id (j-…, p-…): nothing that would change a URL. */
int cli_id_like(const char *s)
{
	return s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

/* Whether any argument is --help or -h: a subcommand then prints its
 * usage and sends nothing (not "--help" as an id). */
int cli_asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

/* A whole decimal number from lo to hi, or -1. */
long cli_whole_number(const char *s, long lo, long hi)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	return s[0] && !*end && !errno && n >= lo && n <= hi ? n : -1;
}

/* Parses MIN:MAX (0 <= MIN <= MAX <= 1024) into *min and *max; 0 if it is not that. */
int cli_min_max(const char *s, long *min, long *max)
{
	const char *colon = strchr(s, ':');
	char lo[16];

	if (!colon || (size_t)(colon - s) >= sizeof(lo))
		return 0;
	snprintf(lo, sizeof(lo), "%.*s", (int)(colon - s), s);
	*min = cli_whole_number(lo, 0, 1024);
	*max = cli_whole_number(colon + 1, 1, 1024);
	return *min >= 0 && *max >= 0 && *min <= *max;
}

/* A positive number of cores (0 < n <= 1024), or -1. */
double cli_cores(const char *s)
{
	char *end;
	double n;

	errno = 0;
	n = strtod(s, &end);
	return s[0] && !*end && !errno && n > 0 && n <= 1024 ? n : -1;
}

const char *cli_resource(int opt, const char *value, json_t *res)
{
	double cpu;
	long n;

	switch (opt) {
	case 'c':
		if ((cpu = cli_cores(value)) < 0)
			return "--cpu takes a number of cores, 0 < N <= 1024";
		json_object_set_new(res, "cpu", json_real(cpu));
		return NULL;
	case 'm':
		if ((n = cli_whole_number(value, 1, 1 << 24)) < 0)
			return "--memory takes megabytes, 1 to 16777216";
		json_object_set_new(res, "memory_mb", json_integer(n));
		return NULL;
	default:
		if ((n = cli_whole_number(value, 0, 64)) < 0)
			return "--gpu takes 0 to 64";
		json_object_set_new(res, "gpu", json_integer(n));
		return NULL;
	}
}

/* GETs path (which has a query), then its next pages (path&cursor=
 * next_cursor) until the cursor is null or the answer says end, calling
 * row on each item of key. */
int cli_each_page(strand_client *c, const char *path, const char *key, void (*row)(json_t *item, void *ctx), void *ctx)
{
	char url[512];
	json_t *reply = NULL, *item;
	size_t i;

	snprintf(url, sizeof(url), "%s", path);
	for (;;) {
		if (strand_request(c, "GET", url, NULL, &reply) != 200)
			return cli_refused(c);
		json_array_foreach (json_object_get(reply, key), i, item)
			row(item, ctx);
		const char *next = json_string_value(json_object_get(reply, "next_cursor"));
		int end = !next || json_is_true(json_object_get(reply, "end"));
		if (!end)
			snprintf(url, sizeof(url), "%s&cursor=%.80s", path, next);
		json_decref(reply);
		if (end)
			return 0;
	}
}

int cli_print_pages(strand_client *c, const char *path, const char *key)
{
	return cli_each_page(c, path, key, print_line, NULL);
}

volatile sig_atomic_t cli_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	cli_interrupted = 1;
}

void cli_catch_interrupt(void)
{
	struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: a sleep ends */

	sigaction(SIGINT, &sa, NULL);
}
