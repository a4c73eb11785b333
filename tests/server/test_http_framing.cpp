// Request framing checks in front of httplib: request heads and chunked
// bodies, byte by byte where it matters.
#include <gtest/gtest.h>

#include "server/http_framing.h"

using namespace oscar::server;

namespace {

RequestHead head(const std::string& headers, size_t max_body = 1000) {
  return parse_request_head("POST /x HTTP/1.1\r\nHost: a\r\n" + headers + "\r\n", max_body);
}

}  // namespace

TEST(HttpFraming, HeadLength) {
  EXPECT_EQ(request_head_length("GET / HTTP/1.1\r\nHost: a\r\n"), 0u);
  EXPECT_EQ(request_head_length("GET / HTTP/1.1\r\n\r\nBODY"), 18u);
  EXPECT_EQ(request_head_length("\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 22u);  // empty lines before a request
  // Resuming a search: the end may straddle what was already searched.
  EXPECT_EQ(request_head_length("GET / HTTP/1.1\r\n\r\n", 17), 18u);
  EXPECT_EQ(request_head_length("GET / HTTP/1.1\r\n\r\n", 15), 18u);
}

TEST(HttpFraming, ContentLength) {
  EXPECT_EQ(head("Content-Length: 12\r\n").status, 0);
  EXPECT_EQ(head("Content-Length: 12\r\n").content_length, 12u);
  EXPECT_EQ(head("").content_length, 0u);
  EXPECT_EQ(head("Content-Length:  7 \r\n").content_length, 7u);
  for (const char* bad : {"-5", "+5", "1 2", "0x10", "", "5,5", "1e3"})
    EXPECT_EQ(head(std::string("Content-Length: ") + bad + "\r\n").status, 400) << bad;
  for (const char* big : {"1001", "9223372036854775807", "18446744073709551616", "99999999999999999999999999"})
    EXPECT_EQ(head(std::string("Content-Length: ") + big + "\r\n").status, 413) << big;
  EXPECT_EQ(head("Content-Length: 1\r\ncontent-length: 1\r\n").status, 400);
  EXPECT_EQ(head("Content-Length: 1\r\nTransfer-Encoding: chunked\r\n").status, 400);
}

TEST(HttpFraming, TransferAndContentCodings) {
  EXPECT_TRUE(head("Transfer-Encoding: chunked\r\n").chunked);
  EXPECT_TRUE(head("Transfer-Encoding: Chunked\r\n").chunked);
  EXPECT_EQ(head("Transfer-Encoding: gzip\r\n").status, 501);
  EXPECT_EQ(head("Transfer-Encoding: gzip, chunked\r\n").status, 501);
  EXPECT_EQ(head("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n").status, 501);
  EXPECT_EQ(parse_request_head("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 10).status, 400);
  EXPECT_EQ(head("Content-Encoding: gzip\r\n").status, 415);
  EXPECT_EQ(head("Content-Encoding: identity\r\n").status, 0);
}

TEST(HttpFraming, HeaderSyntaxAndControlBytes) {
  EXPECT_EQ(head(std::string("Authorization: Bearer k\0x\r\n", 27)).status, 400);
  EXPECT_EQ(head(std::string("Authorization: Bearer k\0x\r\n", 27)).bad_header, "authorization");
  EXPECT_EQ(head("X-A: a\x7f\r\n").status, 400);
  EXPECT_EQ(head("X-A: a\tb\r\n").status, 0);  // HTAB is whitespace
  EXPECT_EQ(head("X-A: a\r\n folded\r\n").status, 400);
  EXPECT_EQ(head("X A: a\r\n").status, 400);
  EXPECT_EQ(head("no colon\r\n").status, 400);
  EXPECT_EQ(parse_request_head("GET  / HTTP/1.1\r\n\r\n", 10).status, 400);
  EXPECT_EQ(parse_request_head("GET / HTTP/2.0\r\n\r\n", 10).status, 505);
  EXPECT_EQ(parse_request_head("G\x01T / HTTP/1.1\r\n\r\n", 10).status, 400);
  EXPECT_EQ(head("Expect: 100-continue\r\n").expect_continue, true);
  EXPECT_EQ(head("Expect: something\r\n").status, 417);
}

TEST(HttpFraming, ConnectionPersistence) {
  EXPECT_TRUE(head("").keep_alive);
  EXPECT_FALSE(head("Connection: close\r\n").keep_alive);
  EXPECT_FALSE(head("Connection: Keep-Alive, Close\r\n").keep_alive);
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.0\r\n\r\n", 10).keep_alive);
  EXPECT_TRUE(parse_request_head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 10).keep_alive);
}

TEST(HttpFraming, ForwardedHeadersDropFramingOnes) {
  const RequestHead h = head("Content-Length: 3\r\nX-Keep: 1\r\nExpect: 100-continue\r\n");
  EXPECT_EQ(h.forwarded_headers, "Host: a\r\nX-Keep: 1\r\n");
}

TEST(HttpFraming, ChunkedDecodesAcrossAnySplit) {
  const std::string wire = "4\r\nWiki\r\n5;name=v\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nT: 1\r\n\r\nNEXT";
  for (size_t step = 1; step <= wire.size(); ++step) {
    ChunkedDecoder d(1000);
    size_t used = 0;
    for (size_t at = 0; at < wire.size() && !d.done(); at += step)
      used += d.feed(std::string_view(wire).substr(at, std::min(step, wire.size() - at)));
    ASSERT_TRUE(d.done()) << step;
    EXPECT_EQ(d.body(), "Wikipedia in\r\n\r\nchunks.") << step;
    EXPECT_EQ(wire.substr(used), "NEXT") << step;
  }
}

TEST(HttpFraming, ChunkedLimitsAndErrors) {
  {
    ChunkedDecoder d(10);
    d.feed("6\r\nabcdef\r\n6\r\n");
    EXPECT_EQ(d.error_status(), 413);
  }
  {
    ChunkedDecoder d(10);
    d.feed("ffffffffffffffffff\r\n");
    EXPECT_EQ(d.error_status(), 413);
  }
  for (const char* bad : {"zz\r\n", "\r\n", "4\nabcd", "4\r\nabcdX\r\n", "4 x\r\n", "0\r\nbad trailer\r\n"}) {
    ChunkedDecoder d(100);
    d.feed(bad);
    EXPECT_EQ(d.error_status(), 400) << bad;
  }
  ChunkedDecoder d(100);
  d.feed("1;" + std::string(2000, 'x'));
  EXPECT_EQ(d.error_status(), 400);  // a size line that never ends
}
