// The overload scenario's load generator in C (bench/lib/open_loop_native.ts
// builds and runs it): the same closed and open loops as bench/lib/open_loop.ts,
// at a fraction of its CPU. On a 2-core machine the Node generator took
// 0.7 of a core to offer ~40 k writes/s and lagged 76–404 ms at p99 behind its
// own schedule, so "latency from due" measured the generator as much as the
// server. Here one thread runs epoll over non-blocking sockets, with the
// request bytes built once.
//
// Same rules as the Node generator: one request in flight per connection (uWS
// closes a connection that pipelines), a new connection when a request is due
// and none is idle (at most MAX_CONNECTING connecting, at most max_connections
// open), an idle connection older than IDLE_REUSE_MS is closed rather than
// reused, a connect that fails fails the request waiting longest (status 0).
// Latency counts from when a request was due: the exact point of the schedule
// (the rate's integral crossing an integer), not when the loop noticed it.
//
// usage:
//   open_loop closed <port> <requests file> <samples out> <acks out> <connections> <seconds>
//   open_loop open   <port> <requests file> <samples out> <acks out> <max connections> <slot ms> <rate per slot>...
// The requests file holds whole HTTP requests, each preceded by its length as
// a 4-byte little-endian integer; they are sent in turn. Samples out: per
// request, in the order they settle, 4 doubles (due, lag, latency in ms;
// CLOCK_MONOTONIC ms for due; latency +inf when no answer) and the status as a
// 4th double (0: connection failed, -1: never sent). Acks out: the first
// `"id":N` of each 2xx answer, as int64. stdout: `start <monotonic ms>` when
// the schedule starts, `ended` when it ends (open), and a last JSON line with
// the peak connection count and failed connects.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTING 64
#define IDLE_REUSE_MS 5000.0
/** after the schedule, how long answers are waited for (ms), as the scenario's give-up */
#define SETTLE_MS 120000.0

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct { char *bytes; size_t len; } Request;
static Request *requests;
static size_t n_requests, turn;

typedef struct Conn {
  int fd;
  int state; /* 0 connecting, 1 idle, 2 busy */
  double due, sent, idle_since;
  const Request *req;
  size_t written;
  char *buf;
  size_t len, cap;
  int in_idle; /* index in the idle stack + 1, 0 if not there */
} Conn;

static int ep;
static struct sockaddr_in addr;
static int connecting, open_conns, peak_conns, connect_failures, max_conns;
static Conn **idle;
static int n_idle;
static FILE *samples_out, *acks_out;
static long long outstanding; /* requests due (or sent) without a sample yet */

/* FIFO of due times of requests waiting for a connection */
static double *waitq;
static size_t wq_head, wq_tail, wq_cap;
static void wq_push(double due) {
  if (wq_tail == wq_cap) {
    if (wq_head > 0) { memmove(waitq, waitq + wq_head, (wq_tail - wq_head) * sizeof(double)); wq_tail -= wq_head; wq_head = 0; }
    if (wq_tail == wq_cap) { wq_cap = wq_cap ? wq_cap * 2 : 65536; waitq = realloc(waitq, wq_cap * sizeof(double)); }
  }
  waitq[wq_tail++] = due;
}
static size_t wq_len(void) { return wq_tail - wq_head; }
static double wq_shift(void) { return waitq[wq_head++]; }

static void sample(double due, double lag, double latency, double status) {
  double s[4] = { due, lag, latency, status };
  fwrite(s, sizeof s, 1, samples_out);
  outstanding--;
}

static void idle_remove(Conn *c) {
  if (!c->in_idle) return;
  int i = c->in_idle - 1;
  Conn *last = idle[--n_idle];
  idle[i] = last;
  last->in_idle = i + 1;
  c->in_idle = 0;
}

static void conn_free(Conn *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->buf);
  free(c);
}

static int start(Conn *c, double due);

/** The connection is free: the request waiting longest, or the idle stack. 0: it closed (freed). */
static int release(Conn *c) {
  if (wq_len()) return start(c, wq_shift());
  c->state = 1;
  c->idle_since = now_ms();
  idle[n_idle++] = c;
  c->in_idle = n_idle;
  return 1;
}

static void open_conn(void);
static int stopping;
static void open_if_needed(void) {
  while (!stopping && wq_len() > (size_t)connecting && connecting < MAX_CONNECTING && open_conns + connecting < max_conns) open_conn();
}

/** A connection closed (by the server, or failed): its request fails with status 0. */
static void conn_closed(Conn *c) {
  if (c->state == 0) {
    connecting--;
    connect_failures++;
    if (wq_len()) { double due = wq_shift(); sample(due, now_ms() - due, INFINITY, 0); }
    conn_free(c);
    return; /* the next open is tried on the next turn of the loop (not at once: a refused connect would spin) */
  }
  open_conns--;
  idle_remove(c);
  if (c->state == 2) sample(c->due, c->sent - c->due, INFINITY, 0);
  conn_free(c);
  open_if_needed();
}

/** Write what is left of the request; 0: the connection closed (freed). */
static int flush_write(Conn *c) {
  while (c->written < c->req->len) {
    ssize_t n = send(c->fd, c->req->bytes + c->written, c->req->len - c->written, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN) {
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.ptr = c };
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return 1;
      }
      conn_closed(c);
      return 0;
    }
    c->written += n;
  }
  return 1;
}

static int start(Conn *c, double due) {
  c->state = 2;
  c->due = due;
  c->sent = now_ms();
  c->req = &requests[turn++ % n_requests];
  c->written = 0;
  return flush_write(c);
}

static void open_conn(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) { connect_failures++; return; }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  Conn *c = calloc(1, sizeof *c);
  c->fd = fd;
  c->state = 0;
  connecting++;
  struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.ptr = c };
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) conn_closed(c);
}

static void connected(Conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) { conn_closed(c); return; }
  connecting--;
  open_conns++;
  if (open_conns > peak_conns) peak_conns = open_conns;
  struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
  release(c);
  open_if_needed();
}

/** The most recently used idle connection not about to be closed by the server. */
static Conn *take_idle(double now) {
  while (n_idle) {
    Conn *c = idle[n_idle - 1];
    idle_remove(c);
    if (now - c->idle_since < IDLE_REUSE_MS) return c;
    open_conns--;
    conn_free(c);
  }
  return NULL;
}

static void request(double due, double now) {
  outstanding++;
  Conn *c = take_idle(now);
  if (c) { start(c, due); return; }
  wq_push(due);
  open_if_needed();
}

/** the first `"id":N` of a body, or -1 */
static long long id_of(const char *body, size_t len) {
  const char *p = memmem(body, len, "\"id\":", 5);
  if (!p) return -1;
  p += 5;
  long long id = 0;
  int digits = 0;
  while (p < body + len && *p >= '0' && *p <= '9') { id = id * 10 + (*p - '0'); p++; digits++; }
  return digits ? id : -1;
}

static void readable(Conn *c) {
  for (;;) {
    if (c->cap - c->len < 65536) { c->cap = c->cap ? c->cap * 2 : 131072; c->buf = realloc(c->buf, c->cap); }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n == 0) { conn_closed(c); return; }
    if (n < 0) { if (errno == EAGAIN) break; conn_closed(c); return; }
    c->len += n;
  }
  for (;;) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end) return;
    size_t head = end - c->buf;
    int status = c->len >= 12 ? atoi(c->buf + 9) : 0;
    size_t length = 0;
    int close_after = 0;
    for (char *line = memmem(c->buf, head, "\r\n", 2); line && line < end; line = memmem(line + 2, end - line, "\r\n", 2)) {
      char *h = line + 2;
      if (!strncasecmp(h, "content-length:", 15)) length = strtoul(h + 15, NULL, 10);
      else if (!strncasecmp(h, "connection:", 11)) { char *v = h + 11; while (*v == ' ') v++; if (!strncasecmp(v, "close", 5)) close_after = 1; }
    }
    if (c->len < head + 4 + length) return;
    double now = now_ms();
    if (status >= 200 && status < 300) {
      long long id = id_of(c->buf + head + 4, length);
      if (id >= 0) fwrite(&id, sizeof id, 1, acks_out);
    }
    size_t used = head + 4 + length;
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    int was_busy = c->state == 2;
    double due = c->due, sent = c->sent;
    if (was_busy) sample(due, sent - due, now - due, status);
    if (close_after) { open_conns--; idle_remove(c); conn_free(c); open_if_needed(); return; }
    if (!release(c)) return;
  }
}

static void on_event(struct epoll_event *e) {
  Conn *c = e->data.ptr;
  if (c->state == 0) {
    if (e->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) connected(c);
    return;
  }
  if (e->events & EPOLLOUT) {
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    if (c->state == 2 && !flush_write(c)) return;
  }
  if (e->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) readable(c);
}

static void loop_once(int timeout_ms) {
  struct epoll_event events[256];
  int n = epoll_wait(ep, events, 256, timeout_ms);
  for (int i = 0; i < n; i++) on_event(&events[i]);
  open_if_needed(); /* after failed connects, for the requests still waiting */
}

static void load_requests(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  uint32_t len;
  while (fread(&len, 4, 1, f) == 1) {
    requests = realloc(requests, (n_requests + 1) * sizeof *requests);
    requests[n_requests].bytes = malloc(len);
    requests[n_requests].len = len;
    if (fread(requests[n_requests].bytes, 1, len, f) != len) { fprintf(stderr, "short requests file\n"); exit(2); }
    n_requests++;
  }
  fclose(f);
  if (!n_requests) { fprintf(stderr, "no requests\n"); exit(2); }
}

int main(int argc, char **argv) {
  if (argc < 8) { fprintf(stderr, "usage: see the head of open_loop.c\n"); return 2; }
  const char *mode = argv[1];
  addr.sin_family = AF_INET;
  addr.sin_port = htons(atoi(argv[2]));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  load_requests(argv[3]);
  samples_out = fopen(argv[4], "wb");
  acks_out = fopen(argv[5], "wb");
  if (!samples_out || !acks_out) { perror("output"); return 2; }
  /* thousands of connections: the soft limit of open files up to the hard one */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) { nofile.rlim_cur = nofile.rlim_max; setrlimit(RLIMIT_NOFILE, &nofile); }
  ep = epoll_create1(0);
  setvbuf(stdout, NULL, _IOLBF, 0);

  if (!strcmp(mode, "closed")) {
    int conns = atoi(argv[6]);
    double secs = atof(argv[7]);
    max_conns = conns;
    idle = calloc(conns + 1, sizeof *idle);
    for (int i = 0; i < conns; i++) open_conn();
    while (connecting) loop_once(10);
    double t0 = now_ms(), end = t0 + secs * 1e3;
    printf("start %.6f\n", t0);
    /* each connection sends its next request when the last is answered, until the end */
    for (int i = n_idle; i > 0; i--) { double now = now_ms(); request(now, now); }
    while (outstanding > 0) {
      loop_once(10);
      double now = now_ms();
      if (now < end) while (n_idle) request(now, now);
      if (now > end + SETTLE_MS) break;
    }
  } else {
    max_conns = atoi(argv[6]);
    double slot = atof(argv[7]);
    int slots = argc - 8;
    double *rate = malloc(slots * sizeof *rate);
    for (int i = 0; i < slots; i++) rate[i] = atof(argv[8 + i]);
    idle = calloc(max_conns + 1, sizeof *idle);
    double t0 = now_ms(), end = t0 + slots * slot;
    printf("start %.6f\n", t0);
    /* requests due: the i-th at the point where the integral of the rate reaches i */
    double acc = 0; /* requests due up to `at` (fractional) */
    double at = t0;
    long long issued = 0;
    for (;;) {
      double now = now_ms();
      if (now > end) now = end;
      while (at < now) {
        int k = (int)((at - t0) / slot);
        if (k >= slots) break;
        double slot_end = t0 + (k + 1) * slot;
        double to = now < slot_end ? now : slot_end;
        double per_ms = rate[k] / 1e3;
        double next = acc + per_ms * (to - at);
        /* requests whose integer mark falls in [acc, next) are due inside this step */
        while ((double)(issued + 1) <= next) {
          issued++;
          double due = per_ms > 0 ? at + ((double)issued - acc) / per_ms : at;
          request(due, now_ms());
        }
        acc = next;
        at = to;
      }
      if (at >= end) break;
      loop_once(1);
    }
    printf("ended\n");
    double ended = now_ms();
    while (outstanding > 0 && now_ms() < ended + SETTLE_MS) loop_once(10);
  }
  /* what was never sent or never answered */
  stopping = 1;
  while (wq_len()) { double due = wq_shift(); sample(due, INFINITY, INFINITY, -1); }
  fflush(samples_out);
  fflush(acks_out);
  printf("{\"peakConnections\":%d,\"connectFailures\":%d,\"unsettled\":%lld}\n", peak_conns, connect_failures, outstanding);
  return 0;
}
