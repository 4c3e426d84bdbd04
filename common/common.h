/*
 * common: the error enum, logging, growable buffers, ids, clocks and the
 * task-function name rules shared by the gateway and the worker.
 *
 * It deliberately knows nothing of HTTP, nng or SQLite: foreign error codes
 * are translated into cm_err where those libraries are called.
 * Thread-safe: nothing here keeps state between calls.
 */
#ifndef COMMON_COMMON_H
#define COMMON_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef enum cm_err {
	CM_OK = 0,
	CM_EINVAL, /* malformed input: bad JSON, bad field, bad frame */
	CM_ENOMEM, /* allocation failed */
	CM_ENOENT, /* no such pool, job, worker */
	CM_ECLOSED, /* the pool takes no new work */
	CM_ETOOBIG, /* input over a documented cap */
	CM_EUNSUPPORTED, /* understood but not offered: backend, function */
	CM_EIO, /* storage or system call failure */
	CM_EUNAVAIL, /* a dependency is down or the store is read-only */
	CM_ETIMEDOUT, /* a wait ran out */
	CM_ESHUTDOWN, /* the process is stopping */
	CM_EPERM, /* the operator's policy forbids it */
	CM_EQUOTA, /* over one of the operator's quotas (--max-*) */
} cm_err;

/* Returns a static, human-readable name for an error code. */
const char *cm_strerror(int err);

/* Logging: one line per event on stderr, prefixed with UTC time and level. */
enum { CM_LOG_DEBUG, CM_LOG_INFO, CM_LOG_WARN, CM_LOG_ERROR };
void cm_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cm_info(...) cm_log(CM_LOG_INFO, __VA_ARGS__)
#define cm_warn(...) cm_log(CM_LOG_WARN, __VA_ARGS__)
#define cm_error(...) cm_log(CM_LOG_ERROR, __VA_ARGS__)
/* A line that a flood could repeat thousands of times a second (a refused
 * connection): logged at most once a second for each limiter, with how
 * many like it were left out since. Thread-safe; zeroed: ready. */
typedef struct cm_log_limit {
	_Atomic int64_t next_ms;
	_Atomic uint64_t left_out;
} cm_log_limit;
void cm_log_limited(cm_log_limit *limit, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A growable byte buffer, always NUL-terminated when len > 0. Caller storage:
 * cm_buf_init / cm_buf_fini. Appends return CM_ENOMEM on allocation failure
 * and leave the buffer as it was. */
typedef struct cm_buf {
	char *data;
	size_t len;
	size_t cap;
} cm_buf;

void cm_buf_init(cm_buf *b);
void cm_buf_fini(cm_buf *b);
int cm_buf_reserve(cm_buf *b, size_t extra);
int cm_buf_append(cm_buf *b, const void *data, size_t len);
int cm_buf_puts(cm_buf *b, const char *s);
int cm_buf_printf(cm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. */
int cm_buf_json_string(cm_buf *b, const char *s, size_t len);
/* Takes the data out of the buffer: returns a new heap string (never NULL:
 * an empty buffer gives ""), or NULL on allocation failure. */
char *cm_buf_steal(cm_buf *b);

/* Fills out (at least 19 bytes) with "<prefix>-" and 16 random hex digits. */
void cm_id_new(char prefix, char out[20]);
/* n random bytes (getrandom, a pool per thread). */
void cm_random_bytes(void *out, size_t n);
/* Random hex string of 2*nbytes digits, for secrets. out holds 2*nbytes+1. */
void cm_random_hex(char *out, size_t nbytes);
/* Whether a and b, len bytes each, are equal, in a time that does not say
 * where they differ: for comparing secrets, hashes of them and grants. */
int cm_secret_equal(const void *a, const void *b, size_t len);

/* "HOST:PORT" or "[V6]:PORT" (text[0..len)) into host (without brackets,
 * host_len bytes at most with its NUL) and port (digits, 1 to 65535; there
 * must be one). Returns CM_OK or CM_EINVAL. */
int cm_host_port(const char *text, size_t len, char *host, size_t host_len, char port[6]);

/* text as a whole number from lo to hi: digits after an optional sign,
 * nothing before or after them. Returns CM_OK (and *out) or CM_EINVAL. */
int cm_whole(const char *text, int64_t lo, int64_t hi, int64_t *out);
/* A hub URL's socket: tcp://, tcp4://, tcp6:// (HOST:PORT follows;
 * *family is AF_UNSPEC, AF_INET or AF_INET6), the same in TLS
 * (tls+tcp://, tls+tcp4://, tls+tcp6://: *tls set) or ipc:// (a path;
 * AF_UNIX). Returns the length of its scheme, or 0 for any other URL. */
size_t cm_socket_url(const char *url, int *family, int *tls);
/* An ipc:// URL's path as a Unix socket's address (*a, all of it set).
 * Returns CM_OK, or CM_EINVAL for a path that is empty or longer than the
 * address holds (107 bytes). */
struct sockaddr_un;
int cm_unix_address(const char *path, struct sockaddr_un *a);

/* Reads the PEM file at path (a certificate chain or a key, at most 1 MiB)
 * into out, NUL-terminated. Returns CM_OK, or CM_EIO / CM_EINVAL (not PEM)
 * with the reason in detail. */
int cm_read_pem(const char *path, cm_buf *out, char *detail, size_t detail_len);

/* Whether s[0..len) is valid UTF-8 (strict: no overlongs, surrogates or NUL). */
int cm_utf8_valid(const char *s, size_t len);
/* Replaces each byte of the NUL-terminated s that is not part of a valid
 * UTF-8 sequence (a cut multibyte character included) with '?', in place. */
void cm_utf8_sanitize(char *s);

/* Integers in byte buffers, least significant byte first (le_bytes.c). */
uint32_t cm_le32_get(const uint8_t *p);
uint64_t cm_le64_get(const uint8_t *p);
void cm_le32_put(uint8_t *p, uint32_t v);
void cm_le64_put(uint8_t *p, uint64_t v);

/* Sets the allocator for a process that allocates and frees in bursts
 * (a batch of tasks, a page of results): freed memory is kept for the
 * next burst instead of being given back to the system and faulted in
 * again. Call first thing in main. */
void cm_malloc_for_bursts(void);

int64_t cm_now_ms(void); /* monotonic clock */
int64_t cm_wall_ms(void); /* wall clock, for timestamps shown to users */
/* Appends the last max bytes of the file at path to out (CM_ENOENT: no
 * such file). */
int cm_read_tail(const char *path, size_t max, cm_buf *out);
/* Removes path and everything under it, what it can (a link is removed,
 * not followed). */
void cm_remove_tree(const char *path);
/* Opens (making it) and locks the file at path for this process alone,
 * waiting for whoever holds it: the descriptor, whose close unlocks it, or
 * -1 with errno. Workers sharing a cache do a fetch once so. */
int cm_lock_file(const char *path);
/* All len bytes to (or from) fd, through short writes (reads) and EINTR:
 * 0, or -1 (errno set; a read that met the end leaves it 0). */
int cm_write_all(int fd, const void *p, size_t len);
int cm_read_all(int fd, void *p, size_t len);
/* The time ms milliseconds from now on clock id, for pthread_cond_timedwait
 * (whose condition variable waits on that clock). */
struct timespec cm_timespec_in(clockid_t id, int64_t ms);
double cm_now_s(void); /* monotonic, in seconds with ns resolution */
/* Whether pid runs: it is there and is neither a zombie nor dead. For a
 * process that is not our child (waitpid cannot tell), such as an orphan
 * whose new parent (init, a subreaper) reaps it when it will, or never. */
int cm_process_running(pid_t pid);
/* pid's command name (as much as fits comm), state (R, S, Z, ...) and
 * parent, from /proc/PID/stat: 0, or -1 when there is no such process. */
int cm_process_stat(pid_t pid, char *comm, size_t comm_len, char *state, pid_t *ppid);

/*
 * Task function names. A task names its function in one of these forms:
 *   NAME or builtin:NAME   a function compiled into strand-worker
 *   LIB.so:SYMBOL          a C function in a plugin on the worker's plugin path
 *   exec                   a process per task (the job carries the command)
 *   rt:NAME                a function of the pool's runtime (worker/runtime.h),
 *                          NAME as that runtime reads it (Python: module:qualname)
 * cm_function_check validates the syntax (and builtin names) and writes the
 * reason for a refusal into detail. Returns CM_OK or CM_EUNSUPPORTED.
 */
#define CM_RUNTIME_FUNCTION_MAX 200
int cm_function_check(const char *name, char *detail, size_t detail_len);
/* The same for a name a client sent, where the reserved "manager" (the
 * gateway's own calls to a hosted object) is refused too. Every route that
 * takes a function name checks it here. */
int cm_function_check_request(const char *name, char *detail, size_t detail_len);
/* Strips an optional "builtin:" prefix; returns a borrowed pointer into name. */
const char *cm_function_builtin_name(const char *name);
extern const char *const cm_builtin_functions[]; /* NULL-terminated */

#endif
