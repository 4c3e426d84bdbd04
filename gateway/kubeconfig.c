/*
 * A kubeconfig file's current context, read with libyaml's document API
 * (kubectl writes block style; hand-written files often use flow style, and
 * the document API reads both).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/common.h"
#include "gateway/k8s_config.h"

#define KUBECONFIG_MAX (1u << 20)

typedef struct kc_doc {
	yaml_document_t doc;
	const char *path;
	char *detail;
	size_t detail_len;
} kc_doc;

static yaml_node_t *node(kc_doc *d, int id)
{
	return id ? yaml_document_get_node(&d->doc, id) : NULL;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *get(kc_doc *d, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(node(d, p->key));
		if (k && strcmp(k, key) == 0)
			return node(d, p->value);
	}
	return NULL;
}

/* The entry of a named list (clusters, users, contexts) called name: its
 * inner object (cluster, user, context). */
static yaml_node_t *named(kc_doc *d, yaml_node_t *root, const char *list, const char *inner, const char *name)
{
	yaml_node_t *seq = get(d, root, list);

	if (!seq || seq->type != YAML_SEQUENCE_NODE || !name)
		return NULL;
	for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
		yaml_node_t *entry = node(d, *i);
		const char *n = scalar(get(d, entry, "name"));
		if (n && strcmp(n, name) == 0)
			return get(d, entry, inner);
	}
	return NULL;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 (whitespace skipped, '=' ends it) into out, NUL-terminated. */
static int b64_decode(const char *in, char *out, size_t out_len)
{
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;

	for (; *in && *in != '='; in++) {
		if (*in == '\n' || *in == '\r' || *in == ' ')
			continue;
		int v = b64_value(*in);
		if (v < 0)
			return CM_EINVAL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= out_len)
				return CM_ETOOBIG;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	return CM_OK;
}

/* A path in a kubeconfig is relative to the file's directory. */
static void resolve(kc_doc *d, const char *p, char *out, size_t out_len)
{
	char dir[1024];

	if (p[0] == '/') {
		snprintf(out, out_len, "%s", p);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", d->path);
	snprintf(out, out_len, "%s/%s", dirname(dir), p);
}

static int read_pem(kc_doc *d, const char *p, char *out, size_t out_len, const char *what)
{
	char full[1024];
	cm_buf b;
	int err;

	resolve(d, p, full, sizeof(full));
	cm_buf_init(&b);
	err = cm_read_tail(full, out_len, &b);
	if (err != CM_OK || b.len == 0 || b.len >= out_len) {
		snprintf(d->detail, d->detail_len, "kubeconfig %s: cannot read its %s %s", d->path, what, full);
		cm_buf_fini(&b);
		return CM_EINVAL;
	}
	memcpy(out, b.data, b.len);
	out[b.len] = '\0';
	explicit_bzero(b.data, b.len);
	cm_buf_fini(&b);
	return CM_OK;
}

/* field-data (base64) or field (a file) into out. */
static int pem_field(kc_doc *d, yaml_node_t *obj, const char *field, char *out, size_t out_len)
{
	char key[64];
	const char *data, *file;

	snprintf(key, sizeof(key), "%s-data", field);
	if ((data = scalar(get(d, obj, key)))) {
		if (b64_decode(data, out, out_len) != CM_OK) {
			snprintf(d->detail, d->detail_len, "kubeconfig %s: %s is not base64 of at most %zu bytes",
			         d->path, key, out_len - 1);
			return CM_EINVAL;
		}
		return CM_OK;
	}
	if ((file = scalar(get(d, obj, field))))
		return read_pem(d, file, out, out_len, field);
	return CM_OK;
}

static int fail(kc_doc *d, const char *why)
{
	snprintf(d->detail, d->detail_len, "kubeconfig %s: %s", d->path, why);
	return CM_EINVAL;
}

static int read_context(kc_doc *d, k8s_config *out)
{
	yaml_node_t *root = yaml_document_get_root_node(&d->doc);
	const char *current = scalar(get(d, root, "current-context"));
	yaml_node_t *ctx = named(d, root, "contexts", "context", current);
	yaml_node_t *cluster, *user;
	const char *s;
	int err;

	if (!current || !current[0])
		return fail(d, "no current-context");
	if (!ctx)
		return fail(d, "its current-context names no context");
	if (!(cluster = named(d, root, "clusters", "cluster", scalar(get(d, ctx, "cluster")))))
		return fail(d, "the current context's cluster is not in it");
	user = named(d, root, "users", "user", scalar(get(d, ctx, "user")));
	if (!(s = scalar(get(d, cluster, "server"))) || strlen(s) >= sizeof(out->server))
		return fail(d, "the cluster has no server");
	snprintf(out->server, sizeof(out->server), "%s", s);
	if ((s = scalar(get(d, cluster, "insecure-skip-tls-verify"))) && strcmp(s, "true") == 0)
		return fail(d, "insecure-skip-tls-verify is refused: strand checks the API server's certificate");
	if ((s = scalar(get(d, cluster, "certificate-authority"))) && !get(d, cluster, "certificate-authority-data"))
		resolve(d, s, out->ca_file, sizeof(out->ca_file));
	else if ((err = pem_field(d, cluster, "certificate-authority", out->ca_pem, sizeof(out->ca_pem))) != CM_OK)
		return err;
	if ((s = scalar(get(d, ctx, "namespace"))) && s[0])
		snprintf(out->ns, sizeof(out->ns), "%s", s);
	if (get(d, user, "exec") || get(d, user, "auth-provider"))
		return fail(d, "its user signs in with an exec or auth-provider plugin, which strand does not run; "
		               "give it a token or a client certificate");
	if ((s = scalar(get(d, user, "token")))) {
		if (strlen(s) >= sizeof(out->token))
			return fail(d, "the user's token is too long");
		snprintf(out->token, sizeof(out->token), "%s", s);
	} else if ((s = scalar(get(d, user, "tokenFile")))) {
		resolve(d, s, out->token_file, sizeof(out->token_file));
	}
	if ((err = pem_field(d, user, "client-certificate", out->cert_pem, sizeof(out->cert_pem))) != CM_OK ||
	    (err = pem_field(d, user, "client-key", out->key_pem, sizeof(out->key_pem))) != CM_OK)
		return err;
	if (!out->cert_pem[0] != !out->key_pem[0])
		return fail(d, "the user's client certificate and key go together");
	if (!out->token[0] && !out->token_file[0] && !out->cert_pem[0])
		return fail(d, "the current context's user has no token, token file or client certificate");
	return CM_OK;
}

int kubeconfig_load(const char *path, k8s_config *out, char *detail, size_t detail_len)
{
	yaml_parser_t parser;
	kc_doc d = {.path = path, .detail = detail, .detail_len = detail_len};
	cm_buf text;
	int err;

	cm_buf_init(&text);
	if (cm_read_tail(path, KUBECONFIG_MAX + 1, &text) != CM_OK || text.len == 0 || text.len > KUBECONFIG_MAX) {
		snprintf(detail, detail_len, "kubeconfig %s: cannot read it (at most 1 MiB)", path);
		cm_buf_fini(&text);
		return CM_EINVAL;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text.data, text.len);
	if (!yaml_parser_load(&parser, &d.doc)) {
		snprintf(detail, detail_len, "kubeconfig %s: not YAML (line %zu: %s)", path,
		         parser.problem_mark.line + 1, parser.problem ? parser.problem : "?");
		yaml_parser_delete(&parser);
		explicit_bzero(text.data, text.len);
		cm_buf_fini(&text);
		return CM_EINVAL;
	}
	err = yaml_document_get_root_node(&d.doc) ? read_context(&d, out) : fail(&d, "it is empty");
	yaml_document_delete(&d.doc);
	yaml_parser_delete(&parser);
	explicit_bzero(text.data, text.len);
	cm_buf_fini(&text);
	return err;
}
