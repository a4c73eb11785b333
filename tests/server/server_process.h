// Runs oscar-server as a child process for a test: starts it on a free port
// (--port 0; the port is read from its log), and always stops it, with
// SIGTERM and then SIGKILL, so no server outlives its test.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/run_capture.h"

namespace oscar::testing {

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { kill_now(); }

  // Returns "" on success, else what went wrong (with the server's log).
  std::string start(const std::string& binary, std::vector<std::string> args, const std::string& log_path,
                    const std::vector<std::pair<std::string, std::string>>& env = {}, int timeout_ms = 60000,
                    const std::string& ready_marker = "server ready on http://127.0.0.1:") {
    log_path_ = log_path;
    args.insert(args.begin(), binary);
    args.insert(args.end(), {"--host", "127.0.0.1", "--port", "0"});
    // Emptied before the child starts, so a previous server's "ready" line is never read.
    std::ofstream(log_path, std::ios::trunc).close();
    pid_ = fork();
    if (pid_ < 0) return "fork failed";
    if (pid_ == 0) {
      // The server dies with the test process even if the test crashes.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const std::string& kReady = ready_marker;
    while (std::chrono::steady_clock::now() < end) {
      const std::string log = read_all(log_path);
      const size_t at = log.find(kReady);
      if (at != std::string::npos) {
        port_ = std::atoi(log.c_str() + at + kReady.size());
        return port_ > 0 ? "" : "could not read the port from the log:\n" + log;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "oscar-server exited during start-up:\n" + log;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_now();
    return "oscar-server did not become ready in time:\n" + read_all(log_path);
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return read_all(log_path_); }

  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Waits for the exit (SIGKILL after timeout_ms); returns the exit code,
  // or -signal when it was killed, or -999 when it had to be killed.
  int wait_exit(int timeout_ms) {
    if (pid_ <= 0) return -998;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill_now();
    return -999;
  }
  int stop(int timeout_ms = 10000) {
    signal(SIGTERM);
    return wait_exit(timeout_ms);
  }

 private:
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
};

using oscar::test::run_capture;  // common/run_capture.h

}  // namespace oscar::testing
