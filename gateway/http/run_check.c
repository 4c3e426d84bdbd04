/* What only this host can say of a pool, manager, process or ring asked
 * for, before the engine takes it: its code package is stored here, and
 * the local backend's sandbox can bind its volumes here (a worker that
 * could not would fail to start, again and again). */
#include <string.h>

#include "gateway/backend/sandbox.h"
#include "gateway/http/http_int.h"

int http_run_check(api *a, const pool_spec *spec, char *detail, size_t detail_len)
{
	int err = http_code_check(a, spec, detail, detail_len);

	if (err == CM_OK && strcmp(spec->backend, "local") == 0 && strcmp(a->cfg->sandbox, "off") != 0)
		err = sandbox_volumes_check(spec, a->cfg->sandbox_uids, detail, detail_len);
	return err;
}
