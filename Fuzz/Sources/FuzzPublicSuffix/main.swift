// libFuzzer target: the Public Suffix List lookup (docs/fuzzing.md).
// Input: a host name (UTF-8).
// Checks, with the compiled-in list:
// - a registrable domain implies a public suffix; it ends with "." + that suffix and has exactly one more
//   label; the suffix of the registrable domain is the host's suffix, and its registrable domain itself;
// - isPublicSuffix(host) holds exactly when the host has a suffix but no registrable domain;
// - the public suffix is a label-aligned suffix of the host (lowercased) when the host is ASCII.
@testable import AsyncHTTP
import FuzzSupport

nonisolated(unsafe) let list = PublicSuffixList.shared

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPublicSuffix(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let host = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    // Fuzz/findings/psl-dot-with-combining-mark.txt (a "." followed by a combining mark) is fixed: such a host is
    // now invalid (nil, nil, false), which the checks below accept, so it is no longer skipped.
    let suffix = list.publicSuffix(of: host)
    let registrable = list.registrableDomain(of: host)
    let isSuffix = list.isPublicSuffix(host)

    fuzzCheck(isSuffix == (suffix != nil && registrable == nil), "isPublicSuffix(\(host.debugDescription))=\(isSuffix) with suffix \(String(describing: suffix)), registrable \(String(describing: registrable))")
    if let registrable {
        guard let suffix else {
            fuzzCheck(false, "registrable domain \(registrable.debugDescription) without a public suffix for \(host.debugDescription)")
            return 0
        }
        fuzzCheck(registrable.hasSuffix("." + suffix), "\(registrable.debugDescription) does not end with .\(suffix) (host \(host.debugDescription))")
        let labels = registrable.split(separator: ".", omittingEmptySubsequences: false).count
        let suffixLabels = suffix.split(separator: ".", omittingEmptySubsequences: false).count
        fuzzCheck(labels == suffixLabels + 1, "\(registrable.debugDescription) has \(labels) labels, suffix \(suffix.debugDescription) \(suffixLabels) (host \(host.debugDescription))")
        fuzzCheck(list.publicSuffix(of: registrable) == suffix, "suffix of \(registrable.debugDescription) is \(String(describing: list.publicSuffix(of: registrable))), of the host \(suffix.debugDescription)")
        fuzzCheck(list.registrableDomain(of: registrable) == registrable, "registrable domain of \(registrable.debugDescription) is \(String(describing: list.registrableDomain(of: registrable)))")
    }
    if let suffix, host.utf8.allSatisfy({ $0 < 0x80 }) {
        let lowered = host.lowercased()
        fuzzCheck(lowered == suffix || lowered.hasSuffix("." + suffix), "suffix \(suffix.debugDescription) is not a label suffix of \(host.debugDescription)")
    }
    return 0
}

runLibFuzzer(fuzzPublicSuffix)
