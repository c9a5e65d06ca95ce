#ifndef CSYSTEM_H
#define CSYSTEM_H
// Declarations Swift's Glibc module does not export on Linux.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <semaphore.h>

int csystem_epoll_create(void);
int csystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Waits for events; fills parallel arrays of event masks and user data.
int csystem_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int max, int timeout_ms);
int csystem_eventfd(void);
int csystem_accept4(int fd, struct sockaddr *addr, socklen_t *len);
/// Returns freed heap memory to the system (glibc malloc_trim).
int csystem_malloc_trim(void);
/// One malloc arena for every thread (glibc's M_ARENA_MAX); mallopt's answer (1 when done).
int csystem_single_malloc_arena(void);
/// Drops the resident pages of the executable file mappings (code) and turns off fault-around
/// for them: afterwards only the pages of code that runs are resident. Returns the bytes
/// advised, or -1.
long csystem_trim_code_pages(void);
/// Random bytes from the kernel (getrandom(2)); the count filled, or -1 with errno.
long csystem_getrandom(void *buffer, unsigned long length);
/// Names the calling thread (at most 15 bytes are kept, cut at a UTF-8 character boundary).
void csystem_name_thread(const char *name);
/// Waits on `semaphore` at most `seconds` by the monotonic clock (a wall-clock step does not
/// stretch it); 1 when it was signalled, 0 when the time ran out.
int csystem_semaphore_wait(sem_t *semaphore, double seconds);
/// `value` with `digits` digits after the point as printf's "%.*f" writes it in the C locale
/// (whatever the program's LC_NUMERIC: curses sets the user's); the length, as snprintf's.
int csystem_format_fixed(char *out, unsigned long size, double value, int digits);

static inline uint32_t csystem_EPOLLIN(void) { return EPOLLIN; }
static inline uint32_t csystem_EPOLLOUT(void) { return EPOLLOUT; }
static inline uint32_t csystem_EPOLLERR(void) { return EPOLLERR; }
static inline uint32_t csystem_EPOLLHUP(void) { return EPOLLHUP; }
static inline uint32_t csystem_EPOLLRDHUP(void) { return EPOLLRDHUP; }
static inline int csystem_EPOLL_CTL_ADD(void) { return EPOLL_CTL_ADD; }
static inline int csystem_EPOLL_CTL_MOD(void) { return EPOLL_CTL_MOD; }
static inline int csystem_EPOLL_CTL_DEL(void) { return EPOLL_CTL_DEL; }

/* libFuzzer's driver, for chat-fuzz built with -sanitize=fuzzer (make fuzz): SwiftPM names the
   executable's entry point itself, so chat-fuzz's entry calls the driver (only then is it linked). */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
