/*
 * How the slurm backend submits jobs: the gateway's --slurm flags. Slurm's
 * own settings (which cluster, munge) come from its environment as for any
 * sbatch: SLURM_CONF, or the node's configuration.
 */
#ifndef GATEWAY_SLURM_CONFIG_H
#define GATEWAY_SLURM_CONFIG_H

typedef struct slurm_config {
	int enabled; /* --slurm: the backend is offered */
	char output_dir[1100]; /* workers' output, <job id>.out: a directory the nodes share */
	char partition[64]; /* "": the cluster's default */
	int timeout_s; /* a Slurm command taking longer fails */
} slurm_config;

#endif
