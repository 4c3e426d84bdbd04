/*
 * strand pool: create, list, map, status, results, resize, delete.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/cli.h"

static const char pool_help[] =
        "usage: strand pool COMMAND ...\n"
        "  create [--processes N | --autoscale MIN:MAX] [--backend B] [--image I] [--cpu N]\n"
        "         [--memory MB] [--gpu N] [-v SOURCE:PATH[:ro]]... [--max-attempts N]\n"
        "         [--timeout S] [--retry-errors]\n"
        "                                       creates a pool; prints its id\n"
        "  list [--managers] [--state S[,S...]] [--json]\n"
        "                                       the pools (or managers) newest first: id, state,\n"
        "                                       backend, live workers of its size, when made; S:\n"
        "                                       active, closed, terminating, terminated, failed;\n"
        "                                       --json: a JSON line each\n"
        "  map POOL FUNCTION [ARG...] [--args FILE] [--chunksize N|auto] [--name NAME] [--wait]\n"
        "  map POOL --command CMD [ARG...] [...]\n"
        "                                       maps FUNCTION (or the program CMD: words, or a JSON\n"
        "                                       array) over the ARGs (JSON, or strings) or over the JSON\n"
        "                                       array in FILE (- for stdin); prints the job id. Chunks:\n"
        "                                       auto (about four per worker) unless given. --name: what\n"
        "                                       the job is called, shown with it. --wait says\n"
        "                                       the job id on stderr, shows progress there (rate, time\n"
        "                                       left, failures) and prints the values, a JSON line each;\n"
        "                                       a failed input's error goes to stderr, as\n"
        "                                       {\"index\":I,\"error\":E}. Ctrl-C leaves the job running\n"
        "  status POOL|JOB                      the pool or job, as JSON\n"
        "  results JOB [--unordered]            every result, one JSON line each, as they come\n"
        "  resize POOL N                        N workers: extra ones finish what they hold, then go\n"
        "  resize POOL --autoscale MIN:MAX [--target S] [--idle S]\n"
        "                                       the gateway sizes the pool from its backlog (drained\n"
        "                                       within S, 10; a worker idle S, 30, goes)\n"
        "  resize POOL --no-autoscale           keeps the size it has\n"
        "  delete POOL                          terminates the pool\n"
        "  join POOL [--uses N] [--ttl S]       a join token for an external pool (--backend external):\n"
        "                                       N workers (its size) may join with it within S seconds\n"
        "                                       (3600); prints it, and says how a worker joins\n";

typedef struct printer {
	int failed;
	FILE *errors; /* where a failed input's error goes: stdout (results), stderr (--wait) */
} printer;

static int print_result(void *ctx, json_int_t index, int ok, json_t *value)
{
	printer *p = ctx;
	char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);

	if (ok) {
		printf("%s\n", s ? s : "null");
	} else {
		p->failed++;
		fprintf(p->errors, "{\"index\":%lld,\"error\":%s}\n", (long long)index, s ? s : "\"\"");
	}
	free(s);
	return cli_interrupted; /* Ctrl-C: what came is printed, no more */
}

/* Waits for a job. On a terminal, stderr shows its progress: a bar, done
 * of total, rate, time left and failures; stdout stays the results'. */
static int wait_job(strand_client *c, const char *job)
{
	char path[128];
	int tty = isatty(2);
	double start = (double)time(NULL);

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	for (;;) {
		json_t *j = NULL;
		if (strand_request(c, "GET", path, NULL, &j) != 200) {
			json_decref(j);
			return cli_refused(c);
		}
		json_int_t done = json_integer_value(json_object_get(j, "done"));
		json_int_t total = json_integer_value(json_object_get(j, "total"));
		json_int_t failed = json_integer_value(json_object_get(j, "failed"));
		const char *state = json_string_value(json_object_get(j, "state")) ?: "";
		int open = strcmp(state, "running") == 0 || strcmp(state, "submitting") == 0;
		json_decref(j);
		if (tty) {
			int width = 30, filled = total ? (int)(width * done / total) : width;
			double elapsed = (double)time(NULL) - start, rate = elapsed > 0 ? (double)done / elapsed : 0;
			long left = rate > 0 ? (long)((double)(total - done) / rate) : -1;
			fprintf(stderr, "\r[%.*s%*s] %lld/%lld %3d%%  %.0f/s  ", filled,
			        "##############################", width - filled, "", (long long)done, (long long)total,
			        total ? (int)(100 * done / total) : 100, rate);
			if (left >= 0)
				fprintf(stderr, "ETA %ld:%02ld  ", left / 60, left % 60);
			fprintf(stderr, "%lld failed\033[K", (long long)failed);
		}
		if (!open || cli_interrupted)
			break;
		usleep(200000);
	}
	if (tty)
		fprintf(stderr, "\n");
	return 0;
}

/* --command's value: a JSON array of strings, or words split on spaces
 * (new), or NULL. */
static json_t *command_of(const char *text)
{
	json_t *cmd = text[0] == '[' ? json_loads(text, 0, NULL) : json_array();
	json_t *part;
	size_t k;

	if (text[0] != '[') {
		char *copy = strdup(text), *save = NULL;
		for (char *w = copy ? strtok_r(copy, " \t", &save) : NULL; w; w = strtok_r(NULL, " \t", &save))
			json_array_append_new(cmd, json_string(w));
		free(copy);
	}
	json_array_foreach (cmd, k, part)
		if (!json_is_string(part))
			break;
	if (!json_is_array(cmd) || !json_array_size(cmd) || k < json_array_size(cmd)) {
		json_decref(cmd);
		return NULL;
	}
	return cmd;
}

/* strand pool map. */
static int pool_map(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"args", required_argument, NULL, 'a'},
	        {"chunksize", required_argument, NULL, 'c'},
	        {"command", required_argument, NULL, 'x'},
	        {"wait", no_argument, NULL, 'w'},
	        {"name", required_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	json_t *args = json_array(), *spec = json_object();
	int wait = 0, opt, code = 0;
	long chunksize = 0;
	char job[32];

	while (!code && (opt = cli_next_opt(argc, argv, "", opts)) != -1) {
		switch (opt) {
		case 'a': {
			json_error_t err;
			json_t *file =
			        strcmp(optarg, "-") == 0 ? json_loadf(stdin, 0, &err) : json_load_file(optarg, 0, &err);
			if (!json_is_array(file)) {
				fprintf(stderr, "strand: %s: not a JSON array (%s)\n", optarg, err.text);
				code = EXIT_USAGE;
			} else {
				json_array_extend(args, file);
			}
			json_decref(file);
			break;
		}
		case 'c':
			chunksize = strcmp(optarg, "auto") == 0 ? 0 : cli_whole_number(optarg, 1, STRAND_CHUNKSIZE_MAX);
			if (chunksize < 0)
				code = cli_usage("strand: --chunksize takes auto or 1 to 1000000\n", EXIT_USAGE);
			break;
		case 'x': {
			json_t *cmd = command_of(optarg);
			if (!cmd)
				code = cli_usage(
				        "strand: --command takes a program and its arguments: words, or a JSON "
				        "array of strings\n",
				        EXIT_USAGE);
			json_object_set_new(spec, "command", cmd);
			break;
		}
		case 'w': wait = 1; break;
		case 'n': json_object_set_new(spec, "name", json_string(optarg)); break;
		case 'h': code = -1; break;
		default: code = cli_usage(pool_help, EXIT_USAGE); break;
		}
	}
	int first = optind + (json_object_get(spec, "command") ? 1 : 2); /* the first ARG */
	if (!code && (argc < first || !cli_id_like(argv[optind])))
		code = cli_usage(pool_help, EXIT_USAGE);
	if (code) {
		json_decref(args);
		json_decref(spec);
		return code == -1 ? cli_usage(pool_help, 0) : code;
	}
	if (!json_object_get(spec, "command"))
		json_object_set_new(spec, "function", json_string(argv[optind + 1]));
	json_object_set_new(spec, "chunksize", json_integer(chunksize));
	for (int i = first; i < argc; i++)
		json_array_append_new(args, cli_value_of(argv[i]));
	code = strand_map_with(c, argv[optind], spec, args, job);
	json_decref(args);
	json_decref(spec);
	if (code != 0)
		return cli_refused(c);
	if (!wait) {
		puts(job);
		return 0;
	}
	cli_catch_interrupt(); /* first: a Ctrl-C once the id shows is caught */
	fprintf(stderr, "strand: job %s\n", job);
	printer pr = {.errors = stderr};
	code = wait_job(c, job);
	if (!code && !cli_interrupted && strand_imap(c, job, 0, 10000, print_result, &pr) != 0 && !cli_interrupted)
		code = cli_refused(c);
	if (cli_interrupted) {
		fflush(stdout);
		fprintf(stderr,
		        "\nstrand: interrupted; job %s goes on in the gateway: `strand jobs cancel %s` stops it, "
		        "`strand pool results %s` reads its results\n",
		        job, job, job);
		return 128 + SIGINT;
	}
	return code ? code : pr.failed ? EXIT_REFUSED : 0;
}

static void pool_row(json_t *p, void *ctx)
{
	char workers[32];

	(void)ctx;
	snprintf(workers, sizeof(workers), "%lld/%lld",
	         (long long)json_integer_value(json_object_get(p, "live_workers")),
	         (long long)json_integer_value(json_object_get(p, "processes")));
	printf("%-20s %-12s %-11s %-8s %s\n", json_string_value(json_object_get(p, "id")) ?: "",
	       json_string_value(json_object_get(p, "state")) ?: "",
	       json_string_value(json_object_get(p, "backend")) ?: "", workers,
	       json_string_value(json_object_get(p, "created_at")) ?: "");
}

/* strand pool list [--managers] [--state S,...] [--json] */
static int pool_list(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"managers", no_argument, NULL, 'm'},
	        {"state", required_argument, NULL, 's'},
	        {"json", no_argument, NULL, 'j'},
	        {NULL, 0, NULL, 0},
	};
	const char *state = NULL;
	int managers = 0, as_json = 0, opt;
	char path[160];

	while ((opt = cli_next_opt(argc, argv, "", opts)) != -1) {
		if (opt == 'm')
			managers = 1;
		else if (opt == 'j')
			as_json = 1;
		else if (opt == 's' && cli_states_like(optarg))
			state = optarg;
		else
			return cli_usage(pool_help, EXIT_USAGE);
	}
	if (optind != argc)
		return cli_usage(pool_help, EXIT_USAGE);
	const char *key = managers ? "managers" : "pools";
	snprintf(path, sizeof(path), "/v1/%s?limit=1000%s%s", key, state ? "&state=" : "", state ? state : "");
	if (as_json)
		return cli_print_pages(c, path, key);
	printf("%-20s %-12s %-11s %-8s %s\n", "ID", "STATE", "BACKEND", "WORKERS", "CREATED");
	return cli_each_page(c, path, key, pool_row, NULL);
}

/* strand pool create [--processes N] [--autoscale MIN:MAX] [--backend B] [--image I] [--cpu N]
 * [--memory MB] [--gpu N] [-v SOURCE:PATH[:ro]]... [--max-attempts N] [--timeout S] [--retry-errors] */
static int pool_create(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"processes", required_argument, NULL, 'p'},
	        {"autoscale", required_argument, NULL, 'a'},
	        {"backend", required_argument, NULL, 'b'},
	        {"image", required_argument, NULL, 'i'},
	        {"cpu", required_argument, NULL, 'c'},
	        {"memory", required_argument, NULL, 'm'},
	        {"gpu", required_argument, NULL, 'g'},
	        {"volume", required_argument, NULL, 'v'},
	        {"max-attempts", required_argument, NULL, 'A'},
	        {"timeout", required_argument, NULL, 't'},
	        {"retry-errors", no_argument, NULL, 'r'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	json_t *spec = json_object(), *res = json_object(), *vols = json_array();
	long processes = 0, min = -1, max = -1, n;
	const char *bad = NULL;
	char id[32];
	int opt, code;

	while (!bad && (opt = cli_next_opt(argc, argv, "v:", opts)) != -1) {
		switch (opt) {
		case 'p':
			bad = (processes = cli_whole_number(optarg, 1, 1024)) < 0 ? "--processes takes 1 to 1024"
			                                                          : NULL;
			break;
		case 'a':
			bad = !cli_min_max(optarg, &min, &max) ? "--autoscale takes MIN:MAX, 0 <= MIN <= MAX <= 1024"
			                                       : NULL;
			break;
		case 'b': json_object_set_new(spec, "backend", json_string(optarg)); break;
		case 'i': json_object_set_new(spec, "image", json_string(optarg)); break;
		case 'c':
		case 'm':
		case 'g': bad = cli_resource(opt, optarg, res); break;
		case 'v': json_array_append_new(vols, json_string(optarg)); break;
		case 'A':
			if ((n = cli_whole_number(optarg, 1, 100)) < 0)
				bad = "--max-attempts takes 1 to 100";
			else
				json_object_set_new(spec, "max_attempts", json_integer(n));
			break;
		case 't':
			if ((n = cli_whole_number(optarg, 0, 7 * 86400)) < 0)
				bad = "--timeout takes seconds, 0 to 604800";
			else
				json_object_set_new(spec, "timeout_s", json_integer(n));
			break;
		case 'r': json_object_set_new(spec, "retry_errors", json_true()); break;
		case 'h': code = cli_usage(pool_help, 0); goto out;
		default: code = cli_usage(pool_help, EXIT_USAGE); goto out;
		}
	}
	if (!bad && optind != argc)
		bad = "pool create takes no positional arguments";
	if (bad) {
		fprintf(stderr, "strand: %s\n", bad);
		code = EXIT_USAGE;
		goto out;
	}
	if (json_object_size(res))
		json_object_set(spec, "resources", res);
	if (json_array_size(vols))
		json_object_set(spec, "volumes", vols);
	if (max > 0)
		json_object_set_new(spec, "autoscale", json_pack("{s:i, s:i}", "min", (int)min, "max", (int)max));
	if (!processes) /* multiprocessing's default, or autoscale's least */
		processes = max > 0 ? min : sysconf(_SC_NPROCESSORS_ONLN);
	code = strand_pool_create(c, (int)processes, spec, id) == 0 ? (puts(id), 0) : cli_refused(c);
out:
	json_decref(spec);
	json_decref(res);
	json_decref(vols);
	return code;
}

/* strand pool resize POOL N | --autoscale MIN:MAX [--target S] [--idle S] | --no-autoscale */
static int pool_resize(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"autoscale", required_argument, NULL, 'a'},
	        {"no-autoscale", no_argument, NULL, 'n'},
	        {"target", required_argument, NULL, 't'},
	        {"idle", required_argument, NULL, 'i'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	long min = -1, max = -1, target = 0, idle = 0;
	int off = 0, opt;

	while ((opt = cli_next_opt(argc, argv, "", opts)) != -1) {
		switch (opt) {
		case 'a':
			if (!cli_min_max(optarg, &min, &max)) {
				fprintf(stderr, "strand: --autoscale takes MIN:MAX, 0 <= MIN <= MAX <= 1024\n");
				return EXIT_USAGE;
			}
			break;
		case 'n': off = 1; break;
		case 't':
		case 'i': {
			long *seconds = opt == 't' ? &target : &idle;
			if ((*seconds = cli_whole_number(optarg, 1, 86400)) < 0) {
				fprintf(stderr, "strand: --%s takes seconds, 1 to 86400\n",
				        opt == 't' ? "target" : "idle");
				return EXIT_USAGE;
			}
			break;
		}
		case 'h': return cli_usage(pool_help, 0);
		default: return cli_usage(pool_help, EXIT_USAGE);
		}
	}
	int sized = argc - optind == 2, scaled = max > 0 || off;
	if (argc - optind != (scaled ? 1 : 2) || (scaled && (max > 0) == off) || (!scaled && (target || idle)))
		return cli_usage(pool_help, EXIT_USAGE);
	const char *pool = argv[optind];
	if (sized) {
		long n = cli_whole_number(argv[optind + 1], 1, 1024);
		if (n < 0) {
			fprintf(stderr, "strand: N must be a whole number of workers, 1 to 1024\n");
			return EXIT_USAGE;
		}
		return strand_pool_resize(c, pool, (int)n) == 0 ? 0 : cli_refused(c);
	}
	return strand_pool_autoscale(c, pool, off ? 0 : (int)min, off ? 0 : (int)max, (int)target, (int)idle) == 0
	               ? 0
	               : cli_refused(c);
}

/* strand pool join POOL [--uses N] [--ttl S] */
static int pool_join(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"uses", required_argument, NULL, 'u'},
	        {"ttl", required_argument, NULL, 't'},
	        {NULL, 0, NULL, 0},
	};
	json_t *body = json_object(), *reply = NULL;
	long n;
	int opt, bad = 0;
	char path[160];

	while (!bad && (opt = cli_next_opt(argc, argv, "", opts)) != -1) {
		if (opt == 'u' && (n = cli_whole_number(optarg, 1, 1024)) > 0)
			json_object_set_new(body, "uses", json_integer(n));
		else if (opt == 't' && (n = cli_whole_number(optarg, 1, 7 * 86400)) > 0)
			json_object_set_new(body, "ttl_s", json_integer(n));
		else
			bad = 1;
	}
	if (bad || optind + 1 != argc || !cli_id_like(argv[optind])) {
		json_decref(body);
		return cli_usage(pool_help, EXIT_USAGE);
	}
	snprintf(path, sizeof(path), "/v1/pools/%.40s/join", argv[optind]);
	long status = strand_request(c, "POST", path, body, &reply);
	json_decref(body);
	if (status != 201)
		return cli_refused(c);
	const char *token = json_string_value(json_object_get(reply, "token"));
	const char *url =
	        getenv("STRAND_URL") && getenv("STRAND_URL")[0] ? getenv("STRAND_URL") : "http://127.0.0.1:8080";
	puts(token ? token : "");
	fprintf(stderr,
	        "strand: %lld workers may join pool %s until %s; on each host:\n"
	        "  STRAND_JOIN_TOKEN=%s strand-worker --join %s [--ca FILE]\n",
	        (long long)json_integer_value(json_object_get(reply, "uses")), argv[optind],
	        json_string_value(json_object_get(reply, "expires_at")) ?: "", token ? token : "", url);
	json_decref(reply);
	return 0;
}

int cmd_pool(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[160];

	if (!sub[0] || cli_asks_help(argc, argv))
		return cli_usage(pool_help, sub[0] ? 0 : EXIT_USAGE);
	argc--;
	argv++;
	optind = 1;
	if (strcmp(sub, "create") == 0)
		return pool_create(c, argc, argv);
	if (strcmp(sub, "map") == 0)
		return pool_map(c, argc, argv);
	if (strcmp(sub, "list") == 0)
		return pool_list(c, argc, argv);
	if (strcmp(sub, "status") == 0 && argc == 2) {
		snprintf(path, sizeof(path), "/v1/%s/%s", argv[1][0] == 'j' ? "jobs" : "pools", argv[1]);
		if (strand_request(c, "GET", path, NULL, &reply) != 200)
			return cli_refused(c);
		cli_print_json(reply);
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "results") == 0 && (argc == 2 || argc == 3)) {
		printer pr = {.errors = stdout}; /* every result, a line each */
		int unordered = argc == 3 && strcmp(argv[2], "--unordered") == 0;
		if (argc == 3 && !unordered)
			return cli_usage(pool_help, EXIT_USAGE);
		if (strand_imap(c, argv[1], unordered, 10000, print_result, &pr) != 0)
			return cli_refused(c);
		return pr.failed ? EXIT_REFUSED : 0;
	}
	if (strcmp(sub, "resize") == 0)
		return pool_resize(c, argc, argv);
	if (strcmp(sub, "delete") == 0 && argc == 2)
		return strand_pool_terminate(c, argv[1]) == 0 ? 0 : cli_refused(c);
	if (strcmp(sub, "join") == 0)
		return pool_join(c, argc, argv);
	return cli_usage(pool_help, EXIT_USAGE);
}
