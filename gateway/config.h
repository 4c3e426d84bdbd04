/*
 * Gateway configuration: flags, with the same settings from the environment
 * (a flag wins over the environment, which wins over the default).
 */
#ifndef GATEWAY_CONFIG_H
#define GATEWAY_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "gateway/k8s_config.h"
#include "gateway/slurm_config.h"

#define CONFIG_GPUS_MAX 64

typedef struct gw_config {
	char http[256]; /* host:port the REST API listens on */
	char hub[256]; /* nng URL the hub listens on */
	char hub_advertise[256]; /* the URL workers dial (a Service's name in a cluster); "": hub */
	char db[1024]; /* SQLite file */
	char code_dir[1100]; /* code packages (blob_store.h) */
	int64_t max_code_bytes; /* one code package at most */
	char value_dir[1100]; /* uploaded values (blob_store.h) */
	int sync_full; /* --sync full: each commit survives an OS crash too (else a crash of the gateway) */
	int db_shared; /* --db-shared: other processes may read the database (store.h, STORE_SHARED) */
	int64_t retain_ms; /* ended jobs older than this are removed; 0: kept for ever */
	char backend[32]; /* default backend for new pools */
	char image[256]; /* default worker image (docker) */
	char docker_socket[256]; /* the Docker Engine API */
	int backend_timeout_s; /* a call to a backend's daemon that takes longer fails */
	/* kubernetes: flags over a kubeconfig over, in a pod, its service account; server "": none */
	k8s_config k8s;
	char kubeconfig[1024];
	slurm_config slurm; /* --slurm: jobs through sbatch, squeue and scancel */
	char worker_bin[1024]; /* strand-worker executable the local backend runs */
	char plugin_path[2048]; /* STRAND_PLUGIN_PATH handed to workers */
	char web_root[1024]; /* dashboard files */
	int lease_ms; /* a worker silent this long loses its tasks */
	int gpus; /* GPUs the local backend hands out: --gpus, else the /dev/nvidiaN found */
	int local_starts; /* local workers starting at once (engine/scale.c): --local-starts, else the CPUs */
	int local_start_slot_ms; /* a start taking longer stops holding back the next: 1000 (tests lengthen it) */
	char token_file[1100]; /* the API token: read, or created 0600 */
	char token[256]; /* STRAND_TOKEN, taken out of the environment so no child inherits it */
	int no_auth; /* --no-auth: no token asked (loopback only) */
	char public_hosts[1024]; /* extra names the Host header may carry, comma-separated */
	char allow_host_paths[2048]; /* host-path volume prefixes allowed, colon-separated; "": none */
	/* Quotas: what the gateway holds at once (engine/quotas.c). */
	int64_t max_pools, max_managers, max_workers, max_processes, max_queues, max_pipes, max_leases;
	int64_t max_queue_bytes; /* items held in all queues and pipes together */
	int64_t max_values_total; /* uploaded values kept at once */
	int64_t max_value_bytes; /* one value: an argument, a result, an item, a call (spec.h) */
	int64_t max_inflight_bytes; /* request bodies held at once */
	char allow_images[2048]; /* container images allowed, comma-separated globs; "": --image alone */
	char allow_volumes[2048]; /* named volumes allowed, comma-separated globs; "": none */
	char sandbox[8]; /* the local backend's: "auto", "on" or "off" (backend/sandbox.h) */
	char sandbox_uids[64]; /* as root: the uids pools and processes run as, "FIRST-LAST" ("": root's) */
	int no_commands; /* refuse command tasks and command processes */
	char allow_runtime[256]; /* with no_commands, the runtimes still allowed (comma-separated names) */
	int allow_root_containers; /* containers may run as root when a pool asks */
	int64_t session_idle_ms; /* a dashboard sign-in unused this long ends */
	int http_idle_s; /* a connection idle this long (a slow header, a silent keep-alive) is closed */
	int http_per_client; /* connections one client address may hold open */
	int hub_per_address; /* hub connections one address may hold before they name a worker, and open a second */
	int http_header_s; /* a request's headers arrive within this, however they trickle */
	int http_min_rate; /* and its body at this many bytes a second at least */
	int http_max; /* connections in all; 0: from the file-descriptor limit */
	char tls_cert[1024]; /* HTTPS: the certificate chain (PEM), "" for plain HTTP */
	char tls_key[1024]; /* ... and its private key (PEM); also the hub's, for a tls+tcp:// hub */
	char hub_ca[1024]; /* tls+tcp:// hub: the CA workers trust (PEM); "": tls_cert itself */
	char hub_server_name[256]; /* ... and the name workers expect on its certificate; "": the hub URL's host */
	int help;
	int version; /* --version: say it and exit */
} gw_config;

/* Fills cfg from defaults, then environment, then argv. On a bad flag returns
 * CM_EINVAL with the reason in detail. */
int gw_config_load(gw_config *cfg, int argc, char **argv, char *detail, size_t detail_len);
/* cfg: the loaded configuration, for the defaults it resolved (may be NULL). */
void gw_config_usage(FILE *f, const gw_config *cfg);

#endif
