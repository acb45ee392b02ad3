/* libFuzzer target (tests/fuzz): the reliability header decoder alone, on any bytes; a
 * frame it accepts must re-encode to the same header bytes. */
#include <stdint.h>
#include <string.h>
#include "layers/channel/rel_wire.h"
#include "layers/channel/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wt_rel_hdr_t h;
	wt_chan_hdr_t c;

	if (wt_rel_hdr_decode(data, size, &h) == NULL) {
		uint8_t again[WT_REL_HDR_LEN];

		wt_rel_hdr_encode(&h, again);
		if (memcmp(again, data, WT_REL_HDR_LEN) != 0)
			__builtin_trap();
		/* the channel's own header follows in the payload */
		(void)wt_chan_hdr_decode(data + WT_REL_HDR_LEN, size - WT_REL_HDR_LEN, &c);
	}
	(void)wt_chan_hdr_decode(data, size, &c);
	return 0;
}
