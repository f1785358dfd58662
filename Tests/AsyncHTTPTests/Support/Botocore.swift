import Foundation

/// Runs scripts/peers/botocore_sign.py with the Python of moto's virtualenv (botocore, PyPI): the independent
/// SigV4 signer. `specs` is the JSON list the script reads; returns its JSON list of results.
func botocoreSign(_ specs: [[String: Any]]) throws -> [[String: Any]] {
    let python = try Peers.motoPython()
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/peers/botocore_sign.py")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [script.path]
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: specs))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let stderr = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let results = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
    else {
        throw PeerError("botocore_sign.py failed (\(process.terminationStatus)): \(String(decoding: stderr, as: UTF8.self))")
    }
    return results
}
