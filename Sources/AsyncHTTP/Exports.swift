// Users write `import AsyncHTTP` and nothing else: the layers below are re-exported. Their public API is the
// library's (HTTPClientError, HTTPURL, HTTPVersion, TLSConfiguration); everything else there is `package`.
@_exported import AsyncHTTP1
@_exported import AsyncHTTPCore
// HTTPTypes too: the public API speaks its `HTTPFields`, `HTTPField`, `HTTPRequest.Method` and `HTTPResponse.Status`,
// and a user who writes `request.headers[.contentType]` should not need a second import (nor a package
// dependency of their own) for it.
@_exported import HTTPTypes
// swift-log too: `HTTPClient.Configuration.logger` is a `Logger`, and setting your own should not need a second
// import (with MemberImportVisibility, not even calling `configuration.logger.info(…)` works without one).
@_exported import Logging
