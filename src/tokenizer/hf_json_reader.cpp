#include "tokenizer/hf_json_reader.h"

#include "core/error.h"

namespace oscar::tok {

namespace {

using json = nlohmann::json;

// SAX handler: builds the tree for ordinary members and diverts
// model.vocab / model.merges into HfTokenizerJson's vectors.
class Handler : public nlohmann::json_sax<json> {
 public:
  Handler(HfTokenizerJson& out, const std::string& name) : out_(out), name_(name) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return integer(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return v > (number_unsigned_t)INT64_MAX ? value(json(v)) : integer((int64_t)v);
  }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool binary(binary_t& v) override { return value(json(json::binary_t(v))); }

  bool string(string_t& v) override {
    if (mode_ == Mode::MergeList) {
      // Old format: "left right".
      const size_t sp = v.find(' ', 1);
      if (sp == std::string::npos) bad("model.merges entry " + std::to_string(out_.merges.size()) + " has no space");
      out_.merges.emplace_back(v.substr(0, sp), v.substr(sp + 1));
      return true;
    }
    if (mode_ == Mode::MergePair) {
      pair_.push_back(std::move(v));
      return true;
    }
    if (mode_ == Mode::Vocab) bad("model.vocab entry '" + key_ + "' has no integer id");
    return value(json(std::move(v)));
  }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::Tree) bad(mode_ == Mode::Vocab ? "model.vocab entries must be integers" : "bad model.merges entry");
    if (at_model_member("vocab")) {
      mode_ = Mode::Vocab;
      out_.has_vocab = true;
      return true;
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Tree;
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::MergeList) {
      mode_ = Mode::MergePair;
      pair_.clear();
      return true;
    }
    if (mode_ != Mode::Tree) bad(mode_ == Mode::Vocab ? "model.vocab entries must be integers" : "bad model.merges entry");
    if (at_model_member("merges")) {
      mode_ = Mode::MergeList;
      out_.has_merges = true;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::MergePair) {
      if (pair_.size() != 2) bad("model.merges entry " + std::to_string(out_.merges.size()) + " is not a pair");
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      mode_ = Mode::MergeList;
      return true;
    }
    if (mode_ == Mode::MergeList) {
      mode_ = Mode::Tree;
      return true;
    }
    return close();
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error("'" + name_ + "' is not valid JSON (byte " + std::to_string(pos) + "): " + e.what());
  }

 private:
  enum class Mode { Tree, Vocab, MergeList, MergePair };
  HfTokenizerJson& out_;
  const std::string& name_;
  Mode mode_ = Mode::Tree;
  std::string key_;                // last object key seen
  std::vector<json*> stack_;       // open containers of the tree
  std::vector<std::string> path_;  // keys leading to each open container
  std::vector<std::string> pair_;  // strings of the merge pair being read

  [[noreturn]] void bad(const std::string& what) const { throw Error("'" + name_ + "': " + what); }

  // True when the container about to open is member `k` of the top-level
  // "model" object.
  bool at_model_member(const char* k) const {
    return stack_.size() == 2 && path_.size() == 2 && path_[1] == "model" && key_ == k && stack_.back()->is_object();
  }

  bool integer(int64_t v) {
    if (mode_ == Mode::Vocab) {
      out_.vocab.emplace_back(std::move(key_), v);
      return true;
    }
    if (mode_ != Mode::Tree) bad("bad model.merges entry");
    return value(json(v));
  }

  // Places `v` in the open container (or makes it the document).
  json* place(json&& v) {
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return &out_.doc;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool value(json&& v) {
    if (mode_ == Mode::Vocab) bad("model.vocab entry '" + key_ + "' has no integer id");
    if (mode_ != Mode::Tree) bad("bad model.merges entry");
    place(std::move(v));
    return true;
  }
  bool open(json&& container) {
    const std::string k = (!stack_.empty() && stack_.back()->is_object()) ? key_ : std::string();
    stack_.push_back(place(std::move(container)));
    path_.push_back(k);
    return true;
  }
  bool close() {
    stack_.pop_back();
    path_.pop_back();
    return true;
  }
};

}  // namespace

HfTokenizerJson read_hf_tokenizer_json(std::string_view text, const std::string& name) {
  HfTokenizerJson out;
  Handler h(out, name);
  json::sax_parse(text.begin(), text.end(), &h);
  return out;
}

}  // namespace oscar::tok
