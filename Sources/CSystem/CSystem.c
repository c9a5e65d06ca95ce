#define _GNU_SOURCE 1
#include "CSystem.h"
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

int csystem_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int csystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int csystem_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i] = evs[i].events;
        data[i] = evs[i].data.u64;
    }
    return n;
}

int csystem_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int csystem_accept4(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <malloc.h>
int csystem_malloc_trim(void) { return malloc_trim(0); }
int csystem_single_malloc_arena(void) { return mallopt(M_ARENA_MAX, 1); }

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
long csystem_trim_code_pages(void) {
    // Code and read-only data are mapped from their files: dropping their pages costs a refault
    // of each page used afterwards, so what stays resident is what runs from now on (in the
    // 64 KiB windows the kernel maps around each fault: MADV_RANDOM stops read-ahead from the
    // file but not that fault-around, measured on Linux 6.18). Read-only data counts too (a
    // library's tables read once at start-up: libcrypto's were 1.5 MiB), but only a mapping
    // none of whose pages was ever written: relocated data (RELRO) is r--p too, and dropping
    // its written copies would lose the relocations. smaps says so: `Anonymous: 0 kB`.
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (!smaps) return -1;
    char line[512];
    long dropped = 0;
    unsigned long start = 0, end = 0;
    int candidate = 0;
    while (fgets(line, sizeof line, smaps)) {
        unsigned long a, b;
        char perms[5];
        int path = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &a, &b, perms, &path) >= 3 && path > 0) {
            // A mapping's first line; its fields follow. Private, file-backed, never writable.
            start = a;
            end = b;
            candidate = (strcmp(perms, "r-xp") == 0 || strcmp(perms, "r--p") == 0) && line[path] == '/';
            continue;
        }
        unsigned long anonymous;
        if (candidate && sscanf(line, "Anonymous: %lu kB", &anonymous) == 1) {
            candidate = 0;
            if (anonymous != 0) continue;
            if (madvise((void *)start, end - start, MADV_RANDOM) == 0 && madvise((void *)start, end - start, MADV_DONTNEED) == 0) {
                dropped += (long)(end - start);
            }
        }
    }
    fclose(smaps);
    return dropped;
}

long csystem_getrandom(void *buffer, unsigned long length) { return getrandom(buffer, length, 0); }

void csystem_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, 15);
    shortened[15] = 0;
    // Not in the middle of a UTF-8 character: continuation bytes at the cut go.
    size_t length = strlen(shortened);
    if (length == 15 && ((unsigned char)name[15] & 0xC0) == 0x80) {
        while (length > 0 && ((unsigned char)shortened[length - 1] & 0xC0) == 0x80) length--;
        if (length > 0 && ((unsigned char)shortened[length - 1] & 0xC0) == 0xC0) length--;
        shortened[length] = 0;
    }
    pthread_setname_np(pthread_self(), shortened);
}

int csystem_semaphore_wait(sem_t *semaphore, double seconds) {
    if (!(seconds > 0)) return sem_trywait(semaphore) == 0;
    if (seconds > 1e9) seconds = 1e9;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    double whole = floor(seconds);
    long nanoseconds = deadline.tv_nsec + (long)((seconds - whole) * 1e9);
    deadline.tv_sec += (time_t)whole + nanoseconds / 1000000000L;
    deadline.tv_nsec = nanoseconds % 1000000000L;
    for (;;) {
        if (sem_clockwait(semaphore, CLOCK_MONOTONIC, &deadline) == 0) return 1;
        if (errno != EINTR) return 0;
    }
}

static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;
static void make_c_numeric(void) { c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

int csystem_format_fixed(char *out, unsigned long size, double value, int digits) {
    pthread_once(&c_numeric_once, make_c_numeric);
    locale_t previous = c_numeric ? uselocale(c_numeric) : (locale_t)0;
    int written = snprintf(out, size, "%.*f", digits, value);
    if (previous) uselocale(previous);
    return written;
}
