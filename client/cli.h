/*
 * The strand command's parts: one file per command (cli_process.c: run, ps,
 * logs, kill; cli_pool.c; cli_queue.c: queue and pipe; cli_jobs.c), main in cli.c, and
 * what they share (cli_util.c).
 */
#ifndef CLIENT_CLI_H
#define CLIENT_CLI_H

#include <getopt.h>
#include <signal.h>

#include "client/client.h"

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2 };

/* text on stdout (code 0) or stderr; returns code. */
int cli_usage(const char *text, int code);
/* The client's last error on stderr; returns EXIT_REFUSED. */
int cli_refused(strand_client *c);
/* An argument as JSON if it parses as JSON, else as a string (new). */
json_t *cli_value_of(const char *text);
void cli_print_json(json_t *j); /* indented */
void cli_print_lines(json_t *array); /* each item a compact JSON line */
/* getopt_long over argv (optind set by the caller), where a negative number
 * (-5) is an argument, not an option. */
int cli_next_opt(int argc, char **argv, const char *shorts, const struct option *longs);
/* Whether s could be an id (j-…, p-…): nothing that would change a URL. */
int cli_id_like(const char *s);
int cli_states_like(const char *s); /* a --state value: lower-case words and commas */
/* Whether any argument is --help or -h: the command prints its usage and
 * sends nothing. */
int cli_asks_help(int argc, char **argv);
long cli_whole_number(const char *s, long lo, long hi); /* or -1 */
int cli_min_max(const char *s, long *min, long *max); /* MIN:MAX; 0 if not that */
double cli_cores(const char *s); /* 0 < n <= 1024, or -1 */
/* --cpu (opt 'c'), --memory ('m') or --gpu ('g') into res (a resources
 * object); NULL, or what is wrong with value. */
const char *cli_resource(int opt, const char *value, json_t *res);
/* GETs path (it has a query) and its next pages, calling row on each item
 * of key, or printing each as a JSON line. */
int cli_each_page(strand_client *c, const char *path, const char *key, void (*row)(json_t *item, void *ctx), void *ctx);
int cli_print_pages(strand_client *c, const char *path, const char *key);
/* From cli_catch_interrupt on, Ctrl-C sets cli_interrupted instead of
 * ending the command (a --wait then says the work goes on, and how to
 * stop it); a sleep or wait it ends returns early. */
extern volatile sig_atomic_t cli_interrupted;
void cli_catch_interrupt(void);

int cmd_run(strand_client *c, int argc, char **argv);
int cmd_ps(strand_client *c, int argc, char **argv);
int cmd_logs(strand_client *c, int argc, char **argv);
int cmd_kill(strand_client *c, int argc, char **argv);
int cmd_pool(strand_client *c, int argc, char **argv);
int cmd_queue(strand_client *c, int argc, char **argv);
int cmd_pipe(strand_client *c, int argc, char **argv);
int cmd_jobs(strand_client *c, int argc, char **argv);

#endif
