/* CRC32 (IEEE 802.3, the Ethernet polynomial 0x04C11DB7, reflected) for RoCE's ICRC
 * (lib/util): carry-less multiply folding (PCLMULQDQ; VPCLMULQDQ on 512-bit registers
 * where the CPU has it) when the CPU has it, a portable slicing-by-8 table otherwise. */
#ifndef WT_UTIL_CRC32_H
#define WT_UTIL_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* zlib's crc32() semantics (init and final xor 0xffffffff): pass 0 to start and the
 * previous result to continue, so crc(crc(0, a), b) == crc(0, a || b).
 * wt_util_crc32(0, "123456789", 9) == 0xCBF43926. */
uint32_t wt_util_crc32(uint32_t crc, const void *buf, size_t len);

/* The implementations behind wt_util_crc32, for tests and benchmarks. The hardware one
 * falls back to the portable one when the CPU lacks PCLMULQDQ/SSE4.1. Setting
 * WT_UTIL_PORTABLE_KERNELS makes wt_util_crc32 use the portable one. */
uint32_t wt_util_crc32_portable(uint32_t crc, const void *buf, size_t len);
uint32_t wt_util_crc32_hw(uint32_t crc, const void *buf, size_t len);
/* 1 if wt_util_crc32_hw really uses carry-less multiplication here. */
int wt_util_crc32_hw_available(void);

#endif
