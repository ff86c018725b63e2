/* Fuzz target: pnfs-mds's config-file parser and export-rule parser on arbitrary text. Either
 * accepts or fails with a message; never crashes or reads past the input. */
#include "mds/config.h"
#include "mds/export.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mds_config cfg;
	struct mds_export_rule rule;
	char err[512];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	mds_config_defaults(&cfg);
	if (mds_config_parse(&cfg, text, "fuzz.conf", err, sizeof(err)) == 0)
		(void)mds_config_check(&cfg, err, sizeof(err));
	(void)mds_export_parse_rule(text, &rule, err, sizeof(err));
	free(text);
	return 0;
}
