// -K / --config: curl's config file, spliced into the command line before ArgumentParser reads it.
//
// curl's grammar (curl(1), "-K, --config"): one option per line; leading white space ignored; a line whose first
// non-blank character is '#' is a comment; the option name may be given without its dashes (`silent`, `output`),
// a short option keeps its dash (`-s`); the name and its value are separated by white space, '=' or ':'
// (`url = "http://…"`); a value in double quotes may hold spaces and the escapes \\ \" \t \n \r \v; an unquoted
// value ends at the first white space. `-K -` reads standard input. A config file may name another (curl allows
// that too); more than 10 levels is an error, so a file naming itself cannot loop.
//
// A line curl cannot use is a warning and is passed over, as in curl 7.88 (tool_parsecfg.c), not the end of the
// command: an unknown option (`'bogus' is unknown`), an option that takes a value without one (`'output' requires
// parameter`); a value after an option that takes none is dropped (`'silent' had unsupported trailing garbage`,
// the option still applies). Which options take a value is ArgumentParser's to say (`configOptionKind`). Text
// after an unquoted value is ignored with curl's warning about unquoted white space, unless it starts with '#'.
// Warnings are written as curl writes them (wrapped at 79 columns), except after -s (on the command line before
// the -K, or in the file before the line).

/// The arguments with every `-K FILE`, `-KFILE`, `--config FILE` and `--config=FILE` replaced by the options
/// in FILE. Arguments after `--` are left alone. `read` returns a file's bytes (injected for tests).
func expandConfigFiles(_ arguments: [String], depth: Int = 0, muted: Bool = false,
                       read: (String) throws -> [UInt8] = readConfigFile,
                       warn: (String) -> Void = writeCurlWarning) throws -> [String] {
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
        let silent = silenced(by: result, muted)
        result += try expandConfigFiles(try parseConfigFile(text, name: path, muted: silent, warn: warn), depth: depth + 1,
                                        muted: silent, read: read, warn: warn)
    }
    return result
}

/// Whether -s is in force after `arguments` (curl mutes its warnings from there on): the last of `-s`, `--silent`,
/// a group of short flags with an `s` before any option that takes a value, and `--no-silent`.
func silenced(by arguments: [String], _ initially: Bool) -> Bool {
    var silent = initially
    for argument in arguments {
        if argument == "--silent" {
            silent = true
        } else if argument == "--no-silent" {
            silent = false
        } else if argument.hasPrefix("-"), !argument.hasPrefix("--"), argument.count > 1 {
            for letter in argument.dropFirst() {
                if letter == "s" { silent = true; break }
                guard configOptionKind("-" + String(letter)) == .flag else { break }
            }
        }
    }
    return silent
}

/// What an option is to ArgumentParser (Arguments.swift): one that takes no value, one that takes one, or unknown.
enum ConfigOptionKind { case flag, value, unknown }

/// Asks ArgumentParser, which knows every option: a flag leaves the next argument a URL; an option with a value
/// takes it; an unknown one is refused. Only for config files, where one line at a time is read.
func configOptionKind(_ option: String) -> ConfigOptionKind {
    let probe = "ahttp-config-probe"
    do {
        let command = try AhttpCommand.parse([option, probe])
        return command.urls.contains { $0.text == probe } ? .flag : .value
    } catch {
        if AhttpCommand.exitCode(for: error) == .success { return .flag }  // --help, --version
        return AhttpCommand.message(for: error).hasPrefix("Unknown option") ? .unknown : .value
    }
}

/// `text` on standard error as curl's warnf writes it: "Warning: " before each line, lines cut at the last space
/// that keeps them within 79 columns.
func writeCurlWarning(_ text: String) {
    try? writeAll(2, Array(curlWarningLines(text).utf8)[...])
}

/// curl's voutf (tool_msgs.c): the message and its newline in pieces of at most 70 bytes, each cut after a space.
func curlWarningLines(_ text: String) -> String {
    let prefix = Array("Warning: ".utf8)
    let width = 79 - prefix.count
    var rest = Array((text + "\n").utf8)[...]
    var output: [UInt8] = []
    while !rest.isEmpty {
        output += prefix
        if rest.count > width {
            var cut = width - 1
            while cut > 0, rest[rest.startIndex + cut] != UInt8(ascii: " "), rest[rest.startIndex + cut] != UInt8(ascii: "\t") { cut -= 1 }
            if cut == 0 { cut = width - 1 }
            output += rest.prefix(cut + 1)
            output.append(UInt8(ascii: "\n"))
            rest = rest.dropFirst(cut + 1)
        } else {
            output += rest
            rest = []
        }
    }
    return String(decoding: output, as: UTF8.self)
}

func readConfigFile(_ path: String) throws -> [UInt8] {
    do {
        return try readFile(path == "-" ? "/dev/stdin" : path)
    } catch let error as UsageError {
        throw UsageError(message: "-K: \(error.message)", exitCode: 26)  // CURLE_READ_ERROR
    }
}

/// The command-line arguments a config file's text stands for: `url = "http://x"` → `--url`, `http://x`;
/// `silent` → `--silent`; `-o out` → `-o`, `out`. The lines curl passes over are warned of through `warn`, unless
/// `muted` (-s came before) or the file sets -s first.
func parseConfigFile(_ text: String, name: String, muted: Bool = false,
                     warn: (String) -> Void = writeCurlWarning) throws -> [String] {
    var arguments: [String] = []
    var silent = muted
    var kinds: [String: ConfigOptionKind] = [:]
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
        let argument = option.hasPrefix("-") ? option : "--" + option
        var value: String?
        if rest.first == "\"" {
            value = try unquote(rest.dropFirst(), file: name, line: number + 1)
        } else if !rest.isEmpty {
            let end = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
            value = String(rest[..<end])
            let after = rest[end...].drop { $0 == " " || $0 == "\t" }
            if let first = after.first, first != "#", !silent {
                warn("\(name):\(number + 1): warning: '\(option)' uses unquoted whitespace in the line that may cause side-effects!")
            }
        }
        let kind = kinds[argument] ?? configOptionKind(argument)
        kinds[argument] = kind
        let shownName = name == "-" ? "<stdin>" : name
        switch kind {
        case .unknown:
            if !silent { warn("\(shownName):\(number + 1): warning: '\(option)' is unknown") }
        case .value:
            guard let value else {
                if !silent { warn("\(shownName):\(number + 1): warning: '\(option)' requires parameter") }
                continue
            }
            arguments += [argument, value]
        case .flag:
            arguments.append(argument)
            silent = silenced(by: [argument], silent)
            if let value, !value.isEmpty, !silent {
                warn("\(shownName):\(number + 1): warning: '\(option)' had unsupported trailing garbage")
            }
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
