/*
 * The functions strand-worker provides to its plugins (strand_plugin.h):
 * queues and pipes, on a connection of their own to the gateway's hub
 * (hub_link.c), dialed on first use. strand-worker is linked with its symbols
 * exported, so a plugin's references to them resolve at dlopen.
 *
 * The plugin ABI has no context argument (a plugin is plain C calling
 * plain functions, as Python code calls multiprocessing's), so the
 * connection lives in this file's one static, set by worker_api_init before
 * any task runs and used only by the running task (one at a time).
 */
#define _GNU_SOURCE
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/frame.h"
#include "worker/hub_link.h"
#include "worker/strand_plugin.h"
#include "worker/worker.h"

static struct api {
	const worker_config *cfg;
	hub_link *link;
} api;

void worker_api_init(const worker_config *cfg)
{
	api.cfg = cfg;
}

void worker_api_fini(void)
{
	hub_link_free(api.link);
	api.link = NULL;
}

/* One exchange on the connection: m (a frame of type, its worker and pool
 * ids set here) out, an answer of reply_type back, waited for up to
 * wait_ms beyond the usual 30 s. On success *reply is the answer (free
 * with protobuf_c_message_free_unpacked). */
static int exchange(proto_type type, ProtobufCMessage *m, char **worker_id, char **pool_id, proto_type reply_type,
                    int wait_ms, ProtobufCMessage **reply)
{
	uint8_t *frame = NULL;
	size_t len;
	uint8_t *buf = NULL;
	size_t buf_len;
	char detail[256];
	int rv;

	if (!api.cfg) {
		fprintf(stderr,
		        "strand: queues and managers are reached from tasks a strand worker runs, and from functions a"
		        " strand Process runs\n");
		return -1;
	}
	if (!api.link && (rv = hub_link_new(api.cfg, 1, &api.link)) != 0) {
		fprintf(stderr, "strand: cannot reach the hub %s: %s\n", api.cfg->hub, nng_strerror(rv));
		return -1;
	}
	/* While the gateway restarts, the call waits up to 30 s for it. Only
	 * the dial is tried again: a call that went out is never sent twice. */
	for (int64_t give_up = cm_now_ms() + 30000; (rv = hub_link_connect(api.link, 5000)) != 0;) {
		if (cm_now_ms() >= give_up) {
			fprintf(stderr, "strand: cannot reach the hub %s: %s\n", api.cfg->hub, nng_strerror(rv));
			return -1;
		}
		usleep(100 * 1000);
	}
	*worker_id = (char *)api.cfg->worker_id;
	*pool_id = (char *)api.cfg->pool_id;
	if (proto_frame_encode(type, api.cfg->worker_id, api.cfg->secret, m, &frame, &len) != CM_OK)
		return -1;
	/* A call that waits (for an item, a manager's result) may be answered
	 * after wait_ms. */
	rv = hub_link_exchange(api.link, frame, len, wait_ms + 30000, &buf, &buf_len);
	free(frame);
	if (rv != 0) {
		fprintf(stderr, "strand: hub %s: %s\n", api.cfg->hub, nng_strerror(rv));
		return -1;
	}
	rv = proto_frame_decode(reply_type, buf, buf_len, reply, detail, sizeof(detail));
	free(buf);
	if (rv != CM_OK) {
		/* The hub refuses with a Batch when it cannot read the call. */
		fprintf(stderr, "strand: the hub refused the call\n");
		return -1;
	}
	return 0;
}

/* One queue call; on success *reply is the answer (free with
 * protobuf_c_message_free_unpacked). */
static int call(Strand__QueueCall *c, int wait_ms, Strand__QueueReply **reply)
{
	ProtobufCMessage *msg = NULL;

	if (exchange(PROTO_QUEUE_CALL, &c->base, &c->worker_id, &c->pool_id, PROTO_QUEUE_REPLY, wait_ms, &msg) != 0)
		return -1;
	*reply = (Strand__QueueReply *)msg;
	if (!(*reply)->ok) {
		fprintf(stderr, "strand: %s\n", (*reply)->error);
		protobuf_c_message_free_unpacked(msg, NULL);
		return -1;
	}
	return 0;
}

int worker_api_put(const char *queue, int end, const char *item, const char *grant)
{
	Strand__QueueCall c = STRAND__QUEUE_CALL__INIT;
	ProtobufCBinaryData bin = {strlen(item), (uint8_t *)item};
	Strand__QueueReply *reply;
	char *grants[1] = {(char *)grant};

	c.op = STRAND__QUEUE_CALL__OP__PUT;
	c.queue = (char *)queue;
	c.pipe_end = end;
	c.items = &bin;
	c.n_items = 1;
	c.value_grants = grants;
	c.n_value_grants = grant ? 1 : 0;
	if (call(&c, 0, &reply) != 0)
		return -1;
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return 0;
}

static int put(const char *queue, int end, const char *item)
{
	return worker_api_put(queue, end, item, NULL);
}

int worker_api_get(const char *queue, int end, int wait_ms, char **item, char grant[WORKER_API_GRANT_LEN + 1])
{
	Strand__QueueCall c = STRAND__QUEUE_CALL__INIT;
	Strand__QueueReply *reply;
	int rc = 1;

	grant[0] = '\0';
	c.op = STRAND__QUEUE_CALL__OP__GET;
	c.queue = (char *)queue;
	c.pipe_end = end;
	c.max = 1;
	c.wait_ms = wait_ms > 0 ? (uint32_t)wait_ms : 0;
	if (call(&c, wait_ms, &reply) != 0)
		return -1;
	if (reply->n_items) {
		*item = strndup((const char *)reply->items[0].data, reply->items[0].len);
		rc = *item ? 0 : -1;
	}
	if (reply->n_value_grants && strlen(reply->value_grants[0]) == WORKER_API_GRANT_LEN)
		memcpy(grant, reply->value_grants[0], WORKER_API_GRANT_LEN + 1);
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return rc;
}

int worker_api_size(const char *queue, int end, int64_t *size)
{
	Strand__QueueCall c = STRAND__QUEUE_CALL__INIT;
	Strand__QueueReply *reply;

	c.op = STRAND__QUEUE_CALL__OP__SIZE;
	c.queue = (char *)queue;
	c.pipe_end = end;
	if (call(&c, 0, &reply) != 0)
		return -1;
	*size = reply->size > INT64_MAX ? INT64_MAX : (int64_t)reply->size;
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return 0;
}

/* A plugin's get: an item that names a value is its JSON, as any. */
static int get(const char *queue, int end, int wait_ms, char **item)
{
	char grant[WORKER_API_GRANT_LEN + 1];

	return worker_api_get(queue, end, wait_ms, item, grant);
}

int strand_task_queue_put(const char *queue, const char *item)
{
	return put(queue, -1, item);
}
int strand_task_queue_get(const char *queue, int wait_ms, char **item)
{
	return get(queue, -1, wait_ms, item);
}
int strand_task_pipe_send(const char *pipe, int end, const char *item)
{
	return put(pipe, end, item);
}
int strand_task_pipe_recv(const char *pipe, int end, int wait_ms, char **item)
{
	return get(pipe, end, wait_ms, item);
}
int strand_task_queue_size(const char *queue, int64_t *size)
{
	return worker_api_size(queue, -1, size);
}
int strand_task_pipe_size(const char *pipe, int end, int64_t *size)
{
	return worker_api_size(pipe, end, size);
}

int worker_api_manager_call(const char *manager, const char *call_json, const char *value_grant, int wait_ms,
                            char **item, char grant[WORKER_API_GRANT_LEN + 1])
{
	Strand__ManagerCall c = STRAND__MANAGER_CALL__INIT;
	Strand__ManagerReply *reply;
	ProtobufCMessage *msg = NULL;
	char *grants[1] = {(char *)value_grant};
	int rc = -1;

	grant[0] = '\0';
	c.manager = (char *)manager;
	c.call = (ProtobufCBinaryData){strlen(call_json), (uint8_t *)call_json};
	c.wait_ms = wait_ms > 0 ? (uint32_t)wait_ms : 0;
	c.value_grants = grants;
	c.n_value_grants = value_grant ? 1 : 0;
	if (exchange(PROTO_MANAGER_CALL, &c.base, &c.worker_id, &c.pool_id, PROTO_MANAGER_REPLY, wait_ms, &msg) != 0)
		return -1;
	reply = (Strand__ManagerReply *)msg;
	if (!reply->ok)
		*item = strdup(reply->error); /* why, for the caller to say */
	else if ((*item = strndup((const char *)reply->item.data, reply->item.len)))
		rc = 0;
	if (reply->n_value_grants && strlen(reply->value_grants[0]) == WORKER_API_GRANT_LEN)
		memcpy(grant, reply->value_grants[0], WORKER_API_GRANT_LEN + 1);
	protobuf_c_message_free_unpacked(msg, NULL);
	return rc;
}
