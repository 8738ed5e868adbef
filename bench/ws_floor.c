// The WebSocket floor: the least CPU a load generator can spend per message of a WebSocket echo on
// this host. It does only the socket work every generator must do and nothing else: per connection the
// opening handshake (a fixed Sec-WebSocket-Key; the answer must be 101), then one write of a masked
// text frame and the reads of the echoed frame per message, the next message sent as soon as the echo
// is read (one message in flight per connection, a closed model). No stats, no timing beyond the
// run's end, no scripting. One thread, epoll, non-blocking sockets.
//
//   ws_floor PORT CONNECTIONS SECONDS [PATH] [MESSAGE]
//
// PATH defaults to /ws, MESSAGE to "hello" (at most 125 bytes: one frame with a 7-bit length). The
// frame is built once with a fixed mask: a real client draws a mask per frame (RFC 6455 5.3) and masks
// the payload, work the floor leaves out. Each echo is checked (a final text frame carrying MESSAGE);
// anything else ends the run with an error.
//
// Prints one JSON line: the messages echoed within SECONDS (from the first connect), the connections
// whose handshake completed, and its own CPU seconds (getrusage); bench/ws_bench.py reads the process's
// CPU time from wait4 instead, as it does for every generator. Built by bench/ws_bench.py with the
// system's C compiler, as bench/floor.c is by bench/script_bench.py.
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

typedef struct {
  int fd;
  int open;  // 1 once the 101 was read
  int len;   // bytes read and not yet consumed
  char buf[256];
} conn;

static conn *conns;
static char handshake[512], frame[256], message[128];
static int handshake_len, frame_len, message_len;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  perror(what);
  exit(1);
}

static void failx(const char *what) {
  fprintf(stderr, "ws_floor: %s\n", what);
  exit(1);
}

static void send_all(int fd, const char *data, int len) {
  if (write(fd, data, len) != len) fail("write");
}

// Reads what connection i has and acts on it; returns the messages whose echo it completed (0 or 1).
static int on_readable(int i) {
  conn *c = &conns[i];
  ssize_t got = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
  if (got < 0 && errno == EAGAIN) return 0;
  if (got == 0) failx("the server closed a connection");
  if (got < 0) fail("read");
  c->len += got;
  if (!c->open) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL) {
      if (c->len == sizeof c->buf) failx("handshake answer too long");
      return 0;
    }
    if (c->len < 12 || memcmp(c->buf, "HTTP/1.1 101", 12) != 0) failx("the handshake was not answered 101");
    int total = (int)(end + 4 - c->buf);
    c->len -= total;
    memmove(c->buf, c->buf + total, c->len);
    c->open = 1;
    send_all(c->fd, frame, frame_len);
    return 0;
  }
  // The echo: FIN + text, an unmasked 7-bit length, the payload.
  if (c->len < 2 + message_len) return 0;
  if ((unsigned char)c->buf[0] != 0x81 || c->buf[1] != message_len ||
      memcmp(c->buf + 2, message, message_len) != 0)
    failx("the echo is not the message sent");
  c->len -= 2 + message_len;
  memmove(c->buf, c->buf + 2 + message_len, c->len);
  send_all(c->fd, frame, frame_len);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: ws_floor PORT CONNECTIONS SECONDS [PATH] [MESSAGE]\n");
    return 2;
  }
  int port = atoi(argv[1]), n = atoi(argv[2]);
  double seconds = atof(argv[3]);
  const char *path = argc > 4 ? argv[4] : "/ws";
  const char *text = argc > 5 ? argv[5] : "hello";
  message_len = (int)strlen(text);
  if (message_len > 125) failx("MESSAGE is longer than 125 bytes");
  memcpy(message, text, message_len);
  handshake_len = snprintf(handshake, sizeof handshake,
                           "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n",
                           path, port);
  const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  frame[0] = (char)0x81;
  frame[1] = (char)(0x80 | message_len);
  memcpy(frame + 2, mask, 4);
  for (int k = 0; k < message_len; k++) frame[6 + k] = (char)(message[k] ^ mask[k % 4]);
  frame_len = 6 + message_len;

  struct rlimit files;
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  conns = calloc(n, sizeof(conn));
  int ep = epoll_create1(0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  double start = now(), end = start + seconds;
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) fail("socket");
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0) fail("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    conns[i].fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) fail("epoll_ctl");
    send_all(fd, handshake, handshake_len);
  }

  long long echoed = 0;
  struct epoll_event events[1024];
  while (now() < end) {
    int ready = epoll_wait(ep, events, 1024, 100);
    if (ready < 0 && errno != EINTR) fail("epoll_wait");
    for (int k = 0; k < ready; k++) echoed += on_readable((int)events[k].data.u32);
  }
  int open = 0;
  for (int i = 0; i < n; i++) open += conns[i].open;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec +
               usage.ru_stime.tv_usec * 1e-6;
  printf("{\"messages\": %lld, \"connections\": %d, \"cpu_s\": %.3f}\n", echoed, open, cpu);
  return 0;
}
