// libFuzzer target for what an HTTP client controls before a handler runs:
// the request head checks and the chunked decoder (server/http_framing.h),
// then the body's JSON (depth-limited parse) and the request parser that
// every generation route runs. Bad input must end in a refusal status or an
// ApiError; any other exception, crash, hang or leak is a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/http_framing.h"
#include "server/request_parse.h"

using namespace oscar::server;

namespace {

void framing(std::string_view data) {
  const size_t head_len = request_head_length(data);
  if (head_len > 0) {
    const RequestHead h = parse_request_head(data.substr(0, head_len), 1u << 20);
    if (h.status == 0 && h.content_length > (1u << 20)) __builtin_trap();  // the limit failed
  }
  // The same bytes as a chunked body, fed whole and then in uneven pieces:
  // both must agree.
  ChunkedDecoder whole(1u << 16), pieces(1u << 16);
  const size_t used_whole = whole.feed(data);
  size_t used = 0;
  for (size_t at = 0, step = 1; at < data.size() && !pieces.done() && !pieces.error_status(); at += step, step = step * 2 + 1)
    used += pieces.feed(data.substr(at, std::min(step, data.size() - at)));
  if (whole.done() != pieces.done() || whole.error_status() != pieces.error_status()) __builtin_trap();
  if (whole.done() && (whole.body() != pieces.body() || used_whole != used)) __builtin_trap();
  if (whole.body().size() > (1u << 16)) __builtin_trap();
}

void request(std::string_view data) {
  try {
    const Json body = parse_body(std::string(data));
    GenParams defaults;
    (void)parse_gen_params(body, defaults, Api::Chat, 1);
    (void)parse_gen_params(body, defaults, Api::Native, 1);
    (void)parse_stream_options(body);
    if (body.contains("messages")) {
      const ChatRequest r = parse_chat_request(body);
      (void)r.messages.dump();
      (void)r.tools.dump();
      (void)r.template_kwargs.dump();
    }
    if (body.contains("prompt")) (void)parse_prompt(body, 1000);
  } catch (const ApiError& e) {
    if (e.status() < 400 || e.status() > 499) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  framing(s);
  request(s);
  return 0;
}
