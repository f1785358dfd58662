// libxml2 (Debian's libxml2-dev) for the layers that read markup: S3's XML responses and the web
// archive's HTML pages. The core library does not depend on this target.
#ifndef ASYNCHTTP_CLIBXML2_SHIM_H
#define ASYNCHTTP_CLIBXML2_SHIM_H

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/HTMLparser.h>
#include <libxml/xmlerror.h>

#endif
