/* Error names. */
#include "common/common.h"

const char *cm_strerror(int err)
{
	switch (err) {
	case CM_OK: return "ok";
	case CM_EINVAL: return "invalid input";
	case CM_ENOMEM: return "out of memory";
	case CM_ENOENT: return "not found";
	case CM_ECLOSED: return "closed";
	case CM_ETOOBIG: return "too large";
	case CM_EUNSUPPORTED: return "unsupported";
	case CM_EIO: return "i/o error";
	case CM_EUNAVAIL: return "unavailable";
	case CM_ETIMEDOUT: return "timed out";
	case CM_ESHUTDOWN: return "shutting down";
	case CM_EPERM: return "forbidden by the gateway's policy";
	case CM_EQUOTA: return "over a quota";
	}
	return "unknown error";
}
