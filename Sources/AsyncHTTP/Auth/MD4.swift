// MD4 (RFC 1320), in Swift.
//
// NTLM's NT hash is MD4 of the UTF-16LE password (MS-NLMP §3.3.1, NTOWFv1, which NTOWFv2 builds on).
// OpenSSL 3 moved MD4 to its legacy provider, which is not loaded by default and is often not installed,
// so we cannot ask OpenSSL for it (curl and Chromium carry their own MD4 for the same reason).
// MD4 is broken as a general-purpose hash; it is here only because the protocol demands it.

/// The MD4 message digest (RFC 1320). Only for NTLM.
enum MD4 {
    /// The 16-byte MD4 digest of `message`.
    static func hash(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { hash($0) }
    }

    /// The 16-byte MD4 digest of `message`.
    static func hash(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        // §3.3: A, B, C, D start as these little-endian words.
        var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476)

        // Whole 64-byte blocks straight from the input.
        let wholeBlocks = message.count / 64
        for block in 0..<wholeBlocks {
            compress(&state, UnsafeRawBufferPointer(rebasing: message[(block * 64)..<(block * 64 + 64)]))
        }

        // §3.1-3.2: the rest, then 0x80, zeros to 56 mod 64, and the bit length as a little-endian UInt64.
        var tail = Array(message[(wholeBlocks * 64)...])
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        let bitLength = UInt64(message.count) &* 8
        for shift in stride(from: 0, to: 64, by: 8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { tailBytes in
            for offset in stride(from: 0, to: tailBytes.count, by: 64) {
                compress(&state, UnsafeRawBufferPointer(rebasing: tailBytes[offset..<(offset + 64)]))
            }
        }

        // §3.5: output A, B, C, D, each little-endian.
        var digest: [UInt8] = []
        digest.reserveCapacity(16)
        for word in [state.0, state.1, state.2, state.3] {
            for shift in stride(from: 0, to: 32, by: 8) {
                digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift)))
            }
        }
        return digest
    }

    /// §3.4: processes one 16-word block.
    private static func compress(_ state: inout (UInt32, UInt32, UInt32, UInt32), _ block: UnsafeRawBufferPointer) {
        var x = [UInt32](repeating: 0, count: 16)
        for i in 0..<16 {
            x[i] = UInt32(block[i * 4]) | UInt32(block[i * 4 + 1]) << 8 | UInt32(block[i * 4 + 2]) << 16
                | UInt32(block[i * 4 + 3]) << 24
        }
        var (a, b, c, d) = state

        @inline(__always) func rotl(_ v: UInt32, _ s: UInt32) -> UInt32 { v << s | v >> (32 - s) }
        @inline(__always) func f(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { x & y | ~x & z }
        @inline(__always) func g(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { x & y | x & z | y & z }
        @inline(__always) func h(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { x ^ y ^ z }

        // Round 1: [abcd k s] a = (a + F(b,c,d) + X[k]) <<< s.
        for i in stride(from: 0, to: 16, by: 4) {
            a = rotl(a &+ f(b, c, d) &+ x[i], 3)
            d = rotl(d &+ f(a, b, c) &+ x[i + 1], 7)
            c = rotl(c &+ f(d, a, b) &+ x[i + 2], 11)
            b = rotl(b &+ f(c, d, a) &+ x[i + 3], 19)
        }
        // Round 2: a = (a + G(b,c,d) + X[k] + 5A827999) <<< s, k running down the columns.
        for i in 0..<4 {
            a = rotl(a &+ g(b, c, d) &+ x[i] &+ 0x5A82_7999, 3)
            d = rotl(d &+ g(a, b, c) &+ x[i + 4] &+ 0x5A82_7999, 5)
            c = rotl(c &+ g(d, a, b) &+ x[i + 8] &+ 0x5A82_7999, 9)
            b = rotl(b &+ g(c, d, a) &+ x[i + 12] &+ 0x5A82_7999, 13)
        }
        // Round 3: a = (a + H(b,c,d) + X[k] + 6ED9EBA1) <<< s, k in bit-reversed order 0 8 4 12, 2 10 6 14, ...
        for i in [0, 2, 1, 3] {
            a = rotl(a &+ h(b, c, d) &+ x[i] &+ 0x6ED9_EBA1, 3)
            d = rotl(d &+ h(a, b, c) &+ x[i + 8] &+ 0x6ED9_EBA1, 9)
            c = rotl(c &+ h(d, a, b) &+ x[i + 4] &+ 0x6ED9_EBA1, 11)
            b = rotl(b &+ h(c, d, a) &+ x[i + 12] &+ 0x6ED9_EBA1, 15)
        }

        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}
