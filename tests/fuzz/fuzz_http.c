/* libFuzzer: the HTTP routing layer, whole. A real gateway (API, engine on a
 * fresh SQLite file, hub) runs in this process on loopback; each input is
 * sent as raw bytes on a new connection and the answer read back. Commands
 * are switched off and no worker binary exists, so nothing an input asks
 * for can run a program. Authentication is off (--no-auth, loopback) so that
 * inputs reach the routes behind it; the auth checks run first either way. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/blob_store.h"
#include "gateway/config.h"
#include "gateway/http/api.h"
#include "gateway/credentials.h"
#include "gateway/engine/engine.h"
#include "gateway/hub/hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int port;

static void start_gateway(void)
{
	static gw_config cfg;
	static char dir[512];
	char *argv[] = {"fuzz_http", NULL};
	char detail[512] = "";
	credentials *creds;
	blob_store *code, *values;
	engine *e;
	hub *h;
	api *a;

	/* run.sh gives a folder it removes afterwards. */
	snprintf(dir, sizeof(dir), "%s/gateway-XXXXXX", getenv("FUZZ_WORKDIR") ? getenv("FUZZ_WORKDIR") : "/tmp");
	if (!mkdtemp(dir) || gw_config_load(&cfg, 1, argv, detail, sizeof(detail)) != CM_OK)
		abort();
	snprintf(cfg.db, sizeof(cfg.db), "%s/fuzz.db", dir);
	snprintf(cfg.token_file, sizeof(cfg.token_file), "%s/strand.token", dir);
	snprintf(cfg.code_dir, sizeof(cfg.code_dir), "%s/strand-code", dir);
	snprintf(cfg.value_dir, sizeof(cfg.value_dir), "%s/strand-values", dir);
	snprintf(cfg.worker_bin, sizeof(cfg.worker_bin), "%s/no-such-worker", dir);
	snprintf(cfg.docker_socket, sizeof(cfg.docker_socket), "%s/no-such-docker.sock", dir);
	cfg.no_auth = 1;
	cfg.no_commands = 1;
	backend *backends[] = {backend_local_new(cfg.gpus, NULL),
	                       backend_docker_new(cfg.docker_socket, cfg.backend_timeout_s)};
	if (credentials_new(&creds) != CM_OK ||
	    blob_store_open(cfg.code_dir, &blob_kind_code, cfg.max_code_bytes, 0, &code, detail, sizeof(detail)) !=
	            CM_OK ||
	    blob_store_open(cfg.value_dir, &blob_kind_value, cfg.max_value_bytes, cfg.max_values_total, &values, detail,
	                    sizeof(detail)) != CM_OK ||
	    engine_new(&cfg, creds, backends, 2, &e, detail, sizeof(detail)) != CM_OK || engine_start(e) != CM_OK)
		abort();
	for (int attempt = 0; attempt < 20; attempt++) {
		/* Below the ephemeral range, as in the test harness. */
		port = 10000 + (int)((getpid() * 7919u + (unsigned)attempt * 104729u) % 11000);
		snprintf(cfg.http, sizeof(cfg.http), "127.0.0.1:%d", port);
		snprintf(cfg.hub, sizeof(cfg.hub), "tcp://127.0.0.1:%d", port + 11000);
		h = NULL;
		if (hub_start(&cfg, e, creds, code, values, &h, detail, sizeof(detail)) == CM_OK &&
		    api_start(&cfg, e, code, values, &a, detail, sizeof(detail)) == CM_OK)
			return; /* runs until the fuzzer exits */
		if (h) {
			hub_refuse_frames(h);
			hub_free(h);
		}
	}
	fprintf(stderr, "fuzz_http: cannot start a gateway: %s\n", detail);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct timeval tv = {.tv_sec = 2};
	char buf[65536];
	int fd;

	if (!port)
		start_gateway();
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		if (size == 0 || write(fd, data, size) >= 0) {
			shutdown(fd, SHUT_WR);
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
	}
	close(fd);
	return 0;
}
