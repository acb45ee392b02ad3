/* Slicing-by-8 tables for a bit-reflected 32-bit CRC (lib/util), shared by crc32c.c and
 * crc32.c: their portable path, and the short heads and tails of their hardware paths. */
#ifndef WT_UTIL_CRC_SLICE8_H
#define WT_UTIL_CRC_SLICE8_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/bytes.h"

typedef uint32_t wt_util_crc_slice8_t[8][256];

/* t[0] is the byte-at-a-time table of the reflected polynomial poly; t[k] carries a byte
 * k further. */
static inline void wt_util_crc_slice8_init(wt_util_crc_slice8_t t, uint32_t poly)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
		t[0][i] = c;
	}
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++) {
			uint32_t prev = t[k - 1][i];

			t[k][i] = (prev >> 8) ^ t[0][prev & 0xff];
		}
}

/* Raw register update (no init/final xor): bytes up to 8-byte alignment one at a time,
 * then 8 at a time, then the rest. */
static inline uint32_t wt_util_crc_slice8(const wt_util_crc_slice8_t t, uint32_t c,
					  const uint8_t *p, size_t len)
{
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t w = wt_util_get_le64(p);
		uint32_t lo = c ^ (uint32_t)w, hi = (uint32_t)(w >> 32);

		c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		    t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		    t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
	return c;
}

#endif
