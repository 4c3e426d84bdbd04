/*
 * The slurm backend: one Slurm batch job per worker (and per Process),
 * through Slurm's own commands, run as the gateway's user on its
 * executor's thread (executor.h), so a slow slurmctld stalls no one
 * else:
 *
 *   run     sbatch --parsable --job-name=strand-<pool>-<n> --comment=<labels>
 *                  --export=ALL --no-requeue --output=... [resources] <script>
 *   poll    squeue --me --states=all: one listing of this user's jobs serves
 *           every poll for POLL_MS; a job in an ended state (COMPLETED,
 *           FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, ...) or no
 *           longer listed is gone
 *   stop    scancel --signal=TERM --full <id> (soft), scancel <id> (hard)
 *   find    the job whose comment names the owner (adoption of a start the
 *           gateway never recorded)
 *
 * Why the commands and not slurmrestd: they are on every login node and
 * authenticate through munge as the user who runs them, whereas slurmrestd
 * is an optional daemon the cluster's admins must run, with JWT keys to
 * hand out, and its API changes with each Slurm release (22.05 speaks
 * v0.0.36 to v0.0.38, later releases drop them). (squeue's --json would
 * list every user's jobs: 22.05 ignores its filters with it.)
 *
 * A job runs a script that execs the program (the worker by its path: the
 * nodes share this host's install, as on any cluster). The worker's
 * secrets travel in sbatch's environment, made for the job alone, never
 * on a command line. Output goes to the Process's log file, or for a
 * worker to <output dir>/<job id>.out, a directory the nodes must see (a
 * shared file system) for logs and last words to be read. Resources: cpu ->
 * --cpus-per-task (rounded up), memory_mb -> --mem, gpu -> --gres=gpu:N.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/backend.h"
#include "gateway/backend/spawn.h"

extern char **environ;

#define POLL_MS 1000
#define SCRIPT_MAX 65536
#define OUTPUT_MAX (64u << 20) /* a command's answer: squeue's is some 150 bytes a job */
/* squeue's fields, '|' after each (a field without one is cut at 20
 * characters); the comment last, as it may hold a '|' */
#define LISTING "JobID:|,State:|,exit_code:|,Reason:|,Comment:|"

/* One job as squeue lists it. */
typedef struct slurm_job {
	long long id;
	char state[24];
	int status; /* exit_code: the batch script's wait status */
	char reason[64];
	char comment[400];
} slurm_job;

typedef struct slurm {
	backend base; /* first: the engine holds a backend * */
	slurm_config cfg;
	slurm_job *jobs; /* squeue's last listing: this user's jobs */
	size_t njobs;
	int listed; /* jobs holds a listing */
	int64_t jobs_at;
} slurm;

/* ---- running a command --------------------------------------------------- */

/* Reads a command's stdout into out and stderr into err until both end;
 * returns 0, -1 past the deadline, -2 past OUTPUT_MAX (or out of memory). */
static int drain(int out_fd, int err_fd, cm_buf *out, cm_buf *err, int64_t deadline)
{
	struct pollfd fds[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
	char chunk[16384];

	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		int64_t left = deadline - cm_now_ms();
		if (left <= 0 || poll(fds, 2, (int)left) < 0) {
			if (left > 0 && errno == EINTR)
				continue;
			return -1;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fds[i].fd = -1;
				continue;
			}
			cm_buf *b = i == 0 ? out : err;
			if (b->len + (size_t)n > OUTPUT_MAX || cm_buf_append(b, chunk, (size_t)n) != CM_OK)
				return -2;
		}
	}
	return 0;
}

/* Runs a Slurm command, env added to the gateway's environment (or alone:
 * env_only). Returns its exit code with what it wrote to stdout in out
 * (NUL-terminated), or -1 with the reason in detail: it could not run,
 * took longer than the backend's timeout or said too much (then it is
 * killed). On an exit code other than 0, detail holds the last line it
 * wrote to stderr. */
static int command(slurm *s, char *const *argv, size_t argc, char *const *env, size_t nenv, int env_only, cm_buf *out,
                   char *detail, size_t detail_len)
{
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, status = 0, rc = -1, drained;
	spawn_options o = {.argv = argv, .argc = argc, .env = env, .nenv = nenv, .env_only = env_only};
	cm_buf err;
	pid_t pid;

	cm_buf_init(out);
	cm_buf_init(&err);
	if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
		snprintf(detail, detail_len, "cannot run %s: %s", argv[0], strerror(errno));
		goto out;
	}
	o.output_fd = out_pipe[1];
	o.error_fd = err_pipe[1];
	if (spawn_process(&o, &pid, detail, detail_len) != CM_OK)
		goto out;
	close(out_pipe[1]);
	close(err_pipe[1]);
	out_pipe[1] = err_pipe[1] = -1;
	if ((drained = drain(out_pipe[0], err_pipe[0], out, &err, cm_now_ms() + 1000LL * s->cfg.timeout_s)) != 0) {
		spawn_signal_group(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (drained == -1)
			snprintf(detail, detail_len, "%s did not answer within %d s", argv[0], s->cfg.timeout_s);
		else
			snprintf(detail, detail_len, "%s said more than %u MiB", argv[0], OUTPUT_MAX >> 20);
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (cm_buf_append(out, "", 1) != CM_OK) {
		snprintf(detail, detail_len, "out of memory");
		goto out;
	}
	out->len--;
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (rc != 0) {
		/* Slurm's commands say why on their last line: "sbatch: error: ..." */
		while (err.len && (err.data[err.len - 1] == '\n' || err.data[err.len - 1] == ' '))
			err.len--;
		size_t from = err.len;
		while (from && err.data[from - 1] != '\n')
			from--;
		if (err.len > from)
			snprintf(detail, detail_len, "%.*s", (int)(err.len - from), err.data + from);
		else
			snprintf(detail, detail_len, "%s exited with code %d", argv[0], rc);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	cm_buf_fini(&err);
	return rc;
}

/* ---- starting a job ------------------------------------------------------ */

/* Appends s quoted for sh: '...' with each ' as '\''. */
static int shell_quote(cm_buf *b, const char *s)
{
	int err = cm_buf_puts(b, " '");
	for (const char *q; err == CM_OK && (q = strchr(s, '\'')); s = q + 1)
		if ((err = cm_buf_append(b, s, (size_t)(q - s))) == CM_OK)
			err = cm_buf_puts(b, "'\\''");
	return err == CM_OK && (err = cm_buf_puts(b, s)) == CM_OK ? cm_buf_puts(b, "'") : err;
}

/* The batch script: the program replaces the script's shell, so the job's
 * signals and exit code are the program's own. Written to a file of the
 * output directory, which sbatch copies to the controller. */
static int write_script(slurm *s, const backend_run_spec *spec, char *path, size_t path_len, char *detail,
                        size_t detail_len)
{
	cm_buf b;
	int fd, err = CM_OK;

	cm_buf_init(&b);
	err = cm_buf_puts(&b, "#!/bin/sh\nexec");
	for (size_t i = 0; i < spec->argc && err == CM_OK; i++)
		err = shell_quote(&b, spec->argv[i]);
	if (err == CM_OK)
		err = cm_buf_puts(&b, "\n");
	if (err != CM_OK || b.len > SCRIPT_MAX) {
		snprintf(detail, detail_len, err != CM_OK ? "out of memory" : "the command is over %d bytes",
		         SCRIPT_MAX);
		cm_buf_fini(&b);
		return err != CM_OK ? err : CM_ETOOBIG;
	}
	snprintf(path, path_len, "%s/.submit-XXXXXX", s->cfg.output_dir);
	if ((fd = mkstemp(path)) < 0) {
		snprintf(detail, detail_len, "cannot write the batch script in %s: %s", s->cfg.output_dir,
		         strerror(errno));
		cm_buf_fini(&b);
		return CM_EIO;
	}
	if (write(fd, b.data, b.len) != (ssize_t)b.len) {
		snprintf(detail, detail_len, "cannot write the batch script %s: %s", path, strerror(errno));
		err = CM_EIO;
		unlink(path);
	}
	close(fd);
	cm_buf_fini(&b);
	return err;
}

/* Whether the gateway's variable v goes to sbatch: what a shell needs, and
 * Slurm's own settings (SLURM_CONF, SBATCH_ACCOUNT, ...). */
static int passed_on(const char *v)
{
	static const char *const prefixes[] = {"PATH=", "HOME=",   "USER=",  "LOGNAME=", "LANG=", "LC_",
	                                       "TZ=",   "TMPDIR=", "SLURM_", "SBATCH_",  NULL};
	for (size_t i = 0; prefixes[i]; i++)
		if (strncmp(v, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* sbatch's whole environment, which it exports to the job (--export=ALL):
 * the basics of the gateway's, then the run's own variables (secrets
 * among them, never on a command line). Naming the variables in --export
 * instead has Slurm load the user's login environment on the node first,
 * seconds per job. */
static char **job_environment(const backend_run_spec *spec, size_t *n, char *detail, size_t detail_len)
{
	size_t count = 0, k = 0;
	char **env;

	while (environ[count])
		count++;
	if (!(env = calloc(count + spec->nenv + 1, sizeof(char *)))) {
		snprintf(detail, detail_len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < count; i++)
		if (passed_on(environ[i]))
			env[k++] = environ[i];
	for (size_t i = 0; i < spec->nenv; i++) {
		const char *eq = strchr(spec->env[i], '=');
		size_t len = eq ? (size_t)(eq - spec->env[i]) : 0;
		if (!len ||
		    strspn(spec->env[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != len) {
			snprintf(detail, detail_len, "environment variable '%.*s' is not a name a job can have",
			         (int)(len ? len : strcspn(spec->env[i], "=")), spec->env[i]);
			free(env);
			return NULL;
		}
		/* sbatch reads these as its own options (SBATCH_PARTITION,
		 * SLURM_CONF: another cluster): a request must not set them. */
		if (strncmp(spec->env[i], "SLURM_", 6) == 0 || strncmp(spec->env[i], "SBATCH_", 7) == 0) {
			snprintf(detail, detail_len, "environment variable '%.*s' is Slurm's own: a job may not set it",
			         (int)len, spec->env[i]);
			free(env);
			return NULL;
		}
		env[k++] = spec->env[i];
	}
	*n = k;
	return env;
}

static int slurm_run(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                     size_t detail_len)
{
	slurm *s = (slurm *)b;
	const pool_spec *ps = spec->spec;
	char script[1200], name[128], comment[400], output[1300], cpus[40], mem[40], gres[40], partition[100];
	char name_arg[140], comment_arg[420];
	char *argv[18];
	size_t argc = 0, o = 0;
	char **env;
	size_t nenv = 0;
	cm_buf out;
	int err, rc;

	if (!spec->argc) {
		snprintf(detail, detail_len, "the slurm backend runs a command or a function, not an image's own");
		return CM_EINVAL;
	}
	if (ps && ps->nvolumes) {
		snprintf(detail, detail_len,
		         "volumes are not offered by the slurm backend (jobs see the nodes' files)");
		return CM_EUNSUPPORTED;
	}
	/* A worker's name is given (strand-<pool>-<n>); a Process's is its id. */
	snprintf(name, sizeof(name), "%s", spec->name ? spec->name : "strand");
	comment[0] = '\0';
	for (size_t i = 0; i < spec->nlabels; i++) {
		o += (size_t)snprintf(comment + o, sizeof(comment) - o, "%s%s", i ? "," : "", spec->labels[i]);
		if (!spec->name && strncmp(spec->labels[i], "strand.process=", 15) == 0)
			snprintf(name, sizeof(name), "strand-%s", spec->labels[i] + 15);
		if (o >= sizeof(comment))
			break;
	}
	if (!(env = job_environment(spec, &nenv, detail, detail_len)))
		return CM_EINVAL;
	if ((err = write_script(s, spec, script, sizeof(script), detail, detail_len)) != CM_OK) {
		free(env);
		return err;
	}
	/* Slurm reads % in the name as a pattern (%j: the job id); %% is one %. */
	o = (size_t)snprintf(output, sizeof(output), "--output=");
	for (const char *c = spec->log_path ? spec->log_path : s->cfg.output_dir; *c && o + 3 < sizeof(output); c++)
		o += (size_t)snprintf(output + o, sizeof(output) - o, *c == '%' ? "%%%%" : "%c", *c);
	if (!spec->log_path)
		snprintf(output + o, sizeof(output) - o, "/%%j.out");
	argv[argc++] = "sbatch";
	argv[argc++] = "--parsable";
	snprintf(name_arg, sizeof(name_arg), "--job-name=%s", name);
	argv[argc++] = name_arg;
	snprintf(comment_arg, sizeof(comment_arg), "--comment=%s", comment);
	argv[argc++] = comment_arg;
	argv[argc++] = output;
	argv[argc++] = "--export=ALL";
	/* A job Slurm would run again (after its node failed) is a worker the
	 * gateway already replaced: never requeued, the gateway starts anew. */
	argv[argc++] = "--no-requeue";
	if (s->cfg.partition[0]) {
		snprintf(partition, sizeof(partition), "--partition=%s", s->cfg.partition);
		argv[argc++] = partition;
	}
	if (ps && ps->cpu > 0) {
		snprintf(cpus, sizeof(cpus), "--cpus-per-task=%d",
		         (int)ps->cpu + (ps->cpu > (int)ps->cpu)); /* rounded up */
		argv[argc++] = cpus;
	}
	if (ps && ps->memory_mb > 0) {
		snprintf(mem, sizeof(mem), "--mem=%lldM", (long long)ps->memory_mb);
		argv[argc++] = mem;
	}
	if (ps && ps->gpu > 0) {
		snprintf(gres, sizeof(gres), "--gres=gpu:%d", ps->gpu);
		argv[argc++] = gres;
	}
	argv[argc++] = script;
	argv[argc] = NULL;
	rc = command(s, argv, argc, env, nenv, 1, &out, detail, detail_len);
	unlink(script);
	free(env);
	s->jobs_at = 0; /* the next poll must see the new job */
	/* "1234" or "1234;cluster" */
	if (rc == 0 && out.len && out.data[0] >= '1' && out.data[0] <= '9') {
		snprintf(handle, BACKEND_HANDLE_MAX, "%.*s", (int)strspn(out.data, "0123456789"), out.data);
		cm_buf_fini(&out);
		return CM_OK;
	}
	if (rc == 0)
		snprintf(detail, detail_len, "sbatch answered no job id");
	cm_buf_fini(&out);
	return CM_EUNAVAIL;
}

/* ---- watching jobs ------------------------------------------------------- */

/* Whether s is in list (NULL-terminated). */
static int one_of(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

/* Parses one line of squeue's listing (LISTING's fields) into j; 0 if it
 * is not one. */
static int parse_job(char *line, slurm_job *j)
{
	char *field[5];

	for (int i = 0; i < 4; i++) {
		field[i] = line;
		if (!(line = strchr(line, '|')))
			return 0;
		*line++ = '\0';
	}
	field[4] = line; /* the comment, last: it may hold anything */
	if (*line && line[strlen(line) - 1] == '|')
		line[strlen(line) - 1] = '\0';
	j->id = strtoll(field[0], NULL, 10);
	snprintf(j->state, sizeof(j->state), "%s", field[1]);
	j->status = atoi(field[2]);
	snprintf(j->reason, sizeof(j->reason), "%s", field[3]);
	snprintf(j->comment, sizeof(j->comment), "%s", field[4]);
	return j->id > 0;
}

/* The jobs Slurm knows now (at most POLL_MS old); CM_OK, or an error when
 * squeue cannot say (then nothing is assumed). */
static int refresh(slurm *s)
{
	char *argv[] = {"squeue", "--me", "--noheader", "--states=all", "--Format=" LISTING, NULL};
	char detail[256], *line, *next;
	slurm_job *jobs = NULL;
	size_t n = 0, cap = 0;
	int64_t now = cm_now_ms();
	cm_buf out;

	if (s->listed && now - s->jobs_at < POLL_MS)
		return CM_OK;
	if (command(s, argv, 5, NULL, 0, 0, &out, detail, sizeof(detail)) != 0) {
		cm_warn("slurm: cannot list jobs: %s", detail);
		cm_buf_fini(&out);
		return CM_EUNAVAIL;
	}
	for (line = out.data; line && *line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (n == cap) {
			slurm_job *grown = realloc(jobs, (cap = cap ? 2 * cap : 64) * sizeof(*jobs));
			if (!grown) {
				free(jobs);
				cm_buf_fini(&out);
				return CM_ENOMEM;
			}
			jobs = grown;
		}
		n += (size_t)parse_job(line, &jobs[n]);
	}
	cm_buf_fini(&out);
	free(s->jobs);
	s->jobs = jobs;
	s->njobs = n;
	s->listed = 1;
	s->jobs_at = now;
	return CM_OK;
}

static const slurm_job *job_of(slurm *s, const char *handle)
{
	long long id = strtoll(handle, NULL, 10);

	for (size_t i = 0; i < s->njobs; i++)
		if (s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

/* The states a job is still on its way in or running in. */
static int job_alive(const char *state)
{
	static const char *const alive[] = {
	        "PENDING",      "RUNNING",  "CONFIGURING", "COMPLETING", "SUSPENDED",     "REQUEUED", "REQUEUE_FED",
	        "REQUEUE_HOLD", "RESIZING", "SIGNALING",   "STAGE_OUT",  "RESV_DEL_HOLD", NULL};
	return one_of(state, alive);
}

/* scancel: a signal to the program (SIGTERM, soft) or the job cancelled. */
static void scancel(slurm *s, const char *handle, int signal_only)
{
	char *signal_argv[] = {"scancel", "--signal=TERM", "--full", (char *)handle, NULL};
	char *cancel_argv[] = {"scancel", (char *)handle, NULL};
	char detail[256];
	cm_buf out;
	const slurm_job *j;
	int failed = command(s, signal_only ? signal_argv : cancel_argv, signal_only ? 4 : 2, NULL, 0, 0, &out, detail,
	                     sizeof(detail)) != 0;

	cm_buf_fini(&out);
	s->jobs_at = 0;
	/* scancel refuses a job that ended meanwhile: not worth a word. */
	if (failed && refresh(s) == CM_OK && (j = job_of(s, handle)) && job_alive(j->state))
		cm_warn("slurm: cannot stop job %s: %s", handle, detail);
}

/* Reasons a job waits that no amount of waiting ends: the request does
 * not fit what the cluster is configured to give. */
static int never_runs(const char *reason)
{
	static const char *const never[] = {"BadConstraints",     "PartitionConfig",          "PartitionNodeLimit",
	                                    "PartitionTimeLimit", "MaxMemPerLimit",           "InvalidAccount",
	                                    "InvalidQOS",         "DependencyNeverSatisfied", NULL};
	return one_of(reason, never);
}

static void output_path(slurm *s, const char *handle, const char *log_path, char *path, size_t len)
{
	if (log_path && log_path[0])
		snprintf(path, len, "%s", log_path);
	else
		snprintf(path, len, "%s/%s.out", s->cfg.output_dir, handle);
}

static int slurm_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	slurm *s = (slurm *)b;
	const slurm_job *j;
	int said;

	if (detail_len)
		detail[0] = '\0';
	if (refresh(s) != CM_OK) /* Slurm cannot say: assume nothing new */
		return (j = job_of(s, handle)) && strcmp(j->state, "PENDING") == 0 ? BACKEND_QUEUED : 0;
	if (!(j = job_of(s, handle))) {
		*exit_code = -1;
		snprintf(detail, detail_len, "slurm job %s is no longer known to Slurm", handle);
		return 1;
	}
	if (strcmp(j->state, "PENDING") == 0 && never_runs(j->reason)) {
		*exit_code = BACKEND_NEVER_STARTED;
		snprintf(detail, detail_len, "slurm job %s can never run: %s", handle, j->reason);
		scancel(s, handle, 0);
		return 1;
	}
	if (strcmp(j->state, "PENDING") == 0)
		return BACKEND_QUEUED;
	if (job_alive(j->state))
		return 0;
	/* exit_code is the wait status of the batch script, that is the program's */
	*exit_code = WIFSIGNALED(j->status) ? 128 + WTERMSIG(j->status) : WEXITSTATUS(j->status);
	said = j->reason[0] && strcmp(j->reason, "None") != 0;
	snprintf(detail, detail_len, "slurm job %s %s%s%s", handle, j->state, said ? ": " : "", said ? j->reason : "");
	return 1;
}

static int slurm_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	char path[1300];

	output_path((slurm *)b, handle, log_path, path, sizeof(path));
	return cm_read_tail(path, max, out);
}

/* Soft: SIGTERM to the program, which ends its job itself; a job still
 * pending has nothing to signal and is cancelled. */
static void slurm_stop(backend *b, const char *handle, int hard)
{
	slurm *s = (slurm *)b;
	const slurm_job *j = refresh(s) == CM_OK ? job_of(s, handle) : NULL;

	scancel(s, handle, !hard && !(j && strcmp(j->state, "PENDING") == 0));
}

/* A worker's output file goes with it; a Process's log is the engine's. */
static void slurm_release(backend *b, const char *handle)
{
	char path[1300];

	output_path((slurm *)b, handle, NULL, path, sizeof(path));
	unlink(path);
}

/* The job whose comment names owner ("strand.worker=w-..." among its
 * labels), still alive: a job started before a crash that lost its id. */
static int slurm_find(backend *b, const char *owner, char handle[BACKEND_HANDLE_MAX])
{
	slurm *s = (slurm *)b;
	size_t n = strlen(owner);

	if (refresh(s) != CM_OK)
		return CM_EUNAVAIL;
	for (size_t i = 0; i < s->njobs; i++) {
		const slurm_job *j = &s->jobs[i];
		for (const char *c = j->comment; (c = strchr(c, '=')); c++)
			if (strncmp(c + 1, owner, n) == 0 && (c[1 + n] == ',' || c[1 + n] == '\0') &&
			    job_alive(j->state)) {
				snprintf(handle, BACKEND_HANDLE_MAX, "%lld", j->id);
				return CM_OK;
			}
	}
	return CM_ENOENT;
}

static void slurm_free(backend *b)
{
	slurm *s = (slurm *)b;

	free(s->jobs);
	free(s);
}

static const backend_ops slurm_ops = {
        .name = "slurm",
        .native = 1,
        .run = slurm_run,
        .logs = slurm_logs,
        .poll = slurm_poll,
        .stop = slurm_stop,
        .release = slurm_release,
        .find = slurm_find,
        .free = slurm_free,
};

backend *backend_slurm_new(const slurm_config *cfg, char *detail, size_t detail_len)
{
	slurm *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(detail, detail_len, "out of memory");
		return NULL;
	}
	s->base.ops = &slurm_ops;
	s->cfg = *cfg;
	if (mkdir(s->cfg.output_dir, 0700) != 0 && errno != EEXIST) {
		snprintf(detail, detail_len, "cannot make the slurm output directory %s: %s", s->cfg.output_dir,
		         strerror(errno));
		free(s);
		return NULL;
	}
	/* Slurm answers now, or the gateway does not start with it. */
	if (refresh(s) != CM_OK) {
		snprintf(detail, detail_len, "Slurm does not answer (squeue failed; is SLURM_CONF right?)");
		free(s);
		return NULL;
	}
	return &s->base;
}
