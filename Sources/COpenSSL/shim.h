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

#endif
