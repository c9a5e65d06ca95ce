// OpenSSL 3 for chat-tui: the library's own functions are used directly from Swift; what
// Swift cannot import (function-like macros, variadic calls) is wrapped here in small
// static inline functions.
#ifndef CHAT_TUI_OPENSSL_SHIM_H
#define CHAT_TUI_OPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

/// The last OpenSSL error as text (and the queue cleared), for messages a user reads.
static inline void chat_tls_last_error(char *out, size_t length) {
    unsigned long code = ERR_get_error();
    if (code == 0) { snprintf(out, length, "unknown TLS error"); return; }
    ERR_error_string_n(code, out, length);
    ERR_clear_error();
}

/// Any client certificate is accepted (self-signed ones too): it is not a proof of anything by
/// itself, only a key whose fingerprint an account may have registered for SASL EXTERNAL.
static inline int chat_tls_accept_any_certificate(int preverified, X509_STORE_CTX *store) {
    (void)preverified; (void)store;
    return 1;
}

/// A server context: TLS 1.2 and 1.3 only, the certificate chain and key from PEM files,
/// partial writes from a buffer that may move (our output buffers compact). NULL on failure.
static inline SSL_CTX *chat_tls_server_context(const char *certificate, const char *key, char *error, size_t length) {
    SSL_CTX *context = SSL_CTX_new(TLS_server_method());
    if (!context) { chat_tls_last_error(error, length); return NULL; }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    // Idle connections give their buffers back; a peer that closes without close_notify is an
    // end of stream, not a protocol error.
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
    // Key exchange with X25519, P-256 or P-384 only: a client asking for ffdhe8192 made the
    // loop spend 177 ms per handshake (X25519: 1.7 ms). No finite-field groups, no DHE suites.
    // TLS 1.2 suites: forward-secret AEAD only (Mozilla's "intermediate" list); sslscan found the
    // CBC suites with SHA-1 and SHA-2 MACs accepted before. TLS 1.3's suites are all AEAD.
    if (SSL_CTX_set1_groups_list(context, "X25519:P-256:P-384") != 1
        || SSL_CTX_set_cipher_list(context, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                            "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305") != 1
        || SSL_CTX_use_certificate_chain_file(context, certificate) != 1
        || SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) != 1
        || SSL_CTX_check_private_key(context) != 1) {
        chat_tls_last_error(error, length);
        SSL_CTX_free(context);
        return NULL;
    }
    // Ask for a client certificate, without requiring one. Asking needs a session ID context,
    // or OpenSSL refuses to resume TLS 1.2 sessions.
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, chat_tls_accept_any_certificate);
    SSL_CTX_set_session_id_context(context, (const unsigned char *)"chat-tui", 8);
    return context;
}

/// A client context: TLS 1.2 and 1.3, the system's trust store, partial writes.
static inline SSL_CTX *chat_tls_client_context(char *error, size_t length) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) { chat_tls_last_error(error, length); return NULL; }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_default_verify_paths(context);
    return context;
}

/// Presents a client certificate (for SASL EXTERNAL) from PEM files. Returns 1 on success.
static inline int chat_tls_use_client_certificate(SSL_CTX *context, const char *certificate, const char *key, char *error, size_t length) {
    if (SSL_CTX_use_certificate_chain_file(context, certificate) != 1
        || SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) != 1
        || SSL_CTX_check_private_key(context) != 1) {
        chat_tls_last_error(error, length);
        return 0;
    }
    return 1;
}

/// Makes a P-256 key and a self-signed certificate for `name`, valid ten years, and writes
/// them as PEM. Returns 1 on success.
static inline int chat_tls_make_self_signed(const char *certificatePath, const char *keyPath, const char *name,
                                            char *error, size_t length) {
    int ok = 0;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *certificate = X509_new();
    FILE *file = NULL;
    if (!key || !certificate) goto done;
    X509_set_version(certificate, 2);
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) goto done;
    serial[0] &= 0x7f;
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
    if (!number) goto done;
    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate));
    BN_free(number);
    X509_gmtime_adj(X509_getm_notBefore(certificate), -3600);
    X509_gmtime_adj(X509_getm_notAfter(certificate), 10L * 365 * 24 * 3600);
    X509_set_pubkey(certificate, key);
    X509_NAME *subject = X509_get_subject_name(certificate);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *)name, -1, -1, 0);
    X509_set_issuer_name(certificate, subject);
    if (X509_NAME_entry_count(subject) != 1 || !X509_sign(certificate, key, EVP_sha256())) goto done;
    file = fopen(keyPath, "w");
    if (!file) { snprintf(error, length, "%s: %s", keyPath, strerror(errno)); goto written; }
    if (!PEM_write_PrivateKey(file, key, NULL, NULL, 0, NULL, NULL)) goto done;
    // A close that fails (a full disk) is a failed write.
    if (fclose(file) != 0) { file = NULL; snprintf(error, length, "%s: %s", keyPath, strerror(errno)); goto written; }
    file = fopen(certificatePath, "w");
    if (!file) { snprintf(error, length, "%s: %s", certificatePath, strerror(errno)); goto written; }
    if (!PEM_write_X509(file, certificate)) goto done;
    int closed = fclose(file);
    file = NULL;
    if (closed != 0) { snprintf(error, length, "%s: %s", certificatePath, strerror(errno)); goto written; }
    ok = 1;
done:
    if (!ok) chat_tls_last_error(error, length);
written:
    if (file) fclose(file);
    X509_free(certificate);
    EVP_PKEY_free(key);
    return ok;
}

/// The first certificate of a PEM file, or NULL (the caller frees it).
static inline X509 *chat_tls_read_certificate(const char *certificatePath) {
    FILE *file = fopen(certificatePath, "r");
    if (!file) return NULL;
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    return certificate;
}

/// The SHA-256 of a PEM certificate file's DER form into `out` (32 bytes). Returns 1 on success.
static inline int chat_tls_file_fingerprint(const char *certificatePath, unsigned char *out) {
    X509 *certificate = chat_tls_read_certificate(certificatePath);
    if (!certificate) return 0;
    unsigned int size = 0;
    int ok = X509_digest(certificate, EVP_sha256(), out, &size) == 1 && size == 32;
    X509_free(certificate);
    return ok;
}

/// Whether a PEM chain file's first certificate verifies against the system's trust store
/// (the rest of the file as intermediates): only then is an STS policy worth advertising.
static inline int chat_tls_file_verifies(const char *certificatePath) {
    FILE *file = fopen(certificatePath, "r");
    if (!file) return 0;
    X509 *leaf = PEM_read_X509(file, NULL, NULL, NULL);
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509 *extra;
    while (leaf && chain && (extra = PEM_read_X509(file, NULL, NULL, NULL)) != NULL) sk_X509_push(chain, extra);
    ERR_clear_error();
    fclose(file);
    int ok = 0;
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (leaf && chain && store && context && X509_STORE_set_default_paths(store) == 1
        && X509_STORE_CTX_init(context, store, leaf, chain) == 1) {
        ok = X509_verify_cert(context) == 1;
    }
    ERR_clear_error();
    X509_STORE_CTX_free(context);
    X509_STORE_free(store);
    sk_X509_pop_free(chain, X509_free);
    X509_free(leaf);
    return ok;
}

/// Whether a PEM certificate file is self-signed (its issuer is its subject).
static inline int chat_tls_file_is_self_signed(const char *certificatePath) {
    X509 *certificate = chat_tls_read_certificate(certificatePath);
    if (!certificate) return 0;
    int same = X509_NAME_cmp(X509_get_subject_name(certificate), X509_get_issuer_name(certificate)) == 0;
    X509_free(certificate);
    return same;
}

/// The SHA-256 of the peer's certificate on a connection (32 bytes). Returns 1 when there is one.
static inline int chat_tls_peer_fingerprint(SSL *ssl, unsigned char *out) {
    X509 *certificate = SSL_get1_peer_certificate(ssl);
    if (!certificate) return 0;
    unsigned int size = 0;
    int ok = X509_digest(certificate, EVP_sha256(), out, &size) == 1 && size == 32;
    X509_free(certificate);
    return ok;
}

static inline long chat_tls_set_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }

/// Whether the chain verified against the trust store and matched the host name checked with
/// SSL_set1_host; otherwise the reason into `out`.
static inline int chat_tls_verified(SSL *ssl, char *out, size_t length) {
    long result = SSL_get_verify_result(ssl);
    if (result == X509_V_OK) return 1;
    snprintf(out, length, "%s", X509_verify_cert_error_string(result));
    return 0;
}

// ---------- P-256 and AES-128-GCM for Web Push (RFC 8291 encryption, RFC 8292 VAPID) ----------
// Keys cross into Swift as bytes only: a private key as its 32-byte scalar, a public key as its
// 65-byte uncompressed point; each call makes the EVP_PKEY it needs and frees it.

/// A key pair from its private scalar (and public point, when known; computed otherwise).
static inline EVP_PKEY *chat_p256_key(const unsigned char *scalar, const unsigned char *point) {
    EVP_PKEY *key = NULL;
    BIGNUM *priv = scalar ? BN_bin2bn(scalar, 32, NULL) : NULL;
    unsigned char computed[65];
    if (scalar && !point) {
        EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
        EC_POINT *pub = group ? EC_POINT_new(group) : NULL;
        int ok = pub && EC_POINT_mul(group, pub, priv, NULL, NULL, NULL) == 1
            && EC_POINT_point2oct(group, pub, POINT_CONVERSION_UNCOMPRESSED, computed, 65, NULL) == 65;
        EC_POINT_free(pub);
        EC_GROUP_free(group);
        if (!ok) { BN_free(priv); return NULL; }
        point = computed;
    }
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (build && context
        && OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1
        && OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, point, 65) == 1
        && (!priv || OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_PRIV_KEY, priv) == 1)
        && (params = OSSL_PARAM_BLD_to_param(build)) != NULL
        && EVP_PKEY_fromdata_init(context) == 1) {
        if (EVP_PKEY_fromdata(context, &key, priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(build);
    EVP_PKEY_CTX_free(context);
    BN_clear_free(priv);
    return key;
}

/// A new key pair: its scalar and point. Returns 1 on success.
static inline int chat_p256_generate(unsigned char *scalar, unsigned char *point) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "prime256v1");
    if (!key) return 0;
    BIGNUM *priv = NULL;
    size_t size = 0;
    int ok = EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &priv) == 1 && BN_bn2binpad(priv, scalar, 32) == 32
        && EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point, 65, &size) == 1 && size == 65;
    BN_clear_free(priv);
    EVP_PKEY_free(key);
    return ok;
}

/// The public point of a private scalar. Returns 1 on success.
static inline int chat_p256_public(const unsigned char *scalar, unsigned char *point) {
    EVP_PKEY *key = chat_p256_key(scalar, NULL);
    size_t size = 0;
    int ok = key && EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point, 65, &size) == 1 && size == 65;
    EVP_PKEY_free(key);
    return ok;
}

/// ECDH: the 32-byte shared secret of our key pair and a peer's point (checked to be on the curve).
static inline int chat_p256_ecdh(const unsigned char *scalar, const unsigned char *point, const unsigned char *peerPoint, unsigned char *secret) {
    EVP_PKEY *mine = chat_p256_key(scalar, point), *peer = chat_p256_key(NULL, peerPoint);
    EVP_PKEY_CTX *context = mine ? EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL) : NULL;
    size_t size = 32;
    int ok = peer && context && EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_derive_set_peer(context, peer) == 1
        && EVP_PKEY_derive(context, secret, &size) == 1 && size == 32;
    EVP_PKEY_CTX_free(context);
    EVP_PKEY_free(mine);
    EVP_PKEY_free(peer);
    return ok;
}

/// ECDSA with SHA-256 (ES256): the signature as JWS wants it, r and s of 32 bytes each.
static inline int chat_p256_sign(const unsigned char *scalar, const unsigned char *message, size_t length, unsigned char *signature) {
    EVP_PKEY *key = chat_p256_key(scalar, NULL);
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    unsigned char der[80];
    size_t size = sizeof der;
    int ok = key && context && EVP_DigestSignInit_ex(context, NULL, "SHA256", NULL, NULL, key, NULL) == 1
        && EVP_DigestSign(context, der, &size, message, length) == 1;
    if (ok) {
        const unsigned char *cursor = der;
        ECDSA_SIG *parsed = d2i_ECDSA_SIG(NULL, &cursor, (long)size);
        ok = parsed && BN_bn2binpad(ECDSA_SIG_get0_r(parsed), signature, 32) == 32 && BN_bn2binpad(ECDSA_SIG_get0_s(parsed), signature + 32, 32) == 32;
        ECDSA_SIG_free(parsed);
    }
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    return ok;
}

/// Checks an ES256 signature (r || s) with a public point. Returns 1 when it verifies.
static inline int chat_p256_verify(const unsigned char *point, const unsigned char *message, size_t length, const unsigned char *signature) {
    EVP_PKEY *key = chat_p256_key(NULL, point);
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    ECDSA_SIG *parsed = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(signature, 32, NULL), *s = BN_bin2bn(signature + 32, 32, NULL);
    unsigned char *der = NULL;
    int ok = 0, size = 0;
    if (key && context && parsed && r && s && ECDSA_SIG_set0(parsed, r, s) == 1) {
        r = s = NULL; // owned by the signature now
        size = i2d_ECDSA_SIG(parsed, &der);
        ok = size > 0 && EVP_DigestVerifyInit_ex(context, NULL, "SHA256", NULL, NULL, key, NULL) == 1
            && EVP_DigestVerify(context, der, (size_t)size, message, length) == 1;
    }
    BN_free(r);
    BN_free(s);
    OPENSSL_free(der);
    ECDSA_SIG_free(parsed);
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    return ok;
}

/// AES-128-GCM: `length` bytes sealed into `out` (length + 16 bytes: the ciphertext, then the tag).
static inline int chat_aes128gcm_seal(const unsigned char *key, const unsigned char *nonce, const unsigned char *in, int length, unsigned char *out) {
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    int written = 0, last = 0;
    int ok = context && EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), NULL, NULL, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1
        && EVP_EncryptInit_ex(context, NULL, NULL, key, nonce) == 1
        && EVP_EncryptUpdate(context, out, &written, in, length) == 1
        && EVP_EncryptFinal_ex(context, out + written, &last) == 1
        && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, out + written + last) == 1;
    EVP_CIPHER_CTX_free(context);
    return ok;
}

// ---------- HTTPS requests from the server (Web Push) ----------

/// A client context that verifies: the system's trust store (SSL_CERT_FILE and SSL_CERT_DIR
/// honoured), TLS 1.2 and later, the peer's chain checked during the handshake.
static inline SSL_CTX *chat_https_context(void) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) return NULL;
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_default_verify_paths(context);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
    return context;
}

/// One request on a connected blocking socket (its timeouts set by the caller): the handshake
/// with `host` checked against the certificate (a name, or an IP address), `request` written
/// whole, then the answer read until its head is complete or `answerLength` - 1 bytes came.
/// Returns the bytes read into `answer` (NUL-terminated), or -1 with the reason in `error`.
static inline int chat_https_exchange(SSL_CTX *context, int fd, const char *host, int hostIsAddress,
                                      const unsigned char *request, size_t length, char *answer, size_t answerLength,
                                      char *error, size_t errorLength) {
    SSL *ssl = SSL_new(context);
    if (!ssl) { chat_tls_last_error(error, errorLength); return -1; }
    int ok = SSL_set_fd(ssl, fd) == 1;
    if (ok && hostIsAddress) ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
    if (ok && !hostIsAddress) ok = SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1;
    if (!ok || SSL_connect(ssl) != 1) {
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK) snprintf(error, errorLength, "certificate not trusted: %s", X509_verify_cert_error_string(verify));
        else chat_tls_last_error(error, errorLength);
        SSL_free(ssl);
        return -1;
    }
    size_t sent = 0;
    while (sent < length) {
        int n = SSL_write(ssl, request + sent, (int)(length - sent));
        if (n <= 0) { chat_tls_last_error(error, errorLength); SSL_free(ssl); return -1; }
        sent += (size_t)n;
    }
    size_t got = 0;
    while (got + 1 < answerLength) {
        int n = SSL_read(ssl, answer + got, (int)(answerLength - 1 - got));
        if (n <= 0) break;
        got += (size_t)n;
        answer[got] = 0;
        if (strstr(answer, "\r\n\r\n")) break;
    }
    answer[got] = 0;
    SSL_shutdown(ssl);
    SSL_free(ssl);
    if (got == 0) { snprintf(error, errorLength, "no answer"); return -1; }
    return (int)got;
}

#endif
