import CLibXML2
import XCTest

/// CLibXML2's loader: libxml2's functions are resolved with `dlopen`/`dlsym` on first use, not linked, and a
/// library that cannot be loaded, or lacks a function, is reported with a reason instead of a crash. Each test
/// fills a state of its own, so the shared one the web archive and S3 use is left alone.
final class LibXML2LoaderTests: XCTestCase {
    private func failure(of state: inout asynchttp_libxml2_state) -> String {
        withUnsafeBytes(of: &state.failure) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
    }

    func testTheHeadersSonameLoadsWithEveryFunction() {
        var state = asynchttp_libxml2_state()
        asynchttp_libxml2_open_into(&state, ASYNCHTTP_LIBXML2_SONAME)
        XCTAssertEqual(state.loaded, 1, failure(of: &state))
        XCTAssertNotNil(state.table.htmlReadMemory)
        XCTAssertNotNil(state.table.xmlFreeVariable)
        XCTAssertEqual(state.table.xmlStrlen("four"), 4)
    }

    func testAMissingLibraryIsReportedByName() {
        var state = asynchttp_libxml2_state()
        asynchttp_libxml2_open_into(&state, "libasynchttp-absent.so.9")
        XCTAssertEqual(state.loaded, 0)
        XCTAssertTrue(failure(of: &state).contains("libasynchttp-absent.so.9"), failure(of: &state))
    }

    func testALibraryWithoutLibxml2sFunctionsIsReportedByFunction() {
        // zlib loads (the process has it already) but has none of libxml2's functions.
        var state = asynchttp_libxml2_state()
        asynchttp_libxml2_open_into(&state, "libz.so.1")
        XCTAssertEqual(state.loaded, 0)
        XCTAssertEqual(failure(of: &state), "libz.so.1 has no xmlInitParser")
    }

    func testTheSharedLoaderSucceedsAndStaysLoaded() {
        XCTAssertNil(asynchttp_libxml2_load())
        XCTAssertNil(asynchttp_libxml2_load())
    }
}
