#define _GNU_SOURCE 1
#include "CSystem.h"
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

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

long csystem_getrandom(void *buffer, unsigned long length) { return getrandom(buffer, length, 0); }

void csystem_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, 15);
    shortened[15] = 0;
    pthread_setname_np(pthread_self(), shortened);
}
