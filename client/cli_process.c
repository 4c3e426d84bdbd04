/*
 * strand run, ps, logs, kill: processes (and ps --rings: rings of them).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"

static const char run_help[] =
        "usage: strand run [options] -- CMD [ARG...]\n"
        "Runs CMD as a strand process (like `fiber run`) and prints its id.\n\n"
        "  --backend B        local, docker, kubernetes or slurm (the gateway's default otherwise)\n"
        "  --image I          the image on docker or kubernetes\n"
        "  --cpu N            cores (above 0, at most 1024)\n"
        "  --memory MB        memory (1 to 16777216)\n"
        "  --gpu N            GPUs (0 to 64)\n"
        "  -v, --volume V:P   mount V at P (:ro for read-only); repeatable. V: a named volume\n"
        "                     (on kubernetes a PersistentVolumeClaim), emptyDir, or /host/path\n"
        "  -e, --env N=V      environment; repeatable\n"
        "  --wait             says its id on stderr, then streams its output as it comes\n"
        "                     and exits with its exit code (1 if it could not start);\n"
        "                     Ctrl-C leaves it running, saying how to stop it\n"
        "  --help             this text\n";

/* Prints what process id wrote past *shown, then (follow) goes on until it
 * ended, with one last read for what came at the end. *p: its last view
 * (new), when following. Returns 0, or EXIT_REFUSED. */
static int follow_output(strand_client *c, const char *id, int follow, json_t **last)
{
	char path[128], state_path[128];
	size_t shown = 0;

	snprintf(path, sizeof(path), "/v1/processes/%s/logs", id);
	snprintf(state_path, sizeof(state_path), "/v1/processes/%s?wait=1", id);
	for (;;) {
		char *text = NULL;
		size_t len = 0;
		json_t *p = NULL;
		if (strand_request_raw(c, "GET", path, &text, &len) != 200) {
			free(text);
			return cli_refused(c);
		}
		if (len > shown)
			fwrite(text + shown, 1, len - shown, stdout);
		fflush(stdout);
		shown = len > shown ? len : shown;
		free(text);
		if (!follow || cli_interrupted)
			return 0;
		if (strand_request(c, "GET", state_path, NULL, &p) != 200) {
			json_decref(p);
			return cli_refused(c);
		}
		if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "running") != 0) {
			follow = 0;
			if (last)
				*last = json_incref(p);
		}
		json_decref(p);
	}
}

/* Parses run's options into spec; returns 0, or the exit code of a bad one. */
static int run_options(int argc, char **argv, json_t *spec, int *wait)
{
	static const struct option opts[] = {
	        {"backend", required_argument, NULL, 'b'}, {"image", required_argument, NULL, 'i'},
	        {"cpu", required_argument, NULL, 'c'},     {"memory", required_argument, NULL, 'm'},
	        {"gpu", required_argument, NULL, 'g'},     {"volume", required_argument, NULL, 'v'},
	        {"env", required_argument, NULL, 'e'},     {"wait", no_argument, NULL, 'w'},
	        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	json_t *res = json_object(), *vols = json_array(), *env = json_object();
	int opt, code = 0;

	while (!code && (opt = cli_next_opt(argc, argv, "+v:e:", opts)) != -1) {
		switch (opt) {
		case 'b': json_object_set_new(spec, "backend", json_string(optarg)); break;
		case 'i': json_object_set_new(spec, "image", json_string(optarg)); break;
		case 'c':
		case 'm':
		case 'g': {
			const char *bad = cli_resource(opt, optarg, res);
			if (bad) {
				fprintf(stderr, "strand: %s\n", bad);
				code = EXIT_USAGE;
			}
			break;
		}
		case 'v': json_array_append_new(vols, json_string(optarg)); break;
		case 'e': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg) {
				code = cli_usage("strand: --env takes NAME=VALUE\n", EXIT_USAGE);
				break;
			}
			*eq = '\0';
			json_object_set_new(env, optarg, json_string(eq + 1));
			break;
		}
		case 'w': *wait = 1; break;
		case 'h': code = -1; break;
		default: code = cli_usage(run_help, EXIT_USAGE); break;
		}
	}
	if (json_object_size(res))
		json_object_set(spec, "resources", res);
	if (json_array_size(vols))
		json_object_set(spec, "volumes", vols);
	if (json_object_size(env))
		json_object_set(spec, "env", env);
	json_decref(res);
	json_decref(vols);
	json_decref(env);
	return code;
}

int cmd_run(strand_client *c, int argc, char **argv)
{
	json_t *spec = json_object(), *reply = NULL, *last = NULL;
	int wait = 0, code = run_options(argc, argv, spec, &wait);

	if (code == -1 || (!code && optind >= argc)) {
		json_decref(spec);
		return cli_usage(run_help, code == -1 ? 0 : EXIT_USAGE);
	}
	if (code) {
		json_decref(spec);
		return code;
	}
	json_t *cmd = json_array();
	for (int i = optind; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	json_object_set_new(spec, "command", cmd);
	if (strand_request(c, "POST", "/v1/processes", spec, &reply) != 201) {
		json_decref(spec);
		json_decref(reply);
		return cli_refused(c);
	}
	json_decref(spec);
	char id[32];
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(reply, "id")) ?: "");
	/* The gateway answers once the backend tried to start it: one that
	 * could not start is failed already. */
	if (strcmp(json_string_value(json_object_get(reply, "state")) ?: "", "failed") == 0) {
		fprintf(stderr, "strand: %s could not start: %s\n", id,
		        json_string_value(json_object_get(reply, "reason")) ?: "no reason given");
		json_decref(reply);
		return EXIT_REFUSED;
	}
	json_decref(reply);
	if (!wait) {
		puts(id);
		return 0;
	}
	cli_catch_interrupt(); /* first: a Ctrl-C once the id shows is caught */
	fprintf(stderr, "strand: process %s\n", id);
	if ((code = follow_output(c, id, 1, &last)) != 0)
		return code;
	if (cli_interrupted) {
		fprintf(stderr,
		        "\nstrand: interrupted; process %s goes on in the gateway: `strand kill %s` stops it, "
		        "`strand logs -f %s` follows it\n",
		        id, id, id);
		return 128 + SIGINT;
	}
	if (strcmp(json_string_value(json_object_get(last, "state")) ?: "", "failed") == 0) {
		fprintf(stderr, "strand: %s could not start: %s\n", id,
		        json_string_value(json_object_get(last, "reason")) ?: "no reason given");
		code = EXIT_REFUSED;
	} else {
		json_int_t exit_code = json_integer_value(json_object_get(last, "exit_code"));
		code = exit_code < 0 || exit_code > 255 ? EXIT_REFUSED : (int)exit_code;
	}
	json_decref(last);
	return code;
}

static void process_row(json_t *p, void *ctx)
{
	json_t *spec = json_object_get(p, "spec"), *ec = json_object_get(p, "exit_code");
	char *what = json_object_get(spec, "command")
	                     ? json_dumps(json_object_get(spec, "command"), JSON_COMPACT)
	                     : strdup(json_string_value(json_object_get(spec, "function")) ?: "");
	char code[16] = "-";

	(void)ctx;
	if (ec)
		snprintf(code, sizeof(code), "%lld", (long long)json_integer_value(ec));
	printf("%-20s %-8s %-5s %-8s %s\n", json_string_value(json_object_get(p, "id")) ?: "",
	       json_string_value(json_object_get(p, "state")) ?: "", code,
	       json_string_value(json_object_get(p, "backend")) ?: "", what ? what : "");
	free(what);
}

static void ring_row(json_t *r, void *ctx)
{
	json_t *m;
	size_t i;
	int running = 0;

	(void)ctx;
	json_array_foreach (json_object_get(r, "members"), i, m)
		running += strcmp(json_string_value(json_object_get(m, "state")) ?: "", "running") == 0;
	printf("%-20s %-8s %-5lld %-8d %-6lld %s\n", json_string_value(json_object_get(r, "id")) ?: "",
	       json_string_value(json_object_get(r, "state")) ?: "",
	       (long long)json_integer_value(json_object_get(r, "size")), running,
	       (long long)json_integer_value(json_object_get(r, "master_port")),
	       json_string_value(json_object_get(r, "created_at")) ?: "");
}

int cmd_ps(strand_client *c, int argc, char **argv)
{
	static const char help[] = "usage: strand ps [--rings] [--state S[,S...]] [--json]\n"
	                           "Lists processes newest first: id, state, exit code, backend, command; S: running,\n"
	                           "exited, failed. --rings: the rings instead: id, state, size, members running,\n"
	                           "master port, when made; S: running, done, failed. --json: a JSON line each.\n";
	static const struct option opts[] = {
	        {"rings", no_argument, NULL, 'r'},
	        {"state", required_argument, NULL, 's'},
	        {"json", no_argument, NULL, 'j'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *state = NULL;
	int as_json = 0, rings = 0, opt;
	char path[160];

	while ((opt = cli_next_opt(argc, argv, "", opts)) != -1) {
		if (opt == 'j')
			as_json = 1;
		else if (opt == 'r')
			rings = 1;
		else if (opt == 's' && cli_states_like(optarg))
			state = optarg;
		else
			return cli_usage(help, opt == 'h' ? 0 : EXIT_USAGE);
	}
	if (optind != argc)
		return cli_usage(help, EXIT_USAGE);
	snprintf(path, sizeof(path), "/v1/%s?limit=1000%s%s", rings ? "rings" : "processes", state ? "&state=" : "",
	         state ? state : "");
	if (as_json)
		return cli_print_pages(c, path, rings ? "rings" : "processes");
	if (rings) {
		printf("%-20s %-8s %-5s %-8s %-6s %s\n", "ID", "STATE", "SIZE", "RUNNING", "PORT", "CREATED");
		return cli_each_page(c, path, "rings", ring_row, NULL);
	}
	printf("%-20s %-8s %-5s %-8s %s\n", "ID", "STATE", "CODE", "BACKEND", "COMMAND");
	return cli_each_page(c, path, "processes", process_row, NULL);
}

/* A pool's output (or a manager's), each line "(WORKER) TEXT" on stdout or
 * stderr as the task wrote it; following, page after page (a long poll
 * each) until the pool ended and nothing more came. */
static int pool_output(strand_client *c, const char *id, int follow)
{
	const char *kind = id[0] == 'm' ? "managers" : "pools";
	char path[160];
	json_int_t next = 0;

	for (;;) {
		json_t *page = NULL, *pool = NULL, *line;
		size_t i;
		snprintf(path, sizeof(path), "/v1/%s/%s/logs?after=%lld&wait=%d", kind, id, (long long)next,
		         follow ? 5 : 0);
		if (strand_request(c, "GET", path, NULL, &page) != 200) {
			json_decref(page);
			return cli_refused(c);
		}
		json_array_foreach (json_object_get(page, "lines"), i, line) {
			int err = strcmp(json_string_value(json_object_get(line, "stream")) ?: "", "stderr") == 0;
			fprintf(err ? stderr : stdout, "(%s) %s\n", json_string_value(json_object_get(line, "worker")),
			        json_string_value(json_object_get(line, "text")));
		}
		size_t got = json_array_size(json_object_get(page, "lines"));
		next = json_integer_value(json_object_get(page, "next"));
		json_decref(page);
		fflush(stdout);
		if (got)
			continue;
		if (!follow)
			return 0;
		snprintf(path, sizeof(path), "/v1/%s/%s", kind, id);
		if (strand_request(c, "GET", path, NULL, &pool) != 200) {
			json_decref(pool);
			return cli_refused(c);
		}
		const char *state = json_string_value(json_object_get(pool, "state")) ?: "";
		int ended = strcmp(state, "terminated") == 0 || strcmp(state, "failed") == 0;
		json_decref(pool);
		if (ended)
			follow = 0; /* one more look, for what came at its end */
	}
}

int cmd_logs(strand_client *c, int argc, char **argv)
{
	static const char help[] = "usage: strand logs [-f] ID\nPrints what process ID wrote, or what the tasks of "
	                           "pool ID (or the methods of manager ID) printed, each line after its worker; -f "
	                           "follows it until it ends.\n";
	int follow = 0;
	const char *id = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
			follow = 1;
		else if (strcmp(argv[i], "--help") == 0)
			return cli_usage(help, 0);
		else if (!id && cli_id_like(argv[i]))
			id = argv[i];
		else
			return cli_usage(help, EXIT_USAGE);
	}
	if (!id)
		return cli_usage(help, EXIT_USAGE);
	if (strncmp(id, "p-", 2) == 0 || strncmp(id, "m-", 2) == 0)
		return pool_output(c, id, follow);
	return follow_output(c, id, follow, NULL);
}

int cmd_kill(strand_client *c, int argc, char **argv)
{
	char path[128];
	json_t *reply = NULL;

	if (argc != 2 || argv[1][0] == '-')
		return cli_usage("usage: strand kill ID\nTerminates process ID (SIGTERM, then SIGKILL after 2 s).\n",
		                 argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE);
	snprintf(path, sizeof(path), "/v1/processes/%s", argv[1]);
	if (strand_request(c, "DELETE", path, NULL, &reply) != 200)
		return cli_refused(c);
	printf("%s exited with code %lld\n", argv[1],
	       (long long)json_integer_value(json_object_get(reply, "exit_code")));
	json_decref(reply);
	return 0;
}
