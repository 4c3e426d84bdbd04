/*
 * --kubeconfig: a kubeconfig's current context becomes the kubernetes
 * backend's server, CA and credentials; what it cannot honour safely
 * (a plugin to run, no certificate check) is refused with the file named.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/config.h"
#include "gateway/k8s_config.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/strand-kubeconfig-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Loads dir/name into a fresh config; returns the result, detail filled. */
static int load(const char *name, k8s_config *k, char *detail, size_t len)
{
	char path[128];

	memset(k, 0, sizeof(*k));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return kubeconfig_load(path, k, detail, len);
}

/* Flow style, as hand-written or by ../shared/k8s/up.sh: a token and a CA
 * file relative to the kubeconfig's folder; the context picked is the
 * current one, not the first. */
static void test_flow_style_token_and_ca_file(void **state)
{
	k8s_config *k = calloc(1, sizeof(*k));
	char detail[256], ca[128];

	(void)state;
	write_file("flow", "apiVersion: v1\nkind: Config\n"
	                   "clusters:\n"
	                   "- name: other\n  cluster: {server: \"https://10.0.0.1:6443\"}\n"
	                   "- name: local\n  cluster: {server: \"https://127.0.0.1:6443\", "
	                   "certificate-authority: \"pki/ca.crt\"}\n"
	                   "users:\n- name: admin\n  user: {token: \"abc.def\"}\n"
	                   "contexts:\n- name: first\n  context: {cluster: other, user: admin}\n"
	                   "- name: local\n  context: {cluster: local, user: admin}\n"
	                   "current-context: local\n");
	assert_int_equal(load("flow", k, detail, sizeof(detail)), CM_OK);
	assert_string_equal(k->server, "https://127.0.0.1:6443");
	assert_string_equal(k->token, "abc.def");
	snprintf(ca, sizeof(ca), "%s/pki/ca.crt", dir);
	assert_string_equal(k->ca_file, ca);
	assert_string_equal(k->ca_pem, "");
	assert_string_equal(k->ns, "");
	free(k);
}

/* Block style, as kubectl writes it: base64 data fields for the CA and a
 * client certificate, the context's namespace. */
static void test_block_style_data_and_namespace(void **state)
{
	k8s_config *k = calloc(1, sizeof(*k));
	char detail[256];

	(void)state;
	/* base64 of "CA-PEM\n", "CERT\n" and "KEY\n" */
	write_file("block", "apiVersion: v1\n"
	                    "kind: Config\n"
	                    "clusters:\n"
	                    "- cluster:\n"
	                    "    certificate-authority-data: Q0EtUEVNCg==\n"
	                    "    server: https://k8s.example:6443\n"
	                    "  name: prod\n"
	                    "contexts:\n"
	                    "- context:\n"
	                    "    cluster: prod\n"
	                    "    namespace: team-a\n"
	                    "    user: me\n"
	                    "  name: prod\n"
	                    "current-context: prod\n"
	                    "users:\n"
	                    "- name: me\n"
	                    "  user:\n"
	                    "    client-certificate-data: Q0VSVAo=\n"
	                    "    client-key-data: S0VZCg==\n");
	assert_int_equal(load("block", k, detail, sizeof(detail)), CM_OK);
	assert_string_equal(k->server, "https://k8s.example:6443");
	assert_string_equal(k->ca_pem, "CA-PEM\n");
	assert_string_equal(k->ca_file, "");
	assert_string_equal(k->cert_pem, "CERT\n");
	assert_string_equal(k->key_pem, "KEY\n");
	assert_string_equal(k->token, "");
	assert_string_equal(k->ns, "team-a");
	free(k);
}

static void expect_refused(const char *name, const char *text, const char *words)
{
	k8s_config *k = calloc(1, sizeof(*k));
	char detail[512];

	write_file(name, text);
	assert_int_equal(load(name, k, detail, sizeof(detail)), CM_EINVAL);
	if (!strstr(detail, words) || !strstr(detail, name))
		fail_msg("%s: '%s' does not say '%s' and name the file", name, detail, words);
	free(k);
}

static void test_refusals(void **state)
{
	static const char head[] = "clusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"}\n"
	                           "contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text), "%susers:\n- name: u\n  user:\n    exec: {command: aws}\ncurrent-context: x\n",
	         head);
	expect_refused("exec", text, "exec or auth-provider plugin");
	snprintf(text, sizeof(text), "%susers:\n- name: u\n  user: {token: t}\ncurrent-context: y\n", head);
	expect_refused("nocontext", text, "names no context");
	snprintf(text, sizeof(text), "%susers:\n- name: u\n  user: {token: t}\n", head);
	expect_refused("nocurrent", text, "no current-context");
	snprintf(text, sizeof(text), "%susers:\n- name: u\n  user: {username: admin}\ncurrent-context: x\n", head);
	expect_refused("nocredentials", text, "no token, token file or client certificate");
	snprintf(text, sizeof(text),
	         "%susers:\n- name: u\n  user: {client-certificate-data: Q0VSVAo=}\n"
	         "current-context: x\n",
	         head);
	expect_refused("halfcert", text, "certificate and key go together");
	expect_refused("insecure",
	               "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: true}\n"
	               "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	               "users:\n- name: u\n  user: {token: t}\ncurrent-context: x\n",
	               "insecure-skip-tls-verify is refused");
	expect_refused(
	        "badb64",
	        "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", certificate-authority-data: \"!!\"}\n"
	        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	        "users:\n- name: u\n  user: {token: t}\ncurrent-context: x\n",
	        "certificate-authority-data is not base64");
	expect_refused("notyaml", "clusters: [\n", "not YAML");
	expect_refused("missingca",
	               "clusters:\n- name: c\n  cluster: {server: \"https://h:1\"}\n"
	               "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	               "users:\n- name: u\n  user: {client-certificate: nope.crt, client-key: nope.key}\n"
	               "current-context: x\n",
	               "cannot read its client-certificate");
}

/* The gateway's flags: a kubeconfig fills the kubernetes settings, a flag
 * given beside it wins, and a bad file stops the start with its reason. */
static void test_flags_over_kubeconfig(void **state)
{
	gw_config *cfg = calloc(1, sizeof(*cfg));
	char detail[512], path[128];

	(void)state;
	write_file("gw", "clusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"}\n"
	                 "contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: from-file}\n"
	                 "users:\n- name: u\n  user: {tokenFile: tok}\ncurrent-context: x\n");
	snprintf(path, sizeof(path), "%s/gw", dir);
	char *argv1[] = {"strand-gateway", "--kubeconfig", path, NULL};
	assert_int_equal(gw_config_load(cfg, 3, argv1, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg->k8s.server, "https://127.0.0.1:6443");
	assert_string_equal(cfg->k8s.ns, "from-file");
	char tok[128];
	snprintf(tok, sizeof(tok), "%s/tok", dir);
	assert_string_equal(cfg->k8s.token_file, tok);
	char *argv2[] = {"strand-gateway", "--kubeconfig",     path,     "--k8s-namespace",
	                 "mine",           "--k8s-token-file", "/run/t", NULL};
	assert_int_equal(gw_config_load(cfg, 7, argv2, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg->k8s.ns, "mine");
	assert_string_equal(cfg->k8s.token_file, "/run/t");
	char *argv3[] = {"strand-gateway", "--kubeconfig", "/nonexistent/kubeconfig", NULL};
	assert_int_equal(gw_config_load(cfg, 3, argv3, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "kubeconfig /nonexistent/kubeconfig: cannot read it"));
	free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_flow_style_token_and_ca_file),
	        cmocka_unit_test(test_block_style_data_and_namespace),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_flags_over_kubeconfig),
	};
	return cmocka_run_group_tests_name("kubeconfig", tests, setup, teardown);
}
