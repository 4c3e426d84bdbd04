/*
 * The kubernetes backend on a real cluster (tests/run.sh starts one from
 * ../shared/k8s and exports K8S_SERVER, K8S_CA_FILE and K8S_TOKEN; without
 * them every test is skipped and ctest shows it). Pods use the host's
 * network; images come from the local Docker engine.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/harness.h"

static int have_cluster;
static char token_file[256];
static const char *args[20]; /* the cluster given by flags */
static const char *kubeconfig_args[16]; /* the same cluster through tests/run.sh's kubeconfig */

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	return cm_buf_append(ctx, p, size * n) == CM_OK ? size * n : 0;
}

/* A call to the cluster's API, as kubectl would make it (body: JSON to send,
 * stolen, or NULL); the answer as JSON. */
static json_t *kube_with(const char *method, const char *path, json_t *body, long *status_out)
{
	char url[512], auth[512];
	CURL *c = curl_easy_init();
	struct curl_slist *h;
	cm_buf b;
	long status = 0;

	cm_buf_init(&b);
	snprintf(url, sizeof(url), "%s%s", getenv("K8S_SERVER"), path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", getenv("K8S_TOKEN"));
	h = curl_slist_append(NULL, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_CAINFO, getenv("K8S_CA_FILE"));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(text);
	json_t *j = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
	cm_buf_fini(&b);
	if (status_out)
		*status_out = status;
	return j;
}

static json_t *kube(const char *method, const char *path, long *status_out)
{
	return kube_with(method, path, NULL, status_out);
}

/* The pods of a pool, as the API lists them. */
static json_t *pods_of(const char *pool)
{
	char path[256];

	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?labelSelector=strand.pool%%3D%s", pool);
	json_t *list = kube("GET", path, NULL);
	json_t *items = json_incref(json_object_get(list, "items"));
	json_decref(list);
	return items;
}

/* Waits (30 s at most) until the pool has no pod left. */
static void assert_no_pods_left(const char *pool)
{
	size_t n = 1;

	for (int i = 0; i < 300 && n; i++) {
		json_t *items = pods_of(pool);
		n = json_array_size(items);
		json_decref(items);
		if (n)
			usleep(100000);
	}
	assert_int_equal(n, 0);
}

static void need_cluster(void)
{
	if (!have_cluster)
		skip();
}

static int group_setup(void **state)
{
	(void)state;
	if (!getenv("K8S_SERVER") || !getenv("K8S_TOKEN") || !getenv("K8S_CA_FILE")) {
		print_message(
		        "no cluster (K8S_SERVER, K8S_TOKEN, K8S_CA_FILE unset; tests/run.sh starts one): skipping\n");
		return 0;
	}
	if (system(STRAND_SOURCE_DIR "/deploy/build-images.sh " STRAND_BUILD_DIR " test >/dev/null") != 0) {
		print_message("could not build the images\n");
		return -1;
	}
	snprintf(token_file, sizeof(token_file), "/tmp/strand-k8s-token-%d", (int)getpid());
	FILE *f = fopen(token_file, "w");
	assert_non_null(f);
	fputs(getenv("K8S_TOKEN"), f);
	fclose(f);
	const char *a[] = {"--k8s-server",
	                   getenv("K8S_SERVER"),
	                   "--k8s-token-file",
	                   token_file,
	                   "--k8s-ca",
	                   getenv("K8S_CA_FILE"),
	                   "--k8s-host-network",
	                   "--k8s-start-grace",
	                   "3",
	                   "--image",
	                   "strand-worker:test",
	                   "--allow-images",
	                   "strand-*", /* some fail on purpose */
	                   "--allow-volumes",
	                   "strand-test-*",
	                   "--k8s-pull-policy",
	                   "Never", /* no registry may be asked */
	                   NULL};
	memcpy(args, a, sizeof(a));
	const char *kc[] = {"--kubeconfig",
	                    getenv("KUBECONFIG") ? getenv("KUBECONFIG") : "",
	                    "--k8s-host-network",
	                    "--k8s-start-grace",
	                    "3",
	                    "--image",
	                    "strand-worker:test",
	                    "--k8s-pull-policy",
	                    "Never",
	                    NULL};
	memcpy(kubeconfig_args, kc, sizeof(kc));
	have_cluster = 1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (token_file[0])
		unlink(token_file);
	return 0;
}

/* Three pods map 1,000 tasks exactly; each pod is what was asked for, the
 * worker's secret is not in its spec, and DELETE leaves no pod. */
static void test_pool_of_pods_maps_exactly(void **state)
{
	gateway g;
	char path[128];

	(void)state;
	need_cluster();
	gateway_start(&g, args);
	char *pool = pool_create_spec(
	        &g, "{\"processes\":3,\"backend\":\"kubernetes\",\"resources\":{\"cpu\":0.1,\"memory_mb\":128}}");
	pool_wait_connected(&g, pool, 3);
	json_t *argv = json_array();
	for (int i = 0; i < 1000; i++)
		json_array_append_new(argv, json_integer(i));
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "echo", "args", argv));
	json_t *items = job_results(&g, job, "input", 1000);
	assert_each_index_once(items, 1000);
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(items, i), "value")), (json_int_t)i);
	json_decref(items);

	json_t *pods = pods_of(pool), *pod;
	size_t k;
	assert_int_equal(json_array_size(pods), 3);
	json_array_foreach (pods, k, pod) {
		json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
		json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
		json_t *limits = json_object_get(json_object_get(c, "resources"), "limits");
		/* strand-<pool>-<n>: the pool's first three workers. */
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "strand-%s-", pool);
		const char *name = json_string_value(json_object_get(meta, "name"));
		assert_true(strncmp(name, prefix, strlen(prefix)) == 0);
		assert_true(strlen(name) == strlen(prefix) + 1 && name[strlen(prefix)] >= '1' &&
		            name[strlen(prefix)] <= '3');
		assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"), "strand.pool")),
		                    pool);
		assert_string_equal(json_string_value(json_object_get(spec, "restartPolicy")), "Never");
		assert_true(json_is_true(json_object_get(spec, "hostNetwork")));
		assert_string_equal(json_string_value(json_object_get(limits, "cpu")), "100m");
		assert_string_equal(json_string_value(json_object_get(limits, "memory")), "128Mi");
		/* No capabilities, none to gain (setuid), not root. */
		json_t *sc = json_object_get(c, "securityContext");
		assert_true(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")));
		json_t *drop = json_object_get(json_object_get(sc, "capabilities"), "drop");
		assert_int_equal(json_array_size(drop), 1);
		assert_string_equal(json_string_value(json_array_get(drop, 0)), "ALL");
		assert_int_equal(
		        json_integer_value(json_object_get(json_object_get(spec, "securityContext"), "runAsUser")),
		        65534);
		assert_null(json_object_get(c, "env")); /* the secret comes from a Secret */
		assert_non_null(json_object_get(json_array_get(json_object_get(c, "envFrom"), 0), "secretRef"));
		char *text = json_dumps(pod, 0);
		assert_null(strstr(text, "STRAND_SECRET"));
		free(text);
	}
	json_decref(pods);

	/* Shrunk to one: two pods retire, end and go; grown to two again. */
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	response r = http(&g, "PATCH", path, "{\"processes\":1}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	size_t n = 0;
	for (int i = 0; i < 600 && n != 1; i++) {
		pods = pods_of(pool);
		n = json_array_size(pods);
		json_decref(pods);
		if (n != 1)
			usleep(100000);
	}
	assert_int_equal(n, 1);
	r = http(&g, "PATCH", path, "{\"processes\":2}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	pool_wait_connected(&g, pool, 2);
	json_t *p = pool_get(&g, pool);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")), 0);
	json_decref(p);

	/* A worker that dies: its pod's end and last lines are its last words. */
	char *crash =
	        job_submit(&g, pool, json_pack("{s:s, s:[i], s:i}", "function", "crash", "args", 0, "max_attempts", 1));
	json_decref(job_results(&g, crash, "input", 10));
	char words[600] = "", mine[128] = "";
	for (int i = 0; i < 300 && !words[0]; i++) {
		json_t *w;
		p = pool_get(&g, pool);
		json_array_foreach (json_object_get(p, "workers"), k, w)
			if (json_object_get(w, "last_words") &&
			    json_integer_value(json_object_get(w, "exit_code")) == 137) {
				snprintf(words, sizeof(words), "%s",
				         json_string_value(json_object_get(w, "last_words")));
				snprintf(mine, sizeof(mine), "worker %s of pool %s",
				         json_string_value(json_object_get(w, "id")), pool);
			}
		json_decref(p);
		if (!words[0])
			usleep(100000);
	}
	if (!strstr(words, mine))
		fail_msg("last words [%s] do not say [%s]", words, mine);
	free(crash);

	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_no_pods_left(pool);
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

/* A pod deleted mid-map: a lost worker, replaced, results exact. */
static void test_deleted_pod_is_replaced(void **state)
{
	gateway g;
	char path[256];

	(void)state;
	need_cluster();
	gateway_start(&g, args);
	char *pool = pool_create_spec(&g, "{\"processes\":2,\"backend\":\"kubernetes\"}");
	pool_wait_connected(&g, pool, 2);
	json_t *argv = json_array();
	for (int i = 0; i < 300; i++)
		json_array_append_new(argv, json_integer(20));
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", argv));
	assert_true(job_wait_done(&g, job, 20) < 300);
	json_t *pods = pods_of(pool);
	/* As `kubectl delete pod --grace-period=0`: the pod goes now. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s?gracePeriodSeconds=0",
	         json_string_value(json_object_get(json_object_get(json_array_get(pods, 0), "metadata"), "name")));
	json_decref(pods);
	long status = 0;
	json_decref(kube("DELETE", path, &status));
	assert_int_equal(status, 200);
	json_t *items = job_results(&g, job, "completion", 1000);
	assert_each_index_once(items, 300);
	json_decref(items);
	/* The deleted pod is a lost worker, and replaced. */
	json_int_t lost = 0, started = 0;
	for (int i = 0; i < 600 && (lost < 1 || started < 3); i++) {
		json_t *p = pool_get(&g, pool);
		lost = json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost"));
		started = json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_started"));
		json_decref(p);
		if (lost < 1 || started < 3)
			usleep(100000);
	}
	assert_int_equal(lost, 1);
	assert_int_equal(started, 3);
	free(job);
	gateway_cleanup(&g); /* a stopped gateway leaves no pod */
	assert_no_pods_left(pool);
	free(pool);
}

/* What can never start fails its pool with the cluster's words. */
static void expect_failed(const char *spec, const char *const *words)
{
	gateway g;

	gateway_start(&g, args);
	char *pool = pool_create_spec(&g, spec);
	json_t *p = NULL;
	const char *state = "";
	for (int i = 0; i < 300; i++) {
		json_decref(p);
		p = pool_get(&g, pool);
		state = json_string_value(json_object_get(p, "state"));
		if (strcmp(state, "failed") == 0)
			break;
		usleep(100000);
	}
	if (strcmp(state, "failed") != 0)
		gateway_log_print_tail(&g);
	assert_string_equal(state, "failed");
	const char *reason = json_string_value(json_object_get(p, "reason"));
	print_message("failed: %s\n", reason);
	for (size_t i = 0; words[i]; i++)
		if (!strstr(reason, words[i]))
			fail_msg("reason '%s' does not say '%s'", reason, words[i]);
	json_decref(p);
	gateway_cleanup(&g);
	assert_no_pods_left(pool);
	free(pool);
}

static void test_unschedulable_pool_fails(void **state)
{
	static const char *const words[] = {"kubernetes backend cannot start a worker", "Unschedulable",
	                                    "Insufficient cpu", NULL};
	(void)state;
	need_cluster();
	expect_failed("{\"processes\":1,\"backend\":\"kubernetes\",\"resources\":{\"cpu\":1000}}", words);
}

static void test_missing_image_fails(void **state)
{
	static const char *const words[] = {"kubernetes backend cannot start a worker", "ErrImageNeverPull",
	                                    "strand-no-such-image:1", NULL};
	(void)state;
	need_cluster();
	expect_failed("{\"processes\":1,\"backend\":\"kubernetes\",\"image\":\"strand-no-such-image:1\"}", words);
}

/* A gateway SIGKILLed mid-map adopts its pods again: the same pods finish. */
static void test_restarted_gateway_adopts_pods(void **state)
{
	gateway g;

	(void)state;
	need_cluster();
	gateway_start(&g, args);
	char *pool = pool_create_spec(&g, "{\"processes\":2,\"backend\":\"kubernetes\"}");
	pool_wait_connected(&g, pool, 2);
	json_t *before = pods_of(pool);
	json_t *argv = json_array();
	for (int i = 0; i < 300; i++)
		json_array_append_new(argv, json_integer(10));
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", argv));
	assert_true(job_wait_done(&g, job, 20) < 300);
	gateway_kill(&g);
	gateway_restart(&g);
	json_t *items = job_results(&g, job, "completion", 1000);
	assert_each_index_once(items, 300);
	json_decref(items);
	json_t *after = pods_of(pool);
	assert_int_equal(json_array_size(after), 2);
	for (size_t i = 0; i < 2; i++) {
		const char *name = json_string_value(
		        json_object_get(json_object_get(json_array_get(before, i), "metadata"), "name"));
		int found = 0;
		for (size_t k = 0; k < 2; k++)
			found |= strcmp(name,
			                json_string_value(json_object_get(
			                        json_object_get(json_array_get(after, k), "metadata"), "name"))) == 0;
		assert_true(found);
	}
	json_decref(before);
	json_decref(after);
	free(job);
	gateway_cleanup(&g);
	assert_no_pods_left(pool);
	free(pool);
}

/* A function run once as a pod: its exit code and its output. This
 * gateway finds the cluster through a kubeconfig (--kubeconfig), as kubectl
 * does. */
static void test_process_on_kubernetes(void **state)
{
	gateway g;
	char *id;

	(void)state;
	need_cluster();
	if (!getenv("KUBECONFIG"))
		skip();
	gateway_start(&g, kubeconfig_args);
	json_t *p = process_run(&g, "{\"function\":\"echo\",\"arg\":41,\"backend\":\"kubernetes\"}", &id);
	assert_string_equal(json_string_value(json_object_get(p, "backend")), "kubernetes");
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	char *out = process_logs(&g, id);
	assert_non_null(strstr(out, "41"));
	free(out);
	free(id);
	gateway_cleanup(&g);
}

/* Polls a pod (name) until it exists, at most 30 s. */
static json_t *pod_wait(const char *pool)
{
	for (int i = 0; i < 300; i++) {
		json_t *pods = pods_of(pool);
		if (json_array_size(pods) > 0)
			return pods;
		json_decref(pods);
		usleep(100000);
	}
	fail_msg("no pod for pool %s", pool);
	return NULL;
}

/* A PersistentVolumeClaim (bound to a hostPath volume this test makes), an
 * emptyDir and the claim again read-only: a task writes where it may, the
 * claim's file is on the host, and the pod spec says what was asked. A
 * failed run leaves the volume and claim behind: delete them by name. */
static void test_volumes_of_a_pod(void **state)
{
	char dir[] = "/tmp/strand-k8s-pv-XXXXXX", pv[64], claim[64], path[256], spec[512], file[300];
	gateway g;
	long status = 0;

	(void)state;
	need_cluster();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0); /* workers are not root */
	snprintf(pv, sizeof(pv), "strand-test-pv-%d", (int)getpid());
	snprintf(claim, sizeof(claim), "strand-test-claim-%d", (int)getpid());
	json_decref(kube_with("POST", "/api/v1/persistentvolumes",
	                      json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:[s], s:s, s:s, s:{s:s}, s:{s:s, s:s}}}",
	                                "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", pv, "spec",
	                                "capacity", "storage", "1Gi", "accessModes", "ReadWriteOnce",
	                                "persistentVolumeReclaimPolicy", "Retain", "storageClassName", "", "hostPath",
	                                "path", dir, "claimRef", "namespace", "default", "name", claim),
	                      &status));
	assert_int_equal(status, 201);
	json_decref(kube_with("POST", "/api/v1/namespaces/default/persistentvolumeclaims",
	                      json_pack("{s:s, s:s, s:{s:s}, s:{s:[s], s:s, s:s, s:{s:{s:s}}}}", "apiVersion", "v1",
	                                "kind", "PersistentVolumeClaim", "metadata", "name", claim, "spec",
	                                "accessModes", "ReadWriteOnce", "storageClassName", "", "volumeName", pv,
	                                "resources", "requests", "storage", "1Gi"),
	                      &status));
	assert_int_equal(status, 201);
	const char *phase = "";
	json_t *pvc = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/persistentvolumeclaims/%s", claim);
	for (int i = 0; i < 300 && strcmp(phase, "Bound") != 0; i++) {
		json_decref(pvc);
		pvc = kube("GET", path, NULL);
		phase = json_string_value(json_object_get(json_object_get(pvc, "status"), "phase")) ?: "";
		if (strcmp(phase, "Bound") != 0)
			usleep(100000);
	}
	assert_string_equal(phase, "Bound");
	json_decref(pvc);

	gateway_start(&g, args);
	snprintf(spec, sizeof(spec),
	         "{\"processes\":1,\"backend\":\"kubernetes\",\"volumes\":[\"%s:/data\",\"emptyDir:/scratch\","
	         "\"%s:/ro:ro\"]}",
	         claim, claim);
	char *pool = pool_create_spec(&g, spec);
	pool_wait_connected(&g, pool, 1);
	json_t *argv =
	        json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "path", "/data/out.txt", "text", "written-by-a-pod",
	                  "path", "/scratch/x", "text", "scratch", "path", "/ro/y", "text", "no");
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "fp.so:write_file", "args", argv));
	json_t *items = job_results(&g, job, "input", 3);
	assert_int_equal(json_array_size(items), 3);
	assert_true(json_is_true(json_object_get(json_array_get(items, 0), "value")));
	assert_true(json_is_true(json_object_get(json_array_get(items, 1), "value")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(items, 2), "error")),
	                    "fp.so:write_file: cannot write /ro/y: Read-only file system");
	json_decref(items);
	/* The claim's file is the host folder's. */
	snprintf(file, sizeof(file), "%s/out.txt", dir);
	FILE *f = fopen(file, "r");
	char text[64] = "";
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "written-by-a-pod");

	json_t *pods = pods_of(pool);
	json_t *podspec = json_object_get(json_array_get(pods, 0), "spec");
	json_t *vols = json_object_get(podspec, "volumes");
	json_t *mounts = json_object_get(json_array_get(json_object_get(podspec, "containers"), 0), "volumeMounts");
	assert_string_equal(json_string_value(json_object_get(
	                            json_object_get(json_array_get(vols, 0), "persistentVolumeClaim"), "claimName")),
	                    claim);
	assert_non_null(json_object_get(json_array_get(vols, 1), "emptyDir"));
	assert_int_equal(json_array_size(vols), 2); /* the claim once, mounted twice */
	assert_string_equal(json_string_value(json_object_get(json_array_get(mounts, 2), "name")),
	                    json_string_value(json_object_get(json_array_get(mounts, 0), "name")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(mounts, 0), "mountPath")), "/data");
	assert_string_equal(json_string_value(json_object_get(json_array_get(mounts, 1), "mountPath")), "/scratch");
	assert_string_equal(json_string_value(json_object_get(json_array_get(mounts, 2), "mountPath")), "/ro");
	assert_true(json_is_true(json_object_get(json_array_get(mounts, 2), "readOnly")));
	assert_false(json_is_true(json_object_get(json_array_get(mounts, 0), "readOnly")));
	json_decref(pods);
	free(job);
	gateway_cleanup(&g);
	assert_no_pods_left(pool);
	free(pool);
	json_decref(kube("DELETE", path, NULL));
	snprintf(path, sizeof(path), "/api/v1/persistentvolumes/%s", pv);
	json_decref(kube("DELETE", path, NULL));
	unlink(file);
	rmdir(dir);
}

/* hostNetwork: the gateway's default, a pool's own choice, and refused to
 * a pool where the operator did not allow the node's network. */
static void test_host_network_choice(void **state)
{
	gateway g, strict;

	(void)state;
	need_cluster();
	gateway_start(&g, args);
	char *pool = pool_create_spec(&g, "{\"processes\":1,\"backend\":\"kubernetes\",\"host_network\":false}");
	json_t *pods = pod_wait(pool);
	assert_false(json_is_true(json_object_get(json_object_get(json_array_get(pods, 0), "spec"), "hostNetwork")));
	json_decref(pods);
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_no_pods_left(pool);
	free(pool);
	gateway_cleanup(&g);

	const char *no_host_network[20];
	size_t n = 0;
	for (size_t i = 0; args[i]; i++)
		if (strcmp(args[i], "--k8s-host-network") != 0)
			no_host_network[n++] = args[i];
	no_host_network[n] = NULL;
	gateway_start(&strict, no_host_network);
	r = http(&strict, "POST", "/v1/pools", "{\"processes\":1,\"backend\":\"kubernetes\",\"host_network\":true}",
	         NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "--k8s-host-network"));
	response_free(&r);
	gateway_cleanup(&strict);
}

/* A manager and a ring, each on pods: the manager keeps its state between
 * calls, each ring member runs as its own pod and ends. */
static void test_manager_and_ring_on_kubernetes(void **state)
{
	gateway g;
	char path[160], get[256];

	(void)state;
	need_cluster();
	gateway_start(&g, args);
	response r = http(&g, "POST", "/v1/managers", "{\"type\":\"counter\",\"backend\":\"kubernetes\"}", NULL);
	assert_int_equal(r.status, 201);
	char *m = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/managers/%s/calls", m);
	for (int i = 0; i < 2; i++) {
		r = http(&g, "POST", path, "{\"method\":\"add\",\"args\":[5]}", NULL);
		assert_int_equal(r.status, 202);
		snprintf(get, sizeof(get), "%s/%s?wait=60", path, json_string_value(json_object_get(r.json, "id")));
		response_free(&r);
		r = http(&g, "GET", get, NULL, NULL);
		assert_int_equal(json_integer_value(json_object_get(r.json, "result")), 5 * (i + 1));
		response_free(&r);
	}
	json_t *pods = pods_of(m);
	assert_int_equal(json_array_size(pods), 1);
	json_decref(pods);
	snprintf(path, sizeof(path), "/v1/managers/%s", m);
	r = http(&g, "DELETE", path, NULL, NULL);
	response_free(&r);
	assert_no_pods_left(m);
	free(m);

	r = http(&g, "POST", "/v1/rings", "{\"size\":2,\"backend\":\"kubernetes\",\"function\":\"echo\",\"arg\":7}",
	         NULL);
	assert_int_equal(r.status, 201);
	snprintf(path, sizeof(path), "/v1/rings/%s?wait=90", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	r = http(&g, "GET", path, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "done");
	json_t *members = json_object_get(r.json, "members"), *member;
	size_t i;
	assert_int_equal(json_array_size(members), 2);
	json_array_foreach (members, i, member) {
		assert_string_equal(json_string_value(json_object_get(member, "backend")), "kubernetes");
		assert_int_equal(json_integer_value(json_object_get(member, "exit_code")), 0);
		char *out = process_logs(&g, json_string_value(json_object_get(member, "id")));
		assert_non_null(strstr(out, "7"));
		free(out);
	}
	response_free(&r);
	gateway_cleanup(&g);
}

static void expect_start_refused(const char *flags, const char *words, const char *secret)
{
	char *out = gateway_output(flags);

	print_message("%s", out);
	if (!strstr(out, words) || !strstr(out, "exit=1"))
		fail_msg("'%s' does not say '%s' and exit 1", out, words);
	if (secret && strstr(out, secret))
		fail_msg("the token was logged");
	free(out);
}

/* A cluster the gateway cannot use stops it at start, naming the cause:
 * nothing answers, the token is refused, the token's role may not list
 * pods. No token is ever printed. */
static void test_bad_cluster_configuration(void **state)
{
	char flags[1024], wrong[300], limited[300];
	FILE *f;

	(void)state;
	need_cluster();
	snprintf(wrong, sizeof(wrong), "%s.wrong", token_file);
	assert_non_null(f = fopen(wrong, "w"));
	fputs("not-a-token-the-cluster-knows", f);
	fclose(f);
	snprintf(flags, sizeof(flags), "--k8s-server https://127.0.0.1:1 --k8s-token-file %s --k8s-ca %s", token_file,
	         getenv("K8S_CA_FILE"));
	expect_start_refused(flags, "cannot reach the Kubernetes API server at https://127.0.0.1:1", NULL);
	snprintf(flags, sizeof(flags), "--k8s-server %s --k8s-token-file %s --k8s-ca %s", getenv("K8S_SERVER"), wrong,
	         getenv("K8S_CA_FILE"));
	expect_start_refused(flags, "refused the token (401)", "not-a-token-the-cluster-knows");
	unlink(wrong);

	/* A service account with no role at all: its token is good, and
	 * forbidden to list pods. */
	snprintf(limited, sizeof(limited), "%s.limited", token_file);
	snprintf(flags, sizeof(flags),
	         "k=%s/deploy/k8s-cluster.sh; sa=strand-test-norole-%d; $k kubectl -n default create sa $sa >/dev/null "
	         "&& "
	         "for i in $(seq 100); do s=$($k kubectl -n default get sa $sa -o jsonpath='{.secrets[0].name}'); "
	         "[ -n \"$s\" ] && break; sleep 0.1; done && "
	         "$k kubectl -n default get secret $s -o jsonpath='{.data.token}' | base64 -d >%s",
	         STRAND_SOURCE_DIR, (int)getpid(), limited);
	assert_int_equal(system(flags), 0);
	snprintf(flags, sizeof(flags), "--k8s-server %s --k8s-token-file %s --k8s-ca %s", getenv("K8S_SERVER"), limited,
	         getenv("K8S_CA_FILE"));
	expect_start_refused(flags, "(the token's role may not list pods in namespace default)", NULL);
	unlink(limited);
	snprintf(flags, sizeof(flags),
	         "%s/deploy/k8s-cluster.sh kubectl -n default delete sa strand-test-norole-%d >/dev/null",
	         STRAND_SOURCE_DIR, (int)getpid());
	assert_int_equal(system(flags), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pool_of_pods_maps_exactly),
	        cmocka_unit_test(test_deleted_pod_is_replaced),
	        cmocka_unit_test(test_unschedulable_pool_fails),
	        cmocka_unit_test(test_missing_image_fails),
	        cmocka_unit_test(test_restarted_gateway_adopts_pods),
	        cmocka_unit_test(test_process_on_kubernetes),
	        cmocka_unit_test(test_volumes_of_a_pod),
	        cmocka_unit_test(test_host_network_choice),
	        cmocka_unit_test(test_manager_and_ring_on_kubernetes),
	        cmocka_unit_test(test_bad_cluster_configuration),
	};
	int failed = cmocka_run_group_tests_name("kubernetes", tests, group_setup, group_teardown);
	return failed ? failed : have_cluster ? 0 : 77;
}
