// Embeddings: POST /v1/embeddings (OpenAI shape, pooled and L2-normalised,
// float or base64), POST /embedding and /embeddings (llama-server's native
// shape: per-token vectors with --pooling none, else the pooled vector
// normalised per embd_normalize); and the reranking routes, which answer
// 400 because no model served here has a rank pooling head.
#pragma once

namespace httplib {
class Server;
}

namespace oscar::server {

class ServerContext;

void register_embeddings_routes(httplib::Server& svr, ServerContext& ctx);

}  // namespace oscar::server
