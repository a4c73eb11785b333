// The HTTP server: cpp-httplib's routing and response writing, behind a
// layer of our own that reads and checks every request before the library
// sees it.
//
// Why a layer: the Debian cpp-httplib (0.11.4) reads requests itself with
// one per-read timeout (so a client sending a byte now and then holds a
// worker for ever), waits for a body when a POST has no Content-Length,
// takes the first of two Content-Length headers, parses "-5" or 2^64 into
// whatever strtoull gives, accepts any Transfer-Encoding, does not count
// chunked bodies against its payload limit, inflates gzip bodies without a
// limit, and keeps a worker per connection from the first byte. It does let
// a subclass take over the connection loop (process_and_close_socket) and
// hand the library one request at a time through a Stream
// (process_request), which is what HardenedHttpServer does:
//   - a connection first gets a cheap reader thread (up to `connections`),
//     which reads the head and the whole body against one deadline
//     (--read-timeout, plus 1 s per MiB of body), checks the framing
//     (http_framing.h) and answers 400/408/413/415/431/501 itself;
//   - only a complete request takes one of the `workers` (--threads-http)
//     and goes to httplib, from memory, with its body de-chunked and an
//     exact Content-Length;
//   - bytes after a request stay buffered, so pipelined requests are
//     answered in order; "Connection: close" and every refusal close the
//     connection; idle kept-alive connections close as soon as the server
//     drains (first stop signal) or stops.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <semaphore>
#include <string>

namespace oscar::server {

struct HttpServerLimits {
  size_t max_body_bytes = 16u << 20;
  std::chrono::milliseconds read_timeout{10000};      // head + body of one request
  std::chrono::milliseconds keep_alive_timeout{5000};  // idle wait for the next request
  std::chrono::milliseconds write_timeout{600000};     // one blocked write (slow readers of long streams)
  int workers = 16;      // requests handled at once (--threads-http)
  int connections = 64;  // connections held at once, reading or waiting
  bool keys_configured = false;  // NUL in a credential header: 401 instead of 400
};

class HardenedHttpServer : public httplib::Server {
 public:
  // `draining` says the server is shutting down (close idle connections,
  // answer with Connection: close); `on_refused` is told of every request
  // the layer answers itself (for the counters). Both may be empty.
  HardenedHttpServer(HttpServerLimits limits, std::function<bool()> draining,
                     std::function<void(int status)> on_refused);

  const HttpServerLimits& limits() const { return limits_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }
  bool draining() const { return draining_ && draining_(); }

  HttpServerLimits limits_;
  std::function<bool()> draining_;
  std::function<void(int)> on_refused_;
  std::unique_ptr<std::counting_semaphore<>> workers_;
};

}  // namespace oscar::server
