#include "server/http_server.h"

#include <malloc.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/api_error.h"
#include "server/http_framing.h"

namespace oscar::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollSlice{100};       // how often a waiting reader checks for shutdown
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kBodyBytesPerSecond = 1u << 20;  // the slowest body transfer a deadline allows
constexpr size_t kTrimAfterBodyBytes = 1u << 20;  // give freed memory back after bodies this large
constexpr milliseconds kLingerLimit{1000};    // reading what a refused client still sends

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

void ip_and_port(const sockaddr_storage& a, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = "";
  if (getnameinfo((const sockaddr*)&a, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) ip = host;
  if (a.ss_family == AF_INET) port = ntohs(((const sockaddr_in&)a).sin_port);
  else if (a.ss_family == AF_INET6) port = ntohs(((const sockaddr_in6&)a).sin6_port);
}

// Writes all of `data`, waiting at most `timeout` for room each time.
bool write_all(int fd, const char* data, size_t size, milliseconds timeout) {
  size_t off = 0;
  while (off < size) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, (int)timeout.count()) <= 0) return false;
    const ssize_t n = ::send(fd, data + off, size - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    off += (size_t)n;
  }
  return true;
}

// A complete, checked request handed to httplib from memory; what httplib
// writes goes straight to the socket.
class RequestStream : public httplib::Stream {
 public:
  RequestStream(int fd, std::string request, milliseconds write_timeout)
      : fd_(fd), request_(std::move(request)), write_timeout_(write_timeout) {}

  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, (int)write_timeout_.count()) > 0 && !(p.revents & (POLLERR | POLLHUP));
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - pos_);
    std::copy_n(request_.data() + pos_, n, ptr);
    pos_ += n;
    return (ssize_t)n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    return write_all(fd_, ptr, size, write_timeout_) ? (ssize_t)size : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getpeername(fd_, (sockaddr*)&a, &len) == 0) ip_and_port(a, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getsockname(fd_, (sockaddr*)&a, &len) == 0) ip_and_port(a, len, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::string request_;
  size_t pos_ = 0;
  milliseconds write_timeout_;
};

enum class Fill { Data, Timeout, Closed, Stop };

// The bytes of one connection read so far but not yet used.
class ConnectionReader {
 public:
  ConnectionReader(int fd, std::function<bool()> stop) : fd_(fd), stop_(std::move(stop)) {}

  std::string& buffer() { return buf_; }
  void consume(size_t n) { buf_.erase(0, n); }

  // Reads what is available, waiting until `deadline` for something.
  Fill fill(Clock::time_point deadline) {
    for (;;) {
      if (stop_()) return Fill::Stop;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Fill::Timeout;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, (int)std::min(left, kPollSlice).count());
      if (r < 0 && errno != EINTR) return Fill::Closed;
      if (r <= 0) continue;
      const size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      const ssize_t n = ::recv(fd_, buf_.data() + old, kReadChunk, 0);
      buf_.resize(old + (n > 0 ? (size_t)n : 0));
      if (n > 0) return Fill::Data;
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return Fill::Closed;
    }
  }

 private:
  int fd_;
  std::function<bool()> stop_;
  std::string buf_;
};

// Outcome of reading one request: the bytes for httplib, or a refusal.
struct ReadRequest {
  int status = 0;         // 0: ok; -1: the connection ended quietly; else refuse with this
  std::string error;
  std::string request;    // head + body for httplib
  size_t body_bytes = 0;
  bool keep_alive = true;
};

ReadRequest refusal(int status, std::string why) {
  ReadRequest r;
  r.status = status;
  r.error = std::move(why);
  return r;
}
ReadRequest ended() { return refusal(-1, ""); }

// Shuts the write side and reads (and drops) what the client still sends,
// briefly, so the close does not reset the connection before the client
// has read our last answer.
void linger_and_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto end = Clock::now() + kLingerLimit;
  char sink[16384];
  for (size_t total = 0; total < (4u << 20);) {
    const auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, (int)left) <= 0) break;
    const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n <= 0) break;
    total += (size_t)n;
  }
  ::close(fd);
}

void send_refusal(int fd, int status, const std::string& message, milliseconds timeout) {
  const std::string body = error_body(status, message).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                          "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
                          std::to_string(body.size()) +
                          "\r\nConnection: close\r\nServer: oscar-server\r\nAccess-Control-Allow-Origin: *\r\n\r\n" + body;
  write_all(fd, out.data(), out.size(), timeout);
}

// Reads the rest of a request whose head `h` was accepted: its body, whole.
ReadRequest read_body(ConnectionReader& in, const RequestHead& h, const HttpServerLimits& lim, Clock::time_point start,
                      int fd) {
  ReadRequest r;
  r.keep_alive = h.keep_alive;
  auto deadline = [&](size_t received) {
    return start + lim.read_timeout + milliseconds(received * 1000 / kBodyBytesPerSecond);
  };
  if (h.expect_continue && (h.chunked || h.content_length > 0)) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    write_all(fd, kContinue.data(), kContinue.size(), lim.write_timeout);
  }
  std::string head = h.method + " " + h.target + " " + h.version + "\r\n" + h.forwarded_headers;
  if (h.chunked) {
    ChunkedDecoder dec(lim.max_body_bytes);
    size_t received = 0;
    for (;;) {
      const size_t used = dec.feed(in.buffer());
      received += used;
      in.consume(used);
      if (dec.done()) break;
      if (dec.error_status()) return refusal(dec.error_status(), dec.error());
      const Fill f = in.fill(deadline(received));
      if (f == Fill::Timeout) return refusal(408, "the request body did not arrive within the read timeout");
      if (f != Fill::Data) return ended();
    }
    r.body_bytes = dec.body().size();
    r.request = head + "Content-Length: " + std::to_string(r.body_bytes) + "\r\n\r\n";
    r.request += dec.body();
  } else {
    while (in.buffer().size() < h.content_length) {
      const Fill f = in.fill(deadline(in.buffer().size()));
      if (f == Fill::Timeout) return refusal(408, "the request body did not arrive within the read timeout");
      if (f != Fill::Data) return ended();
    }
    r.body_bytes = h.content_length;
    head += "Content-Length: " + std::to_string(h.content_length) + "\r\n\r\n";
    r.request.reserve(head.size() + h.content_length);
    r.request = head;
    r.request.append(in.buffer(), 0, h.content_length);
    in.consume(h.content_length);
  }
  return r;
}

// Reads one request from the connection: waits for its first byte (up to
// `idle`, or until `give_up` says stop), then its head and body.
ReadRequest read_request(ConnectionReader& in, const HttpServerLimits& lim, milliseconds idle,
                         const std::function<bool()>& give_up, int fd) {
  const auto idle_end = Clock::now() + idle;
  while (in.buffer().empty()) {
    if (give_up()) return ended();
    const Fill f = in.fill(std::min(idle_end, Clock::now() + kPollSlice));
    if (f == Fill::Data) break;
    if (f != Fill::Timeout || Clock::now() >= idle_end) return ended();
  }
  const auto start = Clock::now();
  size_t head_len, searched = 0;
  while ((head_len = request_head_length(in.buffer(), searched)) == 0) {
    if (in.buffer().size() > kMaxRequestHeadBytes) return refusal(431, "request head too large");
    searched = in.buffer().size();
    const Fill f = in.fill(start + lim.read_timeout);
    if (f == Fill::Timeout) return refusal(408, "the request head did not arrive within the read timeout");
    if (f != Fill::Data) return ended();
  }
  if (head_len > kMaxRequestHeadBytes) return refusal(431, "request head too large");
  const RequestHead h = parse_request_head(std::string_view(in.buffer()).substr(0, head_len), lim.max_body_bytes);
  if (h.status) {
    const bool credential = h.bad_header == "authorization" || h.bad_header == "x-api-key";
    if (credential && lim.keys_configured) return refusal(401, "Invalid API Key");
    return refusal(h.status, h.error);
  }
  in.consume(head_len);
  return read_body(in, h, lim, start, fd);
}

}  // namespace

HardenedHttpServer::HardenedHttpServer(HttpServerLimits limits, std::function<bool()> draining,
                                       std::function<void(int)> on_refused)
    : limits_(limits), draining_(std::move(draining)), on_refused_(std::move(on_refused)),
      workers_(std::make_unique<std::counting_semaphore<>>(std::max(1, limits.workers))) {
  const size_t n_conn = (size_t)std::max(limits_.connections, limits_.workers + 1);
  new_task_queue = [n_conn] { return new httplib::ThreadPool(n_conn); };
  // Backstops only: the layer has already enforced both.
  set_payload_max_length(limits_.max_body_bytes);
  set_keep_alive_timeout(std::max<time_t>(1, limits_.keep_alive_timeout.count() / 1000));
}

bool HardenedHttpServer::process_and_close_socket(socket_t sock) {
  ConnectionReader in(sock, [this] { return stopping(); });
  bool refused = false;
  for (bool first = true;; first = false) {
    // A kept-alive connection waiting for its next request closes at once
    // when the server drains; a new one is still served (503s, /health).
    const auto give_up = [&] { return stopping() || (!first && in.buffer().empty() && draining()); };
    ReadRequest r = read_request(in, limits_, first ? limits_.read_timeout : limits_.keep_alive_timeout, give_up, sock);
    if (r.status < 0) break;
    if (r.status > 0) {
      if (on_refused_) on_refused_(r.status);
      send_refusal(sock, r.status, r.error, limits_.write_timeout);
      refused = true;
      break;
    }
    const bool close = !r.keep_alive || draining() || stopping();
    bool connection_closed = false;
    bool ok;
    {
      RequestStream strm(sock, std::move(r.request), limits_.write_timeout);
      struct WorkerSlot {
        std::counting_semaphore<>& s;
        explicit WorkerSlot(std::counting_semaphore<>& sem) : s(sem) { s.acquire(); }
        ~WorkerSlot() { s.release(); }
      } slot(*workers_);
      ok = process_request(strm, close, connection_closed, nullptr);
    }
    // glibc keeps freed large blocks in its arenas; give them back so the
    // resident size returns to its plateau after big bodies.
    if (r.body_bytes >= kTrimAfterBodyBytes) malloc_trim(0);
    if (!ok || close || connection_closed) break;
  }
  // After a refusal the client may still be sending (a body we did not
  // want): linger so our answer is read before the close resets the
  // connection. Otherwise, or when the server stops, close at once.
  if (refused && !stopping()) {
    linger_and_close(sock);
  } else {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
  }
  return true;
}

}  // namespace oscar::server
