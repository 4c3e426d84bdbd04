/*
 * The ABI of a strand plugin function, named in a task as LIB.so:SYMBOL.
 * strand-worker finds LIB.so on its plugin path (STRAND_PLUGIN_PATH, a
 * colon-separated list of folders), dlopens it once and calls SYMBOL for each
 * task. A plugin includes only this header and links nothing of strand.
 *
 *   int SYMBOL(const char *arg, size_t arg_len, char **out);
 *
 * arg is the task argument as JSON text, NUL-terminated (borrowed).
 * On success return 0 and set *out to a new malloc'd NUL-terminated JSON text:
 * the task's result, which the worker checks is valid JSON.
 * On failure return non-zero and set *out to a new malloc'd error message (or
 * leave it NULL): the task fails with that message; the worker lives on.
 * The worker frees *out with free(). A worker runs one task at a time, so a
 * plugin needs no locking of its own.
 */
#ifndef STRAND_PLUGIN_H
#define STRAND_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

typedef int strand_plugin_fn(const char *arg, size_t arg_len, char **out);

/*
 * Queues and pipes, from inside a task: functions strand-worker provides to
 * the plugins it loads (over nng to the gateway, not HTTP). Items are JSON
 * texts. Each returns 0 on success, 1 when nothing came within wait_ms (get,
 * recv), -1 on an error (the message is on stderr: the task's log).
 * *item is new; free() it. Named strand_task_* so that a program can
 * include this header beside libstrand's <strand/client.h>, whose
 * strand_queue_put and friends talk HTTP to a gateway.
 */
int strand_task_queue_put(const char *queue, const char *item);
int strand_task_queue_get(const char *queue, int wait_ms, char **item);
int strand_task_pipe_send(const char *pipe, int end, const char *item);
int strand_task_pipe_recv(const char *pipe, int end, int wait_ms, char **item);
/* How many items wait in a queue, or for a pipe's end to receive: 0 with
 * *size, or -1. */
int strand_task_queue_size(const char *queue, int64_t *size);
int strand_task_pipe_size(const char *pipe, int end, int64_t *size);

/*
 * A manager type (the object an AsyncManager hosts), named LIB.so:TYPE:
 *
 *   void *TYPE_new(void);                          the object, or NULL
 *   int   TYPE_call(void *self, const char *method, const char *args, char **out);
 *   void  TYPE_free(void *self);
 *
 * args is a JSON array. TYPE_call follows the rules of a plugin function:
 * 0 and a malloc'd JSON result, or non-zero and a malloc'd message. Calls
 * come one at a time, in the order they were made.
 */
typedef void *strand_manager_new_fn(void);
typedef int strand_manager_call_fn(void *self, const char *method, const char *args, char **out);
typedef void strand_manager_free_fn(void *self);

#endif
