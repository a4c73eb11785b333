// Helpers the tool and model tests share: a scratch directory per test
// process, and running oscar-mkmodel from the build's bin directory.
// Include only from test targets (oscar_add_test defines OSCAR_BIN_DIR).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace oscar::test {

// A directory under the system temp dir, named by `tag` and the process id
// (CTest runs each test case in a process of its own), removed on exit.
class TmpDir {
 public:
  explicit TmpDir(const std::string& tag = "test")
      : dir_(std::filesystem::temp_directory_path() / ("oscar-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TmpDir(const TmpDir&) = delete;
  TmpDir& operator=(const TmpDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // The path of file `name` inside the directory.
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `text` to file `name`; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path dir_;
};

// Runs oscar-mkmodel with `args` (its log discarded); returns the exit status.
inline int mkmodel(const std::string& args) {
  return std::system((std::string(OSCAR_BIN_DIR) + "/oscar-mkmodel " + args + " 2>/dev/null").c_str());
}

}  // namespace oscar::test
