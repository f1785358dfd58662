import Foundation

/// Runs the `ahttp` executable as a user would. `swift test` builds every product next to the test bundle.
/// `environment` is added to (and overrides) the test process's own; every proxy variable is cleared first
/// so that a proxy set on the machine cannot change what a test sees. `input`, when given, is the tool's
/// standard input (for `-b -`, `-w @-`, `-d @-`).
func runAhttp(
    _ arguments: [String], environment: [String: String] = [:], input: String? = nil
) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = ahttpExecutable()
    process.arguments = arguments
    var variables = ProcessInfo.processInfo.environment
    for name in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
        variables[name] = nil
        variables[name.uppercased()] = nil
    }
    variables.merge(environment) { _, new in new }
    process.environment = variables
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let inPipe = input.map { _ in Pipe() }
    if let inPipe { process.standardInput = inPipe }
    try process.run()
    if let inPipe, let input {
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try inPipe.fileHandleForWriting.close()
    }
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

/// The `ahttp` that `swift test` built beside the test bundle.
func ahttpExecutable() -> URL {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let tool = directory.appendingPathComponent("ahttp")
    if FileManager.default.fileExists(atPath: tool.path) { return tool }
    return directory.deletingLastPathComponent().appendingPathComponent("ahttp")
}
