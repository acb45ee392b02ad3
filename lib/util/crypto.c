/* Randomness, token-derived keys and HMAC-SHA256 on top of libsodium (lib/util). */
#include <pthread.h>
#include <string.h>
#include <sodium.h>
#include "lib/util/crypto.h"
#include "lib/util/log.h"

static pthread_once_t wt_crypto_once = PTHREAD_ONCE_INIT;
static int wt_crypto_rc = -1;

static void crypto_init_once(void)
{
	wt_crypto_rc = sodium_init();
}

weft_status_t wt_util_crypto_init(void)
{
	pthread_once(&wt_crypto_once, crypto_init_once);
	if (wt_crypto_rc < 0) {
		WT_ERROR("libsodium initialisation failed (sodium_init returned %d)", wt_crypto_rc);
		return WEFT_ERR_SYSTEM;
	}
	return WEFT_OK;
}

void wt_util_random(void *buf, size_t len)
{
	wt_util_crypto_init();
	randombytes_buf(buf, len);
}

void wt_util_key_from_token(wt_util_key_t *key, const char *token)
{
	static const char domain[] = "weft-job-token";
	crypto_generichash_state st;

	wt_util_crypto_init();
	if (!token)
		token = "";
	crypto_generichash_init(&st, NULL, 0, sizeof(key->key));
	crypto_generichash_update(&st, (const unsigned char *)domain, sizeof(domain) - 1);
	crypto_generichash_update(&st, (const unsigned char *)token, strlen(token));
	crypto_generichash_final(&st, key->key, sizeof(key->key));
	sodium_memzero(&st, sizeof(st));
}

void wt_util_mac(const wt_util_key_t *key, const char *label, const void *a, size_t alen,
		 const void *b, size_t blen, uint8_t mac[WT_UTIL_MAC_LEN])
{
	crypto_auth_hmacsha256_state st;

	wt_util_crypto_init();
	if (!label)
		label = "";
	crypto_auth_hmacsha256_init(&st, key->key, sizeof(key->key));
	/* The label's NUL is hashed so "ab"+"c..." cannot collide with "a"+"bc...". */
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	if (alen)
		crypto_auth_hmacsha256_update(&st, a, alen);
	if (blen)
		crypto_auth_hmacsha256_update(&st, b, blen);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

int wt_util_mac_verify(const wt_util_key_t *key, const char *label, const void *a, size_t alen,
		       const void *b, size_t blen, const uint8_t mac[WT_UTIL_MAC_LEN])
{
	uint8_t want[WT_UTIL_MAC_LEN];
	int ok;

	wt_util_mac(key, label, a, alen, b, blen, want);
	ok = sodium_memcmp(want, mac, WT_UTIL_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

void wt_util_random_hex(char *out, size_t len)
{
	uint8_t chunk[64];

	out[0] = '\0';
	while (len > 0) {
		size_t n = len < sizeof(chunk) ? len : sizeof(chunk);

		wt_util_random(chunk, n);
		sodium_bin2hex(out, 2 * n + 1, chunk, n);
		out += 2 * n;
		len -= n;
	}
}
