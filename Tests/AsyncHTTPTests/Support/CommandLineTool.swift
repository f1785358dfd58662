import Foundation

/// Runs the `ahttp` executable as a user would. `swift test` builds every product next to the test bundle.
func runAhttp(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var tool = directory.appendingPathComponent("ahttp")
    if !FileManager.default.fileExists(atPath: tool.path) {
        tool = directory.deletingLastPathComponent().appendingPathComponent("ahttp")
    }
    let process = Process()
    process.executableURL = tool
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}
