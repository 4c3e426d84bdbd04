/*
 * The operator's policy over what a request may ask for, applied after a
 * request parsed (spec.h) and before the engine sees it: which images run,
 * which host paths and named volumes a container may mount, whether
 * containers may run as root, whether command
 * tasks and processes are allowed at all. Refusals are CM_EPERM (403) with
 * the flag that would allow it named in detail. Pure; thread-safe.
 */
#ifndef GATEWAY_POLICY_H
#define GATEWAY_POLICY_H

#include <stddef.h>

#include "gateway/config.h"
#include "gateway/spec.h"

/* Where and how workers or processes run: the image, volumes and root. */
int policy_check_run(const gw_config *cfg, const pool_spec *run, char *detail, size_t detail_len);
/* has_command: the request runs a command (a map's "command", a process's). */
int policy_check_command(const gw_config *cfg, int has_command, char *detail, size_t detail_len);

/* A process or ring member: where it runs, and whether it is a command. */
int policy_check_process(const gw_config *cfg, const process_spec *spec, char *detail, size_t detail_len);

/* Whether a container image is one the operator allows (--allow-images,
 * or --image alone). */
int policy_image_allowed(const gw_config *cfg, const char *image);

/* Whether path (absolute) lies under one of the colon-separated prefixes,
 * compared by whole path components after removing "." and ".." steps. */
int policy_path_allowed(const char *path, const char *prefixes);

#endif
