/* What tasks print, kept line by line for the gateway; see output.h. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/output.h"

/* Lines are sent once they waited this long, or sooner when this many
 * bytes wait: a chatty task costs a pull every 100 ms, not one a line. */
#define DUE_MS 100
#define DUE_BYTES (64u << 10)

static struct {
	pthread_mutex_t mu;
	int capturing;
	worker_output_lines held; /* complete lines, oldest first */
	char partial[2][WORKER_OUTPUT_LINE_MAX]; /* each stream's unfinished line */
	size_t partial_len[2];
	/* When the oldest waiting byte came (0: none waits) and the bytes
	 * waiting: written under mu, read without it by worker_output_due,
	 * which the worker asks before every exchange. */
	_Atomic int64_t since;
	_Atomic size_t waiting;
	uint64_t dropped; /* lines dropped since the last kept */
	uint64_t sent; /* lines the gateway recorded */
} out = {.mu = PTHREAD_MUTEX_INITIALIZER};

void worker_output_capture(void)
{
	pthread_mutex_lock(&out.mu);
	out.capturing = 1;
	pthread_mutex_unlock(&out.mu);
}

static int push(worker_output_lines *l, int stream, const char *text, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		uint32_t *lens = realloc(l->lens, cap * sizeof(*lens));
		if (lens)
			l->lens = lens;
		uint32_t *streams = lens ? realloc(l->streams, cap * sizeof(*streams)) : NULL;
		if (!streams)
			return CM_ENOMEM;
		l->streams = streams;
		l->cap = cap;
	}
	if (cm_buf_append(&l->text, text, len) != CM_OK)
		return CM_ENOMEM;
	l->lens[l->n] = (uint32_t)len;
	l->streams[l->n++] = (uint32_t)stream;
	return CM_OK;
}

#define NOTE_MAX 128

/* The line that says how many were dropped, once there is room for it;
 * with the lock held. */
static void say_dropped(void)
{
	char note[NOTE_MAX];

	if (!out.dropped || out.held.text.len + sizeof(note) > WORKER_OUTPUT_HELD_MAX)
		return;
	int n = snprintf(note, sizeof(note),
	                 "[strand: %llu lines dropped: they came faster than the worker could send them]",
	                 (unsigned long long)out.dropped);
	if (push(&out.held, WORKER_OUTPUT_STDERR, note, (size_t)n) == CM_OK)
		out.dropped = 0;
}

/* A whole line into the held ones, or counted as dropped when they fill
 * their room; with the lock held. */
static void keep(int stream, const char *text, size_t len)
{
	if (out.held.text.len + len + NOTE_MAX > WORKER_OUTPUT_HELD_MAX) {
		out.dropped++;
		return;
	}
	say_dropped();
	if (out.dropped || push(&out.held, stream, text, len) != CM_OK)
		out.dropped++;
	atomic_store(&out.waiting, out.held.text.len);
}

void worker_output_write(int stream, const char *data, size_t len)
{
	int s = stream == WORKER_OUTPUT_STDOUT ? 0 : 1;

	pthread_mutex_lock(&out.mu);
	if (!out.capturing) {
		pthread_mutex_unlock(&out.mu);
		if (write(s ? STDERR_FILENO : STDOUT_FILENO, data, len) < 0) {
			/* the process's own output is gone: nothing to tell */
		}
		return;
	}
	if (len && !out.since)
		out.since = cm_now_ms();
	for (size_t i = 0; i < len; i++) {
		char c = data[i];
		if (c != '\n')
			out.partial[s][out.partial_len[s]++] = c;
		if (c == '\n' || out.partial_len[s] == WORKER_OUTPUT_LINE_MAX) {
			keep(stream == WORKER_OUTPUT_STDOUT ? WORKER_OUTPUT_STDOUT : WORKER_OUTPUT_STDERR,
			     out.partial[s], out.partial_len[s]);
			out.partial_len[s] = 0;
		}
	}
	pthread_mutex_unlock(&out.mu);
}

int worker_output_due(int64_t now_ms)
{
	int64_t since = atomic_load(&out.since);

	return since && (now_ms - since >= DUE_MS || atomic_load(&out.waiting) >= DUE_BYTES);
}

uint64_t worker_output_mark(void)
{
	pthread_mutex_lock(&out.mu);
	/* An unfinished line and the note of lines dropped count as the
	 * lines the next peek makes of them. */
	uint64_t mark = out.sent + out.held.n + (out.partial_len[0] > 0) + (out.partial_len[1] > 0) + (out.dropped > 0);
	pthread_mutex_unlock(&out.mu);
	return mark;
}

int worker_output_peek(worker_output_lines *l, size_t max_bytes, size_t max_lines)
{
	size_t bytes = 0, at = 0;
	int err = CM_OK;

	l->n = 0;
	l->text.len = 0;
	pthread_mutex_lock(&out.mu);
	l->first = out.sent;
	/* An unfinished line (a progress bar, a prompt) goes as it is. */
	for (int s = 0; s < 2; s++)
		if (out.partial_len[s]) {
			keep(s ? WORKER_OUTPUT_STDERR : WORKER_OUTPUT_STDOUT, out.partial[s], out.partial_len[s]);
			out.partial_len[s] = 0;
		}
	say_dropped(); /* the last lines were dropped: no line after them said so */
	for (size_t i = 0; i < out.held.n && i < max_lines && err == CM_OK; i++) {
		if (i && bytes + out.held.lens[i] > max_bytes)
			break;
		err = push(l, (int)out.held.streams[i], out.held.text.data + at, out.held.lens[i]);
		bytes += out.held.lens[i];
		at += out.held.lens[i];
	}
	l->more = out.held.n > l->n || out.dropped;
	pthread_mutex_unlock(&out.mu);
	return err;
}

void worker_output_sent(size_t n)
{
	size_t bytes = 0;

	pthread_mutex_lock(&out.mu);
	if (n > out.held.n)
		n = out.held.n;
	for (size_t i = 0; i < n; i++)
		bytes += out.held.lens[i];
	if (n) {
		memmove(out.held.text.data, out.held.text.data + bytes, out.held.text.len - bytes);
		out.held.text.len -= bytes;
		memmove(out.held.lens, out.held.lens + n, (out.held.n - n) * sizeof(*out.held.lens));
		memmove(out.held.streams, out.held.streams + n, (out.held.n - n) * sizeof(*out.held.streams));
		out.held.n -= n;
		out.sent += n;
		atomic_store(&out.waiting, out.held.text.len);
	}
	if (!out.held.n && !out.partial_len[0] && !out.partial_len[1])
		out.since = 0;
	else if (n)
		out.since = cm_now_ms();
	pthread_mutex_unlock(&out.mu);
}

void worker_output_lines_fini(worker_output_lines *l)
{
	cm_buf_fini(&l->text);
	free(l->lens);
	free(l->streams);
	*l = (worker_output_lines){0};
}
