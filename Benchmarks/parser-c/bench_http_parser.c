/*
 * The C reference for the parser micro-benchmark: nodejs http-parser (Debian's libhttp-parser-dev) over the
 * same corpus files as bench-parser, fed in the same 16 KiB slices. Callbacks only count (header bytes,
 * body bytes, complete messages): the usual way http-parser is benchmarked, and the least work a user of it
 * could do. AsyncHTTP's parser, by contrast, builds each head's HTTPFields.
 *
 *   cc -O2 -o bench_http_parser bench_http_parser.c -lhttp_parser
 *   bench_http_parser FILE RESPONSES SECONDS NAME
 */
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { READ_SIZE = 16 * 1024 };

struct counts {
    size_t header_bytes;
    size_t body_bytes;
    size_t messages;
};

static int on_header_field(http_parser *p, const char *at, size_t length) {
    (void)at;
    ((struct counts *)p->data)->header_bytes += length;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t length) {
    (void)at;
    ((struct counts *)p->data)->header_bytes += length;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t length) {
    (void)at;
    ((struct counts *)p->data)->body_bytes += length;
    return 0;
}

static int on_message_complete(http_parser *p) {
    ((struct counts *)p->data)->messages += 1;
    return 0;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass over the corpus; returns the number of complete messages, or -1 on a parse error. */
static long parse_all(const char *data, size_t size, struct counts *counts) {
    static http_parser_settings settings;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
    http_parser parser;
    http_parser_init(&parser, HTTP_RESPONSE);
    parser.data = counts;
    size_t before = counts->messages;
    for (size_t offset = 0; offset < size; offset += READ_SIZE) {
        size_t length = size - offset < READ_SIZE ? size - offset : READ_SIZE;
        size_t parsed = http_parser_execute(&parser, &settings, data + offset, length);
        if (parsed != length || HTTP_PARSER_ERRNO(&parser) != HPE_OK) {
            fprintf(stderr, "parse error at %zu: %s\n", offset + parsed,
                    http_errno_description(HTTP_PARSER_ERRNO(&parser)));
            return -1;
        }
    }
    return (long)(counts->messages - before);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s FILE RESPONSES SECONDS NAME\n", argv[0]);
        return 2;
    }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *data = malloc((size_t)size);
    if (!data || fread(data, 1, (size_t)size, file) != (size_t)size) { perror("read"); return 2; }
    fclose(file);
    long responses = atol(argv[2]);
    double seconds = atof(argv[3]);

    struct counts counts = {0, 0, 0};
    if (parse_all(data, (size_t)size, &counts) != responses) {  /* untimed check and warm-up */
        fprintf(stderr, "%s did not parse as %ld responses\n", argv[1], responses);
        return 1;
    }
    long passes = 0;
    double start = now_seconds(), elapsed;
    do {
        if (parse_all(data, (size_t)size, &counts) != responses) return 1;
        passes++;
        elapsed = now_seconds() - start;
    } while (elapsed < seconds);
    printf("{\"client\":\"http-parser\",\"scenario\":\"%s\",\"responses\":%ld,\"seconds\":%.4f,"
           "\"responses_per_s\":%.0f,\"mb_per_s\":%.2f,\"checksum\":%zu}\n",
           argv[4], passes * responses, elapsed, (double)(passes * responses) / elapsed,
           (double)passes * (double)size / elapsed / 1e6, counts.body_bytes + counts.header_bytes);
    free(data);
    return 0;
}
