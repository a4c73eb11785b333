// HTTP/1.1 request framing, checked before cpp-httplib sees a request
// (http_server.h explains why a layer sits in front of the library): the
// request head (request line, header syntax, Content-Length,
// Transfer-Encoding) and chunked bodies. Pure functions over bytes, so they
// are unit-tested and fuzzed on their own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace oscar::server {

// The largest request head (request line + headers) accepted; larger -> 431.
inline constexpr size_t kMaxRequestHeadBytes = 64 * 1024;

// What a request head says about its body and connection, or why it is
// refused. `status` 0 means the head is acceptable.
struct RequestHead {
  int status = 0;
  std::string error;            // for the error reply when status != 0
  std::string bad_header;       // lowercased name of a header refused for its bytes
  std::string method, target, version;
  bool chunked = false;         // Transfer-Encoding: chunked
  size_t content_length = 0;    // when not chunked (0 when absent)
  bool keep_alive = true;       // false: close after the answer
  bool expect_continue = false; // Expect: 100-continue
  // The head to hand to httplib: the same headers minus Content-Length,
  // Transfer-Encoding and Expect, which the caller re-adds as it decides
  // (the body is always handed over whole, with its length).
  std::string forwarded_headers;
};

// Length of the head at the start of `data` (through the blank line, after
// any empty lines before the request line), or 0 when it is not complete.
// `searched` bytes are known not to hold the end yet (a caller that reads
// in pieces passes what it had before, so each byte is scanned about once).
size_t request_head_length(std::string_view data, size_t searched = 0);

// Checks a complete head (as request_head_length delimits it). Refuses
// (400) malformed request lines, header lines that are not "name: value",
// obsolete line folding, control bytes (NUL included) in names or values,
// and invalid or duplicated Content-Length; Content-Length above
// `max_body` -> 413; Transfer-Encoding other than "chunked" -> 501;
// Content-Encoding other than identity -> 415 (httplib would inflate gzip
// with no size limit).
RequestHead parse_request_head(std::string_view head, size_t max_body);

// Incremental decoder of a chunked body (RFC 9112 7.1). Feed it bytes as
// they arrive; it stops at the end of the body (after the trailers) and
// says how much of the input it used, so pipelined bytes after it are left.
class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(size_t max_body) : max_body_(max_body) {}

  // Consumes from `data`; returns the bytes used (all of them unless the
  // body ended or an error was found).
  size_t feed(std::string_view data);
  bool done() const { return state_ == State::Done; }
  int error_status() const { return error_status_; }  // 400 malformed, 413 too large
  const std::string& error() const { return error_; }
  std::string& body() { return body_; }

 private:
  enum class State { Size, Data, DataEnd, Trailer, Done, Failed };
  void fail(int status, std::string msg);
  bool line_done(std::string_view line);  // a complete size or trailer line

  size_t max_body_;
  State state_ = State::Size;
  std::string line_;        // the size/trailer line read so far
  size_t chunk_left_ = 0;
  size_t trailer_bytes_ = 0;
  std::string body_;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace oscar::server
