// The floor: the least CPU a load generator can spend per request on this host for the scripted
// benchmark's workloads. It does only the socket work every generator must do (one write of the
// request and the reads of the response per request, on keep-alive connections) and nothing else:
// no stats, no scripting, no timing beyond its timers. One thread, epoll; nothing in it is tuned for
// one kernel or another.
//
//   floor PORT USERS THINK_MIN THINK_MAX SECONDS
//
// Each of USERS connections sends `GET /`, reads the response (headers and Content-Length body),
// waits uniform(THINK_MIN, THINK_MAX) seconds, and again, for SECONDS. With think time the timers
// fall in 1 ms buckets and the loop sleeps to the next bucket, then reads everything that arrived
// meanwhile (one wake-up a millisecond, as squall's deferred reads do; waiting in epoll instead,
// woken by each response, cost 13.1-13.9 µs of CPU per request against 10.5-12.4 at 1,000 users with
// between(0.1, 0.2), 2 runs each). Without think time
// a user sends again as soon as its response is read, and the loop waits in epoll.
//
// Prints the requests answered within SECONDS; the caller reads the process's CPU time (wait4), as it
// does for squall and Locust. Built by bench/script_bench.py with the system's C compiler.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 8192 };  // timer buckets of 1 ms: think times up to 8 s

typedef struct {
  int fd;
  int next;  // next user in the same timer bucket, -1 at the end
  int len;   // bytes of the response read so far
  char buf[1024];
} user;

static user *users;
static int bucket[SLOTS];  // first user of each bucket, -1 if none
static char request[256];
static int request_len;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  perror(what);
  exit(1);
}

static void send_request(int i) {
  if (write(users[i].fd, request, request_len) != request_len) fail("write");
}

// The user's next request at `when`, in the first bucket that ends at or after it.
static void wait_until(int i, double when) {
  int slot = (int)(((long long)(when * 1000) + 1) % SLOTS);
  users[i].next = bucket[slot];
  bucket[slot] = i;
}

// Reads what user i's connection has; returns 1 when a whole response has been read.
static int read_response(int i) {
  user *u = &users[i];
  ssize_t got = read(u->fd, u->buf + u->len, sizeof u->buf - u->len);
  if (got < 0 && errno == EAGAIN) return 0;
  if (got <= 0) fail("read");
  u->len += got;
  char *end = memmem(u->buf, u->len, "\r\n\r\n", 4);
  if (end == NULL) return 0;
  char *length = memmem(u->buf, end - u->buf, "\r\nContent-Length: ", 18);
  int total = (int)(end + 4 - u->buf) + (length ? atoi(length + 18) : 0);
  if (u->len < total) return 0;
  u->len -= total;
  memmove(u->buf, u->buf + total, u->len);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: floor PORT USERS THINK_MIN THINK_MAX SECONDS\n");
    return 2;
  }
  int port = atoi(argv[1]), n = atoi(argv[2]);
  double think_min = atof(argv[3]), think_max = atof(argv[4]), seconds = atof(argv[5]);
  int think = think_max > 0;
  request_len = snprintf(request, sizeof request,
                         "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: floor\r\n"
                         "Accept-Encoding: gzip, deflate\r\n\r\n",
                         port);
  struct rlimit files;
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  users = calloc(n, sizeof(user));
  for (int s = 0; s < SLOTS; s++) bucket[s] = -1;
  int ep = epoll_create1(0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) fail("socket");
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0) fail("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    users[i].fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) fail("epoll_ctl");
  }

  double start = now(), end = start + seconds;
  long long tick = (long long)(start * 1000), answered = 0;
  for (int i = 0; i < n; i++) {
    if (think)
      wait_until(i, start + think_min + (think_max - think_min) * drand48());
    else
      send_request(i);
  }
  struct epoll_event events[1024];
  for (;;) {
    double t = now();
    if (t >= end) break;
    int timeout = 100;
    if (think) {
      for (long long due = (long long)(t * 1000); tick <= due; tick++) {
        int slot = (int)(tick % SLOTS);
        for (int i = bucket[slot], next; i >= 0; i = next) {
          next = users[i].next;
          send_request(i);
        }
        bucket[slot] = -1;
      }
      double sleep = tick / 1000.0 - now();
      if (sleep > 0) {
        struct timespec ts = {0, (long)(sleep * 1e9)};
        nanosleep(&ts, NULL);
      }
      timeout = 0;
    }
    int ready = epoll_wait(ep, events, 1024, timeout);
    if (ready < 0 && errno != EINTR) fail("epoll_wait");
    for (int k = 0; k < ready; k++) {
      int i = (int)events[k].data.u32;
      if (!read_response(i)) continue;
      answered++;
      if (think)
        wait_until(i, now() + think_min + (think_max - think_min) * drand48());
      else
        send_request(i);
    }
  }
  printf("%lld\n", answered);
  return 0;
}
