import CZlib
import HTTPTypes

/// One stored response as the cache keeps it on disk: the head (``CachedResponseHead``) and the body,
/// inline for small bodies or in a body file of its own beside it.
///
/// The format, little-endian, is `"AHC1"`, the payload's length (u32), the payload, and the payload's CRC-32:
/// a torn, truncated or damaged file fails the check and is discarded, never served. A body file's length
/// and CRC-32 are in the payload; its length is checked before serving and its CRC as it streams.
struct CacheEntryRecord: Sendable, Equatable {
    enum Body: Sendable, Equatable {
        case inline([UInt8])
        /// `name` is the body file's name in the same directory, always of the form ``isBodyFileName(_:key:)``
        /// accepts.
        case file(name: String, length: Int, crc: UInt32)
    }

    var head: CachedResponseHead
    var body: Body

    static let magic: [UInt8] = Array("AHC1".utf8)
    /// The largest head file accepted when reading: an inline body is at most ``HTTPCache/inlineBodyLimit``,
    /// and a response head at most a few hundred KiB.
    static let maxEncodedSize = 4 << 20

    var bodyLength: Int {
        switch body {
        case .inline(let bytes): bytes.count
        case .file(_, let length, _): length
        }
    }

    func encode() -> [UInt8] {
        var payload = Writer()
        payload.string(head.key)
        payload.double(head.requestTime)
        payload.double(head.responseTime)
        payload.double(head.secondsToCache ?? -1)
        payload.u8(head.ignoresServerDirectives ? 1 : 0)
        payload.u32(UInt32(head.status))
        payload.string(head.reasonPhrase)
        payload.u8(UInt8(clamping: head.version.major))
        payload.u8(UInt8(clamping: head.version.minor))
        payload.u32(UInt32(head.headers.count))
        for field in head.headers {
            payload.string(field.name.rawName)
            payload.string(field.value)
        }
        payload.u32(UInt32(head.vary.count))
        for value in head.vary {
            payload.string(value.name)
            if let digest = value.digest {
                payload.u8(1)
                payload.bytes(digest)
            } else {
                payload.u8(0)
            }
        }
        switch body {
        case .inline(let bytes):
            payload.u8(0)
            payload.bytes(bytes)
        case .file(let name, let length, let crc):
            payload.u8(1)
            payload.string(name)
            payload.u64(UInt64(length))
            payload.u32(crc)
        }
        var out = Writer()
        out.raw(Self.magic)
        out.u32(UInt32(payload.data.count))
        out.raw(payload.data)
        out.u32(CRC32.checksum(payload.data[...]))
        return out.data
    }

    /// The record, or nil if the bytes are not a whole, intact record.
    static func decode(_ data: [UInt8]) -> CacheEntryRecord? {
        var reader = Reader(data: data[...])
        guard let magic = reader.raw(4), Array(magic) == Self.magic, let length = reader.u32(),
              let payload = reader.raw(Int(length)), let crc = reader.u32(), reader.isAtEnd,
              CRC32.checksum(payload) == crc
        else { return nil }
        var p = Reader(data: payload)
        guard let key = p.string(), let requestTime = p.double(), let responseTime = p.double(),
              let secondsToCache = p.double(), let ignores = p.u8(), let status = p.u32(), let reason = p.string(),
              let major = p.u8(), let minor = p.u8(), let headerCount = p.u32()
        else { return nil }
        var headers = HTTPFields()
        for _ in 0..<headerCount {
            guard let name = p.string(), let value = p.string(), let fieldName = HTTPField.Name(name) else { return nil }
            headers.append(HTTPField(name: fieldName, value: value))
        }
        guard let varyCount = p.u32() else { return nil }
        var vary: [CacheRules.VaryValue] = []
        for _ in 0..<varyCount {
            guard let name = p.string(), let present = p.u8() else { return nil }
            if present == 1 {
                guard let digest = p.bytes() else { return nil }
                vary.append(.init(name: name, digest: digest))
            } else {
                vary.append(.init(name: name, digest: nil))
            }
        }
        guard let kind = p.u8() else { return nil }
        let body: Body
        if kind == 0 {
            guard let bytes = p.bytes() else { return nil }
            body = .inline(bytes)
        } else {
            // The name is joined to the cache directory to serve, evict and remove the entry: one with a `/` or `..`
            // (a damaged or planted head) would have a file outside the cache opened or unlinked.
            guard let name = p.string(), let length = p.u64(), let crc = p.u32(), length <= UInt64(Int.max),
                  isBodyFileName(name, key: key) else {
                return nil
            }
            body = .file(name: name, length: Int(length), crc: crc)
        }
        guard p.isAtEnd, (100...999).contains(status) else { return nil }
        let head = CachedResponseHead(
            key: key, status: Int(status), reasonPhrase: reason, version: HTTPVersion(major: Int(major), minor: Int(minor)),
            headers: headers, requestTime: requestTime, responseTime: responseTime,
            secondsToCache: secondsToCache < 0 ? nil : secondsToCache, ignoresServerDirectives: ignores == 1, vary: vary)
        return CacheEntryRecord(head: head, body: body)
    }

    /// Whether `name` is one ``HTTPCache`` gives the body file of `key`'s entry: `HASH.RANDOM.body`, the
    /// entry's hash (``HTTPCache/hash(_:)``, 32 lowercase hex digits) and 16 random ones. Nothing else is a
    /// body file of this entry, and such a name is never a path.
    static func isBodyFileName(_ name: String, key: String) -> Bool {
        let parts = name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].elementsEqual("body".utf8), parts[1].count == 2 * bodyNameRandomBytes,
              parts[1].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
        else { return false }
        return parts[0].elementsEqual(HTTPCache.hash(key).utf8)
    }

    /// The random bytes in a body file's name (``isBodyFileName(_:key:)``), two hex digits each.
    static let bodyNameRandomBytes = 8

    private struct Writer {
        var data: [UInt8] = []
        mutating func raw(_ bytes: [UInt8]) { data.append(contentsOf: bytes) }
        mutating func u8(_ value: UInt8) { data.append(value) }
        mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        mutating func double(_ value: Double) { u64(value.bitPattern) }
        mutating func bytes(_ value: [UInt8]) {
            u32(UInt32(value.count))
            data.append(contentsOf: value)
        }
        mutating func string(_ value: String) { bytes(Array(value.utf8)) }
    }

    private struct Reader {
        var data: ArraySlice<UInt8>
        var isAtEnd: Bool { data.isEmpty }
        mutating func raw(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, data.count >= count else { return nil }
            defer { data = data.dropFirst(count) }
            return data.prefix(count)
        }
        mutating func u8() -> UInt8? { raw(1).map { $0[$0.startIndex] } }
        mutating func u32() -> UInt32? {
            raw(4).map { $0.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        }
        mutating func u64() -> UInt64? {
            raw(8).map { $0.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        }
        mutating func double() -> Double? { u64().map(Double.init(bitPattern:)) }
        mutating func bytes() -> [UInt8]? {
            guard let count = u32(), let bytes = raw(Int(count)) else { return nil }
            return Array(bytes)
        }
        mutating func string() -> String? {
            guard let bytes = bytes() else { return nil }
            return String(validating: bytes, as: UTF8.self)
        }
    }
}

/// CRC-32 (zlib's, the gzip checksum), to tell a damaged cache file from a good one.
enum CRC32 {
    static func checksum(_ bytes: ArraySlice<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return crc }
            return UInt32(crc32(uLong(crc), base.assumingMemoryBound(to: Bytef.self), uInt(raw.count)))
        }
    }
}
