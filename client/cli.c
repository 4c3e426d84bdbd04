/*
 * strand: the command line for a strand gateway ($STRAND_URL, default
 * http://127.0.0.1:8080), through libstrand.
 *
 *   strand run [--gpu N] [--cpu N] [--memory MB] [-v VOLUME:PATH] [--image I] [--backend B] [--wait] -- CMD...
 *   strand ps | logs [-f] ID | kill ID
 *   strand pool create|map|status|results|delete ...
 *   strand queue create|put|get ...
 *
 * Exit codes: 0 done; 1 the gateway refused or the work failed; 2 bad
 * usage; `strand run --wait` exits with the process's own code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2 };

static int usage(const char *text, int code)
{
	fputs(text, code ? stderr : stdout);
	return code;
}

static int refused(strand_client *c)
{
	fprintf(stderr, "strand: %s\n", strand_client_error(c));
	return EXIT_REFUSED;
}

/* An argument as JSON if it parses as JSON, else as a string. */
static json_t *value_of(const char *text)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	return v ? v : json_string(text);
}

static void print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (s)
		puts(s);
	free(s);
}

/* getopt_long with "+" (stop at the first operand) from a fresh start. */
static int next_opt(int argc, char **argv, const char *shorts, const struct option *longs)
{
	return getopt_long(argc, argv, shorts, longs, NULL);
}

/* Each item of array as one compact JSON line. */
static void print_lines(json_t *array)
{
	json_t *it;
	size_t k;

	json_array_foreach (array, k, it) {
		char *line = json_dumps(it, JSON_COMPACT | JSON_ENCODE_ANY);
		puts(line ? line : "null");
		free(line);
	}
}

/* Whether s could be an id (j-…, p-…): nothing that would change a URL. */
static int id_like(const char *s)
{
	return s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

/* Whether any argument is --help or -h: a subcommand then prints its
 * usage and sends nothing (not "--help" as an id). */
static int asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

/* ---- run, ps, logs, kill -------------------------------------------------- */

static const char run_help[] = "usage: strand run [options] -- CMD [ARG...]\n"
                               "Runs CMD as a strand process (like `fiber run`) and prints its id.\n\n"
                               "  --backend B        local, docker or kubernetes (the gateway's default otherwise)\n"
                               "  --image I          the image on docker or kubernetes\n"
                               "  --cpu N            cores\n"
                               "  --memory MB        memory\n"
                               "  --gpu N            GPUs\n"
                               "  -v, --volume V:P   mount V at P (:ro for read-only); repeatable. V: a named volume\n"
                               "                     (on kubernetes a PersistentVolumeClaim), emptyDir, or /host/path\n"
                               "  -e, --env N=V      environment; repeatable\n"
                               "  --wait             wait for it, print its output, exit with its exit code\n"
                               "  --help             this text\n";

static int cmd_run(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"backend", required_argument, NULL, 'b'}, {"image", required_argument, NULL, 'i'},
	        {"cpu", required_argument, NULL, 'c'},     {"memory", required_argument, NULL, 'm'},
	        {"gpu", required_argument, NULL, 'g'},     {"volume", required_argument, NULL, 'v'},
	        {"env", required_argument, NULL, 'e'},     {"wait", no_argument, NULL, 'w'},
	        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	json_t *spec = json_object(), *res = json_object(), *vols = json_array(), *env = json_object();
	json_t *reply = NULL;
	int wait = 0, opt, code = EXIT_REFUSED;
	char path[128];

	while ((opt = next_opt(argc, argv, "+v:e:", opts)) != -1) {
		switch (opt) {
		case 'b': json_object_set_new(spec, "backend", json_string(optarg)); break;
		case 'i': json_object_set_new(spec, "image", json_string(optarg)); break;
		case 'c': json_object_set_new(res, "cpu", json_real(atof(optarg))); break;
		case 'm': json_object_set_new(res, "memory_mb", json_integer(atoll(optarg))); break;
		case 'g': json_object_set_new(res, "gpu", json_integer(atoll(optarg))); break;
		case 'v': json_array_append_new(vols, json_string(optarg)); break;
		case 'e': {
			char *eq = strchr(optarg, '=');
			if (!eq) {
				code = usage(run_help, EXIT_USAGE);
				goto out;
			}
			*eq = '\0';
			json_object_set_new(env, optarg, json_string(eq + 1));
			break;
		}
		case 'w': wait = 1; break;
		case 'h': code = usage(run_help, 0); goto out;
		default: code = usage(run_help, EXIT_USAGE); goto out;
		}
	}
	if (optind >= argc) {
		code = usage(run_help, EXIT_USAGE);
		goto out;
	}
	json_t *cmd = json_array();
	for (int i = optind; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	json_object_set_new(spec, "command", cmd);
	if (json_object_size(res))
		json_object_set(spec, "resources", res);
	if (json_array_size(vols))
		json_object_set(spec, "volumes", vols);
	if (json_object_size(env))
		json_object_set(spec, "env", env);
	if (strand_request(c, "POST", "/v1/processes", spec, &reply) != 201) {
		code = refused(c);
		goto out;
	}
	const char *id = json_string_value(json_object_get(reply, "id"));
	if (!wait) {
		puts(id);
		code = 0;
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/processes/%s?wait=300", id);
	for (;;) {
		json_t *p = NULL;
		if (strand_request(c, "GET", path, NULL, &p) != 200) {
			json_decref(p);
			code = refused(c);
			goto out;
		}
		if (strcmp(json_string_value(json_object_get(p, "state")), "running") != 0) {
			char lp[128], *text = NULL;
			size_t len = 0;
			snprintf(lp, sizeof(lp), "/v1/processes/%s/logs", id);
			code = (int)json_integer_value(json_object_get(p, "exit_code"));
			if (strcmp(json_string_value(json_object_get(p, "state")), "failed") == 0)
				fprintf(stderr, "strand: %s\n", json_string_value(json_object_get(p, "reason")));
			json_decref(p);
			if (strand_request_raw(c, "GET", lp, &text, &len) == 200)
				fwrite(text, 1, len, stdout);
			free(text);
			code = code < 0 || code > 255 ? EXIT_REFUSED : code;
			goto out;
		}
		json_decref(p);
	}
out:
	json_decref(reply);
	json_decref(spec);
	json_decref(res);
	json_decref(vols);
	json_decref(env);
	return code;
}

static int cmd_ps(strand_client *c, int argc, char **argv)
{
	json_t *reply = NULL, *p;
	size_t i;

	if (argc > 1)
		return usage("usage: strand ps\nLists processes: id, state, exit code, backend, command.\n",
		             strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE);
	if (strand_request(c, "GET", "/v1/processes", NULL, &reply) != 200)
		return refused(c);
	printf("%-20s %-8s %-5s %-8s %s\n", "ID", "STATE", "CODE", "BACKEND", "COMMAND");
	json_array_foreach (json_object_get(reply, "processes"), i, p) {
		json_t *spec = json_object_get(p, "spec");
		char *what = json_object_get(spec, "command")
		                     ? json_dumps(json_object_get(spec, "command"), JSON_COMPACT)
		                     : strdup(json_string_value(json_object_get(spec, "function")) ?: "");
		json_t *ec = json_object_get(p, "exit_code");
		char code[16] = "-";
		if (ec)
			snprintf(code, sizeof(code), "%lld", (long long)json_integer_value(ec));
		printf("%-20s %-8s %-5s %-8s %s\n", json_string_value(json_object_get(p, "id")),
		       json_string_value(json_object_get(p, "state")), code,
		       json_string_value(json_object_get(p, "backend")), what ? what : "");
		free(what);
	}
	json_decref(reply);
	return 0;
}

static int cmd_logs(strand_client *c, int argc, char **argv)
{
	static const char help[] = "usage: strand logs [-f] ID\nPrints what process ID wrote; -f follows it "
	                           "until it ends.\n";
	int follow = 0;
	const char *id = NULL;
	char path[128], state_path[128];
	size_t shown = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
			follow = 1;
		else if (strcmp(argv[i], "--help") == 0)
			return usage(help, 0);
		else if (!id && argv[i][0] != '-')
			id = argv[i];
		else
			return usage(help, EXIT_USAGE);
	}
	if (!id)
		return usage(help, EXIT_USAGE);
	snprintf(path, sizeof(path), "/v1/processes/%s/logs", id);
	snprintf(state_path, sizeof(state_path), "/v1/processes/%s?wait=1", id);
	for (;;) {
		char *text = NULL;
		size_t len = 0;
		json_t *p = NULL;
		int running;
		if (strand_request_raw(c, "GET", path, &text, &len) != 200) {
			free(text);
			return refused(c);
		}
		if (len > shown)
			fwrite(text + shown, 1, len - shown, stdout);
		fflush(stdout);
		shown = len > shown ? len : shown;
		free(text);
		if (!follow)
			return 0;
		if (strand_request(c, "GET", state_path, NULL, &p) != 200) {
			json_decref(p);
			return refused(c);
		}
		running = strcmp(json_string_value(json_object_get(p, "state")), "running") == 0;
		json_decref(p);
		if (!running) {
			follow = 0; /* one last read for what came at the end */
			continue;
		}
	}
}

static int cmd_kill(strand_client *c, int argc, char **argv)
{
	char path[128];
	json_t *reply = NULL;

	if (argc != 2 || argv[1][0] == '-')
		return usage("usage: strand kill ID\nTerminates process ID (SIGTERM, then SIGKILL after 2 s).\n",
		             argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE);
	snprintf(path, sizeof(path), "/v1/processes/%s", argv[1]);
	if (strand_request(c, "DELETE", path, NULL, &reply) != 200)
		return refused(c);
	printf("%s exited with code %lld\n", argv[1],
	       (long long)json_integer_value(json_object_get(reply, "exit_code")));
	json_decref(reply);
	return 0;
}

/* ---- pool ----------------------------------------------------------------- */

static const char pool_help[] =
        "usage: strand pool COMMAND ...\n"
        "  create [--processes N | --autoscale MIN:MAX] [--backend B] [--image I] [--cpu N]\n"
        "         [--memory MB] [--gpu N] [-v SOURCE:PATH[:ro]]... [--max-attempts N]\n"
        "         [--timeout S] [--retry-errors]\n"
        "                                       creates a pool; prints its id\n"
        "  map POOL FUNCTION [ARG...] [--args FILE] [--chunksize N] [--wait]\n"
        "                                       maps FUNCTION over the ARGs (JSON, or strings) or over\n"
        "                                       the JSON array in FILE (- for stdin); prints the job id;\n"
        "                                       --wait shows progress and prints the results\n"
        "  status POOL|JOB                      the pool or job, as JSON\n"
        "  results JOB [--unordered]            every result, one JSON line each, as they come\n"
        "  resize POOL N                        N workers: extra ones finish what they hold, then go\n"
        "  resize POOL --autoscale MIN:MAX [--target S] [--idle S]\n"
        "                                       the gateway sizes the pool from its backlog (drained\n"
        "                                       within S, 10; a worker idle S, 30, goes)\n"
        "  resize POOL --no-autoscale           keeps the size it has\n"
        "  delete POOL                          terminates the pool\n";

typedef struct printer {
	int failed;
} printer;

static int print_result(void *ctx, json_int_t index, int ok, json_t *value)
{
	printer *p = ctx;
	char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);

	if (ok) {
		printf("%s\n", s ? s : "null");
	} else {
		p->failed++;
		printf("{\"index\":%lld,\"error\":%s}\n", (long long)index, s ? s : "\"\"");
	}
	free(s);
	return 0;
}

/* Waits for a job, drawing a progress bar when stdout is a terminal. */
static int wait_job(strand_client *c, const char *job)
{
	char path[128];
	int tty = isatty(1);

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	for (;;) {
		json_t *j = NULL;
		if (strand_request(c, "GET", path, NULL, &j) != 200) {
			json_decref(j);
			return refused(c);
		}
		json_int_t done = json_integer_value(json_object_get(j, "done"));
		json_int_t total = json_integer_value(json_object_get(j, "total"));
		int running = strcmp(json_string_value(json_object_get(j, "state")), "running") == 0;
		json_decref(j);
		if (tty) {
			int width = 40, filled = total ? (int)(width * done / total) : width;
			printf("\r[%.*s%*s] %lld/%lld", filled, "########################################",
			       width - filled, "", (long long)done, (long long)total);
			fflush(stdout);
		}
		if (!running)
			break;
		usleep(200000);
	}
	if (tty)
		printf("\n");
	return 0;
}

/* A whole decimal number from lo to hi, or -1. */
static long whole_number(const char *s, long lo, long hi)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	return s[0] && !*end && !errno && n >= lo && n <= hi ? n : -1;
}

/* Parses MIN:MAX (0 <= MIN <= MAX <= 1024) into *min and *max; 0 if it is not that. */
static int min_max(const char *s, long *min, long *max)
{
	const char *colon = strchr(s, ':');
	char lo[16];

	if (!colon || (size_t)(colon - s) >= sizeof(lo))
		return 0;
	snprintf(lo, sizeof(lo), "%.*s", (int)(colon - s), s);
	*min = whole_number(lo, 0, 1024);
	*max = whole_number(colon + 1, 1, 1024);
	return *min >= 0 && *max >= 0 && *min <= *max;
}

/* A positive number of cores (0 < n <= 1024), or -1. */
static double cores(const char *s)
{
	char *end;
	double n;

	errno = 0;
	n = strtod(s, &end);
	return s[0] && !*end && !errno && n > 0 && n <= 1024 ? n : -1;
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
	double cpu;
	const char *bad = NULL;
	char id[32];
	int opt, code;

	while (!bad && (opt = next_opt(argc, argv, "v:", opts)) != -1) {
		switch (opt) {
		case 'p':
			bad = (processes = whole_number(optarg, 1, 1024)) < 0 ? "--processes takes 1 to 1024" : NULL;
			break;
		case 'a':
			bad = !min_max(optarg, &min, &max) ? "--autoscale takes MIN:MAX, 0 <= MIN <= MAX <= 1024"
			                                   : NULL;
			break;
		case 'b': json_object_set_new(spec, "backend", json_string(optarg)); break;
		case 'i': json_object_set_new(spec, "image", json_string(optarg)); break;
		case 'c':
			if ((cpu = cores(optarg)) < 0)
				bad = "--cpu takes a number of cores, 0 < N <= 1024";
			else
				json_object_set_new(res, "cpu", json_real(cpu));
			break;
		case 'm':
			if ((n = whole_number(optarg, 1, 1 << 24)) < 0)
				bad = "--memory takes megabytes, 1 to 16777216";
			else
				json_object_set_new(res, "memory_mb", json_integer(n));
			break;
		case 'g':
			if ((n = whole_number(optarg, 0, 64)) < 0)
				bad = "--gpu takes 0 to 64";
			else
				json_object_set_new(res, "gpu", json_integer(n));
			break;
		case 'v': json_array_append_new(vols, json_string(optarg)); break;
		case 'A':
			if ((n = whole_number(optarg, 1, 100)) < 0)
				bad = "--max-attempts takes 1 to 100";
			else
				json_object_set_new(spec, "max_attempts", json_integer(n));
			break;
		case 't':
			if ((n = whole_number(optarg, 0, 7 * 86400)) < 0)
				bad = "--timeout takes seconds, 0 to 604800";
			else
				json_object_set_new(spec, "timeout_s", json_integer(n));
			break;
		case 'r': json_object_set_new(spec, "retry_errors", json_true()); break;
		case 'h': code = usage(pool_help, 0); goto out;
		default: code = usage(pool_help, EXIT_USAGE); goto out;
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
	code = strand_pool_create(c, (int)processes, spec, id) == 0 ? (puts(id), 0) : refused(c);
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

	while ((opt = next_opt(argc, argv, "", opts)) != -1) {
		switch (opt) {
		case 'a':
			if (!min_max(optarg, &min, &max)) {
				fprintf(stderr, "strand: --autoscale takes MIN:MAX, 0 <= MIN <= MAX <= 1024\n");
				return EXIT_USAGE;
			}
			break;
		case 'n': off = 1; break;
		case 't':
		case 'i': {
			long *seconds = opt == 't' ? &target : &idle;
			if ((*seconds = whole_number(optarg, 1, 86400)) < 0) {
				fprintf(stderr, "strand: --%s takes seconds, 1 to 86400\n",
				        opt == 't' ? "target" : "idle");
				return EXIT_USAGE;
			}
			break;
		}
		case 'h': return usage(pool_help, 0);
		default: return usage(pool_help, EXIT_USAGE);
		}
	}
	int sized = argc - optind == 2, scaled = max > 0 || off;
	if (argc - optind != (scaled ? 1 : 2) || (scaled && (max > 0) == off) || (!scaled && (target || idle)))
		return usage(pool_help, EXIT_USAGE);
	const char *pool = argv[optind];
	if (sized) {
		long n = whole_number(argv[optind + 1], 1, 1024);
		if (n < 0) {
			fprintf(stderr, "strand: N must be a whole number of workers, 1 to 1024\n");
			return EXIT_USAGE;
		}
		return strand_pool_resize(c, pool, (int)n) == 0 ? 0 : refused(c);
	}
	return strand_pool_autoscale(c, pool, off ? 0 : (int)min, off ? 0 : (int)max, (int)target, (int)idle) == 0
	               ? 0
	               : refused(c);
}

static int cmd_pool(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[160];
	int code = 0, opt;

	if (!sub[0] || asks_help(argc, argv))
		return usage(pool_help, sub[0] ? 0 : EXIT_USAGE);
	argc--;
	argv++;
	optind = 1;
	if (strcmp(sub, "create") == 0)
		return pool_create(c, argc, argv);
	if (strcmp(sub, "map") == 0) {
		static const struct option opts[] = {
		        {"args", required_argument, NULL, 'a'},
		        {"chunksize", required_argument, NULL, 'c'},
		        {"wait", no_argument, NULL, 'w'},
		        {"help", no_argument, NULL, 'h'},
		        {NULL, 0, NULL, 0},
		};
		json_t *args = json_array();
		int chunksize = 1, wait = 0;
		char job[32];
		while ((opt = next_opt(argc, argv, "", opts)) != -1) {
			switch (opt) {
			case 'a': {
				json_error_t err;
				json_t *file = strcmp(optarg, "-") == 0 ? json_loadf(stdin, 0, &err)
				                                        : json_load_file(optarg, 0, &err);
				if (!json_is_array(file)) {
					fprintf(stderr, "strand: %s: not a JSON array (%s)\n", optarg, err.text);
					json_decref(file);
					return EXIT_USAGE;
				}
				json_array_extend(args, file);
				json_decref(file);
				break;
			}
			case 'c': chunksize = atoi(optarg); break;
			case 'w': wait = 1; break;
			case 'h': return usage(pool_help, 0);
			default: return usage(pool_help, EXIT_USAGE);
			}
		}
		if (argc - optind < 2)
			return usage(pool_help, EXIT_USAGE);
		for (int i = optind + 2; i < argc; i++)
			json_array_append_new(args, value_of(argv[i]));
		if (strand_map(c, argv[optind], argv[optind + 1], args, chunksize > 0 ? chunksize : 1, job) != 0) {
			json_decref(args);
			return refused(c);
		}
		json_decref(args);
		if (!wait) {
			puts(job);
			return 0;
		}
		printer pr = {0};
		if ((code = wait_job(c, job)) != 0 || strand_imap(c, job, 0, 10000, print_result, &pr) != 0)
			return code ? code : refused(c);
		return pr.failed ? EXIT_REFUSED : 0;
	}
	if (strcmp(sub, "status") == 0 && argc == 2) {
		snprintf(path, sizeof(path), "/v1/%s/%s", argv[1][0] == 'j' ? "jobs" : "pools", argv[1]);
		if (strand_request(c, "GET", path, NULL, &reply) != 200)
			return refused(c);
		print_json(reply);
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "results") == 0 && (argc == 2 || argc == 3)) {
		printer pr = {0};
		int unordered = argc == 3 && strcmp(argv[2], "--unordered") == 0;
		if (argc == 3 && !unordered)
			return usage(pool_help, EXIT_USAGE);
		if (strand_imap(c, argv[1], unordered, 10000, print_result, &pr) != 0)
			return refused(c);
		return pr.failed ? EXIT_REFUSED : 0;
	}
	if (strcmp(sub, "resize") == 0)
		return pool_resize(c, argc, argv);
	if (strcmp(sub, "delete") == 0 && argc == 2)
		return strand_pool_terminate(c, argv[1]) == 0 ? 0 : refused(c);
	return usage(pool_help, EXIT_USAGE);
}

/* ---- queue ---------------------------------------------------------------- */

static const char queue_help[] =
        "usage: strand queue COMMAND ...\n"
        "  create                        creates a queue; prints its id\n"
        "  list [--pipes]                every queue (or pipe), newest first, one JSON line each\n"
        "  put QUEUE VALUE...            puts the VALUEs (JSON, or strings), in order\n"
        "  get QUEUE [--max N] [--wait S]\n"
        "                                takes up to N items (1), waiting up to S\n"
        "                                seconds for the first; one JSON line each\n";

static int cmd_queue(strand_client *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	json_t *reply = NULL;
	char path[200];

	if (!sub[0] || asks_help(argc, argv))
		return usage(queue_help, sub[0] ? 0 : EXIT_USAGE);
	if (strcmp(sub, "list") == 0 && (argc == 2 || (argc == 3 && strcmp(argv[2], "--pipes") == 0))) {
		int pipes = argc == 3;
		if (strand_request(c, "GET", pipes ? "/v1/pipes" : "/v1/queues", NULL, &reply) != 200)
			return refused(c);
		print_lines(json_object_get(reply, pipes ? "pipes" : "queues"));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "create") == 0 && argc == 2) {
		if (strand_request(c, "POST", "/v1/queues", NULL, &reply) != 201)
			return refused(c);
		puts(json_string_value(json_object_get(reply, "id")));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "put") == 0 && argc >= 4) {
		json_t *items = json_array();
		for (int i = 3; i < argc; i++)
			json_array_append_new(items, value_of(argv[i]));
		json_t *body = json_pack("{s:o}", "items", items);
		snprintf(path, sizeof(path), "/v1/queues/%s/items", argv[2]);
		long status = strand_request(c, "POST", path, body, &reply);
		json_decref(body);
		json_decref(reply);
		return status == 201 ? 0 : refused(c);
	}
	if (strcmp(sub, "get") == 0 && argc >= 3) {
		long max = 1, wait = 0;
		for (int i = 3; i < argc; i++) {
			if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
				max = whole_number(argv[++i], 1, 10000);
			else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc)
				wait = whole_number(argv[++i], 0, 300);
			else
				return usage(queue_help, EXIT_USAGE);
			if (max < 0 || wait < 0) {
				fprintf(stderr, "strand: --max takes 1 to 10000 items, --wait 0 to 300 seconds\n");
				return EXIT_USAGE;
			}
		}
		snprintf(path, sizeof(path), "/v1/queues/%s/items?max=%ld&wait=%ld", argv[2], max, wait);
		if (strand_request(c, "GET", path, NULL, &reply) != 200)
			return refused(c);
		print_lines(json_object_get(reply, "items"));
		json_decref(reply);
		return 0;
	}
	return usage(queue_help, EXIT_USAGE);
}

/* ---- jobs ----------------------------------------------------------------- */

static const char jobs_help[] = "usage: strand jobs COMMAND ...\n"
                                "  list [--pool P] [--state S]   jobs newest first (S: submitting, running, done,\n"
                                "                                cancelled), one JSON line each\n"
                                "  cancel JOB                    cancels a running job; removes an ended one\n"
                                "  failures JOB                  its failed tasks, one JSON line each\n";

/* GETs path (which has a query), then its next pages (path&cursor=
 * next_cursor) until the cursor is null or the answer says end, printing
 * each item of key as a JSON line. */
static int print_pages(strand_client *c, const char *path, const char *key)
{
	char url[400];
	json_t *reply = NULL;

	snprintf(url, sizeof(url), "%s", path);
	for (;;) {
		if (strand_request(c, "GET", url, NULL, &reply) != 200)
			return refused(c);
		print_lines(json_object_get(reply, key));
		const char *next = json_string_value(json_object_get(reply, "next_cursor"));
		int end = !next || json_is_true(json_object_get(reply, "end"));
		if (!end)
			snprintf(url, sizeof(url), "%s&cursor=%.24s", path, next);
		json_decref(reply);
		if (end)
			return 0;
	}
}

static int cmd_jobs(strand_client *c, int argc, char **argv)
{
	static const struct option opts[] = {
	        {"pool", required_argument, NULL, 'p'},
	        {"state", required_argument, NULL, 's'},
	        {NULL, 0, NULL, 0},
	};
	const char *sub = argc > 1 ? argv[1] : "";
	char path[200];
	int opt;

	if (!sub[0] || asks_help(argc, argv))
		return usage(jobs_help, sub[0] ? 0 : EXIT_USAGE);
	argc--;
	argv++;
	optind = 1;
	if (strcmp(sub, "list") == 0) {
		const char *pool = NULL, *state = NULL;
		while ((opt = next_opt(argc, argv, "", opts)) != -1) {
			if (opt == 'p' && id_like(optarg))
				pool = optarg;
			else if (opt == 's' && strspn(optarg, "abcdefghijklmnopqrstuvwxyz") == strlen(optarg))
				state = optarg;
			else
				return usage(jobs_help, EXIT_USAGE);
		}
		if (optind != argc)
			return usage(jobs_help, EXIT_USAGE);
		snprintf(path, sizeof(path), "/v1/jobs?limit=1000%s%.40s%s%.20s", pool ? "&pool=" : "",
		         pool ? pool : "", state ? "&state=" : "", state ? state : "");
		return print_pages(c, path, "jobs");
	}
	if (argc != 2 || !id_like(argv[1]))
		return usage(jobs_help, EXIT_USAGE);
	if (strcmp(sub, "cancel") == 0) {
		json_t *reply = NULL;
		snprintf(path, sizeof(path), "/v1/jobs/%.40s", argv[1]);
		if (strand_request(c, "DELETE", path, NULL, &reply) != 200)
			return refused(c);
		puts(json_string_value(json_object_get(reply, "state")));
		json_decref(reply);
		return 0;
	}
	if (strcmp(sub, "failures") == 0) {
		snprintf(path, sizeof(path), "/v1/jobs/%.40s/failures?limit=1000", argv[1]);
		return print_pages(c, path, "items");
	}
	return usage(jobs_help, EXIT_USAGE);
}

static const char main_help[] =
        "usage: strand COMMAND [ARGS...]      (the gateway: $STRAND_URL, default http://127.0.0.1:8080)\n\n"
        "  run [options] -- CMD...   run a program as a strand process; prints its id\n"
        "  ps                        list processes\n"
        "  logs [-f] ID              what a process wrote\n"
        "  kill ID                   terminate a process\n"
        "  pool ...                  create, map, status, results, resize, delete\n"
        "  queue ...                 create, list, put, get\n"
        "  jobs ...                  list, cancel, failures\n\n"
        "`strand COMMAND --help` tells more. Exit codes: 0 done, 1 refused or failed, 2 bad usage.\n";

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(strand_client *, int, char **);
	} commands[] = {{"run", cmd_run},   {"ps", cmd_ps},       {"logs", cmd_logs}, {"kill", cmd_kill},
	                {"pool", cmd_pool}, {"queue", cmd_queue}, {"jobs", cmd_jobs}};
	strand_client *c;
	int code;

	if (argc < 2)
		return usage(main_help, EXIT_USAGE);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0)
		return usage(main_help, 0);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			if (!(c = strand_client_new(NULL)))
				return EXIT_REFUSED;
			code = commands[i].fn(c, argc - 1, argv + 1);
			strand_client_free(c);
			return code;
		}
	}
	fprintf(stderr, "strand: unknown command '%s'\n", argv[1]);
	return usage(main_help, EXIT_USAGE);
}
