/*
 * Test harness: runs a real strand-gateway on loopback (fresh SQLite file,
 * ports picked per test process) and makes HTTP requests to it.
 */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <jansson.h>
#include <sys/types.h>

typedef struct gateway {
	pid_t pid;
	int http_port;
	int hub_port;
	char dir[256]; /* temporary folder holding the database and the log */
	char db[300];
	char log[300];
	char base[64]; /* http://127.0.0.1:PORT, https:// with --tls-cert */
	char ca_file[300]; /* with --tls-cert: that certificate, trusted as a CA; the hub is tls+tcp:// */
	char token_file[300]; /* the API token the gateway made next to its database */
	char auth[320]; /* "Authorization: Bearer TOKEN" */
	const char *const *extra_args; /* given to gateway_start, kept for restarts */
} gateway;

typedef struct response {
	long status;
	char *body; /* NUL-terminated */
	size_t len;
	json_t *json; /* parsed body, or NULL */
	char content_type[128];
	char location[256];
	char set_cookie[512];
	char www_authenticate[128];
} response;

/* Starts a gateway with a new database; extra_args (NULL-terminated, may be
 * NULL, and kept for gateway_restart: it must outlive the gateway) are added
 * to its command line. Fails the test if it does not
 * answer /healthz within a few seconds. */
void gateway_start(gateway *g, const char *const *extra_args);
/* Starts again on the same database and ports (after gateway_stop/kill). */
void gateway_restart(gateway *g);
/* SIGKILL and wait: a crash of the gateway. */
void gateway_kill(gateway *g);
/* SIGTERM and wait; returns the exit status as waitpid gives it. */
int gateway_stop(gateway *g);
/* How many times text is in the gateway's log (its last MiB). */
int gateway_log_count(const gateway *g, const char *text);
/* Prints the end of the gateway's log (about 4 KiB): before a failed wait,
 * what the gateway did meanwhile. */
void gateway_log_print_tail(const gateway *g);
/* Runs strand-gateway with these flags (after loopback addresses and a
 * database in a folder of its own, which they may override) for a start it
 * should refuse: all it printed, then "exit=N". free() it. */
char *gateway_output(const char *flags);
/* Removes the temporary folder. */
void gateway_cleanup(gateway *g);

/* One request, authenticated with the gateway's token and sent as JSON.
 * body may be NULL; header may be NULL ("Name: value"). */
response http(const gateway *g, const char *method, const char *path, const char *body, const char *header);
/* One request with exactly these headers (NULL-terminated, may be NULL): no
 * token and no Content-Type unless given. */
response http_as(const gateway *g, const char *method, const char *path, const char *body, const char *const *headers);
/* The same with a body of len bytes, NULs and all (a zip). */
response http_bytes(const gateway *g, const char *method, const char *path, const void *body, size_t len,
                    const char *const *headers);
response http_json(const gateway *g, const char *method, const char *path, json_t *body /* stolen */);
void response_free(response *r);
/* method on path (body may be NULL) must answer status with detail in its
 * body; fails the test, saying what came, otherwise. */
void expect_problem(const gateway *g, const char *method, const char *path, const char *body, int status,
                    const char *detail);
/* Sends request (raw bytes, as they are) on a new loopback connection and
 * reads the answer until the gateway closes it or 10 s pass. Returns the
 * HTTP status of the answer (0: none), its whole text in out. */
int http_raw(const gateway *g, const char *request, char *out, size_t out_len);

/* A number of a process's /proc/PID/status: the one after field ("VmHWM:",
 * in KiB; "Threads:"). Fails the test when there is none. */
long proc_status_number(pid_t pid, const char *field);

/* Creates a pool of n local workers and returns its id (a new string). */
char *pool_create(const gateway *g, int processes);
/* GET path, which must answer 200; its JSON (new reference). */
json_t *http_get_ok(const gateway *g, const char *path);
/* POST body to path, which must answer 201; the new thing's id (new string). */
char *http_create(const gateway *g, const char *path, const char *body);
/* Waits (60 s at most) until every worker of the pool is connected; a
 * pool that fails or a wait that runs out prints the pool and the log. */
void pool_wait_connected(const gateway *g, const char *pool_id, int processes);

/* Pages every result of a job (order "input" or "completion", pages of
 * limit) until the job says complete; returns the items as one new JSON
 * array. Fails the test if the job does not complete. */
json_t *job_results(const gateway *g, const char *job, const char *order, int limit);

/* Creates a pool from a JSON spec (text); returns its id (new string). */
char *pool_create_spec(const gateway *g, const char *spec);
/* GET /v1/pools/{id}: the pool (new reference). */
json_t *pool_get(const gateway *g, const char *pool_id); /* a manager's too (m-…) */
/* Runs a process of spec to its end (POST, then a join of up to 60 s):
 * returns it as the join answered (new reference); *id is its id (new). */
json_t *process_run(const gateway *g, const char *spec, char **id);
/* What a process wrote (new string). */
char *process_logs(const gateway *g, const char *id);
/* Waits (20 s at most) until job has at least min_done results recorded;
 * returns how many it has then (tests assert it is still unfinished before
 * they break something, instead of sleeping and assuming). */
long long job_wait_done(const gateway *g, const char *job, long long min_done);
/* Waits (10 s at most) until n readers wait on the queue, as its
 * waiting_readers says. */
void queue_wait_readers(const gateway *g, const char *queue, long long n);
/* The pids (local backend) of the pool's workers that have not exited and
 * were started (a worker being started has no pid yet);
 * returns how many, at most max. */
int pool_worker_pids(const gateway *g, const char *pool_id, pid_t *pids, int max);
/* POST a map (spec stolen); returns the job id (new string). */
char *job_submit(const gateway *g, const char *pool_id, json_t *spec);
/* Asserts items holds every index 0..n-1 exactly once, each ok. */
void assert_each_index_once(json_t *items, int n);

/* cmocka setup and teardown of a gateway with a pool of two connected
 * local workers; *state is a pool_fixture. */
typedef struct pool_fixture {
	gateway g;
	char *pool;
} pool_fixture;
int pool_fixture_setup(void **state);
/* The same on a gateway started with extra_args (NULL-terminated). */
int pool_fixture_setup_with(void **state, const char *const *extra_args);
int pool_fixture_teardown(void **state);

/* Whether a process exists (kill(pid, 0)). */
int process_alive(pid_t pid);

/* A process named name (its comm) that descends from root, or 0: a
 * sandboxed worker under the bwrap whose pid the gateway knows. */
pid_t process_named_under(pid_t root, const char *name);

/* How many established TCP sockets process pid holds with an end on port
 * (in its network namespace); *nodelay: how many of them have TCP_NODELAY
 * set (read from a copy of each descriptor: pidfd_getfd, as root). */
int tcp_nodelay_count(pid_t pid, int port, int *nodelay);

/* A throwaway self-signed certificate for localhost and 127.0.0.1, made
 * with openssl in dir: dir/cert.pem and dir/key.pem into cert and key.
 * Skips the calling test (saying why) where openssl is missing. */
void tls_cert_make(const char *dir, char cert[300], char key[300]);
/* Calls run with the arguments of a gateway on HTTPS with a tls+tcp://
 * hub, by such a certificate (made in a folder of its own, removed
 * after); workers check it by the hub's address, 127.0.0.1. */
void with_tls_args(void (*run)(const char *const *args));

#endif
