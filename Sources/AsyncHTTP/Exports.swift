// Users write `import AsyncHTTP` and nothing else: the layers below are re-exported. Their public API is the
// library's (HTTPClientError, HTTPURL, HTTPVersion, TLSConfiguration); everything else there is `package`.
@_exported import AsyncHTTP1
@_exported import AsyncHTTPCore
