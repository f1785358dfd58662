// The command lines scripts run most, read without ArgumentParser: startup cost only (issue 19's `cold` row).
//
// ArgumentParser builds its whole grammar (twelve groups, about ninety options, Arguments.swift) by reflection
// every time a command line is parsed, and walks it three times (completion-script check, "all unrecognized"
// check, the parse itself): on the benchmark machine about 6 ms of CPU, a quarter of `ahttp -s -o /dev/null
// --cacert CA https://…` from exec to exit, and more than curl spends on its whole option parsing
// (perf record, cpu-clock, docs/benchmarks.md's `cold` row). `quickOptions` reads a command line made only of
// the options below, each spelled as ArgumentParser would read it, into the same `Options`
// `AhttpCommand.options()` would make; anything else — another option, a joined or `=` value, `--`, `-K`, a
// `--no-` flag, an argument given twice that is not a list, help — returns nil, and ArgumentParser reads the
// command line as before. Debug builds check every quick parse against ArgumentParser's (`parseCommandLine`).
//
//   flags:   -s --silent  -S --show-error  -f --fail  -L --location  -k --insecure  -i --include
//            -v --verbose  -I --head  --compressed  (short ones alone or clustered: -sS, -sSfL)
//   values:  -o FILE / --output FILE (one per URL, in order), --cacert FILE (once); a value never begins with '-'
//   URLs:    any other argument not beginning with '-'

/// The options of a simple command line, or nil when ArgumentParser must read it.
func quickOptions(_ arguments: [String]) -> Options? {
    var options = Options()
    var index = 0
    func value() -> String? {
        index += 1
        guard index < arguments.count, !arguments[index].hasPrefix("-") else { return nil }
        return arguments[index]
    }
    /// The one place each flag's letter meets its field; long names map to their letter.
    func set(_ flag: UInt8) {
        switch flag {
        case UInt8(ascii: "s"): options.silent = true
        case UInt8(ascii: "S"): options.showError = true
        case UInt8(ascii: "f"): options.fail = true
        case UInt8(ascii: "L"): options.followRedirects = true
        case UInt8(ascii: "k"): options.insecure = true
        case UInt8(ascii: "i"): options.includeHeaders = true
        case UInt8(ascii: "v"): options.verbose = true
        default: options.headOnly = true  // "I"
        }
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "--silent": set(UInt8(ascii: "s"))
        case "--show-error": set(UInt8(ascii: "S"))
        case "--fail": set(UInt8(ascii: "f"))
        case "--location": set(UInt8(ascii: "L"))
        case "--insecure": set(UInt8(ascii: "k"))
        case "--include": set(UInt8(ascii: "i"))
        case "--verbose": set(UInt8(ascii: "v"))
        case "--head": set(UInt8(ascii: "I"))
        case "--compressed": options.compressed = true
        case "-o", "--output":
            guard let path = value() else { return nil }
            options.outputs.append(path)
        case "--cacert":
            guard options.caFile == nil, let path = value() else { return nil }
            options.caFile = path
        default:
            if !argument.hasPrefix("-") {
                options.urls.append(argument)
            } else if argument.utf8.count >= 2, argument.utf8.dropFirst().allSatisfy({ "sSfLkivI".utf8.contains($0) }) {
                argument.utf8.dropFirst().forEach(set)
            } else {
                return nil
            }
        }
        index += 1
    }
    return options.urls.isEmpty ? nil : options
}

/// What `quickOptions` sets, for the debug build's check against ArgumentParser; every other field must be
/// the default in both.
func quickOptionsFingerprint(_ options: Options) -> String {
    let flags = [options.silent, options.showError, options.fail, options.followRedirects, options.insecure,
                 options.includeHeaders, options.verbose, options.headOnly, options.compressed]
    return "\(flags) \(options.outputs) \(options.caFile ?? "-") \(options.urls) \(options.method.map { "\($0)" } ?? "-") "
        + "\(options.headers.count) \(options.data?.count ?? -1) \(options.proxy == nil) \(options.user == nil) "
        + "\(options.writeOut ?? "-") \(options.maxTime ?? -1) \(options.resolve.count) \(options.flow.parallel)"
}
