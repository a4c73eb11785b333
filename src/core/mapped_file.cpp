#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"

namespace oscar {

namespace {

// Closes the descriptor on every way out of the constructor.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads all `n` bytes of fd into dst. Returns "" or why it failed.
std::string read_all(int fd, uint8_t* dst, size_t n) {
  size_t off = 0;
  while (off < n) {
    const size_t want = std::min(n - off, size_t(64) << 20);
    const ssize_t got = ::pread(fd, dst + off, want, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::strerror(errno);
    if (got == 0) return "the file shrank while it was read";
    off += (size_t)got;
  }
  return "";
}

// MemAvailable from /proc/meminfo, or nothing where there is no such file.
std::optional<size_t> available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

bool loaded_copy_fits(size_t file_bytes, size_t available_bytes) {
  constexpr size_t kReserve = size_t(1) << 30;
  return available_bytes >= kReserve && file_bytes <= available_bytes - kReserve;
}

MappedFile::MappedFile(const std::string& path, FileResidence how) : path_(path) {
  const FileDescriptor fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw Error("cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error("'" + path + "' is not a regular file");
  size_ = (size_t)st.st_size;
  mtime_ = st.st_mtim;
  if (size_ == 0) return;
  if (how == FileResidence::kLoaded) {
    const std::optional<size_t> available = available_memory();
    if ((!available || loaded_copy_fits(size_, *available)) && load_copy(fd.fd)) return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) throw Error("cannot map '" + path + "': " + std::strerror(errno));
  data_ = static_cast<const uint8_t*>(p);
}

bool MappedFile::load_copy(int fd) {
  HugePageBuffer copy = HugePageBuffer::allocate(size_);
  if (!copy.data()) return false;
  const std::string why = read_all(fd, copy.data(), size_);
  if (!why.empty()) throw Error("cannot read '" + path_ + "': " + why);
  copy.make_read_only();
  copy_ = std::move(copy);
  data_ = copy_.data();
  residence_ = FileResidence::kLoaded;
  return true;
}

bool MappedFile::edit_loaded(const std::function<void(uint8_t*)>& edit) {
  if (residence_ != FileResidence::kLoaded || !copy_.data()) return false;
  copy_.make_writable();
  try {
    edit(copy_.data());
  } catch (...) {
    copy_.make_read_only();
    throw;
  }
  copy_.make_read_only();
  return true;
}

void MappedFile::drop_resident() {
  if (copy_.data()) copy_.discard();
  else if (data_ && size_ > 0) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

void MappedFile::reload() {
  if (residence_ != FileResidence::kLoaded || !copy_.data()) return;
  const FileDescriptor fd{::open(path_.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) throw Error("cannot open '" + path_ + "' again: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw Error("cannot stat '" + path_ + "': " + std::strerror(errno));
  // The tensors' offsets, the repacking and every view into the copy were
  // made for the file as it was: a different file cannot be read in its place.
  if ((size_t)st.st_size != size_ || st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec)
    throw Error("'" + path_ + "' has changed on disk since it was loaded; restart the server to load it");
  copy_.make_writable();
  const std::string why = read_all(fd.fd, copy_.data(), size_);
  copy_.make_read_only();
  if (!why.empty()) throw Error("cannot read '" + path_ + "' again: " + why);
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (copy_.data()) copy_ = HugePageBuffer();
  else if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mtime_ = o.mtime_;
    copy_ = std::move(o.copy_);
    residence_ = o.residence_;
    path_ = std::move(o.path_);
  }
  return *this;
}

}  // namespace oscar
