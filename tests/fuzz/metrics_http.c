/* libFuzzer target: the request head pnfs-mds's metrics endpoint reads (at most METRICS_REQ_MAX - 1
 * bytes, NUL-terminated as the connection buffer is). Every head gets one of the four answers, and
 * 200 only for a GET or HEAD of /metrics. */
#include "mds/layout_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char req[4096];
	int head = -1, code;

	if (size > sizeof(req) - 1)
		size = sizeof(req) - 1;
	memcpy(req, data, size);
	req[size] = 0;
	code = mds_metrics_route(req, &head);
	if (code != 200 && code != 400 && code != 404 && code != 405)
		abort();
	if (head != 0 && head != 1)
		abort();
	if (code == 200 && !strstr(req, "/metrics"))
		abort();
	if (code != 200 && head)
		abort();
	return 0;
}
