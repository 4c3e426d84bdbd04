/* strand-gateway: configuration, signals, and the start/stop order of the
 * engine, the hub and the REST API. */
#define _GNU_SOURCE /* explicit_bzero */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/sandbox.h"
#include "gateway/blob_store.h"
#include "gateway/config.h"
#include "gateway/http/api.h"
#include "gateway/credentials.h"
#include "gateway/engine/engine.h"
#include "gateway/hub/hub.h"
#include "gateway/spec.h"
#include "store/store.h"

/* As many open files as the hard limit allows: each HTTP connection, worker
 * and hub pipe holds one; the API sizes its connection limit from this. */
static void raise_open_file_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static char damaged_why[512];
static const char *volatile damaged; /* set once, by the check's thread, before it signals */

/* The integrity check found the database damaged: stop as on SIGTERM. */
static void on_damaged_database(void *ctx, const char *why)
{
	(void)ctx;
	snprintf(damaged_why, sizeof(damaged_why), "%s", why);
	damaged = damaged_why;
	kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
	gw_config cfg;
	char detail[512] = "";
	credentials *creds = NULL;
	blob_store *code = NULL, *values = NULL;
	engine *e = NULL;
	hub *h = NULL;
	api *a = NULL;
	store_check *check = NULL;
	sigset_t set;
	int sig = 0;

	/* Not dumpable: another process of the same user (a task of the local
	 * backend) can neither ptrace the gateway nor read its /proc/PID/mem
	 * and environ, where the token, the workers' secrets and the database
	 * pages are; its /proc files are root's. A core dump is off too. */
	prctl(PR_SET_DUMPABLE, 0);
	cm_malloc_for_bursts();
	if (gw_config_load(&cfg, argc, argv, detail, sizeof(detail)) != CM_OK) {
		fprintf(stderr, "strand-gateway: %s\n", detail);
		return 64;
	}
	if (cfg.help) {
		gw_config_usage(stdout, &cfg);
		return 0;
	}
	if (cfg.version) {
		printf("strand-gateway %s\n", STRAND_VERSION);
		return 0;
	}
	spec_set_value_max(cfg.max_value_bytes); /* before any request is parsed */
	/* Signals are taken synchronously by this thread (sigwait); every other
	 * thread inherits the blocked mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* The database, its WAL, the token and the logs: the operator's only. */
	umask(077);
	raise_open_file_limit();

	/* What no program of the local backend may see: the gateway's secrets
	 * and every pool's data. */
	char db_wal[1100], db_shm[1100], db_logs[1100];
	snprintf(db_wal, sizeof(db_wal), "%s-wal", cfg.db);
	snprintf(db_shm, sizeof(db_shm), "%s-shm", cfg.db);
	snprintf(db_logs, sizeof(db_logs), "%s.logs", cfg.db);
	const char *hidden[] = {cfg.db,         db_wal,
	                        db_shm,         db_logs,
	                        cfg.token_file, cfg.code_dir,
	                        cfg.tls_key,    cfg.slurm.output_dir,
	                        cfg.kubeconfig, cfg.k8s.token_file};
	/* What a pool's own uid must reach to run at all; what its sandbox must
	 * show though under /tmp: strand's own tree, its plugins, an ipc://
	 * hub's folder. */
	const char *needs[] = {cfg.worker_bin};
	char prefix[1100], plugins[2048], hub_dir[300] = "";
	snprintf(prefix, sizeof(prefix), "%s", cfg.worker_bin);
	for (int up = 0; up < 2 && strrchr(prefix, '/'); up++)
		*strrchr(prefix, '/') = '\0';
	snprintf(plugins, sizeof(plugins), "%s", cfg.plugin_path);
	if (strncmp(cfg.hub_advertise, "ipc://", 6) == 0 && strrchr(cfg.hub_advertise, '/') > cfg.hub_advertise + 6)
		snprintf(hub_dir, sizeof(hub_dir), "%.*s",
		         (int)(strrchr(cfg.hub_advertise, '/') - cfg.hub_advertise - 6), cfg.hub_advertise + 6);
	const char *visible[12] = {prefix, hub_dir};
	size_t nvisible = 2;
	for (char *save = NULL, *d = strtok_r(plugins, ":", &save); d && nvisible < 12; d = strtok_r(NULL, ":", &save))
		visible[nvisible++] = d;
	sandbox *sb = NULL;
	if (sandbox_new(cfg.sandbox, hidden, sizeof(hidden) / sizeof(hidden[0]), visible, nvisible, cfg.sandbox_uids,
	                cfg.db, needs, 1, &sb, detail, sizeof(detail)) != CM_OK) {
		cm_error("cannot start: %s", detail);
		return 1;
	}
	if (sb)
		cm_info("local backend: workers and processes run in bubblewrap sandboxes");
	backend *backends[5] = {backend_local_new(cfg.gpus, sb),
	                        backend_docker_new(cfg.docker_socket, cfg.backend_timeout_s), backend_external_new()};
	size_t nbackends = 3;
	if (cfg.k8s.server[0]) {
		backends[nbackends] = backend_k8s_new(&cfg.k8s, cfg.backend_timeout_s, detail, sizeof(detail));
		/* The backend keeps its own copy: no other holds the secrets. */
		explicit_bzero(cfg.k8s.token, sizeof(cfg.k8s.token));
		explicit_bzero(cfg.k8s.key_pem, sizeof(cfg.k8s.key_pem));
		if (!backends[nbackends]) {
			cm_error("cannot start: %s", detail);
			for (size_t i = 0; i < nbackends; i++)
				backends[i]->ops->free(backends[i]);
			return 1;
		}
		nbackends++;
		cm_info("kubernetes backend: %s, namespace %s", cfg.k8s.server, cfg.k8s.ns);
	}
	if (cfg.slurm.enabled) {
		if (!(backends[nbackends] = backend_slurm_new(&cfg.slurm, detail, sizeof(detail)))) {
			cm_error("cannot start: %s", detail);
			for (size_t i = 0; i < nbackends; i++)
				backends[i]->ops->free(backends[i]);
			return 1;
		}
		nbackends++;
		cm_info("slurm backend: partition %s, workers' output in %s",
		        cfg.slurm.partition[0] ? cfg.slurm.partition : "(the default)", cfg.slurm.output_dir);
	}
	if (credentials_new(&creds) != CM_OK ||
	    blob_store_open(cfg.code_dir, &blob_kind_code, cfg.max_code_bytes, 0, &code, detail, sizeof(detail)) !=
	            CM_OK ||
	    blob_store_open(cfg.value_dir, &blob_kind_value, cfg.max_value_bytes, cfg.max_values_total, &values, detail,
	                    sizeof(detail)) != CM_OK ||
	    engine_new(&cfg, creds, backends, nbackends, &e, detail, sizeof(detail)) != CM_OK) {
		cm_error("cannot start: %s", detail);
		blob_store_free(code);
		blob_store_free(values);
		credentials_free(creds);
		return 1;
	}
	if (hub_start(&cfg, e, creds, code, values, &h, detail, sizeof(detail)) != CM_OK || engine_start(e) != CM_OK ||
	    api_start(&cfg, e, code, values, &a, detail, sizeof(detail)) != CM_OK) {
		cm_error("cannot start: %s", detail);
		engine_quiesce(e);
		api_stop(a);
		hub_refuse_frames(h);
		engine_free(e);
		hub_free(h);
		blob_store_free(code);
		blob_store_free(values);
		credentials_free(creds);
		return 1;
	}
	/* The integrity check, while we serve: a damaged database stops the
	 * gateway (exit 3) rather than be written to. */
	if (store_check_start(cfg.db, cfg.db_shared ? STORE_SHARED : 0, on_damaged_database, NULL, &check) != CM_OK)
		cm_warn("the database integrity check could not start");
	cm_info("strand-gateway listening on %s://%s, hub %s, db %s, backend %s", cfg.tls_cert[0] ? "https" : "http",
	        cfg.http, cfg.hub, cfg.db, cfg.backend);
	sigwait(&set, &sig);
	store_check_stop(check);
	if (damaged)
		cm_error("stopping: %s", damaged);
	else
		cm_info("signal %d: stopping", sig);
	/* Outside in: no new request, no new frame into the engine, then the
	 * engine (which answers the pulls it parked), then the hub. */
	engine_quiesce(e); /* long polls answer now, so the API can stop */
	api_stop(a);
	hub_refuse_frames(h);
	engine_free(e); /* stops every worker it started */
	hub_free(h);
	blob_store_free(code);
	blob_store_free(values);
	credentials_free(creds);
	cm_info("stopped");
	return damaged ? 3 : 0;
}
