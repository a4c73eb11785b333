// A raw-socket HTTP client for tests that must send what no well-behaved
// client library sends: bad or duplicated Content-Length, half-sent
// requests, pipelined requests in one write, NUL bytes in headers.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace oscar::testing {

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, (sockaddr*)&a, sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  RawConnection(RawConnection&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool send(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += (size_t)n;
    }
    return true;
  }
  // Reads until the peer closes or `timeout_ms` passes; returns what came.
  std::string read_until_close(int timeout_ms) {
    std::string out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, (int)left) <= 0) break;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_by_peer_ = true;
        break;
      }
      out.append(buf, (size_t)n);
    }
    return out;
  }
  // Reads until `count` complete responses (with Content-Length bodies)
  // have arrived, the peer closes, or the time is up.
  std::string read_responses(size_t count, int timeout_ms) {
    std::string out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (complete_responses(out) < count) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, (int)left) <= 0) break;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_by_peer_ = true;
        break;
      }
      out.append(buf, (size_t)n);
    }
    return out;
  }
  bool closed_by_peer() const { return closed_by_peer_; }

  // Number of whole responses at the start of `s` (each needs a
  // Content-Length; enough for the server's JSON answers).
  static size_t complete_responses(const std::string& s) {
    size_t n = 0, at = 0;
    for (;;) {
      const size_t head_end = s.find("\r\n\r\n", at);
      if (head_end == std::string::npos) return n;
      const std::string head = s.substr(at, head_end - at);
      size_t len = 0;
      const size_t cl = lower(head).find("content-length:");
      if (cl != std::string::npos) len = std::strtoull(head.c_str() + cl + 15, nullptr, 10);
      if (s.size() < head_end + 4 + len) return n;
      at = head_end + 4 + len;
      ++n;
    }
  }
  // The status codes of the responses in `s`, in order.
  static std::vector<int> statuses(const std::string& s) {
    std::vector<int> out;
    for (size_t at = s.find("HTTP/1.1 "); at != std::string::npos; at = s.find("HTTP/1.1 ", at + 1))
      out.push_back(std::atoi(s.c_str() + at + 9));
    return out;
  }
  static int status(const std::string& s) { return s.rfind("HTTP/1.", 0) == 0 ? std::atoi(s.c_str() + 9) : 0; }

 private:
  static std::string lower(std::string s) {
    for (char& c : s) c = (char)std::tolower((unsigned char)c);
    return s;
  }
  int fd_ = -1;
  bool closed_by_peer_ = false;
};

// One request on a fresh connection; returns the whole answer.
inline std::string raw_exchange(int port, const std::string& request, int timeout_ms = 5000) {
  RawConnection c(port);
  if (!c.ok() || !c.send(request)) return "";
  return c.read_responses(1, timeout_ms);
}

inline std::string post_json(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace oscar::testing
