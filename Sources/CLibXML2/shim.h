// libxml2 (Debian's libxml2-dev) for the layers that read markup: S3's XML responses and the web
// archive's HTML pages. The core library does not depend on this target.
#ifndef ASYNCHTTP_CLIBXML2_SHIM_H
#define ASYNCHTTP_CLIBXML2_SHIM_H

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>     /* htmlDocDumpMemoryFormat: the web archive writes pages back */
#include <libxml/xmlerror.h>

/* The web archive: libxml2's xmlFree is a global function pointer, which Swift 6 will not read (shared mutable
   state); this calls it. */
static inline void asynchttp_webarchive_xml_free(void *pointer) { xmlFree(pointer); }

#endif
