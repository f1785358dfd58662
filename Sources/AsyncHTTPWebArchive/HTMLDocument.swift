import CLibXML2

/// An HTML page parsed by libxml2's HTML parser (as ASIWebPageRequest did), to find the resources it loads
/// and to write it back with them replaced.
///
/// libxml2 parses HTML as browsers do in the ways that matter here: tag soup is repaired, attribute values
/// are unescaped (`&amp;` in a URL), `<script>` and `<style>` contents are raw text, and the charset comes
/// from the `Content-Type` header or the page's `<meta charset>`. Not `Sendable`: one task owns a document
/// from parse to serialization (libxml2 documents are not shared between threads).
final class HTMLDocument {
    private let document: htmlDocPtr

    /// Parses `bytes`; `encoding` is the `charset` of the response's `Content-Type`, if it had one. Nil when
    /// libxml2 finds no document in them (empty input), or could not be loaded (see ``loadParser()``).
    init?(_ bytes: [UInt8], encoding: String?) {
        guard HTMLDocument.loadParser() == nil, !bytes.isEmpty, bytes.count < Int(Int32.max) else { return nil }
        // RECOVER: tag soup, as browsers take it. NODEFDTD: no doctype is invented (one would switch a page
        // without one from quirks mode to standards mode). NONET: libxml2 itself never loads anything.
        let options = Int32(HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NODEFDTD.rawValue | HTML_PARSE_NOERROR.rawValue
            | HTML_PARSE_NOWARNING.rawValue | HTML_PARSE_NONET.rawValue)
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { start in
                asynchttp_htmlReadMemory(start, Int32(buffer.count), nil, encoding, options)
            }
        }
        guard let parsed else { return nil }
        document = parsed
    }

    deinit { asynchttp_xmlFreeDoc(document) }

    /// Loads libxml2 if it is not loaded yet (on first use, not at program start: `CLibXML2`'s shim, which also
    /// initializes the parser once). Nil when it is loaded; otherwise why it could not be (a missing library or
    /// function, in the dynamic loader's words). ``WebArchiver`` checks it before fetching anything.
    static func loadParser() -> String? {
        asynchttp_libxml2_load().map { String(cString: $0) }
    }

    /// The document's character encoding as libxml2 settled it (header, `<meta>`, or nil for its default);
    /// ``serialized()`` writes in it.
    var encoding: String? { document.pointee.encoding.map { String(cString: $0) } }

    /// The `href` of the first `<base>` that has one (HTML: only the first counts), as written.
    var baseHref: String? {
        var found: String?
        forEachElement { element, name in
            if found == nil, name == "base", let href = Self.attribute(element, "href") { found = href }
        }
        return found
    }

    /// Calls `visit` with every resource reference in the page, in document order: attributes (`src`,
    /// `srcset` candidates, `href` of stylesheets and icons, `data`, `poster`, `background`), `url(…)` in
    /// `style` attributes, and `url(…)`/`@import` in `<style>` elements. When `visit` returns a string the
    /// reference is replaced by it; an element whose reference was replaced loses `integrity` and
    /// `crossorigin` (a rewritten stylesheet no longer has the hash, and a `file:` URL cannot pass CORS).
    func forEachReference(_ visit: (String, WebArchiveResource.Kind) -> String?) {
        forEachElement { element, name in
            var replaced = false
            func attribute(_ attributeName: String, _ kind: WebArchiveResource.Kind) {
                guard let value = Self.attribute(element, attributeName) else { return }
                let trimmed = Self.trimmingSpaces(value)
                guard !trimmed.isEmpty, let replacement = visit(trimmed, kind) else { return }
                asynchttp_xmlSetProp(element, attributeName, replacement)
                replaced = true
            }
            func sourceSet(_ kind: WebArchiveResource.Kind) {
                guard let value = Self.attribute(element, "srcset") else { return }
                var candidates = SourceSet.parse(value)
                var changed = false
                for index in candidates.indices {
                    if let replacement = visit(candidates[index].url, kind) {
                        candidates[index].url = replacement
                        changed = true
                    }
                }
                if changed {
                    asynchttp_xmlSetProp(element, "srcset", SourceSet.serialize(candidates))
                    replaced = true
                }
            }
            switch name {
            case "img":
                attribute("src", .image)
                sourceSet(.image)
            case "source":
                sourceSet(.image)
            case "input":
                if Self.attribute(element, "type")?.lowercased() == "image" { attribute("src", .image) }
            case "video":
                attribute("poster", .image)
            case "body", "table", "td", "th":
                attribute("background", .image)
            case "link":
                switch Self.linkKind(element) {
                case .stylesheet?: attribute("href", .stylesheet)
                case .icon?: attribute("href", .icon)
                default: break
                }
            case "script":
                attribute("src", .script)
            case "iframe", "frame":
                attribute("src", .frame)
            case "object":
                attribute("data", .embedded)
            case "embed":
                attribute("src", .embedded)
            case "style":
                var child = element.pointee.children
                while let node = child {
                    if node.pointee.type == XML_TEXT_NODE || node.pointee.type == XML_CDATA_SECTION_NODE,
                        let content = node.pointee.content
                    {
                        let css = Array(UnsafeBufferPointer(start: content, count: Int(asynchttp_xmlStrlen(content))))
                        var changed = false
                        let rewritten = CSSURLScanner.rewrite(css) { reference in
                            let replacement = visit(reference.url, reference.isImport ? .styleImport : .styleResource)
                            if replacement != nil { changed = true }
                            return replacement
                        }
                        if changed {
                            // A text node's content is set as is (no entity parsing); the HTML serializer writes
                            // a <style> element's text raw.
                            asynchttp_xmlNodeSetContentLen(node, rewritten, Int32(rewritten.count))
                        }
                    }
                    child = node.pointee.next
                }
            default:
                break
            }
            if let style = Self.attribute(element, "style") {
                var changed = false
                let rewritten = CSSURLScanner.rewrite(Array(style.utf8)) { reference in
                    let replacement = visit(reference.url, .styleResource)
                    if replacement != nil { changed = true }
                    return replacement
                }
                if changed { asynchttp_xmlSetProp(element, "style", String(decoding: rewritten, as: UTF8.self)) }
            }
            if replaced {
                asynchttp_xmlUnsetProp(element, "integrity")
                asynchttp_xmlUnsetProp(element, "crossorigin")
            }
        }
    }

    /// What a `<link>` is fetched as, by its `rel`: a stylesheet, an icon, or nil (not fetched).
    private static func linkKind(_ element: xmlNodePtr) -> WebArchiveResource.Kind? {
        let rel = (attribute(element, "rel") ?? "").lowercased()
            .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0C}" })
        if rel.contains("stylesheet") { return .stylesheet }
        if rel.contains(where: { $0 == "icon" || $0 == "apple-touch-icon" || $0 == "apple-touch-icon-precomposed" || $0 == "mask-icon" }) {
            return .icon
        }
        return nil
    }

    /// Prepares the page to be read from somewhere else: `<base href>` is removed (the archive's references are
    /// relative to the archive, or `data:`), so every reference the archive does not fetch becomes the absolute
    /// URL `absolute` gives, and still leads to the site: links (`<a href>`, `<area href>`, `<form action>`,
    /// `formaction`), media (`<video src>`, `<audio src>`, `<source src>`, `<track src>`), SVG `<use>` and
    /// `<image>` references, `cite`, and the `<link>`s that are neither a stylesheet nor an icon (preload,
    /// manifest, alternate, …).
    func detachFromBase(_ absolute: (String) -> String?) {
        func makeAbsolute(_ element: xmlNodePtr, _ name: String) {
            if let value = Self.attribute(element, name), let url = absolute(Self.trimmingSpaces(value)) {
                asynchttp_xmlSetProp(element, name, url)
            }
        }
        forEachElement { element, name in
            switch name {
            case "a", "area":
                makeAbsolute(element, "href")
            case "form":
                makeAbsolute(element, "action")
            case "video", "audio", "source", "track":
                makeAbsolute(element, "src")
            case "button", "input":
                makeAbsolute(element, "formaction")
            case "blockquote", "q", "del", "ins":
                makeAbsolute(element, "cite")
            case "use", "image":
                // SVG: an icon sprite (`sprite.svg#icon`); a fragment alone stays in the document.
                makeAbsolute(element, "href")
                makeAbsolute(element, "xlink:href")
            case "link" where Self.linkKind(element) == nil:
                makeAbsolute(element, "href")
            case "base":
                asynchttp_xmlUnsetProp(element, "href")
            default:
                break
            }
        }
    }

    /// The document as HTML, in its ``encoding`` (libxml2 writes characters the encoding lacks as
    /// character references, and an encoding-less document as ASCII with references).
    func serialized() -> [UInt8] {
        var memory: UnsafeMutablePointer<xmlChar>?
        var size: Int32 = 0
        asynchttp_htmlDocDumpMemoryFormat(document, &memory, &size, 0)
        guard let memory else { return [] }
        defer { asynchttp_xmlFree(memory) }
        return Array(UnsafeBufferPointer(start: memory, count: Int(size)))
    }

    // MARK: - Walking

    /// Every element in document order, with its lowercased name (libxml2's HTML parser lowercases names).
    /// Iterative, so a deeply nested page cannot exhaust the stack.
    private func forEachElement(_ body: (xmlNodePtr, String) -> Void) {
        var current: xmlNodePtr? = document.pointee.children
        while let node = current {
            let isElement = node.pointee.type == XML_ELEMENT_NODE
            var name = ""
            if isElement, let raw = node.pointee.name {
                name = String(cString: raw).lowercased()
                body(node, name)
            }
            if isElement, name != "style", name != "script", let child = node.pointee.children {
                current = child
                continue
            }
            // The next sibling, or the next sibling of the nearest ancestor that has one.
            var climbing: xmlNodePtr? = node
            current = nil
            while let step = climbing {
                if let next = step.pointee.next {
                    current = next
                    break
                }
                guard let parent = step.pointee.parent, parent.pointee.type == XML_ELEMENT_NODE else { break }
                climbing = parent
            }
        }
    }

    private static func attribute(_ element: xmlNodePtr, _ name: String) -> String? {
        guard let value = asynchttp_xmlGetProp(element, name) else { return nil }
        defer { asynchttp_xmlFree(value) }
        return String(cString: value)
    }

    /// Without leading and trailing ASCII whitespace, as HTML strips URL attributes.
    static func trimmingSpaces(_ text: String) -> String {
        let bytes = Array(text.utf8)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
