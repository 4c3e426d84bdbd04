/* Flags and environment for strand-gateway. */
#define _GNU_SOURCE
#include <getopt.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/config.h"

static void set(char *dst, size_t n, const char *v)
{
	if (v && v[0])
		snprintf(dst, n, "%s", v);
}

void gw_config_usage(FILE *f)
{
	fprintf(f, "usage: strand-gateway [options]\n"
	           "Runs the strand REST gateway: pools, jobs and workers, persisted in SQLite.\n\n"
	           "  --http HOST:PORT     REST API address (STRAND_HTTP, default 127.0.0.1:8080)\n"
	           "  --hub URL            nng URL workers dial (STRAND_HUB, default tcp://127.0.0.1:7070)\n"
	           "  --db FILE            SQLite database (STRAND_DB, default ./strand.db)\n"
	           "  --backend NAME       default backend for pools: local or docker (STRAND_BACKEND, default local)\n"
	           "  --image IMAGE        default worker image of docker pools (STRAND_IMAGE, default\n"
	           "                       strand-worker:latest)\n"
	           "  --docker-socket PATH the Docker Engine API (STRAND_DOCKER_SOCKET, default /var/run/docker.sock)\n"
	           "  --worker-bin FILE    strand-worker for the local backend (STRAND_WORKER_BIN,\n"
	           "                       default: next to strand-gateway)\n"
	           "  --plugin-path DIRS   plugin folders given to workers (STRAND_PLUGIN_PATH,\n"
	           "                       default: ../lib next to strand-gateway)\n"
	           "  --web-root DIR       dashboard files (STRAND_WEB_ROOT, default: ../share/strand/web)\n"
	           "  --lease-ms MS        worker lease (STRAND_LEASE_MS, default 5000)\n"
	           "  --gpus N             GPUs on this host for the local backend (STRAND_GPUS, default:\n"
	           "                       the /dev/nvidiaN devices found)\n"
	           "  --help               this text\n");
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
	        {"gpus", required_argument, NULL, 'g'},
	        {"help", no_argument, NULL, 'H'},
	        {NULL, 0, NULL, 0},
	};
	char self[1024] = "";
	char *dir;
	ssize_t n;
	int c;

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
	snprintf(cfg->plugin_path, sizeof(cfg->plugin_path), "%s/../lib", dir);
	snprintf(cfg->web_root, sizeof(cfg->web_root), "%s/../share/strand/web", dir);
	cfg->lease_ms = 5000;
	cfg->gpus = -1;

	set(cfg->http, sizeof(cfg->http), getenv("STRAND_HTTP"));
	set(cfg->hub, sizeof(cfg->hub), getenv("STRAND_HUB"));
	set(cfg->db, sizeof(cfg->db), getenv("STRAND_DB"));
	set(cfg->backend, sizeof(cfg->backend), getenv("STRAND_BACKEND"));
	set(cfg->image, sizeof(cfg->image), getenv("STRAND_IMAGE"));
	set(cfg->docker_socket, sizeof(cfg->docker_socket), getenv("STRAND_DOCKER_SOCKET"));
	set(cfg->worker_bin, sizeof(cfg->worker_bin), getenv("STRAND_WORKER_BIN"));
	set(cfg->plugin_path, sizeof(cfg->plugin_path), getenv("STRAND_PLUGIN_PATH"));
	set(cfg->web_root, sizeof(cfg->web_root), getenv("STRAND_WEB_ROOT"));
	if (getenv("STRAND_LEASE_MS"))
		cfg->lease_ms = atoi(getenv("STRAND_LEASE_MS"));
	if (getenv("STRAND_GPUS") && getenv("STRAND_GPUS")[0])
		cfg->gpus = atoi(getenv("STRAND_GPUS"));

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
		case 'l': cfg->lease_ms = atoi(optarg); break;
		case 'i': set(cfg->image, sizeof(cfg->image), optarg); break;
		case 's': set(cfg->docker_socket, sizeof(cfg->docker_socket), optarg); break;
		case 'g': cfg->gpus = atoi(optarg); break;
		case 'H': cfg->help = 1; break;
		default: snprintf(detail, detail_len, "unknown or incomplete option (see --help)"); return CM_EINVAL;
		}
	}
	if (optind < argc) {
		snprintf(detail, detail_len, "unexpected argument '%s' (see --help)", argv[optind]);
		return CM_EINVAL;
	}
	if (cfg->lease_ms < 100) {
		snprintf(detail, detail_len, "lease must be at least 100 ms");
		return CM_EINVAL;
	}
	return CM_OK;
}
