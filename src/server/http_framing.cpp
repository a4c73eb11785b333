#include "server/http_framing.h"

#include <algorithm>
#include <vector>

namespace oscar::server {

namespace {

constexpr size_t kMaxChunkLineBytes = 1024;     // a chunk-size line with extensions
constexpr size_t kMaxTrailerBytes = 16 * 1024;  // all trailer lines together

// RFC 9110 token characters (method and header names).
bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

// Control bytes are never legal in a field value (HTAB is whitespace).
bool has_control_byte(std::string_view s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\t') || c == 0x7F) return true;
  return false;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
  return out;
}

// The comma-separated list items of a header value, trimmed and lowercased.
std::vector<std::string> list_items(std::string_view v) {
  std::vector<std::string> out;
  while (true) {
    const size_t comma = v.find(',');
    const std::string item = lower(trim_ows(v.substr(0, comma)));
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

// Digits only, no sign, no spaces inside; values past the limit (including
// ones that overflow 64 bits) become SIZE_MAX so they read as too large.
bool parse_content_length(std::string_view v, size_t* out) {
  if (v.empty()) return false;
  size_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    const size_t d = (size_t)(c - '0');
    n = n > (SIZE_MAX - d) / 10 ? SIZE_MAX : n * 10 + d;
  }
  *out = n;
  return true;
}

size_t skip_leading_crlf(std::string_view data) {
  size_t i = 0;
  while (i + 1 < data.size() && data[i] == '\r' && data[i + 1] == '\n') i += 2;
  return i;
}

RequestHead refuse(RequestHead h, int status, std::string why) {
  h.status = status;
  h.error = std::move(why);
  return h;
}

}  // namespace

size_t request_head_length(std::string_view data, size_t searched) {
  const size_t start = skip_leading_crlf(data);
  const size_t end = data.find("\r\n\r\n", std::max(start, searched < 3 ? 0 : searched - 3));
  return end == std::string_view::npos ? 0 : end + 4;
}

RequestHead parse_request_head(std::string_view head, size_t max_body) {
  RequestHead h;
  head.remove_prefix(skip_leading_crlf(head));
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") return refuse(h, 400, "incomplete request head");
  head.remove_suffix(2);  // each remaining line now ends with CRLF

  size_t eol = head.find("\r\n");
  const std::string_view request_line = head.substr(0, eol);
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(h, 400, "malformed request line");
  h.method = request_line.substr(0, sp1);
  h.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  h.version = request_line.substr(sp2 + 1);
  if (!is_token(h.method) || h.target.empty() || has_control_byte(h.target))
    return refuse(h, 400, "malformed request line");
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0")
    return refuse(h, 505, "HTTP version '" + h.version + "' is not supported");
  h.keep_alive = h.version == "HTTP/1.1";

  int n_length = 0, n_encoding = 0;
  bool close = false, keep_alive = false;
  std::string transfer_encoding;
  h.forwarded_headers.reserve(head.size());
  for (size_t at = eol + 2; at < head.size(); at = eol + 2) {
    eol = head.find("\r\n", at);
    const std::string_view line = head.substr(at, eol - at);
    if (line.empty()) return refuse(h, 400, "malformed request head");
    if (line.front() == ' ' || line.front() == '\t') return refuse(h, 400, "obsolete header line folding");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return refuse(h, 400, "malformed header line");
    const std::string name = lower(line.substr(0, colon));
    const std::string_view value = trim_ows(line.substr(colon + 1));
    if (has_control_byte(value)) {
      h.bad_header = name;
      return refuse(h, 400, "header '" + std::string(line.substr(0, colon)) + "' holds control bytes");
    }
    if (name == "content-length") {
      if (++n_length > 1) return refuse(h, 400, "more than one Content-Length header");
      if (!parse_content_length(value, &h.content_length))
        return refuse(h, 400, "invalid Content-Length '" + std::string(value) + "'");
      continue;
    }
    if (name == "transfer-encoding") {
      if (++n_encoding > 1) return refuse(h, 501, "more than one Transfer-Encoding header");
      transfer_encoding = lower(value);
      continue;
    }
    if (name == "expect") {
      if (lower(value) != "100-continue") return refuse(h, 417, "unsupported Expect '" + std::string(value) + "'");
      h.expect_continue = true;
      continue;
    }
    if (name == "content-encoding") {
      for (const std::string& e : list_items(value))
        if (e != "identity") return refuse(h, 415, "Content-Encoding '" + e + "' is not supported");
    }
    if (name == "connection") {
      for (const std::string& t : list_items(value)) {
        close = close || t == "close";
        keep_alive = keep_alive || t == "keep-alive";
      }
    }
    h.forwarded_headers.append(line);
    h.forwarded_headers += "\r\n";
  }
  if (close) h.keep_alive = false;
  else if (keep_alive) h.keep_alive = true;

  if (n_encoding > 0) {
    if (transfer_encoding != "chunked")
      return refuse(h, 501, "Transfer-Encoding '" + transfer_encoding + "' is not supported (only chunked)");
    if (n_length > 0) return refuse(h, 400, "both Content-Length and Transfer-Encoding");
    if (h.version == "HTTP/1.0") return refuse(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
    h.chunked = true;
  }
  if (h.content_length > max_body)
    return refuse(h, 413, "request body too large (" + std::string(h.content_length == SIZE_MAX ? "over 2^64" : std::to_string(h.content_length)) +
                              " bytes; the limit is " + std::to_string(max_body) + ")");
  return h;
}

void ChunkedDecoder::fail(int status, std::string msg) {
  state_ = State::Failed;
  error_status_ = status;
  error_ = std::move(msg);
}

bool ChunkedDecoder::line_done(std::string_view line) {
  if (state_ == State::Trailer) {
    if (line.empty()) {
      state_ = State::Done;
      return true;
    }
    trailer_bytes_ += line.size();
    if (trailer_bytes_ > kMaxTrailerBytes) fail(400, "chunked body trailers too large");
    else if (has_control_byte(line) || line.find(':') == std::string_view::npos) fail(400, "malformed chunk trailer");
    return true;
  }
  // A chunk-size line: hex digits, then optional ";extensions".
  size_t size = 0, digits = 0;
  for (; digits < line.size(); ++digits) {
    const char c = line[digits];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
    else break;
    if (size > (SIZE_MAX >> 4)) {
      fail(413, "chunk size too large");
      return true;
    }
    size = size * 16 + (size_t)d;
  }
  const std::string_view rest = trim_ows(line.substr(digits));
  if (digits == 0 || (!rest.empty() && rest.front() != ';') || has_control_byte(rest)) {
    fail(400, "malformed chunk size line");
    return true;
  }
  if (size == 0) {
    state_ = State::Trailer;
    return true;
  }
  if (size > max_body_ - body_.size()) {
    fail(413, "request body too large (the limit is " + std::to_string(max_body_) + " bytes)");
    return true;
  }
  chunk_left_ = size;
  state_ = State::Data;
  return true;
}

size_t ChunkedDecoder::feed(std::string_view data) {
  size_t i = 0;
  while (i < data.size()) {
    switch (state_) {
      case State::Done:
      case State::Failed:
        return i;
      case State::Data: {
        const size_t take = std::min(chunk_left_, data.size() - i);
        body_.append(data.data() + i, take);
        chunk_left_ -= take;
        i += take;
        if (chunk_left_ == 0) state_ = State::DataEnd;
        break;
      }
      case State::DataEnd:
      case State::Size:
      case State::Trailer: {
        const char c = data[i++];
        line_ += c;
        if (state_ == State::DataEnd) {
          if (line_ == "\r\n") {
            line_.clear();
            state_ = State::Size;
          } else if (line_ != "\r") {
            fail(400, "chunk data not followed by CRLF");
          }
          break;
        }
        if (c == '\n') {
          if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
            fail(400, "bare LF in a chunked body");
            break;
          }
          const std::string line = line_.substr(0, line_.size() - 2);
          line_.clear();
          line_done(line);
        } else if (line_.size() > kMaxChunkLineBytes) {
          fail(400, "chunk size line too long");
        }
        break;
      }
    }
  }
  return i;
}

}  // namespace oscar::server
