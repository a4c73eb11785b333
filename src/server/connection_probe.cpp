#include "server/connection_probe.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace oscar::server {

namespace {

bool endpoint(const sockaddr_storage& a, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(p);
  return true;
}

}  // namespace

ConnectionProbe ConnectionProbe::find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                      int remote_port) {
  ConnectionProbe probe;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return probe;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end || fd < 0 || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t lp = sizeof peer, ls = sizeof self;
    if (getpeername((int)fd, reinterpret_cast<sockaddr*>(&peer), &lp) != 0) continue;
    if (getsockname((int)fd, reinterpret_cast<sockaddr*>(&self), &ls) != 0) continue;
    std::string ph, sh;
    int pp = -1, sp = -1;
    if (!endpoint(peer, lp, ph, pp) || !endpoint(self, ls, sh, sp)) continue;
    if (pp == remote_port && sp == local_port && ph == remote_addr && (local_addr.empty() || sh == local_addr)) {
      probe.fd_ = (int)fd;
      break;
    }
  }
  closedir(dir);
  return probe;
}

bool ConnectionProbe::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, (short)(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

}  // namespace oscar::server
