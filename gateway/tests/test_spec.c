/* Request parsing (gateway/spec.c), function names and configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/config.h"
#include "gateway/spec.h"

static int pool(const char *body, pool_spec *out, char *detail)
{
	return spec_pool_parse(body, strlen(body), "local", "img:1", out, detail, 256);
}

static void test_pool_defaults_and_fields(void **state)
{
	pool_spec s;
	char detail[256] = "";

	(void)state;
	assert_int_equal(pool("{}", &s, detail), CM_OK);
	assert_true(s.processes >= 1);
	assert_string_equal(s.backend, "local");
	assert_int_equal(s.max_attempts, 3);
	assert_int_equal(spec_pool_parse("", 0, "local", "img:1", &s, detail, sizeof(detail)), CM_OK);
	assert_int_equal(pool("{\"processes\":4,\"max_attempts\":1,\"resources\":{\"cpu\":0.5,\"memory_mb\":256,"
	                      "\"gpu\":1}}",
	                      &s, detail),
	                 CM_OK);
	assert_int_equal(s.processes, 4);
	assert_int_equal(s.max_attempts, 1);
	assert_true(s.cpu == 0.5);
	assert_int_equal(s.memory_mb, 256);
	assert_int_equal(s.gpu, 1);
	char *json = spec_pool_json(&s);
	pool_spec back;
	assert_int_equal(pool(json, &back, detail), CM_OK);
	assert_int_equal(back.processes, 4);
	assert_int_equal(back.memory_mb, 256);
	assert_int_equal(back.host_network, -1); /* unset: the gateway's default */
	free(json);
	/* A kubernetes pool's own network choice and its volumes survive the
	 * stored form. */
	assert_int_equal(pool("{\"backend\":\"kubernetes\",\"host_network\":false,"
	                      "\"volumes\":[\"emptyDir:/scratch\",\"data:/data:ro\"]}",
	                      &s, detail),
	                 CM_OK);
	json = spec_pool_json(&s);
	assert_int_equal(pool(json, &back, detail), CM_OK);
	assert_int_equal(back.host_network, 0);
	assert_int_equal(back.nvolumes, 2);
	assert_string_equal(back.volumes[0], "emptyDir:/scratch");
	assert_string_equal(back.volumes[1], "data:/data:ro");
	free(json);
	/* Its code package, kept in the stored form. */
	assert_int_equal(
	        pool("{\"code\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}", &s, detail),
	        CM_OK);
	json = spec_pool_json(&s);
	assert_int_equal(pool(json, &back, detail), CM_OK);
	assert_string_equal(back.code, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	free(json);
	/* A program is run as it is: no package goes with a command. */
	process_spec ps;
	const char *cmd = "{\"command\":[\"true\"],\"code\":"
	                  "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}";
	assert_int_equal(spec_process_parse(cmd, strlen(cmd), "local", "img:1", &ps, detail, sizeof(detail)),
	                 CM_EINVAL);
	assert_string_equal(
	        detail, "field 'code' goes with a 'function' (a program is run as it is, in the image or on the host)");
}

static void test_pool_refusals(void **state)
{
	static const struct {
		const char *body;
		int err;
		const char *part;
	} cases[] = {
	        {"{", CM_EINVAL, "not valid JSON"},
	        {"3", CM_EINVAL, "not valid JSON"},
	        {"[]", CM_EINVAL, "JSON object"},
	        {"{\"processes\":0}", CM_EINVAL, "'processes'"},
	        {"{\"processes\":2000}", CM_EINVAL, "'processes'"},
	        {"{\"processes\":2,\"processes\":3}", CM_EINVAL, "duplicate"},
	        {"{\"backend\":3}", CM_EINVAL, "'backend'"},
	        {"{\"backend\":\"mesos\"}", CM_EUNSUPPORTED, "unknown backend"},
	        {"{\"resources\":[]}", CM_EINVAL, "'resources'"},
	        {"{\"resources\":{\"cpu\":0}}", CM_EINVAL, "'resources.cpu'"},
	        {"{\"resources\":{\"gpu\":-1}}", CM_EINVAL, "'resources.gpu'"},
	        {"{\"resources\":{\"disk\":1}}", CM_EINVAL, "unknown field 'resources.disk'"},
	        {"{\"imag\":\"x\"}", CM_EINVAL, "unknown field 'imag'"},
	        {"{\"host_network\":true}", CM_EINVAL, "'host_network' is for backend kubernetes"},
	        {"{\"backend\":\"kubernetes\",\"host_network\":1}", CM_EINVAL, "'host_network' must be true or false"},
	        {"{\"volumes\":[\"emptyDir\"]}", CM_EINVAL, "\"emptyDir:/path\""},
	        {"{\"volumes\":[\"/srv/data:/\"]}", CM_EINVAL,
	         "field 'volumes[0]': its path inside cannot be the root"},
	        {"{\"volumes\":[\"emptyDir:/x\",\"data:/./..//:ro\"]}", CM_EINVAL, "'volumes[1]': its path inside"},
	        {"{\"volumes\":[\"emptyDir:/a/b/../..\"]}", CM_EINVAL, "'volumes[0]': its path inside"},
	        {"{\"code\":\"BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\"}", CM_EINVAL,
	         "field 'code' must be the SHA-256 of an uploaded code package"},
	        {"{\"code\":\"../../etc\"}", CM_EINVAL, "64 lowercase hex digits"},
	        {"{\"code\":7}", CM_EINVAL, "field 'code'"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pool_spec s;
		char detail[256] = "";
		int err = pool(cases[i].body, &s, detail);
		if (err != cases[i].err || !strstr(detail, cases[i].part))
			fail_msg("%s: got %d '%s', expected %d '%s'", cases[i].body, err, detail, cases[i].err,
			         cases[i].part);
	}
	/* Paths that only look like the root are paths. */
	pool_spec s;
	char detail[256] = "";
	assert_int_equal(pool("{\"volumes\":[\"emptyDir:/.x\",\"emptyDir:/..x:ro\",\"emptyDir:/a/../b\"]}", &s, detail),
	                 CM_OK);
}

static void test_pool_autoscale(void **state)
{
	pool_spec s, back;
	char detail[256] = "";

	(void)state;
	/* Defaults; the pool starts at its min, which may be 0. */
	assert_int_equal(pool("{\"autoscale\":{\"min\":0,\"max\":4}}", &s, detail), CM_OK);
	assert_int_equal(s.processes, 0);
	assert_int_equal(s.scale_min, 0);
	assert_int_equal(s.scale_max, 4);
	assert_int_equal(s.scale_target_s, 10);
	assert_int_equal(s.scale_idle_s, 30);
	/* ... and its stored form keeps it all. */
	assert_int_equal(
	        pool("{\"processes\":3,\"autoscale\":{\"min\":1,\"max\":8,\"target_s\":5,\"idle_s\":2}}", &s, detail),
	        CM_OK);
	char *json = spec_pool_json(&s);
	assert_int_equal(spec_pool_load(json, "img", &back, detail, sizeof(detail)), CM_OK);
	free(json);
	assert_int_equal(back.processes, 3);
	assert_int_equal(back.scale_min, 1);
	assert_int_equal(back.scale_max, 8);
	assert_int_equal(back.scale_target_s, 5);
	assert_int_equal(back.scale_idle_s, 2);
	assert_int_equal(pool("{\"autoscale\":null}", &s, detail), CM_OK);
	assert_int_equal(s.scale_max, 0);

	static const struct {
		const char *body;
		const char *detail;
	} refused[] = {
	        {"{\"autoscale\":4}", "field 'autoscale' must be an object {min, max, target_s, idle_s} or null"},
	        {"{\"autoscale\":{\"min\":1}}", "field 'autoscale.max' is required"},
	        {"{\"autoscale\":{\"max\":0}}", "field 'autoscale.max' must be an integer from 1 to 1024"},
	        {"{\"autoscale\":{\"min\":5,\"max\":4}}", "field 'autoscale.min' (5) is above 'autoscale.max' (4)"},
	        {"{\"autoscale\":{\"max\":4,\"idle_s\":0}}",
	         "field 'autoscale.idle_s' must be an integer from 1 to 86400"},
	        {"{\"autoscale\":{\"max\":4,\"step\":1}}", "unknown field 'autoscale.step'"},
	        {"{\"processes\":6,\"autoscale\":{\"min\":1,\"max\":4}}",
	         "field 'processes' must be an integer from 1 to 4"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		int err = pool(refused[i].body, &s, detail);
		if (err != CM_EINVAL || strcmp(detail, refused[i].detail) != 0)
			fail_msg("%s: got %d '%s', expected '%s'", refused[i].body, err, detail, refused[i].detail);
	}
}

static void test_pool_patch_parse(void **state)
{
	pool_patch pt;
	char detail[256] = "";

	(void)state;
	assert_int_equal(spec_pool_patch_parse("{\"processes\":5}", 15, &pt, detail, sizeof(detail)), CM_OK);
	assert_int_equal(pt.processes, 5);
	assert_int_equal(pt.autoscale, 0);
	const char *both = "{\"autoscale\":{\"min\":2,\"max\":6,\"idle_s\":3},\"processes\":4}";
	assert_int_equal(spec_pool_patch_parse(both, strlen(both), &pt, detail, sizeof(detail)), CM_OK);
	assert_int_equal(pt.processes, 4);
	assert_int_equal(pt.autoscale, 1);
	assert_int_equal(pt.scale_min, 2);
	assert_int_equal(pt.scale_max, 6);
	assert_int_equal(pt.scale_target_s, 10);
	assert_int_equal(pt.scale_idle_s, 3);
	assert_int_equal(spec_pool_patch_parse("{\"autoscale\":null}", 18, &pt, detail, sizeof(detail)), CM_OK);
	assert_int_equal(pt.autoscale, -1);
	assert_int_equal(pt.processes, -1);
	assert_int_equal(spec_pool_patch_parse("{}", 2, &pt, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "give 'processes' or 'autoscale'");
	assert_int_equal(spec_pool_patch_parse("{\"processes\":-1}", 16, &pt, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "field 'processes' must be an integer from 0 to 1024");
	assert_int_equal(spec_pool_patch_parse("{\"backend\":\"docker\"}", 20, &pt, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "unknown field 'backend'"));
}

static int map(const char *body, int single, map_spec *out, char *detail)
{
	return spec_map_parse(body, strlen(body), single, out, detail, 256);
}

/* Argument i of args, as a string in buf. */
static const char *arg_text(const spec_args *args, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)(args->offs[i + 1] - args->offs[i]), args->text + args->offs[i]);
	return buf;
}

static void test_map_parse(void **state)
{
	map_spec m;
	char detail[256] = "", a[128];

	(void)state;
	assert_int_equal(
	        map("{\"function\":\"echo\",\"args\":[1,\"two\",{\"three\":[3]},null],\"chunksize\":8}", 0, &m, detail),
	        CM_OK);
	assert_string_equal(m.function, "echo");
	assert_int_equal(m.args.n, 4);
	assert_int_equal(m.total, 4);
	assert_string_equal(arg_text(&m.args, 1, a, sizeof(a)), "\"two\"");
	assert_string_equal(arg_text(&m.args, 2, a, sizeof(a)), "{\"three\":[3]}");
	assert_string_equal(arg_text(&m.args, 3, a, sizeof(a)), "null");
	assert_int_equal(m.chunksize, 8);
	spec_map_fini(&m);

	/* Arguments are their own text: whitespace between tokens goes, that
	 * inside strings stays, numbers stay as written (an integer past 64
	 * bits included), escapes stay escaped. */
	assert_int_equal(map(" { \"args\" : [ 1.50 , { \"a\" : [ 2 , 3e2 ] } ,\n\"x y\\u00e9\\\"\", "
	                     "123456789012345678901234567890, -0 ] , \"function\" : \"echo\" , \"total\" : 9 } ",
	                     0, &m, detail),
	                 CM_OK);
	assert_int_equal(m.args.n, 5);
	assert_int_equal(m.total, 9);
	assert_string_equal(arg_text(&m.args, 0, a, sizeof(a)), "1.50");
	assert_string_equal(arg_text(&m.args, 1, a, sizeof(a)), "{\"a\":[2,3e2]}");
	assert_string_equal(arg_text(&m.args, 2, a, sizeof(a)), "\"x y\\u00e9\\\"\"");
	assert_string_equal(arg_text(&m.args, 3, a, sizeof(a)), "123456789012345678901234567890");
	assert_string_equal(arg_text(&m.args, 4, a, sizeof(a)), "-0");
	spec_map_fini(&m);

	/* A map made for parts: a total and no arguments yet. */
	assert_int_equal(map("{\"function\":\"echo\",\"args\":[],\"total\":10000000}", 0, &m, detail), CM_OK);
	assert_int_equal(m.args.n, 0);
	assert_int_equal(m.total, 10000000);
	spec_map_fini(&m);

	assert_int_equal(map("{\"command\":[\"sh\",\"-c\",\"cat\"],\"arg\":{\"x\":1},\"timeout_s\":5}", 1, &m, detail),
	                 CM_OK);
	assert_string_equal(m.function, "exec");
	assert_int_equal(m.ncommand, 3);
	assert_string_equal(m.command[2], "cat");
	assert_int_equal(m.args.n, 1);
	assert_string_equal(arg_text(&m.args, 0, a, sizeof(a)), "{\"x\":1}");
	assert_int_equal(m.timeout_ms, 5000);
	spec_map_fini(&m);

	assert_int_equal(map("{\"function\":\"echo\",\"args\":[]}", 0, &m, detail), CM_OK);
	assert_int_equal(m.args.n, 0);
	assert_string_equal(m.name, "");
	spec_map_fini(&m);

	/* A name, for people: any text but control characters. */
	assert_int_equal(map("{\"function\":\"echo\",\"arg\":1,\"name\":\"nightly r\u00e9sum\u00e9s\"}", 1, &m, detail),
	                 CM_OK);
	assert_string_equal(m.name, "nightly r\xc3\xa9sum\xc3\xa9s");
	spec_map_fini(&m);
}

static void test_map_refusals(void **state)
{
	static const struct {
		const char *body;
		int single;
		int err;
		const char *part;
	} cases[] = {
	        {"{\"args\":[1]}", 0, CM_EINVAL, "'function'"},
	        {"{\"function\":\"echo\"}", 0, CM_EINVAL, "'args'"},
	        {"{\"function\":\"echo\",\"args\":{}}", 0, CM_EINVAL, "'args'"},
	        {"{\"function\":\"echo\",\"args\":[],\"chunksize\":0}", 0, CM_EINVAL, "'chunksize'"},
	        {"{\"function\":\"echo\",\"args\":[],\"arg\":1}", 0, CM_EINVAL, "unknown field 'arg'"},
	        {"{\"function\":\"echo\",\"arg\":1,\"chunksize\":2}", 1, CM_EINVAL, "unknown field 'chunksize'"},
	        {"{\"function\":\"echo\"}", 1, CM_EINVAL, "'arg'"},
	        {"{\"function\":\"exec\",\"args\":[]}", 0, CM_EINVAL, "'command'"},
	        {"{\"command\":[],\"args\":[]}", 0, CM_EINVAL, "'command'"},
	        {"{\"function\":\"nosuch\",\"args\":[]}", 0, CM_EUNSUPPORTED, "unknown function"},
	        {"{\"function\":\"a/b.so:f\",\"args\":[]}", 0, CM_EUNSUPPORTED, "LIB.so:SYMBOL"},
	        {"{\"function\":\"../x.so:f\",\"args\":[]}", 0, CM_EUNSUPPORTED, "LIB.so:SYMBOL"},
	        {"{\"function\":\"manager\",\"args\":[]}", 0, CM_EUNSUPPORTED, "reserved"},
	        {"{\"function\":\"lib.so:\",\"args\":[]}", 0, CM_EUNSUPPORTED, "LIB.so:SYMBOL"},
	        {"{\"function\":\"lib.dll:f\",\"args\":[]}", 0, CM_EUNSUPPORTED, "LIB.so:SYMBOL"},
	        {"{\"function\":\"echo\",\"args\":[],\"timeout_s\":-1}", 0, CM_EINVAL, "'timeout_s'"},
	        /* Arguments are scanned, not built: the scan refuses what jansson would. */
	        {"{\"function\":\"echo\",\"args\":[\"\xc3\x28\"]}", 0, CM_EINVAL, "invalid UTF-8"},
	        {"{\"function\":\"echo\",\"args\":[\"\xed\xa0\x80\"]}", 0, CM_EINVAL, "invalid UTF-8"},
	        {"{\"function\":\"echo\",\"args\":[\"\\udc00\"]}", 0, CM_EINVAL, "lone low surrogate"},
	        {"{\"function\":\"echo\",\"args\":[\"\\ud800x\"]}", 0, CM_EINVAL, "high surrogate"},
	        {"{\"function\":\"echo\",\"args\":[\"\\u0000\"]}", 0, CM_EINVAL, "\\u0000"},
	        {"{\"function\":\"echo\",\"args\":[\"\\x\"]}", 0, CM_EINVAL, "invalid escape"},
	        {"{\"function\":\"echo\",\"args\":[\"a\tb\"]}", 0, CM_EINVAL, "control character"},
	        {"{\"function\":\"echo\",\"args\":[\"open]}", 0, CM_EINVAL, "unterminated string"},
	        {"{\"function\":\"echo\",\"args\":[01]}", 0, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[1.]}", 0, CM_EINVAL, "invalid number"},
	        {"{\"function\":\"echo\",\"args\":[-]}", 0, CM_EINVAL, "invalid number"},
	        {"{\"function\":\"echo\",\"args\":[1e]}", 0, CM_EINVAL, "invalid number"},
	        {"{\"function\":\"echo\",\"args\":[tru]}", 0, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[1,]}", 0, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[1 2]}", 0, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[{\"a\":1,}]}", 0, CM_EINVAL, "missing object key"},
	        {"{\"function\":\"echo\",\"args\":[{\"a\" 1}]}", 0, CM_EINVAL, "missing ':'"},
	        {"{\"function\":\"echo\",\"args\":[{\"a\":1,\"a\":2}]}", 0, CM_EINVAL, "argument 0"},
	        {"{\"function\":\"echo\",\"args\":[[1}]}", 0, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[1]", 0, CM_EINVAL, "unexpected end"},
	        {"{\"function\":\"echo\",\"args\":[1]} x", 0, CM_EINVAL, "text after the object"},
	        {"{\"function\":\"echo\",\"args\":[1],\"args\":[2]}", 0, CM_EINVAL, "duplicate object key 'args'"},
	        {"{\"function\":\"echo\",\"function\":\"echo\",\"args\":[]}", 0, CM_EINVAL, "duplicate object key"},
	        {"{\"function\":\"echo\",\"args\":[1,2],\"total\":1}", 0, CM_EINVAL, "'total'"},
	        {"{\"function\":\"echo\",\"arg\":1,\"total\":3}", 1, CM_EINVAL, "unknown field 'total'"},
	        {"{\"function\":\"echo\",\"arg\":}", 1, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"arg\":1 1}", 1, CM_EINVAL, "unexpected character"},
	        {"{\"function\":\"echo\",\"args\":[],\"name\":\"\"}", 0, CM_EINVAL,
	         "'name' must be a string of 1 to 128"},
	        {"{\"function\":\"echo\",\"args\":[],\"name\":7}", 0, CM_EINVAL, "'name' must be a string"},
	        {"{\"function\":\"echo\",\"args\":[],\"name\":\"a\\nb\"}", 0, CM_EINVAL, "'name' holds a control"},
	        {"{\"function\":\"echo\",\"args\":[],\"name\":\"a\\u0000b\"}", 0, CM_EINVAL, "\\u0000"},
	        {"{\"function\":\"echo\",\"args\":[],\"name\":"
	         "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
	         0, CM_EINVAL, "'name'"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		map_spec m;
		char detail[256] = "";
		int err = map(cases[i].body, cases[i].single, &m, detail);
		if (err != cases[i].err || !strstr(detail, cases[i].part))
			fail_msg("%s: got %d '%s', expected %d '%s'", cases[i].body, err, detail, cases[i].err,
			         cases[i].part);
	}
}

/* Strings are scanned eight bytes at a time: what needs a look (a control
 * character, a byte past ASCII, an escape, the closing quote) is seen at
 * every place in a word, and an error names its very byte. */
static void test_strings_scanned_by_words(void **state)
{
	static const struct {
		const char *at; /* put at each offset of a long string */
		const char *part; /* NULL: the argument is taken as it is */
	} cases[] = {
	        {"\t", "a control character in a string (escape it) at byte "},
	        {"\x1f", "a control character in a string (escape it) at byte "},
	        {"\xc3\x28", "invalid UTF-8 in a string at byte "},
	        {"\xff", "invalid UTF-8 in a string at byte "},
	        {"\\x", "an invalid escape at byte "},
	        {"\\n", NULL},
	        {"\\\"", NULL},
	        {"\xc3\xa9", NULL},
	        {"\x7f", NULL},
	        {" ~!", NULL},
	};
	static const char head[] = "{\"function\":\"echo\",\"args\":[\"";
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t k = 0; k < 24; k++) {
			char body[200], text[64], a[128], detail[256] = "", want[96];
			map_spec m;
			snprintf(text, sizeof(text), "%.*s%s%.*s", (int)k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", cases[c].at,
			         17, "abcdefghijklmnopqrstuvwxyz");
			snprintf(body, sizeof(body), "%s%s\"]}", head, text);
			int err = map(body, 0, &m, detail);
			if (!cases[c].part) {
				snprintf(want, sizeof(want), "\"%s\"", text);
				if (err != CM_OK || strcmp(arg_text(&m.args, 0, a, sizeof(a)), want) != 0)
					fail_msg("%s: got %d '%s' '%s'", body, err, detail, err == CM_OK ? a : "");
				spec_map_fini(&m);
				continue;
			}
			snprintf(want, sizeof(want), "%s%zu", cases[c].part, sizeof(head) - 1 + k);
			if (err != CM_EINVAL || !strstr(detail, want))
				fail_msg("%s: got %d '%s', expected '%s'", body, err, detail, want);
		}
	}
}

/* A map's arguments are scanned, not built: a million of them parse, one
 * more is refused with the way to send more (parts); the other fields are
 * still counted before jansson builds them, braces and numbers inside
 * strings not counting as values. */
static void test_body_values_counted_before_parsing(void **state)
{
	size_t cap = 64 + 4 * (size_t)SPEC_MAX_ARGS + 64;
	char *body = malloc(cap);
	char detail[256] = "";
	map_spec m;
	size_t n;

	(void)state;
	n = (size_t)snprintf(body, cap, "{\"function\":\"noop\",\"args\":[");
	for (int i = 0; i < SPEC_MAX_ARGS; i++)
		n += (size_t)snprintf(body + n, cap - n, "%s0", i ? "," : "");
	snprintf(body + n, cap - n, "]}");
	assert_int_equal(map(body, 0, &m, detail), CM_OK);
	assert_int_equal(m.args.n, SPEC_MAX_ARGS);
	spec_map_fini(&m);
	snprintf(body + n, cap - n, ",0]}");
	assert_int_equal(map(body, 0, &m, detail), CM_ETOOBIG);
	assert_non_null(strstr(detail, "/v1/jobs/{id}/args"));
	/* A context of more values than that is refused before it is built. */
	n = (size_t)snprintf(body, cap, "{\"function\":\"rt:f\",\"args\":[],\"context\":[");
	for (int i = 0; i < SPEC_MAX_VALUES; i++)
		n += (size_t)snprintf(body + n, cap - n, "%s0", i ? "," : "");
	snprintf(body + n, cap - n, "]}");
	assert_int_equal(map(body, 0, &m, detail), CM_ETOOBIG);
	assert_non_null(strstr(detail, "JSON values"));
	/* ... and so are many fields that each hold fewer, together more. */
	n = (size_t)snprintf(body, cap, "{\"function\":\"echo\",\"args\":[]");
	for (int k = 0; k < 3; k++) {
		n += (size_t)snprintf(body + n, cap - n, ",\"x%d\":[", k);
		for (int i = 0; i < SPEC_MAX_VALUES / 2; i++)
			n += (size_t)snprintf(body + n, cap - n, "%s0", i ? "," : "");
		n += (size_t)snprintf(body + n, cap - n, "]");
	}
	snprintf(body + n, cap - n, "}");
	assert_int_equal(map(body, 0, &m, detail), CM_ETOOBIG);
	assert_non_null(strstr(detail, "JSON values"));
	free(body);
	assert_int_equal(map("{\"function\":\"echo\",\"args\":[\"[1,2,{\\\"3\\\":4}]\"]}", 0, &m, detail), CM_OK);
	assert_int_equal(m.args.n, 1);
	spec_map_fini(&m);
}

/* A part: its offset and arguments; both required, nothing else. */
static void test_part_parse(void **state)
{
	spec_args args;
	int64_t offset;
	char detail[256] = "", a[64];
	const char *ok = "{\"offset\": 1000000, \"args\": [ \"a\" , [ 1 ] ]}";

	(void)state;
	assert_int_equal(spec_part_parse(ok, strlen(ok), &offset, &args, detail, sizeof(detail)), CM_OK);
	assert_int_equal(offset, 1000000);
	assert_int_equal(args.n, 2);
	assert_string_equal(arg_text(&args, 0, a, sizeof(a)), "\"a\"");
	assert_string_equal(arg_text(&args, 1, a, sizeof(a)), "[1]");
	spec_args_fini(&args);
	static const struct {
		const char *body;
		const char *part;
	} bad[] = {
	        {"{\"args\":[1]}", "'offset'"},
	        {"{\"offset\":0}", "'args'"},
	        {"{\"offset\":-1,\"args\":[]}", "'offset'"},
	        {"{\"offset\":0,\"args\":[],\"total\":3}", "unknown field 'total'"},
	        {"{\"offset\":0,\"args\":[\"\\ud800\"]}", "high surrogate"},
	        {"[1]", "must be a JSON object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = spec_part_parse(bad[i].body, strlen(bad[i].body), &offset, &args, detail, sizeof(detail));
		if (err != CM_EINVAL || !strstr(detail, bad[i].part))
			fail_msg("%s: got %d '%s', expected '%s'", bad[i].body, err, detail, bad[i].part);
	}
}

/* Nesting is bounded as jansson bounds it: 2048 levels scan, 2049 do not. */
static void test_nesting_bounded(void **state)
{
	size_t cap = 64 + 2 * 2100;
	char *body = malloc(cap);
	char detail[256] = "";
	map_spec m;

	(void)state;
	for (int depth = 2048; depth <= 2049; depth++) {
		size_t n = (size_t)snprintf(body, cap, "{\"function\":\"echo\",\"args\":[");
		for (int i = 0; i < depth; i++)
			body[n++] = '[';
		for (int i = 0; i < depth; i++)
			body[n++] = ']';
		snprintf(body + n, cap - n, "]}");
		int err = map(body, 0, &m, detail);
		if (depth == 2048) {
			assert_int_equal(err, CM_OK);
			spec_map_fini(&m);
		} else {
			assert_int_equal(err, CM_EINVAL);
			assert_non_null(strstr(detail, "nesting deeper than 2048"));
		}
	}
	free(body);
}

static void test_function_names(void **state)
{
	char detail[256];

	(void)state;
	assert_int_equal(cm_function_check("echo", detail, sizeof(detail)), CM_OK);
	assert_int_equal(cm_function_check("builtin:sleep", detail, sizeof(detail)), CM_OK);
	assert_int_equal(cm_function_check("my-lib_2.so:do_it", detail, sizeof(detail)), CM_OK);
	assert_int_equal(cm_function_check("exec", detail, sizeof(detail)), CM_OK);
	assert_int_equal(cm_function_check(".so:f", detail, sizeof(detail)), CM_EUNSUPPORTED);
	assert_int_equal(cm_function_check("builtin:nope", detail, sizeof(detail)), CM_EUNSUPPORTED);
	assert_string_equal(cm_function_builtin_name("builtin:pi"), "pi");
}

static void test_config_flags_over_env(void **state)
{
	gw_config cfg;
	char detail[256] = "";
	char *argv1[] = {"strand-gateway", "--http", "127.0.0.1:9999", "--db", "/tmp/x.db", NULL};
	char *argv2[] = {"strand-gateway", "--bogus", NULL};
	char *argv3[] = {"strand-gateway", "stray", NULL};

	(void)state;
	setenv("STRAND_HTTP", "127.0.0.1:1111", 1);
	setenv("STRAND_HUB", "tcp://127.0.0.1:2222", 1);
	setenv("STRAND_BACKEND", "local", 1);
	assert_int_equal(gw_config_load(&cfg, 5, argv1, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.http, "127.0.0.1:9999"); /* the flag wins */
	assert_string_equal(cfg.hub, "tcp://127.0.0.1:2222"); /* the environment fills in */
	assert_string_equal(cfg.db, "/tmp/x.db");
	assert_int_equal(cfg.lease_ms, 5000);
	unsetenv("STRAND_HTTP");
	unsetenv("STRAND_HUB");
	assert_int_equal(gw_config_load(&cfg, 1, argv1, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.http, "127.0.0.1:8080");
	assert_string_equal(cfg.hub, "tcp://127.0.0.1:7070");
	assert_string_equal(cfg.db, "./strand.db");
	assert_int_equal(gw_config_load(&cfg, 2, argv2, detail, sizeof(detail)), CM_EINVAL);
	assert_int_equal(gw_config_load(&cfg, 2, argv3, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "stray"));

	/* The token file sits next to the database unless told otherwise. */
	assert_int_equal(gw_config_load(&cfg, 5, argv1, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.token_file, "/tmp/strand.token");
	/* TLS: a certificate needs its key, and a TLS hub needs both. */
	char *argv4[] = {"strand-gateway", "--tls-cert", "/tmp/c.pem", NULL};
	char *argv5[] = {"strand-gateway", "--hub", "tls+tcp://127.0.0.1:7070", NULL};
	assert_int_equal(gw_config_load(&cfg, 3, argv4, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "--tls-key"));
	assert_int_equal(gw_config_load(&cfg, 3, argv5, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "needs --tls-cert and --tls-key"));

	/* Kubernetes: an https server with a token, a namespace that is a DNS
	 * label (it goes into URL paths), a known pull policy, bounded times. */
	static const struct {
		const char *flag, *value, *detail;
	} k8s[] = {
	        {"--k8s-namespace", "Bad/ns", "must be a DNS label"},
	        {"--k8s-namespace", "-lead", "must be a DNS label"},
	        {"--k8s-server", "http://127.0.0.1:6443", "must be an https:// URL"},
	        {"--k8s-server", "https://127.0.0.1:6443", "needs --k8s-token-file"},
	        {"--k8s-pull-policy", "Sometimes", "IfNotPresent, Never or Always"},
	        {"--k8s-start-grace", "0", "1 to 86400"},
	        {"--backend-timeout", "0", "1 to 3600"},
	};
	for (size_t i = 0; i < sizeof(k8s) / sizeof(k8s[0]); i++) {
		char *argv[] = {"strand-gateway", (char *)k8s[i].flag, (char *)k8s[i].value, NULL};
		assert_int_equal(gw_config_load(&cfg, 3, argv, detail, sizeof(detail)), CM_EINVAL);
		if (!strstr(detail, k8s[i].detail))
			fail_msg("%s %s: '%s', not '%s'", k8s[i].flag, k8s[i].value, detail, k8s[i].detail);
	}
	char *argv6[] = {"strand-gateway",
	                 "--k8s-server",
	                 "https://127.0.0.1:6443",
	                 "--k8s-token-file",
	                 "/tmp/t",
	                 "--k8s-namespace",
	                 "strand-1",
	                 NULL};
	assert_int_equal(gw_config_load(&cfg, 7, argv6, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.hub_advertise, cfg.hub); /* workers dial what the hub hears */
	char *argv7[] = {"strand-gateway",
	                 "--hub",
	                 "tcp://0.0.0.0:7070",
	                 "--hub-advertise",
	                 "tcp://strand-gateway.strand.svc:7070",
	                 NULL};
	assert_int_equal(gw_config_load(&cfg, 5, argv7, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.hub_advertise, "tcp://strand-gateway.strand.svc:7070");
	char *argv8[] = {"strand-gateway", "--hub-advertise", "ipc:///tmp/hub", NULL};
	assert_int_equal(gw_config_load(&cfg, 3, argv8, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "--hub-advertise must be a URL of the hub's transport (tcp://)"));
	assert_int_equal(gw_config_load(&cfg, 7, argv6, detail, sizeof(detail)), CM_OK);
	assert_string_equal(cfg.k8s.ns, "strand-1");
	assert_string_equal(cfg.k8s.pull_policy, "IfNotPresent");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pool_defaults_and_fields),
	        cmocka_unit_test(test_pool_refusals),
	        cmocka_unit_test(test_pool_autoscale),
	        cmocka_unit_test(test_pool_patch_parse),
	        cmocka_unit_test(test_map_parse),
	        cmocka_unit_test(test_map_refusals),
	        cmocka_unit_test(test_strings_scanned_by_words),
	        cmocka_unit_test(test_function_names),
	        cmocka_unit_test(test_body_values_counted_before_parsing),
	        cmocka_unit_test(test_part_parse),
	        cmocka_unit_test(test_nesting_bounded),
	        cmocka_unit_test(test_config_flags_over_env),
	};
	return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
