// Thin shims over OpenSSL 3 for what Swift cannot call directly: function-like macros,
// and a socket BIO whose writes never raise SIGPIPE (send with MSG_NOSIGNAL).
#ifndef ASYNCHTTP_COPENSSL_SHIM_H
#define ASYNCHTTP_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdint.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* macOS: the socket carries SO_NOSIGPIPE instead */
#endif

static inline long ahttp_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long ahttp_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long ahttp_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long ahttp_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long ahttp_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options) {
    return (long)SSL_CTX_set_options(ctx, options);
}
static inline int ahttp_SSL_session_reused(const SSL *ssl) {
    return (int)SSL_session_reused(ssl);
}
// Read-ahead: one recv fetches as much as the socket holds (up to the read buffer) instead of a record
// header and then its body, two recvfrom calls per record. Buffered bytes are seen by SSL_has_pending.
static inline long ahttp_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}
static inline int ahttp_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int ahttp_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
static inline int ahttp_TLS1_VERSION(void) { return TLS1_VERSION; }
static inline int ahttp_TLS1_1_VERSION(void) { return TLS1_1_VERSION; }
static inline long ahttp_SSL_MODE_defaults(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
}
static inline long ahttp_SSL_SESS_CACHE_client_external(void) {
    return SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE;
}
static inline uint64_t ahttp_SSL_OP_defaults(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
}
static inline int ahttp_SSL_get_ex_new_index(void) {
    return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

// ---- A socket BIO that uses send/recv with MSG_NOSIGNAL -----------------------------------
// OpenSSL's own socket BIO calls write(2), which raises SIGPIPE on a peer that has gone.
// The descriptor lives in the BIO's data pointer; the BIO never closes it (the socket owns it).

// The BIO's data word: the descriptor in its low 32 bits and, on 64-bit systems, bit 32 set when the last recv
// left the socket empty (it returned less than asked, or EAGAIN). The reuse check of an idle connection reads
// that bit (ahttp_SSL_socket_drained) to know whether the event loop's view of the socket is enough.
#if UINTPTR_MAX > 0xffffffffu
#define AHTTP_BIO_DRAINED ((uintptr_t)1 << 32)
#else
#define AHTTP_BIO_DRAINED ((uintptr_t)0)
#endif

static inline int ahttp_bio_fd(BIO *bio) {
    return (int)(uint32_t)((uintptr_t)BIO_get_data(bio) & 0xffffffffu);
}

static inline int ahttp_bio_write(BIO *bio, const char *data, int length) {
    int fd = ahttp_bio_fd(bio);
    BIO_clear_retry_flags(bio);
    ssize_t n = send(fd, data, (size_t)length, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        BIO_set_retry_write(bio);
    }
    return (int)n;
}

static inline int ahttp_bio_read(BIO *bio, char *data, int length) {
    int fd = ahttp_bio_fd(bio);
    BIO_clear_retry_flags(bio);
    ssize_t n = recv(fd, data, (size_t)length, 0);
    int drained = n > 0 && n < (ssize_t)length;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        BIO_set_retry_read(bio);
        drained = errno != EINTR;
    }
    uintptr_t word = (uintptr_t)(uint32_t)fd | (drained ? AHTTP_BIO_DRAINED : 0);
    BIO_set_data(bio, (void *)word);
    return (int)n;
}

// Whether the last recv of `ssl`'s socket BIO left the socket empty (always 0 on 32-bit systems).
static inline int ahttp_SSL_socket_drained(const SSL *ssl) {
    BIO *bio = SSL_get_rbio(ssl);
    if (bio == NULL) { return 0; }
    return ((uintptr_t)BIO_get_data(bio) & AHTTP_BIO_DRAINED) != 0;
}

static inline long ahttp_bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
    (void)bio; (void)num; (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    default:
        return 0;
    }
}

static inline int ahttp_bio_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

static inline BIO_METHOD *ahttp_bio_method_new(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                      "asynchttp socket");
    if (method == NULL) { return NULL; }
    BIO_meth_set_write(method, ahttp_bio_write);
    BIO_meth_set_read(method, ahttp_bio_read);
    BIO_meth_set_ctrl(method, ahttp_bio_ctrl);
    BIO_meth_set_create(method, ahttp_bio_create);
    return method;
}

static inline BIO *ahttp_bio_new_socket(BIO_METHOD *method, int fd) {
    BIO *bio = BIO_new(method);
    if (bio != NULL) { BIO_set_data(bio, (void *)(uintptr_t)(uint32_t)fd); }
    return bio;
}

// ---- A BIO over another TLS connection: the TLS inside a CONNECT tunnel through an HTTPS proxy ---------------
// The outer connection's SSL lives in the BIO's data pointer; the BIO never frees it (the outer stream owns it and
// outlives the inner one). Each read and write is one SSL_read or SSL_write on the outer connection, whose own
// WANT_READ / WANT_WRITE become this BIO's retry flags, so the inner connection's SSL_get_error reports the wait
// the socket underneath needs. The outer connection's EOF (its close_notify, or a TCP close) is this BIO's EOF.
// The socket BIO's "drained" bit is not used here: the stream asks the outer connection instead.

static inline int ahttp_layered_bio_retry(BIO *bio, SSL *outer, int result) {
    switch (SSL_get_error(outer, result)) {
    case SSL_ERROR_WANT_READ:
        BIO_set_retry_read(bio);
        return -1;
    case SSL_ERROR_WANT_WRITE:
        BIO_set_retry_write(bio);
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        return -1;
    }
}

static inline int ahttp_layered_bio_write(BIO *bio, const char *data, int length) {
    SSL *outer = (SSL *)BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (length <= 0) { return 0; }
    int n = SSL_write(outer, data, length);
    return n > 0 ? n : ahttp_layered_bio_retry(bio, outer, n);
}

static inline int ahttp_layered_bio_read(BIO *bio, char *data, int length) {
    SSL *outer = (SSL *)BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (length <= 0) { return 0; }
    int n = SSL_read(outer, data, length);
    return n > 0 ? n : ahttp_layered_bio_retry(bio, outer, n);
}

static inline BIO_METHOD *ahttp_layered_bio_method_new(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "asynchttp tls-in-tls");
    if (method == NULL) { return NULL; }
    BIO_meth_set_write(method, ahttp_layered_bio_write);
    BIO_meth_set_read(method, ahttp_layered_bio_read);
    BIO_meth_set_ctrl(method, ahttp_bio_ctrl);
    BIO_meth_set_create(method, ahttp_bio_create);
    return method;
}

// An inner connection's records at most this much plaintext, so that each one, with its header and tag, fits one
// record of the outer connection instead of a full one and a 22-byte one.
static inline long ahttp_SSL_set_inner_max_send_fragment(SSL *ssl) {
    return SSL_set_max_send_fragment(ssl, 16384 - 256);
}

static inline BIO *ahttp_bio_new_layered(BIO_METHOD *method, SSL *outer) {
    BIO *bio = BIO_new(method);
    if (bio != NULL) { BIO_set_data(bio, outer); }
    return bio;
}

#endif
