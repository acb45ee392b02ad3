/* Random bytes and HMAC-SHA256 from libsodium (lib/util); no hand-written crypto.
 * The job token authenticates every connection by challenge-response. */
#ifndef WT_UTIL_CRYPTO_H
#define WT_UTIL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"

#define WT_UTIL_NONCE_LEN 32
#define WT_UTIL_MAC_LEN 32
#define WT_UTIL_TOKEN_MAX 128

/* Key material derived from the job token string (any length, may be empty). */
typedef struct {
	uint8_t key[32];
} wt_util_key_t;

weft_status_t wt_util_crypto_init(void);
void wt_util_random(void *buf, size_t len);
void wt_util_key_from_token(wt_util_key_t *key, const char *token);
/* mac = HMAC-SHA256(key, label || a || b); label is a NUL-terminated context string. */
void wt_util_mac(const wt_util_key_t *key, const char *label, const void *a, size_t alen,
		 const void *b, size_t blen, uint8_t mac[WT_UTIL_MAC_LEN]);
/* Constant-time compare of the expected MAC against a received one; 1 if equal. */
int wt_util_mac_verify(const wt_util_key_t *key, const char *label, const void *a,
		       size_t alen, const void *b, size_t blen,
		       const uint8_t mac[WT_UTIL_MAC_LEN]);
/* Hex of len random bytes into out (2*len+1 bytes). */
void wt_util_random_hex(char *out, size_t len);

#endif
