/*
 * strand: the command line for a strand gateway ($STRAND_URL, default
 * http://127.0.0.1:8080), through libstrand.
 *
 *   strand run [--gpu N] [--cpu N] [--memory MB] [-v VOLUME:PATH] [--image I] [--backend B] [--wait] -- CMD...
 *   strand ps [--rings] | logs [-f] ID (a process's or a pool's) | kill ID
 *   strand pool create|map|status|results|resize|delete ...
 *   strand queue create|list|put|get ... ; strand pipe create|list|send|recv ...
 *   strand jobs list|cancel|failures ...
 *
 * Exit codes: 0 done; 1 the gateway refused or the work failed; 2 bad
 * usage; `strand run --wait` exits with the process's own code.
 */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"

static const char main_help[] =
        "usage: strand COMMAND [ARGS...]      (the gateway: $STRAND_URL, default http://127.0.0.1:8080)\n\n"
        "  run [options] -- CMD...   run a program as a strand process; prints its id\n"
        "  ps [--rings]              list processes (or rings)\n"
        "  logs [-f] ID              what a process wrote, or a pool's tasks printed\n"
        "  kill ID                   terminate a process\n"
        "  pool ...                  create, list, map, status, results, resize, delete\n"
        "  queue ...                 create, list, put, get\n"
        "  pipe ...                  create, list, send, recv\n"
        "  jobs ...                  list, cancel, failures\n\n"
        "`strand COMMAND --help` tells more; `strand --version` says its version.\n"
        "Exit codes: 0 done, 1 refused or failed, 2 bad usage.\n";

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(strand_client *, int, char **);
	} commands[] = {{"run", cmd_run},   {"ps", cmd_ps},       {"logs", cmd_logs}, {"kill", cmd_kill},
	                {"pool", cmd_pool}, {"queue", cmd_queue}, {"pipe", cmd_pipe}, {"jobs", cmd_jobs}};
	strand_client *c;
	int code;

	if (argc < 2)
		return cli_usage(main_help, EXIT_USAGE);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0)
		return cli_usage(main_help, 0);
	if (strcmp(argv[1], "--version") == 0) {
		printf("strand %s\n", STRAND_VERSION);
		return 0;
	}
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
	return cli_usage(main_help, EXIT_USAGE);
}
