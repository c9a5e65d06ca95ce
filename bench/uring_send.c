// Issue 29's question: would io_uring, submitting a turn's sends in one call, pay for direct
// messages against one send() per recipient per turn (the epoll loop's way)? A measurement,
// not part of the server: N loopback TCP connections; each round writes one 120-byte line to
// every connection, either with N send() calls or with one io_uring_enter() carrying N
// IORING_OP_SEND entries; the receivers are drained between rounds, outside the timing. The
// figure is the sending thread's CPU time per line. Raw system calls (no liburing: Debian's
// liburing-dev is not installed here).
//
//   cc -O2 -o uring_send bench/uring_send.c && ./uring_send [connections] [rounds]
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

struct ring {
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int ring_init(struct ring *r, unsigned entries) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (r->fd < 0) return -1;
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
    r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED) return -1;
    r->sq_head = (unsigned *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    bind(listener, (struct sockaddr *)&a, sizeof a);
    listen(listener, n);
    getsockname(listener, (struct sockaddr *)&a, &len);
    int *out = calloc(n, sizeof(int)), *in = calloc(n, sizeof(int));
    for (int i = 0; i < n; i++) {
        in[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(in[i], (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
        out[i] = accept(listener, 0, 0);
        int one = 1;
        setsockopt(out[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    char line[120];
    memset(line, 'x', sizeof line);
    line[118] = '\r';
    line[119] = '\n';
    char sink[65536];
    struct ring r;
    if (ring_init(&r, 512) != 0) { perror("io_uring"); return 1; }
    double spent[2] = {0, 0};
    // Alternating rounds, so drift on a noisy machine falls on both ways alike.
    for (int round = 0; round < rounds * 2; round++) {
        int way = round & 1;
        double start = thread_cpu();
        if (way == 0) {
            for (int i = 0; i < n; i++) send(out[i], line, sizeof line, MSG_NOSIGNAL | MSG_DONTWAIT);
        } else {
            unsigned tail = *r.sq_tail;
            for (int i = 0; i < n; i++) {
                unsigned index = tail & *r.sq_mask;
                struct io_uring_sqe *e = &r.sqes[index];
                memset(e, 0, sizeof *e);
                e->opcode = IORING_OP_SEND;
                e->fd = out[i];
                e->addr = (uint64_t)(uintptr_t)line;
                e->len = sizeof line;
                e->msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
                r.sq_array[index] = index;
                tail++;
            }
            __atomic_store_n(r.sq_tail, tail, __ATOMIC_RELEASE);
            long done = syscall(__NR_io_uring_enter, r.fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0);
            if (done != n) { fprintf(stderr, "io_uring_enter: %ld\n", done); return 1; }
            unsigned head = *r.cq_head, ctail = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
            for (; head != ctail; head++) {
                if (r.cqes[head & *r.cq_mask].res != (int)sizeof line) { fprintf(stderr, "short send\n"); return 1; }
            }
            __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
        }
        spent[way] += thread_cpu() - start;
        for (int i = 0; i < n; i++) while (recv(in[i], sink, sizeof sink, MSG_DONTWAIT) > 0) {}
    }
    double lines = (double)n * rounds;
    printf("%d connections, %d rounds each way, 120-byte lines\n", n, rounds);
    printf("send() per line:           %.3f us CPU\n", spent[0] / lines * 1e6);
    printf("io_uring, one enter/round: %.3f us CPU\n", spent[1] / lines * 1e6);
    printf("io_uring / send():         %.2f\n", spent[1] / spent[0]);
    return 0;
}
