/* CRC32C (Castagnoli) for frame integrity checks (lib/util): the SSE4.2 crc32 instruction
 * when the CPU has it, a portable slicing-by-8 table otherwise. */
#ifndef WT_UTIL_CRC32C_H
#define WT_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Standard CRC32C (reflected, init and final xor 0xffffffff): pass 0 to start, and the
 * previous result to continue, so crc(crc(0, a), b) == crc(0, a || b).
 * wt_util_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t wt_util_crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations behind wt_util_crc32c, for tests and benchmarks. The hardware
 * one falls back to the portable one when the CPU lacks SSE4.2. Setting
 * WT_UTIL_PORTABLE_KERNELS makes wt_util_crc32c use the portable one. */
uint32_t wt_util_crc32c_portable(uint32_t crc, const void *buf, size_t len);
uint32_t wt_util_crc32c_hw(uint32_t crc, const void *buf, size_t len);
/* 1 if wt_util_crc32c_hw really uses the crc32 instruction here. */
int wt_util_crc32c_hw_available(void);

#endif
