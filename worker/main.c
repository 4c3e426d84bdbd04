/* strand-worker: flags and environment, signals, then worker_run. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "worker/code.h"
#include "worker/join.h"
#include "worker/runtime.h"
#include "worker/values.h"
#include "worker/worker.h"

/* The one global: set by signal handlers, which may run on any thread
 * (nng's too), so an atomic, not a volatile int. */
static atomic_int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);
	return v && v[0] ? v : fallback;
}

/* --run: one function, once, as the body of a strand Process, whose exit
 * code is the runtime's (a Python Process's sys.exit), or 1 when it failed.
 * With an identity (STRAND_WORKER_ID, STRAND_POOL_ID, STRAND_SECRET: the
 * process's own, which the gateway gives a function) it reaches queues and
 * pipes as a pool's task does; with STRAND_RUNTIME, rt: functions run in
 * the runtime. */
static int run_once(const worker_config *cfg, const char *function, const char *arg)
{
	worker_fns *fns = worker_fns_new(cfg->plugin_path);
	/* With an identity, its large queue items go as values, as a task's. */
	worker_values *values = cfg->worker_id && cfg->secret ? worker_values_new(cfg) : NULL;
	cm_buf out;
	int ok = 0, code = 0;

	cm_buf_init(&out);
	int runtime_err = fns && cfg->runtime ? worker_fns_set_runtime(fns, cfg->runtime) : CM_OK;
	struct worker_runtime *rt = runtime_err == CM_OK && fns && cfg->runtime ? worker_fns_runtime(fns) : NULL;

	if (rt)
		worker_runtime_use_values(rt, values);
	if (runtime_err != CM_OK) {
		fprintf(stderr, "strand-worker: the runtime is not \"python\" or a JSON array of strings: %s\n",
		        cfg->runtime);
	} else if (!fns || worker_fns_run(fns, function, arg, strlen(arg), NULL, 0, 0, (uint64_t)getpid(), &out, &ok) !=
	                           CM_OK) {
		fprintf(stderr, "strand-worker: out of memory\n");
		ok = 0;
	} else {
		fprintf(ok ? stdout : stderr, "%s\n", out.data ? out.data : "");
		fflush(ok ? stdout : stderr);
		if (rt) /* the processes its function started may still call through it */
			code = worker_runtime_finish(rt);
	}
	/* A runtime that ended under its function (os._exit(3)) says the code. */
	int lost = rt ? worker_runtime_lost_code(rt) : -1;
	if (!ok)
		code = lost >= 0 ? lost : 1;
	cm_buf_fini(&out);
	worker_fns_free(fns);
	worker_values_free(values);
	worker_api_fini();
	return code;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: strand-worker [options]\n"
	           "Runs tasks for one pool of a strand gateway. Backends start it; it is rarely run by hand.\n\n"
	           "  --hub URL              nng URL of the gateway hub (STRAND_HUB, default tcp://127.0.0.1:7070)\n"
	           "  --pool ID              pool id (STRAND_POOL_ID)\n"
	           "  --id ID                this worker's id (STRAND_WORKER_ID)\n"
	           "  (STRAND_SECRET: this worker's own secret, from the environment only: it is removed from\n"
	           "  it at start, out of the reach of tasks; or STRAND_SECRET_FD, a pipe to read it from)\n"
	           "  --plugin-path DIRS     folders searched for LIB.so plugins (STRAND_PLUGIN_PATH)\n"
	           "  (a tls+tcp:// hub: the CA to trust in STRAND_HUB_CA_PEM, or a file in STRAND_HUB_CA; the name\n"
	           "  its certificate carries in STRAND_HUB_SERVER_NAME, default the hub URL's host)\n"
	           "  (STRAND_CODE: the SHA-256 of the pool's code package, fetched from the hub into a cache\n"
	           "  (STRAND_CACHE_DIR, default ~/.cache/strand) and the working directory of its tasks)\n"
	           "  --gateway-timeout S    exit when the gateway is away this long (STRAND_GATEWAY_TIMEOUT, 60)\n"
	           "  --join URL             join an external pool, from any host: its token (STRAND_JOIN_TOKEN,\n"
	           "                         or --join-token) is traded at the gateway's API (https://HOST:PORT)\n"
	           "                         for this worker's identity and the hub's URL\n"
	           "  --join-token TOKEN     the token POST /v1/pools/{id}/join gave\n"
	           "  --ca FILE              the CA to check the gateway's certificate by (default: the system's)\n"
	           "  --run FUNCTION         run one function once instead (a strand Process): its result as\n"
	           "                         JSON on stdout and exit 0, or its error on stderr and exit 1\n"
	           "  --arg JSON             the argument for --run (default null); given more than once, its\n"
	           "                         parts in order (one exec string holds at most 128 KiB)\n"
	           "  --help                 this text\n"
	           "  --version              strand-worker's version\n");
}

/* Seconds from text, a whole number (cm_whole); -1 for anything else. */
static int whole_seconds(const char *text)
{
	int64_t v;

	return cm_whole(text, 0, INT_MAX, &v) == CM_OK ? (int)v : -1;
}

/* The worker's own secret, which every frame to the hub carries: read from
 * the pipe STRAND_SECRET_FD names (the local backend's way: no environment
 * ever holds it), or taken out of the environment at once (STRAND_SECRET),
 * so that no task (a command the worker forks, a plugin calling getenv)
 * finds it. The process is made undumpable, so that other processes of the
 * same user cannot read it from /proc/PID/environ or /proc/PID/mem either
 * (root still can). */
static const char *take_secret(void)
{
	static char secret[128];
	char *v = getenv("STRAND_SECRET"), *fd_text = getenv("STRAND_SECRET_FD");

	if (fd_text) {
		int fd = atoi(fd_text);
		size_t got = 0;
		ssize_t n;
		while (fd > 2 && got < sizeof(secret) - 1 && (n = read(fd, secret + got, sizeof(secret) - 1 - got)) > 0)
			got += (size_t)n;
		secret[got] = '\0';
		if (fd > 2)
			close(fd);
		unsetenv("STRAND_SECRET_FD");
	} else if (v) {
		snprintf(secret, sizeof(secret), "%s", v);
		/* The bytes /proc/PID/environ shows, not a copy. */
		explicit_bzero(v, strlen(v));
		unsetenv("STRAND_SECRET");
	}
	prctl(PR_SET_DUMPABLE, 0);
	return secret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"hub", required_argument, NULL, 'h'},
	        {"pool", required_argument, NULL, 'p'},
	        {"id", required_argument, NULL, 'i'},
	        {"plugin-path", required_argument, NULL, 'P'},
	        {"gateway-timeout", required_argument, NULL, 't'},
	        {"run", required_argument, NULL, 'r'},
	        {"arg", required_argument, NULL, 'a'},
	        {"join", required_argument, NULL, 'j'},
	        {"join-token", required_argument, NULL, 'T'},
	        {"ca", required_argument, NULL, 'C'},
	        {"help", no_argument, NULL, 'H'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	worker_config cfg = {
	        .hub = env_or("STRAND_HUB", "tcp://127.0.0.1:7070"),
	        .pool_id = env_or("STRAND_POOL_ID", NULL),
	        .worker_id = env_or("STRAND_WORKER_ID", NULL),
	        .secret = take_secret(),
	        .plugin_path = env_or("STRAND_PLUGIN_PATH", NULL),
	        .gateway_timeout_s = whole_seconds(env_or("STRAND_GATEWAY_TIMEOUT", "60")),
	        .manager = env_or("STRAND_MANAGER_TYPE", NULL),
	        .runtime = env_or("STRAND_RUNTIME", NULL),
	        .hub_ca_pem = env_or("STRAND_HUB_CA_PEM", NULL),
	        .hub_ca_file = env_or("STRAND_HUB_CA", NULL),
	        .hub_server_name = env_or("STRAND_HUB_SERVER_NAME", NULL),
	        .code = env_or("STRAND_CODE", NULL),
	};
	char why[512];
	struct sigaction sa;
	const char *run = NULL, *join_url = NULL, *ca_file = NULL;
	char *join_token = getenv("STRAND_JOIN_TOKEN");
	const char *timeout_from = "STRAND_GATEWAY_TIMEOUT";
	cm_buf arg;
	int c;

	cm_malloc_for_bursts();
	cm_buf_init(&arg);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h': cfg.hub = optarg; break;
		case 'p': cfg.pool_id = optarg; break;
		case 'i': cfg.worker_id = optarg; break;
		case 'P': cfg.plugin_path = optarg; break;
		case 't':
			cfg.gateway_timeout_s = whole_seconds(optarg);
			timeout_from = "--gateway-timeout";
			break;
		case 'r': run = optarg; break;
		case 'a':
			if (cm_buf_puts(&arg, optarg) != CM_OK) {
				fprintf(stderr, "strand-worker: out of memory\n");
				return 1;
			}
			break;
		case 'j': join_url = optarg; break;
		case 'T': join_token = optarg; break;
		case 'C': ca_file = optarg; break;
		case 'H': usage(stdout); return 0;
		case 'V': printf("strand-worker %s\n", STRAND_VERSION); return 0;
		default: fprintf(stderr, "strand-worker: bad arguments (see --help)\n"); return 64;
		}
	}
	if (cfg.gateway_timeout_s < 0) {
		fprintf(stderr, "strand-worker: %s must be a whole number of seconds\n", timeout_from);
		return 64;
	}
	if (run) {
		signal(SIGPIPE, SIG_IGN);
		if (cfg.code && (!cfg.pool_id || !cfg.worker_id || !cfg.secret[0])) {
			fprintf(stderr,
			        "strand-worker: STRAND_CODE is fetched with a worker's identity (STRAND_POOL_ID, "
			        "STRAND_WORKER_ID, STRAND_SECRET)\n");
			return 64;
		}
		if (cfg.code && worker_code_enter(&cfg, why, sizeof(why)) != CM_OK) {
			fprintf(stderr, "strand-worker: code package %.12s: %s\n", cfg.code, why);
			return 1;
		}
		if (cfg.pool_id && cfg.worker_id && cfg.secret[0])
			worker_api_init(&cfg);
		int code = run_once(&cfg, run, arg.len ? arg.data : "null");
		cm_buf_fini(&arg);
		return code;
	}
	if (cfg.gateway_timeout_s <= 0)
		cfg.gateway_timeout_s = 60;
	if (join_url) {
		char token[256];
		if (!join_token || !join_token[0] || run) {
			fprintf(stderr,
			        "strand-worker: --join needs a token (--join-token or STRAND_JOIN_TOKEN), and no "
			        "--run\n");
			return 64;
		}
		snprintf(token, sizeof(token), "%s", join_token);
		explicit_bzero(join_token, strlen(join_token)); /* out of /proc/PID/environ and cmdline */
		unsetenv("STRAND_JOIN_TOKEN");
		int joined = worker_join(join_url, token, ca_file, &cfg, why, sizeof(why));
		explicit_bzero(token, sizeof(token));
		if (joined != 0) {
			fprintf(stderr, "strand-worker: %s\n", why);
			return 1;
		}
	}
	if (!cfg.pool_id || !cfg.worker_id) {
		fprintf(stderr, "strand-worker: --pool and --id (or STRAND_POOL_ID, STRAND_WORKER_ID) are required\n");
		return 64;
	}
	if (cfg.code && worker_code_enter(&cfg, why, sizeof(why)) != CM_OK) {
		fprintf(stderr, "strand-worker: code package %.12s: %s\n", cfg.code, why);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return worker_run(&cfg, &stop_flag);
}
