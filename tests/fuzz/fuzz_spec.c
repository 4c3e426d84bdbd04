/* libFuzzer: every parser of what a client sends: the request bodies of each
 * route (spec.h), and the header checks (auth.h), host-path rules (policy.h)
 * and result checks the gateway applies. The first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gateway/auth.h"
#include "gateway/policy.h"
#include "gateway/result_check.h"
#include "gateway/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char detail[256];
	const char *body;
	char *text;
	size_t len;

	if (size == 0)
		return 0;
	len = size - 1;
	/* A NUL-terminated copy for the string checks; the body parsers get the
	 * bytes with their length, NULs and all. */
	if (!(text = malloc(len + 1)))
		return 0;
	memcpy(text, data + 1, len);
	text[len] = '\0';
	body = text;
	switch (data[0] % 12) {
	case 0: {
		pool_spec p;
		pool_patch patch;
		spec_pool_parse(body, len, "local", "img", &p, detail, sizeof(detail));
		spec_pool_patch_parse(body, len, &patch, detail, sizeof(detail));
		break;
	}
	case 1:
	case 2: {
		map_spec m;
		if (spec_map_parse(body, len, data[0] % 12 == 2, &m, detail, sizeof(detail)) == CM_OK)
			spec_map_fini(&m);
		break;
	}
	case 3: {
		process_spec p;
		if (spec_process_parse(body, len, "local", "img", &p, detail, sizeof(detail)) == CM_OK)
			spec_process_fini(&p);
		break;
	}
	case 4: {
		process_spec p;
		int n;
		if (spec_ring_parse(body, len, "local", "img", &p, &n, detail, sizeof(detail)) == CM_OK)
			spec_process_fini(&p);
		break;
	}
	case 5: {
		pool_spec p;
		spec_manager_parse(body, len, "local", "img", &p, detail, sizeof(detail));
		break;
	}
	case 6: {
		items_spec it;
		if (spec_items_parse(body, len, &it, detail, sizeof(detail)) == CM_OK)
			spec_items_fini(&it);
		break;
	}
	case 7: {
		int duplex;
		pool_spec p;
		char *arg = NULL, lease[SPEC_LEASE_ID_MAX];
		const char *kind;
		spec_pipe_parse(body, len, &duplex, lease, detail, sizeof(detail));
		spec_queue_parse(body, len, &kind, lease, detail, sizeof(detail));
		if (spec_call_parse(body, len, &arg, detail, sizeof(detail)) == CM_OK)
			free(arg);
		spec_pool_load(text, "img", &p, detail, sizeof(detail));
		break;
	}
	case 8:
		auth_host_allowed(text, "gw.example,strand.internal");
		auth_origin_same(text, "127.0.0.1:8080");
		auth_content_type_is(text, "application/json");
		auth_bearer(text);
		auth_token_equal("0123456789abcdef0123", text);
		break;
	case 9:
		policy_path_allowed(text, "/srv/data:/var/tmp");
		policy_path_allowed("/srv/data/x", text);
		break;
	case 10:
		result_check(1, body, len, detail, sizeof(detail));
		result_check(0, body, len, detail, sizeof(detail));
		break;
	case 11:
		cm_utf8_valid(body, len);
		cm_utf8_sanitize(text);
		cm_function_check(text, detail, sizeof(detail));
		break;
	}
	free(text);
	return 0;
}
