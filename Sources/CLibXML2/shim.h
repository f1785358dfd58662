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

/* The web archive: libxml2's xmlFree is a global function pointer, which Swift 6 will not read (shared mutable
   state); this calls it. */
static inline void asynchttp_webarchive_xml_free(void *pointer) { xmlFree(pointer); }

#endif
