// libFuzzer target: WWW-Authenticate / Proxy-Authenticate parsing (RFC 9110 §11.6.1, §11.7.1) (docs/fuzzing.md).
// Input: field values separated by 0x00 (each one field line).
// Checks:
// - every challenge has a non-empty, lowercased token as its scheme; parameter names are lowercased tokens;
//   a challenge has a token68 or parameters, never both;
// - parsing the lines together equals parsing each line alone, concatenated (a challenge never continues
//   into the next line);
// - every parameter value that canBeQuoted survives quoted(): `scheme k=<quoted(v)>` parses to v.
@testable import AsyncHTTP
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAuthChallenge(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let lines = fuzzStrings(bytes, maxParts: 4)
    let challenges = AuthChallenge.parse(lines)
    let separately = lines.flatMap { AuthChallenge.parse([$0]) }
    fuzzCheck(challenges == separately, "lines together \(challenges) vs separately \(separately)")

    for challenge in challenges {
        fuzzCheck(!challenge.scheme.isEmpty, "empty scheme in \(challenge)")
        fuzzCheck(challenge.scheme.utf8.allSatisfy(AuthChallenge.isTokenCharacter), "scheme '\(challenge.scheme)' not a token")
        fuzzCheck(challenge.scheme == challenge.scheme.lowercased(), "scheme '\(challenge.scheme)' not lowercased")
        fuzzCheck(challenge.token68 == nil || challenge.parameters.isEmpty, "token68 and parameters in \(challenge)")
        for (name, value) in challenge.parameters {
            fuzzCheck(!name.isEmpty && name.utf8.allSatisfy(AuthChallenge.isTokenCharacter), "parameter name '\(name)'")
            fuzzCheck(name == name.lowercased(), "parameter name '\(name)' not lowercased")
            if AuthChallenge.canBeQuoted(value) {
                let line = challenge.scheme + " k=" + AuthChallenge.quoted(value)
                let again = AuthChallenge.parse([line])
                fuzzCheck(again.count == 1 && again[0].parameters["k"] == value, "quoted round trip of '\(value)': '\(line)' → \(again)")
            }
        }
    }
    return 0
}

runLibFuzzer(fuzzAuthChallenge)
