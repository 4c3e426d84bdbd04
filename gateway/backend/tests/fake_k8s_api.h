/*
 * A fake Kubernetes API server, for the kubernetes backend's watch: the real
 * one cannot be made to break a watch stream or answer 410 Gone on demand.
 * It serves, over HTTPS on 127.0.0.1, a pod list the test sets and watch
 * streams the test writes event by event, creates secrets and pods (whose
 * answers the test may hold back), and records what was asked.
 */
#ifndef GATEWAY_BACKEND_TESTS_FAKE_K8S_API_H
#define GATEWAY_BACKEND_TESTS_FAKE_K8S_API_H

typedef struct fake_k8s_api fake_k8s_api;

/* Listens on 127.0.0.1 (a free port) with this certificate and key (PEM
 * files); NULL if it cannot. */
fake_k8s_api *fake_k8s_api_start(const char *cert_file, const char *key_file);
/* https://127.0.0.1:PORT */
const char *fake_k8s_api_url(fake_k8s_api *f);
/* What GET .../pods?labelSelector=strand answers from now on: the items
 * (a JSON array's text) at a resourceVersion. */
void fake_k8s_api_set_pods(fake_k8s_api *f, const char *items_json, const char *resource_version);
/* Lists served so far (the start check's included). */
int fake_k8s_api_lists(fake_k8s_api *f);
/* Watches opened so far, and the resourceVersion the n-th asked from. */
int fake_k8s_api_watches(fake_k8s_api *f);
const char *fake_k8s_api_watch_from(fake_k8s_api *f, int n);
/* The open watch: sends one event line; ends the stream cleanly (as at its
 * timeoutSeconds); breaks it (the connection dies mid-stream). */
void fake_k8s_api_send(fake_k8s_api *f, const char *event_json);
void fake_k8s_api_end(fake_k8s_api *f);
void fake_k8s_api_break(fake_k8s_api *f);
/* A pod's creation (POST .../pods) answers 201 with this object (JSON);
 * while held, the answer waits for fake_k8s_api_release. Secrets are
 * created at once. */
void fake_k8s_api_set_created(fake_k8s_api *f, const char *pod_json);
void fake_k8s_api_hold(fake_k8s_api *f);
void fake_k8s_api_release(fake_k8s_api *f);
/* Pods asked to be created so far (those held included). */
int fake_k8s_api_creations(fake_k8s_api *f);
/* Whether every event sent has been written to the watch. */
int fake_k8s_api_sent_all(fake_k8s_api *f);
void fake_k8s_api_stop(fake_k8s_api *f);

#endif
