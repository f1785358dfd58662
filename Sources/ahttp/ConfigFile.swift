// -K / --config: curl's config file, spliced into the command line before ArgumentParser reads it.
//
// curl's grammar (curl(1), "-K, --config"): one option per line; leading white space ignored; a line whose first
// non-blank character is '#' is a comment; the option name may be given without its dashes (`silent`, `output`),
// a short option keeps its dash (`-s`); the name and its value are separated by white space, '=' or ':'
// (`url = "http://…"`); a value in double quotes may hold spaces and the escapes \\ \" \t \n \r \v; an unquoted
// value ends at the first white space. `-K -` reads standard input. A config file may name another (curl allows
// that too); more than 10 levels is an error, so a file naming itself cannot loop.

/// The arguments with every `-K FILE`, `-KFILE`, `--config FILE` and `--config=FILE` replaced by the options
/// in FILE. Arguments after `--` are left alone. `read` returns a file's bytes (injected for tests).
func expandConfigFiles(_ arguments: [String], depth: Int = 0,
                       read: (String) throws -> [UInt8] = readConfigFile) throws -> [String] {
    guard depth <= 10 else { throw UsageError(message: "-K: config files nested more than 10 deep") }
    var result: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if argument == "--" {
            result += arguments[(index - 1)...]
            break
        }
        let path: String
        if argument == "-K" || argument == "--config" {
            guard index < arguments.count else { throw UsageError(message: "option \(argument): requires a value") }
            path = arguments[index]
            index += 1
        } else if argument.hasPrefix("--config=") {
            path = String(argument.dropFirst("--config=".count))
        } else if argument.hasPrefix("-K"), !argument.hasPrefix("--") {
            path = String(argument.dropFirst(2))
        } else {
            result.append(argument)
            continue
        }
        let text = String(decoding: try read(path), as: UTF8.self)
        result += try expandConfigFiles(try parseConfigFile(text, name: path), depth: depth + 1, read: read)
    }
    return result
}

func readConfigFile(_ path: String) throws -> [UInt8] {
    do {
        return try readFile(path == "-" ? "/dev/stdin" : path)
    } catch let error as UsageError {
        throw UsageError(message: "-K: \(error.message)", exitCode: 26)  // CURLE_READ_ERROR
    }
}

/// The command-line arguments a config file's text stands for: `url = "http://x"` → `--url`, `http://x`;
/// `silent` → `--silent`; `-o out` → `-o`, `out`.
func parseConfigFile(_ text: String, name: String) throws -> [String] {
    var arguments: [String] = []
    // "\r\n" is one Character in Swift, which a split on "\n" does not see: a file with CRLF line ends (written
    // on Windows) would be one line.
    let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    for (number, rawLine) in lines.enumerated() {
        var line = rawLine.drop { $0 == " " || $0 == "\t" }
        if line.hasSuffix("\r") { line = line.dropLast() }
        guard !line.isEmpty, !line.hasPrefix("#") else { continue }
        // The option: up to white space, '=' or ':'.
        let nameEnd = line.firstIndex { $0 == " " || $0 == "\t" || $0 == "=" || $0 == ":" } ?? line.endIndex
        let option = String(line[..<nameEnd])
        var rest = line[nameEnd...].drop { $0 == " " || $0 == "\t" }
        if let first = rest.first, first == "=" || first == ":" {
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        }
        arguments.append(option.hasPrefix("-") ? option : "--" + option)
        guard !rest.isEmpty else { continue }
        if rest.first == "\"" {
            arguments.append(try unquote(rest.dropFirst(), file: name, line: number + 1))
        } else {
            let end = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
            arguments.append(String(rest[..<end]))
        }
    }
    return arguments
}

/// A quoted config value after its opening quote, to the closing quote, with curl's escapes.
private func unquote(_ text: Substring, file: String, line: Int) throws -> String {
    var value = ""
    var iterator = text.makeIterator()
    while let character = iterator.next() {
        switch character {
        case "\"":
            return value
        case "\\":
            guard let escaped = iterator.next() else { break }
            switch escaped {
            case "t": value.append("\t")
            case "n": value.append("\n")
            case "r": value.append("\r")
            case "v": value.append("\u{0B}")
            default: value.append(escaped)  // \\ and \" and any other: the character itself, as curl
            }
        default:
            value.append(character)
        }
    }
    throw UsageError(message: "-K \(file): line \(line): a quoted value has no closing quote")
}
