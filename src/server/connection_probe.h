// Notices that an HTTP client has gone away while its request is still
// being served. cpp-httplib 0.11 does not hand handlers the socket, so the
// probe finds it once by the connection's address pair (local and remote
// address and port identify one TCP connection) and then peeks at it: an
// orderly close or a reset shows as end-of-stream or an error.
#pragma once

#include <string>

namespace oscar::server {

class ConnectionProbe {
 public:
  ConnectionProbe() = default;
  // Looks up the socket of this process with these endpoints; a probe that
  // found nothing reports "open" forever (disconnects are then seen only
  // when a write fails).
  static ConnectionProbe find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                              int remote_port);
  static ConnectionProbe for_fd(int fd) {
    ConnectionProbe p;
    p.fd_ = fd;
    return p;
  }
  bool valid() const { return fd_ >= 0; }
  // True when the peer has closed (or reset) the connection.
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace oscar::server
