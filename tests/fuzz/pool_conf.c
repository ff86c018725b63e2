/* libFuzzer target: pool.conf parsing. Any text either parses into LUNs 0..N-1 with URLs, or fails
 * with a line-numbered message; never a crash or a leak. */
#include "mds/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mds_pool_conf c;
	char err[512], *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (mds_pool_conf_parse(text, "pool.conf", &c, err, sizeof(err)) == 0) {
		if (c.nluns == 0)
			abort();
		for (uint32_t i = 0; i < c.nluns; i++)
			if (!c.urls[i] || !c.urls[i][0])
				abort();
	} else if (strncmp(err, "pool.conf", 9) != 0) {
		abort();
	}
	mds_pool_conf_free(&c);
	free(text);
	return 0;
}
