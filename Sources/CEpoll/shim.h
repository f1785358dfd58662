// Linux readiness APIs that Glibc's Swift module does not export.
#ifndef ASYNCHTTP_CEPOLL_SHIM_H
#define ASYNCHTTP_CEPOLL_SHIM_H
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#endif
