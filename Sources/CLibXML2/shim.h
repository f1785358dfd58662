// libxml2 (Debian's libxml2-dev) for the layers that read markup: S3's XML responses and the web
// archive's HTML pages. The core library does not depend on this target.
#ifndef ASYNCHTTP_CLIBXML2_SHIM_H
#define ASYNCHTTP_CLIBXML2_SHIM_H

/* Keep ICU's headers out. Debian's libxml2 is built with ICU, so <libxml/encoding.h> includes <unicode/ucnv.h>
   (the system ICU) for two fields of xmlCharEncodingHandler; a Swift module importing both this target and
   Foundation (whose _FoundationICU has its own utypes.h) then fails a clean build with "'UErrorCode' has
   different definitions in different modules". Nothing here touches those fields (handlers are used through
   pointers only), so the declarations are read without them. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>     /* htmlDocDumpMemoryFormat: the web archive writes pages back */
#include <libxml/xmlerror.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* libxml2 is resolved on first use (dlopen, dlsym), not by the link. Linked, it and what it links (ICU's 31 MB
   data library, ICU's C++ part, liblzma) are mapped and relocated at every start of the program: 0.4-0.7 ms of
   CPU and about 0.5 ms of wall time per start here, 5 % of a whole `ahttp` https fetch (docs/performance.md,
   session 22).

   Every libxml2 function the layers call goes through the table below, so no object file refers to a
   libxml2 symbol and the module map links nothing; the declarations above give the types and the function
   signatures (each slot is declared as a pointer to the function's own type). SwiftPM still adds
   pkg-config's -lxml2 to the link; a program built without it (scripts/build-ahttp.sh: a .pc file with the
   Cflags and no Libs) maps libxml2 only when it first parses XML or HTML. The table is resolved once
   per module that calls it (a function-local static, below): dlopen counts references, so the second module's
   load finds the library already mapped, and xmlInitParser returns at once the second time. The name loaded is the SONAME of the headers compiled against. */
#if LIBXML_VERSION >= 21400
#define ASYNCHTTP_LIBXML2_SONAME "libxml2.so.16"
#else
#define ASYNCHTTP_LIBXML2_SONAME "libxml2.so.2"
#endif

typedef struct asynchttp_libxml2 {
    __typeof__(xmlInitParser) *xmlInitParser;
    __typeof__(xmlReadMemory) *xmlReadMemory;
    __typeof__(htmlReadMemory) *htmlReadMemory;
    __typeof__(xmlFreeDoc) *xmlFreeDoc;
    __typeof__(xmlDocGetRootElement) *xmlDocGetRootElement;
    __typeof__(xmlGetProp) *xmlGetProp;
    __typeof__(xmlSetProp) *xmlSetProp;
    __typeof__(xmlUnsetProp) *xmlUnsetProp;
    __typeof__(xmlNodeSetContentLen) *xmlNodeSetContentLen;
    __typeof__(xmlStrlen) *xmlStrlen;
    __typeof__(htmlDocDumpMemoryFormat) *htmlDocDumpMemoryFormat;
#if defined(LIBXML_THREAD_ALLOC_ENABLED) && defined(LIBXML_THREAD_ENABLED)
    xmlFreeFunc *(*xmlFreeLocation)(void);   /* __xmlFree: the thread's hook */
#else
    xmlFreeFunc *xmlFreeVariable;            /* the address of the global xmlFree */
#endif
} asynchttp_libxml2;

typedef struct asynchttp_libxml2_state {
    pthread_once_t once;
    int loaded;
    char failure[256];
    asynchttp_libxml2 table;
} asynchttp_libxml2_state;

/* The module's state, in a function-local static: Swift's importer emits a header's static functions into the
   module that calls them, with their local statics, but not a header's file-scope statics. */
static inline asynchttp_libxml2_state *asynchttp_libxml2_shared(void) {
    static asynchttp_libxml2_state state = { PTHREAD_ONCE_INIT, 0, "", { 0 } };
    return &state;
}
#define asynchttp_libxml2_table (asynchttp_libxml2_shared()->table)

/* Fills `state` from the library `name` (the SONAME below; tests pass others): its table and `loaded`, or the
   reason in `failure`. */
static inline void asynchttp_libxml2_open_into(asynchttp_libxml2_state *state, const char *name) {
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(state->failure, sizeof state->failure, "%s", reason ? reason : "cannot be loaded");
        return;
    }
    asynchttp_libxml2 table;
#define ASYNCHTTP_LIBXML2_RESOLVE(slot, symbol)                                                                 \
    if ((*(void **)&table.slot = dlsym(handle, symbol)) == NULL) {                                            \
        snprintf(state->failure, sizeof state->failure, "%s has no %s", name, symbol);                       \
        dlclose(handle);                                                                                       \
        return;                                                                                                \
    }
    ASYNCHTTP_LIBXML2_RESOLVE(xmlInitParser, "xmlInitParser")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlReadMemory, "xmlReadMemory")
    ASYNCHTTP_LIBXML2_RESOLVE(htmlReadMemory, "htmlReadMemory")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlFreeDoc, "xmlFreeDoc")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlDocGetRootElement, "xmlDocGetRootElement")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlGetProp, "xmlGetProp")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlSetProp, "xmlSetProp")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlUnsetProp, "xmlUnsetProp")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlNodeSetContentLen, "xmlNodeSetContentLen")
    ASYNCHTTP_LIBXML2_RESOLVE(xmlStrlen, "xmlStrlen")
    ASYNCHTTP_LIBXML2_RESOLVE(htmlDocDumpMemoryFormat, "htmlDocDumpMemoryFormat")
#if defined(LIBXML_THREAD_ALLOC_ENABLED) && defined(LIBXML_THREAD_ENABLED)
    ASYNCHTTP_LIBXML2_RESOLVE(xmlFreeLocation, "__xmlFree")
#else
    ASYNCHTTP_LIBXML2_RESOLVE(xmlFreeVariable, "xmlFree")
#endif
#undef ASYNCHTTP_LIBXML2_RESOLVE
    /* libxml2's global state, set up before any parse (xmlInitParser is not safe to race; the once is). */
    table.xmlInitParser();
    state->table = table;
    state->loaded = 1;
}

static void asynchttp_libxml2_open(void) {
    asynchttp_libxml2_open_into(asynchttp_libxml2_shared(), ASYNCHTTP_LIBXML2_SONAME);
}

/* Loads libxml2 if it is not loaded yet (safe from any thread). NULL when it is loaded; otherwise why it could
   not be (the loader's message: the library is missing, or lacks a function). Every other function below may
   be called only after this returned NULL. */
static inline const char *asynchttp_libxml2_load(void) {
    asynchttp_libxml2_state *state = asynchttp_libxml2_shared();
    pthread_once(&state->once, asynchttp_libxml2_open);
    return state->loaded ? NULL : state->failure;
}

static inline xmlDocPtr asynchttp_xmlReadMemory(const char *buffer, int size, const char *url, const char *encoding,
                                                int options) {
    return asynchttp_libxml2_table.xmlReadMemory(buffer, size, url, encoding, options);
}
static inline htmlDocPtr asynchttp_htmlReadMemory(const char *buffer, int size, const char *url,
                                                  const char *encoding, int options) {
    return asynchttp_libxml2_table.htmlReadMemory(buffer, size, url, encoding, options);
}
static inline void asynchttp_xmlFreeDoc(xmlDocPtr document) { asynchttp_libxml2_table.xmlFreeDoc(document); }
static inline xmlNodePtr asynchttp_xmlDocGetRootElement(xmlDocPtr document) {
    return asynchttp_libxml2_table.xmlDocGetRootElement(document);
}
static inline xmlChar *asynchttp_xmlGetProp(xmlNodePtr node, const char *name) {
    return asynchttp_libxml2_table.xmlGetProp(node, (const xmlChar *)name);
}
static inline void asynchttp_xmlSetProp(xmlNodePtr node, const char *name, const char *value) {
    (void)asynchttp_libxml2_table.xmlSetProp(node, (const xmlChar *)name, (const xmlChar *)value);
}
static inline void asynchttp_xmlUnsetProp(xmlNodePtr node, const char *name) {
    (void)asynchttp_libxml2_table.xmlUnsetProp(node, (const xmlChar *)name);
}
static inline void asynchttp_xmlNodeSetContentLen(xmlNodePtr node, const xmlChar *content, int length) {
    asynchttp_libxml2_table.xmlNodeSetContentLen(node, content, length);
}
static inline int asynchttp_xmlStrlen(const xmlChar *string) { return asynchttp_libxml2_table.xmlStrlen(string); }
static inline void asynchttp_htmlDocDumpMemoryFormat(htmlDocPtr document, xmlChar **memory, int *size,
                                                     int format) {
    asynchttp_libxml2_table.htmlDocDumpMemoryFormat(document, memory, size, format);
}
/* xmlFree is a global function pointer (or, with per-thread hooks, a function returning one), which Swift 6
   will not read (shared mutable state); this calls it. */
static inline void asynchttp_xmlFree(void *pointer) {
#if defined(LIBXML_THREAD_ALLOC_ENABLED) && defined(LIBXML_THREAD_ENABLED)
    (*asynchttp_libxml2_table.xmlFreeLocation())(pointer);
#else
    (*asynchttp_libxml2_table.xmlFreeVariable)(pointer);
#endif
}

#endif
