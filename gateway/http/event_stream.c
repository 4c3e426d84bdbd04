/*
 * Server-Sent Events over libmicrohttpd: a response of unknown size whose
 * content reader copies frames from the event log, and when there are none
 * suspends its connection (as the reader callback may) until the engine's
 * next generation or the next keep-alive is due.
 */
#define _GNU_SOURCE
#include "gateway/http/event_stream.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/common.h"

#define STREAM_CHUNK (64u << 10) /* frames taken from the log per look */
#define STREAM_SNDBUF (64 << 10) /* the socket's send buffer */

typedef struct event_stream {
	engine *e;
	events *ev;
	parking *pk;
	struct MHD_Connection *c;
	uint64_t cursor;
	char pool[24];
	cm_buf out; /* frames taken, not yet given to libmicrohttpd */
	size_t off;
	int64_t ping_at;
	int ending; /* its last frame is out: the stream ends once it is sent */
} event_stream;

static void stream_free(void *cls)
{
	event_stream *s = cls;

	events_unsubscribe(s->ev);
	cm_buf_fini(&s->out);
	free(s);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	event_stream *s = cls;

	(void)pos;
	for (;;) {
		if (s->off < s->out.len) {
			size_t n = s->out.len - s->off < max ? s->out.len - s->off : max;
			memcpy(buf, s->out.data + s->off, n);
			s->off += n;
			return (ssize_t)n;
		}
		s->out.len = s->off = 0;
		if (s->ending || engine_closing(s->e) || parking_stopping(s->pk))
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* The generation before the look: an event published after it
		 * moves the generation, which resumes the park below at once. */
		uint64_t gen = engine_generation(s->e, ENGINE_WATCH_ANY);
		int64_t now = cm_now_ms();
		int got = events_read(s->ev, &s->cursor, s->pool, &s->out, STREAM_CHUNK);
		if (got == EVENTS_GAP) {
			/* Its events fell off the log while it did not read: it goes,
			 * and comes back with Last-Event-ID to a reset. */
			cm_warn("an event stream fell %d events behind and was closed", EVENTS_KEPT);
			s->out.len = 0;
			if (cm_buf_puts(&s->out, "event: dropped\ndata: {\"detail\":\"this stream fell too far behind; "
			                         "reconnect with Last-Event-ID\"}\n\n") != CM_OK)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			s->ending = 1;
			continue;
		}
		if (got == EVENTS_NONE && now >= s->ping_at && cm_buf_puts(&s->out, ": ping\n\n") != CM_OK)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (s->out.len) {
			s->ping_at = now + EVENT_PING_MS;
			continue;
		}
		parking_wait(s->pk, s->c, ENGINE_WATCH_ANY, gen, s->ping_at);
		return 0;
	}
}

int event_stream_open(engine *e, parking *pk, struct MHD_Connection *c, const char *last_event_id, const char *pool,
                      struct MHD_Response **out)
{
	event_stream *s = calloc(1, sizeof(*s));
	int reset = 0, err;

	if (!s)
		return CM_ENOMEM;
	*s = (event_stream){.e = e, .ev = engine_events(e), .pk = pk, .c = c, .ping_at = cm_now_ms() + EVENT_PING_MS};
	snprintf(s->pool, sizeof(s->pool), "%s", pool ? pool : "");
	cm_buf_init(&s->out);
	if ((err = events_subscribe(s->ev, last_event_id, &s->cursor, &reset)) != CM_OK) {
		free(s);
		return err;
	}
	/* The first frame goes at once, so the reader knows it is connected;
	 * a reset names where the stream now is. */
	err = cm_buf_printf(&s->out, "retry: %d\n\n", EVENT_RETRY_MS);
	if (err == CM_OK && reset)
		err = (err = events_id_line(s->ev, s->cursor, &s->out)) != CM_OK
		              ? err
		              : cm_buf_puts(&s->out, "event: reset\ndata: {\"detail\":\"the events since Last-Event-ID "
		                                     "are no longer kept: read the state again\"}\n\n");
	struct MHD_Response *r =
	        err == CM_OK ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free)
	                     : NULL;
	if (!r) {
		stream_free(s);
		return CM_ENOMEM;
	}
	/* The kernel's buffer for the stream is bounded too (autotuning would
	 * let it grow to megabytes): a reader that does not read falls behind
	 * in the log, and is dropped, instead of being buffered for. */
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int sndbuf = STREAM_SNDBUF;
	if (info)
		setsockopt(info->connect_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* a proxy in front must not hold frames back */
	*out = r;
	return CM_OK;
}
