/*
 * Where the kubernetes backend finds its cluster and how it signs in: from
 * flags, a kubeconfig file (--kubeconfig) or, inside a pod, its service
 * account. Secrets (a token, a client key) are held in memory only as long
 * as the backend needs them and never logged.
 */
#ifndef GATEWAY_K8S_CONFIG_H
#define GATEWAY_K8S_CONFIG_H

#include <stddef.h>

#define K8S_PEM_MAX 32768 /* a CA bundle, a client certificate or key */

typedef struct k8s_config {
	char server[256]; /* https://HOST:PORT; "": no kubernetes backend */
	char token_file[1024]; /* the bearer token, read at start ... */
	char token[4096]; /* ... or given inline (a kubeconfig's user.token) */
	char ca_file[1024]; /* the CA the server's certificate is checked by ... */
	char ca_pem[K8S_PEM_MAX]; /* ... or its PEM (certificate-authority-data); both "": the system's */
	char cert_pem[K8S_PEM_MAX]; /* a client certificate (a kubeconfig's user), PEM; "": none */
	char key_pem[K8S_PEM_MAX]; /* ... and its key */
	char ns[64]; /* the namespace pods and secrets go in */
	int host_network; /* pods on the node's network by default (a cluster without a pod network) */
	char pull_policy[16]; /* imagePullPolicy: IfNotPresent, Never (no registry), Always */
	int start_grace_s; /* stuck this long (unschedulable, no image): never started */
} k8s_config;

/* Reads the current context of a kubeconfig file (YAML, as kubectl writes
 * it): its cluster's server and CA, its user's token, token file or client
 * certificate, its namespace. Fills only what the file gives; an
 * exec/auth-provider user or insecure-skip-tls-verify is refused, since
 * strand would have to run a program or skip the server's check.
 * Returns CM_OK, or CM_EINVAL with the cause (naming the file) in detail. */
int kubeconfig_load(const char *path, k8s_config *out, char *detail, size_t detail_len);

#endif
