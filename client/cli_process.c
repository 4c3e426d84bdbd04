/*
 * strand run, ps, logs, kill: processes.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"

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

int cmd_run(strand_client *c, int argc, char **argv)
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

	while ((opt = cli_next_opt(argc, argv, "+v:e:", opts)) != -1) {
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
				code = cli_usage(run_help, EXIT_USAGE);
				goto out;
			}
			*eq = '\0';
			json_object_set_new(env, optarg, json_string(eq + 1));
			break;
		}
		case 'w': wait = 1; break;
		case 'h': code = cli_usage(run_help, 0); goto out;
		default: code = cli_usage(run_help, EXIT_USAGE); goto out;
		}
	}
	if (optind >= argc) {
		code = cli_usage(run_help, EXIT_USAGE);
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
		code = cli_refused(c);
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
			code = cli_refused(c);
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

int cmd_ps(strand_client *c, int argc, char **argv)
{
	json_t *reply = NULL, *p;
	size_t i;

	if (argc > 1)
		return cli_usage("usage: strand ps\nLists processes: id, state, exit code, backend, command.\n",
		                 strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE);
	if (strand_request(c, "GET", "/v1/processes", NULL, &reply) != 200)
		return cli_refused(c);
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

int cmd_logs(strand_client *c, int argc, char **argv)
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
			return cli_usage(help, 0);
		else if (!id && argv[i][0] != '-')
			id = argv[i];
		else
			return cli_usage(help, EXIT_USAGE);
	}
	if (!id)
		return cli_usage(help, EXIT_USAGE);
	snprintf(path, sizeof(path), "/v1/processes/%s/logs", id);
	snprintf(state_path, sizeof(state_path), "/v1/processes/%s?wait=1", id);
	for (;;) {
		char *text = NULL;
		size_t len = 0;
		json_t *p = NULL;
		int running;
		if (strand_request_raw(c, "GET", path, &text, &len) != 200) {
			free(text);
			return cli_refused(c);
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
			return cli_refused(c);
		}
		running = strcmp(json_string_value(json_object_get(p, "state")), "running") == 0;
		json_decref(p);
		if (!running) {
			follow = 0; /* one last read for what came at the end */
			continue;
		}
	}
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
