#include "server/verbose_shaper.h"

namespace oscar::server {

namespace {

class VerboseShaper : public ResponseShaper {
 public:
  VerboseShaper(std::unique_ptr<ResponseShaper> shown, std::unique_ptr<ResponseShaper> native)
      : shown_(std::move(shown)), native_(std::move(native)) {}

  std::vector<Json> chunks(const Event& e) override {
    native_->chunks(e);  // only its final response is used
    std::vector<Json> out = shown_->chunks(e);
    if (e.done && !out.empty() && out.front().is_object()) out.front()["__verbose"] = native_->response();
    return out;
  }
  Json response() const override {
    Json r = shown_->response();
    if (r.is_object()) r["__verbose"] = native_->response();
    return r;
  }
  bool done_marker() const override { return shown_->done_marker(); }
  bool complete() const override { return shown_->complete(); }
  std::string frame(const Json& chunk) const override { return shown_->frame(chunk); }
  std::string frame_error(int status, const std::string& message) const override {
    return shown_->frame_error(status, message);
  }

 private:
  std::unique_ptr<ResponseShaper> shown_, native_;
};

}  // namespace

std::unique_ptr<ResponseShaper> with_verbose(std::unique_ptr<ResponseShaper> shown,
                                             std::unique_ptr<ResponseShaper> native) {
  return std::make_unique<VerboseShaper>(std::move(shown), std::move(native));
}

}  // namespace oscar::server
