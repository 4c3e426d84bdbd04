/* Flags and environment for strand-gateway. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <getopt.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/config.h"
#include "gateway/spec.h"

/* Returns whether it set dst (v is not empty). */
static int set(char *dst, size_t n, const char *v)
{
	if (!v || !v[0])
		return 0;
	snprintf(dst, n, "%s", v);
	return 1;
}

/* The quotas: flag (its getopt code is 1030 + its index), environment
 * variable and default. */
static const struct quota_flag {
	const char *flag, *env;
	size_t field; /* offset in gw_config of its int64_t */
	int64_t fallback;
} quota_flags[] = {
        {"--max-pools", "STRAND_MAX_POOLS", offsetof(gw_config, max_pools), 256},
        {"--max-managers", "STRAND_MAX_MANAGERS", offsetof(gw_config, max_managers), 256},
        {"--max-workers", "STRAND_MAX_WORKERS", offsetof(gw_config, max_workers), 512},
        {"--max-processes", "STRAND_MAX_PROCESSES", offsetof(gw_config, max_processes), 512},
        {"--max-queues", "STRAND_MAX_QUEUES", offsetof(gw_config, max_queues), 10000},
        {"--max-pipes", "STRAND_MAX_PIPES", offsetof(gw_config, max_pipes), 10000},
        {"--max-leases", "STRAND_MAX_LEASES", offsetof(gw_config, max_leases), 10000},
        {"--max-queue-bytes", "STRAND_MAX_QUEUE_BYTES", offsetof(gw_config, max_queue_bytes), (int64_t)4 << 30},
        {"--max-value-bytes", "STRAND_MAX_VALUE_BYTES", offsetof(gw_config, max_value_bytes), SPEC_VALUE_DEFAULT},
        {"--max-inflight-bytes", "STRAND_MAX_INFLIGHT_BYTES", offsetof(gw_config, max_inflight_bytes),
         (int64_t)512 << 20},
        {"--max-values-total", "STRAND_MAX_VALUES_TOTAL", offsetof(gw_config, max_values_total), (int64_t)16 << 30},
};
#define QUOTA_FLAGS ((int)(sizeof(quota_flags) / sizeof(quota_flags[0])))

/* Each quota from its flag's text (quota_text[i], "" for none), else its
 * environment variable, else its default: a whole number, 1 or more. */
static int quotas_load(gw_config *cfg, char quota_text[][32], char *detail, size_t detail_len)
{
	for (int i = 0; i < QUOTA_FLAGS; i++) {
		const char *text = quota_text[i][0] ? quota_text[i] : getenv(quota_flags[i].env);
		int64_t *v = (int64_t *)((char *)cfg + quota_flags[i].field);
		*v = quota_flags[i].fallback;
		if (!text || !text[0])
			continue;
		if (cm_whole(text, 1, INT64_MAX, v) != CM_OK) {
			snprintf(detail, detail_len, "%s must be a whole number, 1 or more", quota_flags[i].flag);
			return CM_EINVAL;
		}
	}
	return CM_OK;
}

/* The first whole-number flag (or variable) whose text is not one: atoi
 * took "4abc" as 4, "two" as 0 and 2^32 + 4 as 4. */
typedef struct {
	const char *name, *text;
} not_whole;

/* *out from text, a whole number that fits an int (cm_whole); else it
 * stays as it was and *bad names it. */
static void whole(const char *text, const char *name, int *out, not_whole *bad)
{
	int64_t v;

	if (cm_whole(text, INT_MIN, INT_MAX, &v) != CM_OK) {
		if (!bad->name)
			*bad = (not_whole){name, text};
		return;
	}
	*out = (int)v;
}

void gw_config_usage(FILE *f, const gw_config *cfg)
{
	fprintf(f,
	        "usage: strand-gateway [options]\n"
	        "Runs the strand REST gateway: pools, jobs and workers, persisted in SQLite.\n\n"
	        "  --http HOST:PORT     REST API address (STRAND_HTTP, default 127.0.0.1:8080)\n"
	        "  --hub URL            where the hub listens: tcp://HOST:PORT, ipc:///PATH or tls+tcp://HOST:PORT\n"
	        "                       (STRAND_HUB, default tcp://127.0.0.1:7070)\n"
	        "  --hub-advertise URL  the URL workers dial, where it differs: tcp://0.0.0.0:7070 heard in a pod\n"
	        "                       is tcp://SERVICE.NAMESPACE.svc:7070 to workers (STRAND_HUB_ADVERTISE)\n"
	        "  --db FILE            SQLite database (STRAND_DB, default ./strand.db), which the gateway holds\n"
	        "                       alone while it runs: no other process can open it\n"
	        "  --db-shared          let other processes (sqlite3) read the database as it changes, at some\n"
	        "                       10 %% of an apply's latency: file locks on every commit\n"
	        "                       (STRAND_DB_SHARED=1)\n"
	        "  --sync LEVEL         normal: what was acknowledged survives a crash of the gateway (may lose\n"
	        "                       the last commits on an OS crash or power loss); full: survives those\n"
	        "                       too, at an fsync per commit (STRAND_SYNC, default normal)\n"
	        "  --code-dir DIR       where uploaded code packages are kept (STRAND_CODE_DIR, default: strand-code\n"
	        "                       next to --db)\n"
	        "  --max-code-bytes N   one code package at most, in bytes (STRAND_MAX_CODE_BYTES, default\n"
	        "                       104857600: 100 MiB)\n"
	        "  --value-dir DIR      where uploaded values are kept (STRAND_VALUE_DIR, default: strand-values\n"
	        "                       next to --db)\n"
	        "  --retain AGE         ended jobs (with their tasks and results), terminated pools and managers\n"
	        "                       (with their jobs), processes and rings (with their output) are removed\n"
	        "                       this long after they end: a number with s, m, h or d\n"
	        "                       (STRAND_RETAIN, default 7d; 0 keeps all)\n"
	        "  --backend NAME       default backend for pools: local, docker, kubernetes or slurm\n"
	        "                       (STRAND_BACKEND, default local)\n"
	        "  --image IMAGE        default worker image of docker pools (STRAND_IMAGE, default\n"
	        "                       strand-worker:latest)\n"
	        "  --docker-socket PATH the Docker Engine API (STRAND_DOCKER_SOCKET, default /var/run/docker.sock)\n"
	        "  --backend-timeout S  a call to a backend's daemon that takes longer fails, and the workers it\n"
	        "                       starts with it (STRAND_BACKEND_TIMEOUT, default 30)\n"
	        "  --kubeconfig FILE    the Kubernetes cluster and user of this kubeconfig's current context\n"
	        "                       (STRAND_KUBECONFIG; the flags below override what it says)\n"
	        "  --k8s-server URL     the Kubernetes API server for backend kubernetes (in a pod: its cluster's)\n"
	        "  --k8s-token-file F   its bearer token (in a pod: the service account's)\n"
	        "  --k8s-ca FILE        the CA its certificate is checked by (in a pod: the service account's)\n"
	        "  --k8s-namespace NS   where pods and their secrets go (default: default; in a pod: its own)\n"
	        "  --k8s-host-network   pods use the node's network (a cluster without a pod network); a pool may\n"
	        "                       then choose with \"host_network\", else it may not ask for it\n"
	        "  --k8s-start-grace S  a pod unschedulable or without its image this long fails its pool\n"
	        "                       (default 60)\n"
	        "  --k8s-pull-policy P  pods' imagePullPolicy: IfNotPresent (default), Never (images only from\n"
	        "                       the nodes' engines: no registry is ever asked), Always\n"
	        "  --slurm              offer backend slurm: workers and processes as Slurm batch jobs, through\n"
	        "                       sbatch, squeue and scancel as this user (STRAND_SLURM=1; Slurm's own\n"
	        "                       settings from SLURM_CONF or the host's)\n"
	        "  --slurm-partition P  the partition jobs go to (STRAND_SLURM_PARTITION, default: the cluster's)\n"
	        "  --slurm-output-dir D where workers' output goes, a directory the nodes share\n"
	        "                       (STRAND_SLURM_OUTPUT_DIR, default: slurm-output next to --db)\n"
	        "  --worker-bin FILE    strand-worker for the local backend (STRAND_WORKER_BIN,\n"
	        "                       default: next to strand-gateway)\n"
	        "  --plugin-path DIRS   plugin folders given to workers (STRAND_PLUGIN_PATH,\n"
	        "                       default: ../" STRAND_PLUGIN_INSTALL_DIR " next to strand-gateway; in a\n"
	        "                       build tree, ../lib)\n"
	        "  --web-root DIR       dashboard files (STRAND_WEB_ROOT, default: ../share/strand/web)\n"
	        "  --lease-ms MS        worker lease (STRAND_LEASE_MS, default 5000)\n"
	        "  --gpus N             GPUs on this host for the local backend (STRAND_GPUS, default:\n"
	        "                       the /dev/nvidiaN devices found)\n"
	        "  --local-starts N     local workers starting at once, the next as soon as one is up\n"
	        "                       (STRAND_LOCAL_STARTS, default: this host's CPUs)\n"
	        "\nQuotas: what the gateway holds at once; past one a request gets 429 naming it\n"
	        "  --max-pools N        pools not ended (STRAND_MAX_POOLS, default 256)\n"
	        "  --max-managers N     managers not ended (STRAND_MAX_MANAGERS, default 256)\n"
	        "  --max-workers N      workers those pools and managers may have, autoscale's maximum counted\n"
	        "                       (STRAND_MAX_WORKERS, default 512)\n"
	        "  --max-processes N    processes running, ring members included (STRAND_MAX_PROCESSES,\n"
	        "                       default 512)\n"
	        "  --max-queues N       queues (STRAND_MAX_QUEUES, default 10000)\n"
	        "  --max-pipes N        pipes (STRAND_MAX_PIPES, default 10000)\n"
	        "  --max-queue-bytes B  bytes of items held in all queues and pipes (STRAND_MAX_QUEUE_BYTES,\n"
	        "                       default 4294967296)\n"
	        "  --max-leases N       client leases (STRAND_MAX_LEASES, default 10000)\n"
	        "  --max-value-bytes B  one value: a task's argument or result, a queue or pipe item, a manager\n"
	        "                       call; 413 past it, a result past it fails its task. Inline in JSON a\n"
	        "                       value is 8388608 bytes at most: larger ones are uploaded\n"
	        "                       (PUT /v1/values/{sha256}) (STRAND_MAX_VALUE_BYTES, default 1073741824)\n"
	        "  --max-values-total B bytes of uploaded values kept at once (STRAND_MAX_VALUES_TOTAL,\n"
	        "                       default 17179869184)\n"
	        "  --max-inflight-bytes B  request bodies held at once; 503 with Retry-After past it\n"
	        "                       (STRAND_MAX_INFLIGHT_BYTES, default 536870912)\n"
	        "\nSecurity (see docs/operations.md, Security):\n"
	        "  --token-file FILE    the API token every /v1 request must carry as 'Authorization: Bearer'\n"
	        "                       (STRAND_TOKEN_FILE, default: strand.token next to --db, now %s);\n"
	        "                       created 0600 with a random token when absent. STRAND_TOKEN sets the\n"
	        "                       token itself instead\n"
	        "  --no-auth            ask no token: refused unless --http is a loopback address\n"
	        "  --public-host NAMES  host names (comma-separated) clients may use in the Host header besides\n"
	        "                       IP addresses and localhost (STRAND_PUBLIC_HOST)\n"
	        "  --allow-host-paths P host-path volumes allowed under these prefixes (colon-separated;\n"
	        "                       STRAND_ALLOW_HOST_PATHS; default none)\n"
	        "  --allow-images P     container images a pool or process may name (comma-separated globs,\n"
	        "                       strand-worker:*; STRAND_ALLOW_IMAGES; default: --image alone)\n"
	        "  --allow-volumes P    named volumes (Docker) and claims (Kubernetes) a pool or process may\n"
	        "                       mount (comma-separated globs; STRAND_ALLOW_VOLUMES; default none; never\n"
	        "                       the one that holds this gateway's own data)\n"
	        "  --sandbox MODE       the local backend's workers and processes run in a bubblewrap sandbox\n"
	        "                       (their own pids, the system read-only, a private /tmp, the gateway's files\n"
	        "                       out of sight): on, off, or auto (where it works) (STRAND_SANDBOX,\n"
	        "                       default auto)\n"
	        "  --sandbox-uids F-L   a gateway run as root runs each pool's and process's sandbox as a uid of\n"
	        "                       its own from this range (STRAND_SANDBOX_UIDS, default 2100000000-2100999999;\n"
	        "                       empty: as root)\n"
	        "  --no-commands        refuse command tasks and command processes, and runtimes (which run any\n"
	        "                       code they are given) (STRAND_NO_COMMANDS=1)\n"
	        "  --allow-runtime N    with --no-commands, the runtimes still allowed: python, or a runtime\n"
	        "                       command's program, comma-separated (STRAND_ALLOW_RUNTIME; default none)\n"
	        "  --allow-root-containers  a pool or process may ask for \"root\": true containers\n"
	        "  --session-idle AGE   a dashboard sign-in unused this long ends (STRAND_SESSION_IDLE,\n"
	        "                       default 12h; s, m, h or d)\n"
	        "  --http-idle S        close a connection idle for S seconds: a slow header, a silent\n"
	        "                       keep-alive (default 10; a long poll is not idle)\n"
	        "  --http-header-s S    a request's headers must all arrive within S seconds of the connection\n"
	        "                       or of the previous answer, however they trickle (default 10)\n"
	        "  --http-min-rate B    and its body at B bytes a second at least, on average (default 65536)\n"
	        "  --http-per-client N  connections one client address may hold (default 256)\n"
	        "  --http-max N         connections in all (default: below the open-file limit, at most 8192)\n"
	        "  --tls-cert FILE      serve HTTPS with this certificate chain (PEM; STRAND_TLS_CERT)\n"
	        "  --tls-key FILE       and this private key (PEM; STRAND_TLS_KEY). A --hub tls+tcp://HOST:PORT\n"
	        "                       uses them too: workers get the CA to trust in their environment\n"
	        "  --hub-ca FILE        the CA workers trust for a tls+tcp:// hub (STRAND_HUB_CA, default --tls-cert)\n"
	        "  --hub-server-name N  the name workers check on the hub's certificate (STRAND_HUB_SERVER_NAME,\n"
	        "                       default the hub URL's host: a DNS name, or an address the certificate lists)\n"
	        "  --hub-per-address N  hub connections one address (an IPv6 /64) may hold before they name a\n"
	        "                       worker, and open a second, twice that at once (default 128)\n"
	        "  --help               this text\n"
	        "  --version            strand-gateway's version\n",
	        cfg && cfg->token_file[0] ? cfg->token_file : "./strand.token");
}

/* "0", or a whole number of seconds, minutes, hours or days ("90s", "7d";
 * a bare number is seconds), at most ten years: *ms, or -1 when not so. */
static int64_t parse_age(const char *v)
{
	static const struct {
		char unit;
		int64_t ms;
	} units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}};
	int64_t n = 0;
	const char *p = v;

	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > 3650LL * 86400)
			return -1;
	}
	if (p == v)
		return -1;
	if (!*p)
		return n * 1000;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (*p == units[i].unit && !p[1])
			return n * units[i].ms > 3650LL * 86400000 ? -1 : n * units[i].ms;
	return -1;
}

/* A DNS-1123 label: what a Kubernetes namespace is (and what may go in a URL
 * path unescaped). */
static int dns_label(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* Inside a pod: its cluster's API server and service account, unless
 * flags say otherwise. */
static void in_cluster(gw_config *cfg)
{
	static const char sa[] = "/var/run/secrets/kubernetes.io/serviceaccount";
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	char path[128], ns[64] = "";
	FILE *f;

	if (!host || !port || access(sa, R_OK) != 0)
		return;
	snprintf(cfg->k8s.server, sizeof(cfg->k8s.server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
	         host, port);
	snprintf(cfg->k8s.token_file, sizeof(cfg->k8s.token_file), "%s/token", sa);
	snprintf(cfg->k8s.ca_file, sizeof(cfg->k8s.ca_file), "%s/ca.crt", sa);
	snprintf(path, sizeof(path), "%s/namespace", sa);
	if ((f = fopen(path, "r"))) {
		if (fgets(ns, sizeof(ns), f)) {
			ns[strcspn(ns, "\n")] = '\0';
			if (ns[0])
				snprintf(cfg->k8s.ns, sizeof(cfg->k8s.ns), "%s", ns);
		}
		fclose(f);
	}
}

/* out: name in the database's folder. */
static void next_to_db(const gw_config *cfg, const char *name, char *out, size_t out_len)
{
	char db[sizeof(cfg->db)];

	snprintf(db, sizeof(db), "%s", cfg->db);
	snprintf(out, out_len, "%s/%s", dirname(db), name);
}

/* The kubernetes flags given on the command line. */
typedef struct k8s_flags {
	int server, token, ca, ns;
} k8s_flags;

/* A kubeconfig replaces the in-cluster settings; a flag given beside it
 * still wins, as with kubectl. */
static int with_kubeconfig(gw_config *cfg, const k8s_flags *given, char *detail, size_t detail_len)
{
	k8s_config *kc = calloc(1, sizeof(*kc));
	k8s_config *k = &cfg->k8s;
	int err;

	if (!kc) {
		snprintf(detail, detail_len, "out of memory");
		return CM_ENOMEM;
	}
	if ((err = kubeconfig_load(cfg->kubeconfig, kc, detail, detail_len)) == CM_OK) {
		if (!given->server)
			memcpy(k->server, kc->server, sizeof(k->server));
		if (!given->token) {
			memcpy(k->token_file, kc->token_file, sizeof(k->token_file));
			memcpy(k->token, kc->token, sizeof(k->token));
		}
		if (!given->ca) {
			memcpy(k->ca_file, kc->ca_file, sizeof(k->ca_file));
			memcpy(k->ca_pem, kc->ca_pem, sizeof(k->ca_pem));
		}
		memcpy(k->cert_pem, kc->cert_pem, sizeof(k->cert_pem));
		memcpy(k->key_pem, kc->key_pem, sizeof(k->key_pem));
		if (!given->ns) /* the context's, or kubectl's default */
			snprintf(k->ns, sizeof(k->ns), "%s", kc->ns[0] ? kc->ns : "default");
	}
	explicit_bzero(kc, sizeof(*kc));
	free(kc);
	return err;
}

int gw_config_load(gw_config *cfg, int argc, char **argv, char *detail, size_t detail_len)
{
	static const struct option opts[] = {
	        {"http", required_argument, NULL, 'h'},
	        {"hub", required_argument, NULL, 'u'},
	        {"db", required_argument, NULL, 'd'},
	        {"backend", required_argument, NULL, 'b'},
	        {"worker-bin", required_argument, NULL, 'w'},
	        {"plugin-path", required_argument, NULL, 'p'},
	        {"web-root", required_argument, NULL, 'r'},
	        {"lease-ms", required_argument, NULL, 'l'},
	        {"image", required_argument, NULL, 'i'},
	        {"docker-socket", required_argument, NULL, 's'},
	        {"backend-timeout", required_argument, NULL, 'o'},
	        {"k8s-server", required_argument, NULL, 1000},
	        {"k8s-token-file", required_argument, NULL, 1001},
	        {"k8s-ca", required_argument, NULL, 1002},
	        {"k8s-namespace", required_argument, NULL, 1003},
	        {"k8s-host-network", no_argument, NULL, 1004},
	        {"k8s-start-grace", required_argument, NULL, 1005},
	        {"k8s-pull-policy", required_argument, NULL, 1006},
	        {"kubeconfig", required_argument, NULL, 1007},
	        {"hub-advertise", required_argument, NULL, 1008},
	        {"sync", required_argument, NULL, 1009},
	        {"retain", required_argument, NULL, 1010},
	        {"slurm", no_argument, NULL, 1011},
	        {"slurm-partition", required_argument, NULL, 1012},
	        {"slurm-output-dir", required_argument, NULL, 1013},
	        {"gpus", required_argument, NULL, 'g'},
	        {"local-starts", required_argument, NULL, 1042},
	        {"token-file", required_argument, NULL, 't'},
	        {"no-auth", no_argument, NULL, 'N'},
	        {"public-host", required_argument, NULL, 'P'},
	        {"allow-host-paths", required_argument, NULL, 'A'},
	        {"allow-images", required_argument, NULL, 1023},
	        {"allow-volumes", required_argument, NULL, 1024},
	        {"no-commands", no_argument, NULL, 'C'},
	        {"db-shared", no_argument, NULL, 1014},
	        {"code-dir", required_argument, NULL, 1015},
	        {"max-code-bytes", required_argument, NULL, 1016},
	        {"allow-runtime", required_argument, NULL, 1017},
	        {"sandbox", required_argument, NULL, 1018},
	        {"sandbox-uids", required_argument, NULL, 1019},
	        {"allow-root-containers", no_argument, NULL, 'R'},
	        {"session-idle", required_argument, NULL, 1020},
	        {"max-pools", required_argument, NULL, 1030},
	        {"max-managers", required_argument, NULL, 1031},
	        {"max-workers", required_argument, NULL, 1032},
	        {"max-processes", required_argument, NULL, 1033},
	        {"max-queues", required_argument, NULL, 1034},
	        {"max-pipes", required_argument, NULL, 1035},
	        {"max-leases", required_argument, NULL, 1036},
	        {"max-queue-bytes", required_argument, NULL, 1037},
	        {"max-value-bytes", required_argument, NULL, 1038},
	        {"max-inflight-bytes", required_argument, NULL, 1039},
	        {"max-values-total", required_argument, NULL, 1040},
	        {"value-dir", required_argument, NULL, 1025},
	        {"http-idle", required_argument, NULL, 'I'},
	        {"http-per-client", required_argument, NULL, 'c'},
	        {"http-header-s", required_argument, NULL, 1021},
	        {"http-min-rate", required_argument, NULL, 1022},
	        {"http-max", required_argument, NULL, 'm'},
	        {"tls-cert", required_argument, NULL, 'T'},
	        {"tls-key", required_argument, NULL, 'K'},
	        {"hub-ca", required_argument, NULL, 'a'},
	        {"hub-server-name", required_argument, NULL, 'n'},
	        {"hub-per-address", required_argument, NULL, 1041},
	        {"help", no_argument, NULL, 'H'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	char self[1024] = "";
	char sync[16] = "normal";
	char retain[32] = "7d";
	char session_idle[32] = "12h";
	char quota_text[QUOTA_FLAGS][32] = {{0}};
	char max_code[32] = "104857600";
	char *dir;
	ssize_t n;
	int c, err;
	k8s_flags given = {0};

	memset(cfg, 0, sizeof(*cfg));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	dir = dirname(self);
	snprintf(cfg->http, sizeof(cfg->http), "127.0.0.1:8080");
	snprintf(cfg->hub, sizeof(cfg->hub), "tcp://127.0.0.1:7070");
	snprintf(cfg->db, sizeof(cfg->db), "./strand.db");
	snprintf(cfg->backend, sizeof(cfg->backend), "local");
	snprintf(cfg->image, sizeof(cfg->image), "strand-worker:latest");
	snprintf(cfg->docker_socket, sizeof(cfg->docker_socket), "/var/run/docker.sock");
	snprintf(cfg->worker_bin, sizeof(cfg->worker_bin), "%s/strand-worker", dir);
	/* An installed tree's plugin folder, or else a build tree's lib/: never
	 * a system library folder, whose every .so a task could name. */
	snprintf(cfg->plugin_path, sizeof(cfg->plugin_path), "%s/../" STRAND_PLUGIN_INSTALL_DIR, dir);
	if (access(cfg->plugin_path, F_OK) != 0)
		snprintf(cfg->plugin_path, sizeof(cfg->plugin_path), "%s/../lib", dir);
	snprintf(cfg->web_root, sizeof(cfg->web_root), "%s/../share/strand/web", dir);
	cfg->lease_ms = 5000;
	cfg->backend_timeout_s = 30;
	cfg->k8s.start_grace_s = 60;
	snprintf(cfg->k8s.pull_policy, sizeof(cfg->k8s.pull_policy), "IfNotPresent");
	snprintf(cfg->k8s.ns, sizeof(cfg->k8s.ns), "default");
	in_cluster(cfg);
	cfg->gpus = -1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cfg->local_starts = cpus > 0 ? (int)cpus : 1;
	cfg->local_start_slot_ms = 1000; /* a start slower than this waits on a disk, not the CPU */
	cfg->http_idle_s = 10;
	cfg->http_per_client = 256;
	cfg->hub_per_address = 128;
	cfg->http_header_s = 10;
	cfg->http_min_rate = 65536;
	snprintf(cfg->sandbox, sizeof(cfg->sandbox), "auto");
	snprintf(cfg->sandbox_uids, sizeof(cfg->sandbox_uids), "2100000000-2100999999");

	set(cfg->http, sizeof(cfg->http), getenv("STRAND_HTTP"));
	set(cfg->hub, sizeof(cfg->hub), getenv("STRAND_HUB"));
	set(cfg->hub_advertise, sizeof(cfg->hub_advertise), getenv("STRAND_HUB_ADVERTISE"));
	set(cfg->db, sizeof(cfg->db), getenv("STRAND_DB"));
	set(cfg->code_dir, sizeof(cfg->code_dir), getenv("STRAND_CODE_DIR"));
	set(cfg->value_dir, sizeof(cfg->value_dir), getenv("STRAND_VALUE_DIR"));
	set(max_code, sizeof(max_code), getenv("STRAND_MAX_CODE_BYTES"));
	set(sync, sizeof(sync), getenv("STRAND_SYNC"));
	set(retain, sizeof(retain), getenv("STRAND_RETAIN"));
	set(session_idle, sizeof(session_idle), getenv("STRAND_SESSION_IDLE"));
	set(cfg->backend, sizeof(cfg->backend), getenv("STRAND_BACKEND"));
	set(cfg->image, sizeof(cfg->image), getenv("STRAND_IMAGE"));
	set(cfg->docker_socket, sizeof(cfg->docker_socket), getenv("STRAND_DOCKER_SOCKET"));
	set(cfg->worker_bin, sizeof(cfg->worker_bin), getenv("STRAND_WORKER_BIN"));
	set(cfg->plugin_path, sizeof(cfg->plugin_path), getenv("STRAND_PLUGIN_PATH"));
	set(cfg->web_root, sizeof(cfg->web_root), getenv("STRAND_WEB_ROOT"));
	set(cfg->token_file, sizeof(cfg->token_file), getenv("STRAND_TOKEN_FILE"));
	char *token = getenv("STRAND_TOKEN");
	set(cfg->token, sizeof(cfg->token), token);
	/* Workers and processes inherit the gateway's environment: the token
	 * must not be in it. unsetenv only forgets the string: its bytes, in
	 * the block /proc/PID/environ shows, are wiped first. Still
	 * single-threaded here, so both are safe. */
	if (token)
		explicit_bzero(token, strlen(token));
	unsetenv("STRAND_TOKEN");
	set(cfg->public_hosts, sizeof(cfg->public_hosts), getenv("STRAND_PUBLIC_HOST"));
	set(cfg->tls_cert, sizeof(cfg->tls_cert), getenv("STRAND_TLS_CERT"));
	set(cfg->tls_key, sizeof(cfg->tls_key), getenv("STRAND_TLS_KEY"));
	set(cfg->hub_ca, sizeof(cfg->hub_ca), getenv("STRAND_HUB_CA"));
	set(cfg->hub_server_name, sizeof(cfg->hub_server_name), getenv("STRAND_HUB_SERVER_NAME"));
	set(cfg->allow_host_paths, sizeof(cfg->allow_host_paths), getenv("STRAND_ALLOW_HOST_PATHS"));
	set(cfg->allow_images, sizeof(cfg->allow_images), getenv("STRAND_ALLOW_IMAGES"));
	set(cfg->allow_volumes, sizeof(cfg->allow_volumes), getenv("STRAND_ALLOW_VOLUMES"));
	set(cfg->allow_runtime, sizeof(cfg->allow_runtime), getenv("STRAND_ALLOW_RUNTIME"));
	set(cfg->sandbox, sizeof(cfg->sandbox), getenv("STRAND_SANDBOX"));
	if (getenv("STRAND_SANDBOX_UIDS"))
		snprintf(cfg->sandbox_uids, sizeof(cfg->sandbox_uids), "%s", getenv("STRAND_SANDBOX_UIDS"));
	set(cfg->kubeconfig, sizeof(cfg->kubeconfig), getenv("STRAND_KUBECONFIG"));
	cfg->slurm.enabled = getenv("STRAND_SLURM") && strcmp(getenv("STRAND_SLURM"), "1") == 0;
	set(cfg->slurm.partition, sizeof(cfg->slurm.partition), getenv("STRAND_SLURM_PARTITION"));
	set(cfg->slurm.output_dir, sizeof(cfg->slurm.output_dir), getenv("STRAND_SLURM_OUTPUT_DIR"));
	cfg->no_commands = getenv("STRAND_NO_COMMANDS") && strcmp(getenv("STRAND_NO_COMMANDS"), "1") == 0;
	cfg->db_shared = getenv("STRAND_DB_SHARED") && strcmp(getenv("STRAND_DB_SHARED"), "1") == 0;
	static const struct {
		const char *name;
		size_t field;
	} whole_env[] = {
	        {"STRAND_BACKEND_TIMEOUT", offsetof(gw_config, backend_timeout_s)},
	        {"STRAND_LEASE_MS", offsetof(gw_config, lease_ms)},
	        {"STRAND_GPUS", offsetof(gw_config, gpus)},
	        {"STRAND_LOCAL_STARTS", offsetof(gw_config, local_starts)},
	};
	not_whole bad = {0};
	for (size_t i = 0; i < sizeof(whole_env) / sizeof(whole_env[0]); i++) {
		const char *text = getenv(whole_env[i].name);
		if (text && text[0]) /* set but empty: the default */
			whole(text, whole_env[i].name, (int *)((char *)cfg + whole_env[i].field), &bad);
	}

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h': set(cfg->http, sizeof(cfg->http), optarg); break;
		case 'u': set(cfg->hub, sizeof(cfg->hub), optarg); break;
		case 'd': set(cfg->db, sizeof(cfg->db), optarg); break;
		case 'b': set(cfg->backend, sizeof(cfg->backend), optarg); break;
		case 'w': set(cfg->worker_bin, sizeof(cfg->worker_bin), optarg); break;
		case 'p': set(cfg->plugin_path, sizeof(cfg->plugin_path), optarg); break;
		case 'r': set(cfg->web_root, sizeof(cfg->web_root), optarg); break;
		case 'l': whole(optarg, "--lease-ms", &cfg->lease_ms, &bad); break;
		case 'i': set(cfg->image, sizeof(cfg->image), optarg); break;
		case 's': set(cfg->docker_socket, sizeof(cfg->docker_socket), optarg); break;
		case 'o': whole(optarg, "--backend-timeout", &cfg->backend_timeout_s, &bad); break;
		case 1000: given.server = set(cfg->k8s.server, sizeof(cfg->k8s.server), optarg); break;
		case 1001: given.token = set(cfg->k8s.token_file, sizeof(cfg->k8s.token_file), optarg); break;
		case 1002: given.ca = set(cfg->k8s.ca_file, sizeof(cfg->k8s.ca_file), optarg); break;
		case 1003: given.ns = set(cfg->k8s.ns, sizeof(cfg->k8s.ns), optarg); break;
		case 1004: cfg->k8s.host_network = 1; break;
		case 1005: whole(optarg, "--k8s-start-grace", &cfg->k8s.start_grace_s, &bad); break;
		case 1006: set(cfg->k8s.pull_policy, sizeof(cfg->k8s.pull_policy), optarg); break;
		case 1007: set(cfg->kubeconfig, sizeof(cfg->kubeconfig), optarg); break;
		case 1008: set(cfg->hub_advertise, sizeof(cfg->hub_advertise), optarg); break;
		case 1009: set(sync, sizeof(sync), optarg); break;
		case 1010: set(retain, sizeof(retain), optarg); break;
		case 1011: cfg->slurm.enabled = 1; break;
		case 1012: set(cfg->slurm.partition, sizeof(cfg->slurm.partition), optarg); break;
		case 1013: set(cfg->slurm.output_dir, sizeof(cfg->slurm.output_dir), optarg); break;
		case 'g': whole(optarg, "--gpus", &cfg->gpus, &bad); break;
		case 1042: whole(optarg, "--local-starts", &cfg->local_starts, &bad); break;
		case 't': set(cfg->token_file, sizeof(cfg->token_file), optarg); break;
		case 'N': cfg->no_auth = 1; break;
		case 'P': set(cfg->public_hosts, sizeof(cfg->public_hosts), optarg); break;
		case 'A': set(cfg->allow_host_paths, sizeof(cfg->allow_host_paths), optarg); break;
		case 1023: set(cfg->allow_images, sizeof(cfg->allow_images), optarg); break;
		case 1024: set(cfg->allow_volumes, sizeof(cfg->allow_volumes), optarg); break;
		case 'C': cfg->no_commands = 1; break;
		case 1014: cfg->db_shared = 1; break;
		case 1015: set(cfg->code_dir, sizeof(cfg->code_dir), optarg); break;
		case 1025: set(cfg->value_dir, sizeof(cfg->value_dir), optarg); break;
		case 1016: set(max_code, sizeof(max_code), optarg); break;
		case 1017: set(cfg->allow_runtime, sizeof(cfg->allow_runtime), optarg); break;
		case 1018: set(cfg->sandbox, sizeof(cfg->sandbox), optarg); break;
		case 1019: snprintf(cfg->sandbox_uids, sizeof(cfg->sandbox_uids), "%s", optarg); break;
		case 'R': cfg->allow_root_containers = 1; break;
		case 1020: set(session_idle, sizeof(session_idle), optarg); break;
		case 1030:
		case 1031:
		case 1032:
		case 1033:
		case 1034:
		case 1035:
		case 1036:
		case 1037:
		case 1038:
		case 1039:
		case 1040: snprintf(quota_text[c - 1030], sizeof(quota_text[0]), "%.31s", optarg); break;
		case 'I': whole(optarg, "--http-idle", &cfg->http_idle_s, &bad); break;
		case 'c': whole(optarg, "--http-per-client", &cfg->http_per_client, &bad); break;
		case 1021: whole(optarg, "--http-header-s", &cfg->http_header_s, &bad); break;
		case 1022: whole(optarg, "--http-min-rate", &cfg->http_min_rate, &bad); break;
		case 1041: whole(optarg, "--hub-per-address", &cfg->hub_per_address, &bad); break;
		case 'm': whole(optarg, "--http-max", &cfg->http_max, &bad); break;
		case 'T': set(cfg->tls_cert, sizeof(cfg->tls_cert), optarg); break;
		case 'K': set(cfg->tls_key, sizeof(cfg->tls_key), optarg); break;
		case 'a': set(cfg->hub_ca, sizeof(cfg->hub_ca), optarg); break;
		case 'n': set(cfg->hub_server_name, sizeof(cfg->hub_server_name), optarg); break;
		case 'H': cfg->help = 1; break;
		case 'V': cfg->version = 1; break;
		default: snprintf(detail, detail_len, "unknown or incomplete option (see --help)"); return CM_EINVAL;
		}
	}
	if (optind < argc) {
		snprintf(detail, detail_len, "unexpected argument '%s' (see --help)", argv[optind]);
		return CM_EINVAL;
	}
	if (bad.name) {
		snprintf(detail, detail_len, "%s must be a whole number, not '%.40s'", bad.name, bad.text);
		return CM_EINVAL;
	}
	if (strcmp(sync, "normal") != 0 && strcmp(sync, "full") != 0) {
		snprintf(detail, detail_len, "--sync must be normal or full");
		return CM_EINVAL;
	}
	cfg->sync_full = strcmp(sync, "full") == 0;
	if ((cfg->session_idle_ms = parse_age(session_idle)) <= 0) {
		snprintf(detail, detail_len, "--session-idle must be a whole number with s, m, h or d (12h), not 0");
		return CM_EINVAL;
	}
	if ((cfg->retain_ms = parse_age(retain)) < 0) {
		snprintf(detail, detail_len,
		         "--retain must be 0 or a whole number with s, m, h or d (7d), at most 10 years");
		return CM_EINVAL;
	}
	/* Next to the database, so one operator's gateway and files stay together. */
	if (!cfg->token_file[0])
		next_to_db(cfg, "strand.token", cfg->token_file, sizeof(cfg->token_file));
	if (strcmp(cfg->sandbox, "auto") != 0 && strcmp(cfg->sandbox, "on") != 0 && strcmp(cfg->sandbox, "off") != 0) {
		snprintf(detail, detail_len, "--sandbox must be on, off or auto");
		return CM_EINVAL;
	}
	if (!cfg->code_dir[0])
		next_to_db(cfg, "strand-code", cfg->code_dir, sizeof(cfg->code_dir));
	if (!cfg->value_dir[0])
		next_to_db(cfg, "strand-values", cfg->value_dir, sizeof(cfg->value_dir));
	if (cm_whole(max_code, 1, (int64_t)1 << 40, &cfg->max_code_bytes) != CM_OK) {
		snprintf(detail, detail_len, "--max-code-bytes must be a number of bytes, 1 to 2^40");
		return CM_EINVAL;
	}
	if ((err = quotas_load(cfg, quota_text, detail, detail_len)) != CM_OK)
		return err;
	if (cfg->max_value_bytes > SPEC_VALUE_MOST) {
		snprintf(detail, detail_len, "--max-value-bytes is at most %lld", (long long)SPEC_VALUE_MOST);
		return CM_EINVAL;
	}
	if (!cfg->slurm.output_dir[0])
		next_to_db(cfg, "slurm-output", cfg->slurm.output_dir, sizeof(cfg->slurm.output_dir));
	/* Passed to sbatch as one argument: a comma or space would split it. */
	if (strspn(cfg->slurm.partition, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") !=
	    strlen(cfg->slurm.partition)) {
		snprintf(detail, detail_len, "--slurm-partition must be a partition's name (letters, digits, _ - .)");
		return CM_EINVAL;
	}
	if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
		snprintf(detail, detail_len, "--tls-cert and --tls-key go together");
		return CM_EINVAL;
	}
	if (!cfg->hub_advertise[0])
		snprintf(cfg->hub_advertise, sizeof(cfg->hub_advertise), "%s", cfg->hub);
	const char *scheme_end = strstr(cfg->hub, "://");
	size_t scheme_len = scheme_end ? (size_t)(scheme_end - cfg->hub) + 3 : 0;
	if (!scheme_len || strncmp(cfg->hub, cfg->hub_advertise, scheme_len) != 0) {
		snprintf(detail, detail_len, "--hub-advertise must be a URL of the hub's transport (%.*s)",
		         (int)scheme_len, cfg->hub);
		return CM_EINVAL;
	}
	int family, tls;
	if (cm_socket_url(cfg->hub, &family, &tls) && tls && !cfg->tls_cert[0]) {
		snprintf(detail, detail_len, "a %s hub needs --tls-cert and --tls-key", cfg->hub);
		return CM_EINVAL;
	}
	if (cfg->http_idle_s < 1 || cfg->http_per_client < 1 || cfg->http_max < 0 || cfg->http_header_s < 1 ||
	    cfg->http_min_rate < 1) {
		snprintf(detail, detail_len,
		         "--http-idle, --http-per-client, --http-header-s and --http-min-rate must be at least 1");
		return CM_EINVAL;
	}
	if (cfg->hub_per_address < 1 || cfg->hub_per_address > 100000) {
		snprintf(detail, detail_len, "--hub-per-address must be 1 to 100000");
		return CM_EINVAL;
	}
	if (cfg->kubeconfig[0] && (err = with_kubeconfig(cfg, &given, detail, detail_len)) != CM_OK)
		return err;
	if (cfg->k8s.server[0] && strncmp(cfg->k8s.server, "https://", 8) != 0) {
		snprintf(detail, detail_len,
		         "--k8s-server must be an https:// URL (the token must not travel in clear)");
		return CM_EINVAL;
	}
	if (!dns_label(cfg->k8s.ns)) {
		snprintf(detail, detail_len,
		         "--k8s-namespace must be a DNS label (1 to 63 lowercase letters, digits and '-')");
		return CM_EINVAL;
	}
	if (cfg->k8s.server[0] && !cfg->k8s.token_file[0] && !cfg->k8s.token[0] && !cfg->k8s.cert_pem[0]) {
		snprintf(detail, detail_len, "--k8s-server needs --k8s-token-file (or a --kubeconfig)");
		return CM_EINVAL;
	}
	if (strcmp(cfg->k8s.pull_policy, "IfNotPresent") != 0 && strcmp(cfg->k8s.pull_policy, "Never") != 0 &&
	    strcmp(cfg->k8s.pull_policy, "Always") != 0) {
		snprintf(detail, detail_len, "--k8s-pull-policy must be IfNotPresent, Never or Always");
		return CM_EINVAL;
	}
	if (cfg->k8s.start_grace_s < 1 || cfg->k8s.start_grace_s > 86400) {
		snprintf(detail, detail_len, "--k8s-start-grace must be 1 to 86400 seconds");
		return CM_EINVAL;
	}
	if (cfg->backend_timeout_s < 1 || cfg->backend_timeout_s > 3600) {
		snprintf(detail, detail_len, "--backend-timeout must be 1 to 3600 seconds");
		return CM_EINVAL;
	}
	cfg->slurm.timeout_s = cfg->backend_timeout_s;
	if (cfg->lease_ms < 100) {
		snprintf(detail, detail_len, "lease must be at least 100 ms");
		return CM_EINVAL;
	}
	if (cfg->local_starts < 1 || cfg->local_starts > 4096) {
		snprintf(detail, detail_len, "--local-starts must be 1 to 4096");
		return CM_EINVAL;
	}
	if (cfg->gpus > CONFIG_GPUS_MAX) {
		snprintf(detail, detail_len, "--gpus must be 0 to %d", CONFIG_GPUS_MAX);
		return CM_EINVAL;
	}
	if (cfg->gpus < 0) { /* the devices this host has */
		char dev[32];
		cfg->gpus = 0;
		for (int i = 0; i < CONFIG_GPUS_MAX; i++) {
			snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
			if (access(dev, F_OK) == 0)
				cfg->gpus = i + 1;
		}
	}
	return CM_OK;
}
